/* Tests of hostd/admit: the admission decision, the token bucket, the wallet arithmetic, and
 * the token and id forms. Table-driven: each row is one case with its expected outcome. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "admit.h"

#define SEC INT64_C(1000000)
#define T0 (INT64_C(1800000000) * SEC) /* some wall time */
#define MAX_RATE ADMIT_RATE_MAX_PER_MINUTE
#define MAX_RATE_59S ((int64_t) (MAX_RATE * 59000 / 60)) /* its level after 59 s, x1000 */

static const AdmitQuota base_quota = {
    .max_sessions = 2,
    .wallet_guest_seconds = 1000,
    .max_vcpus = 2,
    .max_memory_mib = 1024,
    .max_timeout_s = 600,
    .sessions_per_minute = 6,
    .output_bytes = 1 << 20,
    .workspace_bytes = 1 << 20,
};

/* ------------------------------------------------------------------ the decision */

typedef struct {
    const char *name;
    AdmitQuota q;
    AdmitUsage u;
    AdmitRequest rq;
    int64_t now;
    AdmitLimit want;
    uint64_t limit, used, requested;
    int64_t retry;
    uint64_t reserve, level_after; /* admitted rows */
} DecideCase;

/* clang-format off: one case per row reads better than clang-format's one field per line */
static const DecideCase decide_cases[] = {
    {"admitted, fresh bucket", base_quota, {0}, {1, 256, 100}, T0, ADMIT_OK, 0, 0, 0, 0, 100, 5000},
    {"vcpus over the cap",
     base_quota,
     {0},
     {4, 256, 100},
     T0,
     ADMIT_MAX_VCPUS,
     2,
     4,
     4,
     ADMIT_RETRY_NEVER,
     0,
     0},
    {"memory over the cap",
     base_quota,
     {0},
     {1, 2048, 100},
     T0,
     ADMIT_MAX_MEMORY,
     1024,
     2048,
     2048,
     ADMIT_RETRY_NEVER,
     0,
     0},
    {"timeout over the cap",
     base_quota,
     {0},
     {1, 256, 601},
     T0,
     ADMIT_MAX_TIMEOUT,
     600,
     601,
     601,
     ADMIT_RETRY_NEVER,
     0,
     0},
    {"caps come first",
     base_quota,
     {.open_sessions = 2},
     {3, 256, 100},
     T0,
     ADMIT_MAX_VCPUS,
     2,
     3,
     3,
     ADMIT_RETRY_NEVER,
     0,
     0},
    {"all slots taken",
     base_quota,
     {.open_sessions = 2, .reserved_guest_s = 200},
     {1, 256, 100},
     T0,
     ADMIT_MAX_SESSIONS,
     2,
     2,
     1,
     ADMIT_RETRY_LIVE_S,
     0,
     0},
    {"one slot left",
     base_quota,
     {.open_sessions = 1, .reserved_guest_s = 100},
     {1, 256, 100},
     T0,
     ADMIT_OK,
     0,
     0,
     0,
     0,
     100,
     5000},
    {"empty wallet, nothing live",
     {.max_sessions = 2,
      .max_vcpus = 2,
      .max_memory_mib = 1024,
      .max_timeout_s = 600,
      .sessions_per_minute = 6},
     {0},
     {1, 256, 100},
     T0,
     ADMIT_WALLET,
     0,
     0,
     100,
     ADMIT_RETRY_NEVER,
     0,
     0},
    {"wallet short by one",
     base_quota,
     {.charged_guest_s = 901},
     {1, 256, 100},
     T0,
     ADMIT_WALLET,
     1000,
     901,
     100,
     ADMIT_RETRY_NEVER,
     0,
     0},
    {"wallet exactly enough",
     base_quota,
     {.charged_guest_s = 900},
     {1, 256, 100},
     T0,
     ADMIT_OK,
     0,
     0,
     0,
     0,
     100,
     5000},
    {"reservations count as spent",
     base_quota,
     {.open_sessions = 1, .reserved_guest_s = 950},
     {1, 256, 100},
     T0,
     ADMIT_WALLET,
     1000,
     950,
     100,
     ADMIT_RETRY_LIVE_S,
     0,
     0},
    {"reserve is vcpus x timeout",
     base_quota,
     {0},
     {2, 256, 500},
     T0,
     ADMIT_OK,
     0,
     0,
     0,
     0,
     1000,
     5000},
    {"rate: bucket empty",
     base_quota,
     {.bucket = {0, T0}},
     {1, 256, 10},
     T0,
     ADMIT_RATE,
     6,
     6,
     1,
     10,
     0,
     0},
    {"rate: refilled after 10 s",
     base_quota,
     {.bucket = {0, T0}},
     {1, 256, 10},
     T0 + 10 * SEC,
     ADMIT_OK,
     0,
     0,
     0,
     0,
     10,
     0},
    {"rate: half a token",
     base_quota,
     {.bucket = {0, T0}},
     {1, 256, 10},
     T0 + 5 * SEC,
     ADMIT_RATE,
     6,
     6,
     1,
     5,
     0,
     0},
    {"rate zero never admits",
     {.max_sessions = 2,
      .wallet_guest_seconds = 1000,
      .max_vcpus = 2,
      .max_memory_mib = 1024,
      .max_timeout_s = 600},
     {0},
     {1, 256, 10},
     T0,
     ADMIT_RATE,
     0,
     0,
     1,
     ADMIT_RETRY_NEVER,
     0,
     0},
};
/* clang-format on */

static void
test_decide_table(void **state)
{
    (void) state;
    for (size_t i = 0; i < sizeof(decide_cases) / sizeof(decide_cases[0]); i++) {
        const DecideCase *c = &decide_cases[i];
        AdmitDecision d;
        admit_decide(&c->q, &c->u, &c->rq, c->now, &d);
        print_message("decide: %s\n", c->name);
        assert_int_equal(d.refusal.limit_id, c->want);
        if (c->want != ADMIT_OK) {
            assert_int_equal(d.refusal.limit, c->limit);
            assert_int_equal(d.refusal.used, c->used);
            assert_int_equal(d.refusal.requested, c->requested);
            assert_int_equal(d.refusal.retry_after_s, c->retry);
            continue;
        }
        assert_int_equal(d.reserve_guest_s, c->reserve);
        assert_int_equal(d.bucket.level_milli, c->level_after);
        assert_int_equal(d.bucket.updated_usec, c->now);
    }
}

/* Caps pass at equality: a request exactly at every cap is refused only by its wallet. */
static void
test_decide_cap_edge(void **state)
{
    (void) state;
    AdmitUsage u = {0};
    AdmitRequest rq = {2, 1024, 600};
    AdmitDecision d;
    admit_decide(&base_quota, &u, &rq, T0, &d);
    assert_int_equal(d.refusal.limit_id, ADMIT_WALLET); /* caps pass at equality */
    assert_int_equal(d.refusal.requested, 1200);
}

/* ------------------------------------------------------------------ bucket */

static void
test_bucket_table(void **state)
{
    (void) state;
    static const struct {
        AdmitBucket b;
        uint64_t per_minute;
        int64_t now, want_level, want_wait;
    } cases[] = {
        {{0, 0}, 60, T0, 60000, 0},                          /* never used: full */
        {{0, T0}, 60, T0, 0, 1},                             /* empty, 1 token per second */
        {{0, T0}, 60, T0 + SEC / 2, 500, 1},                 /* half refilled: wait rounds up */
        {{0, T0}, 60, T0 + 59 * SEC, 59000, 0},              /* linear refill */
        {{0, T0}, 60, T0 + 61 * SEC, 60000, 0},              /* capped at the capacity */
        {{0, T0}, 60, T0 + 3600 * SEC, 60000, 0},            /* long idle: full, no overflow */
        {{30000, T0}, 60, T0 - 10 * SEC, 30000, 0},          /* the clock went back: no refill */
        {{90000, T0}, 60, T0, 60000, 0},                     /* quota lowered: clamp to capacity */
        {{0, T0}, 1, T0 + 30 * SEC, 500, 30},                /* slow rate: 60 s per token */
        {{0, T0}, 0, T0 + 3600 * SEC, 0, ADMIT_RETRY_NEVER}, /* rate 0 */
        {{0, T0}, MAX_RATE, T0 + 59 * SEC, MAX_RATE_59S, 0}, /* largest rate: no overflow */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t level = admit_bucket_level(&cases[i].b, cases[i].per_minute, cases[i].now);
        print_message("bucket row %zu\n", i);
        assert_int_equal(level, cases[i].want_level);
        assert_int_equal(admit_bucket_wait_s(level, cases[i].per_minute), cases[i].want_wait);
    }
}

/* A burst of per_minute admissions passes, the next waits, and a minute later it passes. */
static void
test_bucket_burst(void **state)
{
    (void) state;
    AdmitUsage u = {0};
    AdmitRequest rq = {1, 256, 1};
    AdmitQuota q = base_quota;
    AdmitDecision d;
    q.wallet_guest_seconds = 1000000;
    q.max_sessions = 1000;
    for (int i = 0; i < 6; i++) {
        admit_decide(&q, &u, &rq, T0 + i, &d);
        assert_int_equal(d.refusal.limit_id, ADMIT_OK);
        u.bucket = d.bucket;
    }
    admit_decide(&q, &u, &rq, T0 + 10, &d);
    assert_int_equal(d.refusal.limit_id, ADMIT_RATE);
    assert_int_equal(d.refusal.retry_after_s, 10);
    admit_decide(&q, &u, &rq, T0 + 10 * SEC + 10, &d);
    assert_int_equal(d.refusal.limit_id, ADMIT_OK);
}

/* ------------------------------------------------------------------ wallet */

static void
test_charge_table(void **state)
{
    (void) state;
    static const struct {
        uint64_t reserved, vcpus;
        int64_t started, ended;
        uint64_t want;
    } cases[] = {
        {600, 1, 0, T0, 0},                            /* never got a running guest */
        {600, 1, T0, T0, 0},                           /* no time passed */
        {600, 1, T0, T0 - SEC, 0},                     /* the clock went back */
        {600, 1, T0, T0 + 1, 1},                       /* a started second counts */
        {600, 1, T0, T0 + SEC, 1},                     /* exactly one second */
        {600, 1, T0, T0 + SEC + 1, 2},                 /* rounded up */
        {600, 2, T0, T0 + 10 * SEC, 20},               /* vcpus x seconds */
        {600, 2, T0, T0 + 301 * SEC, 600},             /* never more than reserved */
        {600, 2, T0, T0 + 3600 * 24 * 365 * SEC, 600}, /* no overflow */
        {0, 4, T0, T0 + 5 * SEC, 0},                   /* nothing reserved, nothing charged */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        print_message("charge row %zu\n", i);
        assert_int_equal(admit_charge_guest_s(cases[i].reserved, cases[i].vcpus, cases[i].started,
                                              cases[i].ended),
                         cases[i].want);
    }
    assert_int_equal(admit_reserve_guest_s(4, 600), 2400);
    AdmitUsage u = {.charged_guest_s = 7, .reserved_guest_s = 5};
    assert_int_equal(admit_wallet_used(&u), 12);
}

/* ------------------------------------------------------------------ tokens and ids */

static void
test_token_forms(void **state)
{
    (void) state;
    uint8_t raw[ADMIT_TOKEN_RANDOM_BYTES];
    char text[ADMIT_TOKEN_TEXT_BYTES];
    uint8_t h[SHA256_BYTES], h2[SHA256_BYTES];
    char hex[SHA256_HEX_BYTES + 1];

    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (uint8_t) i;
    admit_token_format(raw, text);
    /* Issued in the shape the E2B SDKs check: "e2b_" then lower-case hex. */
    assert_string_equal(text,
                        "e2b_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    assert_true(admit_token_is_valid(text, strlen(text)));
    admit_token_hash(text, h);
    hex_encode(h, sizeof(h), hex);
    /* SHA-256 of the "stk_" spelling: a token issued before keeps its stored hash, and both
     * spellings of one token are one token. */
    assert_string_equal(hex, "50698049387501416153e50e844977c9ea53c77a1cddb2a89aa90b2a7997c08b");
    admit_token_hash("stk_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", h2);
    assert_true(admit_token_hash_equal(h, h2));
    admit_token_hash("e2b_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1e", h2);
    assert_false(admit_token_hash_equal(h, h2));
    memcpy(h2, h, sizeof(h));
    assert_true(admit_token_hash_equal(h, h2));
    h2[0] ^= 1;
    assert_false(admit_token_hash_equal(h, h2));
    h2[0] ^= 1;
    h2[SHA256_BYTES - 1] ^= 0x80;
    assert_false(admit_token_hash_equal(h, h2));
}

static void
test_token_shape_table(void **state)
{
    (void) state;
    static const struct {
        const char *text;
        bool ok;
    } cases[] = {
        {"stk_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", true},
        {"e2b_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", true},
        {"e2b_000102030405060708090A0B0C0D0E0F101112131415161718191a1b1c1d1e1f", false},
        {"e2b_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1", false},
        {"E2B_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", false},
        {"stk_000102030405060708090A0B0C0D0E0F101112131415161718191a1b1c1d1e1f", false},
        {"stk_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1", false},
        {"stk_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0", false},
        {"tok_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", false},
        {"stk_000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1g", false},
        {"stk_", false},
        {"", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(admit_token_is_valid(cases[i].text, strlen(cases[i].text)), cases[i].ok);
    assert_false(admit_token_is_valid("stk_0\0"
                                      "0",
                                      7)); /* NUL inside */
}

static void
test_bearer_table(void **state)
{
    (void) state;
    static const struct {
        const char *header, *want;
    } cases[] = {
        {"Bearer stk_abc", "stk_abc"},
        {"bearer stk_abc", "stk_abc"},
        {"BEARER   stk_abc", "stk_abc"},
        {"Bearer", NULL},
        {"Bearer ", NULL},
        {"Bearerstk_abc", NULL},
        {"Basic dXNlcjpwYXNz", NULL},
        {"", NULL},
        {NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = admit_bearer_token(cases[i].header);
        if (cases[i].want)
            assert_string_equal(got, cases[i].want);
        else
            assert_null(got);
    }
}

static void
test_ids(void **state)
{
    (void) state;
    uint8_t r[ADMIT_ID_RANDOM_CHARS];
    char id[ADMIT_ID_BYTES];
    for (size_t i = 0; i < sizeof(r); i++)
        r[i] = (uint8_t) (i + 32 * (i % 3)); /* high bits must not matter */
    admit_id_format("ten_", r, id);
    assert_string_equal(id, "ten_abcdefghijklmnopqrstuvwxyz");
    static const struct {
        const char *prefix, *id;
        bool ok;
    } cases[] = {
        {"ten_", "ten_abcdefghijklmnopqrstuvwxyz", true},
        {"ten_", "ten_abcdefghijklmnopqrstuvwxy", false},
        {"ten_", "ten_abcdefghijklmnopqrstuvwxyz2", false},
        {"ten_", "ten_abcdefghijklmnopqrstuvwxy1", false}, /* 1 is not base32 */
        {"ten_", "tok_abcdefghijklmnopqrstuvwxyz", false},
        {"tok_", "tok_234567234567234567234567ab", true},
        {"ten_", "../../../etc/passwd", false},
        {"ten_", "", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(admit_id_is_valid(cases[i].prefix, cases[i].id), cases[i].ok);
}

/* The key table covers the struct exactly, in order, without duplicates. */
static void
test_quota_keys(void **state)
{
    (void) state;
    AdmitQuota q;
    assert_int_equal(admit_quota_n_keys, sizeof(AdmitQuota) / sizeof(uint64_t));
    for (size_t i = 0; i < admit_quota_n_keys; i++) {
        assert_int_equal(admit_quota_keys[i].offset, i * sizeof(uint64_t));
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(admit_quota_keys[i].name, admit_quota_keys[k].name);
        memset(&q, 0, sizeof(q));
        *admit_quota_field(&q, &admit_quota_keys[i]) = i + 1;
        assert_int_equal(admit_quota_get(&q, &admit_quota_keys[i]), i + 1);
    }
    for (AdmitLimit l = ADMIT_MAX_VCPUS; l < _ADMIT_LIMIT_MAX; l++) {
        bool named = false;
        for (size_t i = 0; i < admit_quota_n_keys; i++)
            named |= strcmp(admit_limit_name(l), admit_quota_keys[i].name) == 0;
        assert_true(named); /* a refusal names the quota key an operator would raise */
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide_table),
        cmocka_unit_test(test_decide_cap_edge),
        cmocka_unit_test(test_bucket_table),
        cmocka_unit_test(test_bucket_burst),
        cmocka_unit_test(test_charge_table),
        cmocka_unit_test(test_token_forms),
        cmocka_unit_test(test_token_shape_table),
        cmocka_unit_test(test_bearer_table),
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_quota_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
