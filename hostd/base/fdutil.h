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
/* Removes path and everything below it without following symlinks or crossing mounts.
 * Best effort: returns -1 if anything could not be removed (ENOENT is fine). */
int rm_rf(const char *path);
/* Reads a whole small file (at most max_bytes, else EFBIG) into a NUL-terminated buffer. */
int read_file_bounded(const char *path, size_t max_bytes, char **ret_buf, size_t *ret_len);
