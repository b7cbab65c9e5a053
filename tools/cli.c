/* Shared edge code of the verbs: global options, the client, error reporting, Ctrl-C. */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
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
    const char *t = getenv("STOCKADE_TOKEN"), *tf = getenv("STOCKADE_TOKEN_FILE");
    const char *ca = getenv("STOCKADE_CACERT");

    *cli = (Cli){.prog = prog, .verb = NULL};
    cli->socket_path = s && s[0] ? s : CLI_DEFAULT_SOCKET;
    cli->url = u && u[0] ? u : NULL;
    cli->env_token = t && t[0] ? t : NULL;
    cli->env_token_file = tf && tf[0] ? tf : NULL;
    cli->cacert = ca && ca[0] ? ca : NULL;
    cli->tty_out = isatty(STDOUT_FILENO);
    cli->tty_err = isatty(STDERR_FILENO);
    cli->color_out = color_wanted(STDOUT_FILENO);
    cli->color_err = color_wanted(STDERR_FILENO);
}

void
cli_getopt_reset(Cli *cli, const struct option *opts)
{
    cli->opts = opts;
    optind = 0; /* glibc: 0 reinitialises the scanner completely */
    opterr = 0;
}

void
cli_did_you_mean(const char *word, const char *const *candidates, size_t n, char *out, size_t cap)
{
    const char *near = args_suggest(word, candidates, n);
    char esc[ARGS_SUGGEST_MAX_BYTES * 4 + 1];
    out[0] = '\0';
    if (near)
        snprintf(out, cap, "; did you mean '%s'?",
                 log_escape(esc, sizeof(esc), near, strlen(near)));
}

/* The option of the table whose key getopt reported (optopt), NULL if none. */
static const struct option *
option_by_key(const struct option *opts, int key)
{
    for (size_t i = 0; opts && opts[i].name; i++)
        if (opts[i].val == key && !opts[i].flag)
            return &opts[i];
    return NULL;
}

/* What was wrong with the option getopt refused: a known one without its value, an ambiguous
 * abbreviation, or an unknown one (with the nearest long option, if one is near). */
static int
bad_option(const Cli *cli, int argc, char **argv, Error **errp)
{
    const struct option *o = optopt ? option_by_key(cli->opts, optopt) : NULL;
    char esc[80], name[ARGS_SUGGEST_MAX_BYTES + 1], hint[96], which[160] = "";
    const char *names[64];
    size_t n = 0, prefixed = 0;

    if (o && o->has_arg == required_argument)
        return error_set(errp, E_INVALID, 0, "--%s needs a value", o->name);
    if (o && o->has_arg == no_argument && optopt >= 0x100)
        return error_set(errp, E_INVALID, 0, "--%s takes no value", o->name);
    if (optopt > 0 && optopt < 0x100)
        return error_set(errp, E_INVALID, 0, "unknown option -%c", optopt);
    const char *bad = optind > 0 && optind - 1 < argc ? argv[optind - 1] : "?";
    log_escape(esc, sizeof(esc), bad, strlen(bad));
    if (strncmp(bad, "--", 2) != 0)
        return error_set(errp, E_INVALID, 0, "unknown option %s", esc);
    snprintf(name, sizeof(name), "%.*s", (int) strcspn(bad + 2, "="), bad + 2);
    for (size_t i = 0; cli->opts && cli->opts[i].name && n < ELEMENTSOF(names); i++) {
        const char *o_name = cli->opts[i].name;
        names[n++] = o_name;
        if (!name[0] || strncmp(o_name, name, strlen(name)) != 0)
            continue;
        prefixed++;
        snprintf(which + strlen(which), sizeof(which) - strlen(which), "%s--%s",
                 which[0] ? ", " : "", o_name);
    }
    if (prefixed > 1)
        return error_set(errp, E_INVALID, 0, "option %s is ambiguous (%s): spell it out", esc,
                         which);
    const char *near = args_suggest(name, names, n);
    hint[0] = '\0';
    if (near)
        snprintf(hint, sizeof(hint), "; did you mean --%s?", near);
    return error_set(errp, E_INVALID, 0, "unknown option %s%s", esc, hint);
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
    case CLI_OPT_TOKEN_FILE:
        cli->token_file = arg;
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
    case ':':
        return bad_option(cli, argc, argv, errp);
    default:
        return 1;
    }
    if (cli->socket_from_flag && cli->url_from_flag)
        return error_set(errp, E_INVALID, 0, "--socket and --url exclude each other: choose one");
    return 0;
}

/* A command line beats the environment; a value beats a file. */
int
cli_token(Cli *cli, const char **ret, Error **errp)
{
    const char *file = cli->token        ? NULL
                       : cli->token_file ? cli->token_file
                       : cli->env_token  ? NULL
                                         : cli->env_token_file;
    *ret = cli->token ? cli->token : cli->token_file ? NULL : cli->env_token;
    if (!file)
        return 0;
    if (args_read_token_file(file, cli->token_buf, sizeof(cli->token_buf), errp) < 0)
        return error_prefix(errp, "%s", cli->token_file ? "--token-file" : "STOCKADE_TOKEN_FILE");
    *ret = cli->token_buf;
    return 0;
}

Client *
cli_client(Cli *cli, Error **errp)
{
    if (!cli->client)
        cli->client = cli_client_new(cli, errp);
    return cli->client;
}

Client *
cli_client_new(Cli *cli, Error **errp)
{
    const char *token;
    Client *c;

    if (cli_token(cli, &token, errp) < 0)
        return NULL;
    /* A --socket on the command line beats STOCKADE_URL from the environment. */
    ClientOptions o = {.socket_path = cli->socket_path,
                       .url = cli->socket_from_flag ? NULL : cli->url,
                       .token = token,
                       .cacert = cli->cacert};
    if (client_new(&o, &c, errp) < 0)
        return NULL;
    return c;
}

void
cli_done(Cli *cli)
{
    client_free(cli->client);
    cli->client = NULL;
    explicit_bzero(cli->token_buf, sizeof(cli->token_buf));
}

static void vreport(const Cli *cli, const char *label, Color color, const char *fmt, va_list ap)
    _printf_(4, 0);

static void
vreport(const Cli *cli, const char *label, Color color, const char *fmt, va_list ap)
{
    fflush(stdout);
    fprintf(stderr, "%s%s%s: %s%s%s", cli->prog, cli->verb ? " " : "", cli->verb ? cli->verb : "",
            cli->color_err ? color_code(color) : "", label, cli->color_err ? COLOR_RESET : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void report(const Cli *cli, const char *label, Color color, const char *fmt, ...)
    _printf_(4, 5);

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
    /* 126 says the command line was refused before the daemon was asked: what the daemon
     * itself refuses as invalid (a 400: no such pool, a value over its bound) is a refusal. */
    bool refused = client_last_status(cli->client) >= 400 && client_last_status(cli->client) < 500;
    report(cli, "error: ", COLOR_RED, "%s", e->message);
    switch (e->category) {
    case E_INVALID:
        if (refused)
            return task_verb ? CLI_EXIT_DAEMON : CLI_EXIT_FAIL;
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
    char esc[64], hint[96];
    const char *names[16];
    size_t n = 0;
    for (size_t i = 0; i < n_subs && n < ELEMENTSOF(names); i++)
        names[n++] = subs[i].name;
    log_escape(esc, sizeof(esc), argv[1], strlen(argv[1]));
    cli_did_you_mean(argv[1], names, n, hint, sizeof(hint));
    return cli_usage_error(cli, "unknown sub-command '%s'%s", esc, hint);
}

int
cli_parse_plain(Cli *cli, int argc, char **argv, const char *help, int min_operands,
                int max_operands, int *ret_first, int *ret_code)
{
    return cli_parse_flags(cli, argc, argv, help, NULL, 0, min_operands, max_operands, ret_first,
                           ret_code);
}

int
cli_parse_flags(Cli *cli, int argc, char **argv, const char *help, const CliFlag *flags,
                size_t n_flags, int min_operands, int max_operands, int *ret_first, int *ret_code)
{
    static const struct option globals[] = {CLI_GLOBAL_OPTIONS};
    struct option opts[CLI_FLAGS_MAX + ELEMENTSOF(globals)];
    _cleanup_error_ Error *err = NULL;
    size_t n_opts = 0;
    int c;

    for (; n_opts < n_flags && n_opts < CLI_FLAGS_MAX; n_opts++)
        opts[n_opts] = (struct option){flags[n_opts].name, no_argument, NULL,
                                       CLI_OPT_VERB_BASE + (int) n_opts};
    memcpy(opts + n_opts, globals, sizeof(globals));
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int k = c - CLI_OPT_VERB_BASE;
        if (k >= 0 && k < (int) n_opts) {
            *flags[k].value = true;
            continue;
        }
        if (cli_global_option(cli, c, optarg, argc, argv, &err) != 0) {
            if (!err)
                error_set(&err, E_INVALID, 0, "unexpected option");
            cli->opts = NULL;
            *ret_code = cli_usage_error(cli, "%s", err->message);
            return -1;
        }
    }
    cli->opts = NULL; /* opts lives on this stack */
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
