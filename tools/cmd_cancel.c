/* stockade cancel: hard-stop sessions or tasks (POST .../cancel). The daemon destroys the guest
 * without its help and salvages the workspace; --wait follows each one until it ended. */
#include <string.h>

#include "args.h"
#include "cli.h"
#include "events.h"

static const char cancel_help[] =
    "Usage: stockade cancel [--wait] [--json] ID...\n"
    "Cancels sessions or tasks: the guest is destroyed at once (the program gets no say), then\n"
    "the files it wrote are salvaged from its disk (stockade cp ID: DIR fetches them).\n"
    "Cancelling an ended session is fine.\n\n"
    "  -w, --wait   return once each has ended and its files are salvaged\n";

static int
cancel_wait_event(void *userdata, json_t *ev, uint64_t seq, Error **errp)
{
    (void) userdata;
    (void) seq;
    (void) errp;
    return strcmp(event_type(ev), "session.state") == 0 &&
           strcmp(event_str(ev, "state", ""), "ended") == 0;
}

static int
cancel_one(Cli *cli, Client *c, const char *id, bool wait, Error **errp)
{
    char path[128];
    _cleanup_json_ json_t *ans = NULL;

    snprintf(path, sizeof(path), "/v1/sessions/%s/cancel", id);
    if (client_json(c, "POST", path, NULL, &ans, errp) < 0)
        return -1;
    bool ended = strcmp(event_str(ans, "state", ""), "ended") == 0;
    if (wait && !ended) {
        Follow f = {.client = c, .follow = true, .on_event = cancel_wait_event};
        FollowEnd end;
        snprintf(f.id, sizeof(f.id), "%s", id);
        int r = follow_events(&f, &end, errp);
        follow_free(&f);
        if (r < 0)
            return -1;
    }
    if (cli->json)
        cli_print_json(ans);
    else
        printf("%s: %s\n", id, ended ? "already ended" : wait ? "cancelled, ended" : "cancelling");
    return 0;
}

static int
cancel_options(Cli *cli, int argc, char **argv, bool *wait, Error **errp)
{
    static const struct option opts[] = {{"wait", no_argument, NULL, 'w'}, CLI_GLOBAL_OPTIONS};
    int c;
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "wh", opts, NULL)) != -1) {
        if (c == 'w')
            *wait = true;
        else if (args_global(cli, c, argc, argv, errp) < 0)
            return -1;
    }
    if (cli->help)
        return 0;
    if (optind >= argc)
        return error_set(errp, E_INVALID, 0, "which session or task? (see stockade sessions ls)");
    for (int i = optind; i < argc; i++)
        if (!args_id_ok(argv[i]))
            return error_set(errp, E_INVALID, 0, "'%.64s' is not a session or task id", argv[i]);
    return 0;
}

int
cmd_cancel(Cli *cli, int argc, char **argv)
{
    int code = CLI_EXIT_OK;
    bool wait = false;
    Client *c;
    _cleanup_error_ Error *err = NULL;

    cli->verb = "cancel";
    if (cancel_options(cli, argc, argv, &wait, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(cancel_help);
    int first = optind;
    if (!(c = cli_client(cli, &err)))
        return cli_report(cli, err, false);
    for (int i = first; i < argc; i++) {
        _cleanup_error_ Error *e = NULL;
        if (cancel_one(cli, c, argv[i], wait, &e) < 0) {
            int r = cli_report(cli, e, false);
            code = code ? code : r;
        }
    }
    return code;
}
