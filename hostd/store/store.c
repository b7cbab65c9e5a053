/* Connections, pragmas, schema migrations, transactions. See store.h. */
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define STORE_BUSY_TIMEOUT_MS 5000

/* Each entry migrates from user_version i to i + 1. Never edit a released entry: append. */
static const char *const migrations[] = {
    /* 1: sessions and events */
    "CREATE TABLE sessions ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL,"
    "  kind TEXT NOT NULL CHECK (kind IN ('session','task')),"
    "  pool TEXT NOT NULL,"
    "  state TEXT NOT NULL,"
    "  end_reason TEXT NOT NULL DEFAULT '',"
    "  guest TEXT NOT NULL DEFAULT '',"
    "  created_usec INTEGER NOT NULL,"
    "  started_usec INTEGER NOT NULL DEFAULT 0,"
    "  ended_usec INTEGER NOT NULL DEFAULT 0,"
    "  timeout_usec INTEGER NOT NULL,"
    "  exit_code INTEGER,"
    "  output_bytes INTEGER NOT NULL DEFAULT 0,"
    "  artifact_bytes INTEGER NOT NULL DEFAULT 0,"
    "  artifact_files INTEGER NOT NULL DEFAULT 0,"
    "  artifacts_truncated INTEGER NOT NULL DEFAULT 0,"
    "  last_seq INTEGER NOT NULL DEFAULT 0,"
    "  spec TEXT"
    ");"
    "CREATE INDEX sessions_by_tenant ON sessions(tenant_id, created_usec);"
    "CREATE INDEX sessions_by_state ON sessions(state);"
    "CREATE TABLE events ("
    "  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL,"
    "  ts_usec INTEGER NOT NULL,"
    "  type TEXT NOT NULL,"
    "  exec_id INTEGER NOT NULL DEFAULT 0,"
    "  data BLOB,"
    "  attrs TEXT,"
    "  PRIMARY KEY (session_id, seq)"
    ") WITHOUT ROWID;",
    /* 2: tenants, tokens (hashes only), quotas, and the reservation ledger (issue 5). The
     * ledger is append-only and each reservation ends exactly once: triggers refuse a second
     * end and any delete, so not even a bug can rewrite history. */
    "CREATE TABLE tenants ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  created_usec INTEGER NOT NULL,"
    "  bucket_level_milli INTEGER NOT NULL DEFAULT 0,"
    "  bucket_usec INTEGER NOT NULL DEFAULT 0"
    ");"
    "INSERT INTO tenants (id, name, created_usec) VALUES ('default', 'default', 0);"
    "CREATE TABLE tokens ("
    "  id TEXT PRIMARY KEY,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  hash BLOB NOT NULL UNIQUE CHECK (length(hash) = 32),"
    "  admin INTEGER NOT NULL DEFAULT 0,"
    "  created_usec INTEGER NOT NULL,"
    "  revoked_usec INTEGER NOT NULL DEFAULT 0"
    ");"
    "CREATE INDEX tokens_by_tenant ON tokens(tenant_id);"
    "CREATE TABLE quotas ("
    "  tenant_id TEXT PRIMARY KEY REFERENCES tenants(id),"
    "  max_sessions INTEGER NOT NULL,"
    "  wallet_guest_seconds INTEGER NOT NULL,"
    "  max_vcpus INTEGER NOT NULL,"
    "  max_memory_mib INTEGER NOT NULL,"
    "  max_timeout_s INTEGER NOT NULL,"
    "  sessions_per_minute INTEGER NOT NULL,"
    "  output_bytes INTEGER NOT NULL,"
    "  workspace_bytes INTEGER NOT NULL"
    ");"
    "CREATE TABLE reservations ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  tenant_id TEXT NOT NULL REFERENCES tenants(id),"
    "  session_id TEXT NOT NULL UNIQUE,"
    "  vcpus INTEGER NOT NULL CHECK (vcpus >= 0),"
    "  reserved_guest_s INTEGER NOT NULL CHECK (reserved_guest_s >= 0),"
    "  output_bytes INTEGER NOT NULL,"
    "  workspace_bytes INTEGER NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open','charged','released')),"
    "  charged_guest_s INTEGER NOT NULL DEFAULT 0"
    "    CHECK (charged_guest_s >= 0 AND charged_guest_s <= reserved_guest_s),"
    "  created_usec INTEGER NOT NULL,"
    "  ended_usec INTEGER NOT NULL DEFAULT 0,"
    "  CHECK (state != 'released' OR charged_guest_s = 0)"
    ");"
    "CREATE INDEX reservations_by_tenant ON reservations(tenant_id, state);"
    "CREATE INDEX reservations_open ON reservations(state) WHERE state = 'open';"
    "CREATE TRIGGER reservations_end_once BEFORE UPDATE ON reservations"
    "  WHEN OLD.state != 'open'"
    "  BEGIN SELECT RAISE(ABORT, 'a reservation ends exactly once'); END;"
    "CREATE TRIGGER reservations_append_only BEFORE DELETE ON reservations"
    "  BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;",
    /* 3: when the session's guest was stopped (destroy requested): the charge ends there, not
     * when extraction ends (issue 13). 0 for sessions that ended before this column. */
    "ALTER TABLE sessions ADD COLUMN stopped_usec INTEGER NOT NULL DEFAULT 0;",
    /* 4: events a session's workload made past [sessions] max_guest_events, only counted */
    "ALTER TABLE sessions ADD COLUMN events_suppressed INTEGER NOT NULL DEFAULT 0;",
    /* 5: a tenant can be removed (issue 30): removed_usec is when (0 while it is live). Its
     * row stays, for the ledger and its sessions' records that name it; its name is free
     * again for a new tenant, so names are unique among live tenants only. SQLite cannot
     * drop a column's UNIQUE: the table is rebuilt (its "12 steps", foreign keys off while
     * the tables are swapped: store_migrate). */
    "CREATE TABLE tenants_v5 ("
    "  id TEXT PRIMARY KEY,"
    "  name TEXT NOT NULL,"
    "  created_usec INTEGER NOT NULL,"
    "  bucket_level_milli INTEGER NOT NULL DEFAULT 0,"
    "  bucket_usec INTEGER NOT NULL DEFAULT 0,"
    "  removed_usec INTEGER NOT NULL DEFAULT 0 CHECK (removed_usec >= 0)"
    ");"
    "INSERT INTO tenants_v5 (id, name, created_usec, bucket_level_milli, bucket_usec)"
    "  SELECT id, name, created_usec, bucket_level_milli, bucket_usec FROM tenants;"
    "DROP TABLE tenants;"
    "ALTER TABLE tenants_v5 RENAME TO tenants;"
    "CREATE UNIQUE INDEX tenants_live_name ON tenants(name) WHERE removed_usec = 0;"
    "CREATE TRIGGER tenants_removed_once BEFORE UPDATE OF removed_usec ON tenants"
    "  WHEN OLD.removed_usec != 0"
    "  BEGIN SELECT RAISE(ABORT, 'a removal is never undone'); END;",
};

static const char *const stmt_sql[_STMT_MAX] = {
    [STMT_SESSION_INSERT] =
        "INSERT INTO sessions (id, tenant_id, kind, pool, state, end_reason, guest, created_usec,"
        " started_usec, ended_usec, timeout_usec, exit_code, output_bytes, artifact_bytes,"
        " artifact_files, artifacts_truncated, last_seq, spec, stopped_usec, events_suppressed)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20)",
    [STMT_SESSION_UPDATE] =
        "UPDATE sessions SET state=?5, end_reason=?6, guest=?7, started_usec=?9, ended_usec=?10,"
        " exit_code=?12, output_bytes=?13, artifact_bytes=?14, artifact_files=?15,"
        " artifacts_truncated=?16, last_seq=?17, stopped_usec=?19, events_suppressed=?20"
        " WHERE id=?1",
    [STMT_SESSION_GET] =
        "SELECT id, tenant_id, kind, pool, state, end_reason, guest, created_usec, started_usec,"
        " ended_usec, timeout_usec, exit_code, output_bytes, artifact_bytes, artifact_files,"
        " artifacts_truncated, last_seq, spec, stopped_usec, events_suppressed"
        " FROM sessions WHERE id=?1",
    [STMT_SESSION_DELETE] = "DELETE FROM sessions WHERE id=?1",
    [STMT_EVENT_APPEND] = "INSERT INTO events (session_id, seq, ts_usec, type, exec_id, data,"
                          " attrs) VALUES (?1,?2,?3,?4,?5,?6,?7)",
    [STMT_EVENTS_READ] = "SELECT seq, ts_usec, type, exec_id, data, attrs FROM events"
                         " WHERE session_id=?1 AND seq>?2 ORDER BY seq LIMIT ?3",
};

int
store_fail(Store *s, Error **errp, const char *what)
{
    int code = s && s->db ? sqlite3_extended_errcode(s->db) : SQLITE_ERROR;
    ErrorCategory cat = (code & 0xff) == SQLITE_FULL ? E_IO
                        : (code & 0xff) == SQLITE_BUSY ? E_UNAVAILABLE
                                                        : E_INTERNAL;
    return error_set(errp, cat, 0, "store: %s: %s", what,
                     s && s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(code));
}

int
store_exec(Store *s, const char *sql, Error **errp)
{
    if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return store_fail(s, errp, "exec");
    return 0;
}

sqlite3_stmt *
store_stmt(Store *s, StmtId id, Error **errp)
{
    if (!s->stmts[id] &&
        sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &s->stmts[id],
                           NULL) != SQLITE_OK) {
        store_fail(s, errp, "prepare");
        return NULL;
    }
    sqlite3_reset(s->stmts[id]);
    sqlite3_clear_bindings(s->stmts[id]);
    return s->stmts[id];
}

static int
store_user_version(Store *s, int *ret)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return -1;
    int r = sqlite3_step(st) == SQLITE_ROW ? 0 : -1;
    *ret = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return r;
}

/* After the migrations ran with foreign keys off: every reference must still hold. */
static int
store_foreign_keys_hold(Store *s, Error **errp)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA foreign_key_check", -1, &st, NULL) != SQLITE_OK)
        return store_fail(s, errp, "foreign key check");
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return error_set(errp, E_INTERNAL, 0, "store: a migration broke a foreign key");
    return rc == SQLITE_DONE ? 0 : store_fail(s, errp, "foreign key check");
}

/* Foreign keys are off while migrations run (the pragma is a no-op inside a transaction, so
 * it is set around them): a migration may rebuild a table others reference. The caller
 * turns them on again. */
static int
store_migrate(Store *s, Error **errp)
{
    int v;
    if (store_user_version(s, &v) < 0)
        return store_fail(s, errp, "read schema version");
    if (v > (int) ELEMENTSOF(migrations))
        return error_set(errp, E_INTERNAL, 0, "store: schema version %d is newer than this "
                         "stockaded (knows %zu); refusing to touch it", v, ELEMENTSOF(migrations));
    if (v == (int) ELEMENTSOF(migrations))
        return 0;
    if (store_exec(s, "PRAGMA foreign_keys=OFF", errp) < 0)
        return -1;
    for (; v < (int) ELEMENTSOF(migrations); v++) {
        char bump[64];
        snprintf(bump, sizeof(bump), "PRAGMA user_version=%d", v + 1);
        if (store_exec(s, "BEGIN IMMEDIATE", errp) < 0)
            return -1;
        if (store_exec(s, migrations[v], errp) < 0 || store_exec(s, bump, errp) < 0) {
            (void) store_exec(s, "ROLLBACK", NULL);
            return error_prefix(errp, "migrate schema to version %d", v + 1);
        }
        if (store_exec(s, "COMMIT", errp) < 0)
            return -1;
    }
    return store_foreign_keys_hold(s, errp);
}

int
store_open_conn(const char *path, bool readonly, Store **ret, Error **errp)
{
    Store *s = calloc(1, sizeof(*s));
    int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;

    if (!s)
        return error_set(errp, E_INTERNAL, ENOMEM, "store");
    if (sqlite3_open_v2(path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        store_fail(s, errp, path);
        store_close(s);
        return -1;
    }
    sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);
    const char *pragmas =
        readonly ? "PRAGMA foreign_keys=ON" : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;";
    if (store_exec(s, pragmas, errp) < 0 || (!readonly && store_migrate(s, errp) < 0) ||
        (!readonly && store_exec(s, "PRAGMA foreign_keys=ON", errp) < 0)) {
        store_close(s);
        return -1;
    }
    *ret = s;
    return 0;
}

int
store_open(const char *path, Store **ret, Error **errp)
{
    return store_open_conn(path, false, ret, errp);
}

void
store_close(Store *s)
{
    if (!s)
        return;
    for (int i = 0; i < _STMT_MAX; i++)
        sqlite3_finalize(s->stmts[i]);
    if (s->in_txn)
        (void) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close_v2(s->db);
    free(s);
}

int
store_begin(Store *s, Error **errp)
{
    if (s->in_txn)
        return 0;
    if (store_exec(s, "BEGIN IMMEDIATE", errp) < 0)
        return -1;
    s->in_txn = true;
    return 0;
}

int
store_commit(Store *s, Error **errp)
{
    if (!s->in_txn)
        return 0;
    s->in_txn = false; /* a failed COMMIT rolls back in WAL mode: the transaction is over */
    if (store_exec(s, "COMMIT", errp) < 0) {
        (void) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return 0;
}

bool
store_in_transaction(const Store *s)
{
    return s->in_txn;
}
