/* Internal to hostd/sessions: the structures shared by its files.
 *   sessions.c        module life cycle, create, lookup, pending queue, API entry points
 *   session_end.c     every way a session ends: stop, destroy, extraction, ended
 *   session_finalize.c a clean end over the channel: manifest, fetch, merge, ended
 *   session_guest.c   guest messages: hello, execs, output, errors, timers
 *   session_events.c  event emission, batching commits, publishing to the hub
 *   session_ops.c     file put/get round trips with a running guest, the task flow
 *   session_admit.c   tenant admission before a guest is taken, settlement at the end
 *   session_mirror.c  live mirror writes into the artifact folder
 *   artifacts.c       artifact folders, merge of salvage and mirror, retention
 *   render.c          JSON renderings of records (pure, any thread) */
#pragma once

#include <jansson.h>

#include "egress.h"
#include "histogram.h"
#include "pool.h"
#include "sessions.h"

#define SESSION_COMMIT_DELAY_USEC (5 * 1000)       /* events are batched this long at most */
#define SESSION_EXEC_KILL_GRACE_USEC (5 * 1000000) /* a killed exec must report its exit */
#define SESSION_OP_TIMEOUT_USEC (30 * 1000000)     /* a file chunk round trip */
#define SESSION_HELLO_TIMEOUT_USEC (10 * 1000000)
#define SESSION_EXECS_MAX 64                        /* EXEC_MAX_CONCURRENT in the runner */
#define SESSION_OUTPUT_PAUSE_BYTES (1u << 20)       /* pending events before back-pressure */


typedef struct Session Session;
typedef struct Finalize Finalize; /* session_finalize.c */
typedef struct CodeContext CodeContext; /* session_code.c */

typedef struct Exec {
    uint32_t id;
    uint32_t req_id;
    bool running, done;
    const char *end_reason; /* NULL = it exited by itself; "timed_out", "killed" */
    TimerId timer;
    Session *session;
    struct Exec *next;
} Exec;

typedef enum { OP_FILE_PUT, OP_FILE_GET, OP_FS } OpKind;

typedef struct Op {
    OpKind kind;
    uint32_t req_id;
    Session *session;
    char *path;
    uint8_t *data; /* put: the whole file; get: what arrived */
    size_t len, off, cap;
    uint32_t mode;
    SessionsDoneFn put_done;
    SessionsDataFn get_done;
    void *userdata;
    TimerId timer;
    bool task; /* part of a task's upload: its completion moves the task on */
    bool mkdir_first; /* put: make the parent directories before the first chunk */
    SessionsFsKind fs_kind; /* OP_FS: sessions_fs_op() */
    char *path2;
    SessionsFsFn fs_done;
    struct Op *next;
} Op;

typedef struct MirrorFile {
    char *path;
    int fd;           /* temp file being filled, -1 when none */
    char tmp_name[64];
    uint64_t size, received, mtime_ns;
    uint32_t mode;
} MirrorFile;

struct Session {
    Sessions *mgr;
    SessionRecord rec; /* what the store holds; rec.id is the session id */
    SessionState state;
    SessionSpec spec;  /* deep copy */
    Guest *guest;
    uint32_t hello_req;
    bool accepting;    /* false from the first stop event on (but a finalize's): messages dropped */
    Finalize *fin;     /* a clean end over the channel in progress */
    const char *fin_fallback; /* why that finalize gave way to the salvage (static), or NULL */
    uint64_t created_mono_usec;
    uint64_t lifetime_start_usec; /* monotonic: when the timeout timer was first armed */
    TimerId timeout_timer, pending_timer, hello_timer;
    Exec *execs;
    uint32_t next_exec_id;
    Op *ops;
    size_t task_next_file;
    uint32_t task_exec_id;
    MirrorFile mirror;
    uint64_t mirror_bytes;
    uint32_t mirror_files; /* capped by cfg.extract.max_files, like the salvage */
    uint64_t guest_events; /* recorded by session_guest_event(); rec.events_suppressed after */
    bool touched; /* has uncommitted events */
    ExtractStats xstats;
    Error *xerr;
    uint64_t extract_started_usec;
    size_t disk_index;
    bool held_disk; /* an earlier run's disk, held in the pool until salvaged */
    EgressSession *egress;          /* from Hello until the guest is released, when it asked */
    uint64_t output_limit_bytes;    /* min(global, tenant quota), set at admission */
    uint64_t workspace_limit_bytes; /* tenant cap on the live mirror and on the salvage, each */
    CodeContext *contexts;          /* stateful code contexts (session_code.c) */
    uint32_t next_context_id, next_run_id, default_context;
    Session *next, *next_pending, *next_touched;
};

struct Sessions {
    Loop *loop;
    WorkQueue *q;
    Pool *pool;
    Store *store;
    Cluster *cluster; /* borrowed; NULL: a single host, the ledger is in the store */
    bool settle_retry; /* cluster: a settlement failed (database away): retry (session_admit.c) */
    EventHub *hub;
    SessionsConfig cfg;
    char *artifacts_dir;
    Session *all;
    Session *pending_head, **pending_tail;
    Session *touched;
    ExtractService *extract; /* borrowed: salvages of disks whose guest is gone */
    TimerId commit_timer, retention_timer, stop_timer;
    EgressResolver *egress_resolver; /* only when the operator allows any egress */
    bool stopping;
    void (*stop_done)(void *userdata);
    void *stop_userdata;
    SessionsStats stats;
    SessionsWatch *watches; /* session_state.c */
    size_t n_watches;
    TimerId watch_timer;
};

/* sessions.c */
Session *sessions_find(Sessions *m, const char *tenant, const char *id);
/* An exec's argv, env and cwd within the runner's limits (E_INVALID). */
int argv_check(char *const *argv, size_t argc, const EnvPair *env, size_t n_env, const char *cwd,
               Error **errp);
/* The live session in ST_RUNNING, or NULL with E_NOT_FOUND / E_CONFLICT. */
Session *session_running(Sessions *m, const char *tenant, const char *id, Error **errp);
void sessions_dispatch_pending(Sessions *m);
void session_free(Session *s);
void sessions_check_stopped(Sessions *m);

/* session_events.c */
void session_event(Session *s, const char *type, uint32_t exec_id, const void *data, size_t len,
                   json_t *attrs /* stolen, may be NULL */);
/* The record's state is derived from s->state here; store_session_update in the open batch. */
void session_persist(Session *s);
/* An event the workload can make without limit (file.changed: removed, over_budget, failed;
 * guest.error): recorded like session_event() up to cfg.max_guest_events, then only counted
 * in rec.events_suppressed, with one events.suppressed {after} when the first is dropped.
 * Takes attrs. */
void session_guest_event(Session *s, const char *type, json_t *attrs);
/* events.suppressed {after, suppressed} with the final count, when any were; once the guest
 * is gone. */
void session_guest_events_summary(Session *s);
void sessions_commit_now(Sessions *m);

/* session_state.c: the machine. s->state is written there alone. */
/* The only way a session's state changes. A move the table does not have, or a reason the
 * move does not take, is refused: E_INTERNAL ("... is not a session state transition"), and
 * nothing changed. An allowed move is recorded (the session.state event with its reason, the
 * record, the ledger's settlement on ST_ENDED) and committed before the caller goes on; ST_NEW
 * to ST_PENDING (the creation) records nothing: admission inserts the record. */
int session_set_state(Session *s, SessionState st, SessionEndReason reason, Error **errp);
/* session_set_state() for the machine's own moves, from loop callbacks: a refusal is a daemon
 * bug, logged here (the integration fixture fails on the message) and returned as false; the
 * caller then leaves the session where it is. */
bool session_move(Session *s, SessionState st, SessionEndReason reason);
bool session_state_can_go(SessionState from, SessionState to);
/* True when the move exists and takes this reason (SESSION_END_NONE: takes none). */
bool session_state_takes(SessionState from, SessionState to, SessionEndReason reason);
/* Stopping, extracting or ended: the end was decided, no other comes. */
bool session_state_is_ending(SessionState st);
void sessions_watches_free(Sessions *m);

/* session_guest.c */
extern const GuestOps session_guest_ops;
/* pending -> starting with g (its name and disk recorded); false when refused (logged): the
 * caller gives g back. */
bool session_bind_guest(Session *s, Guest *g);
/* The Hello of a starting session (its environment, mirror, egress), and its deadline; a
 * session that cannot be given what it was admitted with ends host_error. */
void session_hello(Session *s);
void session_exec_free_all(Session *s);
int session_send_exec(Session *s, const ExecSpec *spec, uint32_t *ret_exec_id, Error **errp);

/* session_end.c */
void session_end(Session *s, SessionEndReason reason);
/* Ends a session taken over from an earlier run's record (ST_NEW): stopping, then salvage or
 * ended. */
void session_end_recorded(Session *s);
/* Stops accepting the guest and destroys it; its disk is then salvaged (session_extract). */
void session_release_guest(Session *s);
void session_extract(Session *s);

/* session_finalize.c */
/* A clean end the runner can still serve: a running session that completed or was closed. */
bool session_finalize_wanted(const Session *s, SessionEndReason reason);
/* Sends Finalize; on any failure (now or later) falls back to session_release_guest(). */
void session_finalize_start(Session *s);
/* Takes the messages of a finalize (manifest, fetched data, their errors, late mirror records);
 * false for the rest, which session_guest.c handles as usual. */
bool session_finalize_on_message(Session *s, const GuestMsg *m);
void session_finalize_lost(Session *s);
/* A cancel while the runner finalizes: stop waiting on it, destroy the guest and salvage the
 * disk (fallback "cancelled"). False when no finalize waits on the runner. */
bool session_finalize_cancel(Session *s);
void session_finalize_free(Session *s);

/* session_code.c: a context's kernel is an exec of the session whose stdout is the kernel's
 * line protocol. Both return true when exec_id is a kernel's (then they consumed the message). */
bool session_code_on_output(Session *s, uint32_t exec_id, const Stockade__Runner__Output *o);
bool session_code_on_exit(Session *s, uint32_t exec_id);
void session_code_free_all(Session *s);

/* session_ops.c */
void session_ops_fail_all(Session *s, SessionEndReason why);
bool session_ops_on_reply(Session *s, const GuestMsg *m);
void session_task_advance(Session *s);
int session_start_put(Session *s, const char *path, const uint8_t *data, size_t len, uint32_t mode,
                      SessionsDoneFn done, void *userdata, bool task, Error **errp);
int session_start_get(Session *s, const char *path, size_t max_bytes, SessionsDataFn done,
                      void *userdata, Error **errp);
int session_start_fs(Session *s, SessionsFsKind kind, const char *path, const char *path2,
                     SessionsFsFn done, void *userdata, Error **errp);

/* session_admit.c: the tenant ledger (see there for why admission is atomic) */
/* Savepoint: admission + reservation + artifact folder + the session's first record. */
int session_admit_record(Session *s, AdmitRefusal *ret_refusal, Error **errp);
void session_admit_settle(Session *s);      /* at ST_ENDED, in the final state's transaction */
void session_admit_adopt(Session *s);       /* an earlier run's session: its caps */
void sessions_admit_reconcile(Sessions *m); /* restart: settle what no live session holds */
/* An earlier run's live session: "host_lost" if another host took it over (sessions_lost.c),
 * else "host_restart". */
SessionEndReason session_adopt_reason(Session *s);
uint64_t session_mirror_budget(const Session *s);
void session_extract_limits(const Session *s, ExtractLimits *ret);

/* session_egress.c */
int sessions_egress_init(Sessions *m, Error **errp);
void sessions_egress_free(Sessions *m);
int session_egress_check_spec(Sessions *m, const SessionSpec *sp, Error **errp);
int session_egress_copy_spec(SessionSpec *dst, const SessionSpec *src);
void session_egress_free_spec(SessionSpec *sp);
json_t *session_egress_spec_json(const SessionSpec *sp);
/* Creates the EgressSession and fills cfg->egress (with *ec) when the session asked; -1 when
 * it asked and that failed (the session must not run without the egress it was admitted with). */
int session_egress_start(Session *s, Stockade__Runner__SessionConfig *cfg,
                         Stockade__Runner__EgressConfig *ec, Error **errp);
void session_egress_stop(Session *s); /* every stream closes; idempotent */
bool session_egress_is_tunnel(int body_case);
void session_egress_on_message(Session *s, const GuestMsg *m);

/* session_mirror.c */
void session_mirror_on_changed(Session *s, const Stockade__Runner__FileChanged *c);
void session_mirror_abort(Session *s);

/* artifacts.c */
int artifacts_prepare(Sessions *m, const char *id, Error **errp);
void artifacts_drop_work(Sessions *m, const char *id);
/* Worker thread: moves salvaged files over mirrored ones where the disk is newer, adding new
 * ones only while the folder holds fewer than max_files files. *ret_capped if some were left. */
int artifacts_merge(const char *artifacts_dir, const char *id, uint32_t max_files,
                    uint64_t *ret_bytes, uint32_t *ret_files, bool *ret_capped, Error **errp);
/* The same from another work area (".finalize": files fetched over the channel). */
int artifacts_merge_from(const char *artifacts_dir, const char *id, const char *work,
                         uint32_t max_files, uint64_t *ret_bytes, uint32_t *ret_files,
                         bool *ret_capped, Error **errp);
void artifacts_retention_tick(Sessions *m);
/* Retention's choice, pure (no clock, store or files): v holds ended sessions oldest end
 * first, total_bytes what all ended sessions' artifacts hold, now the wall clock (µs). In
 * order, a session goes if it ended more than c->artifact_max_age_usec before now, or while
 * the total kept is over c->artifact_max_total_bytes (each removal takes its artifact_bytes
 * off the total); the walk stops at the first that is neither, since every later one ended
 * later. live[i] (live may be NULL) marks one still in memory: kept, its bytes still
 * counted, the walk goes on. Fills ret_remove[0..n); returns how many it marked. */
size_t artifacts_retention_pick(const SessionsConfig *c, uint64_t now, uint64_t total_bytes,
                                const SessionRecord *v, const bool *live, size_t n,
                                bool *ret_remove);
/* One retention removal: the folder on a worker (_work), then the session's records on the
 * loop thread (_done, which frees the job). The records go only with the folder: if any of it
 * could not be removed, they stay, the bytes stay counted, and the next pass tries again. */
typedef struct ArtifactsRemoval {
    Store *store;
    const char *artifacts_dir; /* borrowed: outlives the job */
    char id[SESSION_ID_BYTES];
    Error *err; /* why the folder is still there */
} ArtifactsRemoval;
void artifacts_removal_work(void *userdata);
void artifacts_removal_done(void *userdata);
