/* The operator CLI `stockade`: what every verb shares. One file per verb (cmd_*.c) over a
 * small library (client, events, watch, upload, download, output, images, args).
 *
 * The verbs are the edge: they print and map errors to exit codes. Library functions return
 * 0 / -1 with `Error **errp` last and never print. Everything the daemon sends is untrusted:
 * bodies, event lines and tar streams are bounded (named limits in each header) and anything
 * shown on a terminal outside a program's own stdout/stderr is escaped first. */
#pragma once

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "client.h"
#include "error.h"

/* Exit codes (the table is in `stockade --help` and stockade(1)). run and exec exit with the
 * program's own code, or one of these. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,          /* the daemon refused the request; doctor found a FAIL */
    CLI_EXIT_TIMEOUT = 124,     /* the task (or exec) hit its timeout */
    CLI_EXIT_DAEMON = 125,      /* the task could not start, the daemon failed or is unreachable */
    CLI_EXIT_USAGE = 126,       /* bad command line, refused before anything was sent */
    CLI_EXIT_NOT_FOUND = 127,   /* run/exec: the program does not exist in the guest */
    CLI_EXIT_SIGNAL_BASE = 128, /* + N: the program was killed by signal N */
    CLI_EXIT_INTERRUPTED = 130, /* Ctrl-C (the task was cancelled), or cancelled by another */
};

#define CLI_DEFAULT_SOCKET "/var/lib/stockade/api.sock"
#define CLI_DEFAULT_STATE_DIR "/var/lib/stockade"

/* Global options, accepted before the verb and after it. The token comes from the first of
 * --token, --token-file, STOCKADE_TOKEN, STOCKADE_TOKEN_FILE that is set (cli_client). */
typedef struct Cli {
    const char *prog; /* "stockade" */
    const char *verb; /* "run", "sessions ls", ... for messages */
    const char *socket_path, *url;
    const char *token, *token_file;         /* --token, --token-file */
    const char *env_token, *env_token_file; /* STOCKADE_TOKEN, STOCKADE_TOKEN_FILE */
    const char *cacert; /* --cacert / STOCKADE_CACERT: CA file for an https:// --url */
    bool socket_from_flag, url_from_flag;
    bool json;
    bool help; /* --help was given: print the verb's usage and exit 0 */
    bool tty_out, tty_err, color_out, color_err;
    const struct option *opts; /* the table of the parse under way: "did you mean" */
    Client *client;            /* opened by cli_client() */
    char token_buf[CLIENT_TOKEN_MAX_BYTES + 1]; /* a token read from a file; wiped by cli_done */
} Cli;

/* Long options every verb accepts; append to a verb's option table. */
enum {
    CLI_OPT_SOCKET = 0x1000,
    CLI_OPT_URL,
    CLI_OPT_TOKEN,
    CLI_OPT_TOKEN_FILE,
    CLI_OPT_JSON,
    CLI_OPT_CACERT,
    CLI_OPT_VERB_BASE = 0x1100, /* verbs number their long-only options from here */
};
/* clang-format off */
#define CLI_GLOBAL_OPTIONS                                                                         \
    {"socket", required_argument, NULL, CLI_OPT_SOCKET},                                           \
    {"url", required_argument, NULL, CLI_OPT_URL},                                                 \
    {"token", required_argument, NULL, CLI_OPT_TOKEN},                                             \
    {"token-file", required_argument, NULL, CLI_OPT_TOKEN_FILE},                                   \
    {"json", no_argument, NULL, CLI_OPT_JSON},                                                     \
    {"cacert", required_argument, NULL, CLI_OPT_CACERT},                                           \
    {"help", no_argument, NULL, 'h'},                                                              \
    {NULL, 0, NULL, 0}
/* clang-format on */

/* Sets defaults from the environment (STOCKADE_SOCKET, STOCKADE_URL, STOCKADE_TOKEN,
 * STOCKADE_TOKEN_FILE, NO_COLOR) and the terminals. */
void cli_init(Cli *cli, const char *prog);

/* Handles a global option (or 'h') returned by getopt_long. Returns 0 if it was one, 1 if the
 * key is not a global option, -1 with errp (E_INVALID) for a bad value or a '?' / ':' key
 * (the message says which option, and "did you mean" a near one of cli->opts). */
int cli_global_option(Cli *cli, int key, const char *arg, int argc, char **argv, Error **errp);

/* Resets getopt for a fresh parse of argv with this option table (optind = 0, opterr = 0);
 * the table is what an unknown option is compared with. */
void cli_getopt_reset(Cli *cli, const struct option *opts);

/* Opens (once) the client for the chosen endpoint, with the token of the first source set
 * (see Cli); a token file is read then (first line; refused when group or others may read
 * it, or when empty: E_INVALID). NULL with errp on failure. */
Client *cli_client(Cli *cli, Error **errp);
/* Another client to the same daemon with the same token, owned by the caller (client_free):
 * for a second thread (exec -i forwards stdin while the first follows the events). */
Client *cli_client_new(Cli *cli, Error **errp);
/* The token cli_client sends: the first source set of --token, --token-file, STOCKADE_TOKEN,
 * STOCKADE_TOKEN_FILE; *ret NULL when none is. A file is read into cli->token_buf. */
int cli_token(Cli *cli, const char **ret, Error **errp);
void cli_done(Cli *cli);

/* Edge helpers: print "stockade VERB: message" (escaped already) to stderr and return the
 * exit code for the error: a command line the CLI refused before sending anything
 * (E_INVALID not from the daemon) -> 126; daemon-side and connection failures -> 125; any
 * other refusal of the daemon (its 400 included) -> 1; task verbs (run, exec, code):
 * everything but usage -> 125 ("the task could not start"). */
int cli_report(const Cli *cli, const Error *e, bool task_verb);
int cli_usage_error(const Cli *cli, const char *fmt, ...) _printf_(2, 3);
void cli_warn(const Cli *cli, const char *fmt, ...) _printf_(2, 3);
/* Prints a JSON value on stdout (indented, keys in the daemon's order): --json output. */
int cli_print_json(const json_t *o);
/* Prints a verb's usage text to stdout and returns 0. */
int cli_print_help(const char *text);

/* Verbs with sub-verbs (sessions ls|get|rm|new, tenants, image): picks argv[1], sets
 * cli->verb to "GROUP SUB" and calls it with argv starting at the sub-verb. */
typedef struct SubVerb {
    const char *name;
    int (*fn)(Cli *cli, int argc, char **argv);
} SubVerb;
int cli_dispatch(Cli *cli, int argc, char **argv, const SubVerb *subs, size_t n_subs,
                 const char *group_help);

/* Parses a verb's command line whose only options are the global ones; the operands are
 * argv[*ret_first .. argc). Returns -1 after printing a usage error (*ret_code = 126), 1 if
 * help was printed (*ret_code = 0), 0 to go on. */
int cli_parse_plain(Cli *cli, int argc, char **argv, const char *help, int min_operands,
                    int max_operands, int *ret_first, int *ret_code);
/* The same with long-only yes/no flags of the verb (--admin, --removed, ...). */
typedef struct CliFlag {
    const char *name;
    bool *value; /* set true when given */
} CliFlag;
#define CLI_FLAGS_MAX 4
int cli_parse_flags(Cli *cli, int argc, char **argv, const char *help, const CliFlag *flags,
                    size_t n_flags, int min_operands, int max_operands, int *ret_first,
                    int *ret_code);

/* "did you mean": the candidate nearest to word when it is near (see args_suggest), as
 * "; did you mean 'X'?" into out (else ""). */
void cli_did_you_mean(const char *word, const char *const *candidates, size_t n, char *out,
                      size_t cap);

/* Ctrl-C: run and exec count SIGINTs instead of dying. */
extern volatile sig_atomic_t cli_interrupts;
void cli_catch_sigint(void);

/* Verbs: each returns the process's exit code. argv[0] is the verb's name. */
int cmd_run(Cli *cli, int argc, char **argv);
int cmd_exec(Cli *cli, int argc, char **argv);
int cmd_code(Cli *cli, int argc, char **argv);
int cmd_sessions(Cli *cli, int argc, char **argv);
int cmd_logs(Cli *cli, int argc, char **argv);
int cmd_cancel(Cli *cli, int argc, char **argv);
int cmd_cp(Cli *cli, int argc, char **argv);
int cmd_pool(Cli *cli, int argc, char **argv);
int cmd_doctor(Cli *cli, int argc, char **argv);
int cmd_version(Cli *cli, int argc, char **argv);
int cmd_tenants(Cli *cli, int argc, char **argv);
int cmd_tokens(Cli *cli, int argc, char **argv);
int cmd_hosts(Cli *cli, int argc, char **argv);
int cmd_drain(Cli *cli, int argc, char **argv);
int cmd_quota(Cli *cli, int argc, char **argv);
int cmd_usage(Cli *cli, int argc, char **argv);
int cmd_image(Cli *cli, int argc, char **argv);
