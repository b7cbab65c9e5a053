/* stockade tenants|quota|usage: the admin API for tenants (issues 5 and 30):
 *   GET/POST /v1/admin/tenants ({"name"} -> {"id","name","token"}, the token shown once)
 *   DELETE /v1/admin/tenants/{id}[?cancel=1]
 *   PUT /v1/admin/tenants/{id}/quota, GET /v1/admin/tenants/{id}/usage
 * A tenant is named by its name or its id (admin.h). A daemon without that API answers 404
 * on /v1/admin/tenants: that is said plainly. */
#include <string.h>

#include "admin.h"
#include "args.h"
#include "cli.h"
#include "events.h"
#include "output.h"

static const char tenants_help[] =
    "Usage: stockade tenants ls [--removed] [--json]\n"
    "       stockade tenants create NAME [--json]\n"
    "       stockade tenants rm TENANT [--cancel-sessions] [--json]\n"
    "ls lists tenants (--removed: removed ones too). create makes one and prints its id and\n"
    "API token; the token is shown only this once: hand it to the tenant (a token file:\n"
    "--token-file, STOCKADE_TOKEN_FILE). rm removes one: its tokens are revoked at once (on\n"
    "every host of a cluster within seconds), it can start nothing more, and its name is free\n"
    "again; its usage and its sessions' records stay (stockade usage ID). A tenant with\n"
    "sessions not ended is refused (the message counts them) unless --cancel-sessions, which\n"
    "cancels them (their files are salvaged; they end 'tenant_removed'). The built-in tenant\n"
    "'default' cannot be removed. TENANT is a tenant's name or id.\n";
static const char quota_help[] =
    "Usage: stockade quota TENANT [--max-sessions N] [--wallet-guest-seconds N]\n"
    "                             [--max-vcpus N] [--max-memory-mib N] [--max-timeout-s N]\n"
    "                             [--sessions-per-minute N] [--output-bytes N]\n"
    "                             [--workspace-bytes N] [--json]\n"
    "Sets a tenant's limits (PUT /v1/admin/tenants/ID/quota); the limits not given are\n"
    "left out of the request. Without limits, shows the quota. Quotas are checked before a\n"
    "guest is handed out. TENANT is a tenant's name or id.\n";
static const char usage_help[] = "Usage: stockade usage TENANT [--json]\n"
                                 "Shows a tenant's usage against its quota (a removed tenant's\n"
                                 "too). TENANT is a tenant's name or id.\n";

static const char *const quota_keys[] = {
    "max_sessions",  "wallet_guest_seconds", "max_vcpus",    "max_memory_mib",
    "max_timeout_s", "sessions_per_minute",  "output_bytes", "workspace_bytes",
};

static int
tenants_ls(Cli *cli, int argc, char **argv)
{
    _cleanup_json_ json_t *ans = NULL;
    bool removed = false;
    const CliFlag flags[] = {{"removed", &removed}};
    int first, code;
    if (cli_parse_flags(cli, argc, argv, tenants_help, flags, ELEMENTSOF(flags), 0, 0, &first,
                        &code) != 0)
        return code;
    if ((code =
             admin_call(cli, "GET", removed ? "/v1/admin/tenants?removed=1" : "/v1/admin/tenants",
                        NULL, &ans)) != 0)
        return code;
    if (cli->json)
        return cli_print_json(ans);
    json_t *list = json_is_array(ans) ? ans : json_object_get(ans, "tenants");
    static const char *const headers[] = {"ID", "NAME", "REMOVED"};
    Table *t = table_new(removed ? 3 : 2, headers);
    for (size_t i = 0; t && i < json_array_size(list); i++) {
        json_t *row = json_array_get(list, i);
        char when[32] = "-";
        format_time_short(event_str(row, "removed_at", ""), when, sizeof(when));
        const char *cells[] = {event_str(row, "id", "?"), event_str(row, "name", ""),
                               event_str(row, "removed_at", NULL) ? when : "-"};
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
    if (strlen(name) == 0 || strlen(name) > ADMIN_TENANT_ARG_MAX_BYTES ||
        !(body = json_pack("{s:s}", "name", name)))
        return cli_usage_error(cli, "a tenant name is 1..%d bytes of UTF-8",
                               ADMIN_TENANT_ARG_MAX_BYTES);
    if ((code = admin_call(cli, "POST", "/v1/admin/tenants", body, &ans)) != 0)
        return code;
    if (cli->json)
        return cli_print_json(ans);
    admin_print_kv(ans);
    fprintf(stderr, "The token is shown only this once: keep it now.\n");
    return CLI_EXIT_OK;
}

static int
tenants_rm(Cli *cli, int argc, char **argv)
{
    _cleanup_json_ json_t *ans = NULL;
    char id[ARGS_ID_MAX_BYTES + 1], path[160];
    bool cancel = false;
    const CliFlag flags[] = {{"cancel-sessions", &cancel}};
    int first, code;
    if (cli_parse_flags(cli, argc, argv, tenants_help, flags, ELEMENTSOF(flags), 1, 1, &first,
                        &code) != 0)
        return code;
    if ((code = admin_tenant_resolve(cli, argv[first], id)) != 0)
        return code;
    snprintf(path, sizeof(path), "/v1/admin/tenants/%s%s", id, cancel ? "?cancel=1" : "");
    if ((code = admin_call(cli, "DELETE", path, NULL, &ans)) != 0)
        return code;
    if (cli->json)
        return cli_print_json(ans);
    const char *name = event_str(ans, "name", "?");
    _cleanup_free_ char *ne = term_escape(name, strlen(name), 80);
    printf("tenant %s (%s) removed: %lld token(s) revoked, %lld session(s) cancelled\n",
           ne ? ne : "?", id, (long long) event_int(ans, "tokens_revoked", 0),
           (long long) event_int(ans, "sessions_cancelled", 0));
    return CLI_EXIT_OK;
}

int
cmd_tenants(Cli *cli, int argc, char **argv)
{
    static const SubVerb subs[] = {
        {"ls", tenants_ls}, {"create", tenants_create}, {"rm", tenants_rm}};
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
    cli_getopt_reset(cli, opts);
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
    if (optind != argc - 1)
        return error_set(errp, E_INVALID, 0,
                         "one tenant (its name or id) is needed (see stockade tenants ls)");
    return 0;
}

int
cmd_quota(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *body = json_object(), *ans = NULL;
    char path[160], id[ARGS_ID_MAX_BYTES + 1];
    int code;

    cli->verb = "quota";
    if (quota_options(cli, argc, argv, body, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(quota_help);
    if ((code = admin_tenant_resolve(cli, argv[optind], id)) != 0)
        return code;
    snprintf(path, sizeof(path), "/v1/admin/tenants/%s/quota", id);
    bool set = json_object_size(body) > 0; /* no limit given: show the quota */
    if ((code = admin_call(cli, set ? "PUT" : "GET", path, set ? body : NULL, &ans)) != 0)
        return code;
    if (cli->json)
        return ans ? cli_print_json(ans) : CLI_EXIT_OK;
    if (ans)
        admin_print_kv(ans);
    return CLI_EXIT_OK;
}

int
cmd_usage(Cli *cli, int argc, char **argv)
{
    _cleanup_json_ json_t *ans = NULL;
    char path[160], id[ARGS_ID_MAX_BYTES + 1];
    int first, code;

    cli->verb = "usage";
    if (cli_parse_plain(cli, argc, argv, usage_help, 1, 1, &first, &code) != 0)
        return code;
    if ((code = admin_tenant_resolve(cli, argv[first], id)) != 0)
        return code;
    snprintf(path, sizeof(path), "/v1/admin/tenants/%s/usage", id);
    if ((code = admin_call(cli, "GET", path, NULL, &ans)) != 0)
        return code;
    if (cli->json)
        return cli_print_json(ans);
    admin_print_kv(ans);
    return CLI_EXIT_OK;
}
