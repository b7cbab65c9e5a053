/* Durable records in one SQLite file (WAL mode): sessions and their events.
 *
 * One Store is one SQLite connection and must stay on one thread: the loop thread owns the
 * writer; HTTP threads borrow readers from a StoreReaders pool (WAL lets them read while the
 * writer writes). synchronous=NORMAL: a committed transaction survives a crash or kill -9 of
 * the daemon (it is in the OS's page cache); a host power loss may lose the last ones.
 * Events are appended in batches: store_begin() opens a transaction if none is open,
 * store_commit() ends it; readers only ever see committed events. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define STORE_ID_MAX_BYTES 40
#define STORE_TYPE_MAX_BYTES 32
#define STORE_POOL_MAX_BYTES 33
#define STORE_GUEST_MAX_BYTES 65
/* The deepest attrs an event is written with: a code.result's (code_wire.h's
 * CODE_LINE_MAX_DEPTH; session_code.c checks that the two agree). An event stored before the
 * kernel's lines were bounded may nest as deep as jansson parses (2 048): readers parse attrs
 * only when store_event_attrs_parsable() says so. */
#define STORE_EVENT_ATTRS_MAX_DEPTH 66

typedef struct Store Store;

/* A session's state and why it ended, as its record holds them (API.md "Sessions"): the
 * record's vocabulary, one name each. The store turns a name into a value only at its own
 * edge (the database's text columns); the faces render the same names. What moves a session
 * from one state to another, and which moves there are, is hostd/sessions/session_state.c. */
typedef enum {
    ST_NEW, /* in memory only: a session the machine has not placed yet (never recorded) */
    ST_PENDING,
    ST_STARTING,
    ST_RUNNING,
    ST_PAUSING,  /* its guest is being stored (issue 27) */
    ST_PAUSED,   /* stored on the host's disk: no guest, no slot, no guest time */
    ST_RESUMING, /* its stored state is being loaded into a guest */
    ST_STOPPING,
    ST_EXTRACTING,
    ST_ENDED,
    ST_COUNT_,
} SessionState;

typedef enum {
    SESSION_END_NONE, /* "": not ending (yet) */
    SESSION_END_CLOSED,
    SESSION_END_CANCELLED,
    SESSION_END_TIMED_OUT,
    SESSION_END_COMPLETED, /* a task's command finished */
    SESSION_END_FAILED,    /* a task's command could not start, or its files not go in */
    SESSION_END_OUTPUT_LIMIT,
    SESSION_END_GUEST_ERROR,
    SESSION_END_NO_CAPACITY, /* no warm guest within pending_timeout_s */
    SESSION_END_HOST_ERROR,  /* what it was admitted with could not be set up */
    SESSION_END_HOST_SHUTDOWN,
    SESSION_END_HOST_RESTART, /* live when an earlier daemon stopped */
    SESSION_END_HOST_LOST,    /* cluster: another host took this one over */
    SESSION_END_TENANT_REMOVED, /* its tenant was removed with ?cancel=1 (API.md) */
    SESSION_END_RESUME_FAILED,  /* its stored state was missing, damaged or of another template */
    SESSION_END_COUNT_,
} SessionEndReason;

const char *session_state_name(SessionState st);
/* The recorded state a name means; false for any other name (ST_NEW has none on record). */
bool session_state_from_name(const char *name, SessionState *ret);
const char *session_end_reason_name(SessionEndReason r); /* "" for SESSION_END_NONE */
bool session_end_reason_from_name(const char *name, SessionEndReason *ret);

typedef struct SessionRecord {
    char id[STORE_ID_MAX_BYTES];
    char tenant_id[STORE_ID_MAX_BYTES];
    char kind[8];                          /* "session" or "task" */
    char pool[STORE_POOL_MAX_BYTES];
    SessionState state;                    /* a recorded one: ST_PENDING .. ST_ENDED */
    SessionEndReason end_reason;           /* SESSION_END_NONE until it ends */
    char guest[STORE_GUEST_MAX_BYTES];     /* domain name while it has one ("" otherwise) */
    int64_t created_usec, started_usec, ended_usec; /* wall clock; 0 = not yet */
    int64_t stopped_usec; /* wall clock: the guest's destroy was requested; the charge ends here */
    uint64_t timeout_usec;
    bool has_exit_code;
    int exit_code;                         /* tasks: the command's exit code */
    uint64_t output_bytes;
    uint64_t artifact_bytes;
    uint32_t artifact_files;
    bool artifacts_truncated;
    uint64_t last_seq;
    uint64_t events_suppressed;            /* guest events only counted (sessions.h) */
    char *spec;                            /* JSON text of the request; owned; may be NULL */
} SessionRecord;

typedef struct EventRecord {
    uint64_t seq;
    int64_t ts_usec;
    char type[STORE_TYPE_MAX_BYTES];
    uint32_t exec_id;                      /* 0 = none */
    uint8_t *data;                         /* raw bytes (output chunks, file content); owned */
    size_t data_len;
    char *attrs;                           /* JSON object text of the other fields; owned */
} EventRecord;

int store_open(const char *path, Store **ret, Error **errp);
void store_close(Store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Store, store_close)

int store_begin(Store *s, Error **errp);  /* no-op when a transaction is open */
int store_commit(Store *s, Error **errp); /* no-op when none is */
bool store_in_transaction(const Store *s);

int store_session_insert(Store *s, const SessionRecord *r, Error **errp);
/* Updates every mutable field (state, reason, guest, times, counters) of r->id. */
int store_session_update(Store *s, const SessionRecord *r, Error **errp);
/* E_NOT_FOUND if absent. ret->spec is malloc'd (free with session_record_clear). */
int store_session_get(Store *s, const char *id, SessionRecord *ret, Error **errp);
/* Newest first. tenant_id NULL = every tenant; state NULL = any; before_created_usec 0 = from
 * the newest. *ret is an array of n records (each cleared with session_record_clear). */
int store_session_list(Store *s, const char *tenant_id, const SessionState *state, size_t limit,
                       int64_t before_created_usec, SessionRecord **ret, size_t *ret_n,
                       Error **errp);
/* Every session whose state is not "ended" (for restart reconciliation). */
int store_session_unfinished(Store *s, SessionRecord **ret, size_t *ret_n, Error **errp);
/* Ended sessions, oldest end first (retention). */
int store_session_oldest_ended(Store *s, size_t limit, SessionRecord **ret, size_t *ret_n,
                               Error **errp);
/* Sum of artifact_bytes over ended sessions. */
int store_artifact_bytes_total(Store *s, uint64_t *ret, Error **errp);
/* Highest event seq of a session (0 if none): the truth after a crash, whatever last_seq says. */
int store_event_max_seq(Store *s, const char *session_id, uint64_t *ret, Error **errp);
/* Restart without losing a session (store_adopt.c): what its events say an adopting start
 * must restore. Deadlines are wall-clock times; 0 = none recorded. */
#define STORE_ADOPT_EXECS_MAX 64 /* execs that run at once (the runner's) */
typedef struct {
    uint32_t exec_id;
    int64_t deadline_wall_usec; /* its request's time + its timeout */
} StoreAdoptExec;
typedef struct {
    uint32_t max_exec_id;
    int64_t deadline_wall_usec; /* the lifetime's, when a stop or a move recorded it */
    StoreAdoptExec execs[STORE_ADOPT_EXECS_MAX]; /* requested, neither exited nor failed */
    size_t n_execs;
} StoreAdoptFacts;
int store_session_adopt_facts(Store *s, const char *id, StoreAdoptFacts *ret, Error **errp);
/* Deletes a session and its events (retention). */
int store_session_delete(Store *s, const char *id, Error **errp);
void session_record_clear(SessionRecord *r);
void session_records_free(SessionRecord *v, size_t n);

int store_event_append(Store *s, const char *session_id, const EventRecord *e, Error **errp);
/* Events with seq > after_seq, in order, at most max. */
int store_events_read(Store *s, const char *session_id, uint64_t after_seq, size_t max,
                      EventRecord **ret, size_t *ret_n, Error **errp);
void event_records_free(EventRecord *v, size_t n);
/* True when e has attrs nesting at most STORE_EVENT_ATTRS_MAX_DEPTH (a scan of the text,
 * jsonscan.h). The HTTP faces render events on 512 KiB connection threads: they parse an
 * event's attrs only then, and render it without them otherwise. */
bool store_event_attrs_parsable(const EventRecord *e);

/* Count of sessions by state (for metrics): counts[st] for every recorded state. */
int store_count_by_state(Store *s, uint64_t counts[ST_COUNT_], Error **errp);

/* A small pool of read-only connections for other threads. */
typedef struct StoreReaders StoreReaders;
int store_readers_new(const char *path, unsigned n, StoreReaders **ret, Error **errp);
void store_readers_free(StoreReaders *r);
/* Blocks until a reader is free. Thread-safe. */
Store *store_reader_acquire(StoreReaders *r);
void store_reader_release(StoreReaders *r, Store *s);
