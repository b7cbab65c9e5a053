/* Fuzz target: the API's request-body parsers (hostd/api/api_json.c, api_json_routes.c) on
 * arbitrary JSON: the body is parsed as the API does (strict, no duplicate keys), then argv,
 * env, files and timeout are extracted from it, and it is read as a session's and a task's
 * create body, an exec's, a code run's and a quota body, its "signal" as a signal, its "id"
 * string as an id in a path and its "q" string as a number in a query string (base 8, 10).
 * Invariants: every parser either fails with E_INVALID and a message, or yields values within
 * the documented bounds; an id is accepted exactly when it is the decimal spelling of
 * 1..UINT32_MAX; a quota refused leaves the quota as it was; nothing leaks (ASan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "api_json.h"
#include "runner_limits.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_err(Error *e)
{
    CHECK(e && e->message[0]);
    error_free(e);
}

/* The routes' parsers (api_json_routes.c). */
static void
check_routes(json_t *body)
{
    Error *e = NULL;
    EnvPair *env = NULL;
    size_t n_env = 0;
    uint32_t u = 0;
    int signo = 0;

    const char *id = json_string_value(json_object_get(body, "id"));
    if (id) {
        char again[16];
        bool ok = api_id_u32(id, &u) == 0;
        if (ok)
            snprintf(again, sizeof(again), "%u", u);
        CHECK(!ok || (u >= 1 && strcmp(again, id) == 0));
    }
    const char *qs = json_string_value(json_object_get(body, "q"));
    for (unsigned base = 8; qs && base <= 10; base += 2) {
        uint64_t got = 0;
        char again[32];
        if (api_query_number(qs, base, 0777777, &got) == 0) {
            /* accepted: its digits only, and they spell the value (leading zeros aside) */
            snprintf(again, sizeof(again), base == 8 ? "%llo" : "%llu", (unsigned long long) got);
            size_t z = strspn(qs, "0");
            CHECK(got <= 0777777 && strcmp(qs[z] ? qs + z : "0", again) == 0);
        }
    }
    for (int task = 0; task < 2; task++) {
        SessionSpec *sp = calloc(1, sizeof(*sp));
        CHECK(sp);
        if (api_json_spec(body, task, sp, &e) == 0) {
            CHECK(sp->pool && sp->is_task == task && sp->n_env <= SESSION_ENV_MAX &&
                  sp->n_egress <= SESSION_EGRESS_ENTRIES_MAX &&
                  (!task || (sp->argc >= 1 && sp->argc <= SESSION_ARGV_MAX)));
            for (size_t i = 0; i < sp->n_egress; i++)
                CHECK(strlen(sp->egress[i]) >= 1 &&
                      strlen(sp->egress[i]) <= EGRESS_ENTRY_MAX_BYTES);
        } else {
            check_err(TAKE_PTR(e));
        }
        api_spec_free(sp);
    }
    ExecSpec *ex = calloc(1, sizeof(*ex));
    CHECK(ex);
    if (api_json_exec(body, ex, &e) == 0)
        CHECK(ex->argc >= 1 && ex->n_env <= SESSION_ENV_MAX && ex->pty_cols <= PTY_COLS_MAX &&
              ex->pty_rows <= PTY_ROWS_MAX && (!ex->pty_cols || ex->stdin_open));
    else
        check_err(TAKE_PTR(e));
    api_exec_free(ex);
    if (api_json_signal(json_object_get(body, "signal"), &signo) == 0)
        CHECK(signo >= 1 && signo <= 64);
    uint32_t cols = 0, rows = 0;
    if (api_json_pty(json_object_get(body, "pty"), &cols, &rows, &e) == 0)
        CHECK((cols == 0 && rows == 0) ||
              (cols >= 1 && cols <= PTY_COLS_MAX && rows >= 1 && rows <= PTY_ROWS_MAX));
    else
        check_err(TAKE_PTR(e));
    CodeLanguage lang = CODE_LANG_COUNT;
    if (api_json_code(body, &u, &lang, &env, &n_env, &e) == 0) {
        CHECK(n_env <= SESSION_ENV_MAX && lang < CODE_LANG_COUNT);
        api_free_env(env, n_env);
    } else {
        CHECK(!env);
        check_err(TAKE_PTR(e));
    }
    AdmitQuota q, before;
    memset(&q, 0xa5, sizeof(q));
    before = q;
    if (api_json_quota(body, &q, &e) == 0) {
        for (size_t i = 0; i < admit_quota_n_keys; i++)
            CHECK(admit_quota_get(&q, &admit_quota_keys[i]) ==
                      admit_quota_get(&before, &admit_quota_keys[i]) ||
                  admit_quota_get(&q, &admit_quota_keys[i]) <= admit_quota_keys[i].max);
    } else {
        CHECK(memcmp(&q, &before, sizeof(q)) == 0);
        check_err(TAKE_PTR(e));
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES, NULL);
    Error *e = NULL;
    char **argv = NULL;
    size_t argc = 0, n_env = 0, n_files = 0;
    EnvPair *env = NULL;
    TaskFile *files = NULL;
    uint64_t timeout = 0;

    if (!json_is_object(body)) {
        json_decref(body);
        return 0;
    }
    if (api_json_argv(json_object_get(body, "argv"), &argv, &argc, &e) == 0) {
        CHECK(argc >= 1 && argc <= SESSION_ARGV_MAX);
        for (size_t i = 0; i < argc; i++)
            CHECK(strlen(argv[i]) <= ARG_MAX_BYTES);
        api_free_argv(argv, argc);
    } else {
        check_err(TAKE_PTR(e));
    }
    if (api_json_env(json_object_get(body, "env"), &env, &n_env, &e) == 0) {
        CHECK(n_env <= SESSION_ENV_MAX);
        api_free_env(env, n_env);
    } else {
        check_err(TAKE_PTR(e));
    }
    if (api_json_files(json_object_get(body, "files"), &files, &n_files, &e) == 0) {
        CHECK(n_files <= SESSION_FILES_MAX);
        for (size_t i = 0; i < n_files; i++)
            CHECK(files[i].mode <= 0777);
        api_free_files(files, n_files);
    } else {
        check_err(TAKE_PTR(e));
    }
    if (api_json_timeout(body, "timeout_s", &timeout, &e) == 0)
        CHECK(timeout <= 24ull * 3600 * 1000000);
    else
        check_err(TAKE_PTR(e));
    check_routes(body);
    json_decref(body);
    return 0;
}
