/* See diskfile.h. */
#include "diskfile.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"

extern char **environ;

/* mkfs.ext4's own words (its stderr, at most MKFS_SAY_MAX_BYTES of them) go into the error,
 * never to the daemon's stderr: there every line is the logger's (in the journal form each
 * carries a priority), and mke2fs talks even with -q ("Creating regular file ..."). */
#define MKFS_SAY_MAX_BYTES 512

/* Reads fd to its end, keeping the first max - 1 bytes in buf (NUL-terminated, newlines as
 * blanks). */
static void
read_said(int fd, char *buf, size_t max)
{
    size_t len = 0;
    char sink[1024];
    for (;;) {
        ssize_t n = len + 1 < max ? read(fd, buf + len, max - 1 - len)
                                  : read(fd, sink, sizeof(sink));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (len + 1 < max)
            len += (size_t) n;
    }
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if (buf[i] == '\n' || buf[i] == '\r')
            buf[i] = ' ';
}

static int
run_mkfs(const char *path, unsigned size_mib, uid_t uid, gid_t gid, Error **errp)
{
    char owner[64], size[32], said[MKFS_SAY_MAX_BYTES] = "";
    snprintf(owner, sizeof(owner), "root_owner=%u:%u", (unsigned) uid, (unsigned) gid);
    snprintf(size, sizeof(size), "%uM", size_mib);
    char *argv[] = {"mkfs.ext4", "-q", "-F", "-m", "0", "-L", "workspace", "-E", owner,
                    (char *) path, size, NULL};
    posix_spawn_file_actions_t fa;
    int p[2], status, r;
    pid_t pid;

    if (pipe2(p, O_CLOEXEC) < 0)
        return error_set(errp, E_INTERNAL, errno, "pipe for mkfs.ext4");
    r = posix_spawn_file_actions_init(&fa);
    if (r == 0)
        r = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    if (r == 0)
        r = posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
    if (r == 0)
        r = posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
    if (r == 0)
        r = posix_spawnp(&pid, "mkfs.ext4", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    safe_close(p[1]);
    if (r != 0) {
        safe_close(p[0]);
        return error_set(errp, E_UNAVAILABLE, r, "run mkfs.ext4 (package e2fsprogs)");
    }
    read_said(p[0], said, sizeof(said));
    safe_close(p[0]);
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return error_set(errp, E_INTERNAL, errno, "wait for mkfs.ext4");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return error_set(errp, E_INTERNAL, 0, "mkfs.ext4 %s failed (status %d): %s", path, status,
                         said[0] ? said : "(it said nothing)");
    return 0;
}

int
diskfile_ensure_template(const char *template_path, unsigned size_mib, uid_t uid, gid_t gid,
                         Error **errp)
{
    struct stat st;
    _cleanup_free_ char *tmp = NULL;

    if (size_mib < WORKSPACE_MIN_MIB || size_mib > WORKSPACE_MAX_MIB)
        return error_set(errp, E_INVALID, 0, "workspace size must be %u..%u MiB",
                         WORKSPACE_MIN_MIB, WORKSPACE_MAX_MIB);
    if (stat(template_path, &st) == 0 && (uint64_t) st.st_size == (uint64_t) size_mib << 20)
        return 0;
    if (asprintf(&tmp, "%s.tmp", template_path) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "template path");
    (void) unlink(tmp);
    if (run_mkfs(tmp, size_mib, uid, gid, errp) < 0) {
        (void) unlink(tmp);
        return -1;
    }
    if (chmod(tmp, 0644) < 0 || rename(tmp, template_path) < 0) {
        int e = errno;
        (void) unlink(tmp);
        return error_set(errp, E_IO, e, "install workspace template %s", template_path);
    }
    return 0;
}

/* Copies [off, off+len) from src to dst at the same offsets. */
static int
copy_range(int src, int dst, off_t off, off_t len)
{
    while (len > 0) {
        loff_t in = off, out = off;
        ssize_t n = copy_file_range(src, &in, dst, &out, (size_t) MIN(len, (off_t) 1 << 30), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        off += n;
        len -= n;
    }
    return 0;
}

static int
copy_data_extents(int src, int dst, off_t size)
{
    off_t pos = 0;
    while (pos < size) {
        off_t data = lseek(src, pos, SEEK_DATA);
        if (data < 0)
            return errno == ENXIO ? 0 : -1; /* no more data: the rest is a hole */
        off_t hole = lseek(src, data, SEEK_HOLE);
        if (hole < 0 || copy_range(src, dst, data, hole - data) < 0)
            return -1;
        pos = hole;
    }
    return 0;
}

int
diskfile_reset_in_place(const char *path, const char *template_path, Error **errp)
{
    _cleanup_close_ int src = open(template_path, O_RDONLY | O_CLOEXEC);
    _cleanup_close_ int dst = -1;
    struct stat st;

    if (src < 0 || fstat(src, &st) < 0)
        return error_set(errp, E_IO, errno, "open workspace template %s", template_path);
    dst = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (dst < 0)
        return error_set(errp, E_IO, errno, "open workspace disk %s", path);
    if (ftruncate(dst, 0) < 0 || ftruncate(dst, st.st_size) < 0)
        return error_set(errp, E_IO, errno, "truncate workspace disk %s", path);
    if (copy_data_extents(src, dst, st.st_size) < 0)
        return error_set(errp, E_IO, errno, "copy workspace template into %s", path);
    if (fdatasync(dst) < 0)
        return error_set(errp, E_IO, errno, "sync workspace disk %s", path);
    return 0;
}

int
diskfile_allocated_bytes(const char *path, uint64_t *ret_bytes, Error **errp)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return error_set(errp, E_IO, errno, "stat %s", path);
    *ret_bytes = (uint64_t) st.st_blocks * 512u;
    return 0;
}
