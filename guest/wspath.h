/* Paths below the workspace, resolved without ever following a symlink.
 *
 * Every path from the host is workspace-relative and already checked by proto/
 * (msg_path_is_valid: no "..", no ".", no empty component, bounded). It is still opened only
 * through openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV) from the workspace directory fd, plus O_NOFOLLOW, because the workspace
 * belongs to the hostile program, which may swap any component for a symlink at any time.
 * A symlink anywhere in the path fails with ELOOP (mapped to INVALID_PATH). No logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* The logical workspace path as the host and the execs name it. */
#define WS_LOGICAL_PATH "/workspace"
/* E2B's home (issue 28): the workspace bind-mounted (session.c), so a program whose cwd is
 * there sees /home/user as its path, as in an E2B sandbox. An Exec.cwd may name either. */
#define WS_HOME_PATH "/home/user"

/* Maps an Exec.cwd ("" or an absolute path inside WS_LOGICAL_PATH or WS_HOME_PATH) to a
 * workspace-relative path ("" for the workspace itself). false if it is outside or not a
 * valid path. */
bool wspath_cwd_relative(const char *cwd, const char **ret_rel);
/* Splits rel into its parent ("" for the top) and last component. parent must hold
 * strlen(rel) + 1 bytes. rel must be non-empty. */
void wspath_split(const char *rel, char *parent, const char **ret_name);
/* Joins a workspace-relative directory and a name; false if the result is not a valid path. */
bool wspath_join(const char *dir, const char *name, char *out, size_t cap);

/* openat2 below dirfd with the confinement flags above; rel "" opens dirfd's directory
 * itself ("."). Returns the fd, or -1 with errno. */
int wspath_openat(int dirfd, const char *rel, int flags, mode_t mode);
/* Opens the parent directory of rel (O_PATH | O_DIRECTORY) and returns its last component
 * in *ret_name (pointing into rel). -1 with errp set (category from errno). */
int wspath_open_parent(int ws_fd, const char *rel, const char **ret_name, Error **errp);
