/* The API's body field parsers (api_json.c): pure (jansson, base, the runner's limits), so
 * their fuzzer links nothing else. Each checks type and bound of one field and fails with
 * E_INVALID naming it. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "code_wire.h"
#include "error.h"
#include "task_input.h"

int api_json_argv(json_t *v, char ***ret_argv, size_t *ret_argc, Error **errp);
int api_json_env(json_t *v, EnvPair **ret_env, size_t *ret_n, Error **errp);
int api_json_timeout(json_t *obj, const char *key, uint64_t *ret_usec, Error **errp);
int api_json_files(json_t *v, TaskFile **ret, size_t *ret_n, Error **errp);
void api_free_argv(char **argv, size_t argc);
/* The routes' small parsers (api_json_routes.c). */
typedef struct AdmitQuota AdmitQuota;
/* An id in a path (an exec's, a context's): decimal 1..UINT32_MAX, one spelling only. */
int api_id_u32(const char *s, uint32_t *ret);
/* A number in a query string, in base 8 or 10: its digits only (no sign, blank or suffix),
 * at most max. */
int api_query_number(const char *s, unsigned base, uint64_t max, uint64_t *ret);
/* A signal: a number 1..64, or a name ("TERM", "SIGTERM") of the nine the API names. */
int api_json_signal(json_t *v, int *ret);
/* A terminal's size, {"cols": 1..PTY_COLS_MAX, "rows": 1..PTY_ROWS_MAX} and nothing else
 * (exec's "pty", the resize body); api_json_pty: absent or null is 0 x 0 (no terminal). On
 * error the out-params are untouched. */
int api_json_pty_size(json_t *v, uint32_t *ret_cols, uint32_t *ret_rows, Error **errp);
int api_json_pty(json_t *v, uint32_t *ret_cols, uint32_t *ret_rows, Error **errp);
/* A code run's body: code (checked for type and size; its text is read by the caller), the
 * context (0 = the default one of the language), the language (python when absent; not with
 * a context), timeout_ms's bound, env. */
int api_json_code(json_t *body, uint32_t *ret_context, CodeLanguage *ret_lang, EnvPair **ret_env,
                  size_t *ret_n_env, Error **errp);
/* A context's language: absent (NULL) is python; else a name code_language_parse() takes. */
int api_json_language(json_t *v, CodeLanguage *ret, Error **errp);
/* A create's body (a session's, or a task's when task) into sp, whose strings pool and egress
 * borrow from b: b must outlive sp. sp starts zeroed; on error it holds what was parsed (free
 * it with api_spec_free). */
int api_json_spec(json_t *b, bool task, SessionSpec *sp, Error **errp);
/* sp's own parts and sp (NULL is fine). */
void api_spec_free(SessionSpec *sp);
/* An exec's body into sp (zeroed): argv, env, cwd, timeout_s, stdin, user, pty. */
int api_json_exec(json_t *b, ExecSpec *sp, Error **errp);
/* sp's own parts and sp (NULL is fine). */
void api_exec_free(ExecSpec *sp);
/* A quota body's keys onto q: every key known, every value in range; q unchanged on error. */
int api_json_quota(json_t *body, AdmitQuota *q, Error **errp);
void api_free_env(EnvPair *env, size_t n);
void api_free_files(TaskFile *f, size_t n);
