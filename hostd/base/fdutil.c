/* See fdutil.h. */
#include "fdutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"

int
write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t) n;
    }
    return 0;
}

int
read_full(int fd, void *buf, size_t len, size_t *ret_got)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t) n;
    }
    *ret_got = got;
    return 0;
}

static int
fd_toggle_flag(int fd, int get, int set, int flag, bool on)
{
    int flags = fcntl(fd, get);
    if (flags < 0)
        return -1;
    int nflags = on ? (flags | flag) : (flags & ~flag);
    if (nflags == flags)
        return 0;
    return fcntl(fd, set, nflags) < 0 ? -1 : 0;
}

int
fd_set_nonblock(int fd, bool on)
{
    return fd_toggle_flag(fd, F_GETFL, F_SETFL, O_NONBLOCK, on);
}

int
fd_set_cloexec(int fd, bool on)
{
    return fd_toggle_flag(fd, F_GETFD, F_SETFD, FD_CLOEXEC, on);
}

int
read_file_bounded(const char *path, size_t max_bytes, char **ret_buf, size_t *ret_len)
{
    return read_file_bounded_fd(open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), max_bytes, ret_buf,
                                ret_len);
}

int
read_file_bounded_at(int dirfd, const char *name, size_t max_bytes, char **ret_buf, size_t *ret_len)
{
    return read_file_bounded_fd(openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW),
                                max_bytes, ret_buf, ret_len);
}

int
read_file_bounded_fd(int fd_in, size_t max_bytes, char **ret_buf, size_t *ret_len)
{
    _cleanup_close_ int fd = fd_in;
    _cleanup_free_ char *buf = NULL;
    size_t got;

    if (fd < 0)
        return -1;
    buf = malloc(max_bytes + 2);
    if (!buf)
        return -1;
    if (read_full(fd, buf, max_bytes + 1, &got) < 0)
        return -1;
    if (got > max_bytes) {
        errno = EFBIG;
        return -1;
    }
    buf[got] = '\0';
    *ret_buf = TAKE_PTR(buf);
    *ret_len = got;
    return 0;
}

int
openat2_beneath(int dirfd, const char *path, int flags)
{
    struct open_how how = {
        .flags = (uint64_t) (flags | O_CLOEXEC | O_NOFOLLOW),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    return (int) syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

int
openat2_beneath_long(int dirfd, const char *path, int flags)
{
    _cleanup_close_ int cur = -1;

    while (strlen(path) >= PATH_MAX) {
        /* cut at the last '/' that leaves a piece (and its NUL) within PATH_MAX */
        const char *cut = memrchr(path, '/', PATH_MAX - 1);
        char piece[PATH_MAX];
        if (!cut || cut == path) {
            errno = ENAMETOOLONG; /* a component over NAME_MAX, or an absolute path */
            return -1;
        }
        memcpy(piece, path, (size_t) (cut - path));
        piece[cut - path] = '\0';
        int next = openat2_beneath(cur >= 0 ? cur : dirfd, piece, O_RDONLY | O_DIRECTORY);
        if (next < 0)
            return -1;
        safe_close(cur);
        cur = next;
        path = cut + 1;
    }
    return openat2_beneath(cur >= 0 ? cur : dirfd, path, flags);
}

int
mkdir_open_dir(const char *path, mode_t mode)
{
    if (mkdir(path, mode) < 0 && errno != EEXIST)
        return -1;
    return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}
