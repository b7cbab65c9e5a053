/* See testlib.h. */
#include "testlib.h"

#include "fdutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <unistd.h>

bool
test_must_work(void)
{
    const char *v = getenv("STOCKADE_MUST_WORK");
    return v && strcmp(v, "1") == 0;
}

void
test_skip(const char *fmt, ...)
{
    va_list ap;
    bool must = test_must_work();

    fprintf(stderr, must ? "FAIL (STOCKADE_MUST_WORK=1, cannot skip): " : "SKIP: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(must ? 1 : TEST_EXIT_SKIP);
}

char *
test_mkdtemp(const char *prefix)
{
    const char *base = getenv("TMPDIR");
    char *path;

    if (asprintf(&path, "%s/%s.XXXXXX", base && *base ? base : "/tmp", prefix) < 0)
        return NULL;
    if (!mkdtemp(path)) {
        free(path);
        return NULL;
    }
    return path;
}

int
test_rm_rf(const char *path)
{
    return rm_rf(path);
}

int
test_mkdirs_at(int dirfd, const char *rel, size_t len)
{
    int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
    size_t i = 0;

    while (cur >= 0 && i < len) {
        size_t n = 0;
        char comp[NAME_MAX + 1];
        while (i + n < len && rel[i + n] != '/')
            n++;
        if (n > NAME_MAX) {
            close(cur);
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(comp, rel + i, n);
        comp[n] = '\0';
        i += n + 1;
        if (n == 0)
            continue;
        if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
            close(cur);
            return -1;
        }
        int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        close(cur);
        errno = saved;
        cur = next;
    }
    return cur;
}

int
test_write_at(int dirfd, const char *rel, const void *data, size_t len)
{
    const char *slash = strrchr(rel, '/');
    int dir = test_mkdirs_at(dirfd, rel, slash ? (size_t) (slash - rel) : 0);
    int fd = dir < 0 ? -1
                     : openat(dir, slash ? slash + 1 : rel,
                              O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    int r = fd >= 0 && write_all(fd, data, len) == 0 ? 0 : -1;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    if (dir >= 0)
        close(dir);
    errno = saved;
    return r;
}

int
test_set_immutable(int dirfd, const char *name, bool on)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int flags = 0, r = -1;
    if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
        flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
        r = ioctl(fd, FS_IOC_SETFLAGS, &flags);
    }
    int saved = errno;
    if (fd >= 0)
        close(fd);
    errno = saved;
    return r;
}

char test_db[512];
static char *test_db_dir;

int
test_db_setup(void **state)
{
    (void) state;
    test_db_dir = test_mkdtemp("stockade-db");
    snprintf(test_db, sizeof(test_db), "%s/stockade.db", test_db_dir);
    return 0;
}

int
test_db_teardown(void **state)
{
    (void) state;
    test_rm_rf(test_db_dir);
    free(test_db_dir);
    test_db_dir = NULL;
    return 0;
}
