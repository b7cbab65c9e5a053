/* stockade logs: a session's events, one line each (or NDJSON with --json, or only the
 * programs' output with --output). -f follows until the session ended and resumes after the
 * last seq it printed when the connection drops. Everything shown is escaped. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "events.h"
#include "output.h"
#include "watch.h"

#define LOGS_LINE_MAX_CHARS 4096 /* one shown line of output; longer lines are cut */
#define LOGS_ARGV_SHOWN 16       /* arguments shown of exec.requested */

static const char logs_help[] =
    "Usage: stockade logs [-f] [--after SEQ] [--output] [--json] ID\n"
    "Prints the events of a session or task: SEQ, time (UTC), type and details.\n\n"
    "  -f, --follow     keep printing until the session ended; a dropped connection is\n"
    "                   resumed after the last event printed (by its seq)\n"
    "  -a, --after SEQ  start after event SEQ (default 0: from the first)\n"
    "  -o, --output     only the programs' stdout and stderr, raw, to stdout and stderr\n"
    "      --json       the events as NDJSON, as the daemon sends them\n"
    "  -h, --help       this help\n";

typedef struct LogsState {
    Cli *cli;
    bool output_only;
    Watch watch;
} LogsState;

static void
print_escaped(const char *s, size_t len)
{
    _cleanup_free_ char *e = term_escape(s, len, LOGS_LINE_MAX_CHARS);
    fputs(e ? e : "?", stdout);
}

static void
print_field_str(json_t *ev, const char *key)
{
    const char *s = event_str(ev, key, "");
    print_escaped(s, strlen(s));
}

/* exec.stdout / exec.stderr: one shown line per line of data, the first after the prefix. */
static void
render_output(json_t *ev, int width)
{
    _cleanup_free_ uint8_t *data = NULL;
    size_t len = 0;
    if (event_data(ev, &data, &len, NULL) < 0) {
        printf("(bad data)\n");
        return;
    }
    for (size_t i = 0; i < len; i++)
        if (data[i] == '\t')
            data[i] = ' ';
    size_t pos = 0;
    do {
        const uint8_t *nl = memchr(data + pos, '\n', len - pos);
        size_t n = nl ? (size_t) (nl - (data + pos)) : len - pos;
        if (pos > 0)
            printf("%*s", width, "");
        printf("[%lld] ", (long long) event_int(ev, "exec_id", 0));
        print_escaped((const char *) data + pos, n);
        putchar('\n');
        pos += n + 1;
    } while (pos < len);
}

static void
render_argv(json_t *ev)
{
    json_t *argv = json_object_get(ev, "argv");
    printf("[%lld]", (long long) event_int(ev, "exec_id", 0));
    for (size_t i = 0; i < json_array_size(argv) && i < LOGS_ARGV_SHOWN; i++) {
        json_t *a = json_array_get(argv, i);
        putchar(' ');
        if (json_is_string(a))
            print_escaped(json_string_value(a), json_string_length(a));
    }
    if (json_array_size(argv) > LOGS_ARGV_SHOWN)
        printf(" ...");
}

static void
render_exited(json_t *ev)
{
    char wall[24], rss[16];
    format_duration_ms(event_int(ev, "wall_ms", -1), wall, sizeof(wall));
    format_bytes((uint64_t) MAX(event_int(ev, "max_rss_kib", 0), 0) * 1024, rss, sizeof(rss));
    printf("[%lld] exit %lld", (long long) event_int(ev, "exec_id", 0),
           (long long) event_int(ev, "exit_code", -1));
    if (event_int(ev, "signal", 0) > 0)
        printf(" (signal %lld)", (long long) event_int(ev, "signal", 0));
    printf(" reason=");
    print_field_str(ev, "reason");
    printf(" wall %s cpu %.2f+%.2f s rss %s", wall,
           (double) event_int(ev, "cpu_user_ms", 0) / 1000.0,
           (double) event_int(ev, "cpu_system_ms", 0) / 1000.0, rss);
}

static void
render_artifacts(json_t *ev)
{
    char size[16], ms[24];
    format_bytes((uint64_t) MAX(event_int(ev, "bytes", 0), 0), size, sizeof(size));
    /* A clean end hands the files over the channel (finalize_ms); the rest are salvaged. */
    bool channel = strcmp(event_str(ev, "via", "salvage"), "channel") == 0;
    format_duration_ms(event_int(ev, channel ? "finalize_ms" : "salvage_ms", -1), ms, sizeof(ms));
    printf("%lld files, %s, %lld skipped, stop=", (long long) event_int(ev, "files", 0), size,
           (long long) event_int(ev, "skipped", 0));
    print_field_str(ev, "stop");
    printf(", %s %s%s", channel ? "via channel in" : "salvage", ms,
           json_is_true(json_object_get(ev, "truncated")) ? ", TRUNCATED" : "");
    if (json_is_string(json_object_get(ev, "error"))) {
        printf(", error: ");
        print_field_str(ev, "error");
    }
}

static void
render_state(json_t *ev)
{
    print_field_str(ev, "state");
    if (json_is_string(json_object_get(ev, "reason"))) {
        printf(" (");
        print_field_str(ev, "reason");
        putchar(')');
    }
    if (json_is_integer(json_object_get(ev, "exit_code")))
        printf(" exit_code=%lld", (long long) event_int(ev, "exit_code", 0));
}

/* Any other type: its fields other than seq, ts and type, as compact JSON. */
static void
render_other(json_t *ev)
{
    _cleanup_json_ json_t *rest = json_deep_copy(ev);
    json_object_del(rest, "seq");
    json_object_del(rest, "ts");
    json_object_del(rest, "type");
    _cleanup_free_ char *text = json_dumps(rest, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text)
        print_escaped(text, strlen(text));
}

static void
render_created(json_t *ev)
{
    printf("kind=");
    print_field_str(ev, "kind");
    printf(" pool=");
    print_field_str(ev, "pool");
    printf(" timeout=%lld s", (long long) event_int(ev, "timeout_ms", 0) / 1000);
}

static void
render_started(json_t *ev)
{
    printf("[%lld] pid %lld", (long long) event_int(ev, "exec_id", 0),
           (long long) event_int(ev, "pid", 0));
}

static void
render_failed(json_t *ev)
{
    printf("[%lld] could not start: ", (long long) event_int(ev, "exec_id", 0));
    print_field_str(ev, "message");
}

static void
render_file(json_t *ev)
{
    char size[16];
    format_bytes((uint64_t) MAX(event_int(ev, "size", 0), 0), size, sizeof(size));
    print_field_str(ev, "path");
    printf(" %s ", size);
    print_field_str(ev, "mirror");
}

static void
render_destroyed(json_t *ev)
{
    printf("in %lld ms", (long long) event_int(ev, "destroy_ms", 0));
}

static void
render_timeout(json_t *ev)
{
    printf("after %lld s", (long long) event_int(ev, "timeout_ms", 0) / 1000);
}

static void
render_limit(json_t *ev)
{
    char size[16];
    format_bytes((uint64_t) MAX(event_int(ev, "limit_bytes", 0), 0), size, sizeof(size));
    printf("output over %s: the session ends", size);
}

static void
render_guest_error(json_t *ev)
{
    print_field_str(ev, "message");
}

static void
render_details(json_t *ev, const char *type, int width)
{
    static const struct {
        const char *type;
        void (*fn)(json_t *ev);
    } renderers[] = {
        {"session.created", render_created}, {"session.state", render_state},
        {"session.timeout", render_timeout}, {"exec.requested", render_argv},
        {"exec.started", render_started},    {"exec.exited", render_exited},
        {"exec.failed", render_failed},      {"file.changed", render_file},
        {"artifacts", render_artifacts},     {"guest.destroyed", render_destroyed},
        {"limit.output", render_limit},      {"guest.error", render_guest_error},
    };
    if (strcmp(type, "exec.stdout") == 0 || strcmp(type, "exec.stderr") == 0) {
        render_output(ev, width); /* one shown line per line of output */
        return;
    }
    void (*fn)(json_t *) = render_other;
    for (size_t i = 0; i < ELEMENTSOF(renderers); i++)
        if (strcmp(type, renderers[i].type) == 0)
            fn = renderers[i].fn;
    fn(ev);
    putchar('\n');
}

static void
render_event(json_t *ev, uint64_t seq)
{
    const char *ts = event_str(ev, "ts", ""), *type = event_type(ev);
    char when[16] = "-";
    int64_t ms;
    if (parse_rfc3339_ms(ts, &ms) == 0 && strlen(ts) >= 23 && ts[19] == '.')
        snprintf(when, sizeof(when), "%.12s", ts + 11);
    else if (parse_rfc3339_ms(ts, &ms) == 0)
        snprintf(when, sizeof(when), "%.8s", ts + 11);
    int width = printf("%6" PRIu64 "  %-12s  %-16s ", seq, when, type);
    render_details(ev, type, width);
}

static int
logs_on_event(void *userdata, json_t *ev, uint64_t seq, Error **errp)
{
    LogsState *st = userdata;
    if (st->output_only) {
        if (watch_event(&st->watch, ev, errp) < 0)
            return -1;
        return 0;
    }
    if (st->cli->json) {
        if (json_dumpf(ev, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0)
            return error_set(errp, E_IO, 0, "writing to stdout");
        putchar('\n');
    } else {
        render_event(ev, seq);
    }
    if (fflush(stdout) == EOF)
        return error_set(errp, E_IO, 0, "writing to stdout");
    return 0;
}

static void
logs_on_resume(void *userdata, uint64_t after, const char *why)
{
    LogsState *st = userdata;
    cli_warn(st->cli, "lost the event stream (%s); resuming after event %" PRIu64, why, after);
}

enum { OPT_AFTER = CLI_OPT_VERB_BASE };

static int
logs_options(Cli *cli, int argc, char **argv, Follow *f, LogsState *st, Error **errp)
{
    static const struct option opts[] = {
        {"follow", no_argument, NULL, 'f'},
        {"after", required_argument, NULL, 'a'},
        {"output", no_argument, NULL, 'o'},
        CLI_GLOBAL_OPTIONS,
    };
    int c;
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "fa:oh", opts, NULL)) != -1) {
        if (c == 'f')
            f->follow = true;
        else if (c == 'a' && args_uint(optarg, 0, INT64_MAX, &f->after) < 0)
            return error_set(errp, E_INVALID, 0, "--after wants an event seq number (>= 0)");
        else if (c == 'o')
            st->output_only = true;
        else if (c != 'a' && args_global(cli, c, argc, argv, errp) < 0)
            return -1;
    }
    if (cli->help)
        return 0;
    if (optind != argc - 1 || !args_id_ok(argv[optind]))
        return error_set(errp, E_INVALID, 0,
                         "one session or task id is needed (see stockade "
                         "sessions ls)");
    snprintf(f->id, sizeof(f->id), "%s", argv[optind]);
    return 0;
}

int
cmd_logs(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    LogsState st = {.cli = cli};
    Follow f = {.on_event = logs_on_event, .on_resume = logs_on_resume, .userdata = &st};
    FollowEnd end;

    cli->verb = "logs";
    if (logs_options(cli, argc, argv, &f, &st, &err) < 0)
        return cli_usage_error(cli, "%s", err->message);
    if (cli->help)
        return cli_print_help(logs_help);
    watch_init(&st.watch, STDOUT_FILENO, STDERR_FILENO);
    if (!(f.client = cli_client(cli, &err)))
        return cli_report(cli, err, false);
    int r = follow_events(&f, &end, &err);
    follow_free(&f);
    return r < 0 ? cli_report(cli, err, false) : CLI_EXIT_OK;
}
