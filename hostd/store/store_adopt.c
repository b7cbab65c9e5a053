/* What an adopting start needs of a session's events (issue 30): its highest exec id (new
 * execs must not reuse a running one's), the execs requested and not over (with their
 * deadlines, from the request's time and timeout), and its lifetime's last deadline (the
 * "session.kept" a stop that kept it wrote, or the last "session.timeout_set"). Each is read
 * from the events the daemon itself wrote; a value out of range reads as absent. */
#include <sqlite3.h>
#include <stdint.h>
#include <string.h>

#include "store_internal.h"

static int
adopt_deadline(Store *s, const char *id, StoreAdoptFacts *ret, Error **errp)
{
    sqlite3_stmt *st =
        store_prepare(s,
                      "SELECT type, ts_usec, json_extract(attrs, '$.deadline_unix_ms'),"
                      " json_extract(attrs, '$.timeout_ms') FROM events WHERE session_id = ?1"
                      " AND type IN ('session.kept', 'session.timeout_set') AND json_valid(attrs)"
                      " ORDER BY seq DESC LIMIT 1",
                      errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        bool kept = strcmp((const char *) sqlite3_column_text(st, 0), "session.kept") == 0;
        int64_t ts = sqlite3_column_int64(st, 1);
        int64_t v = sqlite3_column_int64(st, kept ? 2 : 3);
        if (v > 0 && v < INT64_MAX / 1000 && ts > 0)
            ret->deadline_wall_usec = kept ? v * 1000 : ts + v * 1000;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_fail(s, errp, "adoption: deadline");
}

static int
adopt_execs(Store *s, const char *id, StoreAdoptFacts *ret, Error **errp)
{
    sqlite3_stmt *st = store_prepare(
        s,
        "SELECT exec_id, ts_usec, json_extract(attrs, '$.timeout_ms') FROM events"
        " WHERE session_id = ?1 AND type = 'exec.requested' AND exec_id > 0 AND json_valid(attrs)"
        " AND exec_id NOT IN (SELECT exec_id FROM events WHERE session_id = ?1"
        " AND type IN ('exec.exited', 'exec.failed')) ORDER BY exec_id",
        errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && ret->n_execs < STORE_ADOPT_EXECS_MAX) {
        int64_t eid = sqlite3_column_int64(st, 0), ts = sqlite3_column_int64(st, 1);
        int64_t ms = sqlite3_column_int64(st, 2);
        if (eid <= 0 || eid > UINT32_MAX || ts <= 0 || ms <= 0 || ms > INT64_MAX / 1000 - ts / 1000)
            continue;
        ret->execs[ret->n_execs++] = (StoreAdoptExec){(uint32_t) eid, ts + ms * 1000};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return store_fail(s, errp, "adoption: execs");
    return 0;
}

int
store_session_adopt_facts(Store *s, const char *id, StoreAdoptFacts *ret, Error **errp)
{
    StoreAdoptFacts f = {0};
    sqlite3_stmt *st = store_prepare(
        s, "SELECT coalesce(max(exec_id), 0) FROM events WHERE session_id = ?1", errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int64_t max = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return store_fail(s, errp, "adoption: exec ids");
    f.max_exec_id = max > 0 && max <= UINT32_MAX ? (uint32_t) max : 0;
    if (adopt_deadline(s, id, &f, errp) < 0 || adopt_execs(s, id, &f, errp) < 0)
        return -1;
    *ret = f;
    return 0;
}
