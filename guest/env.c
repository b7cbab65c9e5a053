/* Exec environment building and PATH search: see env.h. */
#include "env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest_limits.h"
#include "macro.h"

void
env_list_clear(EnvList *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    *l = (EnvList){0};
}

static ssize_t
env_list_find(const EnvList *l, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < l->n; i++)
        if (strncmp(l->items[i], name, len) == 0 && l->items[i][len] == '=')
            return (ssize_t) i;
    return -1;
}

static int
env_list_reserve(EnvList *l)
{
    if (l->n + 1 < l->cap)
        return 0;
    size_t cap = l->cap ? l->cap * 2 : 16;
    char **items = realloc(l->items, cap * sizeof(*items));
    if (!items)
        return -1;
    l->items = items;
    l->cap = cap;
    return 0;
}

int
env_list_set(EnvList *l, const char *name, const char *value)
{
    _cleanup_free_ char *item = NULL;

    if (asprintf(&item, "%s=%s", name, value) < 0) {
        errno = ENOMEM;
        return -1;
    }
    ssize_t at = env_list_find(l, name);
    if (at >= 0) {
        free(l->items[at]);
        l->items[at] = TAKE_PTR(item);
        return 0;
    }
    if (env_list_reserve(l) < 0)
        return -1;
    l->items[l->n++] = TAKE_PTR(item);
    l->items[l->n] = NULL;
    return 0;
}

const char *
env_list_get(const EnvList *l, const char *name)
{
    ssize_t at = env_list_find(l, name);
    return at < 0 ? NULL : l->items[at] + strlen(name) + 1;
}

int
env_list_add_vars(EnvList *l, Stockade__Runner__EnvVar *const *vars, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (env_list_set(l, vars[i]->name, vars[i]->value) < 0)
            return -1;
    return 0;
}

int
env_build_exec(const char *home, const EnvList *session, Stockade__Runner__EnvVar *const *exec_env,
               size_t n_exec, EnvList *ret)
{
    EnvList l = {0};

    if (env_list_set(&l, "PATH", EXEC_DEFAULT_PATH) < 0 || env_list_set(&l, "HOME", home) < 0 ||
        env_list_set(&l, "LANG", "C.UTF-8") < 0 || env_list_set(&l, "TERM", "dumb") < 0)
        goto fail_clear;
    for (size_t i = 0; session && i < session->n; i++) {
        const char *eq = strchr(session->items[i], '=');
        _cleanup_free_ char *name = strndup(session->items[i], (size_t) (eq - session->items[i]));
        if (!name || env_list_set(&l, name, eq + 1) < 0)
            goto fail_clear;
    }
    if (env_list_add_vars(&l, exec_env, n_exec) < 0)
        goto fail_clear;
    *ret = l;
    return 0;

fail_clear:
    env_list_clear(&l);
    errno = ENOMEM;
    return -1;
}

bool
env_path_next(const char *path_var, const char *argv0, size_t *cursor, char *out, size_t cap)
{
    if (strchr(argv0, '/')) {
        if (*cursor != 0)
            return false;
        *cursor = 1;
        return (size_t) snprintf(out, cap, "%s", argv0) < cap;
    }
    if (!path_var)
        path_var = EXEC_DEFAULT_PATH;
    size_t len = strlen(path_var);
    while (*cursor <= len) {
        const char *dir = path_var + *cursor;
        size_t n = strcspn(dir, ":");
        *cursor += n + 1;
        int w = n == 0 ? snprintf(out, cap, "./%s", argv0)
                       : snprintf(out, cap, "%.*s/%s", (int) n, dir, argv0);
        if (w > 0 && (size_t) w < cap)
            return true; /* over-long candidates are skipped, as execvp does */
    }
    return false;
}
