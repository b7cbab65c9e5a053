/* hostd/cluster/cluster_keys.c: HKDF-SHA-256 against RFC 5869's test vectors (A.1-A.3: the
 * SHA-256 ones), host_token_file's format (one secret, two during a rotation, every
 * refusal), the derived keys pinned (a host of an older build must derive the same: a changed
 * label or salt breaks a running cluster) and the hop key's check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster_keys.h"
#include "sha256.h"

static void
unhex(const char *hex, uint8_t *out, size_t n)
{
    assert_int_equal(strlen(hex), 2 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t) v;
    }
}

static void
range(uint8_t *out, size_t n, uint8_t first)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t) (first + i);
}

static void
expect_okm(const uint8_t *salt, size_t salt_len, const uint8_t *ikm, size_t ikm_len,
           const uint8_t *info, size_t info_len, const char *okm_hex)
{
    size_t n = strlen(okm_hex) / 2;
    uint8_t want[128], got[128];
    unhex(okm_hex, want, n);
    assert_int_equal(
        cluster_hkdf_sha256(salt, salt_len, ikm, ikm_len, info, info_len, got, n, NULL), 0);
    assert_memory_equal(got, want, n);
}

static void
test_rfc5869(void **state)
{
    (void) state;
    uint8_t ikm[80], salt[80], info[80];

    /* A.1: basic. */
    memset(ikm, 0x0b, 22);
    range(salt, 13, 0x00);
    range(info, 10, 0xf0);
    expect_okm(
        salt, 13, ikm, 22, info, 10,
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
    /* A.2: longer inputs and output. */
    range(ikm, 80, 0x00);
    range(salt, 80, 0x60);
    range(info, 80, 0xb0);
    expect_okm(
        salt, 80, ikm, 80, info, 80,
        "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271"
        "cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87");
    /* A.3: no salt, no info (what the host credential's keys use for the salt). */
    memset(ikm, 0x0b, 22);
    expect_okm(
        NULL, 0, ikm, 22, NULL, 0,
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8");
    /* Out of range: refused, nothing written past the buffer. */
    uint8_t out[1];
    assert_int_equal(cluster_hkdf_sha256(NULL, 0, ikm, 22, NULL, 0, out, 0, NULL), -1);
}

#define SECRET_A "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk" /* 32 bytes: the minimum */
#define SECRET_B "0123456789abcdef0123456789abcdef0123456789abcdef"
/* HKDF-SHA-256(salt none, ikm SECRET_A, info label), computed apart (Python's hmac). */
#define HOP_A "f59437d4144e3ea6ec95f8cf5c96e3f6b3249e05580ecec84c4015c58e5aa745"
#define ENVD_A "56d3f84a4b3a21874d5979447658a0317818d34072a61391b18ce9d52b60727e"

static int
parse(const char *text, ClusterKeys *k)
{
    Error *e = NULL;
    int r = cluster_keys_parse(text, strlen(text), k, &e);
    if (r < 0) {
        assert_non_null(e);
        /* No message ever quotes the secret. */
        assert_null(strstr(e->message, "kkkkkkkk"));
        assert_null(strstr(e->message, "01234567"));
        error_free(e);
    }
    return r;
}

static void
test_derived_keys(void **state)
{
    (void) state;
    ClusterKeys k;
    char hex[CLUSTER_HOP_AUTH_HEX_BYTES + 1];

    assert_int_equal(parse(SECRET_A "\n", &k), 0);
    assert_int_equal(k.n, 1);
    cluster_hop_auth_hex(k.hop[0], hex);
    assert_string_equal(hex, HOP_A);
    hex_encode(k.envd[0], CLUSTER_KEY_BYTES, hex);
    assert_string_equal(hex, ENVD_A);
    /* Without the final newline: the same keys. */
    ClusterKeys k2;
    assert_int_equal(parse(SECRET_A, &k2), 0);
    assert_memory_equal(&k, &k2, sizeof(k));
    /* The hop value is neither the secret nor the envd key. */
    assert_memory_not_equal(k.hop[0], k.envd[0], CLUSTER_KEY_BYTES);
    assert_memory_not_equal(k.hop[0], SECRET_A, CLUSTER_KEY_BYTES);
    cluster_keys_wipe(&k);
    assert_int_equal(k.n, 0);
}

static void
test_rotation(void **state)
{
    (void) state;
    ClusterKeys one, two, back;

    assert_int_equal(parse(SECRET_B, &one), 0);
    assert_int_equal(parse(SECRET_A "\n" SECRET_B "\n", &two), 0);
    assert_int_equal(two.n, 2);
    /* Current first: its keys are the ones sent; the second's are the single file's. */
    assert_memory_equal(two.hop[1], one.hop[0], CLUSTER_KEY_BYTES);
    assert_memory_equal(two.envd[1], one.envd[0], CLUSTER_KEY_BYTES);
    assert_int_equal(parse(SECRET_B "\n" SECRET_A, &back), 0);
    assert_memory_equal(back.hop[0], one.hop[0], CLUSTER_KEY_BYTES);

    char hex_a[CLUSTER_HOP_AUTH_HEX_BYTES + 1], hex_b[CLUSTER_HOP_AUTH_HEX_BYTES + 1];
    cluster_hop_auth_hex(two.hop[0], hex_a);
    cluster_hop_auth_hex(two.hop[1], hex_b);
    /* Either is accepted during the rotation; after it only the one left. */
    assert_true(cluster_keys_hop_matches(&two, hex_a));
    assert_true(cluster_keys_hop_matches(&two, hex_b));
    assert_true(cluster_keys_hop_matches(&one, hex_b));
    assert_false(cluster_keys_hop_matches(&one, hex_a));
    /* Never the secret itself, nor a near miss, nor another length. */
    assert_false(cluster_keys_hop_matches(&two, SECRET_A));
    assert_false(cluster_keys_hop_matches(&two, ""));
    hex_a[10] ^= 1;
    assert_false(cluster_keys_hop_matches(&two, hex_a));
    hex_a[10] ^= 1;
    hex_a[63] = '\0';
    assert_false(cluster_keys_hop_matches(&two, hex_a));
}

static void
test_refused(void **state)
{
    (void) state;
    char long_secret[CLUSTER_TOKEN_MAX_BYTES + 2];
    memset(long_secret, 'x', sizeof(long_secret) - 1);
    long_secret[sizeof(long_secret) - 1] = '\0';
    char max_secret[CLUSTER_TOKEN_MAX_BYTES + 1];
    memset(max_secret, 'x', sizeof(max_secret) - 1);
    max_secret[sizeof(max_secret) - 1] = '\0';
    const char *bad[] = {
        "",
        "\n",
        "short",
        SECRET_A "\n\n",                            /* an empty line */
        "\n" SECRET_A,                              /* the current secret missing */
        SECRET_A "\r\n",                            /* CR is not part of a word */
        SECRET_A " # comment",                      /* one word a line */
        SECRET_A "\n" SECRET_B "\n" SECRET_A,       /* three */
        SECRET_A "\nshort",                         /* the second too short */
        "kkkkkkkkkkkkkkkk\x01kkkkkkkkkkkkkkkkkkkk", /* a control byte */
        "kkkkkkkkkkkkkkkk\xc3\xa9kkkkkkkkkkkkkkkkkkkk",
        long_secret,
    };
    ClusterKeys k = {.n = 7};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(bad[i], &k), -1);
        assert_int_equal(k.n, 7); /* untouched */
    }
    assert_int_equal(parse(max_secret, &k), 0);
    /* A NUL inside the text is not the end of it. */
    static const char nul[] = SECRET_A "\0" SECRET_B;
    assert_int_equal(cluster_keys_parse(nul, sizeof(nul) - 1, &k, NULL), -1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc5869),
        cmocka_unit_test(test_derived_keys),
        cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
