/* Shared edge code of the verbs: global options, the client, error reporting, Ctrl-C. */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "output.h"

volatile sig_atomic_t cli_interrupts;

static bool
color_wanted(int fd)
{
    const char *term = getenv("TERM");
    const char *no_color = getenv("NO_COLOR");
    return isatty(fd) && !(no_color && no_color[0]) && !(term && strcmp(term, "dumb") == 0);
}

void
cli_init(Cli *cli, const char *prog)
{
    const char *s = getenv("STOCKADE_SOCKET"), *u = getenv("STOCKADE_URL");
    const char *t = getenv("STOCKADE_TOKEN"), *ca = getenv("STOCKADE_CACERT");

    *cli = (Cli){.prog = prog, .verb = NULL};
    cli->socket_path = s && s[0] ? s : CLI_DEFAULT_SOCKET;
    cli->url = u && u[0] ? u : NULL;
    cli->token = t && t[0] ? t : NULL;
    cli->cacert = ca && ca[0] ? ca : NULL;
    cli->tty_out = isatty(STDOUT_FILENO);
    cli->tty_err = isatty(STDERR_FILENO);
    cli->color_out = color_wanted(STDOUT_FILENO);
    cli->color_err = color_wanted(STDERR_FILENO);
}

void
cli_getopt_reset(void)
{
    optind = 0; /* glibc: 0 reinitialises the scanner completely */
    opterr = 0;
}

int
cli_global_option(Cli *cli, int key, const char *arg, int argc, char **argv, Error **errp)
{
    switch (key) {
    case CLI_OPT_SOCKET:
        cli->socket_path = arg;
        cli->socket_from_flag = true;
        break;
    case CLI_OPT_URL:
        cli->url = arg;
        cli->url_from_flag = true;
        break;
    case CLI_OPT_TOKEN:
        cli->token = arg;
        break;
    case CLI_OPT_JSON:
        cli->json = true;
        break;
    case CLI_OPT_CACERT:
        cli->cacert = arg;
        break;
    case 'h':
        cli->help = true;
        break;
    case '?':
    case ':': {
        const char *bad = optind - 1 < argc && optind > 0 ? argv[optind - 1] : "?";
        if (optopt && optopt < 0x100 && strchr("?:", key))
            return error_set(errp, E_INVALID, 0, "unknown option or missing value: -%c", optopt);
        return error_set(errp, E_INVALID, 0, "unknown option or missing value: %.100s", bad);
    }
    default:
        return 1;
    }
    if (cli->socket_from_flag && cli->url_from_flag)
        return error_set(errp, E_INVALID, 0, "--socket and --url exclude each other: choose one");
    return 0;
}

Client *
cli_client(Cli *cli, Error **errp)
{
    if (cli->client)
        return cli->client;
    /* A --socket on the command line beats STOCKADE_URL from the environment. */
    ClientOptions o = {.socket_path = cli->socket_path,
                       .url = cli->socket_from_flag ? NULL : cli->url,
                       .token = cli->token,
                       .cacert = cli->cacert};
    if (client_new(&o, &cli->client, errp) < 0)
        return NULL;
    return cli->client;
}

void
cli_done(Cli *cli)
{
    client_free(cli->client);
    cli->client = NULL;
}

static void
vreport(const Cli *cli, const char *label, Color color, const char *fmt, va_list ap)
{
    fflush(stdout);
    fprintf(stderr, "%s%s%s: %s%s%s", cli->prog, cli->verb ? " " : "", cli->verb ? cli->verb : "",
            cli->color_err ? color_code(color) : "", label, cli->color_err ? COLOR_RESET : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void
report(const Cli *cli, const char *label, Color color, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cli, label, color, fmt, ap);
    va_end(ap);
}

int
cli_report(const Cli *cli, const Error *e, bool task_verb)
{
    report(cli, "error: ", COLOR_RED, "%s", e->message);
    switch (e->category) {
    case E_INVALID:
        return CLI_EXIT_USAGE;
    case E_INTERNAL:
    case E_UNAVAILABLE:
    case E_TIMEOUT:
    case E_GUEST:
    case E_IO:
        return CLI_EXIT_DAEMON;
    default:
        return task_verb ? CLI_EXIT_DAEMON : CLI_EXIT_FAIL;
    }
}

int
cli_usage_error(const Cli *cli, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cli, "", COLOR_NONE, fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try '%s%s%s --help'.\n", cli->prog, cli->verb ? " " : "",
            cli->verb ? cli->verb : "");
    return CLI_EXIT_USAGE;
}

void
cli_warn(const Cli *cli, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cli, "warning: ", COLOR_YELLOW, fmt, ap);
    va_end(ap);
}

int
cli_print_json(const json_t *o)
{
    if (json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0 || fputc('\n', stdout) < 0)
        return CLI_EXIT_FAIL;
    return CLI_EXIT_OK;
}

int
cli_print_help(const char *text)
{
    fputs(text, stdout);
    return CLI_EXIT_OK;
}

static void
on_sigint(int sig)
{
    (void) sig;
    if (cli_interrupts < 100)
        cli_interrupts++;
}

void
cli_catch_sigint(void)
{
    struct sigaction sa = {.sa_handler = on_sigint}; /* no SA_RESTART: sleeps wake up */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

int
cli_dispatch(Cli *cli, int argc, char **argv, const SubVerb *subs, size_t n_subs,
             const char *group_help)
{
    static char verb[64];
    const char *group = argv[0];

    cli->verb = group;
    if (argc < 2) {
        char list[128] = "";
        for (size_t i = 0; i < n_subs; i++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
                     subs[i].name);
        return cli_usage_error(cli, "a sub-command is needed: %s", list);
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return cli_print_help(group_help);
    for (size_t i = 0; i < n_subs; i++)
        if (strcmp(argv[1], subs[i].name) == 0) {
            snprintf(verb, sizeof(verb), "%s %s", group, subs[i].name);
            cli->verb = verb;
            return subs[i].fn(cli, argc - 1, argv + 1);
        }
    char esc[64];
    log_escape(esc, sizeof(esc), argv[1], strlen(argv[1]));
    return cli_usage_error(cli, "unknown sub-command '%s'", esc);
}

int
cli_parse_plain(Cli *cli, int argc, char **argv, const char *help, int min_operands,
                int max_operands, int *ret_first, int *ret_code)
{
    static const struct option opts[] = {CLI_GLOBAL_OPTIONS};
    _cleanup_error_ Error *err = NULL;
    int c;

    cli_getopt_reset();
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
        if (cli_global_option(cli, c, optarg, argc, argv, &err) != 0) {
            if (!err)
                error_set(&err, E_INVALID, 0, "unexpected option");
            *ret_code = cli_usage_error(cli, "%s", err->message);
            return -1;
        }
    if (cli->help) {
        *ret_code = cli_print_help(help);
        return 1;
    }
    int n = argc - optind;
    if (n < min_operands || (max_operands >= 0 && n > max_operands)) {
        *ret_code =
            cli_usage_error(cli, n < min_operands ? "missing operand" : "too many operands");
        return -1;
    }
    *ret_first = optind;
    return 0;
}
