/* Creating entries beneath the destination directory without ever following a symlink.
 * Every lookup is openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV); files are created O_CREAT|O_EXCL|O_NOFOLLOW, so an entry that already
 * exists (a planted symlink, a duplicate name) is never replaced, followed or written into.
 * Paths handed in are normalised relative paths (path.h). Return 0, or -errno. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* True for errors that mean "this entry conflicts with what is there" (skip it) rather than
 * "the host cannot write" (stop with an error). */
int dest_errno_is_conflict(int err);

/* Makes directory `path` (mode applied exactly) and any missing parents (0755).
 * *ret_created counts directories made. An existing directory is fine. */
int dest_mkdir(int dest_fd, const char *path, uint32_t mode, uint32_t *ret_created);

/* Creates regular file `path` (mode 0600 until dest_file_finish), making missing parents
 * (0755, counted in *ret_created). Returns the fd, or -errno. */
int dest_create_file(int dest_fd, const char *path, uint32_t *ret_created);

/* Applies the final mode and mtime, then closes fd. Returns 0 or -errno (fd closed anyway). */
int dest_file_finish(int fd, uint32_t mode, int64_t mtime_sec);
/* The same with a nanosecond mtime (a manifest's), so a later size+mtime compare is exact. */
int dest_file_finish_ns(int fd, uint32_t mode, uint64_t mtime_ns);

/* Removes a file cut short. Best effort. */
void dest_unlink(int dest_fd, const char *path);
