/* COPY/ADD of a Dockerfile build: files of the build context into the tree. See oci_copy.h. */
#include "oci_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
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

#define COPY_BUF_BYTES (128u * 1024u)
#define COPY_MODE_KEEP 01777u

typedef struct Copy {
    OciApply *a;
    const OciCopySpec *spec;
    uint64_t *budget_bytes;
    Error **errp;
} Copy;

static int
copy_fail(Copy *c, const char *path, int err, const char *what)
{
    char esc[OCI_APPLY_ESC_BYTES];
    return error_set(c->errp, err == EMLINK || err == EFBIG ? E_TOO_LARGE : E_IO,
                     err == EMLINK || err == EFBIG ? 0 : err, "COPY %s: %s",
                     log_escape(esc, sizeof(esc), path, strlen(path)), what);
}

static int
copy_count(Copy *c, uint64_t bytes)
{
    if (++c->a->stats.entries > c->a->max_entries)
        return errno = EMLINK, -1;
    if (bytes > *c->budget_bytes)
        return errno = EFBIG, -1;
    *c->budget_bytes -= bytes;
    return 0;
}

static int
copy_meta(Copy *c, int dir_fd, const char *name, mode_t mode, bool symlink)
{
    struct timespec ts[2] = {{c->spec->mtime_sec, 0}, {c->spec->mtime_sec, 0}};
    int flags = AT_SYMLINK_NOFOLLOW;
    if (fchownat(dir_fd, name, c->spec->uid, c->spec->gid, flags) < 0 ||
        (!symlink && fchmodat(dir_fd, name, mode & COPY_MODE_KEEP, 0) < 0) ||
        utimensat(dir_fd, name, ts, flags) < 0)
        return -1;
    if (mode & (S_ISUID | S_ISGID))
        c->a->stats.stripped++;
    return 0;
}

static int
copy_file(Copy *c, int src_fd, const struct stat *st, int dir_fd, const char *name)
{
    _cleanup_free_ uint8_t *buf = malloc(COPY_BUF_BYTES);
    ssize_t n;

    if (!buf || copy_count(c, (uint64_t) st->st_size) < 0 || rm_rf_at(dir_fd, name) < 0)
        return -1;
    _cleanup_close_ int fd =
        openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    while ((n = read(src_fd, buf, COPY_BUF_BYTES)) > 0)
        if (write_all(fd, buf, (size_t) n) < 0)
            return -1;
    if (n < 0)
        return -1;
    c->a->stats.files++;
    c->a->stats.file_bytes += (uint64_t) st->st_size;
    return copy_meta(c, dir_fd, name, st->st_mode, false);
}

static int copy_dir_contents(Copy *c, int src_fd, const char *dest, unsigned depth);

/* One entry of the context (src_dir_fd, name, st) to dest_dir/name in the tree. */
static int
copy_entry(Copy *c, int src_dir_fd, const char *name, const struct stat *st, const char *dest,
           unsigned depth)
{
    char path[TAR_PATH_MAX_BYTES + 1], target[TAR_PATH_MAX_BYTES + 1];
    int n = snprintf(path, sizeof(path), "%s%s%s", dest, dest[0] ? "/" : "", name);
    _cleanup_close_ int dir = -1, src = -1;

    if (n < 0 || (size_t) n > OCI_APPLY_NAME_MAX_BYTES || depth > c->a->max_depth)
        return errno = ENAMETOOLONG, -1;
    if (oci_apply_open_dir(c->a, dest, true, &dir) < 0)
        return -1;
    if (S_ISDIR(st->st_mode)) {
        struct stat old;
        if (fstatat(dir, name, &old, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(old.st_mode) &&
            !S_ISLNK(old.st_mode) && rm_rf_at(dir, name) < 0)
            return -1;
        if (fstatat(dir, name, &old, 0) < 0 &&
            (copy_count(c, 0) < 0 || mkdirat(dir, name, 0700) < 0 ||
             copy_meta(c, dir, name, st->st_mode, false) < 0))
            return -1;
        src = openat(src_dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return src < 0 ? -1 : copy_dir_contents(c, src, path, depth + 1);
    }
    if (S_ISLNK(st->st_mode)) {
        ssize_t len = readlinkat(src_dir_fd, name, target, sizeof(target) - 1);
        if (len <= 0 || copy_count(c, 0) < 0 || rm_rf_at(dir, name) < 0)
            return -1;
        target[len] = '\0';
        if (symlinkat(target, dir, name) < 0 || copy_meta(c, dir, name, 0, true) < 0)
            return -1;
        c->a->stats.symlinks++;
        return 0;
    }
    if (!S_ISREG(st->st_mode)) {
        c->a->stats.skipped++;
        return 0;
    }
    src = openat(src_dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    return src < 0 ? -1 : copy_file(c, src, st, dir, name);
}

static int
name_cmp(const void *x, const void *y)
{
    return strcmp(*(char *const *) x, *(char *const *) y);
}

/* Every entry of src_fd, sorted (the tree must not depend on readdir's order), into dest. */
static int
copy_dir_contents(Copy *c, int src_fd, const char *dest, unsigned depth)
{
    int fd = dup(src_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    char **names = NULL;
    size_t n = 0;
    int r = 0;

    if (!d) {
        safe_close(fd);
        return -1;
    }
    for (struct dirent *de; r == 0 && (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char **v = n < c->a->max_entries ? realloc(names, (n + 1) * sizeof(*v)) : NULL;
        if (!v || !(v[n] = strdup(de->d_name))) {
            names = v ? v : names;
            r = -1;
            errno = v ? ENOMEM : EMLINK;
            break;
        }
        names = v;
        n++;
    }
    qsort(names, n, sizeof(*names), name_cmp);
    for (size_t i = 0; r == 0 && i < n; i++) {
        struct stat st;
        r = fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0
                ? -1
                : copy_entry(c, dirfd(d), names[i], &st, dest, depth);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return r;
}

int
oci_copy_into(OciApply *a, int ctx_fd, const OciCopySpec *spec, uint64_t *budget_bytes,
              Error **errp)
{
    char src[TAR_PATH_MAX_BYTES + 1], esc[OCI_APPLY_ESC_BYTES];
    size_t len;
    uint32_t depth;
    struct stat st;
    Copy c = {.a = a, .spec = spec, .budget_bytes = budget_bytes, .errp = errp};

    PathVerdict v = extract_path_normalize(spec->src, strlen(spec->src), OCI_APPLY_NAME_MAX_BYTES,
                                           a->max_depth, src, &len, &depth);
    log_escape(esc, sizeof(esc), spec->src, strlen(spec->src));
    if (v != PATH_OK && v != PATH_ROOT)
        return error_set(errp, E_INVALID, 0, "COPY %s: not a path inside the build context", esc);
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
    _cleanup_close_ int fd =
        (int) syscall(SYS_openat2, ctx_fd, v == PATH_ROOT ? "." : src, &how, sizeof(how));
    if (fd < 0 || fstat(fd, &st) < 0)
        return error_set(errp, E_INVALID, errno, "COPY %s: not in the build context", esc);
    if (S_ISDIR(st.st_mode))
        return copy_dir_contents(&c, fd, spec->dest, 0) < 0
                   ? copy_fail(&c, spec->src, errno, strerror(errno))
                   : 0;
    if (!S_ISREG(st.st_mode))
        return error_set(errp, E_INVALID, 0, "COPY %s: not a file or directory", esc);
    const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
    char dest[TAR_PATH_MAX_BYTES + 1];
    const char *slash = strrchr(spec->dest, '/');
    int n = spec->dest_is_dir ? snprintf(dest, sizeof(dest), "%s", spec->dest)
                              : snprintf(dest, sizeof(dest), "%.*s",
                                         (int) (slash ? slash - spec->dest : 0), spec->dest);
    const char *name = spec->dest_is_dir ? base : (slash ? slash + 1 : spec->dest);
    _cleanup_close_ int dir = -1;
    if (n < 0 || (size_t) n >= sizeof(dest) || !name[0] ||
        oci_apply_open_dir(a, dest, true, &dir) < 0 || copy_file(&c, fd, &st, dir, name) < 0)
        return copy_fail(&c, spec->src, errno, strerror(errno));
    return 0;
}
