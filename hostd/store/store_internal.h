/* Internal to hostd/store. */
#pragma once

#include <sqlite3.h>

#include "store.h"

typedef enum {
    STMT_SESSION_INSERT,
    STMT_SESSION_UPDATE,
    STMT_SESSION_GET,
    STMT_SESSION_DELETE,
    STMT_EVENT_APPEND,
    STMT_EVENTS_READ,
    _STMT_MAX,
} StmtId;

struct Store {
    sqlite3 *db;
    bool in_txn;
    sqlite3_stmt *stmts[_STMT_MAX];
};

/* Prepared once per connection, reset before returning. */
sqlite3_stmt *store_stmt(Store *s, StmtId id, Error **errp);
int store_fail(Store *s, Error **errp, const char *what);
/* Runs SQL without results. */
int store_exec(Store *s, const char *sql, Error **errp);
/* One-off statements (store_tenants.c): prepare, and step one that returns no row, then
 * finalize it (E_CONFLICT on a constraint violation). */
sqlite3_stmt *store_prepare(Store *s, const char *sql, Error **errp);
int store_run(Store *s, sqlite3_stmt *st, const char *what, Error **errp);
/* Opens a connection with the daemon's pragmas; readonly connections skip the schema. */
int store_open_conn(const char *path, bool readonly, Store **ret, Error **errp);
