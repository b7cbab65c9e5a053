/* Unit tests of the routes' small parsers (hostd/api/api_json_routes.c): ids in paths,
 * signals, a code run's body and a quota body, each as the API documents it (API.md). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admit.h"
#include "api_json.h"
#include "code_wire.h"

static json_t *
js(const char *text)
{
    json_t *v = json_loads(text, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    return v;
}

static void
test_id(void **state)
{
    (void) state;
    uint32_t v = 0;
    assert_int_equal(api_id_u32("1", &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(api_id_u32("4294967295", &v), 0);
    assert_int_equal(v, UINT32_MAX);
    /* One spelling per id: what strtoul also took is refused. */
    static const char *const bad[] = {
        "",   "0",  "00",         "07",  " 7",  "+7",          "-1",
        "7 ", "7a", "4294967296", "1e3", "0x7", "99999999999", "-18446744073709551609"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 12345;
        assert_int_equal(api_id_u32(bad[i], &v), -1);
        assert_int_equal(v, 12345); /* untouched */
    }
}

/* A terminal's size: both keys, integers 1..1000, nothing else; absent or null: none. */
static void
test_pty(void **state)
{
    (void) state;
    static const char *bad[] = {
        "{}",
        "{\"cols\":80}",
        "{\"cols\":0,\"rows\":24}",
        "{\"cols\":80,\"rows\":1001}",
        "{\"cols\":1001,\"rows\":24}",
        "{\"cols\":\"80\",\"rows\":24}",
        "{\"cols\":80.0,\"rows\":24}",
        "{\"cols\":80,\"rows\":24,\"x\":1}",
        "[80,24]",
        "true",
    };
    uint32_t cols = 7, rows = 7;
    Error *e = NULL;
    json_t *v = json_loads("{\"cols\":1000,\"rows\":1}", 0, NULL);

    assert_int_equal(api_json_pty(v, &cols, &rows, &e), 0);
    assert_int_equal(cols, 1000);
    assert_int_equal(rows, 1);
    json_decref(v);
    assert_int_equal(api_json_pty(NULL, &cols, &rows, &e), 0);
    assert_int_equal(cols, 0);
    assert_int_equal(api_json_pty_size(NULL, &cols, &rows, &e), -1); /* resize needs a body */
    error_free(e);
    e = NULL;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        assert_non_null(v);
        cols = rows = 7;
        assert_int_equal(api_json_pty(v, &cols, &rows, &e), -1);
        assert_int_equal(cols, 7);
        assert_non_null(e);
        error_free(e);
        e = NULL;
        json_decref(v);
    }
}

static void
test_query_number(void **state)
{
    (void) state;
    uint64_t v = 0;
    assert_int_equal(api_query_number("0644", 8, 0777, &v), 0);
    assert_int_equal(v, 0644);
    assert_int_equal(api_query_number("0", 8, 0777, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(api_query_number("777", 8, 0777, &v), 0);
    assert_int_equal(v, 0777);
    assert_int_equal(api_query_number("500", 10, 500, &v), 0);
    assert_int_equal(v, 500);
    assert_int_equal(api_query_number("9223372036854775807", 10, INT64_MAX, &v), 0);
    assert_true(v == INT64_MAX);
    /* What strtoul took: "abc" as 0 (a file of mode 000), "7x" as 7, "-1" as the largest. */
    static const struct {
        const char *s;
        unsigned base;
        uint64_t max;
    } bad[] = {{"abc", 8, 0777},
               {"", 8, 0777},
               {"7x", 8, 0777},
               {"1000", 8, 0777},
               {"8", 8, 0777},
               {"-1", 10, INT64_MAX},
               {" 5", 10, 500},
               {"+5", 10, 500},
               {"501", 10, 500},
               {"5 ", 10, 500},
               {"1e3", 10, 5000},
               {"9223372036854775808", 10, INT64_MAX},
               {"99999999999999999999999", 10, UINT64_MAX},
               {"18446744073709551616", 10, UINT64_MAX},
               {"12", 16, 100},
               {"9", 10, 5},
               {"17", 8, 5},
               {NULL, 10, 5}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 12345;
        assert_int_equal(api_query_number(bad[i].s, bad[i].base, bad[i].max, &v), -1);
        assert_int_equal(v, 12345);
    }
    assert_int_equal(api_query_number("18446744073709551615", 10, UINT64_MAX, &v), 0);
    assert_true(v == UINT64_MAX);
}

static void
test_signal(void **state)
{
    (void) state;
    static const struct {
        const char *json;
        int signo;
    } good[] = {{"9", SIGKILL},
                {"1", 1},
                {"64", 64},
                {"\"TERM\"", SIGTERM},
                {"\"SIGINT\"", SIGINT},
                {"\"HUP\"", SIGHUP},
                {"\"SIGUSR2\"", SIGUSR2},
                {"\"CONT\"", SIGCONT},
                {"\"STOP\"", SIGSTOP}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        json_t *v = js(good[i].json);
        int s = 0;
        assert_int_equal(api_json_signal(v, &s), 0);
        assert_int_equal(s, good[i].signo);
        json_decref(v);
    }
    static const char *const bad[] = {
        "0",     "65",   "-9",  "9.0", "\"term\"", "\"SIG\"", "\"SIGSIGTERM\"", "\"TERM\\u0000x\"",
        "\"9\"", "null", "[9]", "{}",  "true"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *v = js(bad[i]);
        int s = 77;
        assert_int_equal(api_json_signal(v, &s), -1);
        assert_int_equal(s, 77);
        json_decref(v);
    }
    int s = 77;
    assert_int_equal(api_json_signal(NULL, &s), -1); /* no "signal" key */
}

static void
expect_code_error(const char *body, const char *words)
{
    json_t *b = js(body);
    Error *e = NULL;
    uint32_t ctx = 0;
    CodeLanguage lang;
    EnvPair *env = NULL;
    size_t n = 0;
    assert_int_equal(api_json_code(b, &ctx, &lang, &env, &n, &e), -1);
    assert_non_null(e);
    assert_int_equal(e->category, E_INVALID);
    assert_non_null(strstr(e->message, words));
    assert_null(env);
    error_free(e);
    json_decref(b);
}

static void
test_code(void **state)
{
    (void) state;
    json_t *b = js("{\"code\": \"print(1)\", \"context\": 3, \"timeout_ms\": 5000,"
                   " \"env\": {\"A\": \"1\", \"B\": \"2\"}}");
    Error *e = NULL;
    uint32_t ctx = 0;
    CodeLanguage lang = CODE_LANG_BASH;
    EnvPair *env = NULL;
    size_t n = 0;
    assert_int_equal(api_json_code(b, &ctx, &lang, &env, &n, &e), 0);
    assert_int_equal(ctx, 3);
    assert_int_equal(lang, CODE_LANG_PYTHON);
    assert_int_equal(n, 2);
    api_free_env(env, n);
    json_decref(b);

    b = js("{\"code\": \"\"}");
    assert_int_equal(api_json_code(b, &ctx, &lang, &env, &n, &e), 0);
    assert_int_equal(ctx, 0); /* the default context */
    assert_int_equal(n, 0);
    json_decref(b);

    /* a language picks the default context of that language; E2B's names, any case */
    static const struct {
        const char *body;
        CodeLanguage lang;
    } langs[] = {{"{\"code\": \"1\", \"language\": \"javascript\"}", CODE_LANG_JAVASCRIPT},
                 {"{\"code\": \"1\", \"language\": \" JS \"}", CODE_LANG_JAVASCRIPT},
                 {"{\"code\": \"1\", \"language\": \"Bash\"}", CODE_LANG_BASH},
                 {"{\"code\": \"1\", \"language\": \"python\"}", CODE_LANG_PYTHON}};
    for (size_t i = 0; i < ELEMENTSOF(langs); i++) {
        b = js(langs[i].body);
        lang = CODE_LANG_COUNT;
        assert_int_equal(api_json_code(b, &ctx, &lang, &env, &n, &e), 0);
        assert_int_equal(lang, langs[i].lang);
        assert_int_equal(ctx, 0);
        json_decref(b);
    }
    expect_code_error("{\"code\": \"x\", \"language\": \"typescript\"}",
                      "run python, javascript (or js) and bash (got 'typescript')");
    expect_code_error("{\"code\": \"x\", \"language\": \"r\"}", "(got 'r')");
    expect_code_error("{\"code\": \"x\", \"language\": \"py\\u0000thon\"}",
                      "run python, javascript (or js) and bash");
    expect_code_error("{\"code\": \"x\", \"language\": \"\\u00e9\"}", "and bash");
    expect_code_error("{\"code\": \"x\", \"language\": 3}", "language must be a string");
    expect_code_error("{\"code\": \"x\", \"context\": 2, \"language\": \"bash\"}", "not both");

    expect_code_error("{}", "code must be a string");
    expect_code_error("{\"code\": 1}", "code must be a string");
    expect_code_error("{\"code\": \"x\", \"context\": 0}", "context must be a context id");
    expect_code_error("{\"code\": \"x\", \"context\": 4294967296}", "context must be");
    expect_code_error("{\"code\": \"x\", \"context\": \"1\"}", "context must be");
    expect_code_error("{\"code\": \"x\", \"timeout_ms\": -1}", "timeout_ms must be");
    expect_code_error("{\"code\": \"x\", \"timeout_ms\": 86400001}", "timeout_ms must be");
    expect_code_error("{\"code\": \"x\", \"env\": {\"A\": 1}}", "env.A must be a string");
    expect_code_error("{\"code\": \"x\", \"env\": {\"A\": \"a\\u0000b\"}}", "without NUL");

    /* The 1 MiB bound, at and one past it. */
    char *big = malloc(CODE_SOURCE_MAX_BYTES + 2);
    memset(big, 'x', CODE_SOURCE_MAX_BYTES + 1);
    big[CODE_SOURCE_MAX_BYTES + 1] = '\0';
    b = json_pack("{s:s}", "code", big);
    assert_int_equal(api_json_code(b, &ctx, &lang, &env, &n, &e), -1);
    error_free(e);
    e = NULL;
    json_decref(b);
    big[CODE_SOURCE_MAX_BYTES] = '\0';
    b = json_pack("{s:s}", "code", big);
    assert_int_equal(api_json_code(b, &ctx, &lang, &env, &n, &e), 0);
    json_decref(b);
    free(big);
}

static void
test_quota(void **state)
{
    (void) state;
    AdmitQuota q = {.max_sessions = 5, .output_bytes = 7};
    Error *e = NULL;
    json_t *b = js("{\"max_sessions\": 9, \"max_vcpus\": 0}");
    assert_int_equal(api_json_quota(b, &q, &e), 0);
    assert_int_equal(q.max_sessions, 9);
    assert_int_equal(q.max_vcpus, 0);
    assert_int_equal(q.output_bytes, 7); /* keys not named stay */
    json_decref(b);

    /* Every key, at its bound and one past it. */
    for (size_t i = 0; i < admit_quota_n_keys; i++) {
        const AdmitQuotaKey *k = &admit_quota_keys[i];
        AdmitQuota x = {0};
        b = json_pack("{s:I}", k->name, (json_int_t) k->max);
        assert_int_equal(api_json_quota(b, &x, &e), 0);
        assert_int_equal(admit_quota_get(&x, k), k->max);
        json_decref(b);
        if (k->max < (uint64_t) INT64_MAX) {
            b = json_pack("{s:I}", k->name, (json_int_t) k->max + 1);
            assert_int_equal(api_json_quota(b, &x, &e), -1);
            assert_non_null(strstr(e->message, k->name));
            error_free(e);
            e = NULL;
            json_decref(b);
        }
    }

    /* A body refused halfway changes nothing: the good key before the bad one is not kept. */
    static const char *const bad[] = {"{\"max_sessions\": 1, \"nope\": 1}",
                                      "{\"max_sessions\": 1, \"max_vcpus\": -1}",
                                      "{\"max_sessions\": 1, \"max_vcpus\": 1.5}",
                                      "{\"max_sessions\": 1, \"max_vcpus\": \"2\"}",
                                      "[]",
                                      "3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        AdmitQuota before = q;
        b = js(bad[i]);
        assert_int_equal(api_json_quota(b, &q, &e), -1);
        assert_int_equal(e->category, E_INVALID);
        assert_memory_equal(&q, &before, sizeof(q));
        error_free(e);
        e = NULL;
        json_decref(b);
    }
}

static SessionSpec *
spec_of(json_t *b, bool task, Error **e)
{
    SessionSpec *sp = calloc(1, sizeof(*sp));
    assert_non_null(sp);
    if (api_json_spec(b, task, sp, e) < 0) {
        api_spec_free(sp);
        return NULL;
    }
    return sp;
}

static void
expect_spec_error(const char *body, bool task, const char *words)
{
    json_t *b = js(body);
    Error *e = NULL;
    assert_null(spec_of(b, task, &e));
    assert_non_null(e);
    assert_int_equal(e->category, E_INVALID);
    if (!strstr(e->message, words))
        fail_msg("%s: '%s' lacks '%s'", body, e->message, words);
    error_free(e);
    json_decref(b);
}

static void
test_spec(void **state)
{
    (void) state;
    Error *e = NULL;
    json_t *b = js("{\"image\": \"python\", \"timeout_s\": 60, \"env\": {\"A\": \"1\"},"
                   " \"egress\": [\"pypi.org\", \"10.0.0.0/8\"], \"mirror\": false}");
    SessionSpec *sp = spec_of(b, false, &e);
    assert_non_null(sp);
    assert_string_equal(sp->pool, "python"); /* "image" is pool's other name */
    assert_false(sp->is_task);
    assert_false(sp->mirror);
    assert_true(sp->timeout_usec == 60 * 1000000ull);
    assert_int_equal(sp->n_env, 1);
    assert_int_equal(sp->n_egress, 2);
    assert_string_equal(sp->egress[1], "10.0.0.0/8");
    assert_null(sp->argv); /* a session's body has no argv: ignored, not read */
    api_spec_free(sp);
    json_decref(b);

    b = js("{\"pool\": \"minimal\", \"egress\": true, \"argv\": [\"echo\", \"hi\"],"
           " \"cwd\": \"sub\", \"files\": [{\"path\": \"a\", \"content\": \"x\"}]}");
    sp = spec_of(b, true, &e);
    assert_non_null(sp);
    assert_true(sp->is_task && sp->mirror && sp->egress_all);
    assert_int_equal(sp->argc, 2);
    assert_string_equal(sp->cwd, "sub");
    assert_int_equal(sp->n_files, 1);
    api_spec_free(sp);
    json_decref(b);

    expect_spec_error("{}", false, "pool (or image)");
    expect_spec_error("{\"pool\": 3}", false, "pool (or image)");
    expect_spec_error("{\"pool\": \"p\", \"mirror\": 1}", false, "mirror must be");
    expect_spec_error("{\"pool\": \"p\", \"timeout_s\": 0}", false, "timeout_s");
    expect_spec_error("{\"pool\": \"p\", \"egress\": \"pypi.org\"}", false, "egress must be");
    expect_spec_error("{\"pool\": \"p\", \"egress\": [\"\"]}", false, "egress[0]");
    expect_spec_error("{\"pool\": \"p\", \"egress\": [\"a\", 2]}", false, "egress[1]");
    expect_spec_error("{\"pool\": \"p\"}", true, "argv");
    expect_spec_error("{\"pool\": \"p\", \"argv\": [\"x\"], \"cwd\": 1}", true, "cwd");
    expect_spec_error("{\"pool\": \"p\", \"argv\": [\"x\"], \"files\": {}}", true, "files");

    /* Egress entries at the bound and one past it. */
    char entry[EGRESS_ENTRY_MAX_BYTES + 2];
    memset(entry, 'a', sizeof(entry) - 1);
    entry[EGRESS_ENTRY_MAX_BYTES + 1] = '\0';
    b = json_pack("{s:s,s:[s]}", "pool", "p", "egress", entry);
    assert_null(spec_of(b, false, &e));
    error_free(e);
    e = NULL;
    json_decref(b);
    entry[EGRESS_ENTRY_MAX_BYTES] = '\0';
    b = json_pack("{s:s,s:[s]}", "pool", "p", "egress", entry);
    sp = spec_of(b, false, &e);
    assert_non_null(sp);
    api_spec_free(sp);
    json_decref(b);
}

static void
expect_exec_error(const char *body, const char *words)
{
    json_t *b = js(body);
    Error *e = NULL;
    ExecSpec *sp = calloc(1, sizeof(*sp));
    assert_int_equal(api_json_exec(b, sp, &e), -1);
    api_exec_free(sp);
    assert_int_equal(e->category, E_INVALID);
    if (!strstr(e->message, words))
        fail_msg("%s: '%s' lacks '%s'", body, e->message, words);
    error_free(e);
    json_decref(b);
}

static void
test_exec(void **state)
{
    (void) state;
    Error *e = NULL;
    json_t *b = js("{\"argv\": [\"sh\"], \"cwd\": \"/tmp\", \"user\": \"root\","
                   " \"pty\": {\"cols\": 100, \"rows\": 30}, \"timeout_s\": 5}");
    ExecSpec *sp = calloc(1, sizeof(*sp));
    assert_int_equal(api_json_exec(b, sp, &e), 0);
    assert_string_equal(sp->cwd, "/tmp");
    assert_true(sp->as_root);
    assert_true(sp->stdin_open); /* a terminal implies stdin */
    assert_int_equal(sp->pty_cols, 100);
    assert_int_equal(sp->pty_rows, 30);
    api_exec_free(sp);
    json_decref(b);

    b = js("{\"argv\": [\"true\"], \"user\": \"\", \"stdin\": false}");
    sp = calloc(1, sizeof(*sp));
    assert_int_equal(api_json_exec(b, sp, &e), 0);
    assert_false(sp->as_root || sp->stdin_open);
    assert_null(sp->cwd);
    api_exec_free(sp);
    json_decref(b);

    expect_exec_error("{}", "argv");
    expect_exec_error("{\"argv\": [\"x\"], \"user\": \"bob\"}", "only \"root\"");
    expect_exec_error("{\"argv\": [\"x\"], \"user\": 0}", "user must be a string");
    expect_exec_error("{\"argv\": [\"x\"], \"cwd\": 1}", "cwd must be a string");
    expect_exec_error("{\"argv\": [\"x\"], \"stdin\": \"yes\"}", "stdin a boolean");
    expect_exec_error("{\"argv\": [\"x\"], \"timeout_s\": -1}", "timeout_s");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id),     cmocka_unit_test(test_query_number),
        cmocka_unit_test(test_signal), cmocka_unit_test(test_pty),
        cmocka_unit_test(test_code),   cmocka_unit_test(test_quota),
        cmocka_unit_test(test_spec),   cmocka_unit_test(test_exec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
