/* Tenants, quotas, usage and savepoints. See store_tenants.h. Statements are prepared per
 * call: none of this is on a hot path (an admission is a handful of indexed queries). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "store_tenants.h"

#define SAVEPOINT_NAME "admit"

int
store_savepoint(Store *s, Error **errp)
{
    if (store_begin(s, errp) < 0)
        return -1;
    return store_exec(s, "SAVEPOINT " SAVEPOINT_NAME, errp);
}

int
store_savepoint_release(Store *s, Error **errp)
{
    return store_exec(s, "RELEASE " SAVEPOINT_NAME, errp);
}

void
store_savepoint_rollback(Store *s)
{
    (void) sqlite3_exec(s->db, "ROLLBACK TO " SAVEPOINT_NAME "; RELEASE " SAVEPOINT_NAME, NULL,
                        NULL, NULL);
}

sqlite3_stmt *
store_prepare(Store *s, const char *sql, Error **errp)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        store_fail(s, errp, "prepare");
        return NULL;
    }
    return st;
}

/* Steps a statement that returns no row, finalizes it; E_CONFLICT on a constraint. */
int
store_run(Store *s, sqlite3_stmt *st, const char *what, Error **errp)
{
    int rc = sqlite3_step(st);
    int r = 0;
    if (rc != SQLITE_DONE)
        r = (rc & 0xff) == SQLITE_CONSTRAINT
                ? error_set(errp, E_CONFLICT, 0, "store: %s: %s", what, sqlite3_errmsg(s->db))
                : store_fail(s, errp, what);
    sqlite3_finalize(st);
    return r;
}

static void
copy_col(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", t ? (const char *) t : "");
}

/* ------------------------------------------------------------------ tenants */

#define TENANT_COLUMNS "id, name, created_usec, removed_usec"

int
store_tenant_insert(Store *s, const TenantRecord *t, const AdmitQuota *q, Error **errp)
{
    sqlite3_stmt *st = store_prepare(
        s, "INSERT INTO tenants (id, name, created_usec, removed_usec) VALUES (?1, ?2, ?3, ?4)",
        errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, t->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, t->created_usec);
    sqlite3_bind_int64(st, 4, t->removed_usec);
    if (store_run(s, st, "insert tenant (is the name taken?)", errp) < 0)
        return -1;
    return q ? store_quota_put(s, t->id, q, errp) : 0;
}

static void
row_to_tenant(sqlite3_stmt *st, TenantRecord *t)
{
    memset(t, 0, sizeof(*t));
    copy_col(t->id, sizeof(t->id), st, 0);
    copy_col(t->name, sizeof(t->name), st, 1);
    t->created_usec = sqlite3_column_int64(st, 2);
    t->removed_usec = sqlite3_column_int64(st, 3);
}

int
store_tenant_get(Store *s, const char *id, TenantRecord *ret, Error **errp)
{
    sqlite3_stmt *st =
        store_prepare(s, "SELECT " TENANT_COLUMNS " FROM tenants WHERE id = ?1", errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        row_to_tenant(st, ret);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? error_set(errp, E_NOT_FOUND, 0, "no tenant %.40s", id)
                             : store_fail(s, errp, "get tenant");
}

int
store_tenant_list(Store *s, bool with_removed, TenantRecord **ret, size_t *ret_n, Error **errp)
{
    sqlite3_stmt *st = store_prepare(s,
                                     "SELECT " TENANT_COLUMNS " FROM tenants"
                                     " WHERE ?1 OR removed_usec = 0 ORDER BY name, removed_usec",
                                     errp);
    TenantRecord *v = NULL;
    size_t n = 0, cap = 0;
    int rc;

    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, with_removed);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            TenantRecord *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
            if (!nv) {
                free(v);
                sqlite3_finalize(st);
                return error_set(errp, E_INTERNAL, ENOMEM, "store: tenants");
            }
            v = nv;
        }
        row_to_tenant(st, &v[n++]);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(v);
        return store_fail(s, errp, "list tenants");
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

/* How many of the tenant's tokens are not revoked yet; they are revoked at now_usec. */
static int
tenant_tokens_revoke(Store *s, const char *id, int64_t now_usec, size_t *ret_revoked, Error **errp)
{
    sqlite3_stmt *st = store_prepare(
        s, "UPDATE tokens SET revoked_usec = ?2 WHERE tenant_id = ?1 AND revoked_usec = 0", errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_usec);
    if (store_run(s, st, "revoke the tenant's tokens", errp) < 0)
        return -1;
    if (ret_revoked)
        *ret_revoked = (size_t) sqlite3_changes(s->db);
    return 0;
}

int
store_tenant_remove(Store *s, const char *id, int64_t now_usec, size_t *ret_revoked, Error **errp)
{
    TenantRecord t;
    if (strcmp(id, STORE_TENANT_DEFAULT) == 0)
        return error_set(errp, E_CONFLICT, 0, "the built-in tenant '%s' cannot be removed", id);
    if (store_tenant_get(s, id, &t, errp) < 0)
        return -1;
    sqlite3_stmt *st = store_prepare(
        s, "UPDATE tenants SET removed_usec = ?2 WHERE id = ?1 AND removed_usec = 0", errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_usec > 0 ? now_usec : 1); /* 0 would mean live */
    if (store_run(s, st, "remove tenant", errp) < 0)
        return -1;
    return tenant_tokens_revoke(s, id, now_usec > 0 ? now_usec : 1, ret_revoked, errp);
}

/* ------------------------------------------------------------------ quotas */

#define QUOTA_COLUMNS                                                                              \
    "max_sessions, wallet_guest_seconds, max_vcpus, max_memory_mib, max_timeout_s,"                \
    " sessions_per_minute, output_bytes, workspace_bytes"

int
store_quota_get(Store *s, const char *tenant_id, const AdmitQuota *defaults, AdmitQuota *ret,
                Error **errp)
{
    TenantRecord t;
    if (store_tenant_get(s, tenant_id, &t, errp) < 0)
        return -1;
    sqlite3_stmt *st =
        store_prepare(s, "SELECT " QUOTA_COLUMNS " FROM quotas WHERE tenant_id = ?1", errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, tenant_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    AdmitQuota q = *defaults;
    for (size_t i = 0; rc == SQLITE_ROW && i < admit_quota_n_keys; i++) /* columns in key order */
        *admit_quota_field(&q, &admit_quota_keys[i]) = (uint64_t) sqlite3_column_int64(st, (int) i);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return store_fail(s, errp, "get quota");
    *ret = q;
    return 0;
}

int
store_quota_put(Store *s, const char *tenant_id, const AdmitQuota *q, Error **errp)
{
    sqlite3_stmt *st = store_prepare(s,
                                     "INSERT OR REPLACE INTO quotas (tenant_id, " QUOTA_COLUMNS ")"
                                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                                     errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, tenant_id, -1, SQLITE_STATIC);
    for (size_t i = 0; i < admit_quota_n_keys; i++)
        sqlite3_bind_int64(st, (int) i + 2,
                           (sqlite3_int64) admit_quota_get(q, &admit_quota_keys[i]));
    return store_run(s, st, "put quota", errp);
}

/* ------------------------------------------------------------------ usage */

int
store_usage_get(Store *s, const char *tenant_id, AdmitUsage *ret, Error **errp)
{
    AdmitUsage u = {0};
    sqlite3_stmt *st = store_prepare(
        s,
        "SELECT t.bucket_level_milli, t.bucket_usec,"
        " (SELECT count(*) FROM reservations WHERE tenant_id = ?1 AND state = 'open'),"
        " (SELECT coalesce(sum(reserved_guest_s), 0) FROM reservations"
        "   WHERE tenant_id = ?1 AND state = 'open'),"
        " (SELECT coalesce(sum(charged_guest_s), 0) FROM reservations"
        "   WHERE tenant_id = ?1 AND state != 'open')"
        " FROM tenants t WHERE t.id = ?1",
        errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, tenant_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        u.bucket.level_milli = (uint64_t) sqlite3_column_int64(st, 0);
        u.bucket.updated_usec = sqlite3_column_int64(st, 1);
        u.open_sessions = (uint64_t) sqlite3_column_int64(st, 2);
        u.reserved_guest_s = (uint64_t) sqlite3_column_int64(st, 3);
        u.charged_guest_s = (uint64_t) sqlite3_column_int64(st, 4);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE)
        return error_set(errp, E_NOT_FOUND, 0, "no tenant %.40s", tenant_id);
    if (rc != SQLITE_ROW)
        return store_fail(s, errp, "usage");
    *ret = u;
    return 0;
}

int
store_bucket_put(Store *s, const char *tenant_id, const AdmitBucket *b, Error **errp)
{
    sqlite3_stmt *st = store_prepare(
        s, "UPDATE tenants SET bucket_level_milli = ?2, bucket_usec = ?3 WHERE id = ?1", errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, tenant_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64) b->level_milli);
    sqlite3_bind_int64(st, 3, b->updated_usec);
    if (store_run(s, st, "update bucket", errp) < 0)
        return -1;
    return sqlite3_changes(s->db) == 1
               ? 0
               : error_set(errp, E_NOT_FOUND, 0, "no tenant %.40s", tenant_id);
}

int
store_reservation_counts(Store *s, const char *tenant_id, uint64_t ret[3], Error **errp)
{
    static const char *const states[3] = {"open", "charged", "released"};
    sqlite3_stmt *st = store_prepare(
        s, "SELECT count(*) FROM reservations WHERE tenant_id = ?1 AND state = ?2", errp);
    if (!st)
        return -1;
    for (size_t i = 0; i < 3; i++) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, tenant_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, states[i], -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_ROW) {
            sqlite3_finalize(st);
            return store_fail(s, errp, "count reservations");
        }
        ret[i] = (uint64_t) sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return 0;
}
