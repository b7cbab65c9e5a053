/* Start and stop of the sessions module. On start, sessions an earlier daemon left live are
 * adopted when their guest still runs (session_adopt.c); the others end with reason
 * host_restart: their guests are gone (the pool destroys leftovers), but their disks still
 * hold the files, so the pool keeps those disks aside until they are salvaged. Paused ones
 * stay paused (sessions_keep_paused). On stop, with shutdown = keep, running sessions stay
 * (their guests too) for the next start; every other live session is cancelled (reason
 * host_shutdown) and extracted, for at most SESSIONS_STOP_GRACE_USEC; what is left then is reconciled by the next start. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

#define SESSIONS_STOP_GRACE_USEC (90ull * 1000000)
/* The first retention pass: soon, so a daemon that was down for long frees its disk early,
 * but after the start-up work (adoption, the appliance launch) has been queued. Sessions
 * being salvaged are live and never picked. */
#define RETENTION_FIRST_RUN_USEC (10ull * 1000000)

struct SessionsStop {
    TimerId timer; /* the grace's end */
    void (*done)(void *userdata);
    void *userdata;
};

int
sessions_stop_new(Sessions *m)
{
    return (m->stop = calloc(1, sizeof(*m->stop))) ? 0 : -1;
}

void
sessions_stop_free(Sessions *m)
{
    if (!m->stop)
        return;
    loop_cancel_timer(m->loop, m->stop->timer);
    free(m->stop);
    m->stop = NULL;
}

/* Paused sessions (issue 27) outlive the daemon: what they are is on the host's disk (their
 * stored state, their workspace disk), and they hold no guest, slot or guest time. Their
 * records stay as they are, paused: this moves them to the tail of v, out of the part the
 * reconciliation ends, and returns the size of that part (v keeps all n records to free). A
 * session caught pausing or resuming is not paused yet (or any more): it is reconciled as a
 * live one. */
static size_t
sessions_keep_paused(SessionRecord *v, size_t n)
{
    size_t live = n;
    for (size_t i = 0; i < live;) {
        if (v[i].state != ST_PAUSED) {
            i++;
            continue;
        }
        SessionRecord t = v[i];
        v[i] = v[--live];
        v[live] = t;
    }
    if (live < n)
        log_info("%zu paused session(s) stay paused", n - live);
    return live;
}

void
sessions_start(Sessions *m)
{
    SessionRecord *v = NULL;
    size_t n = 0;
    _cleanup_error_ Error *err = NULL;

    if (store_session_unfinished(m->store, &v, &n, &err) < 0)
        log_error("restart reconciliation: %s", err->message);
    size_t live = sessions_keep_paused(v, n);
    if (live)
        log_info("%zu session(s) were live when the daemon last stopped: adopting those whose "
                 "guest still runs, ending the others (host_restart) and salvaging their files",
                 live);
    for (size_t i = 0; i < live; i++) {
        SessionEndReason why = session_adopt_reason(m, v[i].id);
        if (why == SESSION_END_HOST_RESTART && session_adopt_recorded(m, &v[i]))
            continue; /* session_adopt.c: it runs again, or ends host_restart */
        session_end_recorded(m, &v[i], why); /* or its salvage */
    }
    session_records_free(v, n);
    sessions_admit_reconcile(m); /* after the adoption: only what no live session holds */
    artifacts_retention_start(m, RETENTION_FIRST_RUN_USEC);
}

static void
sessions_on_stopped(Sessions *m)
{
    void (*done)(void *) = m->stop->done;
    m->stop->done = NULL;
    loop_cancel_timer(m->loop, m->stop->timer);
    m->stop->timer = 0;
    if (done)
        done(m->stop->userdata);
}

/* Sessions still extracting stay in memory (their jobs hold them) and in the store as
 * "extracting": the next start ends them as host_restart and salvages their disks. */
static void
sessions_on_stop_deadline(Loop *l, void *userdata)
{
    Sessions *m = userdata;
    (void) l;
    m->stop->timer = 0;
    log_warn("stop: extraction still running after %llu s; the next start finishes it",
             (unsigned long long) (SESSIONS_STOP_GRACE_USEC / 1000000));
    sessions_commit_now(m);
    sessions_on_stopped(m);
}

/* Sessions.emptied while stopping: the stop that waited on the last session ends. */
static void
sessions_check_stopped(Sessions *m)
{
    if (!m->stopping || m->all || !m->stop->done)
        return;
    artifacts_retention_stop(m);
    sessions_commit_now(m);
    sessions_on_stopped(m);
}

void
sessions_set_shutdown_keep(Sessions *m, bool keep)
{
    m->keep_on_stop = keep;
}

void
sessions_stop(Sessions *m, void (*done)(void *userdata), void *userdata)
{
    m->stopping = true;
    m->emptied = sessions_check_stopped;
    m->stop->done = done;
    m->stop->userdata = userdata;
    artifacts_retention_stop(m);
    m->stop->timer = loop_add_timer(m->loop, now_usec() + SESSIONS_STOP_GRACE_USEC,
                                    sessions_on_stop_deadline, m);
    Session *next;
    for (Session *s = m->all; s; s = next) {
        next = s->next; /* session_end and session_keep may free s */
        if (s->state == ST_NEW)
            continue; /* its guest being adopted: session_on_adopted keeps or ends it */
        if (m->keep_on_stop && session_keepable(s))
            session_keep(s); /* shutdown = keep: the next start adopts it */
        else if (!session_state_is_ending(s->state))
            session_end(s, SESSION_END_HOST_SHUTDOWN);
    }
    sessions_check_stopped(m);
}
