/* FilePut and FileGet: see files.h. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "guest_limits.h"
#include "log.h"
#include "reply.h"
#include "wspath.h"

/* The path is quoted escaped and shortened: it is the program's, and error text is bounded. */
static int
files_fail(Error **errp, int e, const char *what, const char *path)
{
    char shown[96];
    return error_set(errp, reply_category_from_errno(e), e, "%s %s", what,
                     log_escape(shown, sizeof(shown), path, strlen(path)));
}

/* A regular file, or EINVAL-ish refusal: FIFOs, sockets, devices and directories. */
static int
files_check_regular(int fd, struct stat *st)
{
    if (fstat(fd, st) < 0)
        return -1;
    if (S_ISDIR(st->st_mode)) {
        errno = EISDIR;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        errno = ENXIO; /* INVALID_PATH: wrong type */
        return -1;
    }
    return 0;
}

int
files_open_regular(int ws_fd, const char *rel, struct stat *ret_st, Error **errp)
{
    _cleanup_close_ int fd = wspath_openat(ws_fd, rel, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0 || files_check_regular(fd, ret_st) < 0)
        return files_fail(errp, errno, "open", rel);
    return TAKE_FD(fd);
}

/* Creates the file (owned by the session) or opens the existing one; never follows a link. */
static int
files_open_for_put(const WsCtx *ws, const Stockade__Runner__FilePut *p, bool *ret_created)
{
    mode_t mode = p->mode ? (p->mode & 0777) : FILE_MODE_DEFAULT;
    int flags = O_WRONLY | O_NONBLOCK;

    int fd = wspath_openat(ws->ws_fd, p->path, flags | O_CREAT | O_EXCL, mode);
    if (fd >= 0) {
        *ret_created = true;
        if (fchown(fd, ws->uid, ws->gid) < 0 || fchmod(fd, mode) < 0) {
            /* Left in place: unlinking by path again could hit a swapped-in symlink. */
            safe_close(fd);
            return -1;
        }
        return fd;
    }
    if (errno != EEXIST)
        return -1;
    *ret_created = false;
    return wspath_openat(ws->ws_fd, p->path, flags, 0);
}

static int
files_pwrite_all(int fd, const uint8_t *data, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, data, len, off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += n;
        len -= (size_t) n;
        off += n;
    }
    return 0;
}

int
files_put(const WsCtx *ws, const Stockade__Runner__FilePut *p, Error **errp)
{
    struct stat st;
    bool created = false;

    _cleanup_close_ int fd = files_open_for_put(ws, p, &created);
    if (fd < 0)
        return files_fail(errp, errno, "put", p->path);
    if (files_check_regular(fd, &st) < 0)
        return files_fail(errp, errno, "put", p->path);
    if (p->truncate && !created && ftruncate(fd, 0) < 0)
        return files_fail(errp, errno, "truncate", p->path);
    if (files_pwrite_all(fd, p->data.data, p->data.len, (off_t) p->offset) < 0)
        return files_fail(errp, errno, "write", p->path);
    return 0;
}

int
files_get(const WsCtx *ws, const Stockade__Runner__FileGet *g, uint8_t *buf,
          Stockade__Runner__FileData *ret, Error **errp)
{
    struct stat st;
    ssize_t n;

    _cleanup_close_ int fd = files_open_regular(ws->ws_fd, g->path, &st, errp);
    if (fd < 0)
        return -1;
    if (g->offset > (uint64_t) st.st_size)
        return error_set(errp, E_TOO_LARGE, 0, "offset %llu is past the end (%lld bytes)",
                         (unsigned long long) g->offset, (long long) st.st_size);
    do
        n = pread(fd, buf, g->max_bytes, (off_t) g->offset);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return files_fail(errp, errno, "read", g->path);
    *ret = (Stockade__Runner__FileData) STOCKADE__RUNNER__FILE_DATA__INIT;
    ret->offset = g->offset;
    ret->data.data = buf;
    ret->data.len = (size_t) n;
    /* The file may have grown since fstat: the size we report covers what we read. */
    ret->size = MAX((uint64_t) st.st_size, g->offset + (uint64_t) n);
    ret->eof = g->offset + (uint64_t) n == ret->size;
    return 0;
}
