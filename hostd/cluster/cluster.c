/* The connection, the query helpers, migrations and this host's row. See cluster.h. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "cluster_internal.h"
#include "fdutil.h"
#include "timeutil.h"

const char *
cluster_num(char buf[CLUSTER_NUM_BYTES], int64_t v)
{
    snprintf(buf, CLUSTER_NUM_BYTES, "%" PRId64, v);
    return buf;
}

int64_t
cluster_get_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

void
cluster_row_at(const PGresult *r, int row, ClusterRow *ret)
{
    *ret = (ClusterRow){.n_cols = MIN(PQnfields(r), CLUSTER_ROW_MAX_COLS)};
    for (int col = 0; col < ret->n_cols; col++) {
        if (PQgetisnull(r, row, col))
            continue;
        ret->value[col] = PQgetvalue(r, row, col);
        ret->len[col] = (size_t) MAX(PQgetlength(r, row, col), 0);
    }
}

/* A broken connection is reset (one try, bounded by connect_timeout), then not tried again
 * for CLUSTER_RECONNECT_BACKOFF_USEC, or CLUSTER_SLOW_RECONNECT_FACTOR times as long as a
 * failed try took: calls in between fail at once. */
static bool
connection_ok(Cluster *c)
{
    if (PQstatus(c->conn) == CONNECTION_OK)
        return true;
    uint64_t t0 = now_usec();
    if (t0 < c->retry_after_usec)
        return false;
    PQreset(c->conn); /* the server came back (or moved): one try, then the caller's error */
    bool ok = PQstatus(c->conn) == CONNECTION_OK;
    uint64_t now = now_usec();
    c->retry_after_usec = now + (ok ? CLUSTER_RECONNECT_BACKOFF_USEC
                                    : MAX(CLUSTER_RECONNECT_BACKOFF_USEC,
                                          CLUSTER_SLOW_RECONNECT_FACTOR * (now - t0)));
    return ok;
}

/* poll() on the connection's socket until deadline: > 0 ready, 0 the deadline passed. No
 * socket (libpq dropped it) is "ready": libpq's next call reports the loss at once. */
static int
socket_wait(PGconn *conn, short events, uint64_t deadline_usec)
{
    if (PQsocket(conn) < 0)
        return 1;
    for (;;) {
        uint64_t now = now_usec();
        if (now >= deadline_usec)
            return 0;
        struct pollfd p = {.fd = PQsocket(conn), .events = events};
        int r = poll(&p, 1, (int) ((deadline_usec - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC));
        if (r != 0 && !(r < 0 && errno == EINTR))
            return r < 0 ? 1 : r; /* an error: libpq's next read says what it is */
    }
}

/* No answer in time: the socket is shut down under libpq (which then sees the connection
 * closed and drops what it was waiting for, without blocking), so the connection is broken
 * and the next call resets it after the short backoff; the server sees the close and rolls
 * the transaction back (statement_timeout ends a statement it is still running). */
static int
connection_cut(Cluster *c, Error **errp)
{
    PGresult *r;
    (void) shutdown(PQsocket(c->conn), SHUT_RDWR);
    while (PQstatus(c->conn) == CONNECTION_OK && (r = PQgetResult(c->conn)))
        PQclear(r);
    c->retry_after_usec = now_usec() + CLUSTER_RECONNECT_BACKOFF_USEC;
    return error_set(errp, E_UNAVAILABLE, 0, "cluster database: no answer within %d s",
                     (int) (c->answer_timeout_usec / USEC_PER_SEC));
}

/* Drives the sent statement until its answer is in (0), or the deadline passed (-1). A
 * connection that fails on the way has its socket shut down too: libpq then answers its
 * error at once instead of waiting in PQgetResult. */
static int
answer_wait(PGconn *conn, uint64_t deadline_usec)
{
    int flushed;
    while ((flushed = PQflush(conn)) == 1) /* a big statement on a full socket */
        if (!socket_wait(conn, POLLIN | POLLOUT, deadline_usec))
            return -1;
        else if (!PQconsumeInput(conn))
            break;
    while (flushed == 0 && PQisBusy(conn))
        if (!socket_wait(conn, POLLIN, deadline_usec))
            return -1;
        else if (!PQconsumeInput(conn))
            break;
    if (flushed != 0 || PQisBusy(conn))
        (void) shutdown(PQsocket(conn), SHUT_RDWR);
    return 0;
}

/* PQexecParams (params, or NULL with n = 0 for the simple protocol: several statements, as
 * a migration is) with a deadline of c->answer_timeout_usec for all of it: sending, and
 * every result. *ret gets what PQexec would return: the first error, else the last result;
 * NULL if none came (the connection failed: PQerrorMessage says why). -1 (E_UNAVAILABLE)
 * only when the deadline passed: the connection is then cut (connection_cut). */
static int
exec_bounded(Cluster *c, const char *sql, int n, const char *const *params, PGresult **ret,
             Error **errp)
{
    uint64_t deadline = now_usec() + c->answer_timeout_usec;
    PGresult *last = NULL, *r;

    *ret = NULL;
    if (PQsetnonblocking(c->conn, 1) < 0 ||
        !(params ? PQsendQueryParams(c->conn, sql, n, NULL, params, NULL, NULL, 0)
                 : PQsendQuery(c->conn, sql)))
        return 0;
    for (;;) {
        if (answer_wait(c->conn, deadline) < 0) {
            PQclear(last);
            return connection_cut(c, errp);
        }
        if (!(r = PQgetResult(c->conn)))
            break;
        if (last && PQresultStatus(last) == PGRES_FATAL_ERROR) {
            PQclear(r); /* the first error wins */
        } else {
            PQclear(last);
            last = r;
        }
    }
    *ret = last;
    return 0;
}

/* The category of a failed statement: the server's SQLSTATE says whether it is away, or
 * too slow to answer in time (57014: statement_timeout). */
static ErrorCategory
result_category(Cluster *c, const PGresult *r)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (PQstatus(c->conn) != CONNECTION_OK || !state || strncmp(state, "08", 2) == 0 ||
        strncmp(state, "57P", 3) == 0 || strcmp(state, "57014") == 0)
        return E_UNAVAILABLE;
    if (strcmp(state, "23505") == 0 || strcmp(state, "23P01") == 0 || strcmp(state, "P0001") == 0)
        return E_CONFLICT;
    return E_INTERNAL;
}

static int
query_fail(Cluster *c, const PGresult *r, Error **errp)
{
    const char *msg = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!msg)
        msg = PQerrorMessage(c->conn);
    return error_set(errp, result_category(c, r), 0, "cluster database: %.300s", msg);
}

int
cluster_query(Cluster *c, const char *sql, int n, const char *const *params, PGresult **ret,
              Error **errp)
{
    /* A broken connection holds no transaction (its status is PQTRANS_UNKNOWN, not idle):
     * the caller stopped at the statement that found it broken, so this call starts afresh
     * and may reconnect; without this a server that went away was never reconnected to. */
    bool idle = PQstatus(c->conn) != CONNECTION_OK || PQtransactionStatus(c->conn) == PQTRANS_IDLE;
    if (idle && !connection_ok(c))
        return error_set(errp, E_UNAVAILABLE, 0, "cluster database unreachable: %.300s",
                         PQerrorMessage(c->conn));
    _cleanup_pgresult_ PGresult *r = NULL;
    if (exec_bounded(c, sql, n, params ? params : (const char *const[]){NULL}, &r, errp) < 0)
        return -1;
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    /* The server restarted since the last call: outside a transaction nothing was lost with
     * the old connection, so reconnect and run the statement once more. */
    if (st == PGRES_FATAL_ERROR && idle && PQstatus(c->conn) != CONNECTION_OK && connection_ok(c)) {
        PQclear(TAKE_PTR(r));
        if (exec_bounded(c, sql, n, params ? params : (const char *const[]){NULL}, &r, errp) < 0)
            return -1;
        st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    }
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        return query_fail(c, r, errp);
    if (ret)
        *ret = TAKE_PTR(r);
    return 0;
}

int
cluster_begin(Cluster *c, Error **errp)
{
    return cluster_query(c, "BEGIN", 0, NULL, NULL, errp);
}

int
cluster_commit(Cluster *c, Error **errp)
{
    return cluster_query(c, "COMMIT", 0, NULL, NULL, errp);
}

void
cluster_rollback(Cluster *c)
{
    PGresult *r = NULL;
    if (PQstatus(c->conn) == CONNECTION_OK && PQtransactionStatus(c->conn) != PQTRANS_IDLE &&
        exec_bounded(c, "ROLLBACK", 0, NULL, &r, NULL) == 0)
        PQclear(r);
}

/* ------------------------------------------------------------------ schema */

int
cluster_schema_latest(void)
{
    return (int) cluster_n_migrations;
}

int
cluster_schema_version(Cluster *c, int *ret, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    if (cluster_query(c, "SELECT to_regclass('schema_version') IS NOT NULL", 0, NULL, &r, errp) < 0)
        return -1;
    if (strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
        *ret = 0;
        return 0;
    }
    PQclear(TAKE_PTR(r));
    if (cluster_query(c, "SELECT coalesce(max(version), 0) FROM schema_version", 0, NULL, &r,
                      errp) < 0)
        return -1;
    *ret = (int) cluster_get_i64(r, 0, 0);
    return 0;
}

/* One migration and its version row, in one transaction. */
static int
migrate_one(Cluster *c, size_t i, Error **errp)
{
    char v[CLUSTER_NUM_BYTES], now[CLUSTER_NUM_BYTES];
    const char *p[] = {cluster_num(v, (int64_t) i + 1), cluster_num(now, (int64_t) wall_usec()),
                       c->cfg.host_id};
    if (cluster_begin(c, errp) < 0)
        return -1;
    _cleanup_pgresult_ PGresult *r = NULL;
    if (exec_bounded(c, cluster_migrations[i], 0, NULL, &r, errp) < 0) {
        cluster_rollback(c);
        return error_prefix(errp, "schema migration %zu", i + 1);
    }
    if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
        query_fail(c, r, errp);
        cluster_rollback(c);
        return error_prefix(errp, "schema migration %zu", i + 1);
    }
    if (cluster_query(c,
                      "INSERT INTO schema_version (version, applied_usec, host_id)"
                      " VALUES ($1, $2, $3)",
                      3, p, NULL, errp) < 0 ||
        cluster_commit(c, errp) < 0) {
        cluster_rollback(c);
        return -1;
    }
    return 0;
}

static int
migrate_locked(Cluster *c, Error **errp)
{
    int have;
    if (cluster_query(c,
                      "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
                      " applied_usec BIGINT NOT NULL, host_id TEXT NOT NULL)",
                      0, NULL, NULL, errp) < 0 ||
        cluster_schema_version(c, &have, errp) < 0)
        return -1;
    if (have > cluster_schema_latest()) /* a newer build migrated it: do not guess */
        return error_set(errp, E_INVALID, 0,
                         "cluster database schema is version %d, this build knows %d", have,
                         cluster_schema_latest());
    for (size_t i = (size_t) have; i < cluster_n_migrations; i++)
        if (migrate_one(c, i, errp) < 0)
            return -1;
    return 0;
}

/* The advisory lock makes every other host wait here while one migrates; each then finds
 * the version current and does nothing. It is a session lock: a host that dies mid-way
 * drops it with its connection, and its half-done migration rolled back with it. */
int
cluster_migrate(Cluster *c, Error **errp)
{
    char key[CLUSTER_NUM_BYTES];
    const char *p[] = {cluster_num(key, CLUSTER_SCHEMA_LOCK_KEY)};
    PGresult *res = NULL;
    int r = -1;

    c->answer_timeout_usec = CLUSTER_MIGRATE_ANSWER_TIMEOUT_USEC;
    if (cluster_query(c, "SET statement_timeout = 0", 0, NULL, NULL, errp) == 0 &&
        cluster_query(c, "SELECT pg_advisory_lock($1)", 1, p, NULL, errp) == 0) {
        r = migrate_locked(c, errp);
        if (exec_bounded(c, "SELECT pg_advisory_unlock($1)", 1, p, &res, NULL) == 0)
            PQclear(res);
    }
    c->answer_timeout_usec = CLUSTER_ANSWER_TIMEOUT_USEC;
    if (PQstatus(c->conn) == CONNECTION_OK &&
        exec_bounded(c, "RESET statement_timeout", 0, NULL, &res, NULL) == 0)
        PQclear(res);
    return r;
}

/* ------------------------------------------------------------------ connection */

/* The server's NOTICEs ("relation already exists, skipping") are not ours to print: libpq's
 * default writes them to stderr. Errors reach the caller through Error. */
static void
notice_ignore(void *arg, const char *message)
{
    (void) arg;
    (void) message;
}

/* Registers this host, or makes it live again after a takeover: a new start, a heartbeat
 * now, no longer lost, and alive since now (it may take others over only after a lease). */
int
cluster_rejoin(Cluster *c, Error **errp)
{
    char now[CLUSTER_NUM_BYTES];
    const char *p[] = {c->cfg.host_id, c->cfg.advertise_url,
                       cluster_num(now, (int64_t) wall_usec())};
    return cluster_query(c,
                         "INSERT INTO hosts (id, url, started_usec, heartbeat_usec,"
                         " alive_since_usec) VALUES ($1, $2, $3, " DB_NOW_USEC ", " DB_NOW_USEC
                         ") ON CONFLICT (id) DO UPDATE SET url = $2, started_usec = $3,"
                         " heartbeat_usec = EXCLUDED.heartbeat_usec, alive_since_usec ="
                         " EXCLUDED.alive_since_usec, lost_usec = 0, lost_by = ''",
                         3, p, NULL, errp);
}

/* The host-to-host credential: a secret, so the file must be the daemon's alone (no group
 * or other bits). Its text (one secret a line, cluster_keys.h) is wiped once its keys are
 * derived. */
static int
host_keys_read(const char *path, ClusterKeys *ret, Error **errp)
{
    struct stat st;
    char *text = NULL;
    size_t len;

    if (stat(path, &st) < 0)
        return error_set(errp, E_INVALID, errno, "host_token_file %.200s", path);
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077))
        return error_set(errp, E_INVALID, 0,
                         "host_token_file %.200s must be a regular file of mode 0600 or less",
                         path);
    if (read_file_bounded(path, CLUSTER_TOKEN_FILE_MAX_BYTES, &text, &len) < 0)
        return error_set(errp, E_INVALID, errno, "host_token_file %.200s", path);
    int r = cluster_keys_parse(text, len, ret, errp);
    explicit_bzero(text, len);
    free(text);
    return r < 0 ? error_prefix(errp, "host_token_file %.200s", path) : 0;
}

int
cluster_reload_credential(Cluster *c, Error **errp)
{
    ClusterKeys k;
    if (host_keys_read(c->cfg.host_token_file, &k, errp) < 0)
        return -1; /* the keys in use stay */
    pthread_mutex_lock(&c->keys_lock);
    c->keys = k;
    pthread_mutex_unlock(&c->keys_lock);
    cluster_keys_wipe(&k);
    return 0;
}

int
cluster_connect(const ClusterConfig *cfg, Cluster **ret, Error **errp)
{
    if (cluster_config_check(cfg, errp) < 0)
        return -1;
    if (!cluster_config_enabled(cfg))
        return error_set(errp, E_INVALID, 0, "not a cluster: [cluster] database is empty");
    _cleanup_cluster_ Cluster *c = calloc(1, sizeof(*c));
    if (!c)
        return error_set(errp, E_INTERNAL, ENOMEM, "cluster");
    c->cfg = *cfg;
    pthread_mutex_init(&c->keys_lock, NULL);
    if (host_keys_read(cfg->host_token_file, &c->keys, errp) < 0)
        return -1;
    char *parse_err = NULL;
    PQconninfoOption *opts = PQconninfoParse(cfg->database, &parse_err);
    if (!opts) {
        error_set(errp, E_INVALID, 0, "[cluster] database: %.200s",
                  parse_err ? parse_err : "out of memory");
        PQfreemem(parse_err);
        return -1;
    }
    PQconninfoFree(opts);
    /* Our defaults first: the expanded conninfo (dbname) comes after and overrides them.
     * Keepalives find a server gone while the connection was idle (the next call reconnects
     * instead of waiting out its bound), tcp_user_timeout bounds bytes the peer never
     * acknowledges; both TCP only (ignored on a unix socket). */
    char options[64], user_timeout[CLUSTER_NUM_BYTES];
    snprintf(options, sizeof(options), "-c statement_timeout=%d", CLUSTER_STATEMENT_TIMEOUT_MS);
    cluster_num(user_timeout, CLUSTER_ANSWER_TIMEOUT_USEC / USEC_PER_MSEC);
    const char *keys[] = {"connect_timeout",  "application_name",
                          "options",          "keepalives",
                          "keepalives_idle",  "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout",
                          "dbname",           NULL};
    const char *vals[] = {CLUSTER_CONNECT_TIMEOUT_S,
                          "stockaded",
                          options,
                          "1",
                          "10",
                          "2",
                          "3",
                          user_timeout,
                          cfg->database,
                          NULL};
    c->answer_timeout_usec = CLUSTER_ANSWER_TIMEOUT_USEC;
    c->conn = PQconnectdbParams(keys, vals, 1);
    if (!c->conn)
        return error_set(errp, E_INTERNAL, ENOMEM, "cluster connection");
    if (PQstatus(c->conn) != CONNECTION_OK)
        return error_set(errp, E_UNAVAILABLE, 0, "cluster database: %.300s",
                         PQerrorMessage(c->conn));
    PQsetNoticeProcessor(c->conn, notice_ignore, NULL);
    *ret = TAKE_PTR(c);
    return 0;
}

int
cluster_open(const ClusterConfig *cfg, Cluster **ret, Error **errp)
{
    _cleanup_cluster_ Cluster *c = NULL;
    if (cluster_connect(cfg, &c, errp) < 0 || cluster_migrate(c, errp) < 0 ||
        cluster_rejoin(c, errp) < 0)
        return -1;
    *ret = TAKE_PTR(c);
    return 0;
}

void
cluster_free(Cluster *c)
{
    if (!c)
        return;
    if (c->conn)
        PQfinish(c->conn);
    cluster_keys_wipe(&c->keys);
    pthread_mutex_destroy(&c->keys_lock);
    free(c);
}
