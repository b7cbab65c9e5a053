/* Quotas, admission and the reservation ledger in the cluster's database. See cluster.h.
 *
 * Exactness: cluster_admit() takes the tenant's row lock (SELECT ... FOR UPDATE) before it
 * reads anything the decision depends on, and holds it to COMMIT; every other admission of
 * the tenant, on any host, waits at that lock and then reads what this one wrote. Settlement
 * needs no lock: it only ends a reservation, which can never make an admission wrong. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"

#define CLUSTER_QUOTA_KEYS_MAX 8 /* the quotas table's columns (migration 1) */

static const char *const reservation_states[] = {
    [RESERVATION_OPEN] = "open",
    [RESERVATION_CHARGED] = "charged",
    [RESERVATION_RELEASED] = "released",
};

#define QUOTA_COLUMNS_BYTES 512

/* "max_sessions, wallet_guest_seconds, ...": the quota columns in admit_quota_keys order,
 * each after prefix ("" or a table alias with its dot). Built per call into the caller's
 * buffer: a Cluster may live on any thread. */
static const char *
quota_columns(char cols[QUOTA_COLUMNS_BYTES], const char *prefix)
{
    cols[0] = '\0';
    for (size_t i = 0, n = 0; i < admit_quota_n_keys && n < QUOTA_COLUMNS_BYTES; i++)
        n += (size_t) snprintf(cols + n, QUOTA_COLUMNS_BYTES - n, "%s%s%s", i ? ", " : "", prefix,
                               admit_quota_keys[i].name);
    return cols;
}

/* The quota columns of row `row` from column `col` on (quota_columns() order), checked:
 * the database is not trusted. */
static int
quota_from_row(const PGresult *r, int row, int col, const char *tenant_id, AdmitQuota *ret,
               Error **errp)
{
    AdmitQuota q = {0};
    for (size_t i = 0; i < admit_quota_n_keys; i++) {
        int64_t v = cluster_get_i64(r, row, col + (int) i);
        if (v < 0 || (uint64_t) v > admit_quota_keys[i].max)
            return error_set(errp, E_INTERNAL, 0, "quota %s of %.40s is out of range",
                             admit_quota_keys[i].name, tenant_id);
        *admit_quota_field(&q, &admit_quota_keys[i]) = (uint64_t) v;
    }
    *ret = q;
    return 0;
}

int
cluster_quota_get(Cluster *c, const char *tenant_id, AdmitQuota *ret, Error **errp)
{
    char sql[640], cols[QUOTA_COLUMNS_BYTES];
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {tenant_id};
    snprintf(sql, sizeof(sql), "SELECT %s FROM quotas WHERE tenant_id = $1",
             quota_columns(cols, ""));
    if (cluster_query(c, sql, 1, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1)
        return error_set(errp, E_NOT_FOUND, 0, "no quota for tenant %.40s", tenant_id);
    return quota_from_row(r, 0, 0, tenant_id, ret, errp);
}

int
cluster_quota_upsert(Cluster *c, const char *tenant_id, const AdmitQuota *q, Error **errp)
{
    char sql[1600], cols[QUOTA_COLUMNS_BYTES], vals[CLUSTER_QUOTA_KEYS_MAX][CLUSTER_NUM_BYTES];
    const char *p[1 + CLUSTER_QUOTA_KEYS_MAX] = {tenant_id};
    size_t n = (size_t) snprintf(sql, sizeof(sql), "INSERT INTO quotas (tenant_id, %s) VALUES ($1",
                                 quota_columns(cols, ""));
    if (admit_quota_n_keys > ELEMENTSOF(vals))
        return error_set(errp, E_INTERNAL, 0, "cluster: more quota keys than columns");
    for (size_t i = 0; i < admit_quota_n_keys; i++) {
        p[i + 1] = cluster_num(vals[i], (int64_t) admit_quota_get(q, &admit_quota_keys[i]));
        n += (size_t) snprintf(sql + n, sizeof(sql) - n, ", $%zu", i + 2);
    }
    n += (size_t) snprintf(sql + n, sizeof(sql) - n, ") ON CONFLICT (tenant_id) DO UPDATE SET ");
    for (size_t i = 0; i < admit_quota_n_keys; i++)
        n += (size_t) snprintf(sql + n, sizeof(sql) - n, "%s%s = EXCLUDED.%s", i ? ", " : "",
                               admit_quota_keys[i].name, admit_quota_keys[i].name);
    return cluster_query(c, sql, (int) admit_quota_n_keys + 1, p, NULL, errp);
}

static int
tenant_ensure(Cluster *c, const char *tenant_id, int64_t now_usec, Error **errp)
{
    char now[CLUSTER_NUM_BYTES];
    const char *p[] = {tenant_id, cluster_num(now, now_usec)};
    return cluster_query(c,
                         "INSERT INTO tenants (id, name, created_usec) VALUES ($1, $1, $2)"
                         " ON CONFLICT DO NOTHING",
                         2, p, NULL, errp);
}

int
cluster_quota_put(Cluster *c, const char *tenant_id, const AdmitQuota *q, int64_t now_usec,
                  Error **errp)
{
    if (cluster_begin(c, errp) < 0)
        return -1;
    if (tenant_ensure(c, tenant_id, now_usec, errp) < 0 ||
        cluster_quota_upsert(c, tenant_id, q, errp) < 0 || cluster_commit(c, errp) < 0) {
        cluster_rollback(c);
        return -1;
    }
    return 0;
}

/* Makes the tenant's row if the cluster has not seen it, then locks it: from here to the
 * end of the transaction no other admission of this tenant can read its usage. The same
 * statement reads the bucket and the tenant's quota row (*ret_quota: *fallback when it has
 * none): one round trip fewer while the lock is held. */
static int
tenant_lock(Cluster *c, const char *tenant_id, int64_t now_usec, const AdmitQuota *fallback,
            AdmitBucket *ret, AdmitQuota *ret_quota, Error **errp)
{
    char sql[768], cols[QUOTA_COLUMNS_BYTES];
    const char *p[] = {tenant_id};
    _cleanup_pgresult_ PGresult *r = NULL;
    snprintf(sql, sizeof(sql),
             "SELECT t.bucket_level_milli, t.bucket_usec, q.tenant_id IS NOT NULL,"
             " t.removed_usec, %s"
             " FROM tenants t LEFT JOIN quotas q ON q.tenant_id = t.id WHERE t.id = $1"
             " FOR UPDATE OF t",
             quota_columns(cols, "q."));
    if (tenant_ensure(c, tenant_id, now_usec, errp) < 0 ||
        cluster_query(c, sql, 1, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1)
        return error_set(errp, E_CONFLICT, 0, "tenant %.40s: its name is another's id", tenant_id);
    if (cluster_get_i64(r, 0, 3) != 0) /* removed: under this lock, so no admission after it */
        return error_set(errp, E_FORBIDDEN, 0, "tenant %.40s was removed", tenant_id);
    ret->level_milli = (uint64_t) MAX(cluster_get_i64(r, 0, 0), 0);
    ret->updated_usec = cluster_get_i64(r, 0, 1);
    if (strcmp(PQgetvalue(r, 0, 2), "t") != 0) {
        *ret_quota = *fallback;
        return 0;
    }
    return quota_from_row(r, 0, 4, tenant_id, ret_quota, errp);
}

static int
usage_read(Cluster *c, const char *tenant_id, AdmitUsage *u, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {tenant_id};
    if (cluster_query(c,
                      "SELECT count(*) FILTER (WHERE state = 'open'),"
                      " coalesce(sum(reserved_guest_s) FILTER (WHERE state = 'open'), 0),"
                      " coalesce(sum(charged_guest_s) FILTER (WHERE state <> 'open'), 0)"
                      " FROM reservations WHERE tenant_id = $1",
                      1, p, &r, errp) < 0)
        return -1;
    u->open_sessions = (uint64_t) MAX(cluster_get_i64(r, 0, 0), 0);
    u->reserved_guest_s = (uint64_t) MAX(cluster_get_i64(r, 0, 1), 0);
    u->charged_guest_s = (uint64_t) MAX(cluster_get_i64(r, 0, 2), 0);
    return 0;
}

/* The session's index row (owned by this host), its reservation and the bucket, in one
 * statement (one round trip while the tenant's row is locked). The reservation's foreign
 * key sees the index row its sibling inserted: both are the same statement's. */
static int
admit_write(Cluster *c, ReservationRecord *res, const AdmitBucket *b, Error **errp)
{
    char v[7][CLUSTER_NUM_BYTES];
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {res->session_id,
                       res->tenant_id,
                       c->cfg.host_id,
                       cluster_num(v[0], res->created_usec),
                       cluster_num(v[1], (int64_t) res->vcpus),
                       cluster_num(v[2], (int64_t) res->reserved_guest_s),
                       cluster_num(v[3], (int64_t) res->output_bytes),
                       cluster_num(v[4], (int64_t) res->workspace_bytes),
                       cluster_num(v[5], (int64_t) b->level_milli),
                       cluster_num(v[6], b->updated_usec)};
    if (cluster_query(
            c,
            "WITH s AS (INSERT INTO sessions (id, tenant_id, host_id, state, created_usec)"
            "  VALUES ($1, $2, $3, 'pending', $4::bigint) RETURNING id),"
            " b AS (UPDATE tenants SET bucket_level_milli = $9::bigint,"
            "  bucket_usec = $10::bigint WHERE id = $2)"
            " INSERT INTO reservations (tenant_id, session_id, vcpus, reserved_guest_s,"
            " output_bytes, workspace_bytes, created_usec)"
            " SELECT $2, s.id, $5::bigint, $6::bigint, $7::bigint, $8::bigint,"
            " $4::bigint FROM s RETURNING id",
            10, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1)
        return error_set(errp, E_INTERNAL, 0, "cluster: the reservation of %.64s was not written",
                         res->session_id);
    res->id = cluster_get_i64(r, 0, 0);
    res->state = RESERVATION_OPEN;
    return 0;
}

int
cluster_admit(Cluster *c, const AdmitQuota *fallback, const AdmitRequest *rq,
              uint64_t output_cap_bytes, int64_t now_usec, ReservationRecord *res,
              AdmitDecision *ret, Error **errp)
{
    AdmitQuota q;
    AdmitUsage u = {0};
    AdmitDecision d;

    if (cluster_begin(c, errp) < 0)
        return -1;
    /* The usage is read by a statement of its own after the lock is held: in READ COMMITTED
     * each statement sees what committed before it began, so it sees the admission that held
     * the lock before this one. Read in the locking statement it could be older. */
    if (tenant_lock(c, res->tenant_id, now_usec, fallback, &u.bucket, &q, errp) < 0 ||
        usage_read(c, res->tenant_id, &u, errp) < 0)
        goto fail_rollback;
    admit_decide(&q, &u, rq, now_usec, &d);
    if (d.refusal.limit_id != ADMIT_OK) {
        cluster_rollback(c); /* nothing to keep: the tenant's row, if new, comes next time */
        *ret = d;
        return 0;
    }
    res->vcpus = rq->vcpus;
    res->reserved_guest_s = d.reserve_guest_s;
    res->output_bytes = MIN(output_cap_bytes, q.output_bytes);
    res->workspace_bytes = q.workspace_bytes;
    res->created_usec = now_usec;
    if (admit_write(c, res, &d.bucket, errp) < 0 || cluster_commit(c, errp) < 0)
        goto fail_rollback;
    *ret = d;
    return 0;

fail_rollback:
    cluster_rollback(c);
    return -1;
}

/* ------------------------------------------------------------------ the ledger */

#define RES_COLUMNS                                                                                \
    "r.id, r.tenant_id, r.session_id, r.vcpus, r.reserved_guest_s, r.output_bytes,"                \
    " r.workspace_bytes, r.state, r.charged_guest_s, r.created_usec, r.ended_usec"

static void
row_to_reservation(const PGresult *r, int row, ReservationRecord *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->id = cluster_get_i64(r, row, 0);
    snprintf(ret->tenant_id, sizeof(ret->tenant_id), "%s", PQgetvalue(r, row, 1));
    snprintf(ret->session_id, sizeof(ret->session_id), "%s", PQgetvalue(r, row, 2));
    ret->vcpus = (uint64_t) MAX(cluster_get_i64(r, row, 3), 0);
    ret->reserved_guest_s = (uint64_t) MAX(cluster_get_i64(r, row, 4), 0);
    ret->output_bytes = (uint64_t) MAX(cluster_get_i64(r, row, 5), 0);
    ret->workspace_bytes = (uint64_t) MAX(cluster_get_i64(r, row, 6), 0);
    for (ReservationState i = RESERVATION_OPEN; i <= RESERVATION_RELEASED; i++)
        if (strcmp(PQgetvalue(r, row, 7), reservation_states[i]) == 0)
            ret->state = i;
    ret->charged_guest_s = (uint64_t) MAX(cluster_get_i64(r, row, 8), 0);
    ret->created_usec = cluster_get_i64(r, row, 9);
    ret->ended_usec = cluster_get_i64(r, row, 10);
}

int
cluster_reservation_for_session(Cluster *c, const char *session_id, ReservationRecord *ret,
                                Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {session_id};
    if (cluster_query(c, "SELECT " RES_COLUMNS " FROM reservations r WHERE r.session_id = $1", 1, p,
                      &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1)
        return error_set(errp, E_NOT_FOUND, 0, "no reservation for session %.40s", session_id);
    row_to_reservation(r, 0, ret);
    return 0;
}

int
cluster_reservation_end(Cluster *c, int64_t id, ReservationState state, uint64_t charged_guest_s,
                        int64_t ended_usec, Error **errp)
{
    char v[3][CLUSTER_NUM_BYTES];
    _cleanup_pgresult_ PGresult *r = NULL;
    if (state != RESERVATION_CHARGED && state != RESERVATION_RELEASED)
        return error_set(errp, E_INVALID, 0, "cluster: a reservation ends charged or released");
    const char *p[] = {cluster_num(v[0], id), reservation_states[state],
                       cluster_num(v[1], (int64_t) charged_guest_s), cluster_num(v[2], ended_usec)};
    /* One statement: the ledger and the index end together or not at all. */
    if (cluster_query(c,
                      "WITH r AS (UPDATE reservations SET state = $2, charged_guest_s = $3,"
                      " ended_usec = $4 WHERE id = $1 AND state = 'open' RETURNING session_id)"
                      " UPDATE sessions s SET state = 'ended', ended_usec = $4 FROM r"
                      " WHERE s.id = r.session_id RETURNING s.id",
                      4, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1)
        return error_set(errp, E_CONFLICT, 0, "reservation %lld is not open", (long long) id);
    return 0;
}

int
cluster_reservations_open(Cluster *c, ReservationRecord **ret, size_t *ret_n, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {c->cfg.host_id};
    if (cluster_query(c,
                      "SELECT " RES_COLUMNS " FROM reservations r JOIN sessions s"
                      " ON s.id = r.session_id WHERE r.state = 'open' AND s.host_id = $1"
                      " ORDER BY r.id",
                      1, p, &r, errp) < 0)
        return -1;
    size_t n = (size_t) PQntuples(r);
    ReservationRecord *v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        return error_set(errp, E_INTERNAL, ENOMEM, "cluster: reservations");
    for (size_t i = 0; i < n; i++)
        row_to_reservation(r, (int) i, &v[i]);
    *ret = v;
    *ret_n = n;
    return 0;
}
