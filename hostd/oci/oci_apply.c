/* Layer application: see oci_apply.h. The entry loop is oci_apply_layer(); each entry type
 * has its own function; every lookup goes through apply_open_dir() (RESOLVE_IN_ROOT). */
#include "oci_apply.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "path.h"
#include "tar.h"
#include "timeutil.h"

#define APPLY_COPY_BYTES (128u * 1024u)
#define APPLY_IMPLIED_DIR_MODE 0755u
#define APPLY_MODE_KEEP 01777u /* setuid and setgid never survive */
#define WHITEOUT_PREFIX ".wh."
#define WHITEOUT_OPAQUE ".wh..wh..opq"

typedef struct ApplyEntry {
    const TarEntry *e;
    char path[TAR_PATH_MAX_BYTES + 1]; /* normalised */
    size_t len;
    const char *parent, *name; /* into split[] */
    char split[TAR_PATH_MAX_BYTES + 2];
} ApplyEntry;

static int apply_fail(OciApply *a, const char *path, Error **errp, ErrorCategory cat,
                      const char *fmt, ...) _printf_(5, 6);

static int
apply_fail(OciApply *a, const char *path, Error **errp, ErrorCategory cat, const char *fmt, ...)
{
    char why[ERROR_MESSAGE_MAX / 2], esc[OCI_APPLY_ESC_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return error_set(errp, cat, 0, "%s: entry %s: %s", a->label,
                     log_escape(esc, sizeof(esc), path, strlen(path)), why);
}

int
oci_open_in_root(int root_fd, const char *path, int flags)
{
    struct open_how how = {.flags = (uint64_t) (flags | O_CLOEXEC),
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
    return (int) syscall(SYS_openat2, root_fd, path[0] ? path : ".", &how, sizeof(how));
}

/* Makes the missing directory buf (whose parent exists) root-owned 0755, counted as an
 * entry. -1 with errno (EMLINK: over the entry cap). */
static int
apply_make_implied(OciApply *a, char *buf)
{
    char *slash = strrchr(buf, '/');
    const char *name = slash ? slash + 1 : buf;
    if (slash)
        *slash = '\0';
    _cleanup_close_ int parent =
        oci_open_in_root(a->root_fd, slash ? buf : "", O_PATH | O_DIRECTORY);
    if (slash)
        *slash = '/';
    if (parent < 0)
        return -1;
    if (++a->stats.entries > a->max_entries) {
        errno = EMLINK;
        return -1;
    }
    if (mkdirat(parent, name, APPLY_IMPLIED_DIR_MODE) < 0)
        return -1;
    a->stats.dirs++;
    return 0;
}

/* Opens directory path ("" = the root) inside the tree, symlinks resolved in the tree. With
 * create, missing directories are made (apply_make_implied). */
static int
apply_open_dir(OciApply *a, const char *path, bool create, int *ret_fd)
{
    char buf[TAR_PATH_MAX_BYTES + 1];
    int fd = oci_open_in_root(a->root_fd, path, O_RDONLY | O_DIRECTORY);

    if (fd < 0 && errno == ENOENT && create) {
        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf;; p++) {
            if (*p != '/' && *p != '\0')
                continue;
            char c = *p;
            *p = '\0';
            int cur = oci_open_in_root(a->root_fd, buf, O_PATH | O_DIRECTORY);
            if (cur < 0 && (errno != ENOENT || apply_make_implied(a, buf) < 0))
                return -1;
            safe_close(cur);
            *p = c;
            if (c == '\0')
                break;
        }
        fd = oci_open_in_root(a->root_fd, path, O_RDONLY | O_DIRECTORY);
    }
    *ret_fd = fd;
    return fd < 0 ? -1 : 0;
}

int
oci_apply_open_dir(OciApply *a, const char *path, bool create, int *ret_fd)
{
    return apply_open_dir(a, path, create, ret_fd);
}

static int
apply_dir_failed(OciApply *a, const ApplyEntry *x, Error **errp)
{
    if (errno == EMLINK)
        return apply_fail(a, x->path, errp, E_TOO_LARGE, "more than %u entries in the image",
                          a->max_entries);
    if (errno == EEXIST) /* mkdirat met a symlink that leads nowhere in the tree */
        return apply_fail(a, x->path, errp, E_INVALID,
                          "a parent is a symlink to nothing in the image");
    return apply_fail(
        a, x->path, errp,
        errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV ? E_INVALID : E_IO,
        "its parent directory: %s", strerror(errno));
}

/* Removes what is at name unless keep_dir and it is a directory. 1 if a directory was kept. */
static int
apply_clear(int pfd, const char *name, bool keep_dir)
{
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (keep_dir && S_ISDIR(st.st_mode))
        return 1;
    return rm_rf_at(pfd, name);
}

static uint32_t
apply_mode(OciApply *a, const ApplyEntry *x)
{
    uint32_t mode = x->e->mode;
    if (mode & (S_ISUID | S_ISGID)) {
        if (a->stats.stripped++ == 0)
            log_escape(a->stats.first_stripped, sizeof(a->stats.first_stripped), x->path, x->len);
    }
    return mode & APPLY_MODE_KEEP;
}

static int
apply_file_data(OciApply *a, const ApplyEntry *x, int fd, OciStream *s, TarReader *r, Error **errp)
{
    _cleanup_free_ uint8_t *buf = malloc(APPLY_COPY_BYTES);
    size_t got;

    if (!buf)
        return error_set(errp, E_INTERNAL, ENOMEM, "copy buffer");
    for (;;) {
        TarStatus st = tar_reader_read(r, buf, APPLY_COPY_BYTES, &got);
        if (st == TAR_IO_ERROR)
            return apply_fail(a, x->path, errp, s->err ? s->err->category : E_IO, "%s",
                              s->err ? s->err->message : strerror(errno));
        if (st != TAR_ENTRY)
            return apply_fail(a, x->path, errp, E_INVALID, "broken tar: %s", r->why ?: "?");
        if (got == 0)
            return 0;
        if (write_all(fd, buf, got) < 0)
            return apply_fail(a, x->path, errp, E_IO, "write: %s", strerror(errno));
        a->stats.file_bytes += got;
    }
}

static int
apply_file(OciApply *a, const ApplyEntry *x, int pfd, OciStream *s, TarReader *r, Error **errp)
{
    struct timespec ts[2] = {{x->e->mtime_sec, 0}, {x->e->mtime_sec, 0}};
    if (apply_clear(pfd, x->name, false) < 0)
        return apply_fail(a, x->path, errp, E_IO, "remove the old one: %s", strerror(errno));
    _cleanup_close_ int fd =
        openat(pfd, x->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return apply_fail(a, x->path, errp, E_IO, "create: %s", strerror(errno));
    if (apply_file_data(a, x, fd, s, r, errp) < 0)
        return -1;
    if (fchown(fd, x->e->uid, x->e->gid) < 0 || fchmod(fd, apply_mode(a, x)) < 0 ||
        futimens(fd, ts) < 0)
        return apply_fail(a, x->path, errp, E_IO, "owner, mode or time: %s", strerror(errno));
    a->stats.files++;
    return 0;
}

static int
apply_dir(OciApply *a, const ApplyEntry *x, int pfd, Error **errp)
{
    int kept = apply_clear(pfd, x->name, true);
    if (kept < 0)
        return apply_fail(a, x->path, errp, E_IO, "remove the old one: %s", strerror(errno));
    if (!kept && mkdirat(pfd, x->name, 0700) < 0)
        return apply_fail(a, x->path, errp, E_IO, "mkdir: %s", strerror(errno));
    _cleanup_close_ int fd = openat(pfd, x->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fchown(fd, x->e->uid, x->e->gid) < 0 || fchmod(fd, apply_mode(a, x)) < 0)
        return apply_fail(a, x->path, errp, E_IO, "directory: %s", strerror(errno));
    a->stats.dirs++;
    return 0;
}

static int
apply_symlink(OciApply *a, const ApplyEntry *x, int pfd, Error **errp)
{
    struct timespec ts[2] = {{x->e->mtime_sec, 0}, {x->e->mtime_sec, 0}};
    if (x->e->link_bad || x->e->link_len == 0)
        return apply_fail(a, x->path, errp, E_INVALID,
                          "symlink target is empty, holds NUL or is over %u bytes",
                          TAR_PATH_MAX_BYTES);
    if (apply_clear(pfd, x->name, false) < 0)
        return apply_fail(a, x->path, errp, E_IO, "remove the old one: %s", strerror(errno));
    if (symlinkat(x->e->link, pfd, x->name) < 0 ||
        fchownat(pfd, x->name, x->e->uid, x->e->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
        utimensat(pfd, x->name, ts, AT_SYMLINK_NOFOLLOW) < 0)
        return apply_fail(a, x->path, errp, E_IO, "symlink: %s", strerror(errno));
    a->stats.symlinks++;
    return 0;
}

static int
apply_hardlink(OciApply *a, const ApplyEntry *x, int pfd, Error **errp)
{
    char target[TAR_PATH_MAX_BYTES + 1], esc[OCI_APPLY_ESC_BYTES];
    size_t tlen;
    uint32_t depth;
    struct stat st, old;

    if (x->e->link_bad || x->e->link_len == 0)
        return apply_fail(a, x->path, errp, E_INVALID, "hard link target is empty or bad");
    PathVerdict v = extract_path_normalize(x->e->link, x->e->link_len, OCI_APPLY_NAME_MAX_BYTES,
                                           a->max_depth, target, &tlen, &depth);
    log_escape(esc, sizeof(esc), x->e->link, x->e->link_len);
    if (v != PATH_OK)
        return apply_fail(a, x->path, errp, E_INVALID,
                          "hard link target %s is absolute, climbs with .. or is over the caps",
                          esc);
    char *slash = strrchr(target, '/');
    const char *tname = slash ? slash + 1 : target;
    if (slash)
        *slash = '\0';
    _cleanup_close_ int tfd =
        oci_open_in_root(a->root_fd, slash ? target : "", O_PATH | O_DIRECTORY);
    if (tfd < 0 || fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return apply_fail(a, x->path, errp, E_INVALID,
                          "hard link target %s is not a regular file of the image", esc);
    bool linked = fstatat(pfd, x->name, &old, AT_SYMLINK_NOFOLLOW) == 0 &&
                  old.st_dev == st.st_dev && old.st_ino == st.st_ino; /* the same link twice */
    if (!linked &&
        (apply_clear(pfd, x->name, false) < 0 || linkat(tfd, tname, pfd, x->name, 0) < 0))
        return apply_fail(a, x->path, errp, E_IO, "link to %s: %s", esc, strerror(errno));
    a->stats.hardlinks++;
    return 0;
}

static void
apply_skip_special(OciApply *a, const ApplyEntry *x)
{
    if (a->stats.skipped++ == 0)
        log_escape(a->stats.first_skipped, sizeof(a->stats.first_skipped), x->path, x->len);
}

typedef struct NameList {
    char **v;
    size_t n, cap;
} NameList;

static void
name_list_clear(NameList *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* The names in dir_fd (not . and ..), read before anything in it changes. */
static int
apply_list_dir(OciApply *a, int dir_fd, NameList *l)
{
    int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    int r = 0;

    if (!d) {
        safe_close(fd);
        return -1;
    }
    for (struct dirent *de; r == 0 && (de = readdir(d));) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (l->n > a->max_entries) {
            errno = EMLINK;
            r = -1;
        } else if (l->n == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 64;
            char **v = realloc(l->v, cap * sizeof(*v));
            if (!v)
                r = -1;
            else
                l->v = v, l->cap = cap;
        }
        if (r == 0 && !(l->v[l->n] = strdup(de->d_name)))
            r = -1;
        else if (r == 0)
            l->n++;
    }
    closedir(d);
    return r;
}

/* Removes every entry below dir_fd (path dir) that this layer did not write. */
static int
apply_opaque_at(OciApply *a, int dir_fd, const char *dir, unsigned depth)
{
    _cleanup_(name_list_clear) NameList l = {0};
    char path[TAR_PATH_MAX_BYTES + NAME_MAX + 2];

    if (apply_list_dir(a, dir_fd, &l) < 0)
        return -1;
    for (size_t i = 0; i < l.n; i++) {
        int n = snprintf(path, sizeof(path), "%s%s%s", dir, dir[0] ? "/" : "", l.v[i]);
        if (n < 0 || (size_t) n >= sizeof(path) || !oci_pathset_has(&a->seen, path, (size_t) n)) {
            if (rm_rf_at(dir_fd, l.v[i]) < 0)
                return -1;
            continue;
        }
        _cleanup_close_ int child =
            openat(dir_fd, l.v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child >= 0 && depth < a->max_depth && apply_opaque_at(a, child, path, depth + 1) < 0)
            return -1;
    }
    return 0;
}

static int
apply_whiteout(OciApply *a, const ApplyEntry *x, Error **errp)
{
    _cleanup_close_ int pfd = -1;
    const char *hidden = x->name + strlen(WHITEOUT_PREFIX);
    bool opaque = strcmp(x->name, WHITEOUT_OPAQUE) == 0;
    char path[TAR_PATH_MAX_BYTES + 1];

    if (!opaque && (hidden[0] == '\0' || strcmp(hidden, ".") == 0 || strcmp(hidden, "..") == 0))
        return apply_fail(a, x->path, errp, E_INVALID, "a whiteout of nothing");
    a->stats.whiteouts++;
    if (apply_open_dir(a, x->parent, false, &pfd) < 0)
        return errno == ENOENT ? 0 : apply_dir_failed(a, x, errp); /* nothing to hide */
    if (opaque) {
        if (apply_opaque_at(a, pfd, x->parent, 0) < 0)
            return apply_fail(a, x->path, errp, E_IO, "opaque directory: %s", strerror(errno));
        return 0;
    }
    snprintf(path, sizeof(path), "%s%s%s", x->parent, x->parent[0] ? "/" : "", hidden);
    if (oci_pathset_has(&a->seen, path, strlen(path)))
        return 0; /* this layer's own entry: a whiteout hides lower layers only */
    if (rm_rf_at(pfd, hidden) < 0)
        return apply_fail(a, x->path, errp, E_IO, "whiteout: %s", strerror(errno));
    return 0;
}

/* Records the path and each of its parents as written by this layer. */
static int
apply_seen(OciApply *a, const ApplyEntry *x)
{
    for (size_t i = 1; i < x->len; i++)
        if (x->path[i] == '/' && oci_pathset_add(&a->seen, x->path, i) < 0)
            return -1;
    return oci_pathset_add(&a->seen, x->path, x->len);
}

static int
apply_name(OciApply *a, const TarEntry *e, ApplyEntry *x, Error **errp)
{
    uint32_t depth;
    char esc[OCI_APPLY_ESC_BYTES];

    x->e = e;
    log_escape(esc, sizeof(esc), e->path, e->path_len);
    if (e->path_bad)
        return error_set(errp, E_INVALID, 0, "%s: entry %s: name holds NUL or is over %u bytes",
                         a->label, esc, TAR_PATH_MAX_BYTES);
    PathVerdict v = extract_path_normalize(e->path, e->path_len, OCI_APPLY_NAME_MAX_BYTES,
                                           a->max_depth, x->path, &x->len, &depth);
    if (v == PATH_ROOT)
        return 0;
    if (v != PATH_OK)
        return error_set(errp, E_INVALID, 0, "%s: entry %s: %s", a->label, esc,
                         v == PATH_ABSOLUTE ? "absolute name"
                         : v == PATH_DOTDOT ? "a .. component in the name"
                                            : "name over the length or depth caps");
    memcpy(x->split, x->path, x->len + 1);
    char *slash = strrchr(x->split, '/');
    x->parent = slash ? x->split : "";
    x->name = slash ? slash + 1 : x->split;
    if (slash)
        *slash = '\0';
    return 1;
}

static int
apply_entry(OciApply *a, const TarEntry *e, OciStream *s, TarReader *r, Error **errp)
{
    _cleanup_close_ int pfd = -1;
    ApplyEntry x;
    int named = apply_name(a, e, &x, errp);

    if (named <= 0)
        return named;
    if (strncmp(x.name, WHITEOUT_PREFIX, strlen(WHITEOUT_PREFIX)) == 0)
        return apply_whiteout(a, &x, errp);
    if (e->type == TAR_TYPE_OTHER)
        return apply_fail(a, x.path, errp, E_INVALID,
                          "entry type '%c' (or a sparse file) is "
                          "not supported",
                          e->typeflag >= 0x20 && e->typeflag < 0x7f ? e->typeflag : '?');
    if (e->owner_bad)
        return apply_fail(a, x.path, errp, E_INVALID, "owner is not a 32-bit uid/gid");
    if (e->type == TAR_TYPE_CHAR || e->type == TAR_TYPE_BLOCK || e->type == TAR_TYPE_FIFO) {
        apply_skip_special(a, &x);
        return 0;
    }
    if (++a->stats.entries > a->max_entries)
        return apply_fail(a, x.path, errp, E_TOO_LARGE, "more than %u entries in the image",
                          a->max_entries);
    if (apply_seen(a, &x) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "path set");
    if (apply_open_dir(a, x.parent, true, &pfd) < 0)
        return apply_dir_failed(a, &x, errp);
    switch (e->type) {
    case TAR_TYPE_FILE:
        return apply_file(a, &x, pfd, s, r, errp);
    case TAR_TYPE_DIR:
        return apply_dir(a, &x, pfd, errp);
    case TAR_TYPE_SYMLINK:
        return apply_symlink(a, &x, pfd, errp);
    default:
        return apply_hardlink(a, &x, pfd, errp);
    }
}

int
oci_apply_layer(OciApply *a, const char *label, OciStream *s, Error **errp)
{
    _cleanup_free_ TarReader *r = malloc(sizeof(*r));
    _cleanup_free_ TarEntry *e = malloc(sizeof(*e));

    if (!r || !e)
        return error_set(errp, E_INTERNAL, ENOMEM, "tar reader");
    a->label = label;
    oci_pathset_clear(&a->seen);
    tar_reader_init(r, oci_stream_read, s);
    for (;;) {
        if (now_usec() >= a->deadline_usec)
            return error_set(errp, E_TIMEOUT, 0, "%s: the import's time ran out", label);
        TarStatus st = tar_reader_next(r, e);
        if (st == TAR_END)
            return 0;
        if (st == TAR_IO_ERROR)
            return error_set(errp, s->err ? s->err->category : E_IO, 0, "%s: %s", label,
                             s->err ? s->err->message : strerror(errno));
        if (st != TAR_ENTRY)
            return error_set(errp, E_INVALID, 0, "%s: broken tar at byte %llu: %s", label,
                             (unsigned long long) r->offset, r->why ?: "?");
        if (apply_entry(a, e, s, r, errp) < 0)
            return -1;
    }
}

void
oci_apply_free(OciApply *a)
{
    oci_pathset_clear(&a->seen);
}
