/* Unit tests of the HTTP layer's pure parts (hostd/http/http_url.c, http_json.c,
 * http_tally.c): table-driven accepts and refusals, every cap at and one past its limit, and
 * the count per caller the shares add up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http_hello.h"
#include "http_json.h"
#include "http_tally.h"
#include "http_url.h"
#include "tlshello.h"

typedef struct {
    const char *target;
    const char *path;
    const char *segments[6]; /* NULL-terminated */
    const char *query[11];   /* key, value, key, value, ..., NULL */
} GoodCase;

static const GoodCase good[] = {
    {"/", "/", {NULL}, {NULL}},
    {"/v1/sessions", "/v1/sessions", {"v1", "sessions", NULL}, {NULL}},
    {"/v1/sessions/s1/events?after=12&follow=1",
     "/v1/sessions/s1/events",
     {"v1", "sessions", "s1", "events", NULL},
     {"after", "12", "follow", "1", NULL}},
    {"/f/a%20b/c%C3%A9", "/f/a%20b/c%C3%A9", {"f", "a b", "c\xc3\xa9", NULL}, {NULL}},
    {"/f/a+b", "/f/a+b", {"f", "a+b", NULL}, {NULL}}, /* '+' is literal in a path */
    {"/f/...", "/f/...", {"f", "...", NULL}, {NULL}}, /* only "." and ".." are special */
    {"/f/.x/x./%2e%2e%2e", "/f/.x/x./%2e%2e%2e", {"f", ".x", "x.", "...", NULL}, {NULL}},
    {"/q?a=1+2&b=%41&c&&d=x=y&e=",
     "/q",
     {"q", NULL},
     {"a", "1 2", "b", "A", "c", "", "d", "x=y", "e", "", NULL}},
    {"/q?%2B=%2b", "/q", {"q", NULL}, {"+", "+", NULL}},
    {"/q?", "/q", {"q", NULL}, {NULL}},
    {"/a:b@c;d=e!$&'()*,~_-", "/a:b@c;d=e!$&'()*,~_-", {"a:b@c;d=e!$&'()*,~_-", NULL}, {NULL}},
    {"/q?path=/a/b?c", "/q", {"q", NULL}, {"path", "/a/b?c", NULL}},
};

static void
test_good_targets(void **state)
{
    (void) state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const GoodCase *g = &good[i];
        HttpTarget t;
        Error *e = NULL;

        if (http_target_parse(g->target, strlen(g->target), &t, &e) < 0)
            fail_msg("%s: %s", g->target, e->message);
        assert_string_equal(t.path, g->path);
        size_t n = 0;
        while (g->segments[n])
            n++;
        assert_int_equal(t.n_segments, n);
        for (size_t k = 0; k < n; k++)
            assert_string_equal(t.segments[k], g->segments[k]);
        assert_null(t.segments[n]);
        size_t q = 0;
        for (; g->query[2 * q]; q++) {
            assert_true(q < t.n_query);
            assert_string_equal(t.query_keys[q], g->query[2 * q]);
            assert_string_equal(t.query_values[q], g->query[2 * q + 1]);
        }
        assert_int_equal(t.n_query, q);
        http_target_clear(&t);
    }
}

typedef struct {
    const char *target;
    ErrorCategory category;
} BadCase;

static const BadCase bad[] = {
    {"", E_INVALID},          {"a/b", E_INVALID},       {"*", E_INVALID},
    {"http://x/", E_INVALID}, {"//", E_INVALID},        {"//a", E_INVALID},
    {"/a//b", E_INVALID},     {"/a/", E_INVALID},       {"/.", E_INVALID},
    {"/..", E_INVALID},       {"/a/./b", E_INVALID},    {"/a/../b", E_INVALID},
    {"/%2e", E_INVALID},      {"/%2E%2e", E_INVALID},   {"/.%2e", E_INVALID},
    {"/a%2fb", E_INVALID},    {"/a%2Fb", E_INVALID},    {"/a%00b", E_INVALID},
    {"/%", E_INVALID},        {"/%4", E_INVALID},       {"/%zz", E_INVALID},
    {"/%4g", E_INVALID},      {"/a b", E_INVALID},      {"/a\\b", E_INVALID},
    {"/a#f", E_INVALID},      {"/a\"b", E_INVALID},     {"/a<b>", E_INVALID},
    {"/\x7f", E_INVALID},     {"/\x80", E_INVALID},     {"/a\tb", E_INVALID},
    {"/q?a=%zz", E_INVALID},  {"/q?a=%00", E_INVALID},  {"/q?%00=a", E_INVALID},
    {"/q?=a", E_INVALID},     {"/q?a=b#c", E_INVALID},  {"/q?a b", E_INVALID},
    {"/q?a=%", E_INVALID},    {"/q?a=\x01", E_INVALID}, {"/q?a=[", E_INVALID},
};

static void
test_bad_targets(void **state)
{
    (void) state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        HttpTarget t = {.path = (char *) "untouched"};
        Error *e = NULL;

        if (http_target_parse(bad[i].target, strlen(bad[i].target), &t, &e) == 0)
            fail_msg("accepted %s", bad[i].target);
        assert_non_null(e);
        assert_int_equal(e->category, bad[i].category);
        assert_string_equal(t.path, "untouched"); /* ret untouched on failure */
        error_free(e);
    }
    /* An embedded NUL, which a C string cannot show. */
    HttpTarget t;
    Error *e = NULL;
    assert_int_equal(http_target_parse("/a\0b", 4, &t, &e), -1);
    assert_int_equal(e->category, E_INVALID);
    error_free(e);
}

static char *
repeat(const char *head, const char *unit, size_t times, const char *tail)
{
    size_t len = strlen(head) + strlen(unit) * times + strlen(tail);
    char *s = malloc(len + 1), *p = s;

    p = stpcpy(p, head);
    for (size_t i = 0; i < times; i++)
        p = stpcpy(p, unit);
    strcpy(p, tail);
    return s;
}

static int
parse_category(const char *target)
{
    HttpTarget t;
    Error *e = NULL;

    if (http_target_parse(target, strlen(target), &t, &e) == 0) {
        http_target_clear(&t);
        return -1;
    }
    int c = (int) e->category;
    error_free(e);
    return c;
}

static void
test_caps(void **state)
{
    (void) state;
    char *s;

    s = repeat("/", "a", HTTP_PATH_MAX_BYTES - 1, ""); /* exactly the cap */
    assert_int_equal(parse_category(s), -1);
    free(s);
    s = repeat("/", "a", HTTP_PATH_MAX_BYTES, "");
    assert_int_equal(parse_category(s), E_TOO_LARGE);
    free(s);

    s = repeat("", "/a", HTTP_PATH_MAX_SEGMENTS, "");
    assert_int_equal(parse_category(s), -1);
    free(s);
    s = repeat("", "/a", HTTP_PATH_MAX_SEGMENTS + 1, "");
    assert_int_equal(parse_category(s), E_INVALID);
    free(s);

    s = repeat("/q?", "k=v&", HTTP_QUERY_MAX_PARAMS, "");
    assert_int_equal(parse_category(s), -1);
    free(s);
    s = repeat("/q?", "k=v&", HTTP_QUERY_MAX_PARAMS, "k=v");
    assert_int_equal(parse_category(s), E_INVALID);
    free(s);
    s = repeat("/q?", "&", HTTP_QUERY_MAX_BYTES, ""); /* empty pieces do not count */
    assert_int_equal(parse_category(s), -1);
    free(s);
    s = repeat("/q?", "&", HTTP_QUERY_MAX_BYTES + 1, "");
    assert_int_equal(parse_category(s), E_TOO_LARGE);
    free(s);
}

static void
test_percent_decode(void **state)
{
    (void) state;
    char *out;
    size_t len;
    Error *e = NULL;

    assert_int_equal(http_percent_decode("a%41%7e+", 8, true, &out, &len, NULL), 0);
    assert_string_equal(out, "aA~ ");
    assert_int_equal(len, 4);
    free(out);
    assert_int_equal(http_percent_decode("a+b", 3, false, &out, &len, NULL), 0);
    assert_string_equal(out, "a+b");
    free(out);
    assert_int_equal(http_percent_decode("", 0, false, &out, &len, NULL), 0);
    assert_string_equal(out, "");
    free(out);
    assert_int_equal(http_percent_decode("%ff%FF", 6, false, &out, &len, NULL), 0);
    assert_memory_equal(out, "\xff\xff", 3);
    free(out);
    assert_int_equal(http_percent_decode("%0", 2, false, &out, &len, &e), -1);
    assert_int_equal(e->category, E_INVALID);
    error_free(e);
}

static void
test_split_and_copy(void **state)
{
    (void) state;
    char **segs, **copy;
    size_t n;

    assert_int_equal(http_path_split("/x/%2e%2ex", 10, &segs, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_string_equal(segs[1], "..x");
    copy = http_strv_copy(segs, n);
    assert_string_equal(copy[0], "x");
    assert_null(copy[2]);
    http_strv_free(segs);
    http_strv_free(copy);
    http_strv_free(NULL);
}

/* The JSON nesting bound (http_json.c): at and one past the limit, brackets in strings and
 * escaped quotes do not count, closing brackets bring the depth back. */
static void
test_json_depth(void **state)
{
    (void) state;
    char deep[2 * 2000 + 1];
    for (size_t d = 1; d <= 2000; d *= 2) {
        memset(deep, '[', d);
        memset(deep + d, ']', d);
        assert_int_equal(http_json_depth_within(deep, 2 * d, HTTP_JSON_MAX_DEPTH),
                         d <= HTTP_JSON_MAX_DEPTH);
    }
    memset(deep, '{', HTTP_JSON_MAX_DEPTH);
    assert_true(http_json_depth_within(deep, HTTP_JSON_MAX_DEPTH, HTTP_JSON_MAX_DEPTH));
    deep[HTTP_JSON_MAX_DEPTH] = '[';
    assert_false(http_json_depth_within(deep, HTTP_JSON_MAX_DEPTH + 1, HTTP_JSON_MAX_DEPTH));

    static const struct {
        const char *text;
        bool ok; /* within 2 */
    } cases[] = {
        {"{\"a\":[1]}", true},
        {"{\"a\":[[1]]}", false},
        {"{\"a\":\"[[[[{{{{\"}", true},
        {"{\"a\":\"\\\"[[[\"}", true},           /* an escaped quote does not end the string */
        {"{\"a\":\"\\\\\",\"b\":[[1]]}", false}, /* an escaped backslash does */
        {"[1],[2],[3]", true},
        {"]]]]{[[", false}, /* stray closers do not buy depth */
        {"\"unterminated [[[", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(http_json_depth_within(cases[i].text, strlen(cases[i].text), 2),
                         cases[i].ok);
}

/* The count per caller: entries come and go with their counts, colliding keys stay apart,
 * a count never goes below zero, and a key the layer could not copy is refused. */
/* The one body parser both faces use: each refusal with its category and message. */
static void
test_json_object(void **state)
{
    static const struct {
        const char *text;
        size_t max_bytes;
        ErrorCategory cat; /* E_INTERNAL: accepted */
        const char *message;
    } cases[] = {
        {"", 0, E_INTERNAL, NULL},
        {"{\"a\":[1,{\"b\":null}]}", 0, E_INTERNAL, NULL},
        {" {} ", 4, E_INTERNAL, NULL},
        {" {}  ", 4, E_TOO_LARGE, "x is over 4 bytes"},
        {"[]", 0, E_INVALID, "x must be a JSON object"},
        {"\"s\"", 0, E_INVALID, "x is not JSON: "}, /* jansson: an array or object */
        {"{", 0, E_INVALID, "x is not JSON: "},
        {"{\"a\":1,\"a\":2}", 0, E_INVALID, "x is not JSON: duplicate object key"},
        {"{} {}", 0, E_INVALID, "x is not JSON: "},
        {"{\"a\":\"\\u0000\"}", 0, E_INVALID, "x is not JSON: "},
    };
    char deep[HTTP_JSON_MAX_DEPTH + 8];

    (void) state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Error *e = NULL;
        json_t *o =
            http_json_object(cases[i].text, strlen(cases[i].text), cases[i].max_bytes, "x", &e);
        if (cases[i].cat == E_INTERNAL) {
            if (!json_is_object(o))
                fail_msg("%s: %s", cases[i].text, e ? e->message : "not an object");
        } else {
            assert_null(o);
            assert_non_null(e);
            assert_int_equal(e->category, cases[i].cat);
            if (strncmp(e->message, cases[i].message, strlen(cases[i].message)) != 0)
                fail_msg("%s: %s", cases[i].text, e->message);
        }
        json_decref(o);
        error_free(e);
    }
    /* the bound is checked on the text: one level past it never reaches jansson */
    for (size_t d = HTTP_JSON_MAX_DEPTH; d <= HTTP_JSON_MAX_DEPTH + 1; d++) {
        Error *e = NULL;
        memset(deep, '[', d);
        deep[0] = '{';
        json_t *o = http_json_object(deep, d, 0, "x", &e);
        assert_null(o);
        assert_int_equal(e->category, E_INVALID);
        const char *want =
            d > HTTP_JSON_MAX_DEPTH ? "x nests deeper than 32 levels" : "x is not JSON: ";
        assert_int_equal(strncmp(e->message, want, strlen(want)), 0);
        error_free(e);
    }
}

static void
test_tally(void **state)
{
    HttpTally *t = http_tally_new();
    char key[HTTP_CALLER_MAX_BYTES + 1];

    (void) state;
    assert_non_null(t);
    assert_int_equal(http_tally_get(t, "tenant:a"), 0);
    assert_int_equal(http_tally_add(t, "tenant:a", 3), 0);
    assert_int_equal(http_tally_add(t, "tenant:a", 4), 0);
    assert_int_equal(http_tally_add(t, "tenant:b", 1), 0);
    assert_int_equal(http_tally_add(t, "tenant:c", 0), 0); /* nothing: no entry */
    assert_int_equal(http_tally_get(t, "tenant:a"), 7);
    assert_int_equal(http_tally_callers(t), 2);
    http_tally_sub(t, "tenant:a", 10); /* more than held: zero, and the entry goes */
    assert_int_equal(http_tally_get(t, "tenant:a"), 0);
    assert_int_equal(http_tally_callers(t), 1);
    http_tally_sub(t, "tenant:nobody", 1);
    assert_int_equal(http_tally_get(t, "tenant:b"), 1);

    assert_int_equal(http_tally_add(t, "", 1), -1);
    memset(key, 'k', sizeof(key) - 1);
    key[HTTP_CALLER_MAX_BYTES] = '\0'; /* one byte too long with its NUL */
    assert_int_equal(http_tally_add(t, key, 1), -1);
    key[HTTP_CALLER_MAX_BYTES - 1] = '\0'; /* the longest */
    assert_int_equal(http_tally_add(t, key, 1), 0);
    assert_int_equal(http_tally_get(t, key), 1);

    /* Many callers share the buckets: each keeps its own count. */
    for (unsigned i = 0; i < 2000; i++) {
        snprintf(key, sizeof(key), "addr:10.0.%u.%u", i / 250, i % 250);
        assert_int_equal(http_tally_add(t, key, i + 1), 0);
    }
    for (unsigned i = 0; i < 2000; i++) {
        snprintf(key, sizeof(key), "addr:10.0.%u.%u", i / 250, i % 250);
        assert_int_equal(http_tally_get(t, key), i + 1);
        http_tally_sub(t, key, i + 1);
    }
    assert_int_equal(http_tally_callers(t), 2);
    http_tally_free(t);
}

/* The TLS front door's judgment of a connection's first bytes (http_hello.c). */
static void
test_tls_hello(void **state)
{
    (void) state;
    static const struct {
        const char *bytes;
        size_t len;
        HttpHelloState want;
    } cases[] = {
        {"", 0, HTTP_HELLO_MORE},
        {"\x16", 1, HTTP_HELLO_MORE},
        {"\x16\x03\x01\x00", 4, HTTP_HELLO_MORE},
        {"\x16\x03\x01\x00\x02\x01", 6, HTTP_HELLO_MORE}, /* 1 of 2 body bytes */
        {"\x16\x03\x01\x00\x02\x01\x00", 7, HTTP_HELLO_COMPLETE},
        {"\x16\x03\x03\x00\x01\x01zzzz", 10, HTTP_HELLO_COMPLETE}, /* more after it */
        {"\x16\x03\x00\x00\x01\x01", 6, HTTP_HELLO_COMPLETE},      /* SSL 3.0's record version */
        {"GET / HTTP/1.1\r\n", 16, HTTP_HELLO_NOT_TLS},            /* plain HTTP */
        {"G", 1, HTTP_HELLO_NOT_TLS},
        {"\x17\x03\x03\x00\x01\x01", 6, HTTP_HELLO_NOT_TLS}, /* application data first */
        {"\x16\x02\x00", 3, HTTP_HELLO_NOT_TLS},             /* SSL 2 */
        {"\x16\x03\x05", 3, HTTP_HELLO_NOT_TLS},
        {"\x16\x03\x01\x00\x00", 5, HTTP_HELLO_NOT_TLS}, /* an empty record */
        {"\x16\x03\x01\x40\x01", 5, HTTP_HELLO_NOT_TLS}, /* over 2^14 */
        {"\x16\x03\x01\x40\x00", 5, HTTP_HELLO_MORE},    /* exactly 2^14: wait */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (http_tls_hello_state((const uint8_t *) cases[i].bytes, cases[i].len) != cases[i].want)
            fail_msg("case %zu", i);
    /* A real ClientHello: whole in one record, or cut into records (only the first counts). */
    uint8_t hello[TLSHELLO_MAX_BYTES];
    TlsHelloSpec spec = {.names = {"example.com"}};
    size_t n = tlshello_build(&spec, hello, sizeof(hello));
    for (size_t k = 0; k < n; k++)
        assert_int_equal(http_tls_hello_state(hello, k), HTTP_HELLO_MORE);
    assert_int_equal(http_tls_hello_state(hello, n), HTTP_HELLO_COMPLETE);
    spec.record_bytes = 40;
    n = tlshello_build(&spec, hello, sizeof(hello));
    assert_int_equal(http_tls_hello_state(hello, 44), HTTP_HELLO_MORE);
    assert_int_equal(http_tls_hello_state(hello, 45), HTTP_HELLO_COMPLETE);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_targets),   cmocka_unit_test(test_bad_targets),
        cmocka_unit_test(test_caps),           cmocka_unit_test(test_percent_decode),
        cmocka_unit_test(test_split_and_copy), cmocka_unit_test(test_json_depth),
        cmocka_unit_test(test_tally),          cmocka_unit_test(test_json_object),
        cmocka_unit_test(test_tls_hello),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
