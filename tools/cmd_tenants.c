/* stockade tenants|quota|usage: the admin API for tenants (issue 5):
 *   GET/POST /v1/admin/tenants ({"name"} -> {"id","name","token"}, the token shown once)
 *   PUT /v1/admin/tenants/{id}/quota, GET /v1/admin/tenants/{id}/usage
 * A daemon without that API answers 404 on /v1/admin/tenants: that is said plainly. */
#include <string.h>

#include "args.h"
#include "cli.h"
#include "events.h"
#include "output.h"

#define TENANT_NAME_MAX_BYTES 64

static const char tenants_help[] =
    "Usage: stockade tenants ls [--json]\n"
    "       stockade tenants create NAME [--json]\n"
    "Lists tenants, or creates one and prints its id and API token. The token is shown only\n"
    "this once: hand it to the tenant (STOCKADE_TOKEN or --token).\n";
static const char quota_help[] =
    "Usage: stockade quota TENANT [--max-sessions N] [--wallet-guest-seconds N]\n"
    "                             [--max-vcpus N] [--max-memory-mib N] [--max-timeout-s N]\n"
    "                             [--sessions-per-minute N] [--output-bytes N]\n"
    "                             [--workspace-bytes N] [--json]\n"
    "Sets a tenant's limits (PUT /v1/admin/tenants/TENANT/quota); the limits not given are\n"
    "left out of the request. Without limits, shows the quota. Quotas are checked before a\n"
    "guest is handed out.\n";
static const char usage_help[] = "Usage: stockade usage TENANT [--json]\n"
                                 "Shows a tenant's usage against its quota.\n";

static const char *const quota_keys[] = {
    "max_sessions",  "wallet_guest_seconds", "max_vcpus",    "max_memory_mib",
    "max_timeout_s", "sessions_per_minute",  "output_bytes", "workspace_bytes",
};

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

static int
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

/* An answer as "key value" lines; nested objects flattened to dotted keys ("sessions.open"),
 * arrays as compact JSON. */
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

static void
print_kv(json_t *o)
{
    print_kv_at(o, "", 0);
}

static int
tenants_ls(Cli *cli, int argc, char **argv)
{
    _cleanup_json_ json_t *ans = NULL;
    int first, code;
    if (cli_parse_plain(cli, argc, argv, tenants_help, 0, 0, &first, &code) != 0)
        return code;
    if ((code = admin_call(cli, "GET", "/v1/admin/tenants", NULL, &ans)) != 0)
        return code;
    if (cli->json)
        return cli_print_json(ans);
    json_t *list = json_is_array(ans) ? ans : json_object_get(ans, "tenants");
    static const char *const headers[] = {"ID", "NAME"};
    Table *t = table_new(2, headers);
    for (size_t i = 0; t && i < json_array_size(list); i++) {
        json_t *row = json_array_get(list, i);
        const char *cells[] = {event_str(row, "id", "?"), event_str(row, "name", "")};
        table_add(t, cells);
    }
    if (t)
        table_render(t, stdout, cli->color_out);
    table_free(t);
    return CLI_EXIT_OK;
}

static int
tenants_create(Cli *cli, int argc, char **argv)
{
    _cleanup_json_ json_t *ans = NULL, *body = NULL;
    int first, code;
    if (cli_parse_plain(cli, argc, argv, tenants_help, 1, 1, &first, &code) != 0)
        return code;
    const char *name = argv[first];
    if (strlen(name) == 0 || strlen(name) > TENANT_NAME_MAX_BYTES ||
        !(body = json_pack("{s:s}", "name", name)))
        return cli_usage_error(cli, "a tenant name is 1..%d bytes of UTF-8", TENANT_NAME_MAX_BYTES);
    if ((code = admin_call(cli, "POST", "/v1/admin/tenants", body, &ans)) != 0)
        return code;
    if (cli->json)
        return cli_print_json(ans);
    print_kv(ans);
    fprintf(stderr, "The token is shown only this once: keep it now.\n");
    return CLI_EXIT_OK;
}

int
cmd_tenants(Cli *cli, int argc, char **argv)
{
    static const SubVerb subs[] = {{"ls", tenants_ls}, {"create", tenants_create}};
    return cli_dispatch(cli, argc, argv, subs, ELEMENTSOF(subs), tenants_help);
}

static int
quota_options(Cli *cli, int argc, char **argv, json_t *body, Error **errp)
{
    static const struct option opts[] = {
        {"max-sessions", required_argument, NULL, CLI_OPT_VERB_BASE + 0},
        {"wallet-guest-seconds", required_argument, NULL, CLI_OPT_VERB_BASE + 1},
        {"max-vcpus", required_argument, NULL, CLI_OPT_VERB_BASE + 2},
        {"max-memory-mib", required_argument, NULL, CLI_OPT_VERB_BASE + 3},
        {"max-timeout-s", required_argument, NULL, CLI_OPT_VERB_BASE + 4},
        {"sessions-per-minute", required_argument, NULL, CLI_OPT_VERB_BASE + 5},
        {"output-bytes", required_argument, NULL, CLI_OPT_VERB_BASE + 6},
        {"workspace-bytes", required_argument, NULL, CLI_OPT_VERB_BASE + 7},
        CLI_GLOBAL_OPTIONS,
    };
    int c;
    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int k = c - CLI_OPT_VERB_BASE;
        uint64_t v;
        if (k >= 0 && k < (int) ELEMENTSOF(quota_keys)) {
            if (args_uint(optarg, 0, (uint64_t) INT64_MAX, &v) < 0)
                return error_set(errp, E_INVALID, 0, "--%s wants a whole number >= 0",
                                 opts[k].name);
            json_object_set_new(body, quota_keys[k], json_integer((json_int_t) v));
        } else if (args_global(cli, c, argc, argv, errp) < 0) {
            return -1;
        }
    }
    if (cli->help)
        return 0;
    if (optind != argc - 1 || !args_id_ok(argv[optind]))
        return error_set(errp, E_INVALID, 0, "one tenant id is needed (see stockade tenants ls)");
    return 0;
}

int
cmd_quota(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *body = json_object(), *ans = NULL;
    char path[160];
    int code;

    cli->verb = "quota";
    if (quota_options(cli, argc, argv, body, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(quota_help);
    snprintf(path, sizeof(path), "/v1/admin/tenants/%s/quota", argv[optind]);
    bool set = json_object_size(body) > 0; /* no limit given: show the quota */
    if ((code = admin_call(cli, set ? "PUT" : "GET", path, set ? body : NULL, &ans)) != 0)
        return code;
    if (cli->json)
        return ans ? cli_print_json(ans) : CLI_EXIT_OK;
    if (ans)
        print_kv(ans);
    return CLI_EXIT_OK;
}

int
cmd_usage(Cli *cli, int argc, char **argv)
{
    _cleanup_json_ json_t *ans = NULL;
    char path[160];
    int first, code;

    cli->verb = "usage";
    if (cli_parse_plain(cli, argc, argv, usage_help, 1, 1, &first, &code) != 0)
        return code;
    if (!args_id_ok(argv[first]))
        return cli_usage_error(cli, "'%.64s' is not a tenant id (see stockade tenants ls)",
                               argv[first]);
    snprintf(path, sizeof(path), "/v1/admin/tenants/%s/usage", argv[first]);
    if ((code = admin_call(cli, "GET", path, NULL, &ans)) != 0)
        return code;
    if (cli->json)
        return cli_print_json(ans);
    print_kv(ans);
    return CLI_EXIT_OK;
}
