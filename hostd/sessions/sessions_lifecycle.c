/* Start and stop of the sessions module. On start, sessions an earlier daemon left live end
 * with reason host_restart: their guests are gone (the pool destroys leftovers), but their
 * disks still hold the files, so the pool keeps those disks aside until they are salvaged.
 * On stop, every live session is cancelled (reason host_shutdown) and extracted, for at most
 * SESSIONS_STOP_GRACE_USEC; what is left then is reconciled by the next start. */
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

static void
sessions_on_retention_start(Loop *l, void *userdata)
{
    Sessions *m = userdata;
    (void) l;
    m->retention_timer = 0;
    artifacts_retention_tick(m);
}

/* Takes over a record an earlier run left unfinished. */
static void
sessions_adopt(Sessions *m, SessionRecord *r)
{
    _cleanup_error_ Error *err = NULL;
    Session *s = calloc(1, sizeof(*s));
    if (!s || !(s->spec.pool = strdup(r->pool)) || !(s->spec.tenant_id = strdup(r->tenant_id))) {
        free(s);
        log_error("session %s: out of memory during restart reconciliation", r->id);
        return;
    }
    s->mgr = m;
    s->rec = *r;
    r->spec = NULL; /* moved */
    s->mirror.fd = -1;
    if (s->rec.started_usec > 0 && s->rec.stopped_usec == 0) /* its guest ran until now */
        s->rec.stopped_usec = (int64_t) wall_usec();
    session_admit_adopt(s);
    uint64_t seq;
    if (store_event_max_seq(m->store, s->rec.id, &seq, &err) == 0 && seq > s->rec.last_seq)
        s->rec.last_seq = seq; /* events written after the record's last update */
    s->next = m->all;
    m->all = s;
    session_end_recorded(s); /* nothing is accepted from anyone: it has no guest */
}

void
sessions_start(Sessions *m)
{
    SessionRecord *v = NULL;
    size_t n = 0;
    _cleanup_error_ Error *err = NULL;

    if (store_session_unfinished(m->store, &v, &n, &err) < 0)
        log_error("restart reconciliation: %s", err->message);
    if (n)
        log_info("%zu session(s) were live when the daemon last stopped: ending them "
                 "(host_restart) and salvaging their files", n);
    for (size_t i = 0; i < n; i++)
        sessions_adopt(m, &v[i]); /* ends each (settling its reservation) or starts salvage */
    session_records_free(v, n);
    sessions_admit_reconcile(m); /* after the adoption: only what no live session holds */
    m->retention_timer = loop_add_timer(m->loop, now_usec() + RETENTION_FIRST_RUN_USEC,
                                        sessions_on_retention_start, m);
}

static void
sessions_on_stopped(Sessions *m)
{
    void (*done)(void *) = m->stop_done;
    m->stop_done = NULL;
    loop_cancel_timer(m->loop, m->stop_timer);
    m->stop_timer = 0;
    if (done)
        done(m->stop_userdata);
}

/* Sessions still extracting stay in memory (their jobs hold them) and in the store as
 * "extracting": the next start ends them as host_restart and salvages their disks. */
static void
sessions_on_stop_deadline(Loop *l, void *userdata)
{
    Sessions *m = userdata;
    (void) l;
    m->stop_timer = 0;
    log_warn("stop: extraction still running after %llu s; the next start finishes it",
             (unsigned long long) (SESSIONS_STOP_GRACE_USEC / 1000000));
    sessions_commit_now(m);
    sessions_on_stopped(m);
}

void
sessions_check_stopped(Sessions *m)
{
    if (!m->stopping || m->all || !m->stop_done)
        return;
    loop_cancel_timer(m->loop, m->retention_timer);
    m->retention_timer = 0;
    sessions_commit_now(m);
    sessions_on_stopped(m);
}

void
sessions_stop(Sessions *m, void (*done)(void *userdata), void *userdata)
{
    m->stopping = true;
    m->stop_done = done;
    m->stop_userdata = userdata;
    loop_cancel_timer(m->loop, m->retention_timer);
    m->retention_timer = 0;
    m->stop_timer = loop_add_timer(m->loop, now_usec() + SESSIONS_STOP_GRACE_USEC,
                                   sessions_on_stop_deadline, m);
    Session *next;
    for (Session *s = m->all; s; s = next) {
        next = s->next; /* session_end may free s */
        if (!session_state_is_ending(s->state))
            session_end(s, SESSION_END_HOST_SHUTDOWN);
    }
    sessions_check_stopped(m);
}
