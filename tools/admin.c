/* See admin.h. */
#include "admin.h"

#include <string.h>

#include "events.h"
#include "log.h"
#include "output.h"

/* A 404 under /v1/admin/tenants: is it the tenant, or the whole API that is missing? */
static void
explain_not_found(Client *c, Error **errp)
{
    _cleanup_error_ Error *probe = NULL;
    _cleanup_json_ json_t *ans = NULL;
    if (!*errp || (*errp)->category != E_NOT_FOUND)
        return;
    if (client_json(c, "GET", "/v1/admin/tenants", NULL, &ans, &probe) < 0 &&
        probe->category == E_NOT_FOUND)
        snprintf((*errp)->message, sizeof((*errp)->message),
                 "this daemon does not support tenants yet (404 from /v1/admin/tenants); it "
                 "comes with a newer stockaded");
}

int
admin_call(Cli *cli, const char *method, const char *path, json_t *body, json_t **ret)
{
    _cleanup_error_ Error *err = NULL;
    Client *c = cli_client(cli, &err);
    if (!c || client_json(c, method, path, body, ret, &err) < 0) {
        if (c)
            explain_not_found(c, &err);
        return cli_report(cli, err, false);
    }
    return CLI_EXIT_OK;
}

static bool
is_removed(json_t *t)
{
    json_t *r = json_object_get(t, "removed_at");
    return r && !json_is_null(r);
}

/* The one entry of list (live or removed ones) whose key is arg; *ret_n counts them. */
static json_t *
find(json_t *list, const char *key, const char *arg, bool removed, size_t *ret_n)
{
    json_t *hit = NULL;
    *ret_n = 0;
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *t = json_array_get(list, i);
        const char *v = json_string_value(json_object_get(t, key));
        if (v && is_removed(t) == removed && strcmp(v, arg) == 0) {
            hit = t;
            (*ret_n)++;
        }
    }
    return hit;
}

static int
picked(json_t *t, char ret_id[ARGS_ID_MAX_BYTES + 1], Error **errp)
{
    const char *id = json_string_value(json_object_get(t, "id"));
    if (!id || !args_id_ok(id))
        return error_set(errp, E_INTERNAL, 0, "the daemon's tenant list has a malformed id");
    snprintf(ret_id, ARGS_ID_MAX_BYTES + 1, "%s", id);
    return 0;
}

int
admin_tenant_pick(json_t *list, const char *arg, char ret_id[ARGS_ID_MAX_BYTES + 1], Error **errp)
{
    char esc[ADMIN_TENANT_ARG_MAX_BYTES * 4 + 1];
    size_t n_id, n_name;
    log_escape(esc, sizeof(esc), arg, strlen(arg));
    json_t *by_id = find(list, "id", arg, false, &n_id);
    json_t *by_name = find(list, "name", arg, false, &n_name);
    if (by_id && by_name && by_id != by_name)
        return error_set(errp, E_CONFLICT, 0,
                         "'%s' is the id of one tenant and the name of another: name it by its "
                         "id (stockade tenants ls)",
                         esc);
    if (by_id || by_name)
        return picked(by_id ? by_id : by_name, ret_id, errp);
    if ((by_id = find(list, "id", arg, true, &n_id)))
        return picked(by_id, ret_id, errp);
    by_name = find(list, "name", arg, true, &n_name);
    if (n_name > 1)
        return error_set(errp, E_CONFLICT, 0,
                         "%zu removed tenants were named '%s': name one by its id (stockade "
                         "tenants ls --removed)",
                         n_name, esc);
    if (by_name)
        return picked(by_name, ret_id, errp);
    return error_set(errp, E_NOT_FOUND, 0,
                     "no tenant is named '%s' or has that id (see stockade tenants ls)", esc);
}

int
admin_tenant_resolve(Cli *cli, const char *arg, char ret_id[ARGS_ID_MAX_BYTES + 1])
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *ans = NULL;
    int code;
    size_t n = strlen(arg);
    if (n == 0 || n > ADMIN_TENANT_ARG_MAX_BYTES)
        return cli_usage_error(cli, "a tenant is named by its name or id (1..%d bytes)",
                               ADMIN_TENANT_ARG_MAX_BYTES);
    if ((code = admin_call(cli, "GET", "/v1/admin/tenants?removed=1", NULL, &ans)) != 0)
        return code;
    json_t *list = json_object_get(ans, "tenants");
    if (!json_is_array(list))
        error_set(&err, E_INTERNAL, 0, "the daemon's tenant list has no array");
    else
        admin_tenant_pick(list, arg, ret_id, &err);
    return err ? cli_report(cli, err, false) : CLI_EXIT_OK;
}

static void
print_kv_at(json_t *o, const char *prefix, unsigned depth)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        char path[128];
        snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "", key);
        if (json_is_object(v) && depth < 4) {
            print_kv_at(v, path, depth + 1);
            continue;
        }
        _cleanup_free_ char *text = json_is_string(v)
                                        ? strdup(json_string_value(v))
                                        : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        _cleanup_free_ char *k = term_escape(path, strlen(path), 60);
        _cleanup_free_ char *e = text ? term_escape(text, strlen(text), 300) : NULL;
        printf("%-34s %s\n", k ? k : "?", e ? e : "?");
    }
}

void
admin_print_kv(json_t *o)
{
    print_kv_at(o, "", 0);
}
