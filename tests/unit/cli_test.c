/* Unit tests of the CLI's pure pieces (tools/): argument parsing, terminal escaping and table
 * rendering, sizes and times, NDJSON line splitting and event checks, the API error mapping,
 * and the exit code of a watched task. No daemon, no network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "args.h"
#include "cli.h"
#include "client.h"
#include "events.h"
#include "output.h"
#include "upload.h"
#include "watch.h"

/* ------------------------------------------------------------------ helpers */

typedef struct Argv {
    int argc;
    char *argv[32];
} Argv;

/* Splits a space-separated command line ("run -p x -- echo hi") into a mutable argv. */
static Argv *
argv_of(const char *line)
{
    Argv *a = calloc(1, sizeof(*a));
    char *copy = strdup(line), *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok && a->argc < 31;
         tok = strtok_r(NULL, " ", &save))
        a->argv[a->argc++] = strdup(tok);
    free(copy);
    return a;
}

static void
argv_free(Argv *a)
{
    for (int i = 0; i < a->argc; i++)
        free(a->argv[i]);
    free(a);
}

static Cli
fresh_cli(void)
{
    Cli cli;
    cli_init(&cli, "stockade");
    return cli;
}

/* Parses a run command line; returns 0/-1 and the error message (static). */
static int
parse_run(const char *line, Cli *cli, RunArgs *ret, char *msg, size_t cap)
{
    Argv *a = argv_of(line);
    Error *err = NULL;
    int r = run_parse_args(cli, a->argc, a->argv, ret, &err);
    snprintf(msg, cap, "%s", err ? err->message : "");
    /* argv strings must outlive ret->argv: keep them for the test's lifetime */
    if (r == 0 && ret->argc > 0) {
        static Argv *keep[64];
        static size_t n;
        if (n < ELEMENTSOF(keep))
            keep[n++] = a;
    } else {
        argv_free(a);
    }
    error_free(err);
    return r;
}

/* ------------------------------------------------------------------ args */

static void
test_run_defaults(void **state)
{
    (void) state;
    Cli cli = fresh_cli();
    RunArgs a;
    char msg[512];
    assert_int_equal(parse_run("run -- python3 clean.py data.csv", &cli, &a, msg, sizeof(msg)), 0);
    assert_string_equal(a.pool, "python");
    assert_int_equal(a.timeout_s, 120);
    assert_int_equal(a.argc, 3);
    assert_string_equal(a.argv[0], "python3");
    assert_string_equal(a.argv[2], "data.csv");
    assert_null(a.download);
    assert_false(a.no_download);
    assert_int_equal(json_object_size(a.env), 0);
    run_args_clear(&a);
}

static void
test_run_options(void **state)
{
    (void) state;
    Cli cli = fresh_cli();
    RunArgs a;
    char msg[512];
    assert_int_equal(parse_run("run -p minimal --timeout 30 -e A=1 --env B=x=y -u d1 --upload f2 "
                               "-d out --cwd sub --json --socket /s -- sh -c -x",
                               &cli, &a, msg, sizeof(msg)),
                     0);
    assert_string_equal(a.pool, "minimal");
    assert_int_equal(a.timeout_s, 30);
    assert_string_equal(json_string_value(json_object_get(a.env, "A")), "1");
    assert_string_equal(json_string_value(json_object_get(a.env, "B")), "x=y");
    assert_int_equal(a.n_uploads, 2);
    assert_string_equal(a.uploads[1], "f2");
    assert_string_equal(a.download, "out");
    assert_string_equal(a.cwd, "/workspace/sub");
    assert_true(cli.json);
    assert_string_equal(cli.socket_path, "/s");
    assert_int_equal(a.argc, 3);
    assert_string_equal(a.argv[2], "-x"); /* options after the command are the command's */
    run_args_clear(&a);
}

static void
test_run_without_dashdash(void **state)
{
    (void) state;
    Cli cli = fresh_cli();
    RunArgs a;
    char msg[512];
    assert_int_equal(parse_run("run python3 -c print(1)", &cli, &a, msg, sizeof(msg)), 0);
    assert_int_equal(a.argc, 3);
    assert_string_equal(a.argv[1], "-c");
    run_args_clear(&a);
}

static void
test_run_errors(void **state)
{
    (void) state;
    static const struct {
        const char *line, *want;
    } cases[] = {
        {"run", "no command"},
        {"run --timeout 0 -- x", "--timeout wants whole seconds"},
        {"run --timeout 86401 -- x", "1..86400"},
        {"run --timeout 5s -- x", "--timeout"},
        {"run -e NOEQUALS -- x", "NAME=VALUE"},
        {"run -e 1A=b -- x", "NAME=VALUE"},
        {"run -e =v -- x", "NAME=VALUE"},
        {"run --download a --no-download -- x", "exclude each other"},
        {"run --bogus -- x", "unknown option"},
        {"run -p -- x", "--pool wants"}, /* -p took "--" as its value */
        {"run -p Py_thon -- x", "--pool wants"},
        {"run --socket /a --url http://b -- x", "--socket and --url"},
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        Cli cli = fresh_cli();
        RunArgs a;
        char msg[512];
        int r = parse_run(cases[i].line, &cli, &a, msg, sizeof(msg));
        if (r == 0 || !strstr(msg, cases[i].want))
            fail_msg("'%s': r=%d message '%s', wanted '%s'", cases[i].line, r, msg, cases[i].want);
        run_args_clear(&a);
    }
}

static void
test_run_help(void **state)
{
    (void) state;
    Cli cli = fresh_cli();
    RunArgs a;
    char msg[512];
    assert_int_equal(parse_run("run --help", &cli, &a, msg, sizeof(msg)), 0);
    assert_true(cli.help);
    run_args_clear(&a);
}

static void
test_exec_args(void **state)
{
    (void) state;
    Cli cli = fresh_cli();
    ExecArgs a;
    Error *err = NULL;
    Argv *v = argv_of("exec --timeout 5 ses_abc -- ls -la");
    assert_int_equal(exec_parse_args(&cli, v->argc, v->argv, &a, &err), 0);
    assert_string_equal(a.session, "ses_abc");
    assert_int_equal(a.timeout_s, 5);
    assert_int_equal(a.argc, 2);
    assert_string_equal(a.argv[1], "-la");
    assert_false(a.interactive || a.tty);
    exec_args_clear(&a);
    argv_free(v);
    /* -it is docker exec's: -t is --tty here, not --timeout (it takes no value) */
    v = argv_of("exec -it ses_abc -- sh");
    assert_int_equal(exec_parse_args(&cli, v->argc, v->argv, &a, &err), 0);
    assert_true(a.interactive && a.tty);
    assert_string_equal(a.session, "ses_abc");
    assert_int_equal(a.timeout_s, 0);
    assert_string_equal(a.argv[0], "sh");
    exec_args_clear(&a);
    argv_free(v);
    v = argv_of("exec ../etc -- ls");
    assert_int_equal(exec_parse_args(&cli, v->argc, v->argv, &a, &err), -1);
    assert_non_null(strstr(err->message, "session id"));
    error_free(err);
    exec_args_clear(&a);
    argv_free(v);
}

static void
test_remote_spec(void **state)
{
    (void) state;
    char id[ARGS_ID_MAX_BYTES + 1];
    const char *path;
    assert_true(args_remote("ses_abc:in/x.txt", id, &path));
    assert_string_equal(id, "ses_abc");
    assert_string_equal(path, "in/x.txt");
    assert_true(args_remote("ses_abc:", id, &path));
    assert_string_equal(path, "");
    assert_false(args_remote("./a:b", id, &path));
    assert_false(args_remote("/tmp/x", id, &path));
    assert_false(args_remote(":x", id, &path));
    assert_false(args_remote("Ses:x", id, &path));
    assert_true(upload_remote_ok("a/b.txt"));
    assert_false(upload_remote_ok("/a"));
    assert_false(upload_remote_ok("a/../b"));
    assert_false(upload_remote_ok("a//b"));
    assert_false(upload_remote_ok("./a"));
    assert_false(upload_remote_ok("a/"));
    assert_false(upload_remote_ok(""));
}

static void
test_uint_and_cwd(void **state)
{
    (void) state;
    uint64_t v;
    char *s = NULL;
    Error *err = NULL;
    assert_int_equal(args_uint("42", 1, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(args_uint("-1", 0, 100, &v), -1);
    assert_int_equal(args_uint("", 0, 100, &v), -1);
    assert_int_equal(args_uint("99999999999999999999999", 0, UINT64_MAX, &v), -1);
    assert_int_equal(args_cwd("/tmp", &s, &err), 0);
    assert_string_equal(s, "/tmp");
    free(s);
    assert_int_equal(args_cwd("a/b", &s, &err), 0);
    assert_string_equal(s, "/workspace/a/b");
    free(s);
}

/* ------------------------------------------------------------------ output */

static void
test_term_escape(void **state)
{
    (void) state;
    char *s = term_escape("ok\x1b[31mred\x07\n", 12, 100);
    assert_string_equal(s, "ok?[31mred??");
    free(s);
    s = term_escape("caf\xc3\xa9 \xff \xc2\x9b", 10, 100); /* é kept; bad byte, C1 CSI escaped */
    assert_string_equal(s, "caf\xc3\xa9 ? ?");
    free(s);
    s = term_escape("\xe0\x80\xaf", 3, 100); /* overlong '/' */
    assert_string_equal(s, "???");
    free(s);
    s = term_escape("abcdefgh", 8, 5);
    assert_string_equal(s, "abcde...");
    free(s);
    s = term_escape("abcde", 5, 5);
    assert_string_equal(s, "abcde");
    free(s);
}

static void
test_table(void **state)
{
    (void) state;
    static const char *const headers[] = {"ID", "STATE", "EXIT>"};
    Table *t = table_new(3, headers);
    const char *r1[] = {"ses_a", "running", "-"};
    const char *r2[] = {"ses_bbbbb", "ended\x1b]0;pwned\x07", "127"};
    const char *r3[] = {"s\xc3\xa9", NULL, "7"};
    assert_int_equal(table_add(t, r1), 0);
    assert_int_equal(table_add(t, r2), 0);
    assert_int_equal(table_add(t, r3), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(table_render(t, f, false), 0);
    fclose(f);
    assert_string_equal(buf, "ID         STATE            EXIT\n"
                             "ses_a      running             -\n"
                             "ses_bbbbb  ended?]0;pwned?   127\n"
                             "s\xc3\xa9                             7\n");
    free(buf);
    table_free(t);
    assert_null(table_new(0, headers));
}

static void
test_table_color_and_cut(void **state)
{
    (void) state;
    static const char *const headers[] = {"A", "B"};
    char longcell[200];
    memset(longcell, 'x', sizeof(longcell) - 1);
    longcell[sizeof(longcell) - 1] = '\0';
    Table *t = table_new(2, headers);
    const char *r1[] = {longcell, "g"};
    table_add(t, r1);
    table_color(t, 1, COLOR_GREEN);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    table_render(t, f, true);
    fclose(f);
    assert_non_null(strstr(buf, "\033[32mg\033[0m"));
    assert_non_null(strstr(buf, "xxx...  "));
    assert_null(
        strstr(buf, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
    free(buf);
    table_free(t);
}

static void
test_formats(void **state)
{
    (void) state;
    char b[32];
    format_bytes(0, b, sizeof(b));
    assert_string_equal(b, "0 B");
    format_bytes(1023, b, sizeof(b));
    assert_string_equal(b, "1023 B");
    format_bytes(1536, b, sizeof(b));
    assert_string_equal(b, "1.5 KiB");
    format_bytes(3ull << 30, b, sizeof(b));
    assert_string_equal(b, "3.0 GiB");
    format_duration_ms(350, b, sizeof(b));
    assert_string_equal(b, "350 ms");
    format_duration_ms(4200, b, sizeof(b));
    assert_string_equal(b, "4.2 s");
    format_duration_ms(125000, b, sizeof(b));
    assert_string_equal(b, "2 min 05 s");
    format_duration_ms(3780000, b, sizeof(b));
    assert_string_equal(b, "1 h 03 min");
    format_duration_ms(-1, b, sizeof(b));
    assert_string_equal(b, "?");
    int64_t ms;
    assert_int_equal(parse_rfc3339_ms("1970-01-01T00:00:01.500Z", &ms), 0);
    assert_int_equal(ms, 1500);
    assert_int_equal(parse_rfc3339_ms("2026-11-29T23:13:30Z", &ms), 0);
    assert_int_equal(parse_rfc3339_ms("2026-11-29 23:13:30Z", &ms), -1);
    assert_int_equal(parse_rfc3339_ms("2026-13-29T23:13:30.000Z", &ms), -1);
    assert_int_equal(parse_rfc3339_ms("2026-11-29T23:13:30.00xZ", &ms), -1);
    assert_int_equal(parse_rfc3339_ms(NULL, &ms), -1);
    format_time_short("2026-11-29T23:13:30.101Z", b, sizeof(b));
    assert_string_equal(b, "2026-11-29 23:13:30");
    format_time_short("garbage", b, sizeof(b));
    assert_string_equal(b, "-");
}

/* ------------------------------------------------------------------ events */

typedef struct Lines {
    char got[8][64];
    size_t n;
} Lines;

static int
collect(void *userdata, char *line, size_t len, Error **errp)
{
    (void) errp;
    Lines *l = userdata;
    if (l->n < 8)
        snprintf(l->got[l->n++], sizeof(l->got[0]), "%.*s", (int) len, line);
    return 0;
}

static void
test_linesplit(void **state)
{
    (void) state;
    LineSplitter ls;
    Lines l = {0};
    Error *err = NULL;
    const char *stream = "{\"a\":1}\n\n{\"b\":22}\npartial";
    linesplit_init(&ls, 16);
    for (size_t i = 0; i < strlen(stream); i++) /* one byte at a time */
        assert_int_equal(linesplit_feed(&ls, (const uint8_t *) stream + i, 1, collect, &l, &err),
                         0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.got[0], "{\"a\":1}");
    assert_string_equal(l.got[1], "");
    assert_string_equal(l.got[2], "{\"b\":22}");
    assert_true(linesplit_pending(&ls));
    linesplit_reset(&ls);
    assert_false(linesplit_pending(&ls));
    const char *big = "0123456789abcdefXYZ\n"; /* 19 > 16 */
    assert_int_equal(linesplit_feed(&ls, (const uint8_t *) big, strlen(big), collect, &l, &err),
                     -1);
    assert_int_equal(err->category, E_GUEST);
    error_free(err);
    linesplit_free(&ls);
}

static void
test_event_parse(void **state)
{
    (void) state;
    json_t *ev = NULL;
    uint64_t seq = 0;
    Error *err = NULL;
    const char *ok = "{\"seq\":5,\"ts\":\"x\",\"type\":\"exec.stdout\",\"data\":\"hi\\n\"}";
    assert_int_equal(event_parse(ok, strlen(ok), &ev, &seq, &err), 1);
    assert_int_equal(seq, 5);
    uint8_t *data;
    size_t len;
    assert_int_equal(event_data(ev, &data, &len, &err), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "hi\n", 3);
    free(data);
    json_decref(ev);
    const char *b64 = "{\"seq\":6,\"type\":\"exec.stdout\",\"data_b64\":\"AP8=\"}";
    assert_int_equal(event_parse(b64, strlen(b64), &ev, &seq, &err), 1);
    assert_int_equal(event_data(ev, &data, &len, &err), 0);
    assert_int_equal(len, 2);
    assert_int_equal(data[1], 0xff);
    free(data);
    json_decref(ev);
    const char *hb = "{\"type\":\"heartbeat\",\"ts\":\"x\"}\r";
    assert_int_equal(event_parse(hb, strlen(hb), &ev, &seq, &err), 0);
    assert_int_equal(event_parse("", 0, &ev, &seq, &err), 0);
    static const char *const bad[] = {"[1,2]",
                                      "{\"seq\":0,\"type\":\"a\"}",
                                      "{\"seq\":-3,\"type\":\"a\"}",
                                      "{\"seq\":1}",
                                      "{\"seq\":1,\"type\":\"A B\"}",
                                      "{\"seq\":\"1\",\"type\":\"a\"}",
                                      "{\"seq\":1,\"seq\":2,\"type\":\"a\"}",
                                      "not json"};
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        err = NULL;
        if (event_parse(bad[i], strlen(bad[i]), &ev, &seq, &err) != -1)
            fail_msg("accepted %s", bad[i]);
        assert_int_equal(err->category, E_GUEST);
        error_free(err);
    }
}

/* ------------------------------------------------------------------ client */

static void
test_map_error(void **state)
{
    (void) state;
    static const struct {
        long status;
        const char *body;
        ErrorCategory cat;
        const char *want;
    } cases[] = {
        {404, "{\"error\":{\"code\":\"not_found\",\"message\":\"no session ses_x\"}}", E_NOT_FOUND,
         "no session ses_x (HTTP 404 not_found)"},
        {409, "{\"error\":{\"code\":\"conflict\",\"message\":\"ended\"}}", E_CONFLICT,
         "stockade sessions get ID"},
        {429,
         "{\"error\":{\"code\":\"quota_exceeded\",\"message\":\"m\",\"limit\":4,\"used\":4,"
         "\"retry_after\":30}}",
         E_QUOTA, "retry after 30 s, or raise"},
        {429, "{\"error\":{\"quota\":\"max_sessions\",\"retry_after\":null,\"message\":\"m\"}}",
         E_QUOTA,
         "an operator must raise the tenant's quota (stockade quota TENANT --max-sessions N)"},
        {413, "", E_TOO_LARGE, "max_body_mib"},
        {503, "<html>", E_UNAVAILABLE, "retry shortly"},
        {500, "{\"error\":{\"message\":\"\\u001b[2Jboom\"}}", E_INTERNAL, "\\x1b[2Jboom"},
        {401, "{}", E_UNAUTHORIZED, "STOCKADE_TOKEN"},
        {418, "{\"error\":{\"code\":\"Bad Code!\",\"message\":\"x\"}}", E_INVALID, "x (HTTP 418)"},
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        Error *err = NULL;
        assert_int_equal(
            client_map_error(cases[i].status, cases[i].body, strlen(cases[i].body), &err), -1);
        assert_int_equal(err->category, cases[i].cat);
        if (!strstr(err->message, cases[i].want))
            fail_msg("%ld: '%s' lacks '%s'", cases[i].status, err->message, cases[i].want);
        assert_null(strchr(err->message, '\x1b'));
        error_free(err);
    }
}

static void
test_escape_path(void **state)
{
    (void) state;
    char *s = client_escape_path("in/a b/%?#\xc3\xa9.txt");
    assert_string_equal(s, "in/a%20b/%25%3F%23%C3%A9.txt");
    free(s);
}

/* ------------------------------------------------------------------ watch */

static Watch
watched(const char *reason, bool exited, int code, int sig, bool failed, bool timed_out)
{
    Watch w;
    watch_init(&w, -1, -1);
    snprintf(w.end_reason, sizeof(w.end_reason), "%s", reason);
    w.exited = exited;
    w.exit_code = code;
    w.signal = sig;
    w.failed = failed;
    w.timed_out = timed_out;
    return w;
}

static void
test_exit_codes(void **state)
{
    (void) state;
    Watch w = watched("completed", true, 0, 0, false, false);
    assert_int_equal(watch_exit_code(&w, false), 0);
    w = watched("completed", true, 7, 0, false, false);
    assert_int_equal(watch_exit_code(&w, false), 7);
    assert_int_equal(watch_exit_code(&w, true), 130);
    w = watched("completed", true, -1, 9, false, false);
    assert_int_equal(watch_exit_code(&w, false), 137);
    w = watched("timed_out", false, -1, 0, false, false);
    assert_int_equal(watch_exit_code(&w, false), 124);
    w = watched("", true, -1, 9, false, true); /* exec timeout */
    assert_int_equal(watch_exit_code(&w, false), 124);
    w = watched("failed", false, -1, 0, true, false);
    assert_int_equal(watch_exit_code(&w, false), 125);
    assert_string_equal(watch_outcome(&w, false), "failed");
    w = watched("cancelled", false, -1, 0, false, false);
    assert_int_equal(watch_exit_code(&w, false), 130);
    static const char *const daemon_ends[] = {"output_limit",  "guest_error",  "no_capacity",
                                              "host_error",    "host_shutdown", "host_restart",
                                              "closed"};
    for (size_t i = 0; i < ELEMENTSOF(daemon_ends); i++) {
        w = watched(daemon_ends[i], false, -1, 0, false, false);
        assert_int_equal(watch_exit_code(&w, false), 125);
    }
    w = watched("completed", false, -1, 0, false, false); /* exit only in the record */
    w.has_session_exit = true;
    w.session_exit = 3;
    assert_int_equal(watch_exit_code(&w, false), 3);
}

static void
test_watch_events(void **state)
{
    (void) state;
    Watch w;
    Error *err = NULL;
    watch_init(&w, -1, -1);
    static const char *const evs[] = {
        "{\"seq\":1,\"type\":\"exec.stdout\",\"exec_id\":1,\"data\":\"x\"}",
        "{\"seq\":2,\"type\":\"exec.exited\",\"exec_id\":1,\"exit_code\":7,\"signal\":0,"
        "\"reason\":\"exited\",\"wall_ms\":1200}",
        "{\"seq\":3,\"type\":\"session.state\",\"state\":\"stopping\",\"reason\":\"completed\"}",
        "{\"seq\":4,\"type\":\"artifacts\",\"files\":3,\"bytes\":199,\"skipped\":1,"
        "\"truncated\":false}",
        "{\"seq\":5,\"type\":\"session.state\",\"state\":\"ended\",\"exit_code\":7}",
    };
    int last = -1;
    for (size_t i = 0; i < ELEMENTSOF(evs); i++) {
        json_t *ev = json_loads(evs[i], 0, NULL);
        last = watch_event(&w, ev, &err);
        json_decref(ev);
        if (i + 1 < ELEMENTSOF(evs))
            assert_int_equal(last, 0);
    }
    assert_int_equal(last, 1);
    assert_true(w.exited && w.ended && w.artifacts);
    assert_int_equal(w.exit_code, 7);
    assert_int_equal(w.art_files, 3);
    assert_string_equal(w.end_reason, "completed");
    assert_int_equal(watch_exit_code(&w, false), 7);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_defaults),
        cmocka_unit_test(test_run_options),
        cmocka_unit_test(test_run_without_dashdash),
        cmocka_unit_test(test_run_errors),
        cmocka_unit_test(test_run_help),
        cmocka_unit_test(test_exec_args),
        cmocka_unit_test(test_remote_spec),
        cmocka_unit_test(test_uint_and_cwd),
        cmocka_unit_test(test_term_escape),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_table_color_and_cut),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_linesplit),
        cmocka_unit_test(test_event_parse),
        cmocka_unit_test(test_map_error),
        cmocka_unit_test(test_escape_path),
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_watch_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
