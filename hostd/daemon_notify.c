/* See daemon_notify.h. The STATUS text is built from pool_status() each status tick, so the
 * pool needs no hook: "starting: pool minimal: snapshots 1/2, warm 0/1" while slots are
 * being made, "pool code: template making" while a shape's memory template is, and
 * "serving: ..." once every pool was warm. */
#include "daemon_notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "notify.h"
#include "timeutil.h"

/* The shortest feeding interval: a manager asking for less would have the loop do nothing
 * else; it gets a ping every this and kills us, which says its setting is wrong. */
#define WATCHDOG_MIN_PERIOD_USEC (100 * 1000)

struct DaemonNotify {
    Loop *loop;
    Pool *pool;
    Notify *sock;
    uint64_t watchdog_usec;        /* the manager's interval */
    uint64_t watchdog_period_usec; /* fed every half of it (not under the minimum) */
    TimerId watchdog_timer;
    bool failing;  /* the last send failed (logged once per outage) */
    bool stopping; /* STATUS stays "stopping" */
    bool warmed;   /* every pool was warm once: "serving" from then on, never "starting" */
    char last_status[NOTIFY_MAX_BYTES];
};

static void
daemon_notify_send(DaemonNotify *n, const char *text, bool status)
{
    _cleanup_error_ Error *err = NULL;
    int r = status ? notify_status(n->sock, text, &err) : notify_send(n->sock, text, &err);
    if (r < 0 && !n->failing)
        log_warn("readiness: %s (the service manager misses our state until a send works)",
                 err->message);
    else if (r == 0 && n->failing)
        log_info("readiness: the service manager hears us again");
    n->failing = r < 0;
}

/* Appends one pool's progress to buf; false when the pool is still being made ready. */
static bool
shape_progress(const PoolShapeStatus *s, bool template_mode, char *buf, size_t cap)
{
    size_t o = strlen(buf);
    bool warm = s->idle + s->busy >= s->warm;
    if (template_mode)
        snprintf(buf + o, cap - o, "%spool %s: template %s, warm %u/%u", o ? "; " : "", s->name,
                 s->template_ready ? "ready" : "making", s->idle, s->warm);
    else
        snprintf(buf + o, cap - o, "%spool %s: snapshots %u/%u, warm %u/%u", o ? "; " : "", s->name,
                 s->snapshots_ready, s->slots, s->idle, s->warm);
    return warm && (template_mode ? s->template_ready : s->snapshots_ready > 0);
}

static void
pools_progress(DaemonNotify *n, char *buf, size_t cap)
{
    PoolStatus st;
    char detail[NOTIFY_MAX_BYTES] = "";
    bool ready = true;

    pool_status(n->pool, &st);
    for (size_t i = 0; i < st.n_shapes; i++)
        ready &= shape_progress(&st.shapes[i], st.guest_memory == POOL_MEMORY_TEMPLATE, detail,
                                sizeof(detail));
    n->warmed |= ready;
    snprintf(buf, cap, "%s: %s%s", n->warmed ? "serving" : "starting",
             st.accel_decided ? "" : "deciding accel; ", detail);
}

void
daemon_notify_new(DaemonNotify **ret)
{
    _cleanup_error_ Error *err = NULL;
    DaemonNotify *n = calloc(1, sizeof(*n));
    *ret = n;
    if (!n)
        return;
    if (notify_open_env(&n->sock, &err) < 0)
        log_warn("readiness: not told to the service manager: %s", err->message);
    n->watchdog_usec = notify_watchdog_usec(n->sock);
    if (n->sock)
        daemon_notify_send(n, "starting: opening the store and the pools", true);
}

static void
daemon_notify_on_watchdog(Loop *l, void *userdata)
{
    DaemonNotify *n = userdata;
    daemon_notify_send(n, "WATCHDOG=1", false);
    n->watchdog_timer =
        loop_add_timer(l, now_usec() + n->watchdog_period_usec, daemon_notify_on_watchdog, n);
}

void
daemon_notify_ready(DaemonNotify *n, Loop *l, Pool *pool)
{
    if (!n || !n->sock)
        return;
    n->loop = l;
    n->pool = pool;
    daemon_notify_send(n, "READY=1", false);
    log_info("readiness: READY=1 told to the service manager");
    daemon_notify_progress(n);
    if (n->watchdog_usec) {
        n->watchdog_period_usec = MAX(n->watchdog_usec / 2, (uint64_t) WATCHDOG_MIN_PERIOD_USEC);
        log_info("readiness: watchdog every %llu ms (half of WATCHDOG_USEC, at least %d)",
                 (unsigned long long) (n->watchdog_period_usec / 1000),
                 WATCHDOG_MIN_PERIOD_USEC / 1000);
        daemon_notify_on_watchdog(n->loop, n);
    }
}

void
daemon_notify_progress(DaemonNotify *n)
{
    char text[NOTIFY_MAX_BYTES];
    if (!n || !n->sock || !n->pool || n->stopping)
        return;
    pools_progress(n, text, sizeof(text));
    if (strcmp(text, n->last_status) == 0)
        return;
    snprintf(n->last_status, sizeof(n->last_status), "%s", text);
    daemon_notify_send(n, text, true);
}

void
daemon_notify_stopping(DaemonNotify *n)
{
    if (!n || !n->sock)
        return;
    daemon_notify_send(n,
                       "STOPPING=1\nSTATUS=stopping: ending live sessions, then destroying "
                       "guests",
                       false);
    n->stopping = true;
}

void
daemon_notify_free(DaemonNotify *n)
{
    if (!n)
        return;
    if (n->watchdog_timer)
        loop_cancel_timer(n->loop, n->watchdog_timer);
    notify_free(n->sock);
    free(n);
}
