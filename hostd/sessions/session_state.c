/* A session's state machine as a type (README.md has the diagram): the table of moves, each
 * with the end reasons it takes, and the one setter. A move the table does not have is
 * refused and nothing changes; an allowed one is recorded (event, record, ledger) and
 * committed before anyone acts on it. Loop thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

/* Which end reasons a move takes: a mask of SessionEndReason bits; 0 = no such move.
 * NO_REASON alone: the move takes none. A move whose mask lacks NO_REASON needs one. */
#define REASON(r) (1u << (r))
#define NO_REASON REASON(SESSION_END_NONE)
/* A live session's end: anything but an earlier run's. */
#define LIVE_END                                                                                   \
    (((1u << SESSION_END_COUNT_) - 1) & ~(NO_REASON | REASON(SESSION_END_HOST_RESTART)))
/* A session an earlier run left live, ended at start (sessions_lifecycle.c): its guest is gone
 * (host_restart) or another host took it over (host_lost, sessions_lost.c). */
#define RECORDED_END (REASON(SESSION_END_HOST_RESTART) | REASON(SESSION_END_HOST_LOST))

_Static_assert(SESSION_END_COUNT_ <= 32, "the reason masks are 32 bits");

/* API.md "Sessions": pending -> starting -> running -> stopping -> extracting -> ended, and
 * the shortcuts: a pending session ends unbound; a starting one whose guest fails stops; a
 * stopping one whose guest is gone without a disk to read ends. ST_NEW is a session the
 * machine has not placed: one being created (to pending: its record is inserted by admission
 * right after, and its first event is session.created) or one an earlier run left live (to
 * stopping, or to running when its guest still runs and is adopted: session_adopt.c).
 *
 * Pause and resume (issue 27): running -> pausing -> paused -> resuming -> running. A pause
 * that fails goes back to running (never half-paused), or stops when its guest died; a
 * paused session that ends (closed, cancelled, timed out) stops with its stored disk to
 * salvage, as does a resume whose stored state fails its check (resume_failed). A paused
 * record an earlier run left stays paused (new -> paused). */
static const uint32_t moves[ST_COUNT_][ST_COUNT_] = {
    [ST_NEW] = {[ST_PENDING] = NO_REASON,
                [ST_RUNNING] = NO_REASON,
                [ST_STOPPING] = RECORDED_END,
                [ST_PAUSED] = NO_REASON},
    [ST_PENDING] = {[ST_STARTING] = NO_REASON, [ST_ENDED] = LIVE_END},
    [ST_STARTING] = {[ST_RUNNING] = NO_REASON, [ST_STOPPING] = LIVE_END},
    [ST_RUNNING] = {[ST_STOPPING] = LIVE_END, [ST_PAUSING] = NO_REASON},
    [ST_PAUSING] = {[ST_PAUSED] = NO_REASON, [ST_RUNNING] = NO_REASON, [ST_STOPPING] = LIVE_END},
    [ST_PAUSED] = {[ST_RESUMING] = NO_REASON, [ST_STOPPING] = LIVE_END},
    [ST_RESUMING] = {[ST_RUNNING] = NO_REASON, [ST_STOPPING] = LIVE_END},
    [ST_STOPPING] = {[ST_EXTRACTING] = NO_REASON, [ST_ENDED] = NO_REASON},
    [ST_EXTRACTING] = {[ST_ENDED] = NO_REASON},
};

bool
session_state_can_go(SessionState from, SessionState to)
{
    return from < ST_COUNT_ && to < ST_COUNT_ && moves[from][to] != 0;
}

bool
session_state_takes(SessionState from, SessionState to, SessionEndReason reason)
{
    return session_state_can_go(from, to) && reason < SESSION_END_COUNT_ &&
           (moves[from][to] & REASON(reason)) != 0;
}

bool
session_state_is_ending(SessionState st)
{
    return st == ST_STOPPING || st == ST_EXTRACTING || st == ST_ENDED;
}

/* ------------------------------------------------------------------ watches */

struct SessionsWatches {
    SessionsWatch *list;
    size_t n;
    TimerId timer; /* due watches are called */
};

struct SessionsWatch {
    char id[SESSION_ID_BYTES];
    SessionsWatchFn fn;
    void *userdata;
    SessionState seen, now; /* what fn last heard, what it will hear */
    SessionEndReason reason;
    bool due;
    SessionsWatch *next;
};

int
sessions_watch(Sessions *m, const char *id, SessionsWatchFn fn, void *userdata, SessionsWatch **ret,
               Error **errp)
{
    if (m->watches->n >= SESSIONS_WATCHES_MAX)
        return error_set(errp, E_UNAVAILABLE, 0, "too many session watches (%d)",
                         SESSIONS_WATCHES_MAX);
    SessionsWatch *w = calloc(1, sizeof(*w));
    if (!w)
        return error_set(errp, E_INTERNAL, ENOMEM, "session watch");
    Session *s = sessions_find(m, NULL, id);
    snprintf(w->id, sizeof(w->id), "%s", id);
    w->fn = fn;
    w->userdata = userdata;
    w->seen = w->now = s ? s->state : ST_ENDED;
    w->next = m->watches->list;
    m->watches->list = w;
    m->watches->n++;
    *ret = w;
    return 0;
}

void
sessions_unwatch(Sessions *m, SessionsWatch *w)
{
    for (SessionsWatch **pp = &m->watches->list; w && *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            m->watches->n--;
            free(w);
            return;
        }
}

int
sessions_watches_new(Sessions *m)
{
    return (m->watches = calloc(1, sizeof(*m->watches))) ? 0 : -1;
}

void
sessions_watches_free(Sessions *m)
{
    if (!m->watches)
        return;
    while (m->watches->list)
        sessions_unwatch(m, m->watches->list);
    loop_cancel_timer(m->loop, m->watches->timer);
    free(m->watches);
    m->watches = NULL;
}

/* Calls the due watches until none is: a call may unwatch any watch, or change a session and
 * so make a watch due again (it is then called again in this turn, with what it has not yet
 * heard). */
static void
watches_on_timer(Loop *l, void *userdata)
{
    Sessions *m = userdata;
    (void) l;
    m->watches->timer = 0;
    for (;;) {
        SessionsWatch *w = m->watches->list;
        while (w && !w->due)
            w = w->next;
        if (!w)
            return;
        char id[SESSION_ID_BYTES];
        snprintf(id, sizeof(id), "%s", w->id); /* fn may free w */
        SessionsChange c = {.id = id, .from = w->seen, .to = w->now, .reason = w->reason};
        w->due = false;
        w->seen = w->now;
        w->fn(w->userdata, &c);
    }
}

/* The watches of s hear of its state on the next turn of the loop. */
static void
session_watches_due(Session *s)
{
    Sessions *m = s->mgr;
    bool due = false;
    for (SessionsWatch *w = m->watches->list; w; w = w->next)
        if (strcmp(w->id, s->rec.id) == 0) {
            w->now = s->state;
            w->reason = s->rec.end_reason;
            w->due = due = true;
        }
    if (due && !m->watches->timer)
        m->watches->timer = loop_add_timer(m->loop, now_usec(), watches_on_timer, m);
}

/* ------------------------------------------------------------------ moves */

/* What the move records: the session.state event (with the reason, and a task's exit code at
 * the end), the times it stamps, the record, and at the end the ledger, in one commit. */
static void
session_record_move(Session *s, SessionState st, SessionEndReason reason)
{
    json_t *attrs = json_pack("{s:s}", "state", session_state_name(st));

    if (reason != SESSION_END_NONE) {
        s->rec.end_reason = reason;
        json_object_set_new(attrs, "reason", json_string(session_end_reason_name(reason)));
    }
    if (st == ST_RUNNING && s->rec.started_usec == 0)
        s->rec.started_usec = (int64_t) wall_usec();
    if (st == ST_ENDED) {
        s->rec.ended_usec = (int64_t) wall_usec();
        if (s->rec.end_reason < SESSION_END_COUNT_)
            s->mgr->stats.ended_by_reason[s->rec.end_reason]++;
    }
    if (st == ST_ENDED && s->rec.has_exit_code)
        json_object_set_new(attrs, "exit_code", json_integer(s->rec.exit_code));
    session_event(s, "session.state", 0, NULL, 0, attrs);
    session_persist(s);
    if (st == ST_ENDED)
        session_admit_settle(s); /* the ledger ends in the final state's transaction */
    sessions_commit_now(s->mgr); /* state changes are durable before anything acts on them */
}

int
session_set_state(Session *s, SessionState st, SessionEndReason reason, Error **errp)
{
    SessionState from = s->state;

    if (!session_state_can_go(from, st))
        return error_set(errp, E_INTERNAL, 0,
                         "session %s: %s -> %s is not a session state "
                         "transition",
                         s->rec.id, session_state_name(from), session_state_name(st));
    if (!session_state_takes(from, st, reason))
        return error_set(errp, E_INTERNAL, 0,
                         "session %s: %s -> %s with reason '%s' is not a "
                         "session state transition",
                         s->rec.id, session_state_name(from), session_state_name(st),
                         session_end_reason_name(reason));
    s->state = st;
    if (from == ST_NEW && st == ST_PENDING) {
        s->rec.state = st; /* the creation: admission inserts the record */
        return 0;
    }
    session_record_move(s, st, reason);
    session_watches_due(s);
    return 0;
}

bool
session_move(Session *s, SessionState st, SessionEndReason reason)
{
    _cleanup_error_ Error *err = NULL;
    if (session_set_state(s, st, reason, &err) == 0)
        return true;
    log_error("%s", err->message);
    return false;
}
