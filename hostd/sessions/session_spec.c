/* A session's spec: its checks against the runner's limits and the server's, its deep copy
 * (the caller's is borrowed), and its JSON for the record. Pure but for the pool's shapes and
 * the egress policy it is checked against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "message.h"
#include "session_internal.h"
#include "timeutil.h"

static bool
env_ok(const EnvPair *env, size_t n)
{
    if (n > SESSION_ENV_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(env[i].name);
        if (len == 0 || len > ENV_NAME_MAX_BYTES ||
            (env[i].name[0] >= '0' && env[i].name[0] <= '9') ||
            strspn(env[i].name,
                   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != len ||
            strlen(env[i].value) > ENV_VALUE_MAX_BYTES)
            return false;
    }
    return true;
}

int
argv_check(char *const *argv, size_t argc, const EnvPair *env, size_t n_env, const char *cwd,
           Error **errp)
{
    size_t total = 0;
    if (argc == 0 || argc > SESSION_ARGV_MAX)
        return error_set(errp, E_INVALID, 0, "argv must have 1..%d entries", SESSION_ARGV_MAX);
    for (size_t i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]);
        if ((i == 0 && n == 0) || n > ARG_MAX_BYTES)
            return error_set(errp, E_INVALID, 0, "argv[%zu] is empty or over %u bytes", i,
                             ARG_MAX_BYTES);
        total += n + 1;
    }
    if (!env_ok(env, n_env))
        return error_set(errp, E_INVALID, 0,
                         "env: at most %d variables named "
                         "[A-Za-z_][A-Za-z0-9_]*, values up to %u bytes",
                         SESSION_ENV_MAX, ENV_VALUE_MAX_BYTES);
    for (size_t i = 0; i < n_env; i++)
        total += strlen(env[i].name) + strlen(env[i].value) + 2;
    if (total > EXEC_TOTAL_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "argv and env together are over %u bytes",
                         EXEC_TOTAL_MAX_BYTES);
    if (cwd && (cwd[0] != '/' || strlen(cwd) > PATH_MAX_BYTES))
        return error_set(errp, E_INVALID, 0, "cwd must be an absolute path");
    return 0;
}

int
session_spec_check(Sessions *m, const SessionSpec *sp, Error **errp)
{
    PoolStatus st;
    m->host.ops->status(m->host.pool, &st);
    if (!pool_status_shape(&st, sp->pool))
        return error_set(errp, E_INVALID, 0, "no pool (image) named '%.32s'", sp->pool);
    if (sp->timeout_usec > m->cfg.max_timeout_usec)
        return error_set(errp, E_INVALID, 0, "timeout is over the maximum of %llu s",
                         (unsigned long long) (m->cfg.max_timeout_usec / USEC_PER_SEC));
    if (!env_ok(sp->env, sp->n_env))
        return error_set(errp, E_INVALID, 0, "env: bad name, value or count");
    if (session_egress_check_spec(m, sp, errp) < 0)
        return -1;
    if (!sp->is_task)
        return 0;
    if (argv_check(sp->argv, sp->argc, NULL, 0, sp->cwd, errp) < 0)
        return -1;
    if (sp->n_files > SESSION_FILES_MAX)
        return error_set(errp, E_INVALID, 0, "at most %d files", SESSION_FILES_MAX);
    for (size_t i = 0; i < sp->n_files; i++)
        if (!msg_path_is_valid(sp->files[i].path, false))
            return error_set(errp, E_INVALID, 0,
                             "files[%zu].path is not a relative path "
                             "without '..'",
                             i);
    return 0;
}

static char *
xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

void
session_spec_free(SessionSpec *sp)
{
    for (size_t i = 0; i < sp->n_env; i++)
        free(sp->env[i].name), free(sp->env[i].value);
    for (size_t i = 0; i < sp->argc; i++)
        free(sp->argv[i]);
    for (size_t i = 0; i < sp->n_files; i++)
        free(sp->files[i].path), free(sp->files[i].data);
    free(sp->env), free(sp->argv), free(sp->files), free(sp->cwd);
    free((char *) sp->tenant_id), free((char *) sp->pool);
    session_egress_free_spec(sp);
    memset(sp, 0, sizeof(*sp));
}

int
session_spec_copy(SessionSpec *dst, const SessionSpec *src)
{
    *dst = (SessionSpec){
        .timeout_usec = src->timeout_usec, .mirror = src->mirror, .is_task = src->is_task};
    dst->tenant_id = xstrdup(src->tenant_id);
    dst->pool = xstrdup(src->pool);
    dst->cwd = xstrdup(src->cwd);
    dst->env = calloc(src->n_env + 1, sizeof(EnvPair));
    dst->argv = calloc(src->argc + 1, sizeof(char *));
    dst->files = calloc(src->n_files + 1, sizeof(TaskFile));
    if (!dst->tenant_id || !dst->pool || !dst->env || !dst->argv || !dst->files)
        return -1;
    for (; dst->n_env < src->n_env; dst->n_env++) {
        EnvPair *e = &dst->env[dst->n_env];
        if (!(e->name = strdup(src->env[dst->n_env].name)) ||
            !(e->value = strdup(src->env[dst->n_env].value)))
            return -1;
    }
    for (; dst->argc < src->argc; dst->argc++)
        if (!(dst->argv[dst->argc] = strdup(src->argv[dst->argc])))
            return -1;
    for (; dst->n_files < src->n_files; dst->n_files++) {
        const TaskFile *f = &src->files[dst->n_files];
        TaskFile *t = &dst->files[dst->n_files];
        *t = (TaskFile){.len = f->len, .mode = f->mode};
        if (!(t->path = strdup(f->path)) || (f->len && !(t->data = malloc(f->len))))
            return -1;
        if (f->len)
            memcpy(t->data, f->data, f->len);
    }
    return session_egress_copy_spec(dst, src);
}

char *
session_spec_json(const SessionSpec *sp)
{
    json_t *o = json_pack("{s:s,s:b}", "pool", sp->pool, "mirror", sp->mirror);
    if (sp->is_task) {
        json_t *argv = json_array();
        for (size_t i = 0; i < sp->argc; i++)
            json_array_append_new(argv, json_string_nocheck(sp->argv[i]));
        json_object_set_new(o, "argv", argv);
        json_object_set_new(o, "files", json_integer((json_int_t) sp->n_files));
    }
    if (sp->egress_all || sp->n_egress > 0)
        json_object_set_new(o, "egress", session_egress_spec_json(sp));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}
