/* Folders only the daemon's user can change (issue 25).
 *
 * The daemon puts files by path into its state directory, its subfolders and the memory
 * templates' folder, and QEMU opens template files by path. A folder another user made or
 * can write, a folder on the way there that another user can write (not sticky), or a symlink
 * that another user owns anywhere on the way, would let that user read, swap or redirect
 * those files. These helpers make such folders or open existing ones, and refuse rather than
 * adopt, chmod or follow what is not the daemon's. */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "error.h"

typedef enum {
    DIR_TRUST_OK,
    DIR_TRUST_NOT_DIR,  /* a symlink, a file, a socket... where a folder should be */
    DIR_TRUST_FOREIGN,  /* owned by a user other than the one expected */
    DIR_TRUST_WRITABLE, /* another user can add, remove or rename its entries */
} DirTrust;

/* Pure. A folder the daemon keeps files in (st: an lstat of it): a directory, owned by euid,
 * writable by nobody else (group and other write bits clear). */
DirTrust dir_trust_own(const struct stat *st, uid_t euid);
/* Pure. A folder on the way to one of the daemon's (st: a stat of it): a directory owned by
 * root or euid, not writable by group or other unless sticky (in a sticky folder nobody can
 * rename or remove an entry that is not theirs: /tmp, /dev/shm). */
DirTrust dir_trust_parent(const struct stat *st, uid_t euid);
/* Pure. A symlink on the way (st: an lstat of it): owned by root or euid. */
DirTrust dir_trust_symlink(const struct stat *st, uid_t euid);
const char *dir_trust_to_string(DirTrust t);

/* Most symlinks followed while resolving one path (the kernel's own limit). */
#define OWNDIR_MAX_SYMLINKS 40

enum {
    OWNDIR_CREATE = 1 << 0,      /* make the folder if missing (then its mode is set exactly) */
    OWNDIR_SET_MODE = 1 << 1,    /* also set mode on an existing folder */
    OWNDIR_FOLLOW_LAST = 1 << 2, /* the last component may be a symlink (an operator's path) */
};

/* The folder name (one component) beneath dirfd, made (mode) or existing, opened
 * O_DIRECTORY|O_NOFOLLOW: *ret_fd only when dir_trust_own() holds for what was opened. A
 * symlink in its place is never followed. On refusal the error (E_CONFLICT) names what is
 * there: its owner and mode. `shown` is the folder's name in messages. */
int owndir_open_at(int dirfd, const char *name, const char *shown, mode_t mode, unsigned flags,
                   int *ret_fd, Error **errp);
/* The same for an absolute path, after resolving its parent one component at a time: every
 * folder the resolution passes through must pass dir_trust_parent() and every symlink
 * dir_trust_symlink(). With OWNDIR_FOLLOW_LAST a last component that is a symlink is
 * resolved the same way and the folder it names must pass dir_trust_own(); without, it is
 * refused. */
int owndir_open(const char *path, mode_t mode, unsigned flags, int *ret_fd, Error **errp);
/* Only the check of owndir_open() for path's parent folders and path itself as a parent
 * (dir_trust_parent): *ret_fd is an O_PATH descriptor of the folder path names. */
int owndir_open_parent(const char *path, int *ret_fd, Error **errp);
