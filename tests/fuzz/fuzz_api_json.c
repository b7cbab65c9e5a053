/* Fuzz target: the API's request-body parsers (hostd/api/api_json.c) on arbitrary JSON:
 * the body is parsed as the API does (strict, no duplicate keys), then argv, env, files and
 * timeout are extracted from it. Invariants: every parser either fails with E_INVALID and a
 * message, or yields values within the documented bounds; nothing leaks (ASan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    json_decref(body);
    return 0;
}
