/* stockade tokens create|ls|revoke: API tokens through the admin API (issue 30):
 *   POST /v1/admin/tenants/{id}/tokens, POST /v1/admin/tokens (operator tokens)
 *   GET /v1/admin/tenants/{id}/tokens (never the token nor its hash)
 *   DELETE /v1/admin/tokens/{token_id}
 * A new token is printed once, alone on stdout (so `> file` keeps nothing else), and its id
 * on stderr, as stockaded --create-admin-token does. */
#include <string.h>

#include "admin.h"
#include "args.h"
#include "cli.h"
#include "events.h"
#include "output.h"

#define TOKENS_TENANTS_MAX 10000 /* tenants listed by `tokens ls` without a tenant */

static const char tokens_help[] =
    "Usage: stockade tokens create TENANT [--json]\n"
    "       stockade tokens create --admin [--json]\n"
    "       stockade tokens ls [TENANT] [--json]\n"
    "       stockade tokens revoke TOKEN_ID... [--json]\n"
    "create makes a new API token for a tenant (a tenant may hold several, e.g. to rotate),\n"
    "or with --admin an operator token (its tenant is 'default'). The token is printed once,\n"
    "alone on stdout (stockade tokens create acme > acme.token; chmod 600 acme.token), its id\n"
    "on stderr. ls lists a tenant's tokens, or every tenant's: id, admin, created, revoked;\n"
    "never the token. revoke revokes tokens by id: from then on they are refused (on every\n"
    "host of a cluster within seconds). TENANT is a tenant's name or id.\n";

/* ------------------------------------------------------------------ create */

static int
tokens_create(Cli *cli, int argc, char **argv)
{
    _cleanup_json_ json_t *ans = NULL;
    char id[ARGS_ID_MAX_BYTES + 1] = "default", path[160];
    bool admin = false;
    const CliFlag flags[] = {{"admin", &admin}};
    int first, code;
    if (cli_parse_flags(cli, argc, argv, tokens_help, flags, ELEMENTSOF(flags), 0, 1, &first,
                        &code) != 0)
        return code;
    if (!admin && first == argc)
        return cli_usage_error(cli, "whose token? name a tenant, or --admin for an operator's");
    if (first < argc && (code = admin_tenant_resolve(cli, argv[first], id)) != 0)
        return code;
    if (admin && strcmp(id, "default") != 0)
        return cli_usage_error(cli, "operator tokens belong to the built-in tenant 'default': "
                                    "stockade tokens create --admin");
    if (admin)
        snprintf(path, sizeof(path), "/v1/admin/tokens");
    else
        snprintf(path, sizeof(path), "/v1/admin/tenants/%s/tokens", id);
    if ((code = admin_call(cli, "POST", path, NULL, &ans)) != 0)
        return code;
    if (cli->json)
        return cli_print_json(ans);
    const char *token = event_str(ans, "token", NULL), *tid = event_str(ans, "id", "?");
    if (!token || strlen(token) > CLIENT_TOKEN_MAX_BYTES ||
        strspn(token, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
            strlen(token)) { /* printed raw: only what a token is made of */
        _cleanup_error_ Error *err = NULL;
        error_set(&err, E_INTERNAL, 0, "the daemon's answer has no token");
        return cli_report(cli, err, false);
    }
    _cleanup_free_ char *te = term_escape(tid, strlen(tid), 64);
    printf("%s\n", token);
    fflush(stdout);
    fprintf(stderr, "%s token %s of tenant %s created; this is the only time it is shown\n",
            admin ? "operator" : "API", te ? te : "?", id);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------ ls */

/* Appends tenant id's tokens (the daemon's objects, name added) to out. */
static int
tokens_of(Cli *cli, const char *id, const char *name, json_t *out)
{
    _cleanup_json_ json_t *ans = NULL;
    char path[160];
    int code;
    snprintf(path, sizeof(path), "/v1/admin/tenants/%s/tokens", id);
    if ((code = admin_call(cli, "GET", path, NULL, &ans)) != 0)
        return code;
    json_t *list = json_object_get(ans, "tokens");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *t = json_array_get(list, i);
        if (json_is_object(t)) {
            json_object_set_new(t, "tenant_name", json_string(name ? name : ""));
            json_array_append(out, t);
        }
    }
    return CLI_EXIT_OK;
}

/* Every live tenant's tokens, in the daemon's order of tenants (by name). */
static int
tokens_of_all(Cli *cli, json_t *out)
{
    _cleanup_json_ json_t *ans = NULL;
    int code;
    if ((code = admin_call(cli, "GET", "/v1/admin/tenants", NULL, &ans)) != 0)
        return code;
    json_t *list = json_object_get(ans, "tenants");
    for (size_t i = 0; i < json_array_size(list) && i < TOKENS_TENANTS_MAX; i++) {
        json_t *t = json_array_get(list, i);
        const char *id = json_string_value(json_object_get(t, "id"));
        if (!id || !args_id_ok(id))
            continue; /* never into a path */
        if ((code = tokens_of(cli, id, json_string_value(json_object_get(t, "name")), out)) != 0)
            return code;
    }
    return CLI_EXIT_OK;
}

static void
tokens_print(Cli *cli, json_t *list)
{
    static const char *const headers[] = {"ID", "TENANT", "ADMIN", "CREATED", "REVOKED"};
    Table *t = table_new(ELEMENTSOF(headers), headers);
    for (size_t i = 0; t && i < json_array_size(list); i++) {
        json_t *row = json_array_get(list, i);
        char created[32], revoked[32] = "-";
        const char *name = event_str(row, "tenant_name", "");
        format_time_short(event_str(row, "created_at", ""), created, sizeof(created));
        if (event_str(row, "revoked_at", NULL))
            format_time_short(event_str(row, "revoked_at", ""), revoked, sizeof(revoked));
        const char *cells[] = {
            event_str(row, "id", "?"), name[0] ? name : event_str(row, "tenant", "?"),
            json_is_true(json_object_get(row, "admin")) ? "yes" : "-", created, revoked};
        table_add(t, cells);
        if (event_str(row, "revoked_at", NULL))
            table_color(t, 4, COLOR_YELLOW);
    }
    if (t)
        table_render(t, stdout, cli->color_out);
    table_free(t);
}

static int
tokens_ls(Cli *cli, int argc, char **argv)
{
    _cleanup_json_ json_t *all = json_array();
    char id[ARGS_ID_MAX_BYTES + 1];
    int first, code;
    if (cli_parse_plain(cli, argc, argv, tokens_help, 0, 1, &first, &code) != 0)
        return code;
    if (first < argc) {
        if ((code = admin_tenant_resolve(cli, argv[first], id)) != 0 ||
            (code = tokens_of(cli, id, NULL, all)) != 0)
            return code;
    } else if ((code = tokens_of_all(cli, all)) != 0) {
        return code;
    }
    if (cli->json) {
        _cleanup_json_ json_t *o = json_pack("{s:O}", "tokens", all);
        return cli_print_json(o);
    }
    tokens_print(cli, all);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------ revoke */

static bool
token_id_ok(const char *id)
{
    return strncmp(id, "tok_", 4) == 0 && args_id_ok(id);
}

static int
tokens_revoke(Cli *cli, int argc, char **argv)
{
    _cleanup_json_ json_t *done = json_array();
    int first, code, worst = CLI_EXIT_OK;
    if (cli_parse_plain(cli, argc, argv, tokens_help, 1, -1, &first, &code) != 0)
        return code;
    for (int i = first; i < argc; i++)
        if (!token_id_ok(argv[i]))
            return cli_usage_error(
                cli, "'%.64s' is not a token id (tok_...: see stockade tokens ls)", argv[i]);
    for (int i = first; i < argc; i++) {
        _cleanup_json_ json_t *ans = NULL;
        char path[160];
        snprintf(path, sizeof(path), "/v1/admin/tokens/%s", argv[i]);
        if ((code = admin_call(cli, "DELETE", path, NULL, &ans)) != 0) {
            worst = worst ? worst : code;
            continue;
        }
        if (cli->json) {
            json_array_append(done, ans);
            continue;
        }
        const char *tenant = event_str(ans, "tenant", "?");
        _cleanup_free_ char *te = term_escape(tenant, strlen(tenant), 64);
        printf("%s revoked (tenant %s)\n", argv[i], te ? te : "?");
    }
    if (cli->json) {
        _cleanup_json_ json_t *o = json_pack("{s:O}", "tokens", done);
        cli_print_json(o);
    }
    return worst;
}

int
cmd_tokens(Cli *cli, int argc, char **argv)
{
    static const SubVerb subs[] = {
        {"create", tokens_create}, {"ls", tokens_ls}, {"revoke", tokens_revoke}};
    return cli_dispatch(cli, argc, argv, subs, ELEMENTSOF(subs), tokens_help);
}
