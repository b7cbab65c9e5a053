/* Request bodies: JSON parsed strictly (no duplicate keys), every field checked for type and
 * bound before it reaches the sessions module. Errors name the field. */
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "base64.h"
#include "runner_limits.h"

#define API_TIMEOUT_MAX_S (24u * 3600)

void
api_free_argv(char **argv, size_t argc)
{
    for (size_t i = 0; argv && i < argc; i++)
        free(argv[i]);
    free(argv);
}

void
api_free_env(EnvPair *env, size_t n)
{
    for (size_t i = 0; env && i < n; i++)
        free(env[i].name), free(env[i].value);
    free(env);
}

void
api_free_files(TaskFile *f, size_t n)
{
    for (size_t i = 0; f && i < n; i++)
        free(f[i].path), free(f[i].data);
    free(f);
}

int
api_json_argv(json_t *v, char ***ret_argv, size_t *ret_argc, Error **errp)
{
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > SESSION_ARGV_MAX)
        return error_set(errp, E_INVALID, 0, "argv must be an array of 1..%d strings",
                         SESSION_ARGV_MAX);
    size_t n = json_array_size(v);
    char **argv = calloc(n + 1, sizeof(char *));
    if (!argv)
        return error_set(errp, E_INTERNAL, ENOMEM, "argv");
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(v, i);
        if (!json_is_string(a) || json_string_length(a) > ARG_MAX_BYTES ||
            strlen(json_string_value(a)) != json_string_length(a) ||
            !(argv[i] = strdup(json_string_value(a)))) {
            api_free_argv(argv, i);
            return error_set(errp, E_INVALID, 0,
                             "argv[%zu] must be a string without NUL of at "
                             "most %u bytes",
                             i, ARG_MAX_BYTES);
        }
    }
    *ret_argv = argv;
    *ret_argc = n;
    return 0;
}

int
api_json_env(json_t *v, EnvPair **ret_env, size_t *ret_n, Error **errp)
{
    const char *key;
    json_t *val;
    size_t n = 0;

    *ret_env = NULL;
    *ret_n = 0;
    if (!v)
        return 0;
    if (!json_is_object(v) || json_object_size(v) > SESSION_ENV_MAX)
        return error_set(errp, E_INVALID, 0, "env must be an object of at most %d strings",
                         SESSION_ENV_MAX);
    EnvPair *env = calloc(json_object_size(v) + 1, sizeof(EnvPair));
    if (!env)
        return error_set(errp, E_INTERNAL, ENOMEM, "env");
    json_object_foreach(v, key, val)
    {
        if (!json_is_string(val) || strlen(json_string_value(val)) != json_string_length(val) ||
            !(env[n].name = strdup(key)) || !(env[n].value = strdup(json_string_value(val)))) {
            api_free_env(env, n + 1);
            return error_set(errp, E_INVALID, 0, "env.%.64s must be a string without NUL", key);
        }
        n++;
    }
    *ret_env = env;
    *ret_n = n;
    return 0;
}

int
api_json_timeout(json_t *obj, const char *key, uint64_t *ret_usec, Error **errp)
{
    json_t *v = json_object_get(obj, key);
    *ret_usec = 0;
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > API_TIMEOUT_MAX_S)
        return error_set(errp, E_INVALID, 0, "%s must be an integer number of seconds in 1..%u",
                         key, API_TIMEOUT_MAX_S);
    *ret_usec = (uint64_t) json_integer_value(v) * 1000000u;
    return 0;
}

/* One task file: {"path": "...", "content": "<utf-8>"} or {"path", "content_b64"}, "mode"? */
static int
api_json_file(json_t *f, size_t i, TaskFile *t, Error **errp)
{
    json_t *path = json_object_get(f, "path"), *text = json_object_get(f, "content");
    json_t *b64 = json_object_get(f, "content_b64"), *mode = json_object_get(f, "mode");

    if (!json_is_object(f) || !json_is_string(path) || (!!text == !!b64))
        return error_set(errp, E_INVALID, 0,
                         "files[%zu] needs path and exactly one of "
                         "content, content_b64",
                         i);
    if (mode &&
        (!json_is_integer(mode) || json_integer_value(mode) < 0 || json_integer_value(mode) > 0777))
        return error_set(errp, E_INVALID, 0, "files[%zu].mode must be 0..0777 (as a number)", i);
    t->mode = mode ? (uint32_t) json_integer_value(mode) : 0644;
    if (!(t->path = strdup(json_string_value(path))))
        return error_set(errp, E_INTERNAL, ENOMEM, "files");
    if (text) {
        if (!json_is_string(text))
            return error_set(errp, E_INVALID, 0, "files[%zu].content must be a string", i);
        t->len = json_string_length(text);
        if (!(t->data = malloc(t->len + 1)))
            return error_set(errp, E_INTERNAL, ENOMEM, "files");
        memcpy(t->data, json_string_value(text), t->len);
        return 0;
    }
    if (!json_is_string(b64) ||
        base64_decode(json_string_value(b64), json_string_length(b64), &t->data, &t->len) < 0)
        return error_set(errp, E_INVALID, 0, "files[%zu].content_b64 is not base64", i);
    return 0;
}

int
api_json_files(json_t *v, TaskFile **ret, size_t *ret_n, Error **errp)
{
    *ret = NULL;
    *ret_n = 0;
    if (!v)
        return 0;
    if (!json_is_array(v) || json_array_size(v) > SESSION_FILES_MAX)
        return error_set(errp, E_INVALID, 0, "files must be an array of at most %d objects",
                         SESSION_FILES_MAX);
    size_t n = json_array_size(v);
    TaskFile *files = calloc(n + 1, sizeof(TaskFile));
    if (!files)
        return error_set(errp, E_INTERNAL, ENOMEM, "files");
    for (size_t i = 0; i < n; i++)
        if (api_json_file(json_array_get(v, i), i, &files[i], errp) < 0) {
            api_free_files(files, i + 1);
            return -1;
        }
    *ret = files;
    *ret_n = n;
    return 0;
}
