/* stockade drain: this host takes no new session while its live ones run to their end
 * (POST /v1/admin/drain, issue 30); --wait until none is left, --timeout to wait at most so
 * long and say what is left, --off to take sessions again (DELETE). The step before an
 * upgrade or a host's retirement (docs/operations.md). The waits are the route's own
 * (?timeout_s=), in slices shorter than the client's stall timeout. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "events.h"
#include "output.h"
#include "timeutil.h"

#define DRAIN_SLICE_S 30 /* one wait of the route: under CLIENT_STALL_TIMEOUT_S */
#define DRAIN_TIMEOUT_MAX_S 86400
#define DRAIN_SHOWN_MAX 10 /* sessions named in the message; --json has the route's list */

static const char drain_help[] =
    "Usage: stockade drain [--wait | --timeout SECONDS | --off] [--json]\n"
    "Stops this host taking new sessions (they are refused 503 'this host is draining' and\n"
    "/v1/health says draining) while its live sessions run to their end. Needs an operator\n"
    "(admin API). Not kept across a daemon restart.\n"
    "  --wait             then wait until no session is live (Ctrl-C stops waiting, the host\n"
    "                     stays draining)\n"
    "  --timeout SECONDS  then wait at most SECONDS (1..86400) for the live sessions to end;\n"
    "                     if some are left, name them and exit 124 (the host stays draining)\n"
    "  --off              take new sessions again\n";

static void
drain_print(json_t *ans)
{
    if (!json_is_true(json_object_get(ans, "draining")))
        printf("taking sessions (%lld live)\n", (long long) event_int(ans, "live", 0));
    else
        printf("draining: %lld live session(s), %lld pending\n",
               (long long) event_int(ans, "live", 0), (long long) event_int(ans, "pending", 0));
}

/* The sessions left after a wait that timed out, on stderr: "ses_... (running), ...". */
static void
drain_report_left(const Cli *cli, json_t *ans, uint64_t timeout_s)
{
    json_t *list = json_object_get(ans, "sessions");
    long long live = (long long) event_int(ans, "live", 0);

    fprintf(stderr, "stockade %s: %lld session(s) still live after %llu s:", cli->verb, live,
            (unsigned long long) timeout_s);
    for (size_t i = 0; i < json_array_size(list) && i < DRAIN_SHOWN_MAX; i++) {
        json_t *s = json_array_get(list, i);
        const char *id = event_str(s, "id", "?"), *state = event_str(s, "state", "?");
        _cleanup_free_ char *eid = term_escape(id, strlen(id), 40);
        _cleanup_free_ char *est = term_escape(state, strlen(state), 16);
        fprintf(stderr, "%s %s (%s)", i ? "," : "", eid ? eid : "?", est ? est : "?");
    }
    if (live > DRAIN_SHOWN_MAX)
        fprintf(stderr, ", ...");
    fprintf(stderr, "\n(the host stays draining: wait again, or see stockade sessions ls)\n");
}

/* Waits (deadline_usec 0: without end) until no session is live, asking the route to wait
 * one slice at a time; *ans is the last answer. */
static int
drain_wait(Client *c, uint64_t deadline_usec, json_t **ans, Error **errp)
{
    while (event_int(*ans, "live", 0) > 0 && json_is_true(json_object_get(*ans, "draining"))) {
        uint64_t now = now_usec(), slice_s = DRAIN_SLICE_S;
        if (deadline_usec) {
            if (now >= deadline_usec)
                return 0;
            uint64_t left_s = (deadline_usec - now + USEC_PER_SEC - 1) / USEC_PER_SEC;
            slice_s = left_s < slice_s ? left_s : slice_s;
        }
        char path[64];
        snprintf(path, sizeof(path), "/v1/admin/drain?timeout_s=%llu",
                 (unsigned long long) slice_s);
        json_decref(*ans);
        *ans = NULL;
        if (client_json(c, "GET", path, NULL, ans, errp) < 0)
            return -1;
    }
    return 0;
}

enum { OPT_WAIT = CLI_OPT_VERB_BASE, OPT_OFF, OPT_TIMEOUT };

int
cmd_drain(Cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"wait", no_argument, NULL, OPT_WAIT},
        {"off", no_argument, NULL, OPT_OFF},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        CLI_GLOBAL_OPTIONS,
    };
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *ans = NULL;
    bool wait = false, off = false;
    uint64_t timeout_s = 0;
    int k;

    cli->verb = "drain";
    cli_getopt_reset(cli, opts);
    while ((k = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (k == OPT_WAIT)
            wait = true;
        else if (k == OPT_OFF)
            off = true;
        else if (k == OPT_TIMEOUT && args_uint(optarg, 1, DRAIN_TIMEOUT_MAX_S, &timeout_s) < 0)
            return cli_usage_error(cli, "--timeout wants whole seconds in 1..%d (got '%.32s')",
                                   DRAIN_TIMEOUT_MAX_S, optarg);
        else if (k != OPT_TIMEOUT && args_global(cli, k, argc, argv, &err) < 0)
            return cli_usage_error(cli, "%s", err->message);
    }
    if (cli->help)
        return cli_print_help(drain_help);
    if (optind < argc)
        return cli_usage_error(cli, "unexpected operand '%.64s'", argv[optind]);
    if (off + wait + (timeout_s > 0) > 1)
        return cli_usage_error(cli, "--wait, --timeout and --off do not go together");
    uint64_t deadline = timeout_s ? now_usec() + timeout_s * USEC_PER_SEC : 0;
    Client *c = cli_client(cli, &err);
    if (!c || client_json(c, off ? "DELETE" : "POST", "/v1/admin/drain", NULL, &ans, &err) < 0 ||
        ((wait || timeout_s) && drain_wait(c, deadline, &ans, &err) < 0))
        return cli_report(cli, err, false);
    bool left = timeout_s && event_int(ans, "live", 0) > 0 &&
                json_is_true(json_object_get(ans, "draining"));
    if (cli->json)
        cli_print_json(ans);
    else
        drain_print(ans);
    if (left && !cli->json)
        drain_report_left(cli, ans, timeout_s);
    return left ? CLI_EXIT_TIMEOUT : CLI_EXIT_OK;
}
