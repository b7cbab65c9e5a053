/* A session's side of its guest: Hello, execs and their timers, output accounting, and the
 * dispatch of every guest message. Nothing is accepted once the session began to stop. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

static Exec *
exec_by_id(Session *s, uint32_t id)
{
    for (Exec *e = s->execs; e; e = e->next)
        if (e->id == id)
            return e;
    return NULL;
}

static Exec *
exec_by_req(Session *s, uint32_t req)
{
    for (Exec *e = s->execs; e; e = e->next)
        if (e->req_id == req && !e->running && !e->done)
            return e;
    return NULL;
}

static void
exec_cancel_timer(Exec *e)
{
    loop_cancel_timer(e->session->mgr->loop, e->timer);
    e->timer = 0;
}

void
session_exec_free_all(Session *s)
{
    while (s->execs) {
        Exec *e = s->execs;
        s->execs = e->next;
        exec_cancel_timer(e);
        free(e);
    }
}

/* ------------------------------------------------------------------ hello */

static void
session_on_hello_timeout(Loop *l, void *userdata)
{
    Session *s = userdata;
    (void) l;
    s->hello_timer = 0;
    session_end(s, SESSION_END_GUEST_ERROR);
}

/* The runner's SessionConfig (env, mirror, egress) for s; envs/envp are the caller's to free.
 * -1 when something the session was admitted with cannot be set up. */
static int
session_guest_config(Session *s, Stockade__Runner__SessionConfig *cfg,
                     Stockade__Runner__MirrorConfig *mirror, Stockade__Runner__EgressConfig *egress,
                     Stockade__Runner__EnvVar **ret_envs, Stockade__Runner__EnvVar ***ret_envp,
                     Error **errp)
{
    Sessions *m = s->mgr;
    Stockade__Runner__EnvVar *envs = *ret_envs = calloc(s->spec.n_env + 1, sizeof(*envs));
    Stockade__Runner__EnvVar **envp = *ret_envp = calloc(s->spec.n_env + 1, sizeof(*envp));

    if (!envs || !envp)
        return error_set(errp, E_INTERNAL, ENOMEM, "session environment");
    cfg->session_id = s->rec.id;
    cfg->uid = m->cfg.exec_uid;
    cfg->gid = m->cfg.exec_gid;
    cfg->workspace_device = "/dev/vdb";
    for (size_t i = 0; i < s->spec.n_env; i++) {
        stockade__runner__env_var__init(&envs[i]);
        envs[i].name = s->spec.env[i].name;
        envs[i].value = s->spec.env[i].value;
        envp[i] = &envs[i];
    }
    cfg->env = envp;
    cfg->n_env = s->spec.n_env;
    if (s->spec.mirror) {
        mirror->budget_bytes = session_mirror_budget(s); /* min(global, tenant) */
        mirror->max_file_bytes = MIN(m->cfg.mirror_max_file_bytes, mirror->budget_bytes);
        cfg->mirror = mirror;
    }
    return session_egress_start(s, cfg, egress, errp);
}

bool
session_bind_guest(Session *s, Guest *g)
{
    s->guest = g;
    snprintf(s->rec.guest, sizeof(s->rec.guest), "%s", guest_name(g));
    s->disk_index = guest_disk_index(g);
    if (!session_move(s, ST_STARTING, SESSION_END_NONE)) {
        s->guest = NULL;
        s->rec.guest[0] = '\0';
        return false;
    }
    s->accepting = true;
    return true;
}

void
session_hello(Session *s)
{
    Stockade__Runner__SessionConfig cfg = STOCKADE__RUNNER__SESSION_CONFIG__INIT;
    Stockade__Runner__MirrorConfig mirror = STOCKADE__RUNNER__MIRROR_CONFIG__INIT;
    Stockade__Runner__EgressConfig egress;
    _cleanup_free_ Stockade__Runner__EnvVar *envs = NULL;
    _cleanup_free_ Stockade__Runner__EnvVar **envp = NULL;
    _cleanup_error_ Error *err = NULL;
    Guest *g = s->guest;

    if (session_guest_config(s, &cfg, &mirror, &egress, &envs, &envp, &err) < 0) {
        log_error("session %s: cannot start it on %s: %s", s->rec.id, guest_name(g),
                  err->message);
        /* never a guest without what the session was admitted with */
        session_end(s, SESSION_END_HOST_ERROR);
    } else if (guest_hello(g, &cfg, &s->hello_req, &err) < 0) {
        log_warn("session %s: hello to %s failed: %s", s->rec.id, guest_name(g), err->message);
        session_end(s, SESSION_END_GUEST_ERROR);
    } else {
        s->hello_timer = loop_add_timer(s->mgr->loop, now_usec() + SESSION_HELLO_TIMEOUT_USEC,
                                        session_on_hello_timeout, s);
    }
}

static void
session_on_hello_acked(Session *s)
{
    loop_cancel_timer(s->mgr->loop, s->hello_timer);
    s->hello_timer = 0;
    histogram_add(&s->mgr->stats.handout, now_usec() - s->created_mono_usec);
    if (!session_move(s, ST_RUNNING, SESSION_END_NONE))
        return;
    if (s->spec.is_task)
        session_task_advance(s);
}

/* ------------------------------------------------------------------ execs */

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
    return guest_send(e->session->guest, &m, NULL, errp);
}

/* Timeout: kill the tree, then give it SESSION_EXEC_KILL_GRACE_USEC to report its exit. */
static void
exec_on_timer(Loop *l, void *userdata)
{
    Exec *e = userdata;
    Session *s = e->session;
    (void) l;

    e->timer = 0;
    if (e->end_reason) { /* already killed once and no exit came: the guest is not answering */
        session_end(s, SESSION_END_GUEST_ERROR);
        return;
    }
    e->end_reason = "timed_out";
    if (exec_send_signal(e, SIGKILL, NULL) < 0) {
        session_end(s, SESSION_END_GUEST_ERROR);
        return;
    }
    e->timer = loop_add_timer(s->mgr->loop, now_usec() + SESSION_EXEC_KILL_GRACE_USEC,
                              exec_on_timer, e);
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

int
session_send_exec(Session *s, const ExecSpec *spec, uint32_t *ret_exec_id, Error **errp)
{
    Stockade__Runner__Exec ex = STOCKADE__RUNNER__EXEC__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    _cleanup_free_ Stockade__Runner__EnvVar *env_storage = NULL;
    _cleanup_free_ Stockade__Runner__EnvVar **envp = NULL;
    unsigned live = 0;

    for (Exec *e = s->execs; e; e = e->next)
        live += !e->done;
    if (live >= SESSION_EXECS_MAX)
        return error_set(errp, E_QUOTA, 0, "at most %d execs run at once", SESSION_EXECS_MAX);
    if (!(envp = env_to_proto(spec->env, spec->n_env, &env_storage)))
        return error_set(errp, E_INTERNAL, ENOMEM, "exec");
    Exec *e = calloc(1, sizeof(*e));
    if (!e)
        return error_set(errp, E_INTERNAL, ENOMEM, "exec");
    e->id = ++s->next_exec_id;
    e->session = s;
    ex.exec_id = e->id;
    ex.argv = spec->argv;
    ex.n_argv = spec->argc;
    ex.env = envp;
    ex.n_env = spec->n_env;
    ex.cwd = spec->cwd ? spec->cwd : "";
    ex.stdin_open = spec->stdin_open;
    ex.adopt = spec->adopt;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &ex;
    if (guest_send(s->guest, &m, &e->req_id, errp) < 0) {
        free(e);
        return -1;
    }
    e->next = s->execs;
    s->execs = e;
    uint64_t timeout = spec->timeout_usec ? spec->timeout_usec
                                          : s->mgr->cfg.exec_default_timeout_usec;
    e->timer = loop_add_timer(s->mgr->loop, now_usec() + timeout, exec_on_timer, e);
    json_t *argv = json_array();
    for (size_t i = 0; i < spec->argc; i++)
        json_array_append_new(argv, json_string_nocheck(spec->argv[i]));
    session_event(s, "exec.requested", e->id, NULL, 0,
                  json_pack("{s:o,s:I}", "argv", argv, "timeout_ms",
                            (json_int_t) (timeout / 1000)));
    *ret_exec_id = e->id;
    return 0;
}

static void
session_on_exec_exit(Session *s, const Stockade__Runner__ExecExit *x)
{
    Exec *e = exec_by_id(s, x->exec_id);
    if (!e || e->done)
        return; /* an exit we did not start: ignore, the runner is ours but the guest is not */
    exec_cancel_timer(e);
    e->done = true;
    e->running = false;
    session_code_on_exit(s, e->id);
    json_t *attrs = json_pack("{s:i,s:i,s:I,s:I,s:I,s:I,s:s}", "exit_code", x->exit_code,
                              "signal", x->signal, "cpu_user_ms",
                              (json_int_t) (x->cpu_user_usec / 1000), "cpu_system_ms",
                              (json_int_t) (x->cpu_system_usec / 1000), "max_rss_kib",
                              (json_int_t) x->max_rss_kib, "wall_ms",
                              (json_int_t) (x->wall_usec / 1000), "reason",
                              e->end_reason ? e->end_reason : "exited");
    session_event(s, "exec.exited", e->id, NULL, 0, attrs);
    if (s->spec.is_task && e->id == s->task_exec_id) {
        s->rec.has_exit_code = true;
        s->rec.exit_code = x->exit_code >= 0 ? x->exit_code : 128 + x->signal;
        bool timed_out = e->end_reason && strcmp(e->end_reason, "timed_out") == 0;
        session_end(s, timed_out ? SESSION_END_TIMED_OUT : SESSION_END_COMPLETED);
    }
}

static void
session_on_output(Session *s, const Stockade__Runner__Output *o)
{
    Exec *e = exec_by_id(s, o->exec_id);
    if (!e)
        return;
    s->rec.output_bytes += o->data.len;
    bool err = o->stream == STOCKADE__RUNNER__OUTPUT__STREAM__STDERR;
    if (!session_code_on_output(s, e->id, o))
        session_event(s, err ? "exec.stderr" : "exec.stdout", e->id, o->data.data, o->data.len,
                      NULL);
    if (s->rec.output_bytes > s->output_limit_bytes) { /* min(global, tenant) */
        session_event(s, "limit.output", 0, NULL, 0,
                      json_pack("{s:I}", "limit_bytes", (json_int_t) s->output_limit_bytes));
        session_end(s, SESSION_END_OUTPUT_LIMIT);
    }
}

static void
session_on_error(Session *s, const GuestMsg *m)
{
    const Stockade__Runner__Error *er = m->error;
    Exec *e = m->req_id ? exec_by_req(s, m->req_id) : NULL;

    if (m->req_id && m->req_id == s->hello_req) {
        log_warn("session %s: runner refused Hello: %s", s->rec.id, er->message);
        session_end(s, SESSION_END_GUEST_ERROR);
        return;
    }
    if (e) { /* the exec could not start (no such program, BUSY, ...) */
        exec_cancel_timer(e);
        e->done = true;
        session_code_on_exit(s, e->id);
        session_event(s, "exec.failed", e->id, NULL, 0,
                      json_pack("{s:s,s:i}", "message", er->message, "code", er->code));
        if (s->spec.is_task && e->id == s->task_exec_id) {
            s->rec.has_exit_code = true;
            s->rec.exit_code = 127;
            session_end(s, SESSION_END_FAILED);
        }
        return;
    }
    session_guest_event(s, "guest.error",
                        json_pack("{s:s,s:i}", "message", er->message, "code", er->code));
}

static void
session_on_message(Guest *g, const GuestMsg *m, void *userdata)
{
    Session *s = userdata;
    (void) g;

    if (!s->accepting)
        return; /* after a stop event nothing from the guest counts */
    if (s->fin && session_finalize_on_message(s, m))
        return;
    if (session_egress_is_tunnel(m->body_case)) {
        session_egress_on_message(s, m);
        return;
    }
    switch (m->body_case) {
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ACK:
        if (m->req_id == s->hello_req && s->state == ST_STARTING)
            session_on_hello_acked(s);
        else
            session_ops_on_reply(s, m);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED: {
        Exec *e = exec_by_req(s, m->req_id);
        if (e && e->id == m->exec_started->exec_id) {
            e->running = true;
            session_event(s, "exec.started", e->id, NULL, 0,
                          json_pack("{s:i,s:b}", "pid", (int) m->exec_started->pid, "adopted",
                                    m->exec_started->adopted));
        }
        break;
    }
    case STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT:
        session_on_output(s, m->output);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT:
        session_on_exec_exit(s, m->exec_exit);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_CHANGED:
        session_mirror_on_changed(s, m->file_changed);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR:
        if (!session_ops_on_reply(s, m))
            session_on_error(s, m);
        break;
    default:
        session_ops_on_reply(s, m);
        break;
    }
}

static void
session_on_lost(Guest *g, const Error *why, void *userdata)
{
    Session *s = userdata;
    (void) g;
    if (s->fin) {
        session_finalize_lost(s); /* the salvage takes over */
        return;
    }
    log_warn("session %s: guest lost: %s", s->rec.id, why->message);
    session_end(s, SESSION_END_GUEST_ERROR);
}

const GuestOps session_guest_ops = {session_on_message, session_on_lost};
