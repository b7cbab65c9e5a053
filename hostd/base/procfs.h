/* Reading another process's /proc entries: bounded, no caching (a process may vanish or its
 * pid be reused between two calls). Used by the pool (is a QEMU gone, is this pid our QEMU),
 * the extraction appliance's launch watchdog and the runner's process-tree scan. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

typedef struct ProcStat {
    char state; /* 'R', 'S', 'Z', 'X', ... */
    pid_t ppid, pgid, sid;
} ProcStat;

/* Parses /proc/<pid>/stat after the last ')' (comm may hold spaces and parentheses). Returns
 * 0, or -1 with errno: EINVAL for a line that does not parse, anything else (ENOENT, ESRCH)
 * when the process is gone. Allocates nothing. */
int proc_stat_read(pid_t pid, ProcStat *ret);

/* Whether /proc/<pid>/cmdline (NUL-separated arguments, read up to 64 KiB) contains needle.
 * False when the process is gone or its command line is longer than that. */
bool proc_cmdline_contains(pid_t pid, const char *needle);
