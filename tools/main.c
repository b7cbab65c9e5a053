/* stockade: the operator CLI of Stockade. Global options, then one verb (cmd_*.c). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "log.h"

static const char main_help[] =
    "Usage: stockade [GLOBAL OPTIONS] VERB [OPTIONS] [ARGS]\n"
    "The operator CLI of Stockade: runs untrusted code in single-use KVM guests through the\n"
    "daemon's HTTP API (stockaded).\n\n"
    "Verbs:\n"
    "  run [OPTIONS] -- CMD...       run CMD once in a fresh guest; stream its output; download\n"
    "                                its files; exit with its code\n"
    "  sessions ls|get|rm|new        list, show, close or start sessions\n"
    "  exec SESSION -- CMD...        run CMD in a running session, follow its output (-it:\n"
    "                                on a terminal, as docker exec -it)\n"
    "  code SESSION [FILE]           run Python from FILE or stdin in a stateful context\n"
    "  logs [-f] [--after SEQ] ID    print a session's events (-f follows, resuming by seq)\n"
    "  cancel [--wait] ID...         hard-stop sessions or tasks (files are salvaged)\n"
    "  cp SRC DST                    copy files: LOCAL ID:PATH (upload), ID:PATH LOCAL, ID: DIR\n"
    "  pool [--wait POOL]            warm pools and the accelerator in use, with why\n"
    "  image ls|build                the guest images (build: local, root, then restart)\n"
    "  doctor                        check this machine and the daemon: OK / WARN / FAIL + fix\n"
    "  tenants ls|create|rm, quota, usage   tenants, their quotas and usage (admin API)\n"
    "  tokens create|ls|revoke       API tokens of tenants and operators (admin API)\n"
    "  hosts                         the hosts of the daemon's cluster, their heartbeats\n"
    "  drain [--wait | --timeout S | --off]  take no new sessions, live ones run on (admin)\n"
    "  version                       this CLI's version and the daemon's\n\n"
    "Global options (before or after the verb):\n"
    "  --socket PATH   the daemon's unix socket (default " CLI_DEFAULT_SOCKET ";\n"
    "                  env STOCKADE_SOCKET)\n"
    "  --url URL       use HTTP(S) instead, e.g. http://127.0.0.1:8787 (env STOCKADE_URL)\n"
    "  --token TOKEN   sent as 'Authorization: Bearer TOKEN' (env STOCKADE_TOKEN)\n"
    "  --token-file FILE  the token from FILE's first line, so it is on no command line\n"
    "                  (env STOCKADE_TOKEN_FILE); FILE must be yours only (chmod 600)\n"
    "                  The first set wins: --token, --token-file, STOCKADE_TOKEN,\n"
    "                  STOCKADE_TOKEN_FILE.\n"
    "  --cacert FILE   an https:// URL's certificate must chain to this CA (PEM; env\n"
    "                  STOCKADE_CACERT); default: the system's trusted CAs\n"
    "  --json          machine-readable output\n"
    "  -h, --help      help (of a verb: stockade VERB --help)\n"
    "  -V, --version   print the version\n"
    "Colour and progress bars appear only on a terminal, and never with NO_COLOR set.\n\n"
    "Exit status:\n"
    "  0    success\n"
    "  1    the daemon refused the request (invalid, not found, conflict, quota), or doctor\n"
    "       found a FAIL\n"
    "  N    run/exec: the command's own exit code\n"
    "  124  run/exec: the command timed out\n"
    "  125  run/exec: the task could not start (the daemon refused it: no such pool, quota,\n"
    "       ...); any verb: the daemon failed or is unreachable\n"
    "  126  bad usage: the command line was refused before anything was sent (the message\n"
    "       names the fix)\n"
    "  127  run/exec: the program was not found in the guest\n"
    "  128+N  run/exec: the command was killed by signal N\n"
    "  130  interrupted (Ctrl-C: the task was cancelled), or cancelled by someone else\n\n"
    "First sandbox: stockade doctor; stockade pool; stockade run --upload DIR -- python3 x.py\n"
    "See stockade(1).\n";

typedef struct Verb {
    const char *name;
    int (*fn)(Cli *cli, int argc, char **argv);
    bool alias; /* another spelling: never suggested */
} Verb;

static const Verb verbs[] = {
    {"run", cmd_run, false},
    {"exec", cmd_exec, false},
    {"code", cmd_code, false},
    {"sessions", cmd_sessions, false},
    {"session", cmd_sessions, true},
    {"logs", cmd_logs, false},
    {"cancel", cmd_cancel, false},
    {"cp", cmd_cp, false},
    {"pool", cmd_pool, false},
    {"doctor", cmd_doctor, false},
    {"version", cmd_version, false},
    {"tenants", cmd_tenants, false},
    {"tokens", cmd_tokens, false},
    {"hosts", cmd_hosts, false},
    {"drain", cmd_drain, false},
    {"quota", cmd_quota, false},
    {"usage", cmd_usage, false},
    {"image", cmd_image, false},
    {"images", cmd_image, true},
};

/* Global options before the verb; returns the verb's index in argv, or -1 after printing. */
static int
parse_globals(Cli *cli, int argc, char **argv, int *ret_code)
{
    static const struct option opts[] = {
        {"version", no_argument, NULL, 'V'},
        CLI_GLOBAL_OPTIONS,
    };
    _cleanup_error_ Error *err = NULL;
    int c;

    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
        if (c == 'V') {
            printf("stockade %s\n", STOCKADE_VERSION);
            *ret_code = CLI_EXIT_OK;
            return -1;
        }
        if (args_global(cli, c, argc, argv, &err) < 0) {
            *ret_code = cli_usage_error(cli, "%s", err->message);
            return -1;
        }
    }
    if (optind >= argc) {
        if (cli->help) {
            *ret_code = cli_print_help(main_help);
            return -1;
        }
        *ret_code = cli_usage_error(cli, "a verb is needed (run, sessions, logs, pool, doctor...)");
        return -1;
    }
    return optind;
}

int
main(int argc, char **argv)
{
    Cli cli;
    int code = CLI_EXIT_USAGE;

    signal(SIGPIPE, SIG_IGN); /* EPIPE instead: `stockade logs ID | head` ends cleanly */
    cli_init(&cli, "stockade");
    int v = parse_globals(&cli, argc, argv, &code);
    if (v < 0)
        return code;
    bool help = cli.help; /* `stockade --help run` = `stockade run --help` */
    for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
        if (strcmp(argv[v], verbs[i].name) == 0) {
            cli.help = false;
            if (help) {
                char *hargv[] = {argv[v], (char *) "--help", NULL};
                code = verbs[i].fn(&cli, 2, hargv);
            } else {
                code = verbs[i].fn(&cli, argc - v, argv + v);
            }
            cli_done(&cli);
            fflush(stdout);
            return code;
        }
    char esc[64], hint[96];
    const char *names[ELEMENTSOF(verbs)];
    size_t n = 0;
    for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
        if (!verbs[i].alias)
            names[n++] = verbs[i].name;
    log_escape(esc, sizeof(esc), argv[v], strlen(argv[v]));
    cli_did_you_mean(argv[v], names, n, hint, sizeof(hint));
    return cli_usage_error(&cli, "unknown verb '%s'%s (see stockade --help)", esc, hint);
}
