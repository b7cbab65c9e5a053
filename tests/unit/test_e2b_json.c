/* Unit tests of the E2B faces' JSON (hostd/e2b/e2b_json.c): what the SDK sends, parsed and
 * refused, and what it reads, rendered with exactly the fields its schemas know. */
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
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

/* The rendering's compact text with sorted keys, for exact comparisons. */
static char *
dump(json_t *v)
{
    assert_non_null(v);
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(v);
    return s;
}

static void
assert_dump(json_t *v, const char *want)
{
    char *got = dump(v);
    assert_string_equal(got, want);
    free(got);
}

static void
test_new_sandbox(void **state)
{
    (void) state;
    E2bNewSandbox n;
    Error *e = NULL;
    /* what Sandbox.create({metadata, envs, timeoutMs}) sends to POST /v2/sandboxes */
    json_t *b = js("{\"templateID\":\"base\",\"metadata\":{\"a\":\"1\"},\"envVars\":{\"K\":\"v\"},"
                   "\"timeout\":10,\"allow_internet_access\":true,\"secure\":true}");
    assert_int_equal(e2b_parse_new_sandbox(b, true, &n, &e), 0);
    assert_string_equal(n.template_id, "base");
    assert_int_equal(n.timeout_s, 10);
    assert_string_equal(json_string_value(json_object_get(n.env, "K")), "v");
    assert_string_equal(json_string_value(json_object_get(n.metadata, "a")), "1");
    json_decref(b);
    b = js("{\"templateID\":\"base\",\"envs\":{\"K\":\"v\"}}"); /* older clients' name */
    assert_int_equal(e2b_parse_new_sandbox(b, true, &n, &e), 0);
    assert_int_equal(n.timeout_s, E2B_DEFAULT_TIMEOUT_S);
    assert_non_null(n.env);
    json_decref(b);
    b = js("{\"templateID\":\"base\"}");
    assert_int_equal(e2b_parse_new_sandbox(b, false, &n, &e), 0);
    assert_int_equal(n.timeout_s, E2B_V1_DEFAULT_TIMEOUT_S);
    json_decref(b);
    static const char *const bad[] = {
        "{}", "{\"templateID\":\"\"}", "{\"templateID\":3}",
        "{\"templateID\":\"b\",\"timeout\":-1}", "{\"templateID\":\"b\",\"timeout\":\"9\"}",
        "{\"templateID\":\"b\",\"timeout\":86401}", "{\"templateID\":\"b\",\"metadata\":[]}",
        "{\"templateID\":\"b\",\"metadata\":{\"a\":1}}", "{\"templateID\":\"b\",\"envVars\":{\"\":\"x\"}}",
        "{\"templateID\":\"b\",\"autoPause\":true}",
        "{\"templateID\":\"b\",\"autoResume\":{\"enabled\":true}}",
        "{\"templateID\":\"b\",\"volumeMounts\":[{\"name\":\"v\",\"path\":\"/v\"}]}",
        "{\"templateID\":\"b\",\"mcp\":{}}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        b = js(bad[i]);
        assert_int_equal(e2b_parse_new_sandbox(b, true, &n, &e), -1);
        assert_int_equal(e->category, E_INVALID);
        error_free(e);
        e = NULL;
        json_decref(b);
    }
}

static void
test_timeout_body(void **state)
{
    (void) state;
    uint64_t t = 7;
    Error *e = NULL;
    json_t *b = js("{\"timeout\":120}");
    assert_int_equal(e2b_parse_timeout(b, true, &t, &e), 0);
    assert_int_equal(t, 120);
    json_decref(b);
    b = js("{}");
    assert_int_equal(e2b_parse_timeout(b, false, &t, &e), 0); /* connect: optional */
    assert_int_equal(t, 120);
    assert_int_equal(e2b_parse_timeout(b, true, &t, &e), -1); /* set timeout: required */
    error_free(e);
    json_decref(b);
    assert_int_equal(e2b_parse_timeout(NULL, false, &t, NULL), 0); /* no body at all */
}

static void
test_render_sandbox(void **state)
{
    (void) state;
    json_t *meta = js("{\"suite\":\"x\"}");
    E2bSandboxView v = {.id = "abcdefghijklmnopqrstuvwxyz", .template_id = "base",
                        .token = "tok", .domain = "stockade.local", .metadata = meta,
                        .started_usec = 1795994018759123, .end_usec = 1795994318759123,
                        .vcpus = 1, .memory_mib = 384, .disk_mib = 128};
    assert_dump(e2b_render_sandbox(&v),
                "{\"alias\":\"base\",\"clientID\":\"stockade\",\"domain\":\"stockade.local\","
                "\"envdAccessToken\":\"tok\",\"envdVersion\":\"" E2B_ENVD_VERSION "\","
                "\"sandboxID\":\"abcdefghijklmnopqrstuvwxyz\",\"templateID\":\"base\","
                "\"trafficAccessToken\":\"tok\"}");
    assert_dump(e2b_render_detail(&v, true),
                "{\"alias\":\"base\",\"clientID\":\"stockade\",\"cpuCount\":1,\"diskSizeMB\":128,"
                "\"endAt\":\"2026-11-29T23:18:38.759Z\",\"envdVersion\":\"" E2B_ENVD_VERSION "\","
                "\"memoryMB\":384,\"metadata\":{\"suite\":\"x\"},"
                "\"sandboxID\":\"abcdefghijklmnopqrstuvwxyz\","
                "\"startedAt\":\"2026-11-29T23:13:38.759Z\",\"state\":\"running\","
                "\"templateID\":\"base\",\"volumeMounts\":[]}");
    json_t *d = e2b_render_detail(&v, false);
    assert_string_equal(json_string_value(json_object_get(d, "envdAccessToken")), "tok");
    assert_true(json_is_false(json_object_get(d, "allowInternetAccess")));
    assert_non_null(json_object_get(d, "lifecycle"));
    json_decref(d);
    assert_int_equal(meta->refcount, 1); /* copied, never shared with another thread */
    json_decref(meta);
    assert_dump(e2b_render_api_error(404, "gone"), "{\"code\":404,\"message\":\"gone\"}");
}

static void
test_start_and_selectors(void **state)
{
    (void) state;
    E2bStart s;
    E2bSelector sel;
    Error *e = NULL;
    int signo;
    /* commands.run('echo hi', {envs, cwd}) */
    json_t *m = js("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi\"],"
                   "\"envs\":{\"A\":\"b\"},\"cwd\":\"/home/user\"},\"stdin\":false,\"tag\":\"t\"}");
    assert_int_equal(e2b_parse_start(m, &s, &e), 0);
    assert_string_equal(s.cmd, "/bin/bash");
    assert_int_equal(json_array_size(s.args), 3);
    assert_string_equal(s.cwd, "/home/user");
    assert_string_equal(s.tag, "t");
    assert_false(s.stdin_open);
    json_decref(m);
    m = js("{\"process\":{\"args\":[]}}");
    assert_int_equal(e2b_parse_start(m, &s, &e), -1);
    error_free(e);
    e = NULL;
    json_decref(m);
    m = js("{\"process\":{\"cmd\":\"x\",\"envs\":{\"A\":1}}}");
    assert_int_equal(e2b_parse_start(m, &s, &e), -1);
    error_free(e);
    e = NULL;
    json_decref(m);

    m = js("{\"process\":{\"pid\":7},\"signal\":\"SIGNAL_SIGKILL\"}");
    assert_int_equal(e2b_parse_selector(m, &sel, &e), 0);
    assert_int_equal(sel.pid, 7);
    assert_null(sel.tag);
    assert_int_equal(e2b_parse_signal(m, &signo, &e), 0);
    assert_int_equal(signo, 9);
    json_decref(m);
    m = js("{\"process\":{\"tag\":\"srv\"},\"signal\":15}");
    assert_int_equal(e2b_parse_selector(m, &sel, &e), 0);
    assert_string_equal(sel.tag, "srv");
    assert_int_equal(e2b_parse_signal(m, &signo, &e), 0);
    assert_int_equal(signo, 15);
    json_decref(m);
    m = js("{\"process\":{\"pid\":\"12\"}}"); /* ProtoJSON also allows numbers as strings */
    assert_int_equal(e2b_parse_selector(m, &sel, &e), 0);
    assert_int_equal(sel.pid, 12);
    json_decref(m);
    static const char *const bad[] = {"{}", "{\"process\":{}}", "{\"process\":{\"pid\":0}}",
                                      "{\"process\":{\"pid\":4294967296}}",
                                      "{\"process\":{\"pid\":1,\"tag\":\"x\"}}",
                                      "{\"process\":{\"tag\":\"\"}}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        m = js(bad[i]);
        assert_int_equal(e2b_parse_selector(m, &sel, &e), -1);
        error_free(e);
        e = NULL;
        json_decref(m);
    }
    m = js("{\"signal\":\"SIGNAL_UNSPECIFIED\"}");
    assert_int_equal(e2b_parse_signal(m, &signo, &e), -1);
    error_free(e);
    json_decref(m);
}

static void
test_input(void **state)
{
    (void) state;
    uint8_t *data;
    size_t len;
    Error *e = NULL;
    json_t *m = js("{\"process\":{\"pid\":1},\"input\":{\"stdin\":\"aGkK\"}}");
    assert_int_equal(e2b_parse_input(m, &data, &len, &e), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "hi\n", 3);
    free(data);
    json_decref(m);
    m = js("{\"input\":{\"pty\":\"aGkK\"}}"); /* typed on the terminal */
    assert_int_equal(e2b_parse_input(m, &data, &len, &e), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "hi\n", 3);
    free(data);
    json_decref(m);
    m = js("{\"input\":{\"pty\":\"aGkK\",\"stdin\":\"aGkK\"}}");
    assert_int_equal(e2b_parse_input(m, &data, &len, &e), -1);
    error_free(e);
    e = NULL;
    json_decref(m);
    m = js("{\"input\":{\"stdin\":\"not base64!\"}}");
    assert_int_equal(e2b_parse_input(m, &data, &len, &e), -1);
    error_free(e);
    json_decref(m);
}

/* Start's and Update's pty.size: 1..PTY_*_MAX each, both required; absent or null: none. */
static void
test_pty_size(void **state)
{
    (void) state;
    static const char *bad[] = {
        "{\"pty\":{}}",
        "{\"pty\":{\"size\":{\"cols\":80}}}",
        "{\"pty\":{\"size\":{\"cols\":0,\"rows\":24}}}",
        "{\"pty\":{\"size\":{\"cols\":80,\"rows\":1001}}}",
        "{\"pty\":{\"size\":{\"cols\":1001,\"rows\":24}}}",
        "{\"pty\":{\"size\":{\"cols\":\"80\",\"rows\":24}}}",
        "{\"pty\":{\"size\":{\"cols\":-1,\"rows\":24}}}",
        "{\"pty\":[80,24]}",
    };
    uint32_t cols = 7, rows = 7;
    Error *e = NULL;
    json_t *m = js("{\"pty\":{\"size\":{\"cols\":1000,\"rows\":1}}}");

    assert_int_equal(e2b_parse_pty(m, &cols, &rows, &e), 0);
    assert_int_equal(cols, 1000);
    assert_int_equal(rows, 1);
    json_decref(m);
    m = js("{\"pty\":null}");
    assert_int_equal(e2b_parse_pty(m, &cols, &rows, &e), 0);
    assert_int_equal(cols, 0);
    json_decref(m);
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        m = js(bad[i]);
        assert_int_equal(e2b_parse_pty(m, &cols, &rows, &e), -1);
        assert_non_null(e);
        error_free(e);
        e = NULL;
        json_decref(m);
    }
}

static void
test_process_events(void **state)
{
    (void) state;
    assert_dump(e2b_event_start(3), "{\"event\":{\"start\":{\"pid\":3}}}");
    assert_dump(e2b_event_data(false, (const uint8_t *) "hi\n", 3),
                "{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}");
    assert_dump(e2b_event_data(true, (const uint8_t *) "\xff", 1),
                "{\"event\":{\"data\":{\"stderr\":\"/w==\"}}}");
    assert_dump(e2b_event_end(0, 0, NULL),
                "{\"event\":{\"end\":{\"exitCode\":0,\"exited\":true,\"status\":\"exit status 0\"}}}");
    assert_dump(e2b_event_end(-1, 9, NULL),
                "{\"event\":{\"end\":{\"exitCode\":-1,\"exited\":false,\"status\":\"signal: "
                "killed\"}}}");
    assert_dump(e2b_event_end(127, 0, "no such file"),
                "{\"event\":{\"end\":{\"error\":\"no such file\",\"exitCode\":127,\"exited\":true,"
                "\"status\":\"error\"}}}");
    assert_dump(e2b_event_keepalive(true), "{\"event\":{\"keepalive\":{}}}");
    assert_dump(e2b_event_keepalive(false), "{\"keepalive\":{}}");
    assert_dump(e2b_end_stream(true, CONNECT_UNKNOWN, NULL), "{}");
    assert_dump(e2b_end_stream(false, CONNECT_DEADLINE_EXCEEDED, "late"),
                "{\"error\":{\"code\":\"deadline_exceeded\",\"message\":\"late\"}}");
    json_t *cfg = js("{\"cmd\":\"/bin/bash\",\"args\":[\"-c\",\"x\"]}");
    assert_dump(e2b_process_info(2, "t", cfg),
                "{\"config\":{\"args\":[\"-c\",\"x\"],\"cmd\":\"/bin/bash\"},\"pid\":2,\"tag\":\"t\"}");
    assert_int_equal(cfg->refcount, 1);
    json_decref(cfg);
}

/* A result's text as E2B's server gives it: one pair of quotes off a string's repr, exactly
 * its rule (ends that match, either kind; "'" alone is ""), nothing else touched. */
static void
test_code_result_text(void **state)
{
    (void) state;
    static const char *const cases[][2] = {
        {"'abc'", "abc"},         {"\"abc\"", "abc"}, {"''", ""},     {"'", ""},
        {"'a\"", "'a\""},         {"42", "42"},       {"", ""},       {"'it''s'", "it''s"},
        {"[1, 'x']", "[1, 'x']"}, {"\"a'", "\"a'"},   {"'\\n'", "\\n"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *attrs = json_pack("{s:b,s:{s:s,s:s}}", "main", 1, "data", "text/plain",
                                  cases[i][0], "text/html", cases[i][0]);
        bool last = true;
        json_t *m = e2b_code_event_message("code.result", NULL, 0, attrs, 0, &last);
        assert_false(last);
        assert_string_equal(json_string_value(json_object_get(m, "text")), cases[i][1]);
        /* other formats pass as they are */
        assert_string_equal(json_string_value(json_object_get(m, "html")), cases[i][0]);
        json_decref(m);
        json_decref(attrs);
    }
}

static void
test_entries(void **state)
{
    (void) state;
    E2bEntry f = {.name = "a.txt", .type = E2B_FILE_FILE, .size = 1234567890123,
                  .mode = 0644, .mtime_ns = 1795994018759123000};
    assert_dump(e2b_render_entry(&f, "/home/user/a.txt"),
                "{\"group\":\"user\",\"mode\":420,\"modifiedTime\":\"2026-11-29T23:13:38.759Z\","
                "\"name\":\"a.txt\",\"owner\":\"user\",\"path\":\"/home/user/a.txt\","
                "\"permissions\":\"-rw-r--r--\",\"size\":\"1234567890123\","
                "\"type\":\"FILE_TYPE_FILE\"}");
    E2bEntry l = {.name = "l", .type = E2B_FILE_SYMLINK, .mode = 0777, .symlink_target = "x"};
    json_t *o = e2b_render_entry(&l, "/workspace/l");
    assert_string_equal(json_string_value(json_object_get(o, "type")), "FILE_TYPE_SYMLINK");
    assert_string_equal(json_string_value(json_object_get(o, "permissions")), "lrwxrwxrwx");
    assert_string_equal(json_string_value(json_object_get(o, "symlinkTarget")), "x");
    json_decref(o);
    /* a link as envd reports it: its destination's type and mode, the link's own "L" rwx */
    E2bEntry r = {.name = "l",
                  .type = E2B_FILE_DIR,
                  .mode = 0750,
                  .symlink_target = "/w/d",
                  .link = true,
                  .link_mode = 0777};
    assert_dump(e2b_render_entry(&r, "/home/user/l"),
                "{\"group\":\"user\",\"mode\":488,\"modifiedTime\":\"1970-01-01T00:00:00.000Z\","
                "\"name\":\"l\",\"owner\":\"user\",\"path\":\"/home/user/l\","
                "\"permissions\":\"Lrwxrwxrwx\",\"size\":\"0\",\"symlinkTarget\":\"/w/d\","
                "\"type\":\"FILE_TYPE_DIRECTORY\"}");
    E2bEntry d = {.name = "bad\xff", .type = E2B_FILE_DIR, .mode = 0755};
    o = e2b_render_entry(&d, "/workspace/bad\xff");
    assert_string_equal(json_string_value(json_object_get(o, "name")), "bad\xef\xbf\xbd");
    assert_string_equal(json_string_value(json_object_get(o, "permissions")), "drwxr-xr-x");
    json_decref(o);
    assert_dump(e2b_render_fs_event("d/x.txt", true, NULL),
                "{\"filesystem\":{\"name\":\"d/x.txt\",\"type\":\"EVENT_TYPE_REMOVE\"}}");
    assert_dump(e2b_render_write_info("a.txt", "/home/user/a.txt"),
                "{\"name\":\"a.txt\",\"path\":\"/home/user/a.txt\",\"type\":\"file\"}");
}

static void
test_lossy_strings(void **state)
{
    (void) state;
    static const struct {
        const char *in;
        size_t len;
        const char *out;
    } cases[] = {
        {"plain", 5, "plain"},
        {"\xc3\xa5", 2, "\xc3\xa5"},
        {"a\xc3", 2, "a\xef\xbf\xbd"},              /* cut sequence */
        {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"}, /* overlong */
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
        {"\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *s = e2b_json_string_lossy(cases[i].in, cases[i].len);
        assert_non_null(s);
        assert_string_equal(json_string_value(s), cases[i].out);
        json_decref(s);
    }
}

/* A key nested deeper than a handler thread's stack can dump (issue 14): the kept config
 * holds only cmd, args, envs and cwd, so neither it nor List's dump of it carries the key. */
static char *
deep_start_message(size_t depth)
{
    const char *head = "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-c\",\"x\"],\"deep\":";
    const char *tail = ",\"cwd\":\"/home/user\"},\"tag\":\"t\"}";
    size_t n = strlen(head) + 2 * depth + strlen(tail) + 1;
    char *s = malloc(n), *p = s;
    assert_non_null(s);
    p = stpcpy(p, head);
    for (size_t i = 0; i < depth; i++)
        *p++ = '[';
    for (size_t i = 0; i < depth; i++)
        *p++ = ']';
    strcpy(p, tail);
    return s;
}

static void
test_start_config_is_rebuilt(void **state)
{
    (void) state;
    E2bStart s;
    Error *e = NULL;
    char *text = deep_start_message(1900);
    json_t *m = js(text);
    assert_int_equal(e2b_parse_start(m, &s, &e), 0);
    json_t *cfg = e2b_start_config(&s);
    assert_dump(e2b_process_info(3, s.tag, cfg),
                "{\"config\":{\"args\":[\"-c\",\"x\"],\"cmd\":\"/bin/bash\",\"cwd\":"
                "\"/home/user\",\"envs\":{}},\"pid\":3,\"tag\":\"t\"}");
    json_decref(cfg);
    json_decref(m);
    free(text);

    /* args: strings only, at most ARGV_MAX_COUNT - 1 of them */
    static const char *const bad[] = {"{\"process\":{\"cmd\":\"x\",\"args\":[[]]}}",
                                      "{\"process\":{\"cmd\":\"x\",\"args\":{}}}",
                                      "{\"process\":{\"cmd\":\"x\",\"args\":[1]}}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        m = js(bad[i]);
        assert_int_equal(e2b_parse_start(m, &s, &e), -1);
        error_free(e);
        e = NULL;
        json_decref(m);
    }
    json_t *args = json_array();
    for (size_t i = 0; i < ARGV_MAX_COUNT; i++)
        json_array_append_new(args, json_string("a"));
    m = json_pack("{s:{s:s,s:o}}", "process", "cmd", "x", "args", args);
    assert_int_equal(e2b_parse_start(m, &s, &e), -1);
    error_free(e);
    e = NULL;
    json_array_remove(args, 0);
    assert_int_equal(e2b_parse_start(m, &s, &e), 0);
    json_decref(m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_sandbox),      cmocka_unit_test(test_timeout_body),
        cmocka_unit_test(test_render_sandbox),   cmocka_unit_test(test_start_and_selectors),
        cmocka_unit_test(test_input),            cmocka_unit_test(test_process_events),
        cmocka_unit_test(test_pty_size),
        cmocka_unit_test(test_code_result_text),
        cmocka_unit_test(test_entries),          cmocka_unit_test(test_lossy_strings),
        cmocka_unit_test(test_start_config_is_rebuilt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
