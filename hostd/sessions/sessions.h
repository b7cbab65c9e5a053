/* Sessions and tasks: the state machine between the API and the pool.
 *
 *   pending -> starting -> running -> stopping -> extracting -> ended
 *
 * A session is created at once (pending) and bound to a warm guest as soon as one is idle.
 * It ends by close, cancel, its timeout, its task's command finishing, the output limit, the
 * guest breaking, or the daemon stopping. A completed task or a closed session asks its runner
 * to finalize (stop its processes, flush the mirror, list the workspace), fetches over the
 * channel what the live mirror lacks into <state>/artifacts/<id>/files, ends, then destroys
 * the guest. Every other end (and a finalize that fails, misses its deadline or is cancelled)
 * destroys the guest without its help, pulls the workspace disk out with the warm extraction
 * appliance, merges it with the live mirror, and ends with a reason. Nothing from the guest is
 * accepted after a cancel event.
 *
 * The states and their moves, each end's reason, and what may be added: README.md. A move
 * the machine's table lacks is refused, never made.
 *
 * Every change is an event with a strictly increasing seq, stored (SQLite) in batches;
 * readers on other threads follow committed events through the EventHub; code on the loop
 * thread learns of state changes with sessions_watch().
 * All functions run on the loop thread unless noted. Errors: E_NOT_FOUND for an unknown
 * session or one of another tenant, E_CONFLICT for the wrong state, E_INVALID for bad input. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "admit.h"
#include "cluster.h"
#include "code_wire.h"
#include "error.h"
#include "eventhub.h"
#include "extract.h"
#include "loop.h"
#include "policy.h"
#include "store.h"
#include "sessions_config.h"
#include "task_input.h"
#include "workq.h"

#define SESSION_ID_BYTES STORE_ID_MAX_BYTES /* "ses_" + 26 base32 + NUL, with room */

typedef struct Sessions Sessions;
typedef struct SessionsHost SessionsHost; /* sessions_host.h */

/* host (the pool, the guests' channels, the salvage: sessions_host.h) is copied; what it
 * points to is borrowed and must outlive the sessions (the daemon starts the salvage service,
 * and stops it once the sessions stopped). */
int sessions_new(Loop *l, WorkQueue *q, const SessionsHost *host, Store *store, EventHub *hub,
                 const SessionsConfig *cfg, Sessions **ret, Error **errp);
/* Cluster mode (issue 16): admission, settlement and restart reconciliation use the cluster's
 * ledger instead of the store's. c is borrowed and must outlive s; call before
 * sessions_start(). Without it (the default) nothing changes. */
void sessions_set_cluster(Sessions *s, Cluster *c);
/* Adopts sessions that were running when an earlier daemon stopped and whose guests still run
 * (session_adopt.c); ends the others (reason host_restart, salvaging their disks first: they
 * wait for the extraction service's appliance); starts retention. Before the pool starts. */
void sessions_start(Sessions *s);
/* Cluster mode: this host was declared lost (its heartbeat said so): ends, as host_lost, the
 * live sessions whose reservations the taking host already settled (the ledger is not
 * touched again). Returns how many. */
size_t sessions_end_lost(Sessions *s);
/* Cluster mode: settles the reservations whose settlement failed at their session's end
 * (the database was away), once it answers again; the daemon calls it after each heartbeat
 * that was written. Cheap when nothing failed. */
void sessions_settle_retry(Sessions *s);
/* [daemon] shutdown = keep: the next sessions_stop leaves running sessions (not tasks, not
 * with egress) and their guests running for the next start to adopt. */
void sessions_set_shutdown_keep(Sessions *s, bool keep);
/* Cancels every live session (reason host_shutdown) but those kept, waits for their
 * extraction, then done. */
void sessions_stop(Sessions *s, void (*done)(void *userdata), void *userdata);
void sessions_free(Sessions *s);

/* Checks the spec, admits it against spec->tenant_id's quota (reserving its guest-seconds),
 * records the session (state pending) and queues it for a guest, all before any guest is
 * touched. The spec is copied. *ret_id gets the new id. A quota refusal is E_QUOTA with
 * *ret_refusal (may be NULL) saying which limit; nothing is recorded then. */
int sessions_create(Sessions *s, const SessionSpec *spec, char ret_id[SESSION_ID_BYTES],
                    AdmitRefusal *ret_refusal, Error **errp);
/* Starts an exec in a running session; *ret_exec_id at once (E_CONFLICT if not running). */
int sessions_exec(Sessions *s, const char *tenant, const char *id, const ExecSpec *spec,
                  uint32_t *ret_exec_id, Error **errp);
int sessions_close(Sessions *s, const char *tenant, const char *id, Error **errp);
int sessions_cancel(Sessions *s, const char *tenant, const char *id, Error **errp);
/* Ends every live session of the tenant with reason (not yet stopping; as a cancel: the guest
 * destroyed without its help, its files salvaged). Returns how many. For a removed tenant
 * (SESSION_END_TENANT_REMOVED, "tenant_removed" on the wire). */
size_t sessions_end_tenant(Sessions *s, const char *tenant, SessionEndReason reason);
int sessions_signal(Sessions *s, const char *tenant, const char *id, uint32_t exec_id, int signo,
                    Error **errp);
int sessions_stdin(Sessions *s, const char *tenant, const char *id, uint32_t exec_id,
                   const uint8_t *data, size_t len, bool eof, Error **errp);
/* The window size of an exec started with a pty: E_INVALID for sizes out of range or an
 * unknown exec, E_CONFLICT for one that is over or was started without a terminal. */
int sessions_resize(Sessions *s, const char *tenant, const char *id, uint32_t exec_id,
                    uint32_t cols, uint32_t rows, Error **errp);

/* File transfer with a running guest. done runs once on the loop thread. */
typedef void (*SessionsDoneFn)(void *userdata, const Error *err);
typedef void (*SessionsDataFn)(void *userdata, const Error *err, uint8_t *data /* owned */,
                               size_t len);
int sessions_file_put(Sessions *s, const char *tenant, const char *id, const char *path,
                      const uint8_t *data, size_t len, uint32_t mode, SessionsDoneFn done,
                      void *userdata, Error **errp);
/* Reads a whole file of at most max_bytes from a running guest. */
int sessions_file_get(Sessions *s, const char *tenant, const char *id, const char *path,
                      size_t max_bytes, SessionsDataFn done, void *userdata, Error **errp);
/* The same, done in the guest as root when as_root (issue 28: E2B's user "root"); without
 * it as the session's user. A file or directory made as root belongs to root:root; it is in
 * the workspace like any other, and salvaged and returned like any other. */
int sessions_file_put_as(Sessions *s, const char *tenant, const char *id, const char *path,
                         const uint8_t *data, size_t len, uint32_t mode, bool as_root,
                         SessionsDoneFn done, void *userdata, Error **errp);
int sessions_file_get_as(Sessions *s, const char *tenant, const char *id, const char *path,
                         size_t max_bytes, bool as_root, SessionsDataFn done, void *userdata,
                         Error **errp);

/* True if the session exists for this tenant and is live (not ended). */
bool sessions_is_live(Sessions *s, const char *tenant, const char *id);
/* True if the session exists for this tenant and is running (it has a guest that said Hello
 * and has not begun to stop). */
bool sessions_is_running(Sessions *s, const char *tenant, const char *id);

/* The session's state and why it ends (SESSION_END_NONE until known): from the live table,
 * else from the store (an ended session). E_NOT_FOUND for no such session. */
int sessions_state_of(Sessions *s, const char *id, SessionState *ret_state,
                      SessionEndReason *ret_reason, Error **errp);

/* Whoever must learn of a session's state change (E2B's create waits for its session to run)
 * watches it: fn(userdata, change) runs on the loop thread after a change, never inside it (fn
 * may call any sessions_* function, sessions_unwatch() of this watch included). Changes made
 * before the loop turns are folded into one call: from is the state the last call reported
 * (or the one at sessions_watch()), to the state now, reason its end reason once it has one.
 * The watch stays until sessions_unwatch(), past ST_ENDED too. id need not be live: a watch
 * of an ended or unknown session never fires, so watch first, then read sessions_state_of().
 * E_UNAVAILABLE beyond SESSIONS_WATCHES_MAX watches. */
#define SESSIONS_WATCHES_MAX 1024
typedef struct SessionsChange {
    const char *id; /* valid during the call */
    SessionState from, to;
    SessionEndReason reason;
} SessionsChange;
typedef void (*SessionsWatchFn)(void *userdata, const SessionsChange *change);
typedef struct SessionsWatch SessionsWatch;
int sessions_watch(Sessions *s, const char *id, SessionsWatchFn fn, void *userdata,
                   SessionsWatch **ret, Error **errp);
void sessions_unwatch(Sessions *s, SessionsWatch *w); /* NULL: nothing */

/* Moves a running session's end to timeout_usec from now (the timeout event and reason stay
 * "timed_out"). It never lives longer than what was admitted and reserved for it
 * (SessionSpec.timeout_usec, counted from when it got its guest): E_INVALID beyond that
 * (100 ms of slack: asking for what sessions_timeout_left() said is left is never refused;
 * the end is clamped to the lifetime's). Records a session.timeout_set event. */
int sessions_set_timeout(Sessions *s, const char *tenant, const char *id, uint64_t timeout_usec,
                         Error **errp);
int sessions_timeout_left(Sessions *s, const char *tenant, const char *id, uint64_t *ret_usec,
                          Error **errp);

typedef enum {
    SESSIONS_EXEC_STARTING,
    SESSIONS_EXEC_RUNNING,
    SESSIONS_EXEC_DONE
} SessionsExecState;
/* The state of one exec of a live session: E_NOT_FOUND for no such session or exec. */
int sessions_exec_state(Sessions *s, const char *tenant, const char *id, uint32_t exec_id,
                        SessionsExecState *ret, Error **errp);

/* Small filesystem operations under /workspace of a running guest: the runner's FsOp (see
 * proto/runner.proto). path (and path2, MOVE's target) are workspace-relative; "" is
 * /workspace itself for STAT and LIST only. done runs once on the loop thread with the
 * entries (STAT: one, LIST: up to LIST_MAX_ENTRIES, *truncated when there were more; others:
 * none), which it owns (sessions_fs_entries_free()); err: E_NOT_FOUND (no such path),
 * E_CONFLICT (exists), E_INVALID (escapes, crosses a symlink, wrong type), E_TIMEOUT, E_GUEST.
 * The strings come from the guest: checked paths, but any bytes. */
typedef enum {
    SESSIONS_FS_STAT = 1,
    SESSIONS_FS_LIST,
    SESSIONS_FS_MKDIR,  /* with parents; an existing directory is fine */
    SESSIONS_FS_REMOVE, /* recursively; a missing path is fine */
    SESSIONS_FS_MOVE,
} SessionsFsKind;
typedef enum {
    SESSIONS_FS_FILE = 1,
    SESSIONS_FS_DIR,
    SESSIONS_FS_SYMLINK,
    SESSIONS_FS_OTHER,
} SessionsFsType;
typedef struct SessionsFsEntry {
    char *name; /* STAT: the path asked; LIST: one component */
    SessionsFsType type;
    uint64_t size;
    uint32_t mode; /* permission bits, & 07777 */
    uint64_t mtime_ns;
    char *symlink_target; /* NULL unless a symlink */
    /* A symlink's destination resolved fully in the guest (absolute; NULL when it does not
     * resolve), with its type (0 then) and permission bits: what E2B's envd reports */
    char *resolved_target;
    SessionsFsType target_type;
    uint32_t target_mode;
} SessionsFsEntry;
typedef void (*SessionsFsFn)(void *userdata, const Error *err, SessionsFsEntry *entries, size_t n,
                             bool truncated);
int sessions_fs_op(Sessions *s, const char *tenant, const char *id, SessionsFsKind kind,
                   const char *path, const char *path2, SessionsFsFn done, void *userdata,
                   Error **errp);
/* As sessions_fs_op, as root in the guest when as_root (see sessions_file_put_as). */
int sessions_fs_op_as(Sessions *s, const char *tenant, const char *id, SessionsFsKind kind,
                      const char *path, const char *path2, bool as_root, SessionsFsFn done,
                      void *userdata, Error **errp);
void sessions_fs_entries_free(SessionsFsEntry *v, size_t n);

/* Stateful code contexts (issue 18): each is a kernel (POOL_CODE_KERNEL_PATH, in the data
 * image; a pool with code_kernel = prestart starts one per guest before its snapshot, which
 * the first context adopts and which reseeds its generators then: kernel.py reseed()) run
 * as an exec of the session with stdin open, so timeouts, signals, cgroups and the
 * output limit apply as to any exec. A run writes one request line to its kernel; the
 * kernel's lines become events with the kernel's exec_id: code.requested, code.stdout,
 * code.stderr (data = the text), code.result {main, data{mime: value}}, code.error {name,
 * value, traceback}, code.done {execution_count}, all with {context, run}; and code.context
 * {context, state: started|restarted|ready|exited|deleted}. Runs of a context are served in
 * order; a kernel that exits fails its queued runs (KernelExited) and the next run starts a
 * fresh one. Context and run ids are per session, from 1; context 0 asks for the default
 * context of a language (made on first use). A context runs one language (code_wire.h
 * CodeLanguage); only python's kernel is pre-started by a pool. Everything the kernel sends
 * is checked (code_wire.h). */
#define SESSIONS_CODE_CONTEXTS_MAX 8 /* per session */
#define SESSIONS_CODE_QUEUED_MAX 16  /* runs in one context, the one being served included */
typedef struct SessionsCodeRun {
    uint32_t context, run, exec_id;
    uint64_t after_seq; /* follow the events after this seq to see the run's */
} SessionsCodeRun;
int sessions_code_context_new(Sessions *m, const char *tenant, const char *id, CodeLanguage lang,
                              const char *cwd, const EnvPair *env, size_t n_env,
                              uint32_t *ret_context, Error **errp);
/* Makes the default context of each of langs that has none, in cwd (NULL: the workspace):
 * E2B's server starts python's and javascript's with the sandbox, in /home/user, and lists
 * them. */
int sessions_code_default_contexts(Sessions *m, const char *tenant, const char *id,
                                   const CodeLanguage *langs, size_t n, const char *cwd,
                                   Error **errp);
int sessions_code_context_restart(Sessions *m, const char *tenant, const char *id, uint32_t context,
                                  Error **errp);
int sessions_code_context_delete(Sessions *m, const char *tenant, const char *id, uint32_t context,
                                 Error **errp);
/* SIGINT to the context's kernel: the running cell ends with KeyboardInterrupt. */
int sessions_code_interrupt(Sessions *m, const char *tenant, const char *id, uint32_t context,
                            Error **errp);
/* [{context, language, exec_id, cwd, queued, default}] of a running session (new
 * reference). */
int sessions_code_contexts(Sessions *m, const char *tenant, const char *id, json_t **ret,
                           Error **errp);
/* code is UTF-8 of at most CODE_SOURCE_MAX_BYTES; timeout_ms 0 = none (the kernel raises
 * TimeoutError in the cell at that time); env an object of strings, or NULL. context 0: the
 * default context of lang (lang is not looked at otherwise). */
int sessions_code_run(Sessions *m, const char *tenant, const char *id, uint32_t context,
                      CodeLanguage lang, const char *code, size_t len, uint64_t timeout_ms,
                      json_t *env, SessionsCodeRun *ret, Error **errp);

typedef struct SessionsStats {
    uint64_t created, cancels, timeouts, ended, extraction_bytes, extraction_failures;
    uint64_t artifacts_channel, artifacts_salvage; /* which path brought a session's files */
    uint64_t finalize_fallbacks;                   /* finalizes that gave way to the salvage */
    uint64_t ended_by_reason[SESSION_END_COUNT_];  /* sessions ended this run, by end reason */
    uint64_t admission_refusals[_ADMIT_LIMIT_MAX]; /* creations refused, by the quota that did */
    uint64_t pending, live;
    bool draining; /* sessions_set_draining */
    bool stopping; /* the daemon stops: live sessions are being kept or ended */
    /* The extraction service's appliance (ExtractServiceStatus): "waiting" (for the pool's
     * disks), "starting", "up" or "failed" (retried); its accel settings; launches that
     * succeeded / failed; how long the last successful launch took (0: none yet). */
    const char *appliance_state;
    bool appliance_force_tcg;
    uint64_t appliance_launches, appliance_launch_failures, appliance_launch_usec;
    Histogram handout; /* created (or queued) -> guest acked Hello */
    Histogram extraction;
} SessionsStats;
void sessions_stats(Sessions *s, SessionsStats *ret);
/* Drain (issue 30, `stockade drain`): while on, every creation (native, E2B, a hop from
 * another host) is refused E_UNAVAILABLE with the reason; live sessions run on. Not kept
 * across a restart: a new daemon takes sessions (an upgrade drains, restarts, is back). */
void sessions_set_draining(Sessions *s, bool on);
bool sessions_draining(const Sessions *s);
/* The live sessions (every one not yet freed: pending to extracting), for a drain's report:
 * at most max of them into ret; returns how many were written. Loop thread. */
typedef struct SessionsLive {
    char id[SESSION_ID_BYTES];
    SessionState state;
} SessionsLive;
size_t sessions_live_list(Sessions *s, SessionsLive *ret, size_t max);

/* <state>/artifacts/<id>/files (any thread; pure string work). */
int sessions_artifact_dir(const char *state_dir, const char *id, char **ret_path, Error **errp);
/* Checks an id's shape ("ses_" + base32) before it reaches a path or a query. Any thread. */
bool sessions_id_is_valid(const char *id);
