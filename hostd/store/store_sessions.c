/* Session records. See store.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* The one table of names (API.md "Sessions"): the database, the events and the faces say
 * these. ST_NEW is never recorded: its name is for the daemon's log. */
static const char *const state_names[ST_COUNT_] = {
    [ST_NEW] = "new",           [ST_PENDING] = "pending",   [ST_STARTING] = "starting",
    [ST_RUNNING] = "running",   [ST_PAUSING] = "pausing",   [ST_PAUSED] = "paused",
    [ST_RESUMING] = "resuming", [ST_STOPPING] = "stopping", [ST_EXTRACTING] = "extracting",
    [ST_ENDED] = "ended",
};

static const char *const end_reason_names[SESSION_END_COUNT_] = {
    [SESSION_END_NONE] = "",
    [SESSION_END_CLOSED] = "closed",
    [SESSION_END_CANCELLED] = "cancelled",
    [SESSION_END_TIMED_OUT] = "timed_out",
    [SESSION_END_COMPLETED] = "completed",
    [SESSION_END_FAILED] = "failed",
    [SESSION_END_OUTPUT_LIMIT] = "output_limit",
    [SESSION_END_GUEST_ERROR] = "guest_error",
    [SESSION_END_NO_CAPACITY] = "no_capacity",
    [SESSION_END_HOST_ERROR] = "host_error",
    [SESSION_END_HOST_SHUTDOWN] = "host_shutdown",
    [SESSION_END_HOST_RESTART] = "host_restart",
    [SESSION_END_HOST_LOST] = "host_lost",
    [SESSION_END_TENANT_REMOVED] = "tenant_removed",
    [SESSION_END_RESUME_FAILED] = "resume_failed",
};

/* The index of name in names[first..n), or -1. */
static int
name_index(const char *const *names, int first, int n, const char *name)
{
    for (int i = first; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

const char *
session_state_name(SessionState st)
{
    return st < ST_COUNT_ ? state_names[st] : "?";
}

bool
session_state_from_name(const char *name, SessionState *ret)
{
    int i = name_index(state_names, ST_PENDING, ST_COUNT_, name); /* recorded ones only */
    if (i >= 0)
        *ret = (SessionState) i;
    return i >= 0;
}

const char *
session_end_reason_name(SessionEndReason r)
{
    return r < SESSION_END_COUNT_ ? end_reason_names[r] : "?";
}

bool
session_end_reason_from_name(const char *name, SessionEndReason *ret)
{
    int i = name_index(end_reason_names, SESSION_END_NONE, SESSION_END_COUNT_, name);
    if (i >= 0)
        *ret = (SessionEndReason) i;
    return i >= 0;
}

static void
bind_session(sqlite3_stmt *st, const SessionRecord *r)
{
    sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->tenant_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->pool, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, session_state_name(r->state), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, session_end_reason_name(r->end_reason), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, r->guest, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, r->created_usec);
    sqlite3_bind_int64(st, 9, r->started_usec);
    sqlite3_bind_int64(st, 10, r->ended_usec);
    sqlite3_bind_int64(st, 11, (sqlite3_int64) r->timeout_usec);
    if (r->has_exit_code)
        sqlite3_bind_int(st, 12, r->exit_code);
    sqlite3_bind_int64(st, 13, (sqlite3_int64) r->output_bytes);
    sqlite3_bind_int64(st, 14, (sqlite3_int64) r->artifact_bytes);
    sqlite3_bind_int64(st, 15, r->artifact_files);
    sqlite3_bind_int(st, 16, r->artifacts_truncated);
    sqlite3_bind_int64(st, 17, (sqlite3_int64) r->last_seq);
    if (r->spec)
        sqlite3_bind_text(st, 18, r->spec, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 19, r->stopped_usec);
    sqlite3_bind_int64(st, 20, (sqlite3_int64) r->events_suppressed);
}

static int
store_step_done(Store *s, sqlite3_stmt *st, Error **errp, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return store_fail(s, errp, what);
    return 0;
}

int
store_session_insert(Store *s, const SessionRecord *r, Error **errp)
{
    sqlite3_stmt *st = store_stmt(s, STMT_SESSION_INSERT, errp);
    if (!st)
        return -1;
    bind_session(st, r);
    return store_step_done(s, st, errp, "insert session");
}

int
store_session_update(Store *s, const SessionRecord *r, Error **errp)
{
    sqlite3_stmt *st = store_stmt(s, STMT_SESSION_UPDATE, errp);
    if (!st)
        return -1;
    bind_session(st, r);
    if (store_step_done(s, st, errp, "update session") < 0)
        return -1;
    if (sqlite3_changes(s->db) != 1)
        return error_set(errp, E_NOT_FOUND, 0, "store: no session %s", r->id);
    return 0;
}

static void
copy_text(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", t ? (const char *) t : "");
}

/* The file is the daemon's own, but a name it does not know (a later version's, or an edit)
 * reads as over, with no reason: nothing is served from a guest it might still have. */
static void
row_state(sqlite3_stmt *st, SessionRecord *r)
{
    const unsigned char *state = sqlite3_column_text(st, 4);
    const unsigned char *reason = sqlite3_column_text(st, 5);
    if (!state || !session_state_from_name((const char *) state, &r->state))
        r->state = ST_ENDED;
    if (!reason || !session_end_reason_from_name((const char *) reason, &r->end_reason))
        r->end_reason = SESSION_END_NONE;
}

static int
row_to_session(sqlite3_stmt *st, SessionRecord *r)
{
    memset(r, 0, sizeof(*r));
    copy_text(r->id, sizeof(r->id), st, 0);
    copy_text(r->tenant_id, sizeof(r->tenant_id), st, 1);
    copy_text(r->kind, sizeof(r->kind), st, 2);
    copy_text(r->pool, sizeof(r->pool), st, 3);
    row_state(st, r);
    copy_text(r->guest, sizeof(r->guest), st, 6);
    r->created_usec = sqlite3_column_int64(st, 7);
    r->started_usec = sqlite3_column_int64(st, 8);
    r->ended_usec = sqlite3_column_int64(st, 9);
    r->timeout_usec = (uint64_t) sqlite3_column_int64(st, 10);
    r->has_exit_code = sqlite3_column_type(st, 11) != SQLITE_NULL;
    r->exit_code = sqlite3_column_int(st, 11);
    r->output_bytes = (uint64_t) sqlite3_column_int64(st, 12);
    r->artifact_bytes = (uint64_t) sqlite3_column_int64(st, 13);
    r->artifact_files = (uint32_t) sqlite3_column_int64(st, 14);
    r->artifacts_truncated = sqlite3_column_int(st, 15) != 0;
    r->last_seq = (uint64_t) sqlite3_column_int64(st, 16);
    r->stopped_usec = sqlite3_column_int64(st, 18);
    r->events_suppressed = (uint64_t) sqlite3_column_int64(st, 19);
    const unsigned char *spec = sqlite3_column_text(st, 17);
    if (spec && !(r->spec = strdup((const char *) spec)))
        return -1;
    return 0;
}

int
store_session_get(Store *s, const char *id, SessionRecord *ret, Error **errp)
{
    sqlite3_stmt *st = store_stmt(s, STMT_SESSION_GET, errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        return error_set(errp, E_NOT_FOUND, 0, "no session %s", id);
    }
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return store_fail(s, errp, "get session");
    }
    int r = row_to_session(st, ret);
    sqlite3_reset(st);
    return r < 0 ? error_set(errp, E_INTERNAL, ENOMEM, "store") : 0;
}

void
session_record_clear(SessionRecord *r)
{
    free(r->spec);
    r->spec = NULL;
}

void
session_records_free(SessionRecord *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        session_record_clear(&v[i]);
    free(v);
}

/* Runs a prepared query and collects its rows as sessions. */
static int
collect_sessions(Store *s, sqlite3_stmt *st, size_t limit, SessionRecord **ret, size_t *ret_n,
                 Error **errp)
{
    SessionRecord *v = NULL;
    size_t n = 0, cap = 0;
    int rc = SQLITE_DONE;

    while (n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            SessionRecord *nv = realloc(v, cap * sizeof(*v));
            if (!nv)
                goto fail_free;
            v = nv;
        }
        if (row_to_session(st, &v[n]) < 0)
            goto fail_free;
        n++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        session_records_free(v, n);
        return store_fail(s, errp, "list sessions");
    }
    *ret = v;
    *ret_n = n;
    return 0;

fail_free:
    session_records_free(v, n);
    return error_set(errp, E_INTERNAL, ENOMEM, "store: list sessions");
}

#define SESSION_COLUMNS                                                                            \
    "id, tenant_id, kind, pool, state, end_reason, guest, created_usec, started_usec,"             \
    " ended_usec, timeout_usec, exit_code, output_bytes, artifact_bytes, artifact_files,"          \
    " artifacts_truncated, last_seq, spec, stopped_usec, events_suppressed"

int
store_session_list(Store *s, const char *tenant_id, const SessionState *state, size_t limit,
                   int64_t before_created_usec, SessionRecord **ret, size_t *ret_n, Error **errp)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT " SESSION_COLUMNS " FROM sessions"
                      " WHERE (?1 IS NULL OR tenant_id=?1) AND (?2 IS NULL OR state=?2)"
                      " AND (?3 = 0 OR created_usec < ?3)"
                      " ORDER BY created_usec DESC, id DESC LIMIT ?4";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, errp, "list sessions");
    if (tenant_id)
        sqlite3_bind_text(st, 1, tenant_id, -1, SQLITE_STATIC);
    if (state)
        sqlite3_bind_text(st, 2, session_state_name(*state), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, before_created_usec);
    sqlite3_bind_int64(st, 4, (sqlite3_int64) limit);
    int r = collect_sessions(s, st, limit, ret, ret_n, errp);
    sqlite3_finalize(st);
    return r;
}

int
store_session_unfinished(Store *s, SessionRecord **ret, size_t *ret_n, Error **errp)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT " SESSION_COLUMNS " FROM sessions WHERE state != 'ended'"
                      " ORDER BY created_usec";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, errp, "list unfinished sessions");
    int r = collect_sessions(s, st, SIZE_MAX, ret, ret_n, errp);
    sqlite3_finalize(st);
    return r;
}

int
store_session_delete(Store *s, const char *id, Error **errp)
{
    sqlite3_stmt *st = store_stmt(s, STMT_SESSION_DELETE, errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    return store_step_done(s, st, errp, "delete session");
}

int
store_count_by_state(Store *s, uint64_t counts[ST_COUNT_], Error **errp)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sessions WHERE state=?1", -1, &st, NULL) !=
        SQLITE_OK)
        return store_fail(s, errp, "count sessions");
    counts[ST_NEW] = 0;
    for (SessionState i = ST_PENDING; i < ST_COUNT_; i++) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, session_state_name(i), -1, SQLITE_STATIC);
        counts[i] = sqlite3_step(st) == SQLITE_ROW ? (uint64_t) sqlite3_column_int64(st, 0) : 0;
    }
    sqlite3_finalize(st);
    return 0;
}

int
store_session_oldest_ended(Store *s, size_t limit, SessionRecord **ret, size_t *ret_n, Error **errp)
{
    sqlite3_stmt *st;
    const char *sql = "SELECT " SESSION_COLUMNS " FROM sessions WHERE state = 'ended'"
                      " ORDER BY ended_usec LIMIT ?1";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, errp, "list ended sessions");
    sqlite3_bind_int64(st, 1, (sqlite3_int64) limit);
    int r = collect_sessions(s, st, limit, ret, ret_n, errp);
    sqlite3_finalize(st);
    return r;
}

/* One integer from a one-row query with an optional text parameter. */
static int
store_scalar(Store *s, const char *sql, const char *param, uint64_t *ret, Error **errp)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, errp, "query");
    if (param)
        sqlite3_bind_text(st, 1, param, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    *ret = rc == SQLITE_ROW ? (uint64_t) sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_fail(s, errp, "query");
}

int
store_artifact_bytes_total(Store *s, uint64_t *ret, Error **errp)
{
    return store_scalar(s,
                        "SELECT coalesce(sum(artifact_bytes), 0) FROM sessions"
                        " WHERE state = 'ended'",
                        NULL, ret, errp);
}

int
store_event_max_seq(Store *s, const char *session_id, uint64_t *ret, Error **errp)
{
    return store_scalar(s, "SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?1",
                        session_id, ret, errp);
}
