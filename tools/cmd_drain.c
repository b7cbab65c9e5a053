/* stockade drain: this host takes no new session while its live ones run to their end
 * (POST /v1/admin/drain, issue 30); --wait until none is left, --off to take sessions again
 * (DELETE). The step before an upgrade or a host's retirement (docs/operations.md). */
#include <stdio.h>
#include <time.h>

#include "cli.h"
#include "events.h"
#include "output.h"

#define DRAIN_WAIT_POLL_SEC 1

static const char drain_help[] =
    "Usage: stockade drain [--wait | --off] [--json]\n"
    "Stops this host taking new sessions (they are refused 503 'this host is draining' and\n"
    "/v1/health says draining) while its live sessions run to their end. Needs an operator\n"
    "(admin API). Not kept across a daemon restart.\n"
    "  --wait   then wait until no session is live (poll every second; Ctrl-C stops waiting,\n"
    "           the host stays draining)\n"
    "  --off    take new sessions again\n";

static void
drain_print(Cli *cli, json_t *ans)
{
    (void) cli;
    if (!json_is_true(json_object_get(ans, "draining")))
        printf("taking sessions (%lld live)\n", (long long) event_int(ans, "live", 0));
    else
        printf("draining: %lld live session(s), %lld pending\n",
               (long long) event_int(ans, "live", 0), (long long) event_int(ans, "pending", 0));
}

static int
drain_wait(Client *c, json_t **ans, Error **errp)
{
    while (event_int(*ans, "live", 0) > 0 && json_is_true(json_object_get(*ans, "draining"))) {
        struct timespec ts = {.tv_sec = DRAIN_WAIT_POLL_SEC};
        nanosleep(&ts, NULL);
        json_decref(*ans);
        *ans = NULL;
        if (client_json(c, "GET", "/v1/admin/drain", NULL, ans, errp) < 0)
            return -1;
    }
    return 0;
}

int
cmd_drain(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *ans = NULL;
    bool wait = false, off = false;
    const CliFlag flags[] = {{"wait", &wait}, {"off", &off}};
    int first, code;

    cli->verb = "drain";
    if (cli_parse_flags(cli, argc, argv, drain_help, flags, ELEMENTSOF(flags), 0, 0, &first,
                        &code) != 0)
        return code;
    if (wait && off) {
        fprintf(stderr, "stockade drain: --wait and --off do not go together\n");
        return CLI_EXIT_USAGE;
    }
    Client *c = cli_client(cli, &err);
    if (!c || client_json(c, off ? "DELETE" : "POST", "/v1/admin/drain", NULL, &ans, &err) < 0 ||
        (wait && drain_wait(c, &ans, &err) < 0))
        return cli_report(cli, err, false);
    if (cli->json)
        return cli_print_json(ans);
    drain_print(cli, ans);
    return CLI_EXIT_OK;
}
