/* Cluster mode's copy of the tenants and tokens (hostd/store/store_sync.c, issue 16): the
 * pure merge decision, table-driven, and its application to a real SQLite store: what the
 * cluster sends is inserted, a revocation is copied and never undone, what breaks the
 * store's rules or contradicts its rows is skipped and counted, never stored; a tenant's
 * removal is copied, one way, and refuses its tokens at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_sync.h"
#include "testlib.h"

#define TEN_A "ten_aaaaaaaaaaaaaaaaaaaaaaaaaa"
#define TEN_B "ten_bbbbbbbbbbbbbbbbbbbbbbbbbb"
#define TOK_1 "tok_22222222222222222222222222"
#define TOK_2 "tok_33333333333333333333333333"

static TenantRecord
tenant(const char *id, const char *name)
{
    TenantRecord t = {.created_usec = 1};
    snprintf(t.id, sizeof(t.id), "%s", id);
    snprintf(t.name, sizeof(t.name), "%s", name);
    return t;
}

static TokenRecord
token(const char *id, const char *tenant_id, const char *secret, int64_t revoked_usec)
{
    TokenRecord t = {.created_usec = 2, .revoked_usec = revoked_usec};
    snprintf(t.id, sizeof(t.id), "%s", id);
    snprintf(t.tenant_id, sizeof(t.tenant_id), "%s", tenant_id);
    admit_token_hash(secret, t.hash);
    return t;
}

static void
test_decide_tenant(void **state)
{
    (void) state;
    TenantRecord a = tenant(TEN_A, "acme"), other_name = tenant(TEN_A, "evil");
    TenantRecord long_name = tenant(TEN_A, "");
    memset(long_name.name, 'x', STORE_TENANT_NAME_MAX_BYTES);
    long_name.name[STORE_TENANT_NAME_MAX_BYTES] = '\0';
    TenantRecord too_long = long_name;
    too_long.name[STORE_TENANT_NAME_MAX_BYTES - 1] = '\n'; /* control character */
    struct {
        const TenantRecord *local, remote;
        StoreSyncAction want;
    } cases[] = {
        {NULL, a, STORE_SYNC_INSERT},
        {&a, a, STORE_SYNC_SAME},
        {&a, other_name, STORE_SYNC_CONFLICT}, /* a name never changes */
        {NULL, long_name, STORE_SYNC_INSERT},  /* exactly the longest name */
        {NULL, too_long, STORE_SYNC_INVALID},
        {NULL, tenant(TEN_A, ""), STORE_SYNC_INVALID},
        {NULL, tenant("ten_short", "x"), STORE_SYNC_INVALID},
        {NULL, tenant("ten_AAAAAAAAAAAAAAAAAAAAAAAAAA", "x"), STORE_SYNC_INVALID}, /* base32 */
        {NULL, tenant(TOK_1, "x"), STORE_SYNC_INVALID},
        {NULL, tenant(STORE_TENANT_DEFAULT, "default"), STORE_SYNC_INSERT},
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        print_message("tenant case %zu\n", i);
        assert_int_equal(store_sync_decide_tenant(cases[i].local, &cases[i].remote), cases[i].want);
    }
    TenantRecord past = a;
    past.created_usec = -1;
    assert_int_equal(store_sync_decide_tenant(NULL, &past), STORE_SYNC_INVALID);

    /* removal (issue 30): copied once, one way; never of the built-in tenant */
    TenantRecord gone = a, gone_later = a, neg = a, dflt = tenant(STORE_TENANT_DEFAULT, "default");
    gone.removed_usec = 50;
    gone_later.removed_usec = 90;
    neg.removed_usec = -1;
    dflt.removed_usec = 5;
    assert_int_equal(store_sync_decide_tenant(&a, &gone), STORE_SYNC_REMOVE);
    assert_int_equal(store_sync_decide_tenant(NULL, &gone), STORE_SYNC_INSERT); /* as removed */
    assert_int_equal(store_sync_decide_tenant(&gone, &gone_later), STORE_SYNC_SAME);
    assert_int_equal(store_sync_decide_tenant(&gone, &a), STORE_SYNC_SAME); /* never undone */
    assert_int_equal(store_sync_decide_tenant(&a, &neg), STORE_SYNC_INVALID);
    assert_int_equal(store_sync_decide_tenant(NULL, &dflt), STORE_SYNC_INVALID);
}

static void
test_decide_token(void **state)
{
    (void) state;
    TokenRecord live = token(TOK_1, TEN_A, "stk_a", 0), revoked = token(TOK_1, TEN_A, "stk_a", 9);
    TokenRecord other_hash = token(TOK_1, TEN_A, "stk_b", 0);
    TokenRecord other_tenant = token(TOK_1, TEN_B, "stk_a", 0);
    TokenRecord admin = live, negative = revoked;
    admin.admin = true;
    negative.revoked_usec = -5;
    struct {
        const TokenRecord *local, remote;
        StoreSyncAction want;
    } cases[] = {
        {NULL, live, STORE_SYNC_INSERT},
        {NULL, revoked, STORE_SYNC_INSERT}, /* a host that was away learns it revoked */
        {&live, live, STORE_SYNC_SAME},
        {&live, revoked, STORE_SYNC_REVOKE},
        {&revoked, live, STORE_SYNC_SAME}, /* never undone */
        {&revoked, revoked, STORE_SYNC_SAME},
        {&live, other_hash, STORE_SYNC_CONFLICT},
        {&live, other_tenant, STORE_SYNC_CONFLICT},
        {&live, admin, STORE_SYNC_CONFLICT}, /* nobody turns a token into an operator's */
        {NULL, negative, STORE_SYNC_INVALID},
        {NULL, token("tok_1", TEN_A, "stk_a", 0), STORE_SYNC_INVALID},
        {NULL, token(TOK_1, "ten_nobody", "stk_a", 0), STORE_SYNC_INVALID},
        {NULL, token(TEN_A, TEN_A, "stk_a", 0), STORE_SYNC_INVALID}, /* a tenant id as a token's */
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        print_message("token case %zu\n", i);
        assert_int_equal(store_sync_decide_token(cases[i].local, &cases[i].remote), cases[i].want);
    }
}

static bool
authenticates(StoreReaders *rd, const char *secret)
{
    uint8_t hash[SHA256_BYTES];
    TokenRecord got;
    Error *e = NULL;
    admit_token_hash(secret, hash);
    bool ok = store_readers_live_token(rd, hash, &got, &e) == 0;
    error_free(e);
    return ok;
}

static void
test_apply(void **state)
{
    (void) state;
    Store *s;
    StoreReaders *rd;
    StoreSyncCounts n;
    assert_int_equal(store_open(test_db, &s, NULL), 0);
    assert_int_equal(store_readers_new(test_db, 1, &rd, NULL), 0);
    TenantRecord local_acme = tenant(TEN_B, "acme"); /* made here before the cluster */
    assert_int_equal(store_tenant_insert(s, &local_acme, NULL, NULL), 0);

    TenantRecord ts[] = {tenant(TEN_A, "globex"), tenant(TEN_A "x", "bad"),
                         tenant("ten_cccccccccccccccccccccccccc", "acme")};
    TokenRecord ks[] = {
        token(TOK_1, TEN_A, "stk_one", 0), token(TOK_2, TEN_A, "stk_two", 0),
        token("tok_44444444444444444444444444", "ten_cccccccccccccccccccccccccc", "stk_three", 0)};
    assert_int_equal(store_sync_apply(s, ts, 3, ks, 3, &n, NULL), 0);
    assert_int_equal(n.inserted, 3);  /* globex and its two tokens */
    assert_int_equal(n.invalid, 1);   /* the over-long id */
    assert_int_equal(n.conflicts, 2); /* "acme" is taken here; so its token has no tenant */
    assert_true(authenticates(rd, "stk_one"));
    assert_true(authenticates(rd, "stk_two"));
    assert_false(authenticates(rd, "stk_three"));

    /* revoked in the cluster: revoked here at the cluster's time, and never undone */
    ks[0].revoked_usec = 77;
    assert_int_equal(store_sync_apply(s, NULL, 0, ks, 1, &n, NULL), 0);
    assert_int_equal(n.revoked, 1);
    assert_false(authenticates(rd, "stk_one"));
    TokenRecord got;
    assert_int_equal(store_token_get(s, TOK_1, &got, NULL), 0);
    assert_int_equal(got.revoked_usec, 77);
    ks[0].revoked_usec = 0;
    assert_int_equal(store_sync_apply(s, NULL, 0, ks, 1, &n, NULL), 0);
    assert_int_equal(n.revoked + n.inserted, 0);
    assert_false(authenticates(rd, "stk_one"));

    /* a token this host never saw, revoked before it came back: stored revoked */
    TokenRecord late = token("tok_55555555555555555555555555", TEN_A, "stk_four", 5);
    assert_int_equal(store_sync_apply(s, NULL, 0, &late, 1, &n, NULL), 0);
    assert_int_equal(n.inserted, 1);
    assert_false(authenticates(rd, "stk_four"));
    assert_true(authenticates(rd, "stk_two"));

    /* removed in the cluster (issue 30): removed here at the cluster's time; its token stops
     * authenticating with the removal alone, before its revocation comes */
    TenantRecord gone = ts[0];
    gone.removed_usec = 88;
    assert_int_equal(store_sync_apply(s, &gone, 1, NULL, 0, &n, NULL), 0);
    assert_int_equal(n.removed, 1);
    assert_false(authenticates(rd, "stk_two"));
    TenantRecord t;
    assert_int_equal(store_tenant_get(s, TEN_A, &t, NULL), 0);
    assert_int_equal(t.removed_usec, 88);
    assert_int_equal(store_sync_apply(s, &ts[0], 1, NULL, 0, &n, NULL), 0); /* live again? no */
    assert_int_equal(n.removed + n.inserted, 0);
    assert_int_equal(store_tenant_get(s, TEN_A, &t, NULL), 0);
    assert_int_equal(t.removed_usec, 88);
    /* a new tenant may take the removed one's name; a removed one arrives removed */
    TenantRecord reuse[] = {tenant("ten_dddddddddddddddddddddddddd", "globex"),
                            tenant("ten_eeeeeeeeeeeeeeeeeeeeeeeeee", "globex")};
    reuse[1].removed_usec = 3;
    assert_int_equal(store_sync_apply(s, reuse, 2, NULL, 0, &n, NULL), 0);
    assert_int_equal(n.inserted, 2);
    assert_int_equal(n.conflicts, 0);
    store_readers_free(rd);
    store_close(s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide_tenant),
        cmocka_unit_test(test_decide_token),
        cmocka_unit_test_setup_teardown(test_apply, test_db_setup, test_db_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
