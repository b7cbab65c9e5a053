/* The routes' own parsers (issue 31 item 2): ids and numbers in the path and query, signals,
 * the create, code and quota bodies. Pure (jansson, base, admit's quota table, sessions' plain
 * types), so they are unit-tested and fuzzed apart from the server
 * (tests/unit/test_api_json_routes.c, tests/fuzz/fuzz_api_json.c). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "ascii.h"
#include "api_json.h"
#include "code_wire.h"
#include "macro.h"
#include "runner_limits.h"

int
api_id_u32(const char *s, uint32_t *ret)
{
    /* Decimal digits only, no sign, no space, no leading zero: one spelling per id (strtoul
     * took " 7", "+7", "07" and "-18446744073709551609" for 7). */
    size_t n = strlen(s);
    return n > 0 && s[0] != '0' && ascii_parse_u32(s, n, ret) ? 0 : -1;
}

int
api_query_number(const char *s, unsigned base, uint64_t max, uint64_t *ret)
{
    uint64_t v = 0;
    size_t n = s ? strlen(s) : 0;
    /* Digits of the base only: no sign, no space, no suffix (strtoul's "7x" was 7, "abc" 0,
     * "-1" the largest value); at most 22 of them, each step checked against max. */
    if (n == 0 || n > 22 || (base != 8 && base != 10))
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned) (s[i] - '0');
        if (s[i] < '0' || d >= base || d > max || v > (max - d) / base)
            return -1;
        v = v * base + d;
    }
    *ret = v;
    return 0;
}

int
api_json_signal(json_t *v, int *ret)
{
    static const struct {
        const char *name;
        int signo;
    } names[] = {{"KILL", SIGKILL}, {"TERM", SIGTERM}, {"INT", SIGINT},
                 {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"STOP", SIGSTOP},
                 {"CONT", SIGCONT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};
    if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 64) {
        *ret = (int) json_integer_value(v);
        return 0;
    }
    const char *s = json_string_value(v);
    if (s && strlen(s) != json_string_length(v))
        return -1; /* "TERM\0..." is not TERM */
    if (s && strncmp(s, "SIG", 3) == 0)
        s += 3;
    for (size_t i = 0; s && i < ELEMENTSOF(names); i++)
        if (strcmp(s, names[i].name) == 0) {
            *ret = names[i].signo;
            return 0;
        }
    return -1;
}

int
api_json_language(json_t *v, CodeLanguage *ret, Error **errp)
{
    if (!v)
        return *ret = CODE_LANG_PYTHON, 0;
    if (!json_is_string(v))
        return error_set(errp, E_INVALID, 0, "language must be a string: one of %s",
                         CODE_LANGUAGES_SERVED);
    return code_language_parse(json_string_value(v), json_string_length(v), ret, errp);
}

int
api_json_code(json_t *body, uint32_t *ret_context, CodeLanguage *ret_lang, EnvPair **ret_env,
              size_t *ret_n_env, Error **errp)
{
    json_t *code = json_object_get(body, "code"), *ctx = json_object_get(body, "context");
    json_t *t = json_object_get(body, "timeout_ms"), *lang = json_object_get(body, "language");

    *ret_env = NULL;
    *ret_n_env = 0;
    if (!json_is_string(code) || json_string_length(code) > CODE_SOURCE_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "code must be a string of at most %u bytes",
                         CODE_SOURCE_MAX_BYTES);
    if (ctx && (!json_is_integer(ctx) || json_integer_value(ctx) < 1 ||
                json_integer_value(ctx) > UINT32_MAX))
        return error_set(errp, E_INVALID, 0, "context must be a context id");
    if (ctx && lang)
        return error_set(errp, E_INVALID, 0, "give context or language, not both");
    if (api_json_language(lang, ret_lang, errp) < 0)
        return -1;
    if (t && (!json_is_integer(t) || json_integer_value(t) < 0 ||
              (uint64_t) json_integer_value(t) > CODE_TIMEOUT_MAX_MS))
        return error_set(errp, E_INVALID, 0, "timeout_ms must be 0..%llu",
                         (unsigned long long) CODE_TIMEOUT_MAX_MS);
    *ret_context = ctx ? (uint32_t) json_integer_value(ctx) : 0;
    return api_json_env(json_object_get(body, "env"), ret_env, ret_n_env, errp);
}

int
api_json_quota(json_t *body, AdmitQuota *q, Error **errp)
{
    const char *key;
    json_t *v;
    if (!json_is_object(body))
        return error_set(errp, E_INVALID, 0, "the body must be a JSON object of quota keys");
    /* Into a copy: a body refused halfway changes nothing. */
    AdmitQuota out = *q;
    json_object_foreach(body, key, v)
    {
        const AdmitQuotaKey *k = NULL;
        for (size_t i = 0; i < admit_quota_n_keys && !k; i++)
            if (strcmp(admit_quota_keys[i].name, key) == 0)
                k = &admit_quota_keys[i];
        if (!k)
            return error_set(errp, E_INVALID, 0, "unknown quota key '%.40s'", key);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            (uint64_t) json_integer_value(v) > k->max)
            return error_set(errp, E_INVALID, 0, "%s must be an integer in 0..%llu", k->name,
                             (unsigned long long) k->max);
        *admit_quota_field(&out, k) = (uint64_t) json_integer_value(v);
    }
    *q = out;
    return 0;
}

int
api_json_pty_size(json_t *v, uint32_t *ret_cols, uint32_t *ret_rows, Error **errp)
{
    json_t *cols = json_object_get(v, "cols"), *rows = json_object_get(v, "rows");

    if (!json_is_object(v) || json_object_size(v) != 2 || !json_is_integer(cols) ||
        !json_is_integer(rows) || json_integer_value(cols) < 1 ||
        json_integer_value(cols) > PTY_COLS_MAX || json_integer_value(rows) < 1 ||
        json_integer_value(rows) > PTY_ROWS_MAX)
        return error_set(errp, E_INVALID, 0,
                         "a terminal size is {\"cols\": 1..%d, \"rows\": 1..%d}", PTY_COLS_MAX,
                         PTY_ROWS_MAX);
    *ret_cols = (uint32_t) json_integer_value(cols);
    *ret_rows = (uint32_t) json_integer_value(rows);
    return 0;
}

int
api_json_pty(json_t *v, uint32_t *ret_cols, uint32_t *ret_rows, Error **errp)
{
    if (!v || json_is_null(v)) {
        *ret_cols = *ret_rows = 0;
        return 0;
    }
    return api_json_pty_size(v, ret_cols, ret_rows, errp);
}

void
api_spec_free(SessionSpec *sp)
{
    if (!sp)
        return;
    api_free_env(sp->env, sp->n_env);
    api_free_argv(sp->argv, sp->argc);
    api_free_files(sp->files, sp->n_files);
    free(sp->cwd);
    free(sp->egress); /* the strings are the body's */
    free(sp);
}

/* "egress": true (the server's whole allowed set) or a list of host patterns and CIDRs. The
 * strings stay in the body, borrowed until the loop is done; sessions checks them. */
static int
json_egress(json_t *v, SessionSpec *sp, Error **errp)
{
    if (!v || json_is_null(v) || json_is_false(v))
        return 0;
    if (json_is_true(v)) {
        sp->egress_all = true;
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) > SESSION_EGRESS_ENTRIES_MAX)
        return error_set(errp, E_INVALID, 0,
                         "egress must be true or a list of at most %d host "
                         "patterns and CIDRs",
                         SESSION_EGRESS_ENTRIES_MAX);
    size_t n = json_array_size(v);
    if (!(sp->egress = calloc(n + 1, sizeof(char *))))
        return error_set(errp, E_INTERNAL, ENOMEM, "egress");
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(v, i);
        if (!json_is_string(a) || json_string_length(a) == 0 ||
            json_string_length(a) > EGRESS_ENTRY_MAX_BYTES ||
            strlen(json_string_value(a)) != json_string_length(a))
            return error_set(errp, E_INVALID, 0, "egress[%zu] must be a host pattern or a CIDR", i);
        sp->egress[sp->n_egress++] = (char *) json_string_value(a);
    }
    return 0;
}

int
api_json_spec(json_t *b, bool task, SessionSpec *sp, Error **errp)
{
    json_t *pool = json_object_get(b, "pool") ?: json_object_get(b, "image");
    json_t *mirror = json_object_get(b, "mirror");

    if (!json_is_string(pool))
        return error_set(errp, E_INVALID, 0, "pool (or image) must name an image pool");
    sp->pool = json_string_value(pool); /* borrowed from the body until the loop is done */
    sp->is_task = task;
    if (mirror && !json_is_boolean(mirror))
        return error_set(errp, E_INVALID, 0, "mirror must be true or false");
    sp->mirror = mirror ? json_is_true(mirror) : true;
    if (api_json_timeout(b, "timeout_s", &sp->timeout_usec, errp) < 0 ||
        api_json_env(json_object_get(b, "env"), &sp->env, &sp->n_env, errp) < 0 ||
        json_egress(json_object_get(b, "egress"), sp, errp) < 0)
        return -1;
    if (!task)
        return 0;
    json_t *cwd = json_object_get(b, "cwd");
    if (cwd && (!json_is_string(cwd) || !(sp->cwd = strdup(json_string_value(cwd)))))
        return error_set(errp, E_INVALID, 0, "cwd must be a string");
    if (api_json_argv(json_object_get(b, "argv"), &sp->argv, &sp->argc, errp) < 0 ||
        api_json_files(json_object_get(b, "files"), &sp->files, &sp->n_files, errp) < 0)
        return -1;
    return 0;
}

/* "user": absent or "" is the session's user; "root" is root in the guest (issue 28: the VM
 * is the isolation boundary); any other name is refused, since the guest has no user
 * database to look one up in. */
static int
exec_user_is_root(json_t *user, bool *ret_root, Error **errp)
{
    const char *u = json_string_value(user);
    if (user && !json_is_string(user))
        return error_set(errp, E_INVALID, 0, "user must be a string");
    if (u && u[0] && strcmp(u, "root") != 0)
        return error_set(errp, E_INVALID, 0, "user: only \"root\" (or none: the session's user)");
    *ret_root = u && strcmp(u, "root") == 0;
    return 0;
}

void
api_exec_free(ExecSpec *sp)
{
    if (!sp)
        return;
    api_free_argv(sp->argv, sp->argc);
    api_free_env(sp->env, sp->n_env);
    free(sp->cwd);
    free(sp);
}

int
api_json_exec(json_t *b, ExecSpec *sp, Error **errp)
{
    json_t *cwd = json_object_get(b, "cwd"), *in = json_object_get(b, "stdin");

    if (api_json_argv(json_object_get(b, "argv"), &sp->argv, &sp->argc, errp) < 0 ||
        api_json_env(json_object_get(b, "env"), &sp->env, &sp->n_env, errp) < 0 ||
        api_json_timeout(b, "timeout_s", &sp->timeout_usec, errp) < 0 ||
        exec_user_is_root(json_object_get(b, "user"), &sp->as_root, errp) < 0)
        return -1;
    if ((cwd && !json_is_string(cwd)) || (in && !json_is_boolean(in)))
        return error_set(errp, E_INVALID, 0, "cwd must be a string and stdin a boolean");
    if (api_json_pty(json_object_get(b, "pty"), &sp->pty_cols, &sp->pty_rows, errp) < 0)
        return -1;
    if (cwd && !(sp->cwd = strdup(json_string_value(cwd))))
        return error_set(errp, E_INTERNAL, ENOMEM, "cwd"); /* never the default cwd instead */
    sp->stdin_open = (in && json_is_true(in)) || sp->pty_cols;
    return 0;
}
