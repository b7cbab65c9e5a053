/* Unit tests of the code interpreter face's pure parts (hostd/e2b/e2b_json.c): context ids,
 * the /execute and /contexts bodies (strict: every refusal named), and code.* events turned
 * into the NDJSON messages @e2b/code-interpreter reads (parseOutput in its dist/index.mjs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2b_json.h"

static json_t *
js(const char *text)
{
    json_t *v = json_loads(text, JSON_ALLOW_NUL, NULL); /* NUL: as a hostile body may carry */
    assert_non_null(v);
    return v;
}

static void
assert_dump(json_t *v, const char *want)
{
    assert_non_null(v);
    char *got = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(v);
    assert_string_equal(got, want);
    free(got);
}

static void
test_context_ids(void **state)
{
    (void) state;
    uint32_t id = 7;
    assert_int_equal(e2b_code_context_parse("1", &id), 0);
    assert_int_equal(id, 1);
    assert_int_equal(e2b_code_context_parse("4294967295", &id), 0);
    assert_int_equal(id, UINT32_MAX);
    static const char *const bad[] = {"",   "0",  "01", "-1",         "+1",          " 1",
                                      "1 ", "1a", "x",  "4294967296", "99999999999", "1/2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        id = 7;
        assert_int_equal(e2b_code_context_parse(bad[i], &id), -1);
        assert_int_equal(id, 7); /* untouched */
    }
    assert_int_equal(e2b_code_context_parse(NULL, &id), -1);
}

static void
test_execute_body(void **state)
{
    (void) state;
    E2bExecute x = {0};
    Error *e = NULL;
    json_t *b = js("{\"code\":\"x + 1\",\"context_id\":\"3\",\"env_vars\":{\"A\":\"b\"}}");
    assert_int_equal(e2b_code_parse_execute(b, 100, &x, &e), 0);
    assert_string_equal(x.code, "x + 1");
    assert_int_equal(x.code_len, 5);
    assert_int_equal(x.context, 3);
    assert_non_null(x.env);
    json_decref(b);

    /* what the SDK sends for a plain runCode: nulls dropped by JSON.stringify, or present */
    b = js("{\"code\":\"\",\"language\":\"python\",\"context_id\":null,\"env_vars\":null}");
    assert_int_equal(e2b_code_parse_execute(b, 100, &x, &e), 0);
    assert_int_equal(x.context, 0);
    assert_int_equal(x.lang, CODE_LANG_PYTHON);
    assert_null(x.env);
    json_decref(b);

    /* E2B's normalize_language(): js is javascript, case and blanks do not count */
    static const struct {
        const char *body;
        CodeLanguage lang;
    } langs[] = {{"{\"code\":\"1\",\"language\":\"js\"}", CODE_LANG_JAVASCRIPT},
                 {"{\"code\":\"1\",\"language\":\"JavaScript\"}", CODE_LANG_JAVASCRIPT},
                 {"{\"code\":\"1\",\"language\":\"bash \"}", CODE_LANG_BASH},
                 {"{\"code\":\"1\",\"language\":\"\"}", CODE_LANG_PYTHON},
                 {"{\"code\":\"1\",\"language\":null}", CODE_LANG_PYTHON}};
    for (size_t i = 0; i < ELEMENTSOF(langs); i++) {
        b = js(langs[i].body);
        x.lang = CODE_LANG_COUNT;
        assert_int_equal(e2b_code_parse_execute(b, 100, &x, &e), 0);
        assert_int_equal(x.lang, langs[i].lang);
        json_decref(b);
    }

    static const char *const bad[][2] = {
        {"[]", "the body must be a JSON object"},
        {"{}", "code must be a string"},
        {"{\"code\":1}", "code must be a string"},
        {"{\"code\":\"12345678901\"}", "at most 10 bytes"},
        {"{\"code\":\"a\\u0000b\"}", "code must be a string"},
        {"{\"code\":\"1\",\"language\":\"r\"}", "python, javascript (or js) and bash (got 'r')"},
        {"{\"code\":\"1\",\"language\":\"ts\"}", "(got 'ts')"},
        {"{\"code\":\"1\",\"language\":3}", "language must be a string"},
        {"{\"code\":\"1\",\"context_id\":1}", "context_id must be"},
        {"{\"code\":\"1\",\"context_id\":\"01\"}", "context_id must be"},
        {"{\"code\":\"1\",\"context_id\":\"1\",\"language\":\"python\"}", "not both"},
        {"{\"code\":\"1\",\"env_vars\":[]}", "env_vars must be an object"},
        {"{\"code\":\"1\",\"env_vars\":{\"A\":1}}", "env_vars: keys"},
        {"{\"code\":\"1\",\"timeout\":5}", "unknown field 'timeout'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        b = js(bad[i][0]);
        x = (E2bExecute){.context = 9};
        assert_int_equal(e2b_code_parse_execute(b, 10, &x, &e), -1);
        assert_non_null(e);
        if (!strstr(e->message, bad[i][1]))
            fail_msg("%s: '%s' lacks '%s'", bad[i][0], e->message, bad[i][1]);
        assert_int_equal(e->category, E_INVALID);
        assert_int_equal(x.context, 9); /* untouched */
        error_free(e);
        e = NULL;
        json_decref(b);
    }
}

static void
test_context_body(void **state)
{
    (void) state;
    const char *cwd = "unset";
    CodeLanguage lang = CODE_LANG_BASH;
    Error *e = NULL;
    json_t *b = js("{\"language\":\"python\",\"cwd\":\"/home/user/p\"}");
    assert_int_equal(e2b_code_parse_context_new(b, &lang, &cwd, &e), 0);
    assert_string_equal(cwd, "/home/user/p");
    assert_int_equal(lang, CODE_LANG_PYTHON);
    json_decref(b);
    b = js("{}");
    assert_int_equal(e2b_code_parse_context_new(b, &lang, &cwd, &e), 0);
    assert_null(cwd);
    json_decref(b);
    b = js("{\"language\":\"js\"}");
    assert_int_equal(e2b_code_parse_context_new(b, &lang, &cwd, &e), 0);
    assert_int_equal(lang, CODE_LANG_JAVASCRIPT);
    json_decref(b);
    static const char *const bad[] = {"{\"cwd\":\"\"}",        "{\"cwd\":5}",
                                      "{\"language\":\"ts\"}", "{\"language\":\"java\"}",
                                      "{\"name\":\"x\"}",      "5"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        b = json_loads(bad[i], JSON_DECODE_ANY, NULL);
        assert_int_equal(e2b_code_parse_context_new(b, &lang, &cwd, &e), -1);
        assert_non_null(e);
        error_free(e);
        e = NULL;
        json_decref(b);
    }
    assert_dump(e2b_code_render_context(12, CODE_LANG_PYTHON, NULL),
                "{\"cwd\":\"/home/user\",\"id\":\"12\",\"language\":\"python\"}");
    assert_dump(e2b_code_render_context(4294967295u, CODE_LANG_JAVASCRIPT, "/home/user/p"),
                "{\"cwd\":\"/home/user/p\",\"id\":\"4294967295\",\"language\":\"javascript\"}");
    assert_dump(e2b_code_render_context(1, CODE_LANG_BASH, NULL),
                "{\"cwd\":\"/home/user\",\"id\":\"1\",\"language\":\"bash\"}");
}

static json_t *
message(const char *type, const char *data, const char *attrs, bool *last)
{
    json_t *a = attrs ? js(attrs) : NULL;
    json_t *m = e2b_code_event_message(type, data, data ? strlen(data) : 0, a,
                                       INT64_C(1764779503123456), last);
    json_decref(a);
    return m;
}

static void
test_event_messages(void **state)
{
    (void) state;
    bool last = true;
    assert_dump(message("code.stdout", "hello\n", "{\"context\":1,\"run\":2}", &last),
                "{\"text\":\"hello\\n\",\"timestamp\":1764779503123456000,\"type\":\"stdout\"}");
    assert_false(last);
    assert_dump(message("code.stderr", "warn", NULL, &last),
                "{\"text\":\"warn\",\"timestamp\":1764779503123456000,\"type\":\"stderr\"}");
    /* bytes that are not UTF-8 (the kernel's text is unchecked) become U+FFFD */
    assert_dump(
        message("code.stdout", "a\xff", NULL, &last),
        "{\"text\":\"a\xef\xbf\xbd\",\"timestamp\":1764779503123456000,\"type\":\"stdout\"}");
    /* formats under the SDK's names, opaque; an unnamed one under its MIME type (-> extra) */
    assert_dump(
        message("code.result", NULL,
                "{\"main\":true,\"data\":{\"text/plain\":\"42\",\"image/png\":\"iVBOR\","
                "\"text/html\":\"<table><script>x</script>\",\"application/json\":{\"a\":"
                "1},\"image/svg+xml\":\"<svg/>\",\"text/x-other\":\"o\"},\"run\":3}",
                &last),
        "{\"html\":\"<table><script>x</script>\",\"is_main_result\":true,\"json\":{\"a\":1},"
        "\"png\":\"iVBOR\",\"svg\":\"<svg/>\",\"text\":\"42\",\"text/x-other\":\"o\","
        "\"type\":\"result\"}");
    assert_false(last);
    assert_dump(message("code.result", NULL, "{\"data\":{\"text/markdown\":\"# t\"}}", &last),
                "{\"is_main_result\":false,\"markdown\":\"# t\",\"type\":\"result\"}");
    assert_dump(message("code.error", NULL,
                        "{\"name\":\"ZeroDivisionError\",\"value\":\"division by zero\","
                        "\"traceback\":\"Traceback...\"}",
                        &last),
                "{\"name\":\"ZeroDivisionError\",\"traceback\":\"Traceback...\","
                "\"type\":\"error\",\"value\":\"division by zero\"}");
    assert_false(last);
    assert_dump(message("code.done", NULL, "{\"execution_count\":5}", &last),
                "{\"execution_count\":5,\"type\":\"number_of_executions\"}");
    assert_true(last);
    last = false; /* a run failed without a count (its kernel exited) still ends */
    assert_dump(message("code.done", NULL, "{\"execution_count\":null}", &last),
                "{\"type\":\"end_of_execution\"}");
    assert_true(last);
    last = true;
    assert_null(message("code.requested", NULL, "{\"timeout_ms\":0}", &last));
    assert_null(message("code.context", NULL, "{\"state\":\"started\"}", &last));
    assert_null(message("exec.stdout", "x", NULL, &last));
    assert_false(last);
    /* a stored time beyond what nanoseconds in an int64 hold, or before 1970: bounded */
    json_t *m = e2b_code_event_message("code.stdout", "x", 1, NULL, INT64_MAX, &last);
    assert_int_equal(json_integer_value(json_object_get(m, "timestamp")), INT64_MAX / 1000 * 1000);
    json_decref(m);
    m = e2b_code_event_message("code.stderr", "x", 1, NULL, -5, &last);
    assert_int_equal(json_integer_value(json_object_get(m, "timestamp")), 0);
    json_decref(m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_ids),
        cmocka_unit_test(test_execute_body),
        cmocka_unit_test(test_context_body),
        cmocka_unit_test(test_event_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
