/* See procfs.h. */
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fdutil.h"
#include "macro.h"

#define PROC_STAT_MAX_BYTES 4096
#define PROC_CMDLINE_MAX_BYTES (64u * 1024u)

int
proc_stat_read(pid_t pid, ProcStat *ret)
{
    char path[64], buf[PROC_STAT_MAX_BYTES];
    size_t got;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read_full(fd, buf, sizeof(buf) - 1, &got) < 0)
        return -1;
    if (got == 0) { /* nothing to read: the process is gone */
        errno = ESRCH;
        return -1;
    }
    buf[got] = '\0';
    const char *p = strrchr(buf, ')');
    int ppid, pgid, sid;
    if (!p || sscanf(p + 1, " %c %d %d %d", &ret->state, &ppid, &pgid, &sid) != 4) {
        errno = EINVAL;
        return -1;
    }
    ret->ppid = (pid_t) ppid, ret->pgid = (pid_t) pgid, ret->sid = (pid_t) sid;
    return 0;
}

bool
proc_cmdline_contains(pid_t pid, const char *needle)
{
    char path[64];
    _cleanup_free_ char *cmdline = NULL;
    size_t len;

    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int) pid);
    if (read_file_bounded(path, PROC_CMDLINE_MAX_BYTES, &cmdline, &len) < 0)
        return false;
    return memmem(cmdline, len, needle, strlen(needle)) != NULL;
}
