/* Restart without losing a session (issue 30, DESIGN.md invariant 7). A stop with
 * [daemon] shutdown = keep leaves each running session's guest running (session_keep): the
 * session's record stays "running" with its guest's name, and a "session.kept" event records
 * its lifetime's deadline as a wall-clock time. The next start (or a start after a kill -9:
 * the record and the events are the same but for that event) adopts it
 * (session_adopt_recorded): the pool checks the domain (running, the slot's UUID) and syncs
 * its channel with a fresh nonce; then the session runs again with its id, its event seq,
 * its exec ids, its running execs (the runner kept them, and held their output while no host
 * read it: DESIGN.md "Channel") and its deadlines, re-armed from the absolute times (one that
 * passed while the daemon was down fires at once). A guest that fails the checks ends the
 * session host_restart, its workspace salvaged, as before adoption existed.
 *
 * What does not survive: tasks (their flow of files in, command, files out is the daemon's:
 * they end host_shutdown at a keep and host_restart after a kill -9), pending and starting
 * sessions, sessions with egress (the tunnel's streams are the daemon's sockets), code
 * contexts (the kernel keeps running as an exec, but its context is forgotten), file round
 * trips in flight (answered "stopping"), an exec's output the old daemon read but did not
 * commit (a kill -9 only), and at most one output frame that was half-read when the old
 * daemon went (the channel's sync discards what precedes its echo). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonscan.h"
#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

bool
session_keepable(const Session *s)
{
    return s->state == ST_RUNNING && s->guest && !s->fin && !s->spec.is_task &&
           !s->spec.egress_all && s->spec.n_egress == 0;
}

/* A monotonic deadline as a wall-clock time (saturating at now). */
static int64_t
mono_to_wall_usec(uint64_t at_usec)
{
    uint64_t now = now_usec();
    return (int64_t) wall_usec() + (at_usec > now ? (int64_t) (at_usec - now) : 0);
}

static uint64_t
wall_to_mono_usec(int64_t at_wall_usec)
{
    int64_t wall = (int64_t) wall_usec();
    uint64_t now = now_usec();
    return at_wall_usec > wall ? now + (uint64_t) (at_wall_usec - wall) : now;
}

void
session_keep(Session *s)
{
    Sessions *m = s->mgr;
    int64_t deadline = mono_to_wall_usec(session_timeout_at_usec(s));

    session_event(s, "session.kept", 0, NULL, 0,
                  json_pack("{s:I,s:i}", "deadline_unix_ms", (json_int_t) (deadline / 1000),
                            "execs_running", (int) session_execs_running(s)));
    session_persist(s);
    sessions_commit_now(m); /* before the free: the batch writes touched sessions' records */
    session_parts_stop(s, SESSION_END_HOST_SHUTDOWN);    /* timers; round trips answered */
    if (m->host.ops->keep(m->host.pool, s->guest) < 0) { /* never a callback to a freed s */
        log_warn("session %s: its guest could not be kept; the next start salvages it", s->rec.id);
        m->host.ops->release(m->host.pool, s->guest, NULL, NULL);
    }
    s->guest = NULL;
    log_info("session %s: kept running for the next start (guest %s)", s->rec.id, s->rec.guest);
    session_free(s);
}

/* ------------------------------------------------------------------ adoption */

static void session_on_adopted(Guest *g, const Error *err, void *userdata);

/* The spec's text says whether the session had egress, and whether it mirrors. False when it
 * cannot be read (the store is hostile too): not adopted. */
static bool
recorded_spec_adoptable(const SessionRecord *r, bool *ret_mirror)
{
    if (!r->spec || !jsonscan_depth_within(r->spec, strlen(r->spec), 8))
        return false;
    json_t *o = json_loads(r->spec, JSON_REJECT_DUPLICATES, NULL);
    bool ok = json_is_object(o) && !json_object_get(o, "egress") && !json_object_get(o, "argv");
    *ret_mirror = json_is_true(json_object_get(o, "mirror"));
    json_decref(o);
    return ok;
}

bool
session_adopt_recorded(Sessions *m, SessionRecord *r)
{
    bool mirror = false;
    if (!m->host.ops->adopt || r->state != ST_RUNNING || strcmp(r->kind, "session") != 0 ||
        !r->guest[0] || r->started_usec <= 0 || !recorded_spec_adoptable(r, &mirror))
        return false;
    Session *s = session_alloc(m);
    if (!s || !(s->spec.pool = strdup(r->pool)) || !(s->spec.tenant_id = strdup(r->tenant_id))) {
        if (s)
            session_free(s);
        return false; /* the caller ends it: that path reports the memory */
    }
    s->spec.mirror = mirror;
    s->rec = *r;
    r->spec = NULL; /* moved */
    if (m->host.ops->adopt(m->host.pool, s->rec.guest, &session_guest_ops, s, session_on_adopted) <
        0) {
        *r = s->rec; /* back: the pool has no such slot now; the caller ends it */
        s->rec.spec = NULL;
        session_free(s);
        return false;
    }
    session_admit_adopt(s);
    uint64_t seq;
    if (store_event_max_seq(m->store, s->rec.id, &seq, NULL) == 0 && seq > s->rec.last_seq)
        s->rec.last_seq = seq; /* events written after the record's last update */
    s->next = m->all;
    m->all = s;
    log_info("session %s: adopting its guest %s", s->rec.id, s->rec.guest);
    return true;
}

/* Its lifetime's deadline and its running execs, from what the earlier run recorded. */
static void
session_adopt_restore(Session *s, const StoreAdoptFacts *f)
{
    int64_t started = s->rec.started_usec;
    int64_t deadline =
        f->deadline_wall_usec ? f->deadline_wall_usec : started + (int64_t) s->rec.timeout_usec;
    session_lifetime_resume(s, wall_to_mono_usec(started));
    session_timeout_arm_at(s, wall_to_mono_usec(deadline)); /* passed: it fires at once */
    session_execs_resume_ids(s, f->max_exec_id);
    for (size_t i = 0; i < f->n_execs; i++)
        if (session_exec_adopt(s, f->execs[i].exec_id,
                               wall_to_mono_usec(f->execs[i].deadline_wall_usec)) < 0)
            abort(); /* an exec nobody could time out */
    session_event(s, "session.adopted", 0, NULL, 0,
                  json_pack("{s:i,s:I}", "execs_running", (int) f->n_execs, "timeout_left_ms",
                            (json_int_t) (deadline > (int64_t) wall_usec()
                                              ? (deadline - (int64_t) wall_usec()) / 1000
                                              : 0)));
}

static void
session_on_adopted(Guest *g, const Error *err, void *userdata)
{
    Session *s = userdata;
    Sessions *m = s->mgr;
    StoreAdoptFacts *f = NULL;
    _cleanup_error_ Error *e = NULL;

    s->guest = g;
    if (!err && !(f = calloc(1, sizeof(*f))))
        error_set(&e, E_INTERNAL, ENOMEM, "adoption");
    else if (!err)
        (void) store_session_adopt_facts(m->store, s->rec.id, f, &e);
    if (!err)
        err = e;
    if (err) {
        log_warn("session %s: its guest %s cannot be adopted: %s; ending it (host_restart) "
                 "and salvaging its files",
                 s->rec.id, s->rec.guest, err->message);
        free(f);
        session_end(s, SESSION_END_HOST_RESTART); /* releases the guest: the salvage */
        return;
    }
    if (!session_move(s, ST_RUNNING, SESSION_END_NONE)) {
        free(f);
        session_end(s, SESSION_END_HOST_RESTART);
        return;
    }
    s->accepting = true;
    session_adopt_restore(s, f);
    log_info("session %s: adopted with %zu exec(s) running", s->rec.id, f->n_execs);
    free(f);
    if (s->end_after_adopt) { /* a close, cancel or removal that came meanwhile */
        session_end(s, s->end_after_adopt);
        return;
    }
    if (!m->stopping) /* a stop came while the pool checked the guest: it waited for this */
        return;
    if (m->keep_on_stop && session_keepable(s))
        session_keep(s);
    else
        session_end(s, SESSION_END_HOST_SHUTDOWN);
}
