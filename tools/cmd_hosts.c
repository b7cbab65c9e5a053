/* stockade hosts: the hosts of the daemon's cluster (GET /v1/admin/hosts, issue 16): id, its
 * state (live, or "lost by H": taken over by host H), the URL the others reach it at, its heartbeat's age, its
 * pools (idle/busy) and its open sessions. A daemon without [cluster] answers 404: that is said
 * plainly. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "events.h"
#include "output.h"

#define HOSTS_POOLS_TEXT_BYTES 256

static const char hosts_help[] =
    "Usage: stockade hosts [--json]\n"
    "Lists the hosts of the daemon's cluster ([cluster] in stockaded.conf): each host's id,\n"
    "its state (live, or \"lost by H\": past its lease, its sessions ended by host H),\n"
    "the URL the other hosts reach it at, the age of its last heartbeat, its pools as\n"
    "name:idle/busy, and the sessions it holds open. Needs an operator (admin API).\n";

/* "python:2/1 minimal:1/0", cut at HOSTS_POOLS_TEXT_BYTES. */
static void
pools_text(json_t *pools, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(pools) && n < cap; i++) {
        json_t *p = json_array_get(pools, i);
        int w =
            snprintf(out + n, cap - n, "%s%s:%lld/%lld", i ? " " : "", event_str(p, "name", "?"),
                     (long long) event_int(p, "idle", 0), (long long) event_int(p, "busy", 0));
        if (w < 0)
            break;
        n += (size_t) w;
    }
}

static void
hosts_print(Cli *cli, json_t *list)
{
    static const char *const headers[] = {
        "HOST", "STATE", "URL", "HEARTBEAT>", "POOLS (IDLE/BUSY)", "SESSIONS>"};
    Table *t = table_new(ELEMENTSOF(headers), headers);
    for (size_t i = 0; t && i < json_array_size(list); i++) {
        json_t *h = json_array_get(list, i);
        char age[32], pools[HOSTS_POOLS_TEXT_BYTES], sessions[24], state[96];
        const char *st = event_str(h, "state", "?");
        if (strcmp(st, "lost") == 0) /* who took it over: where its sessions ended */
            snprintf(state, sizeof(state), "lost by %.64s", event_str(h, "lost_by", "?"));
        else
            snprintf(state, sizeof(state), "%.64s", st);
        snprintf(age, sizeof(age), "%.1f s ago",
                 (double) event_int(h, "heartbeat_age_ms", 0) / 1e3);
        pools_text(json_object_get(h, "pools"), pools, sizeof(pools));
        snprintf(sessions, sizeof(sessions), "%lld", (long long) event_int(h, "sessions", 0));
        const char *cells[] = {event_str(h, "id", "?"),
                               state,
                               event_str(h, "url", "?"),
                               age,
                               pools,
                               sessions};
        table_add(t, cells);
    }
    if (t)
        table_render(t, stdout, cli->color_out);
    table_free(t);
}

int
cmd_hosts(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *ans = NULL;
    int first, code;

    cli->verb = "hosts";
    if (cli_parse_plain(cli, argc, argv, hosts_help, 0, 0, &first, &code) != 0)
        return code;
    Client *c = cli_client(cli, &err);
    if (!c || client_json(c, "GET", "/v1/admin/hosts", NULL, &ans, &err) < 0)
        return cli_report(cli, err, false);
    if (cli->json)
        return cli_print_json(ans);
    hosts_print(cli, json_object_get(ans, "hosts"));
    return CLI_EXIT_OK;
}
