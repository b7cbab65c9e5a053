/* stockade code: runs Python (or JavaScript, or bash) source from a file or stdin in a session's
 * stateful code context
 * (a data-pool session: POST /v1/sessions/{id}/code) and prints what the run made as it
 * arrives: printed lines on stdout/stderr, the last expression's text, a traceback on stderr.
 * PNG results (matplotlib figures) are written to files, never to the terminal. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "base64.h"
#include "cli.h"
#include "events.h"

#define CODE_CLI_MAX_BYTES (1u << 20) /* the daemon's CODE_SOURCE_MAX_BYTES */

static const char code_help[] =
    "Usage: stockade code [OPTIONS] SESSION [FILE]\n"
    "Runs code from FILE (or stdin) in a stateful context of a running session (a session of\n"
    "the data pool: stockade sessions new --pool data). Variables persist between runs of the\n"
    "same context. Prints the run's output as it arrives, then the value of the last\n"
    "expression; an exception's traceback goes to stderr.\n\n"
    "  -l, --language LANG    python (the default), javascript (js) or bash: runs in that\n"
    "                         language's default context\n"
    "  -c, --context N        the context to run in (default: the language's default context)\n"
    "  -t, --timeout SECONDS  interrupt the cell after this long (TimeoutError; the context\n"
    "                         keeps its variables)\n"
    "  -d, --out-dir DIR      where PNG results are saved as run<RUN>-<N>.png (default .)\n"
    "      --json             the run's events as NDJSON on stdout\n"
    "  -h, --help             this help\n\n"
    "Exit status: 0 the code ran; 1 it raised an exception; 125 the daemon refused or failed;\n"
    "126 bad usage.\n";

typedef struct CodeState {
    Cli *cli;
    int64_t run;
    const char *out_dir;
    unsigned pngs;
    bool failed;
} CodeState;

static void
code_save_png(CodeState *st, const char *b64)
{
    _cleanup_free_ uint8_t *png = NULL;
    _cleanup_free_ char *path = NULL;
    size_t n;
    if (base64_decode(b64, strlen(b64), &png, &n) < 0 ||
        asprintf(&path, "%s/run%" PRId64 "-%u.png", st->out_dir, st->run, ++st->pngs) < 0)
        return;
    FILE *f = fopen(path, "wbx");
    if (!f || fwrite(png, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "%s code: cannot write %s: %s\n", st->cli->prog, path, strerror(errno));
        return;
    }
    fprintf(stderr, "%s code: saved %s\n", st->cli->prog, path);
}

static int
code_on_event(void *userdata, json_t *ev, uint64_t seq, Error **errp)
{
    CodeState *st = userdata;
    const char *type = event_str(ev, "type", "");
    (void) seq;
    (void) errp;
    if (strncmp(type, "code.", 5) != 0 || event_int(ev, "run", 0) != st->run)
        return 0;
    if (st->cli->json) {
        char *line = json_dumps(ev, JSON_COMPACT);
        if (line)
            printf("%s\n", line);
        free(line);
    }
    json_t *data = json_object_get(ev, "data");
    if (strcmp(type, "code.done") == 0)
        return 1;
    if (st->cli->json)
        return 0;
    if (strcmp(type, "code.stdout") == 0 || strcmp(type, "code.stderr") == 0) {
        fputs(json_string_value(data) ?: "", type[5] == 'o' ? stdout : stderr);
        fflush(type[5] == 'o' ? stdout : stderr);
    } else if (strcmp(type, "code.result") == 0) {
        const char *png = json_string_value(json_object_get(data, "image/png"));
        const char *text = json_string_value(json_object_get(data, "text/plain"));
        if (png)
            code_save_png(st, png);
        else if (text && json_is_true(json_object_get(ev, "main")))
            printf("%s\n", text);
    } else if (strcmp(type, "code.error") == 0) {
        st->failed = true;
        const char *tb = event_str(ev, "traceback", "");
        if (*tb)
            fputs(tb, stderr);
        else
            fprintf(stderr, "%s: %s\n", event_str(ev, "name", "Error"), event_str(ev, "value", ""));
    }
    return 0;
}

static char *
code_read(const char *file, size_t *ret_len, Error **errp)
{
    FILE *f = file ? fopen(file, "rb") : stdin;
    if (!f)
        return error_set(errp, E_INVALID, errno, "open %s", file), NULL;
    char *buf = malloc(CODE_CLI_MAX_BYTES + 1);
    size_t n = buf ? fread(buf, 1, CODE_CLI_MAX_BYTES + 1, f) : 0;
    if (file)
        fclose(f);
    if (!buf || n > CODE_CLI_MAX_BYTES) {
        free(buf);
        return error_set(errp, E_INVALID, 0, "the code is over %u bytes", CODE_CLI_MAX_BYTES), NULL;
    }
    *ret_len = n;
    return buf;
}

static int
code_start(Cli *cli, Client *c, const char *session, json_t *body, CodeState *st, Follow *f,
           Error **errp)
{
    char path[128];
    _cleanup_json_ json_t *ans = NULL;
    snprintf(path, sizeof(path), "/v1/sessions/%s/code", session);
    if (client_json(c, "POST", path, body, &ans, errp) < 0)
        return error_prefix(errp, "run code in %s", session);
    st->run = event_int(ans, "run", 0);
    f->after = (uint64_t) MAX(event_int(ans, "after", 0), 0);
    (void) cli;
    return st->run > 0 ? 0 : error_set(errp, E_INTERNAL, 0, "the daemon answered without a run");
}

static int
code_run(Cli *cli, const char *session, const char *file, json_t *opts, CodeState *st)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_free_ char *src = NULL;
    size_t len;
    Client *c;
    Follow f = {.follow = true, .on_event = code_on_event, .userdata = st};
    FollowEnd end;

    if (!(src = code_read(file, &len, &err)))
        return cli_usage_error(cli, "%s", err->message);
    _cleanup_json_ json_t *code = json_stringn(src, len);
    if (!code)
        return cli_usage_error(cli, "the code is not UTF-8 text");
    json_object_set(opts, "code", code);
    /* 1 is the code's own exception: the daemon's refusals are 125, as for run and exec */
    if (!(c = cli_client(cli, &err)) || code_start(cli, c, session, opts, st, &f, &err) < 0)
        return cli_report(cli, err, true);
    f.client = c;
    snprintf(f.id, sizeof(f.id), "%s", session);
    int r = follow_events(&f, &end, &err);
    follow_free(&f);
    if (r < 0)
        return cli_report(cli, err, true);
    return st->failed ? 1 : 0;
}

int
cmd_code(Cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"context", required_argument, NULL, 'c'},
        {"language", required_argument, NULL, 'l'},
        {"timeout", required_argument, NULL, 't'},
        {"out-dir", required_argument, NULL, 'd'}, /* -d: where files land, as run's */
        CLI_GLOBAL_OPTIONS,
    };
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *body = json_object();
    CodeState st = {.cli = cli, .out_dir = "."};
    json_t *lang;
    uint64_t v;
    int c;

    cli->verb = "code";
    cli_getopt_reset(cli, opts);
    while ((c = getopt_long(argc, argv, "c:l:t:d:h", opts, NULL)) != -1) {
        if (c == 'c' && args_uint(optarg, 1, UINT32_MAX, &v) == 0)
            json_object_set_new(body, "context", json_integer((json_int_t) v));
        else if (c == 'l' && optarg[0] && (lang = json_string(optarg)))
            /* the daemon names the languages it serves when it refuses one */
            json_object_set_new(body, "language", lang);
        else if (c == 't' && args_uint(optarg, 1, 86400, &v) == 0)
            json_object_set_new(body, "timeout_ms", json_integer((json_int_t) (v * 1000)));
        else if (c == 'd')
            st.out_dir = optarg;
        else if (c == 'c' || c == 't')
            return cli_usage_error(cli, "--%s wants a positive number",
                                   c == 'c' ? "context" : "timeout");
        else if (c == 'l')
            return cli_usage_error(cli, "--language wants python, javascript or bash");
        else if (args_global(cli, c, argc, argv, &err) < 0)
            return cli_usage_error(cli, "%s", err->message);
    }
    if (cli->help)
        return cli_print_help(code_help);
    if (json_object_get(body, "context") && json_object_get(body, "language"))
        return cli_usage_error(cli, "give --context or --language, not both");
    if (optind >= argc || argc - optind > 2 || !args_id_ok(argv[optind]))
        return cli_usage_error(cli, "a session id is needed, then at most one file");
    return code_run(cli, argv[optind], optind + 1 < argc ? argv[optind + 1] : NULL, body, &st);
}
