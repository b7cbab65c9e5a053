/* The workspace manifest of a Finalize: see manifest.h. */
#include "manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reply.h"

#define MANIFEST_SKIP_TOP "lost+found"

typedef Stockade__Runner__ManifestEntry Entry;

typedef struct Level {
    DIR *d;
    size_t path_len; /* this directory's path is path[0..path_len) */
} Level;

struct ManifestWalk {
    uint32_t max_entries, max_path, max_depth;
    Level stack[PATH_MAX_DEPTH + 1]; /* stack[0] is the workspace root */
    size_t depth;                    /* levels open */
    bool walk_done, done, truncated;
    uint32_t n_total, skipped;
    uint64_t path_total, file_bytes;
    char path[PATH_MAX_BYTES + 1];
    /* the frame being filled */
    size_t n;
    size_t names_used;
    Entry entries[MANIFEST_FRAME_MAX_ENTRIES];
    Entry *ptrs[MANIFEST_FRAME_MAX_ENTRIES];
    char names[MANIFEST_FRAME_MAX_PATH_BYTES];
};

ManifestWalk *
manifest_walk_new(int ws_fd, const Stockade__Runner__Finalize *caps, Error **errp)
{
    _cleanup_(manifest_walk_freep) ManifestWalk *w = calloc(1, sizeof(*w));
    if (!w) {
        error_set(errp, E_INTERNAL, ENOMEM, "manifest");
        return NULL;
    }
    w->max_entries = caps->max_entries;
    w->max_path = caps->max_path_bytes;
    w->max_depth = MIN(caps->max_depth, (uint32_t) PATH_MAX_DEPTH);
    int fd = openat(ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        error_set(errp, E_IO, errno, "open the workspace");
        safe_close(fd);
        return NULL;
    }
    w->stack[0] = (Level){d, 0};
    w->depth = 1;
    return TAKE_PTR(w);
}

void
manifest_walk_free(ManifestWalk *w)
{
    if (!w)
        return;
    while (w->depth > 0)
        closedir(w->stack[--w->depth].d);
    free(w);
}

bool
manifest_walk_done(const ManifestWalk *w)
{
    return w->done;
}

static void
manifest_add(ManifestWalk *w, const struct stat *st, size_t len)
{
    Entry *e = &w->entries[w->n];
    stockade__runner__manifest_entry__init(e);
    e->path = memcpy(w->names + w->names_used, w->path, len + 1);
    w->names_used += len + 1;
    e->type = S_ISDIR(st->st_mode) ? STOCKADE__RUNNER__MANIFEST_ENTRY__TYPE__DIR
                                   : STOCKADE__RUNNER__MANIFEST_ENTRY__TYPE__FILE;
    e->size = S_ISREG(st->st_mode) ? (uint64_t) st->st_size : 0;
    e->mtime_ns = (uint64_t) st->st_mtim.tv_sec * 1000000000u + (uint64_t) st->st_mtim.tv_nsec;
    e->mode = st->st_mode & 0777;
    w->ptrs[w->n++] = e;
    w->n_total++;
    w->path_total += len;
    w->file_bytes += e->size;
}

/* Enters the directory just listed at path[0..len). A failure leaves it unlisted inside. */
static void
manifest_push(ManifestWalk *w, const char *name, size_t len)
{
    Level *top = &w->stack[w->depth - 1];
    int fd = openat(dirfd(top->d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        safe_close(fd);
        return;
    }
    w->stack[w->depth++] = (Level){d, len};
}

/* One directory entry: listed, skipped, or the end of a directory. */
static void
manifest_step(ManifestWalk *w)
{
    Level *top = &w->stack[w->depth - 1];
    struct dirent *de = readdir(top->d);
    struct stat st;

    if (!de) {
        closedir(top->d);
        if (--w->depth == 0)
            w->walk_done = true;
        return;
    }
    const char *name = de->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        (w->depth == 1 && strcmp(name, MANIFEST_SKIP_TOP) == 0))
        return;
    size_t nlen = strlen(name), plen = top->path_len;
    size_t len = plen + (plen ? 1 : 0) + nlen;
    if (fstatat(dirfd(top->d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return; /* gone meanwhile */
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        w->skipped++;
        return;
    }
    if (len > w->max_path || w->depth > w->max_depth) {
        w->truncated = true; /* a cap: this entry (and what it holds) is left out */
        return;
    }
    if (w->n_total >= w->max_entries || w->path_total + len > FINALIZE_MAX_PATH_BYTES_TOTAL) {
        w->truncated = true;
        w->walk_done = true;
        return;
    }
    if (plen)
        w->path[plen] = '/';
    memcpy(w->path + plen + (plen ? 1 : 0), name, nlen + 1);
    manifest_add(w, &st, len);
    if (S_ISDIR(st.st_mode))
        manifest_push(w, name, len);
}

static bool
manifest_frame_has_room(const ManifestWalk *w)
{
    return w->n < MANIFEST_FRAME_MAX_ENTRIES &&
           w->names_used + w->max_path + 1 <= sizeof(w->names);
}

int
manifest_walk_send_next(ManifestWalk *w, OutQueue *q, uint32_t req_id, Error **errp)
{
    Stockade__Runner__Manifest mf = STOCKADE__RUNNER__MANIFEST__INIT;
    GuestMsg msg = STOCKADE__RUNNER__GUEST_MSG__INIT;

    w->n = 0;
    w->names_used = 0;
    while (!w->walk_done && manifest_frame_has_room(w))
        manifest_step(w);
    mf.entries = w->ptrs;
    mf.n_entries = w->n;
    if (w->walk_done) {
        while (w->depth > 0) /* stopped early at a cap */
            closedir(w->stack[--w->depth].d);
        mf.last = true;
        mf.total_entries = w->n_total;
        mf.total_file_bytes = w->file_bytes;
        mf.truncated = w->truncated;
        mf.skipped = w->skipped;
        w->done = true;
    }
    msg.req_id = req_id;
    msg.body_case = GBODY(MANIFEST);
    msg.manifest = &mf;
    return outq_push_msg(q, &msg) < 0 ? error_set(errp, E_INTERNAL, errno, "queue manifest") : 0;
}
