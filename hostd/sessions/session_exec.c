/* A session's execs: started on the runner, each with its timer (kill at its timeout, then
 * SESSION_EXEC_KILL_GRACE_USEC for the exit to come, else the guest is not answering), their
 * output counted against the session's output limit, their exits. A task's command is one of
 * them: its end ends the task. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

#define SESSION_EXEC_KILL_GRACE_USEC (5 * 1000000) /* a killed exec must report its exit */
#define SESSION_EXECS_MAX 64                       /* EXEC_MAX_CONCURRENT in the runner */

typedef struct Exec {
    uint32_t id;
    uint32_t req_id;
    bool running, done;
    bool timed_out;              /* killed at its timeout (else it exited by itself) */
    bool task;                   /* the task's command */
    bool pty;                    /* on a terminal (ExecSpec.pty_cols): Resize applies */
    const SessionExecSink *sink; /* who reads it, or NULL: its output is events */
    TimerId timer;
    Session *session;
    struct Exec *next;
} Exec;

struct SessionExecs {
    Exec *list;
    uint32_t next_id; /* ids are 1..next_id */
};

int
session_execs_new(Session *s)
{
    return (s->execs = calloc(1, sizeof(*s->execs))) ? 0 : -1;
}

static void
exec_cancel_timer(Exec *e)
{
    loop_cancel_timer(e->session->mgr->loop, e->timer);
    e->timer = 0;
}

void
session_execs_free(Session *s)
{
    if (!s->execs)
        return;
    while (s->execs->list) {
        Exec *e = s->execs->list;
        s->execs->list = e->next;
        exec_cancel_timer(e);
        free(e);
    }
    free(s->execs);
    s->execs = NULL;
}

void
session_execs_stop(Session *s, SessionEndReason reason)
{
    (void) reason;
    for (Exec *e = s->execs->list; e; e = e->next)
        exec_cancel_timer(e);
}

static Exec *
exec_by_id(const Session *s, uint32_t id)
{
    for (Exec *e = s->execs->list; e; e = e->next)
        if (e->id == id)
            return e;
    return NULL;
}

static Exec *
exec_by_req(const Session *s, uint32_t req)
{
    for (Exec *e = s->execs->list; e; e = e->next)
        if (e->req_id == req && !e->running && !e->done)
            return e;
    return NULL;
}

bool
session_exec_known(const Session *s, uint32_t exec_id)
{
    return exec_id != 0 && exec_id <= s->execs->next_id;
}

bool
session_exec_on_pty(Session *s, uint32_t exec_id)
{
    Exec *e = exec_by_id(s, exec_id);
    return e && e->pty && !e->done;
}

int
sessions_exec_state(Sessions *m, const char *tenant, const char *id, uint32_t exec_id,
                    SessionsExecState *ret, Error **errp)
{
    Session *s = sessions_find(m, tenant, id);
    Exec *e = s ? exec_by_id(s, exec_id) : NULL;
    if (!e)
        return error_set(errp, E_NOT_FOUND, 0, "no exec %u in a live session %.40s", exec_id, id);
    *ret = e->done      ? SESSIONS_EXEC_DONE
           : e->running ? SESSIONS_EXEC_RUNNING
                        : SESSIONS_EXEC_STARTING;
    return 0;
}

/* ------------------------------------------------------------------ starting, timers */

static void exec_on_timer(Loop *l, void *userdata);

static int
exec_send_signal(Exec *e, int signo, Error **errp)
{
    Stockade__Runner__Signal sig = STOCKADE__RUNNER__SIGNAL__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    sig.exec_id = e->id;
    sig.signo = signo;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_SIGNAL;
    m.signal = &sig;
    return session_send(e->session, &m, NULL, errp);
}

/* Timeout: kill the tree, then give it SESSION_EXEC_KILL_GRACE_USEC to report its exit. */
static void
exec_on_timer(Loop *l, void *userdata)
{
    Exec *e = userdata;
    Session *s = e->session;
    (void) l;

    e->timer = 0;
    if (e->timed_out) { /* already killed once and no exit came: the guest is not answering */
        session_end(s, SESSION_END_GUEST_ERROR);
        return;
    }
    e->timed_out = true;
    if (exec_send_signal(e, SIGKILL, NULL) < 0) {
        session_end(s, SESSION_END_GUEST_ERROR);
        return;
    }
    e->timer =
        loop_add_timer(s->mgr->loop, now_usec() + SESSION_EXEC_KILL_GRACE_USEC, exec_on_timer, e);
}

static Stockade__Runner__EnvVar **
env_to_proto(const EnvPair *env, size_t n, Stockade__Runner__EnvVar **ret_storage)
{
    Stockade__Runner__EnvVar *v = calloc(n + 1, sizeof(*v));
    Stockade__Runner__EnvVar **p = calloc(n + 1, sizeof(*p));
    if (!v || !p) {
        free(v);
        free(p);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        stockade__runner__env_var__init(&v[i]);
        v[i].name = env[i].name;
        v[i].value = env[i].value;
        p[i] = &v[i];
    }
    *ret_storage = v;
    return p;
}

static void
exec_requested_event(Session *s, const Exec *e, const ExecSpec *spec, uint64_t timeout)
{
    json_t *argv = json_array();
    for (size_t i = 0; i < spec->argc; i++)
        json_array_append_new(argv, json_string_nocheck(spec->argv[i]));
    json_t *attrs =
        json_pack("{s:o,s:I}", "argv", argv, "timeout_ms", (json_int_t) (timeout / 1000));
    if (attrs && spec->pty_cols)
        json_object_set_new(
            attrs, "pty",
            json_pack("{s:i,s:i}", "cols", (int) spec->pty_cols, "rows", (int) spec->pty_rows));
    session_event(s, "exec.requested", e->id, NULL, 0, attrs);
}

int
session_exec_start(Session *s, const ExecSpec *spec, bool task, const SessionExecSink *sink,
                   uint32_t *ret_exec_id, Error **errp)
{
    Stockade__Runner__Exec ex = STOCKADE__RUNNER__EXEC__INIT;
    Stockade__Runner__PtySize pty = STOCKADE__RUNNER__PTY_SIZE__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    _cleanup_free_ Stockade__Runner__EnvVar *env_storage = NULL;
    _cleanup_free_ Stockade__Runner__EnvVar **envp = NULL;
    unsigned live = 0;

    for (Exec *e = s->execs->list; e; e = e->next)
        live += !e->done;
    if (live >= SESSION_EXECS_MAX)
        return error_set(errp, E_QUOTA, 0, "at most %d execs run at once", SESSION_EXECS_MAX);
    if (!(envp = env_to_proto(spec->env, spec->n_env, &env_storage)))
        return error_set(errp, E_INTERNAL, ENOMEM, "exec");
    Exec *e = calloc(1, sizeof(*e));
    if (!e)
        return error_set(errp, E_INTERNAL, ENOMEM, "exec");
    e->id = ++s->execs->next_id;
    e->session = s;
    e->task = task;
    e->sink = sink;
    e->pty = spec->pty_cols != 0;
    ex.exec_id = e->id;
    ex.argv = spec->argv;
    ex.n_argv = spec->argc;
    ex.env = envp;
    ex.n_env = spec->n_env;
    ex.cwd = spec->cwd ? spec->cwd : "";
    ex.stdin_open = spec->stdin_open;
    ex.adopt = spec->adopt;
    ex.as_root = spec->as_root;
    if (spec->pty_cols || spec->pty_rows) {
        pty.cols = spec->pty_cols;
        pty.rows = spec->pty_rows;
        ex.pty = &pty;
    }
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &ex;
    if (session_send(s, &m, &e->req_id, errp) < 0) {
        free(e);
        return -1;
    }
    e->next = s->execs->list;
    s->execs->list = e;
    uint64_t timeout =
        spec->timeout_usec ? spec->timeout_usec : s->mgr->cfg.exec_default_timeout_usec;
    e->timer = loop_add_timer(s->mgr->loop, now_usec() + timeout, exec_on_timer, e);
    exec_requested_event(s, e, spec, timeout);
    *ret_exec_id = e->id;
    return 0;
}

/* An exec an earlier run started, still running in the adopted guest: its output and exit
 * come as if this run had started it; its timer at its own deadline (monotonic). */
int
session_exec_adopt(Session *s, uint32_t exec_id, uint64_t deadline_usec)
{
    Exec *e = calloc(1, sizeof(*e));
    if (!e)
        return -1;
    e->id = exec_id;
    e->session = s;
    e->running = true;
    e->next = s->execs->list;
    s->execs->list = e;
    e->timer = loop_add_timer(s->mgr->loop, deadline_usec, exec_on_timer, e);
    return 0;
}

void
session_execs_resume_ids(Session *s, uint32_t max_exec_id)
{
    if (max_exec_id > s->execs->next_id)
        s->execs->next_id = max_exec_id;
}

unsigned
session_execs_running(const Session *s)
{
    unsigned n = 0;
    for (const Exec *e = s->execs->list; e; e = e->next)
        n += !e->done;
    return n;
}

/* ------------------------------------------------------------------ what the guest says */

void
session_exec_on_started(Session *s, const GuestMsg *m)
{
    Exec *e = exec_by_req(s, m->req_id);
    if (!e || e->id != m->exec_started->exec_id)
        return;
    e->running = true;
    session_event(s, "exec.started", e->id, NULL, 0,
                  json_pack("{s:i,s:b}", "pid", (int) m->exec_started->pid, "adopted",
                            m->exec_started->adopted));
}

/* The task's command is over: the task ends (its exit code in the record). */
static void
exec_task_over(Session *s, int exit_code, SessionEndReason reason)
{
    s->rec.has_exit_code = true;
    s->rec.exit_code = exit_code;
    session_end(s, reason);
}

void
session_exec_on_exit(Session *s, const Stockade__Runner__ExecExit *x)
{
    Exec *e = exec_by_id(s, x->exec_id);
    if (!e || e->done)
        return; /* an exit we did not start: ignore, the runner is ours but the guest is not */
    exec_cancel_timer(e);
    e->done = true;
    e->running = false;
    if (e->sink)
        e->sink->over(s, e->id);
    json_t *attrs =
        json_pack("{s:i,s:i,s:I,s:I,s:I,s:I,s:s}", "exit_code", x->exit_code, "signal", x->signal,
                  "cpu_user_ms", (json_int_t) (x->cpu_user_usec / 1000), "cpu_system_ms",
                  (json_int_t) (x->cpu_system_usec / 1000), "max_rss_kib",
                  (json_int_t) x->max_rss_kib, "wall_ms", (json_int_t) (x->wall_usec / 1000),
                  "reason", e->timed_out ? "timed_out" : "exited");
    session_event(s, "exec.exited", e->id, NULL, 0, attrs);
    if (e->task)
        exec_task_over(s, x->exit_code >= 0 ? x->exit_code : 128 + x->signal,
                       e->timed_out ? SESSION_END_TIMED_OUT : SESSION_END_COMPLETED);
}

void
session_exec_on_output(Session *s, const Stockade__Runner__Output *o)
{
    Exec *e = exec_by_id(s, o->exec_id);
    if (!e)
        return;
    s->rec.output_bytes += o->data.len;
    bool err = o->stream == STOCKADE__RUNNER__OUTPUT__STREAM__STDERR;
    if (!e->sink || !e->sink->output(s, e->id, o))
        session_event(s, err ? "exec.stderr" : "exec.stdout", e->id, o->data.data, o->data.len,
                      NULL);
    uint64_t limit = session_output_limit_bytes(s); /* min(global, tenant) */
    if (s->rec.output_bytes > limit) {
        session_event(s, "limit.output", 0, NULL, 0,
                      json_pack("{s:I}", "limit_bytes", (json_int_t) limit));
        session_end(s, SESSION_END_OUTPUT_LIMIT);
    }
}

bool
session_exec_on_error(Session *s, const GuestMsg *m)
{
    const Stockade__Runner__Error *er = m->error;
    Exec *e = m->req_id ? exec_by_req(s, m->req_id) : NULL;

    if (!e)
        return false;
    exec_cancel_timer(e); /* the exec could not start (no such program, BUSY, ...) */
    e->done = true;
    if (e->sink)
        e->sink->over(s, e->id);
    session_event(s, "exec.failed", e->id, NULL, 0,
                  json_pack("{s:s,s:i}", "message", er->message, "code", er->code));
    if (e->task)
        exec_task_over(s, 127, SESSION_END_FAILED);
    return true;
}
