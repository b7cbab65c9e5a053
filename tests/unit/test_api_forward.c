/* Unit tests of forwarding's pure rules (hostd/api/api_forward_rules.c): which requests
 * forward, the upstream URL, which response headers come back, the owner's check of a
 * forwarded identity (the one-hop guard's input and the trust header: only on the
 * host-to-host listener), the hop's face names and the per-key tally that caps a tenant's
 * share. Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api_forward.h"

#define TOKEN "0123456789abcdef0123456789abcdef-host-secret"

static void
test_session_paths(void **state)
{
    (void) state;
    struct {
        const char *seg[6];
        bool forwards;
    } cases[] = {
        {{"v1", "sessions", "s_1", NULL}, true},
        {{"v1", "sessions", "s_1", "exec", NULL}, true},
        {{"v1", "sessions", "s_1", "events", NULL}, true},
        {{"v1", "sessions", "s_1", "files", "a", "b"}, true},
        {{"v1", "tasks", "s_1", "workspace", NULL}, true},
        {{"v1", "sessions", NULL}, false}, /* list and create: this host's own */
        {{"v1", "tasks", NULL}, false},
        {{"v1", "admin", "tenants", NULL}, false},
        {{"v1", "health", NULL}, false},
        {{"v2", "sessions", "s_1", NULL}, false},
        {{"metrics", NULL}, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = 0;
        while (n < 6 && cases[i].seg[n])
            n++;
        assert_int_equal(api_forward_is_session_path((char *const *) cases[i].seg, n),
                         cases[i].forwards);
    }
}

static void
test_is_create(void **state)
{
    (void) state;
    const struct {
        const char *method;
        const char *seg[4];
        bool create;
    } cases[] = {
        {"POST", {"v1", "sessions", NULL}, true},
        {"POST", {"v1", "tasks", NULL}, true},
        {"GET", {"v1", "sessions", NULL}, false}, /* the list: this host's own */
        {"PUT", {"v1", "tasks", NULL}, false},
        {"POST", {"v1", "sessions", "s_1", NULL}, false}, /* a session path, not a create */
        {"POST", {"v1", "admin", NULL}, false},
        {"POST", {"v2", "sessions", NULL}, false},
        {"POST", {"v1", NULL}, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = 0;
        while (n < 4 && cases[i].seg[n])
            n++;
        assert_int_equal(api_forward_is_create(cases[i].method, (char *const *) cases[i].seg, n),
                         cases[i].create);
    }
}

static void
test_url(void **state)
{
    (void) state;
    char buf[API_FORWARD_URL_MAX_BYTES + 1];
    struct {
        const char *base, *path, *query, *want; /* want NULL: refused */
    } cases[] = {
        {"http://127.0.0.1:8080", "/v1/sessions/s", "", "http://127.0.0.1:8080/v1/sessions/s"},
        {"http://h:1/", "/v1/sessions/s", NULL, "http://h:1/v1/sessions/s"},
        {"http://h:1//", "/v1/sessions/s/events", "follow=1&after=3",
         "http://h:1/v1/sessions/s/events?follow=1&after=3"},
        {"https://h.example/prefix", "/v1/x", "a=%20", "https://h.example/prefix/v1/x?a=%20"},
        {"ftp://h", "/v1/x", "", NULL},
        {"h:80", "/v1/x", "", NULL},
        {"http://h", "v1/x", "", NULL},
        {"http://h", "/v1/x", "a=b c", NULL},
        {"http://h", "/v1/x", "a=b#frag", NULL},
        {"http://h", "/v1/x", "a=\r\nX-Evil: 1", NULL},
        {"http://h?q", "/v1/x", "", NULL},
        {"http://h\n", "/v1/x", "", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int r = api_forward_url(cases[i].base, cases[i].path, cases[i].query, buf, sizeof(buf));
        if (!cases[i].want) {
            assert_int_equal(r, -1);
            continue;
        }
        assert_int_equal(r, 0);
        assert_string_equal(buf, cases[i].want);
    }
    /* Too long for the buffer: refused, never cut. */
    char small[25]; /* exactly the first URL and its NUL */
    assert_int_equal(api_forward_url("http://h:1", "/v1/sessions/s", "", small, sizeof(small)), 0);
    assert_int_equal(api_forward_url("http://h:1", "/v1/sessions/s/x", "", small, sizeof(small)),
                     -1);
}

static void
test_response_headers(void **state)
{
    (void) state;
    assert_true(api_forward_response_header_kept("Content-Disposition"));
    assert_true(api_forward_response_header_kept("x-stockade-workspace"));
    assert_true(api_forward_response_header_kept("Retry-After"));
    assert_false(api_forward_response_header_kept("Set-Cookie"));
    assert_false(api_forward_response_header_kept("Connection"));
    assert_false(api_forward_response_header_kept("Transfer-Encoding"));
    assert_false(api_forward_response_header_kept("Content-Length"));
}

/* The owner's credential check, as the cluster makes it (here: one accepted value). */
static bool
accept_token(void *userdata, const char *presented)
{
    return strcmp(userdata, presented) == 0;
}

static void
test_identity(void **state)
{
    (void) state;
    char tenant[API_FORWARD_TENANT_MAX_BYTES + 1] = "untouched";
    bool admin = false;
    char long_tenant[API_FORWARD_TENANT_MAX_BYTES + 2];
    memset(long_tenant, 'a', sizeof(long_tenant) - 1);
    long_tenant[sizeof(long_tenant) - 1] = '\0';

    /* Nothing forwarded on a client's listener: 1, outputs untouched. */
    assert_int_equal(
        api_forward_identity(accept_token, TOKEN, false, NULL, NULL, NULL, tenant, &admin), 1);
    assert_string_equal(tenant, "untouched");
    /* A client's listener takes none of the headers, not even with an accepted credential. */
    assert_int_equal(
        api_forward_identity(accept_token, TOKEN, false, TOKEN, "ten_abc", "0", tenant, &admin),
        -1);
    assert_int_equal(
        api_forward_identity(accept_token, TOKEN, false, NULL, "ten_abc", NULL, tenant, &admin),
        -1);
    assert_string_equal(tenant, "untouched");
    /* The host-to-host listener: accepted only with the credential. */
    assert_int_equal(
        api_forward_identity(accept_token, TOKEN, true, TOKEN, "ten_abc", "0", tenant, &admin), 0);
    assert_string_equal(tenant, "ten_abc");
    assert_false(admin);
    assert_int_equal(
        api_forward_identity(accept_token, TOKEN, true, TOKEN, "default", "1", tenant, &admin), 0);
    assert_true(admin);
    /* Forged headers: refused, whatever they combine. */
    struct {
        const char *expected, *presented, *tenant, *admin;
    } refused[] = {
        {TOKEN, NULL, "ten_abc", NULL},   /* the tenant header alone */
        {TOKEN, NULL, NULL, "1"},         /* the admin header alone */
        {TOKEN, "guess", "ten_abc", "1"}, /* a wrong credential */
        {TOKEN, TOKEN "x", "ten_abc", "1"},
        {TOKEN, TOKEN, NULL, "1"}, /* no tenant */
        {TOKEN, TOKEN, "", "0"},
        {TOKEN, TOKEN, "ten abc", "0"}, /* not an id */
        {TOKEN, TOKEN, "ten_a\r\nX: y", "0"},
        {TOKEN, TOKEN, long_tenant, "0"},
        {TOKEN, TOKEN, "ten_abc", "yes"}, /* admin is "0" or "1" */
        {NULL, TOKEN, "ten_abc", "0"},    /* not a cluster: nobody forwards here */
        {TOKEN, "", "ten_abc", "0"},
        {TOKEN, TOKEN, NULL, NULL}, /* the credential alone names nobody */
        {TOKEN, NULL, NULL, NULL},  /* a hop without any identity */
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        assert_int_equal(api_forward_identity(refused[i].expected ? accept_token : NULL,
                                              (void *) refused[i].expected, true,
                                              refused[i].presented, refused[i].tenant,
                                              refused[i].admin, tenant, &admin),
                         -1);
}

static void
test_hop_faces(void **state)
{
    (void) state;
    for (int f = 0; f < API_HOP_FACES; f++)
        assert_int_equal(api_hop_face_parse(api_hop_face_name((ApiHopFace) f)), f);
    assert_string_equal(api_hop_face_name(API_HOP_FACE_E2B_ENVD), "e2b-envd");
    const char *bad[] = {NULL, "", "API", "e2b", "e2b-envd ", "api\r\n", "e2b-api-x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(api_hop_face_parse(bad[i]), -1);
    assert_string_equal(api_hop_face_name(API_HOP_FACES), "");
}

static void
test_tally(void **state)
{
    (void) state;
    ApiTally *t = calloc(1, sizeof(*t));
    char key[API_FORWARD_TENANT_MAX_BYTES + 2];

    assert_non_null(t);
    /* A key's cap holds; another key is counted apart; leaving makes room again. */
    for (int i = 0; i < 3; i++)
        assert_true(api_tally_enter(t, "ten_a", 3));
    assert_false(api_tally_enter(t, "ten_a", 3));
    assert_true(api_tally_enter(t, "ten_b", 3));
    assert_int_equal(api_tally_count(t, "ten_a"), 3);
    assert_int_equal(api_tally_count(t, "ten_b"), 1);
    api_tally_leave(t, "ten_a");
    assert_true(api_tally_enter(t, "ten_a", 3));
    api_tally_leave(t, "nobody"); /* not counted: nothing */
    assert_int_equal(api_tally_count(t, "nobody"), 0);
    /* A key over the bound is never counted (it could not be told apart). */
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    assert_false(api_tally_enter(t, key, 100));
    assert_false(api_tally_enter(t, "ten_c", 0));
    /* A full table refuses a new key, keeps counting known ones, and takes new keys again
     * once a slot is free. */
    api_tally_leave(t, "ten_b");
    for (int i = 0; i < 3; i++)
        api_tally_leave(t, "ten_a");
    for (unsigned i = 0; i < API_TALLY_KEYS; i++) {
        snprintf(key, sizeof(key), "k%u", i);
        assert_true(api_tally_enter(t, key, 2));
    }
    assert_false(api_tally_enter(t, "one-more", 2));
    assert_true(api_tally_enter(t, "k7", 2));
    assert_false(api_tally_enter(t, "k7", 2));
    api_tally_leave(t, "k9");
    assert_true(api_tally_enter(t, "one-more", 2));
    assert_int_equal(api_tally_count(t, "one-more"), 1);
    assert_int_equal(api_tally_count(t, "k9"), 0);
    free(t);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_paths), cmocka_unit_test(test_is_create),
        cmocka_unit_test(test_url),           cmocka_unit_test(test_response_headers),
        cmocka_unit_test(test_identity),      cmocka_unit_test(test_hop_faces),
        cmocka_unit_test(test_tally),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
