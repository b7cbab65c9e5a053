/* stockade sessions ls|get|rm|new: list, show, close and create sessions (tasks are listed
 * too: they are one-shot sessions). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "events.h"
#include "output.h"

#define SESSIONS_PAGE_MAX 500 /* the daemon's page cap */
#define SESSIONS_ALL_MAX 100000

static const char sessions_help[] =
    "Usage: stockade sessions ls|get|rm|new ...\n"
    "  ls [--state STATE] [--limit N] [--all]   list sessions and tasks, newest first\n"
    "  get ID                                   show one\n"
    "  rm ID...                                 close sessions: the guest is destroyed, the\n"
    "                                           workspace kept (stockade cp ID: DIR)\n"
    "  new [--pool NAME] [--timeout S] [--env NAME=VALUE]... [--no-mirror] [--wait]\n"
    "                                           start a session, print its id\n"
    "Every sub-command takes --json and --help.\n";

static const char ls_help[] =
    "Usage: stockade sessions ls [--state STATE] [--limit N] [--all] [--json]\n"
    "Lists sessions and tasks, newest first.\n"
    "  -s, --state STATE  pending, starting, running, stopping, extracting or ended\n"
    "  -n, --limit N      1..500 (default 100)\n"
    "      --all          every page\n";
static const char get_help[] = "Usage: stockade sessions get [--json] ID\n"
                               "Shows one session or task.\n";
static const char rm_help[] =
    "Usage: stockade sessions rm [--json] ID...\n"
    "Closes sessions (DELETE): each guest is destroyed and its workspace extracted; the\n"
    "session ends 'closed'. Closing an ended session is fine.\n";
static const char new_help[] =
    "Usage: stockade sessions new [--pool NAME] [--timeout S] [--env NAME=VALUE]...\n"
    "                             [--no-mirror] [--wait] [--json]\n"
    "Starts a session (a guest you run commands in with stockade exec) and prints its id.\n"
    "  -p, --pool NAME        pool (default " RUN_DEFAULT_POOL ")\n"
    "  -t, --timeout S        the session's lifetime once it has a guest (default: the\n"
    "                         daemon's [sessions] default_timeout_s)\n"
    "  -e, --env NAME=VALUE   added to every exec (repeatable)\n"
    "      --no-mirror        no live mirror of /workspace (files come back at the end)\n"
    "      --wait             return once the session is running\n";

/* ------------------------------------------------------------------ ls */

static void
duration_of(json_t *s, char *out, size_t cap)
{
    int64_t t0, t1;
    if (parse_rfc3339_ms(event_str(s, "created_at", ""), &t0) == 0 &&
        parse_rfc3339_ms(event_str(s, "ended_at", ""), &t1) == 0 && t1 >= t0)
        format_duration_ms(t1 - t0, out, cap);
    else
        snprintf(out, cap, "-");
}

static Color
state_color(json_t *s)
{
    const char *state = event_str(s, "state", ""), *reason = event_str(s, "end_reason", "");
    if (strcmp(state, "ended") != 0)
        return COLOR_YELLOW;
    if (strcmp(reason, "completed") == 0 && event_int(s, "exit_code", 0) == 0)
        return COLOR_GREEN;
    return strcmp(reason, "closed") == 0 ? COLOR_NONE : COLOR_RED;
}

static int
ls_row(Table *t, json_t *s)
{
    char exit_s[16] = "-", created[32], dur[24];
    json_t *code = json_object_get(s, "exit_code");
    if (json_is_integer(code))
        snprintf(exit_s, sizeof(exit_s), "%lld", (long long) json_integer_value(code));
    format_time_short(event_str(s, "created_at", ""), created, sizeof(created));
    duration_of(s, dur, sizeof(dur));
    const char *cells[] = {event_str(s, "id", "?"),
                           event_str(s, "kind", ""),
                           event_str(s, "pool", ""),
                           event_str(s, "state", ""),
                           event_str(s, "end_reason", "-"),
                           exit_s,
                           created,
                           dur};
    if (table_add(t, cells) < 0)
        return -1;
    table_color(t, 3, state_color(s));
    return 0;
}

/* Fetches pages into one array. */
static int
ls_fetch(Client *c, const char *state, uint64_t limit, bool all, json_t *out, Error **errp)
{
    char before[32] = "";
    for (;;) {
        char path[256];
        _cleanup_json_ json_t *page = NULL;
        snprintf(path, sizeof(path), "/v1/sessions?limit=%" PRIu64 "%s%s%s%s", limit,
                 state ? "&state=" : "", state ? state : "", before[0] ? "&before=" : "", before);
        if (client_json(c, "GET", path, NULL, &page, errp) < 0)
            return -1;
        json_t *arr = json_object_get(page, "sessions"), *next = json_object_get(page, "next");
        if (!json_is_array(arr))
            return error_set(errp, E_INTERNAL, 0, "the daemon's session list has no array");
        json_array_extend(out, arr);
        if (!all || !json_is_string(next) || json_array_size(out) >= SESSIONS_ALL_MAX ||
            json_string_length(next) >= sizeof(before) ||
            strspn(json_string_value(next), "0123456789") != json_string_length(next))
            return 0;
        snprintf(before, sizeof(before), "%s", json_string_value(next));
    }
}

static int
ls_options(Cli *cli, int argc, char **argv, const char **state, uint64_t *limit, bool *all,
           Error **errp)
{
    static const struct option opts[] = {
        {"state", required_argument, NULL, 's'},
        {"limit", required_argument, NULL, 'n'},
        {"all", no_argument, NULL, 'a'}, /* long only: -a is logs' --after */
        CLI_GLOBAL_OPTIONS,
    };
    int c;
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "s:n:h", opts, NULL)) != -1) {
        if (c == 's' && strspn(optarg, "abcdefghijklmnopqrstuvwxyz") == strlen(optarg) &&
            strlen(optarg) <= 15)
            *state = optarg;
        else if (c == 's')
            return error_set(errp, E_INVALID, 0, "--state wants a state name (e.g. running)");
        else if (c == 'n' && args_uint(optarg, 1, SESSIONS_PAGE_MAX, limit) < 0)
            return error_set(errp, E_INVALID, 0, "--limit wants 1..%d", SESSIONS_PAGE_MAX);
        else if (c == 'a')
            *all = true;
        else if (c != 'n' && args_global(cli, c, argc, argv, errp) < 0)
            return -1;
    }
    if (optind < argc)
        return error_set(errp, E_INVALID, 0, "unexpected operand '%.64s'", argv[optind]);
    return 0;
}

static int
sessions_ls(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    const char *state = NULL;
    uint64_t limit = 100;
    bool all = false;
    Client *c;

    if (ls_options(cli, argc, argv, &state, &limit, &all, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(ls_help);
    _cleanup_json_ json_t *list = json_array();
    if (!(c = cli_client(cli, &err)) ||
        ls_fetch(c, state, all ? SESSIONS_PAGE_MAX : limit, all, list, &err) < 0)
        return cli_report(cli, err, false);
    if (cli->json)
        return cli_print_json(list);
    static const char *const headers[] = {"ID",     "KIND",  "POOL",    "STATE",
                                          "REASON", "EXIT>", "CREATED", "DURATION>"};
    Table *t = table_new(ELEMENTSOF(headers), headers);
    for (size_t i = 0; t && i < json_array_size(list); i++)
        if (ls_row(t, json_array_get(list, i)) < 0)
            break;
    if (t)
        table_render(t, stdout, cli->color_out);
    table_free(t);
    return t ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* ------------------------------------------------------------------ get */

static void
get_line(const char *key, const char *value)
{
    _cleanup_free_ char *v = term_escape(value, strlen(value), 200);
    printf("%-12s %s\n", key, v ? v : "?");
}

static void
get_print(json_t *s)
{
    char buf[64], size[16];
    static const char *const text_keys[] = {"id", "kind", "pool", "state", "end_reason"};
    for (size_t i = 0; i < ELEMENTSOF(text_keys); i++)
        if (json_is_string(json_object_get(s, text_keys[i])))
            get_line(text_keys[i], event_str(s, text_keys[i], ""));
    if (json_is_integer(json_object_get(s, "exit_code"))) {
        snprintf(buf, sizeof(buf), "%lld", (long long) event_int(s, "exit_code", 0));
        get_line("exit_code", buf);
    }
    static const char *const times[] = {"created_at", "started_at", "ended_at"};
    for (size_t i = 0; i < ELEMENTSOF(times); i++)
        if (json_is_string(json_object_get(s, times[i])))
            get_line(times[i], event_str(s, times[i], ""));
    duration_of(s, buf, sizeof(buf));
    get_line("duration", buf);
    snprintf(buf, sizeof(buf), "%lld s", (long long) event_int(s, "timeout_s", 0));
    get_line("timeout", buf);
    format_bytes((uint64_t) MAX(event_int(s, "output_bytes", 0), 0), size, sizeof(size));
    get_line("output", size);
    json_t *art = json_object_get(s, "artifacts");
    format_bytes((uint64_t) MAX(event_int(art, "bytes", 0), 0), size, sizeof(size));
    snprintf(buf, sizeof(buf), "%lld files, %s%s", (long long) event_int(art, "files", 0), size,
             json_is_true(json_object_get(art, "truncated")) ? " (truncated)" : "");
    get_line("artifacts", buf);
    snprintf(buf, sizeof(buf), "%lld", (long long) event_int(s, "last_seq", 0));
    get_line("last_seq", buf);
}

static int
sessions_get(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *s = NULL;
    char path[128];
    int first, code;
    Client *c;

    if (cli_parse_plain(cli, argc, argv, get_help, 1, 1, &first, &code) != 0)
        return code;
    if (!args_id_ok(argv[first]))
        return cli_usage_error(cli, "'%.64s' is not a session id (see stockade sessions ls)",
                               argv[first]);
    snprintf(path, sizeof(path), "/v1/sessions/%s", argv[first]);
    if (!(c = cli_client(cli, &err)) || client_json(c, "GET", path, NULL, &s, &err) < 0)
        return cli_report(cli, err, false);
    if (cli->json)
        return cli_print_json(s);
    get_print(s);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------ rm */

static int
sessions_rm(Cli *cli, int argc, char **argv)
{
    int first, code = CLI_EXIT_OK;
    Client *c;
    _cleanup_error_ Error *err = NULL;

    if (cli_parse_plain(cli, argc, argv, rm_help, 1, -1, &first, &code) != 0)
        return code;
    for (int i = first; i < argc; i++)
        if (!args_id_ok(argv[i]))
            return cli_usage_error(cli, "'%.64s' is not a session id", argv[i]);
    if (!(c = cli_client(cli, &err)))
        return cli_report(cli, err, false);
    for (int i = first; i < argc; i++) {
        char path[128];
        _cleanup_json_ json_t *ans = NULL;
        _cleanup_error_ Error *e = NULL;
        snprintf(path, sizeof(path), "/v1/sessions/%s", argv[i]);
        if (client_json(c, "DELETE", path, NULL, &ans, &e) < 0) {
            int r = cli_report(cli, e, false);
            code = code ? code : r;
            continue;
        }
        if (cli->json)
            cli_print_json(ans);
        else
            printf("%s: %s\n", argv[i],
                   strcmp(event_str(ans, "state", ""), "ended") == 0 ? "already ended" : "closing");
    }
    return code;
}

/* ------------------------------------------------------------------ new */

enum { OPT_NO_MIRROR = CLI_OPT_VERB_BASE, OPT_WAIT };

typedef struct NewArgs {
    const char *pool;
    uint64_t timeout_s;
    bool no_mirror, wait;
} NewArgs;

static int
new_options(Cli *cli, int argc, char **argv, NewArgs *a, json_t *env, Error **errp)
{
    static const struct option opts[] = {
        {"pool", required_argument, NULL, 'p'}, {"timeout", required_argument, NULL, 't'},
        {"env", required_argument, NULL, 'e'},  {"no-mirror", no_argument, NULL, OPT_NO_MIRROR},
        {"wait", no_argument, NULL, OPT_WAIT},  CLI_GLOBAL_OPTIONS,
    };
    int c;
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "p:t:e:h", opts, NULL)) != -1) {
        int r = 0;
        if (c == 'p')
            a->pool = optarg;
        else if (c == 't' && args_uint(optarg, 1, ARGS_TIMEOUT_MAX_S, &a->timeout_s) < 0)
            r = error_set(errp, E_INVALID, 0, "--timeout wants 1..%d seconds", ARGS_TIMEOUT_MAX_S);
        else if (c == 'e')
            r = args_env(optarg, env, errp);
        else if (c == OPT_NO_MIRROR)
            a->no_mirror = true;
        else if (c == OPT_WAIT)
            a->wait = true;
        else if (c != 't')
            r = args_global(cli, c, argc, argv, errp);
        if (r < 0)
            return -1;
    }
    if (optind < argc)
        return error_set(errp, E_INVALID, 0, "unexpected operand '%.64s'", argv[optind]);
    return 0;
}

/* --wait: follows the events until the session runs (or ended). */
static int
new_wait_on_event(void *userdata, json_t *ev, uint64_t seq, Error **errp)
{
    (void) userdata;
    (void) seq;
    (void) errp;
    const char *state = event_str(ev, "state", "");
    return strcmp(event_type(ev), "session.state") == 0 &&
           (strcmp(state, "running") == 0 || strcmp(state, "ended") == 0 ||
            strcmp(state, "stopping") == 0);
}

static int
new_wait(Client *c, const char *id, Error **errp)
{
    Follow f = {.client = c, .follow = true, .on_event = new_wait_on_event};
    FollowEnd end;
    snprintf(f.id, sizeof(f.id), "%s", id);
    int r = follow_events(&f, &end, errp);
    follow_free(&f);
    return r;
}

static int
sessions_new(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *env = json_object(), *ans = NULL;
    NewArgs a = {.pool = RUN_DEFAULT_POOL};
    Client *c;

    if (new_options(cli, argc, argv, &a, env, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(new_help);
    _cleanup_json_ json_t *body =
        json_pack("{s:s,s:O,s:b}", "pool", a.pool, "env", env, "mirror", !a.no_mirror);
    if (body && a.timeout_s)
        json_object_set_new(body, "timeout_s", json_integer((json_int_t) a.timeout_s));
    if (!(c = cli_client(cli, &err)) ||
        client_json(c, "POST", "/v1/sessions", body, &ans, &err) < 0)
        return cli_report(cli, err, false);
    const char *id = event_str(ans, "id", "");
    if (!args_id_ok(id)) {
        error_set(&err, E_INTERNAL, 0, "the daemon answered without a valid session id");
        return cli_report(cli, err, false);
    }
    if (a.wait && new_wait(c, id, &err) < 0)
        return cli_report(cli, err, false);
    if (cli->json)
        return cli_print_json(ans);
    printf("%s\n", id);
    return CLI_EXIT_OK;
}

int
cmd_sessions(Cli *cli, int argc, char **argv)
{
    static const SubVerb subs[] = {
        {"ls", sessions_ls}, {"get", sessions_get}, {"rm", sessions_rm}, {"new", sessions_new}};
    return cli_dispatch(cli, argc, argv, subs, ELEMENTSOF(subs), sessions_help);
}
