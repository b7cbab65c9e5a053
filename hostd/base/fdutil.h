/* Small fd helpers. All return 0 / -1 with errno set; none log or allocate. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Writes all of buf, retrying on EINTR and short writes. Blocking fds only. */
int write_all(int fd, const void *buf, size_t len);
/* Reads exactly len bytes unless EOF comes first; *ret_got says how many arrived. */
int read_full(int fd, void *buf, size_t len, size_t *ret_got);
int fd_set_nonblock(int fd, bool on);
int fd_set_cloexec(int fd, bool on);
/* openat2(dirfd, path, flags | O_CLOEXEC | O_NOFOLLOW) resolving beneath dirfd without
 * following any symlink or magic link. Returns the fd, or -1 with errno. */
int openat2_beneath(int dirfd, const char *path, int flags);
/* openat2_beneath() for a relative path of any length (a 4096-byte mirror path does not fit
 * one call, whose limit is PATH_MAX with the NUL): resolved in pieces shorter than PATH_MAX,
 * each beneath the directory the previous piece opened. */
int openat2_beneath_long(int dirfd, const char *path, int flags);
/* Makes the directory path (mode; an existing one is kept) and opens it O_DIRECTORY |
 * O_NOFOLLOW: a symlink in its place is refused (ELOOP/ENOTDIR), never followed. */
int mkdir_open_dir(const char *path, mode_t mode);

/* Deepest directory nesting rm_rf_at() walks (ELOOP beyond); the mirror allows 64 levels. */
#define RM_RF_MAX_DEPTH 4096
/* Removes the entry name of dirfd and, if it is a directory, everything below it, through
 * directory fds (rmtree.c): no path-length limit, no recursion, symlinks never followed,
 * mounts never entered. Returns 0 (also when name does not exist), or -1 with errno of the
 * first failure, which stops the walk: then something is left and the caller must know. */
int rm_rf_at(int dirfd, const char *name);
/* rm_rf_at(AT_FDCWD, path). */
int rm_rf(const char *path);
/* Reads a whole small file (at most max_bytes, else EFBIG) into a NUL-terminated buffer. */
int read_file_bounded(const char *path, size_t max_bytes, char **ret_buf, size_t *ret_len);
/* read_file_bounded() of name beneath dirfd, never through a symlink (ELOOP). */
int read_file_bounded_at(int dirfd, const char *name, size_t max_bytes, char **ret_buf,
                         size_t *ret_len);
/* read_file_bounded() of fd, which it takes (closed on return); -1 (errno kept) reads nothing. */
int read_file_bounded_fd(int fd, size_t max_bytes, char **ret_buf, size_t *ret_len);
