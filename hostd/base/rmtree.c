/* rm_rf_at(): removal of a tree through directory fds (see fdutil.h).
 *
 * Every step is relative to an open directory, one component at a time (fstatat, unlinkat,
 * openat), so neither the depth nor the length of a path is bounded by PATH_MAX: the mirror
 * accepts 4096-byte relative paths beneath an artifacts folder, whose absolute form is longer,
 * and remove() on that form fails with ENAMETOOLONG. Symlinks are never followed: an entry is
 * looked at with AT_SYMLINK_NOFOLLOW, opened O_NOFOLLOW|O_DIRECTORY and must still be the
 * inode it was. A directory on another device is not entered (EXDEV).
 *
 * No recursion and at most three descriptors open: the walk keeps a heap frame per level
 * (RM_RF_MAX_DEPTH at most) and climbs back through "..", checking that the parent is still
 * the inode it left. A directory is re-read from its start after each child is gone, which
 * costs little: everything before that child was removed already. The first failure stops
 * the walk, so the caller can tell that something is left. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "macro.h"

typedef struct RmFrame {
    dev_t parent_dev; /* the directory this one was entered from */
    ino_t parent_ino;
    char name[NAME_MAX + 1]; /* this directory's name in it */
} RmFrame;

static bool
same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Opens entry name of dirfd as a directory; it must be the inode *want describes (a swap
 * for a symlink or another directory meanwhile fails with ESTALE). */
static int
rm_open_dir(int dirfd, const char *name, const struct stat *want)
{
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat now;

    if (fd < 0 || fstat(fd, &now) < 0)
        return -1;
    if (!same_inode(&now, want)) {
        errno = ESTALE;
        return -1;
    }
    return TAKE_FD(fd);
}

static bool
dot_or_dotdot(const char *n)
{
    return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

/* Unlinks every non-directory of dirfd up to its first subdirectory. Returns 1 with that
 * subdirectory in ret_name / *ret_st, 0 once dirfd is empty, -1 on failure. */
static int
rm_scan(int dirfd, dev_t dev, char ret_name[static NAME_MAX + 1], struct stat *ret_st)
{
    int dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    struct dirent *de;
    int r = 0;

    if (!d)
        return safe_close(dup_fd);
    rewinddir(d); /* the offset is shared with dirfd, left wherever the last scan ended */
    for (errno = 0; (de = readdir(d)); errno = 0) {
        struct stat st;
        if (dot_or_dotdot(de->d_name))
            continue;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue;
            r = -1;
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (st.st_dev != dev) {
                errno = EXDEV; /* a mount point: never entered */
                r = -1;
                break;
            }
            memcpy(ret_name, de->d_name, strlen(de->d_name) + 1);
            *ret_st = st;
            r = 1;
            break;
        }
        if (unlinkat(dirfd, de->d_name, 0) < 0 && errno != ENOENT) {
            r = -1;
            break;
        }
    }
    if (!de && errno)
        r = -1;
    int saved = errno;
    closedir(d);
    errno = saved;
    return r;
}

/* Climbs from *cur (empty, entered from frame f's parent) to that parent, which becomes
 * *cur and *cur_st, and removes the emptied directory from it. */
static int
rm_climb(int *cur, struct stat *cur_st, const RmFrame *f)
{
    int parent = openat(*cur, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;

    if (parent < 0)
        return -1;
    if (fstat(parent, &st) < 0)
        return safe_close(parent);
    if (st.st_dev != f->parent_dev || st.st_ino != f->parent_ino) {
        safe_close(parent);
        errno = ESTALE; /* moved meanwhile: ".." is no longer where the walk came from */
        return -1;
    }
    safe_close(*cur);
    *cur = parent;
    *cur_st = st;
    return unlinkat(parent, f->name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -1 : 0;
}

/* Empties the directory top_fd (which is *top), leaving it in place. */
static int
rm_empty_dir(int top_fd, const struct stat *top)
{
    _cleanup_free_ RmFrame *stack = NULL;
    size_t depth = 0, cap = 0;
    _cleanup_close_ int cur = fcntl(top_fd, F_DUPFD_CLOEXEC, 3);
    struct stat cur_st = *top;

    if (cur < 0)
        return -1;
    for (;;) {
        char name[NAME_MAX + 1];
        struct stat st;
        int r = rm_scan(cur, top->st_dev, name, &st);
        if (r < 0)
            return -1;
        if (r == 0 && depth == 0)
            return 0;
        if (r == 0) {
            if (rm_climb(&cur, &cur_st, &stack[--depth]) < 0)
                return -1;
            continue;
        }
        if (depth == RM_RF_MAX_DEPTH) {
            errno = ELOOP;
            return -1;
        }
        if (depth == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            RmFrame *ns = realloc(stack, ncap * sizeof(*ns));
            if (!ns)
                return -1;
            stack = ns;
            cap = ncap;
        }
        int child = rm_open_dir(cur, name, &st);
        if (child < 0)
            return -1;
        stack[depth].parent_dev = cur_st.st_dev;
        stack[depth].parent_ino = cur_st.st_ino;
        memcpy(stack[depth].name, name, sizeof(name));
        depth++;
        safe_close(cur);
        cur = child;
        cur_st = st;
    }
}

int
rm_rf_at(int dirfd, const char *name)
{
    struct stat st;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -1 : 0;
    _cleanup_close_ int fd = rm_open_dir(dirfd, name, &st);
    if (fd < 0 || rm_empty_dir(fd, &st) < 0)
        return -1;
    return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -1 : 0;
}

int
rm_rf(const char *path)
{
    return rm_rf_at(AT_FDCWD, path);
}
