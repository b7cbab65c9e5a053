/* Inside the cluster module: the connection and the query helpers every file uses. */
#pragma once

#include <libpq-fe.h>
#include <pthread.h>

#include "cluster.h"
#include "cluster_keys.h"
#include "cluster_rows.h"
#include "macro.h"
#include "timeutil.h"

/* Now by the database's clock, in microseconds: every time of liveness is taken from it. */
#define DB_NOW_USEC "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
#define CLUSTER_PARAMS_MAX 12 /* the most parameters one statement binds */
#define CLUSTER_NUM_BYTES 24  /* an int64 as decimal text, with sign and NUL */
#define CLUSTER_CONNECT_TIMEOUT_S "5"
/* While the server is away, a reconnect is tried at most this often; calls in between fail
 * at once instead of each blocking the caller (the loop thread) for a connect. */
#define CLUSTER_RECONNECT_BACKOFF_USEC (1 * USEC_PER_SEC)
/* A reconnect that failed slowly (a server that accepts but does not answer: its connect
 * ran into connect_timeout) is not tried again for this many times as long as it took, so
 * a hung server holds the loop thread at most a fifth of the time, each wait bounded. */
#define CLUSTER_SLOW_RECONNECT_FACTOR 4
/* Migrations (cluster_open, before the daemon serves) may wait for another host's
 * migration at the schema lock and run DDL over big tables: their own, longer bound, and no
 * statement_timeout. */
#define CLUSTER_MIGRATE_ANSWER_TIMEOUT_USEC (600 * USEC_PER_SEC)

struct Cluster {
    PGconn *conn;
    uint64_t retry_after_usec;    /* monotonic: no reconnect before this */
    uint64_t answer_timeout_usec; /* CLUSTER_ANSWER_TIMEOUT_USEC, longer while migrating */
    ClusterConfig cfg;
    /* The keys derived from host_token_file (the secrets themselves are not kept). Read by
     * HTTP threads (a hop's credential) and the loop (envd tokens); replaced by
     * cluster_reload_credential(). */
    pthread_mutex_t keys_lock;
    ClusterKeys keys; /* under keys_lock */
};

static inline void
pg_clearp(PGresult **r)
{
    if (*r)
        PQclear(*r);
}
#define _cleanup_pgresult_ _cleanup_(pg_clearp)

/* Runs one statement with text parameters (NULL entries are SQL NULL). Resets a broken
 * connection once before it. *ret (may be NULL) gets the result of a statement that returns
 * rows. Errors: E_UNAVAILABLE when the server is away, E_CONFLICT for a unique or
 * exclusion violation and the ledger's triggers, E_INTERNAL otherwise. */
int cluster_query(Cluster *c, const char *sql, int n, const char *const *params, PGresult **ret,
                  Error **errp);
/* BEGIN / COMMIT / ROLLBACK. Rollback is best effort: the first error wins. */
int cluster_begin(Cluster *c, Error **errp);
int cluster_commit(Cluster *c, Error **errp);
void cluster_rollback(Cluster *c);

/* Decimal text of v in buf, returned. */
const char *cluster_num(char buf[CLUSTER_NUM_BYTES], int64_t v);
/* The column as an int64 (0 for NULL or non-numeric text: columns are BIGINT). */
int64_t cluster_get_i64(const PGresult *r, int row, int col);
/* The row's columns (at most CLUSTER_ROW_MAX_COLS) for the pure decoders of cluster_rows.c;
 * ret points into r. */
void cluster_row_at(const PGresult *r, int row, ClusterRow *ret);

/* Inserts or replaces the tenant's quota row, inside the caller's transaction (the tenant's
 * row must exist). */
int cluster_quota_upsert(Cluster *c, const char *tenant_id, const AdmitQuota *q, Error **errp);

/* The schema: each entry migrates from version i to i + 1 (cluster_schema.c). */
extern const char *const cluster_migrations[];
extern const size_t cluster_n_migrations;
