/* The process tree of one exec: the reliable handle for signals, kill, accounting.
 *
 * cgroup backend (PID 1, or --cgroup-root): each exec gets its own <root>/exec-* with pids.max,
 * memory.max (MemAvailable at start minus EXEC_MEMORY_RESERVE_MIB for the runner) and
 * memory.oom.group=1 when those controllers are enabled (limit files that do not exist are
 * skipped); the cpu controller makes each exec tree one scheduling entity. The child joins it
 * before running any program code, so nothing the program forks, double-forks or setsid()s
 * can leave it: SIGKILL is cgroup.kill, other signals go to every pid in cgroup.procs,
 * and CPU time comes from cpu.stat (exact, whole tree). The runner keeps one spare cgroup
 * (exec-s<n>, limits set) made while it is idle, so an exec's hot path does not pay the mkdir
 * and limit writes (1.2-1.6 ms each exec under TCG, spikes to 16 ms: tests/bench pool).
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

typedef struct Tree {
    int cg_fd;     /* exec-* directory, or -1 */
    int procs_fd;  /* its cgroup.procs, O_WRONLY, for the child to join; -1 once started */
    char name[32]; /* exec-<id>, or exec-s<n> when it was the spare */
    pid_t leader;  /* 0 before fork */
    bool leader_alive;
    bool killed;                     /* SIGKILL was requested for the tree */
    pid_t orphans[EXEC_ORPHANS_MAX]; /* fallback: adopted orphans still alive */
    size_t n_orphans;
} Tree;

typedef struct TreeRoot {
    int dir_fd;                /* cgroup v2 directory holding the exec-* groups; -1 = fallback */
    uint64_t memory_max_bytes; /* memory.max of every exec */
    Tree spare;                /* ready for the next exec; cg_fd -1 when there is none */
    uint32_t spare_seq;
    bool spare_failed; /* not retried until an exec's own cgroup was made again */
} TreeRoot;

/* Opens the cgroup root (NULL: fallback) and enables the pids and memory controllers for
 * its children where it can. Fails if the path is not a writable cgroup v2 directory. */
int tree_root_open(const char *cgroup_root, TreeRoot *ret, Error **errp);
void tree_root_close(TreeRoot *root);

/* Gives the exec its cgroup with limits set (cgroup backend): the spare if there is one, else
 * a new exec-<id> (a stale one of that name is removed first if empty). In fallback mode
 * only initialises *ret. */
int tree_create(TreeRoot *root, uint32_t exec_id, Tree *ret, Error **errp);
/* True when the cgroup backend has no spare: the runner should call tree_make_spare() when
 * it is next idle. */
bool tree_wants_spare(const TreeRoot *root);
/* Makes the spare. Failure is harmless (tree_create makes its own and reports errors). */
void tree_make_spare(TreeRoot *root);
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
