/* See watch.h. */
#include "watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "events.h"
#include "fdutil.h"
#include "log.h"

void
watch_init(Watch *w, int out_fd, int err_fd)
{
    *w = (Watch){.out_fd = out_fd, .err_fd = err_fd, .exit_code = -1};
}

static bool
for_us(const Watch *w, json_t *ev)
{
    return w->exec_id == 0 || event_int(ev, "exec_id", 0) == w->exec_id;
}

static int
watch_output(Watch *w, json_t *ev, bool is_stdout, Error **errp)
{
    _cleanup_free_ uint8_t *data = NULL;
    size_t len;
    int fd = is_stdout ? w->out_fd : w->err_fd;

    if (event_data(ev, &data, &len, errp) < 0)
        return -1;
    if (fd < 0 || (is_stdout && w->out_closed))
        return 0;
    if (write_all(fd, data, len) < 0) {
        if (errno == EPIPE && is_stdout) { /* `stockade run ... | head`: keep following */
            w->out_closed = true;
            return 0;
        }
        if (errno != EPIPE)
            return error_set(errp, E_IO, errno, "writing the program's output");
    }
    return 0;
}

static void
keep_text(char *dst, size_t cap, json_t *ev, const char *key)
{
    const char *s = event_str(ev, key, "");
    log_escape(dst, cap, s, strlen(s));
}

static void
watch_exec_end(Watch *w, json_t *ev, bool failed)
{
    if (failed) {
        const char *msg = event_str(ev, "message", "");
        w->failed = true;
        /* "exec N: exec: No such file or directory" (guest/exec.c): the stage is the exec
         * itself, not its working directory ("cwd: ...") */
        w->not_found =
            event_int(ev, "code", 0) == WATCH_RUNNER_NOT_FOUND && strstr(msg, ": exec: ") != NULL;
        keep_text(w->fail_message, sizeof(w->fail_message), ev, "message");
        return;
    }
    w->exited = true;
    w->exit_code = (int) event_int(ev, "exit_code", -1);
    w->signal = (int) event_int(ev, "signal", 0);
    w->wall_ms = event_int(ev, "wall_ms", -1);
    if (strcmp(event_str(ev, "reason", ""), "timed_out") == 0)
        w->timed_out = true;
}

static void
watch_session_state(Watch *w, json_t *ev)
{
    const char *state = event_str(ev, "state", "");
    const char *reason = event_str(ev, "reason", NULL);
    if (reason && !w->end_reason[0] &&
        strspn(reason, "abcdefghijklmnopqrstuvwxyz_") == strlen(reason) &&
        strlen(reason) < sizeof(w->end_reason))
        snprintf(w->end_reason, sizeof(w->end_reason), "%s", reason);
    if (strcmp(state, "ended") == 0) {
        w->ended = true;
        json_t *code = json_object_get(ev, "exit_code");
        if (json_is_integer(code)) {
            w->has_session_exit = true;
            w->session_exit = (int) json_integer_value(code);
        }
    }
}

static void
watch_artifacts(Watch *w, json_t *ev)
{
    w->artifacts = true;
    w->art_files = (uint64_t) MAX(event_int(ev, "files", 0), 0);
    w->art_bytes = (uint64_t) MAX(event_int(ev, "bytes", 0), 0);
    w->art_skipped = (uint64_t) MAX(event_int(ev, "skipped", 0), 0);
    w->art_truncated = json_is_true(json_object_get(ev, "truncated"));
}

static int
watch_print_json(Watch *w, json_t *ev, Error **errp)
{
    if (json_dumpf(ev, w->json_out, JSON_COMPACT | JSON_PRESERVE_ORDER) < 0 ||
        fputc('\n', w->json_out) == EOF || fflush(w->json_out) == EOF) {
        if (errno == EPIPE)
            return 0;
        return error_set(errp, E_IO, errno, "writing events");
    }
    return 0;
}

int
watch_event(Watch *w, json_t *ev, Error **errp)
{
    const char *type = event_type(ev);
    bool mine = for_us(w, ev);

    if (w->json_out && (mine || strncmp(type, "exec.", 5) != 0) &&
        watch_print_json(w, ev, errp) < 0)
        return -1;
    if (!w->json_out && mine && strcmp(type, "exec.stdout") == 0)
        return watch_output(w, ev, true, errp);
    if (!w->json_out && mine && strcmp(type, "exec.stderr") == 0)
        return watch_output(w, ev, false, errp);
    if (mine && (strcmp(type, "exec.exited") == 0 || strcmp(type, "exec.failed") == 0)) {
        watch_exec_end(w, ev, type[5] == 'f');
        return w->stop_on_exit ? 1 : 0;
    }
    if (strcmp(type, "session.state") == 0)
        watch_session_state(w, ev);
    else if (strcmp(type, "artifacts") == 0)
        watch_artifacts(w, ev);
    else if (strcmp(type, "limit.output") == 0)
        w->output_limit = true;
    else if (strcmp(type, "guest.error") == 0)
        keep_text(w->guest_error, sizeof(w->guest_error), ev, "message");
    return w->ended ? 1 : 0;
}

int
watch_exit_code(const Watch *w, bool interrupted)
{
    const char *reason = w->end_reason;

    if (interrupted)
        return CLI_EXIT_INTERRUPTED;
    if (w->timed_out || strcmp(reason, "timed_out") == 0)
        return CLI_EXIT_TIMEOUT;
    if (w->failed || strcmp(reason, "failed") == 0)
        return w->not_found ? CLI_EXIT_NOT_FOUND : CLI_EXIT_DAEMON;
    if (strcmp(reason, "cancelled") == 0)
        return CLI_EXIT_INTERRUPTED;
    if (w->exited && w->signal > 0 && w->signal < 128)
        return CLI_EXIT_SIGNAL_BASE + w->signal;
    if (w->exited && w->exit_code >= 0 && w->exit_code <= 255)
        return w->exit_code;
    if (!w->exited && w->has_session_exit && strcmp(reason, "completed") == 0 &&
        w->session_exit >= 0 && w->session_exit <= 255)
        return w->session_exit;
    return CLI_EXIT_DAEMON;
}

const char *
watch_outcome(const Watch *w, bool interrupted)
{
    if (interrupted)
        return "cancelled";
    if (w->timed_out)
        return "timed_out";
    if (w->failed)
        return "failed";
    if (w->end_reason[0])
        return w->end_reason;
    return w->exited ? "exited" : "unknown";
}
