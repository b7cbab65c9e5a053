/* The environment of an exec: fixed defaults, then the session's variables (Hello), then the
 * exec's own; a later name replaces an earlier one. Pure: no I/O, allocation only.
 * Names and values were checked by proto/ (charset, lengths, counts), so the result is
 * bounded by 4 + 2 * ENV_MAX_COUNT entries. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "message.h"

/* "NAME=value" strings, owned, always NULL-terminated (items[n] == NULL) once non-empty. */
typedef struct EnvList {
    char **items;
    size_t n;
    size_t cap;
} EnvList;

void env_list_clear(EnvList *l);
/* Sets name to value, replacing an earlier entry of that name. -1 with errno ENOMEM. */
int env_list_set(EnvList *l, const char *name, const char *value);
/* The value of name, or NULL. */
const char *env_list_get(const EnvList *l, const char *name);
/* Appends every variable of a protobuf list (session or exec env). */
int env_list_add_vars(EnvList *l, Stockade__Runner__EnvVar *const *vars, size_t n);

/* The full environment of one exec. home is the workspace as the exec sees it. On success
 * *ret owns the strings (env_list_clear frees them); on failure *ret is untouched. */
int env_build_exec(const char *home, const EnvList *session,
                   Stockade__Runner__EnvVar *const *exec_env, size_t n_exec, EnvList *ret);

/* PATH search for argv0 as execvp does, but over the exec's own PATH (not the runner's).
 * Writes the next candidate into out[0..cap) and advances *cursor; returns false when there
 * are no more. argv0 containing '/' yields itself once. An empty PATH element means ".". */
bool env_path_next(const char *path_var, const char *argv0, size_t *cursor, char *out, size_t cap);
