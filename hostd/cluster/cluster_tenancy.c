/* The cluster's tenants and tokens: the admin writes and the pull every host keeps its copy
 * with. See cluster.h.
 *
 * Why a lock and a sequence: a host pulls "every row whose change number is after the last
 * one I saw". Numbers from a sequence alone are taken in one order and committed in another,
 * so a pull could see 7 before 6 commits and never look back. Every writer here takes
 * CLUSTER_TENANCY_LOCK_KEY (a transaction advisory lock) before it numbers its rows, and the
 * lock is released only once its commit is visible: a snapshot that sees number N sees every
 * number below it. Admin writes are rare; admission never takes this lock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"

#define NEXT_CHANGE "nextval('tenancy_changes')"

/* A text column into dst (cap bytes with its NUL); false when it does not fit. */
static bool
copy_bounded(char *dst, size_t cap, const PGresult *r, int row, int col)
{
    int len = PQgetlength(r, row, col);
    if (len < 0 || (size_t) len >= cap)
        return false;
    memcpy(dst, PQgetvalue(r, row, col), (size_t) len + 1);
    return strlen(dst) == (size_t) len; /* no NUL inside */
}

/* BEGIN, then the writers' lock (held to COMMIT or ROLLBACK). */
static int
change_begin(Cluster *c, Error **errp)
{
    char key[CLUSTER_NUM_BYTES];
    const char *p[] = {cluster_num(key, CLUSTER_TENANCY_LOCK_KEY)};
    if (cluster_begin(c, errp) < 0)
        return -1;
    if (cluster_query(c, "SELECT pg_advisory_xact_lock($1)", 1, p, NULL, errp) < 0) {
        cluster_rollback(c);
        return -1;
    }
    return 0;
}

static int
change_commit(Cluster *c, int r, Error **errp)
{
    if (r == 0 && cluster_commit(c, errp) == 0)
        return 0;
    cluster_rollback(c);
    return -1;
}

static int
token_write(Cluster *c, const TokenRecord *t, Error **errp)
{
    char hash[SHA256_HEX_BYTES + 1], created[CLUSTER_NUM_BYTES];
    hex_encode(t->hash, SHA256_BYTES, hash);
    const char *p[] = {t->id, t->tenant_id, hash, t->admin ? "true" : "false",
                       cluster_num(created, t->created_usec)};
    return cluster_query(c,
                         "INSERT INTO tokens (id, tenant_id, hash, admin, created_usec,"
                         " changed_seq) VALUES ($1, $2, decode($3, 'hex'), $4, $5, " NEXT_CHANGE
                         ")",
                         5, p, NULL, errp);
}

int
cluster_tenant_create(Cluster *c, const TenantRecord *t, const AdmitQuota *q,
                      const TokenRecord *tok, Error **errp)
{
    char created[CLUSTER_NUM_BYTES];
    const char *p[] = {t->id, t->name, cluster_num(created, t->created_usec)};
    if (change_begin(c, errp) < 0)
        return -1;
    int r = cluster_query(c,
                          "INSERT INTO tenants (id, name, created_usec, changed_seq)"
                          " VALUES ($1, $2, $3, " NEXT_CHANGE ")",
                          3, p, NULL, errp);
    if (r == 0 && q)
        r = cluster_quota_upsert(c, t->id, q, errp);
    if (r == 0)
        r = token_write(c, tok, errp);
    return change_commit(c, r, errp);
}

/* The tenant's row with a change number, unless it has one: a tenant the cluster knows only
 * from admission (named by its id, number 0) gets its name and is sent to every host with
 * its token. The built-in tenant is every host's already. */
static int
tenant_publish(Cluster *c, const TenantRecord *t, Error **errp)
{
    char created[CLUSTER_NUM_BYTES];
    const char *p[] = {t->id, t->name, cluster_num(created, t->created_usec), STORE_TENANT_DEFAULT};
    return cluster_query(c,
                         "INSERT INTO tenants (id, name, created_usec, changed_seq)"
                         " VALUES ($1, $2, $3, " NEXT_CHANGE ") ON CONFLICT (id) DO UPDATE"
                         " SET name = EXCLUDED.name, changed_seq = EXCLUDED.changed_seq"
                         " WHERE tenants.changed_seq = 0 AND tenants.id <> $4",
                         4, p, NULL, errp);
}

/* E_CONFLICT when the cluster has the tenant removed. */
static int
tenant_is_live(Cluster *c, const char *id, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {id};
    if (cluster_query(c, "SELECT removed_usec FROM tenants WHERE id = $1", 1, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) == 1 && cluster_get_i64(r, 0, 0) != 0)
        return error_set(errp, E_CONFLICT, 0, "tenant %.40s was removed", id);
    return 0;
}

int
cluster_token_insert(Cluster *c, const TenantRecord *tenant, const TokenRecord *tok, Error **errp)
{
    if (change_begin(c, errp) < 0)
        return -1;
    int r = tenant_publish(c, tenant, errp);
    if (r == 0)
        r = tenant_is_live(c, tenant->id, errp);
    if (r == 0)
        r = token_write(c, tok, errp);
    return change_commit(c, r, errp);
}

/* The tenant's row, locked as admission locks it; E_NOT_FOUND if the cluster has none. */
static int
tenant_lock_row(Cluster *c, const char *id, TenantRecord *ret, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {id};
    if (cluster_query(c,
                      "SELECT name, created_usec, removed_usec FROM tenants WHERE id = $1"
                      " FOR UPDATE",
                      1, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1)
        return error_set(errp, E_NOT_FOUND, 0, "the cluster has no tenant %.40s", id);
    TenantRecord t = {.created_usec = cluster_get_i64(r, 0, 1),
                      .removed_usec = cluster_get_i64(r, 0, 2)};
    snprintf(t.id, sizeof(t.id), "%s", id);
    if (!copy_bounded(t.name, sizeof(t.name), r, 0, 0))
        return error_set(errp, E_INTERNAL, 0, "cluster: tenant %.40s: name too long", id);
    *ret = t;
    return 0;
}

static int
tenant_open_reservations(Cluster *c, const char *id, uint64_t *ret, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {id};
    if (cluster_query(c,
                      "SELECT count(*) FROM reservations WHERE tenant_id = $1 AND state = 'open'",
                      1, p, &r, errp) < 0)
        return -1;
    *ret = (uint64_t) MAX(cluster_get_i64(r, 0, 0), 0);
    return 0;
}

/* The removal itself: the tenant numbered once (its first removal time stays), then each of
 * its tokens not yet revoked, each numbered, so the pull carries every one. */
static int
tenant_mark_removed(Cluster *c, ClusterTenantRemoval *x, int64_t now_usec, Error **errp)
{
    char now[CLUSTER_NUM_BYTES];
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {x->tenant.id, cluster_num(now, now_usec > 0 ? now_usec : 1)};
    if (x->tenant.removed_usec == 0) {
        if (cluster_query(c,
                          "UPDATE tenants SET removed_usec = $2, changed_seq = " NEXT_CHANGE
                          " WHERE id = $1 AND removed_usec = 0",
                          2, p, NULL, errp) < 0)
            return -1;
        x->tenant.removed_usec = now_usec > 0 ? now_usec : 1;
    }
    if (cluster_query(c,
                      "UPDATE tokens SET revoked_usec = $2, changed_seq = " NEXT_CHANGE
                      " WHERE tenant_id = $1 AND revoked_usec = 0 RETURNING id",
                      2, p, &r, errp) < 0)
        return -1;
    x->tokens_revoked = (size_t) PQntuples(r);
    x->removed = true;
    return 0;
}

int
cluster_tenant_remove(Cluster *c, const char *id, int64_t now_usec, bool with_open,
                      ClusterTenantRemoval *ret, Error **errp)
{
    ClusterTenantRemoval x = {0};
    if (strcmp(id, STORE_TENANT_DEFAULT) == 0)
        return error_set(errp, E_CONFLICT, 0, "the built-in tenant '%s' cannot be removed", id);
    if (change_begin(c, errp) < 0)
        return -1;
    int r = tenant_lock_row(c, id, &x.tenant, errp);
    if (r == 0)
        r = tenant_open_reservations(c, id, &x.open_sessions, errp);
    if (r == 0 && (with_open || x.open_sessions == 0 || x.tenant.removed_usec != 0))
        r = tenant_mark_removed(c, &x, now_usec, errp);
    if (change_commit(c, r, errp) < 0)
        return -1;
    *ret = x;
    return 0;
}

int
cluster_token_revoke(Cluster *c, const char *id, int64_t now_usec, TokenRecord *ret, Error **errp)
{
    char now[CLUSTER_NUM_BYTES];
    const char *p[] = {id, cluster_num(now, now_usec)};
    _cleanup_pgresult_ PGresult *r = NULL;
    if (change_begin(c, errp) < 0)
        return -1;
    /* The update numbers the row only when it revokes; a token revoked before keeps its
     * first time. Either way the row comes back (the statement's snapshot is from before
     * the update, so the second half finds only an earlier revocation). */
    int rc = cluster_query(
        c,
        "WITH revoked AS (UPDATE tokens SET revoked_usec = $2, changed_seq = " NEXT_CHANGE
        " WHERE id = $1 AND revoked_usec = 0 RETURNING"
        " tenant_id, admin, created_usec, revoked_usec)"
        " SELECT * FROM revoked UNION ALL SELECT tenant_id, admin,"
        " created_usec, revoked_usec FROM tokens"
        " WHERE id = $1 AND revoked_usec <> 0",
        2, p, &r, errp);
    if (change_commit(c, rc, errp) < 0)
        return -1;
    if (PQntuples(r) < 1)
        return error_set(errp, E_NOT_FOUND, 0, "the cluster has no token %.40s", id);
    TokenRecord t = {.admin = strcmp(PQgetvalue(r, 0, 1), "t") == 0,
                     .created_usec = cluster_get_i64(r, 0, 2),
                     .revoked_usec = cluster_get_i64(r, 0, 3)};
    snprintf(t.id, sizeof(t.id), "%s", id);
    if (!copy_bounded(t.tenant_id, sizeof(t.tenant_id), r, 0, 0))
        return error_set(errp, E_INTERNAL, 0, "cluster: token %.40s: tenant id too long", id);
    *ret = t;
    return 0;
}

/* ------------------------------------------------------------------ pull */

/* Nothing came after after_seq: if the sequence itself is below it, the database was put
 * back (restored from a backup, made anew) and numbers will be handed out again: *ret_rewound,
 * and the caller pulls everything. */
static int
sequence_rewound(Cluster *c, int64_t after_seq, bool *ret_rewound, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    if (cluster_query(c,
                      "SELECT CASE WHEN is_called THEN last_value ELSE 0 END"
                      " FROM tenancy_changes",
                      0, NULL, &r, errp) < 0)
        return -1;
    *ret_rewound = PQntuples(r) == 1 && cluster_get_i64(r, 0, 0) < after_seq;
    return 0;
}

int
cluster_tenancy_pull(Cluster *c, int64_t after_seq, ClusterTenancy *ret, Error **errp)
{
    char after[CLUSTER_NUM_BYTES], limit[CLUSTER_NUM_BYTES];
    const char *p[] = {cluster_num(after, after_seq),
                       cluster_num(limit, CLUSTER_TENANCY_PULL_MAX_ROWS)};
    _cleanup_pgresult_ PGresult *r = NULL;
    if (cluster_query(c,
                      "SELECT 't', id, name, '', false, created_usec, removed_usec, changed_seq"
                      " FROM tenants"
                      " WHERE changed_seq > $1 UNION ALL SELECT 'k', id, tenant_id,"
                      " encode(hash, 'hex'), admin, created_usec, revoked_usec, changed_seq"
                      " FROM tokens WHERE changed_seq > $1 ORDER BY 8 LIMIT $2",
                      2, p, &r, errp) < 0)
        return -1;
    int n = PQntuples(r);
    ClusterTenancy t = {.last_seq = after_seq, .more = n >= CLUSTER_TENANCY_PULL_MAX_ROWS};
    t.tenants = calloc((size_t) n + 1, sizeof(*t.tenants));
    t.tokens = calloc((size_t) n + 1, sizeof(*t.tokens));
    if (!t.tenants || !t.tokens) {
        cluster_tenancy_clear(&t);
        return error_set(errp, E_INTERNAL, ENOMEM, "cluster: tenants and tokens");
    }
    for (int i = 0; i < n && i < CLUSTER_TENANCY_PULL_MAX_ROWS; i++) {
        ClusterRow row;
        cluster_row_at(r, i, &row);
        if (!cluster_tenancy_row_decode(&row, &t))
            t.n_invalid++;
        t.last_seq = MAX(t.last_seq, cluster_get_i64(r, i, 7));
    }
    if (n == 0 && after_seq > 0 && sequence_rewound(c, after_seq, &t.rewound, errp) < 0) {
        cluster_tenancy_clear(&t);
        return -1;
    }
    if (t.rewound)
        t.last_seq = 0;
    *ret = t;
    return 0;
}

void
cluster_tenancy_clear(ClusterTenancy *t)
{
    free(t->tenants);
    free(t->tokens);
    *t = (ClusterTenancy){0};
}
