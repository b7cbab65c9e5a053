/* Tests of the store's tenant tables (schema version 2) on a real SQLite file: tenants,
 * quotas, tokens (hashes only), the reservation ledger and its exactly-once guarantees, the
 * admission savepoint, and the migration of a version-1 database. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store_tenants.h"
#include "testlib.h"

static const AdmitQuota defaults = {4, 3600, 2, 1024, 600, 60, 1 << 20, 1 << 20};

static TenantRecord
tenant(const char *id, const char *name)
{
    TenantRecord t = {.created_usec = 1};
    snprintf(t.id, sizeof(t.id), "%s", id);
    snprintf(t.name, sizeof(t.name), "%s", name);
    return t;
}

static ReservationRecord
reservation(const char *tenant_id, const char *session_id, uint64_t reserved)
{
    ReservationRecord r = {.vcpus = 1, .reserved_guest_s = reserved, .created_usec = 5};
    snprintf(r.tenant_id, sizeof(r.tenant_id), "%s", tenant_id);
    snprintf(r.session_id, sizeof(r.session_id), "%s", session_id);
    return r;
}

static ErrorCategory
category(Error *e)
{
    ErrorCategory c = e ? e->category : _E_CATEGORY_MAX;
    error_free(e);
    return c;
}

static void
test_tenants_and_quotas(void **state)
{
    (void) state;
    Store *s;
    Error *e = NULL;
    AdmitQuota q, mine = defaults;
    assert_int_equal(store_open(test_db, &s, NULL), 0);
    TenantRecord got, a = tenant("ten_a", "acme"), dup = tenant("ten_b", "acme");

    assert_int_equal(store_tenant_get(s, STORE_TENANT_DEFAULT, &got, NULL), 0); /* the schema's */
    assert_int_equal(store_quota_get(s, STORE_TENANT_DEFAULT, &defaults, &q, NULL), 0);
    assert_memory_equal(&q, &defaults, sizeof(q)); /* no row: the configured defaults */
    mine.max_sessions = 1;
    assert_int_equal(store_tenant_insert(s, &a, &mine, NULL), 0);
    assert_int_equal(store_tenant_insert(s, &dup, NULL, &e), -1);
    assert_int_equal(category(e), E_CONFLICT); /* names are unique */
    e = NULL;
    assert_int_equal(store_quota_get(s, "ten_a", &defaults, &q, NULL), 0);
    assert_int_equal(q.max_sessions, 1); /* frozen at creation */
    q.wallet_guest_seconds = 7;
    assert_int_equal(store_quota_put(s, "ten_a", &q, NULL), 0);
    assert_int_equal(store_quota_get(s, "ten_a", &defaults, &q, NULL), 0);
    assert_int_equal(q.wallet_guest_seconds, 7);
    assert_int_equal(store_quota_get(s, "ten_zz", &defaults, &q, &e), -1);
    assert_int_equal(category(e), E_NOT_FOUND);

    TenantRecord *v;
    size_t n;
    assert_int_equal(store_tenant_list(s, false, &v, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, "acme"); /* by name */
    assert_string_equal(v[1].name, "default");
    free(v);
    store_close(s);
}

static void
test_tokens(void **state)
{
    (void) state;
    Store *s;
    Error *e = NULL;
    TokenRecord t = {.created_usec = 10}, got;
    assert_int_equal(store_open(test_db, &s, NULL), 0);
    snprintf(t.id, sizeof(t.id), "tok_1");
    snprintf(t.tenant_id, sizeof(t.tenant_id), "%s", STORE_TENANT_DEFAULT);
    admit_token_hash("stk_secret", t.hash);
    assert_int_equal(store_token_insert(s, &t, NULL), 0);
    assert_int_equal(store_token_by_hash(s, t.hash, &got, NULL), 0);
    assert_string_equal(got.id, "tok_1");
    assert_int_equal(got.revoked_usec, 0);
    StoreReaders *rd;
    uint8_t live_hash[SHA256_BYTES];
    memcpy(live_hash, t.hash, sizeof(live_hash));
    assert_int_equal(store_commit(s, NULL), 0); /* readers see committed rows */
    assert_int_equal(store_readers_new(test_db, 1, &rd, NULL), 0);
    assert_int_equal(store_readers_live_token(rd, live_hash, &got, NULL), 0); /* the API's */
    assert_string_equal(got.id, "tok_1");
    uint8_t other[SHA256_BYTES];
    admit_token_hash("stk_other", other);
    assert_int_equal(store_token_by_hash(s, other, &got, &e), -1);
    assert_int_equal(category(e), E_NOT_FOUND);
    e = NULL;
    snprintf(t.tenant_id, sizeof(t.tenant_id), "ten_nobody");
    snprintf(t.id, sizeof(t.id), "tok_2");
    admit_token_hash("stk_x", t.hash);
    assert_int_equal(store_token_insert(s, &t, &e), -1); /* the tenant must exist */
    assert_int_equal(category(e), E_CONFLICT);
    e = NULL;

    assert_int_equal(store_token_revoke(s, "tok_1", 100, NULL), 0);
    assert_int_equal(store_commit(s, NULL), 0);
    assert_int_equal(store_readers_live_token(rd, live_hash, &got, &e), -1); /* revoked: */
    assert_int_equal(category(e), E_NOT_FOUND); /* answered like an unknown one */
    e = NULL;
    store_readers_free(rd);
    assert_int_equal(store_token_revoke(s, "tok_1", 200, NULL), 0); /* idempotent */
    assert_int_equal(store_token_get(s, "tok_1", &got, NULL), 0);
    assert_int_equal(got.revoked_usec, 100); /* the first time stays */
    assert_int_equal(store_token_revoke(s, "tok_9", 100, &e), -1);
    assert_int_equal(category(e), E_NOT_FOUND);

    TokenRecord *v;
    size_t n;
    assert_int_equal(store_token_list(s, STORE_TENANT_DEFAULT, &v, &n, NULL), 0);
    assert_int_equal(n, 1);
    free(v);
    store_close(s);
}

static int raw_sql(const char *sql);

/* Removing a tenant (issue 30): once, its tokens revoked with it and refused at once, its
 * ledger and quota kept, its name free again; the built-in tenant stays. */
static void
test_tenant_remove(void **state)
{
    (void) state;
    Store *s;
    StoreReaders *rd;
    Error *e = NULL;
    TenantRecord a = tenant("ten_a", "acme"), again = tenant("ten_b", "acme"), got;
    TokenRecord t1 = {.created_usec = 10}, t2 = {.created_usec = 11}, got_tok;
    ReservationRecord r = reservation("ten_a", "ses_1", 60);
    size_t revoked = 99;

    assert_int_equal(store_open(test_db, &s, NULL), 0);
    assert_int_equal(store_tenant_insert(s, &a, &defaults, NULL), 0);
    snprintf(t1.id, sizeof(t1.id), "tok_1");
    snprintf(t2.id, sizeof(t2.id), "tok_2");
    snprintf(t1.tenant_id, sizeof(t1.tenant_id), "ten_a");
    snprintf(t2.tenant_id, sizeof(t2.tenant_id), "ten_a");
    admit_token_hash("stk_one", t1.hash);
    admit_token_hash("stk_two", t2.hash);
    t2.revoked_usec = 5; /* revoked before: keeps its time */
    assert_int_equal(store_token_insert(s, &t1, NULL), 0);
    assert_int_equal(store_token_insert(s, &t2, NULL), 0);
    assert_int_equal(store_reservation_insert(s, &r, NULL), 0);
    assert_int_equal(store_commit(s, NULL), 0);
    assert_int_equal(store_readers_new(test_db, 1, &rd, NULL), 0);
    assert_int_equal(store_readers_live_token(rd, t1.hash, &got_tok, NULL), 0);

    assert_int_equal(store_tenant_insert(s, &again, NULL, &e), -1); /* live: the name is taken */
    assert_int_equal(category(e), E_CONFLICT);
    e = NULL;
    assert_int_equal(store_begin(s, NULL), 0);
    assert_int_equal(store_tenant_remove(s, "ten_a", 100, &revoked, NULL), 0);
    assert_int_equal(revoked, 1);
    assert_int_equal(store_commit(s, NULL), 0);
    assert_int_equal(store_readers_live_token(rd, t1.hash, &got_tok, &e), -1);
    assert_int_equal(category(e), E_NOT_FOUND);
    e = NULL;
    assert_int_equal(store_token_get(s, "tok_1", &got_tok, NULL), 0);
    assert_int_equal(got_tok.revoked_usec, 100);
    assert_int_equal(store_token_get(s, "tok_2", &got_tok, NULL), 0);
    assert_int_equal(got_tok.revoked_usec, 5);
    /* a live token of a removed tenant (a cluster's copy may hold one a moment): refused */
    TokenRecord t3 = t1;
    snprintf(t3.id, sizeof(t3.id), "tok_3");
    admit_token_hash("stk_three", t3.hash);
    t3.revoked_usec = 0;
    assert_int_equal(store_token_insert(s, &t3, NULL), 0);
    assert_int_equal(store_commit(s, NULL), 0);
    assert_int_equal(store_readers_live_token(rd, t3.hash, &got_tok, &e), -1);
    assert_int_equal(category(e), E_NOT_FOUND);
    e = NULL;
    assert_int_equal(store_tenant_remove(s, "ten_a", 200, &revoked, NULL), 0); /* idempotent */
    assert_int_equal(revoked, 1); /* tok_3: the first time stays, what is live is revoked */
    assert_int_equal(store_tenant_get(s, "ten_a", &got, NULL), 0);
    assert_int_equal(got.removed_usec, 100); /* the first time stays */
    assert_int_equal(raw_sql("UPDATE tenants SET removed_usec = 0 WHERE id = 'ten_a'"),
                     SQLITE_CONSTRAINT); /* never undone, not even by hand */

    /* the ledger and quota stay; the name is free; lists skip it unless asked */
    ReservationRecord kept;
    AdmitUsage u;
    assert_int_equal(store_reservation_for_session(s, "ses_1", &kept, NULL), 0);
    assert_int_equal(store_usage_get(s, "ten_a", &u, NULL), 0);
    assert_int_equal(u.open_sessions, 1);
    assert_int_equal(store_reservation_end(s, kept.id, RESERVATION_CHARGED, 7, 300, NULL), 0);
    assert_int_equal(store_tenant_insert(s, &again, NULL, NULL), 0);
    TenantRecord *v;
    size_t n;
    assert_int_equal(store_tenant_list(s, false, &v, &n, NULL), 0);
    assert_int_equal(n, 2); /* acme (the new one), default */
    assert_string_equal(v[0].id, "ten_b");
    free(v);
    assert_int_equal(store_tenant_list(s, true, &v, &n, NULL), 0);
    assert_int_equal(n, 3);
    free(v);
    assert_int_equal(store_tenant_remove(s, STORE_TENANT_DEFAULT, 1, NULL, &e), -1);
    assert_int_equal(category(e), E_CONFLICT);
    e = NULL;
    assert_int_equal(store_tenant_remove(s, "ten_zz", 1, NULL, &e), -1);
    assert_int_equal(category(e), E_NOT_FOUND);
    store_readers_free(rd);
    store_close(s);
}

/* Raw SQL against the file, as a bug or a careless operator might. SQLITE_OK or not. */
static int
raw_sql(const char *sql)
{
    sqlite3 *h;
    assert_int_equal(sqlite3_open(test_db, &h), SQLITE_OK);
    int rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
    sqlite3_close(h);
    return rc;
}

/* The one token lookup both HTTP faces call (store_readers_credential(), through the HTTP
 * layer's authenticator): the shape first, then the live token; every refusal the same
 * category, so both faces answer each one the same 401. */
static void
test_credential(void **state)
{
    (void) state;
    Store *s;
    StoreReaders *rd;
    Error *e = NULL;
    uint8_t secret[ADMIT_TOKEN_RANDOM_BYTES] = {1, 2, 3};
    char good[ADMIT_TOKEN_TEXT_BYTES], upper[ADMIT_TOKEN_TEXT_BYTES];
    char unknown[ADMIT_TOKEN_TEXT_BYTES], longer[ADMIT_TOKEN_TEXT_BYTES + 1];
    TokenRecord t = {.created_usec = 10, .admin = true}, got;

    admit_token_format(secret, good);
    secret[0] = 9;
    admit_token_format(secret, unknown);
    snprintf(upper, sizeof(upper), "%s", good);
    upper[ADMIT_TOKEN_TEXT_LEN - 1] = 'A'; /* a capital hex digit: malformed */
    snprintf(longer, sizeof(longer), "%s0", good);
    assert_int_equal(store_open(test_db, &s, NULL), 0);
    snprintf(t.id, sizeof(t.id), "tok_1");
    snprintf(t.tenant_id, sizeof(t.tenant_id), "%s", STORE_TENANT_DEFAULT);
    admit_token_hash(good, t.hash);
    assert_int_equal(store_token_insert(s, &t, NULL), 0);
    assert_int_equal(store_commit(s, NULL), 0);
    assert_int_equal(store_readers_new(test_db, 1, &rd, NULL), 0);

    assert_int_equal(store_readers_credential(rd, good, &got, NULL), 0);
    assert_string_equal(got.tenant_id, STORE_TENANT_DEFAULT);
    assert_true(got.admin);
    const char *refused[] = {NULL, "", "stk_", "Bearer x", unknown, upper, longer, good + 1};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        assert_int_equal(store_readers_credential(rd, refused[i], &got, &e), -1);
        assert_int_equal(category(e), E_UNAUTHORIZED);
        e = NULL;
    }
    assert_int_equal(store_token_revoke(s, "tok_1", 100, NULL), 0);
    assert_int_equal(store_commit(s, NULL), 0);
    assert_int_equal(store_readers_credential(rd, good, &got, &e), -1); /* revoked */
    assert_int_equal(category(e), E_UNAUTHORIZED);
    store_readers_free(rd);
    store_close(s);
}

static void
test_ledger(void **state)
{
    (void) state;
    Store *s;
    Error *e = NULL;
    AdmitUsage u;
    ReservationRecord a = reservation("default", "ses_a", 100),
                      b = reservation("default", "ses_b", 50);
    ReservationRecord got, *v;
    size_t n;
    assert_int_equal(store_open(test_db, &s, NULL), 0);
    assert_int_equal(store_reservation_insert(s, &a, NULL), 0);
    assert_int_equal(store_reservation_insert(s, &b, NULL), 0);
    assert_true(b.id > a.id);
    ReservationRecord again = reservation("default", "ses_a", 1);
    assert_int_equal(store_reservation_insert(s, &again, &e), -1); /* one per session */
    assert_int_equal(category(e), E_CONFLICT);
    e = NULL;
    assert_int_equal(store_usage_get(s, "default", &u, NULL), 0);
    assert_int_equal(u.open_sessions, 2);
    assert_int_equal(u.reserved_guest_s, 150);
    assert_int_equal(u.charged_guest_s, 0);

    static const struct {
        const char *what;
        ReservationState st;
        uint64_t charged;
        ErrorCategory want; /* _E_CATEGORY_MAX = accepted */
    } ends[] = {
        {"charge more than reserved", RESERVATION_CHARGED, 101, E_CONFLICT},
        {"release with a charge", RESERVATION_RELEASED, 1, E_CONFLICT},
        {"end as open", RESERVATION_OPEN, 0, E_INVALID},
        {"charge 30 of 100", RESERVATION_CHARGED, 30, _E_CATEGORY_MAX},
        {"a second end", RESERVATION_RELEASED, 0, E_CONFLICT},
    };
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
        print_message("end: %s\n", ends[i].what);
        int r = store_reservation_end(s, a.id, ends[i].st, ends[i].charged, 99, &e);
        assert_int_equal(r, ends[i].want == _E_CATEGORY_MAX ? 0 : -1);
        assert_int_equal(category(e), ends[i].want);
        e = NULL;
    }
    assert_int_equal(store_reservation_for_session(s, "ses_a", &got, NULL), 0);
    assert_int_equal(got.state, RESERVATION_CHARGED);
    assert_int_equal(got.charged_guest_s, 30);
    assert_int_equal(got.ended_usec, 99);
    assert_int_equal(store_usage_get(s, "default", &u, NULL), 0);
    assert_int_equal(u.open_sessions, 1);
    assert_int_equal(u.reserved_guest_s, 50);
    assert_int_equal(u.charged_guest_s, 30); /* the other 70 were refunded */
    assert_int_equal(store_reservations_open(s, &v, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].session_id, "ses_b");
    free(v);
    uint64_t counts[3];
    assert_int_equal(store_reservation_counts(s, "default", counts, NULL), 0);
    assert_int_equal(counts[RESERVATION_OPEN], 1);
    assert_int_equal(counts[RESERVATION_CHARGED], 1);
    store_close(s);

    /* the schema itself refuses to rewrite history */
    assert_int_not_equal(
        raw_sql("UPDATE reservations SET charged_guest_s = 0 WHERE session_id = 'ses_a'"),
        SQLITE_OK);
    assert_int_not_equal(raw_sql("DELETE FROM reservations"), SQLITE_OK);
    assert_int_equal(
        raw_sql("UPDATE reservations SET state = 'released' WHERE session_id = 'ses_b'"),
        SQLITE_OK); /* an open one may end (once) */
}

static void
test_savepoint_and_bucket(void **state)
{
    (void) state;
    Store *s;
    AdmitUsage u;
    ReservationRecord a = reservation("default", "ses_s", 10);
    AdmitBucket bk = {.level_milli = 1234, .updated_usec = 77};
    assert_int_equal(store_open(test_db, &s, NULL), 0);

    assert_int_equal(store_savepoint(s, NULL), 0); /* opens the transaction too */
    assert_int_equal(store_reservation_insert(s, &a, NULL), 0);
    assert_int_equal(store_bucket_put(s, "default", &bk, NULL), 0);
    store_savepoint_rollback(s); /* a failed admission: none of it stays */
    assert_int_equal(store_usage_get(s, "default", &u, NULL), 0);
    assert_int_equal(u.open_sessions, 0);
    assert_int_equal(u.bucket.updated_usec, 0);

    assert_int_equal(store_savepoint(s, NULL), 0);
    assert_int_equal(store_reservation_insert(s, &a, NULL), 0);
    assert_int_equal(store_bucket_put(s, "default", &bk, NULL), 0);
    assert_int_equal(store_savepoint_release(s, NULL), 0);
    assert_int_equal(store_commit(s, NULL), 0);
    store_close(s);
    assert_int_equal(store_open(test_db, &s, NULL), 0);
    assert_int_equal(store_usage_get(s, "default", &u, NULL), 0);
    assert_int_equal(u.open_sessions, 1);
    assert_int_equal(u.reserved_guest_s, 10);
    assert_int_equal(u.bucket.level_milli, 1234);
    assert_int_equal(u.bucket.updated_usec, 77);
    Error *e = NULL;
    assert_int_equal(store_bucket_put(s, "ten_none", &bk, &e), -1);
    assert_int_equal(category(e), E_NOT_FOUND);
    store_close(s);
}

/* A version-1 database (sessions only) gains the tenant tables and keeps its sessions. */
static void
test_migration_from_v1(void **state)
{
    (void) state;
    Store *s;
    SessionRecord r;
    assert_int_equal(
        raw_sql("CREATE TABLE sessions (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL,"
                " kind TEXT NOT NULL, pool TEXT NOT NULL, state TEXT NOT NULL,"
                " end_reason TEXT NOT NULL DEFAULT '', guest TEXT NOT NULL DEFAULT '',"
                " created_usec INTEGER NOT NULL, started_usec INTEGER NOT NULL DEFAULT 0,"
                " ended_usec INTEGER NOT NULL DEFAULT 0, timeout_usec INTEGER NOT NULL,"
                " exit_code INTEGER, output_bytes INTEGER NOT NULL DEFAULT 0,"
                " artifact_bytes INTEGER NOT NULL DEFAULT 0,"
                " artifact_files INTEGER NOT NULL DEFAULT 0,"
                " artifacts_truncated INTEGER NOT NULL DEFAULT 0,"
                " last_seq INTEGER NOT NULL DEFAULT 0, spec TEXT);"
                "CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
                " ts_usec INTEGER NOT NULL, type TEXT NOT NULL, exec_id INTEGER NOT NULL"
                " DEFAULT 0, data BLOB, attrs TEXT, PRIMARY KEY (session_id, seq));"
                "INSERT INTO sessions (id, tenant_id, kind, pool, state, created_usec,"
                " timeout_usec) VALUES ('ses_old', 'default', 'session', 'python',"
                " 'ended', 1, 1);"
                "PRAGMA user_version = 1;"),
        SQLITE_OK);
    assert_int_equal(store_open(test_db, &s, NULL), 0);
    assert_int_equal(store_session_get(s, "ses_old", &r, NULL), 0);
    session_record_clear(&r);
    TenantRecord t;
    assert_int_equal(store_tenant_get(s, STORE_TENANT_DEFAULT, &t, NULL), 0);
    store_close(s);
}

/* A version-4 database (tenants with a UNIQUE name column) is rebuilt at version 5 with its
 * rows, and every reference to it still holds: tokens, quotas, the ledger. */
static void
test_migration_from_v4(void **state)
{
    (void) state;
    Store *s;
    TenantRecord t;
    TokenRecord k;
    ReservationRecord r = reservation("ten_a", "ses_1", 60);
    assert_int_equal(store_open(test_db, &s, NULL), 0); /* the current schema, then back to 4 */
    TenantRecord a = tenant("ten_a", "acme");
    assert_int_equal(store_tenant_insert(s, &a, &defaults, NULL), 0);
    assert_int_equal(store_reservation_insert(s, &r, NULL), 0);
    assert_int_equal(store_commit(s, NULL), 0);
    store_close(s);
    assert_int_equal(
        raw_sql("PRAGMA foreign_keys=OFF; BEGIN;"
                "CREATE TABLE t4 (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
                " created_usec INTEGER NOT NULL, bucket_level_milli INTEGER NOT NULL DEFAULT 0,"
                " bucket_usec INTEGER NOT NULL DEFAULT 0);"
                "INSERT INTO t4 SELECT id, name, created_usec, bucket_level_milli, bucket_usec"
                " FROM tenants; DROP TABLE tenants; ALTER TABLE t4 RENAME TO tenants;"
                "INSERT INTO tokens (id, tenant_id, hash, admin, created_usec)"
                " VALUES ('tok_1', 'ten_a', zeroblob(32), 0, 1);"
                "COMMIT; PRAGMA user_version = 4;"),
        SQLITE_OK);
    assert_int_equal(store_open(test_db, &s, NULL), 0);
    assert_int_equal(store_tenant_get(s, "ten_a", &t, NULL), 0);
    assert_string_equal(t.name, "acme");
    assert_int_equal(t.removed_usec, 0);
    assert_int_equal(store_token_get(s, "tok_1", &k, NULL), 0);
    assert_int_equal(store_reservation_for_session(s, "ses_1", &r, NULL), 0);
    Error *e = NULL;
    TokenRecord orphan = {.created_usec = 1};
    snprintf(orphan.id, sizeof(orphan.id), "tok_2");
    snprintf(orphan.tenant_id, sizeof(orphan.tenant_id), "ten_nobody");
    assert_int_equal(store_token_insert(s, &orphan, &e), -1); /* foreign keys are on again */
    assert_int_equal(category(e), E_CONFLICT);
    assert_int_equal(store_begin(s, NULL), 0);
    assert_int_equal(store_tenant_remove(s, "ten_a", 9, NULL, NULL), 0);
    TenantRecord b = tenant("ten_b", "acme");
    assert_int_equal(store_tenant_insert(s, &b, NULL, NULL), 0); /* the name is free */
    assert_int_equal(store_commit(s, NULL), 0);
    store_close(s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tenants_and_quotas, test_db_setup, test_db_teardown),
        cmocka_unit_test_setup_teardown(test_tokens, test_db_setup, test_db_teardown),
        cmocka_unit_test_setup_teardown(test_credential, test_db_setup, test_db_teardown),
        cmocka_unit_test_setup_teardown(test_ledger, test_db_setup, test_db_teardown),
        cmocka_unit_test_setup_teardown(test_savepoint_and_bucket, test_db_setup, test_db_teardown),
        cmocka_unit_test_setup_teardown(test_migration_from_v1, test_db_setup, test_db_teardown),
        cmocka_unit_test_setup_teardown(test_tenant_remove, test_db_setup, test_db_teardown),
        cmocka_unit_test_setup_teardown(test_migration_from_v4, test_db_setup, test_db_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
