/* Internal to hostd/sessions: what its files share (README.md has the map). A session is a
 * small core every file reads (its record, state, spec, guest) and parts, each owned by the
 * one file that defines it; other files reach a part only through that file's functions. The
 * state machine (session_state.c) is the only writer of Session.state; the moves are decided
 * in session_start.c (to starting, running), session_end.c (to stopping, extracting, ended)
 * and sessions.c (the creation). Loop thread only, except where noted. */
#pragma once

#include <jansson.h>

#include "egress.h"
#include "histogram.h"
#include "sessions.h"
#include "sessions_host.h"

typedef struct Session Session;
/* Parts of a session, each defined in (and owned by) one file. */
typedef struct SessionStart SessionStart;     /* session_start.c: queue, timers, Hello */
typedef struct SessionExecs SessionExecs;     /* session_exec.c */
typedef struct SessionOps SessionOps;         /* session_ops.c: file round trips, task flow */
typedef struct SessionMirror SessionMirror;   /* session_mirror.c */
typedef struct SessionCode SessionCode;       /* session_code.c: code contexts */
typedef struct SessionGrant SessionGrant;     /* session_admit.c: what admission granted */
typedef struct SessionEvents SessionEvents;   /* session_events.c: batching, guest events */
typedef struct SessionSalvage SessionSalvage; /* session_end.c: the disk and its salvage */
typedef struct Finalize Finalize;             /* session_finalize.c: a clean end */
/* Parts of the module, likewise. */
typedef struct SessionsQueue SessionsQueue;     /* session_start.c: pending sessions */
typedef struct SessionsCommit SessionsCommit;   /* session_events.c: the open batch */
typedef struct SessionsWatches SessionsWatches; /* session_state.c */
typedef struct SessionsStop SessionsStop;       /* sessions_lifecycle.c */

struct Session {
    Sessions *mgr;
    SessionRecord rec;  /* what the store holds; rec.id is the session id, rec.state derived */
    SessionState state; /* session_state.c alone writes it */
    SessionSpec spec;   /* deep copy */
    Guest *guest;       /* from its bind until the pool has it back */
    bool accepting;     /* guest messages count: false from the stop on (but a finalize's) */
    SessionStart *start;
    SessionExecs *execs;
    SessionOps *ops;
    SessionMirror *mirror;
    SessionCode *code;
    SessionGrant *grant;
    SessionEvents *events;
    SessionSalvage *salvage;
    Finalize *fin;         /* a clean end over the channel in progress, else NULL */
    EgressSession *egress; /* session_egress.c: from Hello until the release, when asked */
    SessionEndReason end_after_adopt; /* an end asked while its guest was being adopted */
    Session *next;                    /* Sessions.all */
};

struct Sessions {
    Loop *loop;
    WorkQueue *q;
    Store *store;
    EventHub *hub;
    SessionsHost host; /* the pool, the guests' channels, the salvage (sessions_host.h) */
    Cluster *cluster;  /* borrowed; NULL: a single host, the ledger is in the store */
    SessionsConfig cfg;
    char *artifacts_dir;
    Session *all;
    bool stopping;
    bool keep_on_stop; /* [daemon] shutdown = keep (session_adopt.c) */
    bool draining;     /* sessions_set_draining: no creation */
    SessionsStats stats;
    SessionsQueue *queue;
    SessionsCommit *commit;
    SessionsWatches *watches;
    SessionsStop *stop;
    TimerId retention_timer;         /* artifacts.c */
    EgressResolver *egress_resolver; /* session_egress.c: only when the operator allows any */
    bool settle_retry; /* session_admit.c: a cluster settlement failed (database away): retry */
    void (*emptied)(Sessions *m); /* sessions_lifecycle.c: a stop waits for the last session */
};

/* A guest's channel, through the host (sessions_host.h). */
static inline int
session_send(Session *s, HostMsg *m, uint32_t *ret_req_id, Error **errp)
{
    return s->mgr->host.ops->send(s->guest, m, ret_req_id, errp);
}

/* Each part's constructor (-1: out of memory, nothing to undo but the caller's session_free)
 * and destructor (NULL-safe: a half-made session is freed with them). */
#define SESSION_PART(name)                                                                         \
    int session_##name##_new(Session *s);                                                          \
    void session_##name##_free(Session *s)
#define SESSIONS_PART(name)                                                                        \
    int sessions_##name##_new(Sessions *m);                                                        \
    void sessions_##name##_free(Sessions *m)
SESSION_PART(start);
SESSION_PART(execs);
SESSION_PART(ops);
SESSION_PART(mirror);
SESSION_PART(code);
SESSION_PART(grant);
SESSION_PART(events);
SESSION_PART(salvage);
SESSIONS_PART(queue);
SESSIONS_PART(commit);
SESSIONS_PART(watches);
SESSIONS_PART(stop);

/* ------------------------------------------------------------------ session_table.c */
Session *sessions_find(Sessions *m, const char *tenant, const char *id);
/* A session with every part, in ST_NEW, not yet in Sessions.all; NULL: out of memory. */
Session *session_alloc(Sessions *m);
/* Unlinks s from Sessions.all (if it is there) and frees it with its parts; a stop that waited
 * on the last session ends then. */
void session_free(Session *s);
/* The end was decided: every part's stop hook (the queue and timers stop, operations fail). */
void session_parts_stop(Session *s, SessionEndReason reason);
/* The live session in ST_RUNNING, or NULL with E_NOT_FOUND / E_CONFLICT. */
Session *session_running(Sessions *m, const char *tenant, const char *id, Error **errp);
int session_new_id(char out[SESSION_ID_BYTES]);

/* ------------------------------------------------------------------ session_spec.c */
/* An exec's argv, env and cwd within the runner's limits (E_INVALID). */
int argv_check(char *const *argv, size_t argc, const EnvPair *env, size_t n_env, const char *cwd,
               Error **errp);
int session_spec_check(Sessions *m, const SessionSpec *sp, Error **errp);
int session_spec_copy(SessionSpec *dst, const SessionSpec *src); /* -1: out of memory */
void session_spec_free(SessionSpec *sp);
char *session_spec_json(const SessionSpec *sp); /* for the record; NULL: out of memory */

/* ------------------------------------------------------------------ session_state.c */
/* The only way a session's state changes. A move the table does not have, or a reason the
 * move does not take, is refused: E_INTERNAL ("... is not a session state transition"), and
 * nothing changed. An allowed move is recorded (the session.state event with its reason, the
 * record, the ledger's settlement on ST_ENDED) and committed before the caller goes on, and
 * the session's watches hear of it on the next turn of the loop. ST_NEW to ST_PENDING (the
 * creation) records nothing: admission inserts the record. */
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

/* ------------------------------------------------------------------ session_start.c */
/* A new session joins the pending queue (its no_capacity deadline armed) and is offered the
 * idle guests. */
void session_start_enqueue(Session *s);
/* Every pending session that an idle guest of its pool can take is bound (pending ->
 * starting), its lifetime starts, and its Hello goes. */
void sessions_dispatch_pending(Sessions *m);
void sessions_on_pool_idle(void *userdata); /* the pool's on-idle hook: dispatches */
/* The end was decided: the session leaves the queue and its timers stop. */
void session_start_stop(Session *s, SessionEndReason reason);
/* The guest's reply to req_id, if it is the Hello's: the Ack runs the session (starting ->
 * running, then a task's flow), an error ends it guest_error. False for any other reply. */
bool session_start_on_ack(Session *s, uint32_t req_id);
bool session_start_on_refusal(Session *s, uint32_t req_id, const char *why);
/* The lifetime's timer (monotonic): where it is, and armed anew at an adoption. */
uint64_t session_timeout_at_usec(const Session *s);
void session_timeout_arm_at(Session *s, uint64_t at_usec);

/* ------------------------------------------------------------------ session_guest.c */
extern const GuestOps session_guest_ops; /* every guest message, dispatched */

/* ------------------------------------------------------------------ session_exec.c */
/* Who reads an exec instead of the events: its output (true: consumed, no exec.stdout or
 * exec.stderr event), and its end (it exited, or could not start). */
typedef struct SessionExecSink {
    bool (*output)(Session *s, uint32_t exec_id, const Stockade__Runner__Output *o);
    void (*over)(Session *s, uint32_t exec_id);
} SessionExecSink;
/* Starts an exec (task: the task's command, whose end ends the session; sink may be NULL). */
int session_exec_start(Session *s, const ExecSpec *spec, bool task, const SessionExecSink *sink,
                       uint32_t *ret_exec_id, Error **errp);
bool session_exec_known(const Session *s, uint32_t exec_id);  /* ever started */
bool session_exec_on_pty(Session *s, uint32_t exec_id);       /* running, started with a pty */
void session_execs_stop(Session *s, SessionEndReason reason); /* their timers stop */
void session_exec_on_started(Session *s, const GuestMsg *m);
void session_exec_on_output(Session *s, const Stockade__Runner__Output *o);
void session_exec_on_exit(Session *s, const Stockade__Runner__ExecExit *x);
/* An error reply to an exec that could not start; false when req_id is none of them. */
bool session_exec_on_error(Session *s, const GuestMsg *m);
/* Adoption: an earlier run's running exec, its timer at deadline_usec (monotonic); new execs
 * get ids above max_exec_id. */
int session_exec_adopt(Session *s, uint32_t exec_id, uint64_t deadline_usec);
void session_execs_resume_ids(Session *s, uint32_t max_exec_id);
unsigned session_execs_running(const Session *s);

/* ------------------------------------------------------------------ session_end.c */
void session_end(Session *s, SessionEndReason reason);
/* Takes over a record an earlier run left live (its spec moves out of *r) and ends it with
 * reason (host_restart, host_lost): stopping, then its disk's salvage, or ended. */
void session_end_recorded(Sessions *m, SessionRecord *r, SessionEndReason reason);
/* Stops accepting the guest and destroys it; its disk is then salvaged. fallback (static, or
 * NULL) says why a finalize gave way to the salvage: its artifacts event carries it. */
void session_release_guest(Session *s, const char *fallback);
/* A finalize has every file on the host: the guest goes (its slot recycled, no salvage) and
 * the session extracts (the merge runs); false when refused (logged). */
bool session_release_guest_merged(Session *s);
/* The session's files are in: extracting -> ended, then it is freed. */
void session_ended(Session *s);
const char *session_salvage_fallback(const Session *s);

/* ------------------------------------------------------------------ session_finalize.c */
/* A clean end the runner can still serve: a running session that completed or was closed. */
bool session_finalize_wanted(const Session *s, SessionEndReason reason);
/* How a finalize ends, told to the end path that started it (session_end.c). */
typedef struct SessionFinalizeEnd {
    /* The runner did not cooperate (why: static): destroy the guest, salvage its disk. */
    void (*gave_way)(Session *s, const char *why);
    /* Every file is on the host: the guest goes, the merge runs; false: refused (logged). */
    bool (*files_in)(Session *s);
    void (*ended)(Session *s); /* the merge is done */
} SessionFinalizeEnd;
/* Sends Finalize; any failure (now or later) gives way to the salvage. */
void session_finalize_start(Session *s, const SessionFinalizeEnd *end);
/* Takes the messages of a finalize (manifest, fetched data, their errors, late mirror records);
 * false for the rest, which session_guest.c handles as usual. */
bool session_finalize_on_message(Session *s, const GuestMsg *m);
void session_finalize_lost(Session *s);
/* A cancel while the runner finalizes: stop waiting on it, destroy the guest and salvage the
 * disk (fallback "cancelled"). False when no finalize waits on the runner. */
bool session_finalize_cancel(Session *s);
void session_finalize_free(Session *s);

/* ------------------------------------------------------------------ session_events.c */
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

/* ------------------------------------------------------------------ session_ops.c */
void session_ops_fail_all(Session *s, SessionEndReason why);
bool session_ops_on_reply(Session *s, const GuestMsg *m);
/* A task's next step: its next file in, else its command; a step that fails ends it failed. */
void session_task_advance(Session *s);
/* as_root: the guest does the call as root (runner.proto's as_root), not the session user */
int session_start_put(Session *s, const char *path, const uint8_t *data, size_t len, uint32_t mode,
                      SessionsDoneFn done, void *userdata, bool task, bool as_root, Error **errp);
int session_start_get(Session *s, const char *path, size_t max_bytes, SessionsDataFn done,
                      void *userdata, bool as_root, Error **errp);
int session_start_fs(Session *s, SessionsFsKind kind, const char *path, const char *path2,
                     SessionsFsFn done, void *userdata, bool as_root, Error **errp);

/* ------------------------------------------------------------------ session_admit.c */
/* The tenant ledger (see there for why admission is atomic). Savepoint: admission +
 * reservation + artifact folder + the session's first record. */
int session_admit_record(Session *s, AdmitRefusal *ret_refusal, Error **errp);
void session_admit_settle(Session *s);      /* at ST_ENDED, in the final state's transaction */
void session_admit_adopt(Session *s);       /* an earlier run's session: its caps */
void sessions_admit_reconcile(Sessions *m); /* restart: settle what no live session holds */
uint64_t session_output_limit_bytes(const Session *s); /* min(global, tenant quota) */
/* The lifetime admitted and reserved (rec.timeout_usec) runs from the hand-out of its guest:
 * session_start.c says when; its end (monotonic; 0 before) bounds the timeout and a finalize. */
void session_lifetime_begins(Session *s);
void session_lifetime_resume(Session *s, uint64_t start_usec); /* adoption: the earlier start */
uint64_t session_lifetime_end_usec(const Session *s);
uint64_t session_mirror_budget(const Session *s);
void session_extract_limits(const Session *s, ExtractLimits *ret);

/* ------------------------------------------------------------------ session_adopt.c */
/* A stop with shutdown = keep: a running session (not a task, no egress) whose guest stays
 * running for the next start. session_keep records what that start needs and frees s. */
bool session_keepable(const Session *s);
void session_keep(Session *s);
/* An earlier run's record whose guest may still run: true when it is being adopted (its spec
 * moved out of *r; it runs or ends host_restart once the pool has checked its guest); false
 * when the caller ends it as before (session_end_recorded). */
bool session_adopt_recorded(Sessions *m, SessionRecord *r);

/* ------------------------------------------------------------------ sessions_lost.c */
/* An earlier run's live session: "host_lost" if another host took it over, else
 * "host_restart". */
SessionEndReason session_adopt_reason(Sessions *m, const char *id);

/* ------------------------------------------------------------------ session_egress.c */
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
/* A tunnel message; -1 (a guest.error recorded) when the guest broke the tunnel protocol or
 * has no egress: the session must end guest_error. */
int session_egress_on_message(Session *s, const GuestMsg *m);

/* ------------------------------------------------------------------ session_mirror.c */
void session_mirror_on_changed(Session *s, const Stockade__Runner__FileChanged *c);
void session_mirror_abort(Session *s);
uint64_t session_mirror_bytes(const Session *s); /* stored so far */

/* ------------------------------------------------------------------ artifacts.c */
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
/* Retention passes, the first after first_usec; stop: no more. */
void artifacts_retention_start(Sessions *m, uint64_t first_usec);
void artifacts_retention_stop(Sessions *m);
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
