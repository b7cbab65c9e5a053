/* The process tree of one exec: the reliable handle for signals, kill, accounting.
 *
 * cgroup backend (PID 1, or --cgroup-root): each exec gets <root>/exec-<id> with pids.max,
 * memory.max (MemAvailable at start minus EXEC_MEMORY_RESERVE_MIB for the runner) and
 * memory.oom.group=1 when those controllers are enabled (limit files that do not exist are
 * skipped); the cpu controller makes each exec tree one scheduling entity. The child joins it
 * before running any program code, so nothing the program forks, double-forks or setsid()s
 * can leave it: SIGKILL is cgroup.kill, other signals go to every pid in cgroup.procs,
 * and CPU time comes from cpu.stat (exact, whole tree).
 *
 * pgroup fallback (no writable cgroup v2): the leader runs in its own session and process
 * group and is made a child subreaper, so orphans of its subtree reparent to it while it
 * lives; when it dies they reparent to the runner (itself PID 1 or a subreaper) and exec.c
 * adopts them into the tree's orphan list. A signal goes to the process group, the session,
 * and every /proc descendant of the leader and of the adopted orphans. Best effort, for
 * tests on a host without cgroup v2 delegation. Nothing here logs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "guest_limits.h"

typedef struct TreeRoot {
    int dir_fd;                /* cgroup v2 directory holding exec-<id>; -1 = fallback */
    uint64_t memory_max_bytes; /* memory.max of every exec */
} TreeRoot;

typedef struct Tree {
    int cg_fd;     /* exec-<id> directory, or -1 */
    int procs_fd;  /* its cgroup.procs, O_WRONLY, for the child to join; -1 once forked */
    char name[32]; /* exec-<id> */
    pid_t leader;  /* 0 before fork */
    bool leader_alive;
    bool killed;                     /* SIGKILL was requested for the tree */
    pid_t orphans[EXEC_ORPHANS_MAX]; /* fallback: adopted orphans still alive */
    size_t n_orphans;
} Tree;

/* Opens the cgroup root (NULL: fallback) and enables the pids and memory controllers for
 * its children where it can. Fails if the path is not a writable cgroup v2 directory. */
int tree_root_open(const char *cgroup_root, TreeRoot *ret, Error **errp);
void tree_root_close(TreeRoot *root);

/* Creates the exec's cgroup with its limits (cgroup backend); a stale one of the same name
 * is removed first if empty. In fallback mode only initialises *ret. */
int tree_create(const TreeRoot *root, uint32_t exec_id, Tree *ret, Error **errp);
/* Removes the cgroup (if empty) and closes everything. Safe on a zeroed Tree. */
void tree_destroy(const TreeRoot *root, Tree *t);

/* Delivers signo to every process of the tree (see above). 0 even if none was left. */
int tree_signal(Tree *t, int signo);
/* True when no process of the tree is left. */
bool tree_is_empty(const Tree *t);
/* CPU time of the whole tree (cgroup cpu.stat). -1 in fallback mode or if unreadable. */
int tree_cpu_usec(const Tree *t, uint64_t *ret_user, uint64_t *ret_system);

/* Fallback bookkeeping. An orphan adopted by a killed tree is killed at once. */
bool tree_forget_orphan(Tree *t, pid_t pid);
bool tree_add_orphan(Tree *t, pid_t pid);
bool tree_has_pid(const Tree *t, pid_t pid);
/* Children of the calling process read from /proc, up to cap. */
size_t tree_scan_children(pid_t parent, pid_t *out, size_t cap);
