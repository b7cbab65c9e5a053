/* See owndir.h. Paths are resolved here one component at a time with O_PATH|O_NOFOLLOW
 * descriptors (as the kernel would, but checking each step), so what is checked is what a
 * later lookup of the same path passes through: none of it can be changed by another user. */
#include "owndir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdutil.h"
#include "macro.h"

DirTrust
dir_trust_own(const struct stat *st, uid_t euid)
{
    if (!S_ISDIR(st->st_mode))
        return DIR_TRUST_NOT_DIR;
    if (st->st_uid != euid)
        return DIR_TRUST_FOREIGN;
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return DIR_TRUST_WRITABLE;
    return DIR_TRUST_OK;
}

DirTrust
dir_trust_parent(const struct stat *st, uid_t euid)
{
    if (!S_ISDIR(st->st_mode))
        return DIR_TRUST_NOT_DIR;
    if (st->st_uid != 0 && st->st_uid != euid)
        return DIR_TRUST_FOREIGN;
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        return DIR_TRUST_WRITABLE;
    return DIR_TRUST_OK;
}

DirTrust
dir_trust_symlink(const struct stat *st, uid_t euid)
{
    return st->st_uid != 0 && st->st_uid != euid ? DIR_TRUST_FOREIGN : DIR_TRUST_OK;
}

const char *
dir_trust_to_string(DirTrust t)
{
    switch (t) {
    case DIR_TRUST_OK:
        return "ok";
    case DIR_TRUST_NOT_DIR:
        return "not a folder";
    case DIR_TRUST_FOREIGN:
        return "owned by another user";
    case DIR_TRUST_WRITABLE:
        return "writable by other users";
    }
    return "?";
}

static const char *
file_type(mode_t m)
{
    return S_ISLNK(m)   ? "a symlink"
           : S_ISREG(m) ? "a file"
           : S_ISDIR(m) ? "a folder"
                        : "a special file";
}

/* The refusal, saying what is there and why it matters. */
static int
refuse(Error **errp, const char *shown, const char *role, const struct stat *st, DirTrust t)
{
    unsigned uid = (unsigned) st->st_uid, mode = (unsigned) (st->st_mode & 07777);
    switch (t) {
    case DIR_TRUST_NOT_DIR:
        return error_set(errp, E_CONFLICT, 0,
                         "%s: %s is %s (uid %u, mode %04o), not a folder: refused, never "
                         "followed or used",
                         shown, role, file_type(st->st_mode), uid, mode);
    case DIR_TRUST_FOREIGN:
        return error_set(errp, E_CONFLICT, 0,
                         "%s: %s (%s, mode %04o) is owned by uid %u, not by this daemon (uid "
                         "%u): refused, never used, since that user could read, swap or "
                         "redirect what goes there",
                         shown, role, file_type(st->st_mode), mode, uid, (unsigned) geteuid());
    default:
        return error_set(errp, E_CONFLICT, 0,
                         "%s: %s (%s, uid %u, mode %04o) is writable by other users: refused, "
                         "never used, since they could swap or redirect what goes there",
                         shown, role, file_type(st->st_mode), uid, mode);
    }
}

int
owndir_open_at(int dirfd, const char *name, const char *shown, mode_t mode, unsigned flags,
               int *ret_fd, Error **errp)
{
    struct stat st;
    bool made = false;

    if ((flags & OWNDIR_CREATE) && mkdirat(dirfd, name, mode) == 0)
        made = true;
    else if ((flags & OWNDIR_CREATE) && errno != EEXIST)
        return error_set(errp, E_IO, errno, "create %s", shown);
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if ((e == ELOOP || e == ENOTDIR) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            return refuse(errp, shown, "the folder", &st, DIR_TRUST_NOT_DIR);
        return error_set(errp, E_IO, e, "open %s", shown);
    }
    if (fstat(fd, &st) < 0)
        return error_set(errp, E_IO, errno, "stat %s", shown);
    DirTrust t = dir_trust_own(&st, geteuid());
    if (t != DIR_TRUST_OK)
        return refuse(errp, shown, "the folder", &st, t);
    if ((made || (flags & OWNDIR_SET_MODE)) && (st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
        return error_set(errp, E_IO, errno, "chmod %s", shown);
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* The next component of *rest (skipping '/'s) into name; false at the end. */
static bool
next_component(const char **rest, char name[NAME_MAX + 1], bool *ret_too_long)
{
    const char *p = *rest;
    while (*p == '/')
        p++;
    const char *end = strchrnul(p, '/');
    size_t len = (size_t) (end - p);
    *rest = end;
    *ret_too_long = len > NAME_MAX;
    if (len == 0 || len > NAME_MAX)
        return len > NAME_MAX;
    memcpy(name, p, len);
    name[len] = '\0';
    return true;
}

static int
open_root(const char *shown, uid_t euid, int *ret_fd, Error **errp)
{
    struct stat st;
    _cleanup_close_ int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return error_set(errp, E_IO, errno, "%s: open /", shown);
    DirTrust t = dir_trust_parent(&st, euid);
    if (t != DIR_TRUST_OK)
        return refuse(errp, shown, "/", &st, t);
    safe_close(*ret_fd);
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* A symlink at fd: its owner checked, its target put in front of rest (*todo reallocated). */
static int
chase_symlink(int fd, const struct stat *st, const char *shown, const char *name, char **todo,
              const char **rest, Error **errp)
{
    char target[PATH_MAX];
    DirTrust t = dir_trust_symlink(st, geteuid());
    if (t != DIR_TRUST_OK)
        return refuse(errp, shown, name, st, t);
    ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
    if (n <= 0 || (size_t) n >= sizeof(target) - 1)
        return error_set(errp, E_IO, n < 0 ? errno : ENAMETOOLONG, "%s: read symlink %s", shown,
                         name);
    target[n] = '\0';
    char *next = NULL;
    if (asprintf(&next, "%s/%s", target, *rest) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "%s", shown);
    free(*todo);
    *todo = next;
    *rest = next;
    return 0;
}

/* Resolves path from / one component at a time; every folder passed through (the last too)
 * must pass dir_trust_parent(), every symlink dir_trust_symlink(). *ret_fd: O_PATH. */
static int
chase_trusted(const char *path, int *ret_fd, Error **errp)
{
    uid_t euid = geteuid();
    _cleanup_free_ char *todo = strdup(path);
    _cleanup_close_ int cur = -1;
    char name[NAME_MAX + 1];
    unsigned links = 0;
    bool too_long;

    if (!todo)
        return error_set(errp, E_INTERNAL, ENOMEM, "%s", path);
    if (path[0] != '/')
        return error_set(errp, E_INVALID, 0, "%s is not an absolute path", path);
    if (open_root(path, euid, &cur, errp) < 0)
        return -1;
    for (const char *rest = todo; next_component(&rest, name, &too_long);) {
        struct stat st;
        if (too_long)
            return error_set(errp, E_INVALID, ENAMETOOLONG, "%s", path);
        if (strcmp(name, ".") == 0)
            continue;
        _cleanup_close_ int next = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 || fstat(next, &st) < 0)
            return error_set(errp, E_IO, errno, "%s: open %s", path, name);
        if (S_ISLNK(st.st_mode)) {
            if (++links > OWNDIR_MAX_SYMLINKS)
                return error_set(errp, E_INVALID, ELOOP, "%s", path);
            if (chase_symlink(next, &st, path, name, &todo, &rest, errp) < 0 ||
                (todo[0] == '/' && open_root(path, euid, &cur, errp) < 0))
                return -1;
            continue;
        }
        DirTrust t = dir_trust_parent(&st, euid);
        if (t != DIR_TRUST_OK)
            return refuse(errp, path, name, &st, t);
        safe_close(cur);
        cur = TAKE_FD(next);
    }
    *ret_fd = TAKE_FD(cur);
    return 0;
}

int
owndir_open_parent(const char *path, int *ret_fd, Error **errp)
{
    return chase_trusted(path, ret_fd, errp);
}

/* FOLLOW_LAST with a symlink last: resolved (and checked) like the folders before it, then
 * the folder it names must be the daemon's own. */
static int
open_followed(const char *path, mode_t mode, unsigned flags, int *ret_fd, Error **errp)
{
    _cleanup_close_ int at = -1;
    struct stat st;
    if (chase_trusted(path, &at, errp) < 0)
        return -1;
    _cleanup_close_ int fd = openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return error_set(errp, E_IO, errno, "open %s", path);
    DirTrust t = dir_trust_own(&st, geteuid());
    if (t != DIR_TRUST_OK)
        return refuse(errp, path, "the folder it names", &st, t);
    if ((flags & OWNDIR_SET_MODE) && (st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
        return error_set(errp, E_IO, errno, "chmod %s", path);
    *ret_fd = TAKE_FD(fd);
    return 0;
}

int
owndir_open(const char *path, mode_t mode, unsigned flags, int *ret_fd, Error **errp)
{
    _cleanup_free_ char *parent = strdup(path);
    _cleanup_close_ int pfd = -1;
    struct stat st;

    if (!parent)
        return error_set(errp, E_INTERNAL, ENOMEM, "%s", path);
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (path[0] != '/' || !slash || strcmp(slash + 1, "") == 0 || strcmp(slash + 1, ".") == 0 ||
        strcmp(slash + 1, "..") == 0)
        return error_set(errp, E_INVALID, 0, "%s: not an absolute path to a folder", path);
    const char *base = slash + 1;
    char base_copy[NAME_MAX + 1];
    if (strlen(base) > NAME_MAX)
        return error_set(errp, E_INVALID, ENAMETOOLONG, "%s", path);
    strcpy(base_copy, base);
    slash[slash == parent ? 1 : 0] = '\0'; /* "/x" has the parent "/" */
    if (chase_trusted(parent, &pfd, errp) < 0)
        return -1;
    if ((flags & OWNDIR_FOLLOW_LAST) && fstatat(pfd, base_copy, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode))
        return open_followed(path, mode, flags, ret_fd, errp);
    return owndir_open_at(pfd, base_copy, path, mode, flags, ret_fd, errp);
}
