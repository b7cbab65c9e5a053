/* Unit tests of the CLI habits and admin pieces of issue 30 (tools/): "did you mean" (edit
 * distance, when a word is near enough, option and verb messages), token files (the mode
 * refused as ssh refuses a key's, empty, long, CR LF, NUL, not a file), which token is sent
 * (--token > --token-file > STOCKADE_TOKEN > STOCKADE_TOKEN_FILE), a tenant named by name or
 * id in the daemon's list (live before removed, ambiguous, unknown, a hostile id), the exit
 * code 127 of a program the guest does not have. No daemon, no network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "admin.h"
#include "args.h"
#include "cli.h"
#include "watch.h"

#define TOKEN_A "stk_aaaa"
#define TOKEN_B "stk_bbbb"

static char dir[] = "/tmp/stockade-cli-admin.XXXXXX";

/* A file under dir with these bytes and this mode; its path (static buffer per call). */
static const char *
file_with(const char *name, const char *bytes, size_t len, mode_t mode)
{
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 256, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(p, mode), 0);
    return p;
}

static ErrorCategory
category(Error *e)
{
    ErrorCategory c = e ? e->category : _E_CATEGORY_MAX;
    error_free(e);
    return c;
}

/* ------------------------------------------------------------------ did you mean */

static void
test_edit_distance(void **state)
{
    (void) state;
    assert_int_equal(args_edit_distance("", ""), 0);
    assert_int_equal(args_edit_distance("run", "run"), 0);
    assert_int_equal(args_edit_distance("rn", "run"), 1);
    assert_int_equal(args_edit_distance("sesions", "sessions"), 1);
    assert_int_equal(args_edit_distance("tiemout", "timeout"), 1); /* a swap is one */
    assert_int_equal(args_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(args_edit_distance("", "abc"), 3);
    char longer[ARGS_SUGGEST_MAX_BYTES + 2];
    memset(longer, 'a', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    assert_int_equal(args_edit_distance(longer, "a"), SIZE_MAX); /* never compared */
}

static void
test_suggest(void **state)
{
    (void) state;
    static const char *const verbs[] = {"run",   "exec",  "code",   "sessions", "logs",    "cancel",
                                        "cp",    "pool",  "doctor", "version",  "tenants", "tokens",
                                        "hosts", "quota", "usage",  "image"};
    size_t n = sizeof(verbs) / sizeof(verbs[0]);
    assert_string_equal(args_suggest("sesions", verbs, n), "sessions");
    assert_string_equal(args_suggest("rnu", verbs, n), "run");
    assert_string_equal(args_suggest("tokns", verbs, n), "tokens");
    assert_string_equal(args_suggest("docter", verbs, n), "doctor");
    assert_null(args_suggest("frobnicate", verbs, n)); /* nothing near */
    assert_null(args_suggest("run", verbs, n));        /* itself: no suggestion */
    assert_null(args_suggest("xy", verbs, n));         /* short words: distance 1 only */
    assert_null(args_suggest("tokants", verbs, n));    /* tenants and tokens: a tie */
    static const char *const subs[] = {"ls", "create", "rm"};
    assert_string_equal(args_suggest("lss", subs, 3), "ls");
    assert_string_equal(args_suggest("craete", subs, 3), "create");
    assert_null(args_suggest("ab", subs, 3));
}

/* The messages of a bad option in run's parser: a near long option is named. */
static void
test_option_messages(void **state)
{
    (void) state;
    static const struct {
        const char *argv[4];
        const char *want;
    } cases[] = {
        {{"run", "--tiemout=5", "true"}, "unknown option --tiemout=5; did you mean --timeout?"},
        {{"run", "--uplod", "x"}, "did you mean --upload?"},
        {{"run", "--frobnicate", "x"}, "unknown option --frobnicate"},
        {{"run", "--timeout"}, "--timeout needs a value"},
        {{"run", "--no-download=1", "x"}, "--no-download takes no value"},
        {{"run", "--tok", "x"}, "ambiguous (--token, --token-file)"},
        {{"run", "-x", "true"}, "unknown option -x"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Cli cli;
        RunArgs a;
        Error *err = NULL;
        int argc = 0;
        char *argv[4];
        while (argc < 4 && cases[i].argv[argc]) {
            argv[argc] = (char *) cases[i].argv[argc];
            argc++;
        }
        cli_init(&cli, "stockade");
        assert_int_equal(run_parse_args(&cli, argc, argv, &a, &err), -1);
        if (!strstr(err->message, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, err->message, cases[i].want);
        if (i == 2)
            assert_null(strstr(err->message, "did you mean"));
        assert_int_equal(category(err), E_INVALID);
        run_args_clear(&a);
    }
}

/* ------------------------------------------------------------------ token files */

static void
test_token_file(void **state)
{
    (void) state;
    char tok[CLIENT_TOKEN_MAX_BYTES + 1];
    Error *e = NULL;
    const char *ok = file_with("ok", TOKEN_A "\nsecond line\n", 22, 0600);
    assert_int_equal(args_read_token_file(ok, tok, sizeof(tok), NULL), 0);
    assert_string_equal(tok, TOKEN_A);
    assert_int_equal(tok[sizeof(TOKEN_A)], '\0'); /* the second line is wiped */
    const char *crlf = file_with("crlf", TOKEN_B "\r\n", 10, 0400);
    assert_int_equal(args_read_token_file(crlf, tok, sizeof(tok), NULL), 0);
    assert_string_equal(tok, TOKEN_B);
    const char *no_eol = file_with("no-eol", TOKEN_A, 8, 0600);
    assert_int_equal(args_read_token_file(no_eol, tok, sizeof(tok), NULL), 0);
    assert_string_equal(tok, TOKEN_A);

    static const mode_t open_modes[] = {0640, 0604, 0620, 0660, 0644, 0601};
    for (size_t i = 0; i < sizeof(open_modes) / sizeof(open_modes[0]); i++) {
        const char *p = file_with("open", TOKEN_A "\n", 9, open_modes[i]);
        assert_int_equal(args_read_token_file(p, tok, sizeof(tok), &e), -1);
        char want[16];
        snprintf(want, sizeof(want), "mode %04o", (unsigned) open_modes[i]);
        if (!strstr(e->message, want) || !strstr(e->message, "chmod 600"))
            fail_msg("mode %04o: %s", (unsigned) open_modes[i], e->message);
        assert_int_equal(category(e), E_INVALID);
        e = NULL;
    }
    static const struct {
        const char *name, *bytes;
        size_t len;
        const char *want;
    } bad[] = {
        {"empty", "", 0, "is empty"},
        {"blank", "\nstk_x\n", 7, "is empty"},
        {"cr", "\r\n", 2, "is empty"},
        {"nul", "stk\0x\n", 6, "NUL"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *p = file_with(bad[i].name, bad[i].bytes, bad[i].len, 0600);
        assert_int_equal(args_read_token_file(p, tok, sizeof(tok), &e), -1);
        if (!strstr(e->message, bad[i].want))
            fail_msg("%s: %s", bad[i].name, e->message);
        assert_int_equal(category(e), E_INVALID);
        e = NULL;
    }
    char *big = malloc(CLIENT_TOKEN_MAX_BYTES + 2);
    memset(big, 'x', CLIENT_TOKEN_MAX_BYTES + 1);
    big[CLIENT_TOKEN_MAX_BYTES + 1] = '\n';
    const char *p = file_with("long", big, CLIENT_TOKEN_MAX_BYTES + 2, 0600);
    free(big);
    assert_int_equal(args_read_token_file(p, tok, sizeof(tok), &e), -1);
    assert_non_null(strstr(e->message, "over"));
    assert_int_equal(category(e), E_INVALID);
    e = NULL;
    assert_int_equal(args_read_token_file(dir, tok, sizeof(tok), &e), -1); /* a folder */
    assert_int_equal(category(e), E_INVALID);
    e = NULL;
    assert_int_equal(args_read_token_file("/nonexistent/token", tok, sizeof(tok), &e), -1);
    assert_int_equal(category(e), E_INVALID);
}

/* --token > --token-file > STOCKADE_TOKEN > STOCKADE_TOKEN_FILE: the first set wins, and a
 * file that is not read is never opened (a bad one there is no error). */
static void
test_token_precedence(void **state)
{
    (void) state;
    const char *fa = file_with("flag-file", "stk_fromflagfile\n", 17, 0600);
    const char *fe = file_with("env-file", "stk_fromenvfile\n", 16, 0600);
    const char *bad = file_with("bad-file", "stk_x\n", 6, 0644);
    enum { NONE = -1, FA, FE, BAD }; /* which file */
    static const struct {
        const char *flag;
        int flag_file;
        const char *env;
        int env_file;
        const char *want;
    } cases[] = {
        {"stk_fromflag", FA, "stk_fromenv", FE, "stk_fromflag"},
        {NULL, FA, "stk_fromenv", FE, "stk_fromflagfile"},
        {NULL, NONE, "stk_fromenv", FE, "stk_fromenv"},
        {NULL, NONE, NULL, FE, "stk_fromenvfile"},
        {NULL, NONE, NULL, NONE, NULL},
        {"stk_fromflag", BAD, NULL, BAD, "stk_fromflag"}, /* never read */
        {NULL, NONE, "stk_fromenv", BAD, "stk_fromenv"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Cli cli;
        const char *got = NULL;
        const char *paths[] = {fa, fe, bad};
        unsetenv("STOCKADE_TOKEN");
        unsetenv("STOCKADE_TOKEN_FILE");
        if (cases[i].env)
            setenv("STOCKADE_TOKEN", cases[i].env, 1);
        if (cases[i].env_file >= 0)
            setenv("STOCKADE_TOKEN_FILE", paths[cases[i].env_file], 1);
        cli_init(&cli, "stockade");
        cli.token = cases[i].flag;
        cli.token_file = cases[i].flag_file >= 0 ? paths[cases[i].flag_file] : NULL;
        assert_int_equal(cli_token(&cli, &got, NULL), 0);
        if (cases[i].want)
            assert_string_equal(got, cases[i].want);
        else
            assert_null(got);
        cli_done(&cli);
        assert_int_equal(cli.token_buf[0], '\0'); /* wiped */
    }
    /* the file chosen is refused when open to others, and said where it came from */
    Cli cli;
    const char *got;
    Error *e = NULL;
    unsetenv("STOCKADE_TOKEN");
    setenv("STOCKADE_TOKEN_FILE", bad, 1);
    cli_init(&cli, "stockade");
    assert_int_equal(cli_token(&cli, &got, &e), -1);
    assert_non_null(strstr(e->message, "STOCKADE_TOKEN_FILE"));
    assert_int_equal(category(e), E_INVALID);
    unsetenv("STOCKADE_TOKEN_FILE");
}

/* ------------------------------------------------------------------ tenant by name or id */

static void
test_tenant_pick(void **state)
{
    (void) state;
    json_t *list = json_loads(
        "[{\"id\":\"default\",\"name\":\"default\"},"
        "{\"id\":\"ten_aaaa\",\"name\":\"acme\"},"
        "{\"id\":\"ten_bbbb\",\"name\":\"ten_cccc\"},"
        "{\"id\":\"ten_cccc\",\"name\":\"globex\"},"
        "{\"id\":\"ten_dddd\",\"name\":\"acme\",\"removed_at\":\"2026-12-01T00:00:00Z\"},"
        "{\"id\":\"ten_eeee\",\"name\":\"old\",\"removed_at\":\"2026-12-01T00:00:00Z\"},"
        "{\"id\":\"ten_ffff\",\"name\":\"twice\",\"removed_at\":\"2026-12-01T00:00:00Z\"},"
        "{\"id\":\"ten_gggg\",\"name\":\"twice\",\"removed_at\":\"2026-12-02T00:00:00Z\"},"
        "{\"id\":\"ten_../x\",\"name\":\"evil\"}]",
        0, NULL);
    static const struct {
        const char *arg, *want_id;
        ErrorCategory cat;
    } cases[] = {
        {"acme", "ten_aaaa", 0},     /* the live one, not the removed one of that name */
        {"ten_aaaa", "ten_aaaa", 0}, /* by id */
        {"default", "default", 0},
        {"ten_dddd", "ten_dddd", 0},    /* a removed one by id: its ledger stays readable */
        {"old", "ten_eeee", 0},         /* removed, by name: the only one of that name */
        {"ten_cccc", NULL, E_CONFLICT}, /* one's id and another's name */
        {"twice", NULL, E_CONFLICT},    /* two removed tenants had that name */
        {"nobody", NULL, E_NOT_FOUND},
        {"evil", NULL, E_INTERNAL}, /* never a path of the daemon's making */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char id[ARGS_ID_MAX_BYTES + 1] = "";
        Error *e = NULL;
        int r = admin_tenant_pick(list, cases[i].arg, id, &e);
        if (cases[i].want_id) {
            assert_int_equal(r, 0);
            assert_string_equal(id, cases[i].want_id);
        } else {
            assert_int_equal(r, -1);
            if (e->category != cases[i].cat)
                fail_msg("%s: %s", cases[i].arg, e->message);
            if (cases[i].cat == E_CONFLICT)
                assert_non_null(strstr(e->message, "id"));
            error_free(e);
        }
    }
    json_decref(list);
}

/* ------------------------------------------------------------------ 127 */

static int
feed(Watch *w, const char *text)
{
    json_t *ev = json_loads(text, 0, NULL);
    int r = watch_event(w, ev, NULL);
    json_decref(ev);
    return r;
}

static void
test_not_found_exit(void **state)
{
    (void) state;
    Watch w;
    watch_init(&w, -1, -1);
    feed(&w, "{\"seq\":3,\"type\":\"exec.failed\",\"exec_id\":1,\"code\":4,"
             "\"message\":\"exec 1: exec: No such file or directory\"}");
    feed(&w, "{\"seq\":4,\"type\":\"session.state\",\"state\":\"ended\",\"reason\":\"failed\","
             "\"exit_code\":127}");
    assert_true(w.not_found);
    assert_int_equal(watch_exit_code(&w, false), CLI_EXIT_NOT_FOUND);
    /* a missing working directory is not a missing program; nor is a program refused */
    static const char *const others[] = {
        "{\"seq\":3,\"type\":\"exec.failed\",\"exec_id\":1,\"code\":4,"
        "\"message\":\"exec 1: cwd: No such file or directory\"}",
        "{\"seq\":3,\"type\":\"exec.failed\",\"exec_id\":1,\"code\":6,"
        "\"message\":\"exec 1: exec: Permission denied\"}",
        "{\"seq\":3,\"type\":\"exec.failed\",\"exec_id\":1,\"code\":9,"
        "\"message\":\"exec 1: exec: No such file or directory\"}",
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        watch_init(&w, -1, -1);
        feed(&w, others[i]);
        assert_false(w.not_found);
        assert_int_equal(watch_exit_code(&w, false), CLI_EXIT_DAEMON);
    }
}

static int
setup(void **state)
{
    (void) state;
    return mkdtemp(dir) ? 0 : -1;
}

static int
teardown(void **state)
{
    (void) state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edit_distance),    cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_option_messages),  cmocka_unit_test(test_token_file),
        cmocka_unit_test(test_token_precedence), cmocka_unit_test(test_tenant_pick),
        cmocka_unit_test(test_not_found_exit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
