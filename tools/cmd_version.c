/* stockade version: the CLI's version and, when the daemon answers, its version and accel. */
#include <string.h>

#include "cli.h"
#include "events.h"
#include "output.h"

static const char version_help[] =
    "Usage: stockade version [--json]\n"
    "Prints this CLI's version and, if the daemon is reachable, its version and accelerator\n"
    "(GET /v1/health). Exits 0 either way.\n";

int
cmd_version(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *h = NULL;
    int first, code;
    Client *c;

    cli->verb = "version";
    if (cli_parse_plain(cli, argc, argv, version_help, 0, 0, &first, &code) != 0)
        return code;
    bool up =
        (c = cli_client(cli, &err)) && client_json(c, "GET", "/v1/health", NULL, &h, &err) == 0;
    if (cli->json) {
        _cleanup_json_ json_t *o =
            json_pack("{s:s,s:O?}", "cli", STOCKADE_VERSION, "daemon", up ? h : NULL);
        if (!up)
            json_object_set_new(o, "daemon_error", json_string(err ? err->message : "?"));
        return cli_print_json(o);
    }
    printf("stockade %s\n", STOCKADE_VERSION);
    if (!up) {
        printf("daemon: not reachable (%s)\n", err ? err->message : "?");
        return CLI_EXIT_OK;
    }
    const char *v = event_str(h, "version", "?"), *a = event_str(h, "accel", "?");
    _cleanup_free_ char *ve = term_escape(v, strlen(v), 64), *ae = term_escape(a, strlen(a), 16);
    printf("daemon: stockaded %s at %s (accel %s%s)\n", ve ? ve : "?", client_where(c),
           ae ? ae : "?", json_is_true(json_object_get(h, "accel_decided")) ? "" : ", deciding");
    return CLI_EXIT_OK;
}
