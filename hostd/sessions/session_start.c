/* The start of a session, the first half of its machine: pending in a queue until an idle
 * guest of its pool is taken for it (pending -> starting, or no_capacity at its deadline),
 * then Hello with its environment, mirror and egress, whose Ack runs it (starting -> running).
 * Its lifetime, admitted and reserved at creation, starts with the guest: the timeout timer
 * is here, and the API's moves of it (sessions_set_timeout) stay within it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

#define SESSION_HELLO_TIMEOUT_USEC (10 * 1000000)

struct SessionStart {
    Session *next_pending;
    bool queued;
    TimerId pending_timer;      /* no_capacity */
    uint64_t created_mono_usec; /* for the hand-out histogram */
    TimerId timeout_timer;      /* timed_out, at the lifetime's end unless the API moved it */
    uint64_t timeout_at_usec;   /* its deadline (monotonic): what a stop that keeps records */
    uint32_t hello_req;
    TimerId hello_timer;
};

struct SessionsQueue {
    Session *head, **tail;
};

void
sessions_on_pool_idle(void *userdata)
{
    sessions_dispatch_pending(userdata);
}

int
sessions_queue_new(Sessions *m)
{
    if (!(m->queue = calloc(1, sizeof(*m->queue))))
        return -1;
    m->queue->tail = &m->queue->head;
    return 0;
}

void
sessions_queue_free(Sessions *m)
{
    free(m->queue);
    m->queue = NULL;
}

int
session_start_new(Session *s)
{
    if (!(s->start = calloc(1, sizeof(*s->start))))
        return -1;
    s->start->created_mono_usec = now_usec();
    return 0;
}

void
session_start_free(Session *s)
{
    if (!s->start)
        return;
    session_start_stop(s, SESSION_END_NONE);
    free(s->start);
    s->start = NULL;
}

/* ------------------------------------------------------------------ the queue */

static void
queue_fix_tail(SessionsQueue *q)
{
    q->tail = &q->head;
    while (*q->tail)
        q->tail = &(*q->tail)->start->next_pending;
}

static void
session_unqueue(Session *s)
{
    SessionsQueue *q = s->mgr->queue;
    if (!s->start->queued)
        return;
    for (Session **pp = &q->head; *pp; pp = &(*pp)->start->next_pending)
        if (*pp == s) {
            *pp = s->start->next_pending;
            break;
        }
    s->start->next_pending = NULL;
    s->start->queued = false;
    queue_fix_tail(q);
}

static void
session_on_pending_timeout(Loop *l, void *userdata)
{
    Session *s = userdata;
    (void) l;
    s->start->pending_timer = 0;
    session_end(s, SESSION_END_NO_CAPACITY);
}

void
session_start_enqueue(Session *s)
{
    Sessions *m = s->mgr;
    *m->queue->tail = s;
    m->queue->tail = &s->start->next_pending;
    s->start->queued = true;
    s->start->pending_timer = loop_add_timer(m->loop, now_usec() + m->cfg.pending_timeout_usec,
                                             session_on_pending_timeout, s);
    sessions_dispatch_pending(m);
}

void
session_start_stop(Session *s, SessionEndReason reason)
{
    Loop *l = s->mgr->loop;
    SessionStart *st = s->start;
    (void) reason;
    session_unqueue(s);
    loop_cancel_timer(l, st->pending_timer);
    loop_cancel_timer(l, st->timeout_timer);
    loop_cancel_timer(l, st->hello_timer);
    st->pending_timer = st->timeout_timer = st->hello_timer = 0;
}

/* ------------------------------------------------------------------ the lifetime */

static void
session_on_timeout(Loop *l, void *userdata)
{
    Session *s = userdata;
    (void) l;
    s->start->timeout_timer = 0;
    session_event(s, "session.timeout", 0, NULL, 0,
                  json_pack("{s:I}", "timeout_ms", (json_int_t) (s->rec.timeout_usec / 1000)));
    session_end(s, SESSION_END_TIMED_OUT);
}

/* How late a caller's second clock reading may be (sessions_set_timeout()). */
#define SESSION_TIMEOUT_SLACK_USEC (100u * 1000u)

static uint64_t
session_lifetime_left(const Session *s)
{
    uint64_t end = session_lifetime_end_usec(s), now = now_usec();
    return end > now ? end - now : 0;
}

int
sessions_timeout_left(Sessions *m, const char *tenant, const char *id, uint64_t *ret_usec,
                      Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (!s)
        return -1;
    *ret_usec = session_lifetime_left(s);
    return 0;
}

int
sessions_set_timeout(Sessions *m, const char *tenant, const char *id, uint64_t timeout_usec,
                     Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (!s)
        return -1;
    uint64_t end = session_lifetime_end_usec(s), now = now_usec();
    uint64_t left = end > now ? end - now : 0;
    /* A caller that read sessions_timeout_left() and asks for all of it (E2B connect, create)
     * is a clock reading late here: refusing that made a connect past the lifetime 400 instead
     * of "never past the lifetime" (issue 31). The slack accepts it; the timer below never
     * passes the lifetime's end all the same. */
    if (timeout_usec > left + SESSION_TIMEOUT_SLACK_USEC)
        return error_set(errp, E_INVALID, 0,
                         "a timeout of %llu s is over what is left of the "
                         "lifetime admitted for this session (%llu s of %llu s)",
                         (unsigned long long) ((timeout_usec + USEC_PER_SEC - 1) / USEC_PER_SEC),
                         (unsigned long long) (left / USEC_PER_SEC),
                         (unsigned long long) (s->rec.timeout_usec / USEC_PER_SEC));
    uint64_t deadline = MIN(now + timeout_usec, end);
    loop_cancel_timer(m->loop, s->start->timeout_timer);
    s->start->timeout_timer = loop_add_timer(m->loop, deadline, session_on_timeout, s);
    s->start->timeout_at_usec = deadline;
    session_event(s, "session.timeout_set", 0, NULL, 0,
                  json_pack("{s:I}", "timeout_ms", (json_int_t) ((deadline - now) / 1000)));
    return 0;
}

uint64_t
session_timeout_at_usec(const Session *s)
{
    return s->start->timeout_at_usec;
}

void
session_timeout_arm_at(Session *s, uint64_t at_usec)
{
    Loop *l = s->mgr->loop;
    loop_cancel_timer(l, s->start->timeout_timer);
    s->start->timeout_at_usec = at_usec;
    s->start->timeout_timer = loop_add_timer(l, at_usec, session_on_timeout, s);
}

/* ------------------------------------------------------------------ the guest and Hello */

/* pending -> starting with g, its name and disk in the record; false when refused (logged). */
static bool
session_bind_guest(Session *s, Guest *g)
{
    s->guest = g;
    snprintf(s->rec.guest, sizeof(s->rec.guest), "%s", s->mgr->host.ops->name(g));
    if (!session_move(s, ST_STARTING, SESSION_END_NONE)) {
        s->guest = NULL;
        s->rec.guest[0] = '\0';
        return false;
    }
    s->accepting = true;
    return true;
}

static void
session_on_hello_timeout(Loop *l, void *userdata)
{
    Session *s = userdata;
    (void) l;
    s->start->hello_timer = 0;
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

static void
session_hello(Session *s)
{
    Stockade__Runner__SessionConfig cfg = STOCKADE__RUNNER__SESSION_CONFIG__INIT;
    Stockade__Runner__MirrorConfig mirror = STOCKADE__RUNNER__MIRROR_CONFIG__INIT;
    Stockade__Runner__EgressConfig egress;
    _cleanup_free_ Stockade__Runner__EnvVar *envs = NULL;
    _cleanup_free_ Stockade__Runner__EnvVar **envp = NULL;
    _cleanup_error_ Error *err = NULL;
    const SessionsHostOps *ops = s->mgr->host.ops;
    Guest *g = s->guest;

    if (session_guest_config(s, &cfg, &mirror, &egress, &envs, &envp, &err) < 0) {
        log_error("session %s: cannot start it on %s: %s", s->rec.id, ops->name(g), err->message);
        /* never a guest without what the session was admitted with */
        session_end(s, SESSION_END_HOST_ERROR);
    } else if (ops->hello(g, &cfg, &s->start->hello_req, &err) < 0) {
        log_warn("session %s: hello to %s failed: %s", s->rec.id, ops->name(g), err->message);
        session_end(s, SESSION_END_GUEST_ERROR);
    } else {
        s->start->hello_timer = loop_add_timer(
            s->mgr->loop, now_usec() + SESSION_HELLO_TIMEOUT_USEC, session_on_hello_timeout, s);
    }
}

void
sessions_dispatch_pending(Sessions *m)
{
    const SessionsHostOps *ops = m->host.ops;
    Session **pp = &m->queue->head;
    while (*pp) {
        Session *s = *pp;
        Guest *g = ops->take(m->host.pool, s->spec.pool, &session_guest_ops, s, NULL);
        if (!g) {
            pp = &s->start->next_pending;
            continue; /* this pool is empty; a later session may want another pool */
        }
        if (!session_bind_guest(s, g)) { /* refused (a daemon bug, logged): the guest goes back */
            ops->release(m->host.pool, g, NULL, NULL);
            pp = &s->start->next_pending;
            continue;
        }
        *pp = s->start->next_pending;
        s->start->next_pending = NULL;
        s->start->queued = false;
        loop_cancel_timer(m->loop, s->start->pending_timer);
        s->start->pending_timer = 0;
        session_lifetime_begins(s);
        s->start->timeout_at_usec = session_lifetime_end_usec(s);
        s->start->timeout_timer =
            loop_add_timer(m->loop, s->start->timeout_at_usec, session_on_timeout, s);
        session_hello(s);
    }
    queue_fix_tail(m->queue);
}

bool
session_start_on_ack(Session *s, uint32_t req_id)
{
    if (req_id != s->start->hello_req || s->state != ST_STARTING)
        return false;
    loop_cancel_timer(s->mgr->loop, s->start->hello_timer);
    s->start->hello_timer = 0;
    histogram_add(&s->mgr->stats.handout, now_usec() - s->start->created_mono_usec);
    if (session_move(s, ST_RUNNING, SESSION_END_NONE) && s->spec.is_task)
        session_task_advance(s);
    return true;
}

bool
session_start_on_refusal(Session *s, uint32_t req_id, const char *why)
{
    if (req_id == 0 || req_id != s->start->hello_req)
        return false;
    log_warn("session %s: runner refused Hello: %s", s->rec.id, why);
    session_end(s, SESSION_END_GUEST_ERROR);
    return true;
}
