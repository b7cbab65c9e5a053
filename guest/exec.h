/* Execs: start, stream, signal, feed stdin, reap, report.
 *
 * Lifecycle and what the host sees:
 * - Exec → fork; the child (spawn.h) reports failure through a close-on-exec pipe. The reply
 *   is deferred: ExecStarted{exec_id, pid} once execve succeeded (the pipe hit EOF), or
 *   Error{NOT_FOUND | INVALID_PATH | ...} with the Exec's req_id if it failed before running
 *   the program; such an exec never produces Output or ExecExit.
 * - Output chunks (<= OUTPUT_CHUNK_MAX_BYTES) are read only while the outbound queue has
 *   room: above OUTQ_SOFT_MAX_BYTES the pipes fill and the children block (back-pressure).
 * - ExecExit (after the last Output) once the leader is reaped AND both pipes reached EOF;
 *   if descendants keep the pipes open, EXEC_DRAIN_GRACE_MSEC after the reap the runner
 *   delivers what is in the pipes at that moment, closes its ends, and reports the exit
 *   (later writers get EPIPE). exit_code/signal from the leader's wait status; CPU time of
 *   the whole tree from cgroup cpu.stat (fallback: the leader's rusage, which includes the
 *   descendants it waited for); max_rss_kib = ru_maxrss of the leader's wait4, i.e. the
 *   largest RSS of the leader and of every descendant it (transitively) waited for;
 *   wall_usec from fork to the leader's reap.
 * - Processes that outlive the leader stay in the exec's tree ("lingering"): Signal still
 *   reaches them and Shutdown kills them; the exec_id stays taken until the tree is empty.
 * - At most EXEC_MAX_CONCURRENT execs run (lingering ones do not count) and at most
 *   EXEC_TABLE_MAX are tracked; beyond that Exec gets BUSY.
 * Errors from loop callbacks go to errp for the loop to log. */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "env.h"
#include "error.h"
#include "guest_limits.h"
#include "message.h"
#include "outq.h"

typedef struct ExecTable ExecTable;

/* At most this many fds are added to one poll (report, stdout, stderr, stdin per exec). */
#define EXEC_POLL_FDS_MAX (EXEC_TABLE_MAX * 4)

typedef struct ExecContext {
    int ws_fd;        /* workspace root (O_PATH) */
    const char *home; /* the workspace as execs name it (HOME, default cwd) */
    uid_t uid;
    gid_t gid;
    const EnvList *session_env;
    /* An exec whose cwd is empty starts here (an image's WorkingDir, imagecfg.h; absolute,
     * not confined to the workspace: the root filesystem is read-only); NULL = the workspace. */
    const char *default_cwd;
    bool home_mounted; /* the workspace is bind-mounted on WS_HOME_PATH too (session.c) */
} ExecContext;

/* The table writes its messages to q (borrowed). cgroup_root NULL = pgroup fallback. */
ExecTable *exec_table_new(OutQueue *q, const char *cgroup_root, Error **errp);
/* Closes everything and removes empty cgroups; does not kill (see exec_kill_all). */
void exec_table_free(ExecTable *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(ExecTable, exec_table_free)

int exec_start(ExecTable *t, const ExecContext *ctx, const Stockade__Runner__Exec *x,
               uint32_t req_id, Error **errp);
/* Prestart (runner.proto): starts argv as the parked process; Ack or Error follows. */
int exec_park(ExecTable *t, const ExecContext *ctx, char **argv, size_t n_argv, uint32_t req_id,
              Error **errp);
/* Prepare.warm_parked: "STOCKADE-WARMUP\n" to the parked process's stdin, if one is ready. */
void exec_park_warm(ExecTable *t);
int exec_signal(ExecTable *t, uint32_t exec_id, int signo, Error **errp);
/* Resize (runner.proto) of an exec started with Exec.pty; NOT_FOUND for any other. */
int exec_resize(ExecTable *t, uint32_t exec_id, uint32_t cols, uint32_t rows, Error **errp);
/* Queues stdin bytes (bounded by STDIN_PENDING_MAX_BYTES per exec); eof closes the pipe
 * once they are written. */
int exec_stdin(ExecTable *t, uint32_t exec_id, const uint8_t *data, size_t len, bool eof,
               Error **errp);
void exec_kill_all(ExecTable *t);
/* True when no exec has a live process (used by Shutdown). */
bool exec_all_gone(const ExecTable *t);
/* True while a reaped exec still drains its output before its ExecExit (at most
 * EXEC_DRAIN_GRACE_MSEC): a Finalize's manifest waits, so the host has every exit first. */
bool exec_any_draining(const ExecTable *t);

/* Loop integration: add fds to poll (pipes only while outq has room), handle the results,
 * reap after SIGCHLD, run deadlines. */
size_t exec_poll_add(ExecTable *t, struct pollfd *pfd, size_t cap);
int exec_poll_handle(ExecTable *t, const struct pollfd *pfd, size_t n, Error **errp);
int exec_reap(ExecTable *t, Error **errp);
int exec_tick(ExecTable *t, uint64_t now_usec, Error **errp);
/* Milliseconds until the next deadline, or -1 for none. */
int exec_timeout_msec(const ExecTable *t, uint64_t now_usec);
/* Idle work: true while the next exec's cgroup is not made yet (see tree.h); the serve loop
 * then calls exec_prepare_next() once nothing has happened for a moment. */
bool exec_wants_idle(const ExecTable *t);
void exec_prepare_next(ExecTable *t);
