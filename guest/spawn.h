/* The child half of an exec: everything between the clone and execve().
 *
 * Order: default signal state; join the exec's cgroup (before any program code runs);
 * setsid; oom_score_adj EXEC_OOM_SCORE_ADJ; default rlimits (core 0); stdio from the pipes
 * (stdin /dev/null unless stdin_open); every other fd close-on-exec; in fallback mode become
 * a child subreaper (see tree.h); setgroups(0), setgid, setuid; PR_SET_NO_NEW_PRIVS; umask
 * 022; chdir to the confined cwd (opened as the session user); execve over the exec's own
 * PATH. Any failure writes one SpawnReport to the close-on-exec report pipe and exits 127,
 * so the parent learns "exec failed at stage S with errno E" or, on EOF, "running".
 * Everything is prepared by the parent: the child only makes syscalls. With ctty (Exec.pty)
 * stdin is a terminal that becomes the new session's controlling terminal (TIOCSCTTY). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum {
    SPAWN_STAGE_SETUP = 1, /* signals, session, rlimits, stdio */
    SPAWN_STAGE_CGROUP,
    SPAWN_STAGE_IDS,
    SPAWN_STAGE_CWD,
    SPAWN_STAGE_EXEC,
} SpawnStage;

typedef struct SpawnReport {
    int32_t stage; /* SpawnStage */
    int32_t err;   /* errno */
} SpawnReport;

typedef struct SpawnSpec {
    char *const *argv;    /* NULL-terminated */
    char *const *envp;    /* NULL-terminated */
    const char *path_var; /* PATH of envp, NULL for the default */
    int ws_fd;            /* workspace root (O_PATH) */
    const char *cwd_rel;  /* workspace-relative, "" = the root */
    const char *cwd_abs;  /* an image's WorkingDir instead, or NULL */
    uid_t uid;
    gid_t gid;
    int stdin_fd; /* read end, or -1 for /dev/null */
    int stdout_fd;
    int stderr_fd;
    int report_fd;       /* write end of the report pipe (O_CLOEXEC) */
    int cgroup_procs_fd; /* -1 in fallback mode */
    bool ctty;           /* stdin is a terminal (Exec.pty): it becomes the controlling one */
} SpawnSpec;

/* Starts the child: clone(CLONE_VM | CLONE_VFORK), as posix_spawn does. The child runs on
 * its own stack in the runner's memory, and the runner is suspended until the child has
 * called execve or exited, so no page table is copied and no copy-on-write fault follows the
 * fork. Under TCG, where each of those flushes the emulated TLB, fork() alone took 0.6-6 ms
 * of every exec (timestamps around it, over tests/bench pool runs). The child makes syscalls
 * only: no heap, no stdio, no runner state written (errno aside). Returns the pid, or -1 with
 * errno. Not thread-safe (the runner has one thread): the child stack is shared by every
 * spawn. */
pid_t spawn_start(const SpawnSpec *s);
const char *spawn_stage_name(int32_t stage);
