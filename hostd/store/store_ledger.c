/* API tokens (stored as SHA-256 only) and the reservation ledger. See store_tenants.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "store_tenants.h"

static const char *const reservation_states[] = {
    [RESERVATION_OPEN] = "open",
    [RESERVATION_CHARGED] = "charged",
    [RESERVATION_RELEASED] = "released",
};

const char *
reservation_state_name(ReservationState st)
{
    return st <= RESERVATION_RELEASED ? reservation_states[st] : "unknown";
}

static void
copy_col(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", t ? (const char *) t : "");
}

/* Collects rows with fn into a malloc'd array of elem_size records. */
static int
collect(Store *s, sqlite3_stmt *st, size_t elem_size, void (*fn)(sqlite3_stmt *, void *),
        void **ret, size_t *ret_n, Error **errp)
{
    uint8_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            uint8_t *nv = realloc(v, (cap = cap ? cap * 2 : 16) * elem_size);
            if (!nv) {
                free(v);
                sqlite3_finalize(st);
                return error_set(errp, E_INTERNAL, ENOMEM, "store: rows");
            }
            v = nv;
        }
        fn(st, v + n++ * elem_size);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(v);
        return store_fail(s, errp, "list");
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

/* Steps a one-row query into *ret with fn; E_NOT_FOUND (naming what) when there is none. */
static int
one_row(Store *s, sqlite3_stmt *st, void (*fn)(sqlite3_stmt *, void *), void *ret, const char *what,
        Error **errp)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        fn(st, ret);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? error_set(errp, E_NOT_FOUND, 0, "no %s", what)
                             : store_fail(s, errp, what);
}

/* ------------------------------------------------------------------ tokens */

#define TOKEN_COLUMNS "id, tenant_id, hash, admin, created_usec, revoked_usec"

static void
row_to_token(sqlite3_stmt *st, void *out)
{
    TokenRecord *t = out;
    memset(t, 0, sizeof(*t));
    copy_col(t->id, sizeof(t->id), st, 0);
    copy_col(t->tenant_id, sizeof(t->tenant_id), st, 1);
    if (sqlite3_column_bytes(st, 2) == SHA256_BYTES)
        memcpy(t->hash, sqlite3_column_blob(st, 2), SHA256_BYTES);
    t->admin = sqlite3_column_int(st, 3) != 0;
    t->created_usec = sqlite3_column_int64(st, 4);
    t->revoked_usec = sqlite3_column_int64(st, 5);
}

int
store_token_insert(Store *s, const TokenRecord *t, Error **errp)
{
    sqlite3_stmt *st = store_prepare(s,
                                     "INSERT INTO tokens (" TOKEN_COLUMNS ")"
                                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                                     errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, t->tenant_id, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, t->hash, SHA256_BYTES, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, t->admin);
    sqlite3_bind_int64(st, 5, t->created_usec);
    sqlite3_bind_int64(st, 6, t->revoked_usec);
    return store_run(s, st, "insert token", errp);
}

int
store_token_by_hash(Store *s, const uint8_t hash[SHA256_BYTES], TokenRecord *ret, Error **errp)
{
    TokenRecord t;
    sqlite3_stmt *st =
        store_prepare(s, "SELECT " TOKEN_COLUMNS " FROM tokens WHERE hash = ?1", errp);
    if (!st)
        return -1;
    sqlite3_bind_blob(st, 1, hash, SHA256_BYTES, SQLITE_STATIC);
    if (one_row(s, st, row_to_token, &t, "such token", errp) < 0)
        return -1;
    /* The index found it by value; compare again in constant time so that no code path
     * decides on a token with a data-dependent early exit. */
    if (!admit_token_hash_equal(t.hash, hash))
        return error_set(errp, E_NOT_FOUND, 0, "no such token");
    *ret = t;
    return 0;
}

int
store_readers_live_token(StoreReaders *rd, const uint8_t hash[SHA256_BYTES], TokenRecord *ret,
                         Error **errp)
{
    TenantRecord tenant = {0};
    Store *s = store_reader_acquire(rd);
    int r = store_token_by_hash(s, hash, ret, errp);
    /* A removed tenant's tokens were revoked with it; its removal alone refuses them too
     * (a cluster's copy may get the removal before the revocations). */
    if (r == 0 && ret->revoked_usec == 0)
        r = store_tenant_get(s, ret->tenant_id, &tenant, errp);
    store_reader_release(rd, s);
    if (r == 0 && (ret->revoked_usec != 0 || tenant.removed_usec != 0))
        return error_set(errp, E_NOT_FOUND, 0, "no such token");
    return r;
}

int
store_readers_credential(StoreReaders *rd, const char *token, TokenRecord *ret, Error **errp)
{
    uint8_t hash[SHA256_BYTES];
    _cleanup_error_ Error *err = NULL;

    if (!token || !admit_token_is_valid(token, strlen(token)))
        return error_set(errp, E_UNAUTHORIZED, 0, "no such token");
    admit_token_hash(token, hash);
    if (store_readers_live_token(rd, hash, ret, &err) == 0)
        return 0;
    return err->category == E_NOT_FOUND /* else the store failed: not the caller's fault */
               ? error_set(errp, E_UNAUTHORIZED, 0, "no such token")
               : error_set(errp, err->category, 0, "%s", err->message);
}

int
store_token_get(Store *s, const char *id, TokenRecord *ret, Error **errp)
{
    sqlite3_stmt *st = store_prepare(s, "SELECT " TOKEN_COLUMNS " FROM tokens WHERE id = ?1", errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    return one_row(s, st, row_to_token, ret, "such token", errp);
}

int
store_token_list(Store *s, const char *tenant_id, TokenRecord **ret, size_t *ret_n, Error **errp)
{
    sqlite3_stmt *st = store_prepare(s,
                                     "SELECT " TOKEN_COLUMNS " FROM tokens"
                                     " WHERE ?1 IS NULL OR tenant_id = ?1"
                                     " ORDER BY created_usec, id",
                                     errp);
    if (!st)
        return -1;
    if (tenant_id)
        sqlite3_bind_text(st, 1, tenant_id, -1, SQLITE_STATIC);
    return collect(s, st, sizeof(TokenRecord), row_to_token, (void **) ret, ret_n, errp);
}

int
store_token_revoke(Store *s, const char *id, int64_t now_usec, Error **errp)
{
    TokenRecord t;
    if (store_token_get(s, id, &t, errp) < 0)
        return -1;
    sqlite3_stmt *st = store_prepare(
        s, "UPDATE tokens SET revoked_usec = ?2 WHERE id = ?1 AND revoked_usec = 0", errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_usec);
    return store_run(s, st, "revoke token", errp);
}

/* ------------------------------------------------------------------ reservations */

#define RES_COLUMNS                                                                                \
    "id, tenant_id, session_id, vcpus, reserved_guest_s, output_bytes, workspace_bytes, state,"    \
    " charged_guest_s, created_usec, ended_usec"

static void
row_to_reservation(sqlite3_stmt *st, void *out)
{
    ReservationRecord *r = out;
    memset(r, 0, sizeof(*r));
    r->id = sqlite3_column_int64(st, 0);
    copy_col(r->tenant_id, sizeof(r->tenant_id), st, 1);
    copy_col(r->session_id, sizeof(r->session_id), st, 2);
    r->vcpus = (uint64_t) sqlite3_column_int64(st, 3);
    r->reserved_guest_s = (uint64_t) sqlite3_column_int64(st, 4);
    r->output_bytes = (uint64_t) sqlite3_column_int64(st, 5);
    r->workspace_bytes = (uint64_t) sqlite3_column_int64(st, 6);
    const unsigned char *state = sqlite3_column_text(st, 7);
    for (ReservationState i = RESERVATION_OPEN; state && i <= RESERVATION_RELEASED; i++)
        if (strcmp((const char *) state, reservation_states[i]) == 0)
            r->state = i;
    r->charged_guest_s = (uint64_t) sqlite3_column_int64(st, 8);
    r->created_usec = sqlite3_column_int64(st, 9);
    r->ended_usec = sqlite3_column_int64(st, 10);
}

int
store_reservation_insert(Store *s, ReservationRecord *r, Error **errp)
{
    sqlite3_stmt *st = store_prepare(
        s,
        "INSERT INTO reservations (tenant_id, session_id, vcpus, reserved_guest_s,"
        " output_bytes, workspace_bytes, created_usec) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, r->tenant_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->session_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64) r->vcpus);
    sqlite3_bind_int64(st, 4, (sqlite3_int64) r->reserved_guest_s);
    sqlite3_bind_int64(st, 5, (sqlite3_int64) r->output_bytes);
    sqlite3_bind_int64(st, 6, (sqlite3_int64) r->workspace_bytes);
    sqlite3_bind_int64(st, 7, r->created_usec);
    if (store_run(s, st, "insert reservation", errp) < 0)
        return -1;
    r->id = sqlite3_last_insert_rowid(s->db);
    r->state = RESERVATION_OPEN;
    return 0;
}

int
store_reservation_for_session(Store *s, const char *session_id, ReservationRecord *ret,
                              Error **errp)
{
    sqlite3_stmt *st =
        store_prepare(s, "SELECT " RES_COLUMNS " FROM reservations WHERE session_id = ?1", errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, session_id, -1, SQLITE_STATIC);
    return one_row(s, st, row_to_reservation, ret, "reservation for this session", errp);
}

int
store_reservation_end(Store *s, int64_t id, ReservationState state, uint64_t charged_guest_s,
                      int64_t ended_usec, Error **errp)
{
    if (state == RESERVATION_OPEN)
        return error_set(errp, E_INVALID, 0, "store: a reservation ends charged or released");
    sqlite3_stmt *st =
        store_prepare(s,
                      "UPDATE reservations SET state = ?2, charged_guest_s = ?3, ended_usec = ?4"
                      " WHERE id = ?1 AND state = 'open'",
                      errp);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, reservation_states[state], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (sqlite3_int64) charged_guest_s);
    sqlite3_bind_int64(st, 4, ended_usec);
    if (store_run(s, st, "end reservation", errp) < 0)
        return -1;
    if (sqlite3_changes(s->db) != 1)
        return error_set(errp, E_CONFLICT, 0, "reservation %lld is not open", (long long) id);
    return 0;
}

int
store_reservations_open(Store *s, ReservationRecord **ret, size_t *ret_n, Error **errp)
{
    sqlite3_stmt *st = store_prepare(
        s, "SELECT " RES_COLUMNS " FROM reservations WHERE state = 'open' ORDER BY id", errp);
    if (!st)
        return -1;
    return collect(s, st, sizeof(ReservationRecord), row_to_reservation, (void **) ret, ret_n,
                   errp);
}
