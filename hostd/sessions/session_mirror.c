/* Live mirror: FileChanged records from the runner become files in
 * <state>/artifacts/<id>/files as they are closed in the guest, so most results are out
 * before any kill. A file arrives as chunks in order (offset = bytes so far); it is written
 * to a temp file under .mirror/ and renamed into place when its last chunk is in, so the
 * folder never shows half a file. Paths were checked by proto/ (relative, no "..", bounded);
 * every lookup here is openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) anyway, no symlink is ever
 * created, and a path whose target is a directory is skipped. Host budget: the session's
 * mirror_budget_bytes, counted here too (the runner's own count is not trusted).
 * Loop thread; files are small and land in the page cache. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dest.h"
#include "fdutil.h"
#include "guest_replies.h"
#include "log.h"
#include "runner_limits.h"
#include "session_internal.h"

typedef struct MirrorFile {
    char *path;
    int fd; /* temp file being filled, -1 when none */
    char tmp_name[64];
    uint64_t size, received, mtime_ns;
    uint32_t mode;
} MirrorFile;

struct SessionMirror {
    MirrorFile file; /* the one being received */
    uint64_t bytes;  /* stored so far, against session_mirror_budget() */
    uint32_t files;  /* capped by cfg.extract.max_files, like the salvage */
};

int
session_mirror_new(Session *s)
{
    if (!(s->mirror = calloc(1, sizeof(*s->mirror))))
        return -1;
    s->mirror->file.fd = -1;
    return 0;
}

void
session_mirror_free(Session *s)
{
    if (!s->mirror)
        return;
    session_mirror_abort(s);
    free(s->mirror);
    s->mirror = NULL;
}

uint64_t
session_mirror_bytes(const Session *s)
{
    return s->mirror->bytes;
}

static int
mirror_open_dir(Session *s, const char *sub)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s/%s", s->mgr->artifacts_dir, s->rec.id, sub);
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

void
session_mirror_abort(Session *s)
{
    MirrorFile *f = &s->mirror->file;
    f->fd = safe_close(f->fd);
    if (f->tmp_name[0]) {
        int tmpdir = mirror_open_dir(s, ".mirror");
        if (tmpdir >= 0)
            (void) unlinkat(tmpdir, f->tmp_name, 0);
        safe_close(tmpdir);
    }
    free(f->path);
    memset(f, 0, sizeof(*f));
    f->fd = -1;
}

/* "stored" events are bounded by extract.max_files (mirror_files); the others (removed,
 * over_budget, failed) a workload can make without limit, so they go through the cap. */
static void
mirror_event(Session *s, const Stockade__Runner__FileChanged *c, const char *outcome)
{
    json_t *attrs = json_pack("{s:s,s:I,s:i,s:I,s:s}", "path", c->path, "size",
                              (json_int_t) c->size, "mode", (int) c->mode, "mtime_ms",
                              (json_int_t) (c->mtime_ns / 1000000), "mirror", outcome);
    if (strcmp(outcome, "stored") == 0)
        session_event(s, "file.changed", 0, NULL, 0, attrs);
    else
        session_guest_event(s, "file.changed", attrs);
}

/* A removed path in the guest: a file, or a directory with its whole subtree. The parent is
 * opened beneath files/ without following symlinks (a full path may not fit PATH_MAX, and the
 * 4096-byte path itself does not fit one openat2), the entry removed relative to it. */
static void
mirror_remove(Session *s, const Stockade__Runner__FileChanged *c)
{
    _cleanup_close_ int files = mirror_open_dir(s, "files");
    _cleanup_free_ char *parent = strdup(c->path);
    _cleanup_close_ int pfd = -1;
    char *slash = parent ? strrchr(parent, '/') : NULL;

    if (files >= 0 && parent) {
        if (slash)
            *slash = '\0';
        pfd = slash ? openat2_beneath(files, parent, O_RDONLY | O_DIRECTORY)
                    : fcntl(files, F_DUPFD_CLOEXEC, 3);
    }
    if (pfd >= 0)
        (void) rm_rf_at(pfd, slash ? slash + 1 : parent);
    mirror_event(s, c, "removed");
}

/* Moves the finished temp file to files/<path>, making parent directories. */
static int
mirror_install(Session *s, const char *path)
{
    _cleanup_close_ int files = mirror_open_dir(s, "files");
    _cleanup_close_ int tmpdir = mirror_open_dir(s, ".mirror");
    _cleanup_free_ char *parent = strdup(path);
    const char *base = path;
    uint32_t created = 0;

    if (files < 0 || tmpdir < 0 || !parent)
        return -1;
    char *slash = strrchr(parent, '/');
    _cleanup_close_ int pfd = -1;
    if (slash) {
        *slash = '\0';
        base = path + (slash - parent) + 1;
        if (dest_mkdir(files, parent, 0755, &created) < 0)
            return -1;
        pfd = openat2_beneath(files, parent, O_RDONLY | O_DIRECTORY);
    } else {
        pfd = dup(files);
    }
    if (pfd < 0)
        return -1;
    struct stat st;
    if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
        return -1; /* never replace a directory (or anything but a file) */
    return renameat(tmpdir, s->mirror->file.tmp_name, pfd, base);
}

static void
mirror_finish(Session *s, const Stockade__Runner__FileChanged *c)
{
    MirrorFile *f = &s->mirror->file;
    struct timespec times[2] = {{.tv_nsec = UTIME_OMIT},
                                {.tv_sec = (time_t) (c->mtime_ns / 1000000000ull),
                                 .tv_nsec = (long) (c->mtime_ns % 1000000000ull)}};
    bool ok = fchmod(f->fd, (c->mode & 0744) | 0600) == 0 && futimens(f->fd, times) == 0;
    f->fd = safe_close(f->fd);
    if (!ok || mirror_install(s, c->path) < 0) {
        session_mirror_abort(s);
        mirror_event(s, c, "failed");
        return;
    }
    mirror_event(s, c, "stored");
    s->mirror->files++;
    free(f->path);
    memset(f, 0, sizeof(*f));
    f->fd = -1;
}

static int
mirror_begin(Session *s, const Stockade__Runner__FileChanged *c)
{
    static unsigned counter;
    MirrorFile *f = &s->mirror->file;
    _cleanup_close_ int tmpdir = mirror_open_dir(s, ".mirror");

    session_mirror_abort(s); /* a new file starts: drop an unfinished one */
    if (tmpdir < 0 || !(f->path = strdup(c->path)))
        return -1;
    snprintf(f->tmp_name, sizeof(f->tmp_name), "m%u", ++counter);
    f->fd = openat(tmpdir, f->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                   0600);
    f->size = c->size;
    return f->fd < 0 ? -1 : 0;
}

void
session_mirror_on_changed(Session *s, const Stockade__Runner__FileChanged *c)
{
    MirrorFile *f = &s->mirror->file;
    Sessions *m = s->mgr;
    MirrorView v = {.receiving = f->fd >= 0,
                    .path = f->path,
                    .size = f->size,
                    .received = f->received,
                    .mirror_bytes = s->mirror->bytes,
                    .budget_bytes = session_mirror_budget(s),
                    .max_file_bytes = m->cfg.mirror_max_file_bytes,
                    .files = s->mirror->files,
                    .max_files = m->cfg.extract.max_files};
    MirrorStep step = mirror_plan(&v, c);

    if (step.action == MIRROR_REMOVE) {
        mirror_remove(s, c);
        return;
    }
    if (step.action == MIRROR_OVER_BUDGET)
        mirror_event(s, c, "over_budget");
    if (step.action != MIRROR_WRITE)
        return;
    if (step.begin && mirror_begin(s, c) < 0) {
        session_mirror_abort(s);
        mirror_event(s, c, "failed");
        return;
    }
    if (write_all(f->fd, c->data.data, c->data.len) < 0) {
        log_warn("session %s: mirror write: %s", s->rec.id, strerror(errno));
        session_mirror_abort(s);
        return;
    }
    f->received += c->data.len;
    s->mirror->bytes += c->data.len;
    if (step.finish)
        mirror_finish(s, c);
}
