/* stockade exec: one more command in a running session, its output followed like `run`.
 * Events are followed from the session's last seq before the exec was started, filtered to
 * this exec. Ctrl-C sends SIGINT to the exec's process tree, a second one SIGKILL, a third
 * stops waiting. Quiet like a remote shell: a summary line only when the command did not
 * exit by itself (it failed to start, timed out, was killed, or the session ended).
 * -i forwards stdin, -t runs CMD on a terminal in the guest; -it is docker exec -it: raw
 * mode here, so Ctrl-C is a byte for the guest's terminal, not a signal here (exec_input.h). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "events.h"
#include "exec_input.h"
#include "output.h"
#include "timeutil.h"
#include "watch.h"

#define EXEC_WAIT_RUNNING_USEC (300ull * 1000000) /* a pending session gets this long */
#define EXEC_POLL_USEC (250ull * 1000)

static const char exec_help[] =
    "Usage: stockade exec [OPTIONS] SESSION -- CMD [ARGS...]\n"
    "Runs CMD in a running session (see stockade sessions new), prints its stdout and stderr\n"
    "as they arrive and exits with its exit code. Files stay in the session: fetch them with\n"
    "stockade cp SESSION:PATH LOCAL.\n\n"
    "  -i, --interactive      forward stdin to CMD (end of input closes CMD's stdin)\n"
    "  -t, --tty              run CMD on a terminal in the guest, of this terminal's size;\n"
    "                         with -i, keys go to it raw (Ctrl-C included), as docker exec -it\n"
    "      --timeout SECONDS  kill CMD's process tree after this long (default: the daemon's\n"
    "                         [sessions] exec_timeout_s)\n"
    "  -e, --env NAME=VALUE   environment variable (repeatable)\n"
    "      --cwd DIR          working directory in the guest (relative to /workspace)\n"
    "      --json             the exec's events as NDJSON on stdout\n"
    "  -h, --help             this help\n\n"
    "Without -it, Ctrl-C sends SIGINT to CMD, a second Ctrl-C SIGKILL, a third stops waiting.\n"
    "Exit status: CMD's code; 124 timed out; 125 could not start (the daemon refused it) or\n"
    "the session ended; 126 bad usage; 127 CMD was not found in the guest; 128+N killed by\n"
    "signal N; 130 stopped waiting.\n";

typedef struct ExecState {
    Cli *cli;
    Client *client;
    Watch watch;
    const char *session;
    int64_t exec_id;
    int handled;
} ExecState;

static bool
exec_interrupted(void *userdata)
{
    ExecState *st = userdata;
    return cli_interrupts > st->handled;
}

static int
exec_on_event(void *userdata, json_t *ev, uint64_t seq, Error **errp)
{
    ExecState *st = userdata;
    (void) seq;
    return watch_event(&st->watch, ev, errp);
}

static void
exec_on_resume(void *userdata, uint64_t after, const char *why)
{
    ExecState *st = userdata;
    if (!st->cli->json)
        cli_warn(st->cli, "lost the event stream (%s); resuming after event %" PRIu64, why, after);
}

static void
nap(uint64_t usec)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long) usec * 1000};
    nanosleep(&ts, NULL);
}

/* Waits while the session is pending or starting; returns its last seq. */
static int
exec_wait_running(ExecState *st, uint64_t *ret_last_seq, Error **errp)
{
    char path[128];
    uint64_t deadline = now_usec() + EXEC_WAIT_RUNNING_USEC;
    snprintf(path, sizeof(path), "/v1/sessions/%s", st->session);
    for (;;) {
        _cleanup_json_ json_t *s = NULL;
        if (client_json(st->client, "GET", path, NULL, &s, errp) < 0)
            return -1;
        const char *state = event_str(s, "state", "");
        *ret_last_seq = (uint64_t) MAX(event_int(s, "last_seq", 0), 0);
        if (strcmp(state, "pending") != 0 && strcmp(state, "starting") != 0)
            return 0;
        if (now_usec() > deadline || cli_interrupts > 0)
            return error_set(errp, E_UNAVAILABLE, 0, "session %s is still %s", st->session, state);
        nap(EXEC_POLL_USEC);
    }
}

static int
exec_start(ExecState *st, const ExecArgs *a, Error **errp)
{
    char path[128];
    _cleanup_json_ json_t *ans = NULL;
    _cleanup_json_ json_t *body =
        json_pack("{s:o,s:O}", "argv", args_argv_json(a->argv, a->argc), "env", a->env);
    if (!body)
        return error_set(errp, E_INVALID, 0, "the command line is not valid UTF-8");
    if (a->cwd)
        json_object_set_new(body, "cwd", json_string(a->cwd));
    if (a->timeout_s)
        json_object_set_new(body, "timeout_s", json_integer((json_int_t) a->timeout_s));
    if (a->interactive)
        json_object_set_new(body, "stdin", json_true());
    if (a->tty) {
        uint32_t cols, rows;
        exec_input_term_size(&cols, &rows);
        json_object_set_new(body, "pty",
                            json_pack("{s:i,s:i}", "cols", (int) cols, "rows", (int) rows));
        if (!json_object_get(a->env, "TERM") && getenv("TERM"))
            json_object_set_new(json_object_get(body, "env"), "TERM", json_string(getenv("TERM")));
    }
    snprintf(path, sizeof(path), "/v1/sessions/%s/exec", st->session);
    if (client_json(st->client, "POST", path, body, &ans, errp) < 0)
        return error_prefix(errp, "start the command in %s", st->session);
    st->exec_id = event_int(ans, "exec_id", 0);
    if (st->exec_id <= 0)
        return error_set(errp, E_INTERNAL, 0, "the daemon answered without an exec id");
    return 0;
}

static void
exec_signal(ExecState *st, const char *sig)
{
    char path[160];
    _cleanup_error_ Error *err = NULL;
    _cleanup_json_ json_t *body = json_pack("{s:s}", "signal", sig);
    st->handled = cli_interrupts;
    snprintf(path, sizeof(path), "/v1/sessions/%s/execs/%" PRId64 "/signal", st->session,
             st->exec_id);
    if (!st->cli->json)
        fprintf(stderr, "%s exec: sending SIG%s to exec %" PRId64 "\n", st->cli->prog, sig,
                st->exec_id);
    if (client_json(st->client, "POST", path, body, NULL, &err) < 0)
        cli_warn(st->cli, "signal: %s", err->message);
}

/* 0 done, 1 the user stopped waiting, -1 failed. */
static int
exec_follow(ExecState *st, uint64_t after, Error **errp)
{
    Follow f = {.client = st->client,
                .after = after,
                .follow = true,
                .on_event = exec_on_event,
                .on_resume = exec_on_resume,
                .userdata = st};
    snprintf(f.id, sizeof(f.id), "%s", st->session);
    for (int round = 0;; round++) {
        FollowEnd end;
        int r = follow_events(&f, &end, errp);
        if (r < 0 || end != FOLLOW_INTERRUPTED) {
            follow_free(&f);
            return r;
        }
        if (round >= 2) {
            follow_free(&f);
            return 1;
        }
        exec_signal(st, round == 0 ? "INT" : "KILL");
    }
}

static int
exec_summary(ExecState *st)
{
    const Watch *w = &st->watch;
    int code = watch_exit_code(w, false);
    if (w->exited && w->signal == 0 && !w->timed_out && code == w->exit_code)
        return code;
    if (st->cli->json)
        return code;
    fprintf(stderr, "%s: %s exec %" PRId64 " %s", st->cli->prog, st->session, st->exec_id,
            w->exited ? (w->timed_out ? "timed_out" : "exited") : watch_outcome(w, false));
    if (w->failed)
        fprintf(stderr, " (%s: %s)", w->not_found ? "no such program" : "could not start",
                w->fail_message);
    if (w->exited && w->signal > 0)
        fprintf(stderr, " (signal %d)", w->signal);
    fprintf(stderr, ", exit %d\n", code);
    return code;
}

static int
exec_run(Cli *cli, ExecArgs *a)
{
    _cleanup_error_ Error *err = NULL;
    ExecState st = {.cli = cli, .session = a->session};
    uint64_t after = 0;
    ExecInput *input = NULL;
    int r;

    if (!(st.client = cli_client(cli, &err)))
        return cli_report(cli, err, true);
    watch_init(&st.watch, STDOUT_FILENO, STDERR_FILENO);
    st.watch.stop_on_exit = true;
    st.watch.json_out = cli->json ? stdout : NULL;
    cli_catch_sigint();
    if (exec_wait_running(&st, &after, &err) < 0 || exec_start(&st, a, &err) < 0)
        return cli_report(cli, err, true);
    st.watch.exec_id = st.exec_id;
    client_set_interrupt(st.client, exec_interrupted, &st);
    if (a->interactive &&
        ((a->tty && exec_input_raw_begin(&err) < 0) ||
         exec_input_start(cli, st.session, st.exec_id, a->tty, &input, &err) < 0)) {
        exec_input_raw_end();
        exec_signal(&st, "KILL"); /* started, but nobody can type to it */
        return cli_report(cli, err, true);
    }
    r = exec_follow(&st, after, &err);
    exec_input_stop(input);
    exec_input_raw_end();
    if (r < 0)
        return cli_report(cli, err, true);
    if (r > 0) {
        fprintf(stderr, "%s exec: stopped waiting for exec %" PRId64 " in %s\n", cli->prog,
                st.exec_id, st.session);
        return CLI_EXIT_INTERRUPTED;
    }
    return exec_summary(&st);
}

int
cmd_exec(Cli *cli, int argc, char **argv)
{
    _cleanup_error_ Error *err = NULL;
    ExecArgs a;

    cli->verb = "exec";
    if (exec_parse_args(cli, argc, argv, &a, &err) < 0) {
        exec_args_clear(&a);
        return cli_usage_error(cli, "%s", err->message);
    }
    if (!cli->help && a.tty && a.interactive && !isatty(STDIN_FILENO)) {
        exec_args_clear(&a);
        return cli_usage_error(cli, "-it needs a terminal on stdin (use -i alone)");
    }
    int code = cli->help ? cli_print_help(exec_help) : exec_run(cli, &a);
    exec_args_clear(&a);
    return code;
}
