/* Destination-side filesystem calls: see dest.h. openat2 has no glibc wrapper on Debian 12,
 * so it is called through syscall(); a kernel without it (< 5.6) fails with -ENOSYS rather
 * than falling back to a lookup that could follow a symlink. */
#include "dest.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "path.h"
#include "tar.h"

#define DEST_RESOLVE                                                                               \
    (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
#define DEST_EAGAIN_RETRIES 8
#define DEST_IMPLICIT_DIR_MODE 0755u

static int
dest_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode)
{
    struct open_how how = {.flags = flags | O_CLOEXEC, .mode = mode, .resolve = DEST_RESOLVE};
    for (int i = 0; i < DEST_EAGAIN_RETRIES; i++) {
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
        if (fd >= 0)
            return (int) fd;
        if (errno != EAGAIN && errno != EINTR)
            return -errno;
    }
    return -EAGAIN;
}

int
dest_errno_is_conflict(int err)
{
    return err == EEXIST || err == ELOOP || err == ENOTDIR || err == EXDEV || err == EISDIR ||
           err == ENAMETOOLONG || err == ENOENT;
}

/* One directory level: parent_fd/leaf. EEXIST is fine when it is a directory. */
static int
dest_mkdir_one(int dest_fd, const char *path, uint32_t mode, bool exact_mode, uint32_t *created)
{
    int r = mkdirat(dest_fd, path, 0700);
    if (r < 0 && errno != EEXIST)
        return -errno;
    bool made = r == 0;
    _cleanup_close_ int fd = dest_openat2(dest_fd, path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fd; /* an existing non-directory or symlink: -ENOTDIR / -ELOOP */
    if (made)
        (*created)++;
    if ((made || exact_mode) && fchmod(fd, mode) < 0)
        return -errno;
    return 0;
}

/* Opens the directory path[0..len) for use as a dirfd, making missing levels (0755) one at a
 * time relative to a parent fd that openat2 opened safely (mkdirat() itself resolves its
 * parent without RESOLVE flags). Iterative, so depth costs no stack. Returns fd or -errno. */
static int
dest_walk(int dest_fd, const char *path, size_t len, uint32_t *created)
{
    _cleanup_close_ int cur = -1;
    size_t i = 0;

    while (i < len) {
        char comp[EXTRACT_NAME_MAX_BYTES + 1];
        size_t start = i;
        while (i < len && path[i] != '/')
            i++;
        if (i - start == 0 || i - start > EXTRACT_NAME_MAX_BYTES)
            return -EINVAL; /* not a normalised path */
        memcpy(comp, path + start, i - start);
        comp[i - start] = '\0';
        if (i < len)
            i++;
        int at = cur >= 0 ? cur : dest_fd;
        int r = dest_mkdir_one(at, comp, DEST_IMPLICIT_DIR_MODE, false, created);
        if (r < 0)
            return r;
        int next = dest_openat2(at, comp, O_PATH | O_DIRECTORY, 0);
        if (next < 0)
            return next;
        safe_close(cur);
        cur = next;
    }
    return cur >= 0 ? TAKE_FD(cur) : dest_openat2(dest_fd, ".", O_PATH | O_DIRECTORY, 0);
}

static size_t
dest_parent_len(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? (size_t) (slash - path) : 0;
}

int
dest_mkdir(int dest_fd, const char *path, uint32_t mode, uint32_t *ret_created)
{
    size_t plen = dest_parent_len(path);
    _cleanup_close_ int pfd = dest_walk(dest_fd, path, plen, ret_created);
    if (pfd < 0)
        return pfd;
    return dest_mkdir_one(pfd, path + plen + (plen > 0), mode, true, ret_created);
}

static int
dest_make_parent(int dest_fd, const char *path, uint32_t *created)
{
    size_t plen = dest_parent_len(path);
    if (plen == 0)
        return -ENOENT; /* the destination itself is missing: not ours to make */
    int fd = dest_walk(dest_fd, path, plen, created);
    if (fd < 0)
        return fd;
    safe_close(fd);
    return 0;
}

int
dest_create_file(int dest_fd, const char *path, uint32_t *ret_created)
{
    uint64_t flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY;
    int fd = dest_openat2(dest_fd, path, flags, 0600);
    if (fd != -ENOENT)
        return fd;
    int r = dest_make_parent(dest_fd, path, ret_created);
    if (r < 0)
        return r;
    return dest_openat2(dest_fd, path, flags, 0600);
}

static int
dest_file_finish_ts(int fd, uint32_t mode, struct timespec mtime)
{
    struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, mtime};
    int r = 0;
    if (fchmod(fd, mode) < 0)
        r = -errno;
    else if (futimens(fd, ts) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0 && errno != EINTR)
        r = -errno;
    return r;
}

int
dest_file_finish(int fd, uint32_t mode, int64_t mtime_sec)
{
    return dest_file_finish_ts(fd, mode, (struct timespec){.tv_sec = (time_t) mtime_sec});
}

int
dest_file_finish_ns(int fd, uint32_t mode, uint64_t mtime_ns)
{
    return dest_file_finish_ts(fd, mode,
                               (struct timespec){.tv_sec = (time_t) (mtime_ns / 1000000000u),
                                                 .tv_nsec = (long) (mtime_ns % 1000000000u)});
}

void
dest_unlink(int dest_fd, const char *path)
{
    /* Only ever called on a path this run created with O_EXCL, through safe parents. */
    const char *slash = strrchr(path, '/');
    if (!slash) {
        (void) unlinkat(dest_fd, path, 0);
        return;
    }
    char parent[TAR_PATH_MAX_BYTES + 1];
    size_t plen = (size_t) (slash - path);
    if (plen >= sizeof(parent))
        return;
    memcpy(parent, path, plen);
    parent[plen] = '\0';
    _cleanup_close_ int pfd = dest_openat2(dest_fd, parent, O_PATH | O_DIRECTORY, 0);
    if (pfd >= 0)
        (void) unlinkat(pfd, slash + 1, 0);
}
