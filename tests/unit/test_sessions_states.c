/* A session's state machine (hostd/sessions/session_state.c, README.md's diagram), driven
 * through the real sessions module on the fake host of sessions_fake.c: a pool of token
 * guests, a channel that answers only what the test says, a salvage the test completes.
 *
 * Every move of the table is made the way the daemon makes it (create, a guest becoming idle,
 * the Hello's Ack, a cancel, the guest gone, the salvage done, a finalize's merge, the pending
 * deadline, a guest that fails to start, an earlier run's records at start) and checked in
 * memory, in the store and in the events. Every move the table lacks, and every end reason a
 * move does not take, is refused from each state: an error, and nothing changed (state,
 * record, events). The watches: called after a change on the loop, never inside it; changes
 * of one turn folded; unwatch inside the call; a call that changes the session again; an
 * unknown session never fires; the cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sessions_fake.h"
#include "store_tenants.h"
#include "testlib.h"
#include "timeutil.h"

typedef struct {
    FakeWorld w;
} Fixture;

static int
setup(void **state)
{
    static Fixture fx;
    fake_world_open(&fx.w, NULL);
    *state = &fx;
    return 0;
}

/* The session.state events after seq `after`: their states and reasons, in order. */
typedef struct {
    size_t n;
    char state[8][16];
    char reason[8][24];
} Moves;

static Moves
moves_after(FakeWorld *w, const char *id, uint64_t after)
{
    Moves mv = {0};
    size_t n = 0;
    EventRecord *v = fake_events(w, id, after, &n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].type, "session.state") != 0)
            continue;
        json_t *o = json_loads(v[i].attrs, 0, NULL);
        const char *st = json_string_value(json_object_get(o, "state"));
        const char *why = json_string_value(json_object_get(o, "reason"));
        assert_true(mv.n < 8);
        snprintf(mv.state[mv.n], sizeof(mv.state[0]), "%s", st ? st : "");
        snprintf(mv.reason[mv.n], sizeof(mv.reason[0]), "%s", why ? why : "");
        mv.n++;
        json_decref(o);
    }
    event_records_free(v, n);
    return mv;
}

/* What the store holds of a session. */
static SessionRecord
stored(FakeWorld *w, const char *id)
{
    SessionRecord r;
    Error *e = NULL;
    sessions_commit_now(w->m);
    assert_int_equal(store_session_get(w->store, id, &r, &e), 0);
    session_record_clear(&r);
    return r;
}

static ReservationState
reservation_of(FakeWorld *w, const char *id)
{
    ReservationRecord res;
    Error *e = NULL;
    assert_int_equal(store_reservation_for_session(w->store, id, &res, &e), 0);
    return res.state;
}

/* ------------------------------------------------------------------ allowed moves */

/* new -> pending -> starting -> running -> stopping -> extracting -> ended, the main line:
 * a session ended by a cancel, its disk salvaged. */
static void
test_main_line(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    char id[SESSION_ID_BYTES];

    Session *s = fake_create(w, NULL); /* no guest is idle: it waits */
    snprintf(id, sizeof(id), "%s", s->rec.id);
    assert_int_equal(s->state, ST_PENDING);
    assert_int_equal(stored(w, id).state, ST_PENDING);
    assert_int_equal(moves_after(w, id, 0).n, 0); /* its first event is session.created */

    FakeGuest *g = fake_guest_idle(); /* taken at once */
    assert_int_equal(s->state, ST_STARTING);
    assert_ptr_equal(s->guest, (Guest *) g);
    assert_string_equal(stored(w, id).guest, g->name);
    assert_int_equal(fake.hellos, 1);

    fake_ack(s->guest, fake.hello_req);
    assert_int_equal(s->state, ST_RUNNING);
    assert_true(stored(w, id).started_usec > 0);

    Error *e = NULL;
    assert_int_equal(sessions_cancel(w->m, "default", id, &e), 0);
    assert_int_equal(s->state, ST_STOPPING);
    assert_false(s->accepting);
    assert_true(g->released);
    assert_int_equal(stored(w, id).end_reason, SESSION_END_CANCELLED);

    fake_gone(s->guest);
    assert_int_equal(s->state, ST_EXTRACTING);
    assert_int_equal(fake.salvages, 1);
    assert_int_equal(fake.salvage.disk_index, g->disk_index);

    fake_salvage_done(NULL);
    assert_null(sessions_find(w->m, NULL, id)); /* ended: out of memory */
    assert_true(g->recycled);
    SessionRecord r = stored(w, id);
    assert_int_equal(r.state, ST_ENDED);
    assert_int_equal(r.end_reason, SESSION_END_CANCELLED);
    assert_string_equal(r.guest, "");
    assert_int_equal(reservation_of(w, id), RESERVATION_CHARGED); /* it had a guest */

    Moves mv = moves_after(w, id, 0);
    static const char *const want[] = {"starting", "running", "stopping", "extracting", "ended"};
    assert_int_equal(mv.n, ELEMENTSOF(want));
    for (size_t i = 0; i < mv.n; i++)
        assert_string_equal(mv.state[i], want[i]);
    assert_string_equal(mv.reason[2], "cancelled"); /* the end's reason, on stopping only */
    assert_string_equal(mv.reason[4], "");
    assert_int_equal(w->m->stats.cancels, 1);
    assert_int_equal(w->m->stats.ended, 1);
}

/* pending -> ended: no guest within pending_timeout_s (no_capacity), or a cancel. */
static void
tune_pending(SessionsConfig *c)
{
    c->pending_timeout_usec = 20000;
}

static void
test_pending_ends_unbound(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    char a[SESSION_ID_BYTES], b[SESSION_ID_BYTES];
    Error *e = NULL;

    fake_world_close(w);
    fake_world_open(w, tune_pending);
    snprintf(a, sizeof(a), "%s", fake_create(w, NULL)->rec.id);
    snprintf(b, sizeof(b), "%s", fake_create(w, NULL)->rec.id);
    assert_int_equal(sessions_cancel(w->m, "default", a, &e), 0);
    assert_null(sessions_find(w->m, NULL, a));
    (void) fake_run(w, 100000); /* b's deadline passes */
    assert_null(sessions_find(w->m, NULL, b));
    SessionRecord ra = stored(w, a), rb = stored(w, b);
    assert_int_equal(ra.state, ST_ENDED);
    assert_int_equal(ra.end_reason, SESSION_END_CANCELLED);
    assert_int_equal(rb.state, ST_ENDED);
    assert_int_equal(rb.end_reason, SESSION_END_NO_CAPACITY);
    assert_int_equal(reservation_of(w, b), RESERVATION_RELEASED); /* never had a guest */
    Moves mv = moves_after(w, b, 0);
    assert_int_equal(mv.n, 1);
    assert_string_equal(mv.state[0], "ended");
    assert_string_equal(mv.reason[0], "no_capacity");
    fake_guest_idle(); /* nothing is waiting any more */
    assert_int_equal(fake.takes, 0);
}

/* starting -> stopping: the Hello cannot be sent, or the runner refuses it. */
static void
test_starting_guest_fails(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Error er = STOCKADE__RUNNER__ERROR__INIT;

    fake.hello_fails = true;
    Session *a = fake_create(w, NULL);
    fake_guest_idle();
    assert_int_equal(a->state, ST_STOPPING);
    assert_int_equal(a->rec.end_reason, SESSION_END_GUEST_ERROR);
    assert_int_equal(fake.releases, 1);

    fake.hello_fails = false;
    Session *b = fake_create(w, NULL);
    fake_guest_idle();
    assert_int_equal(b->state, ST_STARTING);
    er.message = "no";
    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR;
    m.error = &er;
    m.req_id = fake.hello_req;
    fake_say(b->guest, &m);
    assert_int_equal(b->state, ST_STOPPING);
    assert_int_equal(b->rec.end_reason, SESSION_END_GUEST_ERROR);
    assert_int_equal(fake.releases, 2);
}

/* new -> stopping (host_restart) -> ended, for a record an earlier run left live without a
 * disk the pool still has; new -> stopping -> extracting -> ended (the held disk salvaged,
 * then given back) for one whose disk it has. */
static void
test_earlier_run_recorded(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    char gone_id[SESSION_ID_BYTES], held_id[SESSION_ID_BYTES], held_guest[STORE_GUEST_MAX_BYTES];

    snprintf(gone_id, sizeof(gone_id), "%s", fake_running(w, NULL)->rec.id);
    Session *h = fake_running(w, NULL);
    snprintf(held_id, sizeof(held_id), "%s", h->rec.id);
    snprintf(held_guest, sizeof(held_guest), "%s", h->rec.guest);
    uint64_t gone_seq = h->rec.last_seq, held_seq = h->rec.last_seq;
    gone_seq = sessions_find(w->m, NULL, gone_id)->rec.last_seq;
    sessions_commit_now(w->m);

    fake_world_restart(w, NULL); /* killed: both are recorded running */
    snprintf(fake.hold_name, sizeof(fake.hold_name), "%s", held_guest);
    fake.hold_result = 5;
    sessions_start(w->m);
    assert_int_equal(fake.holds, 2);
    assert_null(sessions_find(w->m, NULL, gone_id)); /* no disk to read: ended at once */
    SessionRecord r = stored(w, gone_id);
    assert_int_equal(r.state, ST_ENDED);
    assert_int_equal(r.end_reason, SESSION_END_HOST_RESTART);
    Moves mv = moves_after(w, gone_id, gone_seq);
    assert_int_equal(mv.n, 2);
    assert_string_equal(mv.state[0], "stopping");
    assert_string_equal(mv.reason[0], "host_restart");
    assert_string_equal(mv.state[1], "ended");

    Session *s = sessions_find(w->m, NULL, held_id);
    assert_non_null(s);
    assert_int_equal(s->state, ST_EXTRACTING);
    assert_int_equal(fake.salvage.disk_index, 5);
    fake_salvage_done(NULL);
    assert_null(sessions_find(w->m, NULL, held_id));
    assert_int_equal(fake.unholds, 1); /* the slot's disk goes back to the pool */
    mv = moves_after(w, held_id, held_seq);
    assert_int_equal(mv.n, 3);
    assert_string_equal(mv.state[0], "stopping");
    assert_string_equal(mv.reason[0], "host_restart");
    assert_string_equal(mv.state[1], "extracting");
    assert_string_equal(mv.state[2], "ended");
    assert_int_equal(stored(w, held_id).end_reason, SESSION_END_HOST_RESTART);
}

/* Issue 27: a session recorded paused when the daemon stopped stays paused across the start:
 * no move, no event, no disk held, not ended; the running one beside it ends as before. */
static void
test_earlier_run_paused(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    char paused_id[SESSION_ID_BYTES], live_id[SESSION_ID_BYTES];

    Session *p = fake_running(w, NULL);
    snprintf(paused_id, sizeof(paused_id), "%s", p->rec.id);
    snprintf(live_id, sizeof(live_id), "%s", fake_running(w, NULL)->rec.id);
    sessions_commit_now(w->m);
    SessionRecord r = stored(w, paused_id);
    r.state = ST_PAUSED; /* as a pause will record it */
    assert_int_equal(store_session_update(w->store, &r, NULL), 0);
    uint64_t seq = r.last_seq;

    fake_world_restart(w, NULL);
    sessions_start(w->m);
    assert_int_equal(fake.holds, 1); /* the live one's disk only */
    assert_null(sessions_find(w->m, NULL, paused_id));
    SessionRecord got = stored(w, paused_id);
    assert_int_equal(got.state, ST_PAUSED);
    assert_int_equal(got.end_reason, SESSION_END_NONE);
    assert_int_equal(moves_after(w, paused_id, seq).n, 0);
    assert_int_equal(stored(w, live_id).state, ST_ENDED);
    assert_int_equal(stored(w, live_id).end_reason, SESSION_END_HOST_RESTART);
}

/* running -> stopping (closed) -> extracting -> ended over the channel: the runner's manifest
 * (empty), the merge on a worker, no salvage and no disk read. */
static void
on_ended_quit(void *userdata, const SessionsChange *c)
{
    if (c->to == ST_ENDED)
        loop_quit(userdata, 0);
}

static void
test_finalize_line(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    Session *s = fake_running(w, NULL);
    char id[SESSION_ID_BYTES];
    SessionsWatch *watch;
    Error *e = NULL;
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Manifest mf = STOCKADE__RUNNER__MANIFEST__INIT;

    snprintf(id, sizeof(id), "%s", s->rec.id);
    uint64_t before = s->rec.last_seq;
    assert_int_equal(sessions_watch(w->m, id, on_ended_quit, w->loop, &watch, &e), 0);
    assert_int_equal(sessions_close(w->m, "default", id, &e), 0);
    assert_int_equal(s->state, ST_STOPPING);
    assert_int_equal(fake.sent[STOCKADE__RUNNER__HOST_MSG__BODY_FINALIZE], 1);
    assert_int_equal(fake.releases, 0); /* the runner hands the files over first */
    mf.last = true;
    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_MANIFEST;
    m.manifest = &mf;
    m.req_id = fake.next_req; /* the Finalize's */
    fake_say(s->guest, &m);
    assert_int_equal(s->state, ST_EXTRACTING); /* the merge runs on a worker */
    assert_int_equal(fake.releases, 1);
    assert_int_equal(fake_run(w, 10 * USEC_PER_SEC), 0); /* ended: the watch quit the loop */
    assert_null(sessions_find(w->m, NULL, id));
    assert_int_equal(fake.salvages, 0);
    Moves mv = moves_after(w, id, before);
    assert_int_equal(mv.n, 3);
    assert_string_equal(mv.state[0], "stopping");
    assert_string_equal(mv.reason[0], "closed");
    assert_string_equal(mv.state[1], "extracting");
    assert_string_equal(mv.state[2], "ended");
    sessions_unwatch(w->m, watch);
}

/* ------------------------------------------------------------------ refused moves */

#define REASON(r) (1u << (r))
#define LIVE (((1u << SESSION_END_COUNT_) - 2) & ~REASON(SESSION_END_HOST_RESTART))

/* The table, spelled out: which reasons each move takes (NONE: takes none). */
static uint32_t
expected(SessionState from, SessionState to)
{
    static const struct {
        SessionState from, to;
        uint32_t reasons;
    } t[] = {
        {ST_NEW, ST_PENDING, REASON(SESSION_END_NONE)},
        {ST_NEW, ST_STOPPING, REASON(SESSION_END_HOST_RESTART) | REASON(SESSION_END_HOST_LOST)},
        {ST_NEW, ST_RUNNING, REASON(SESSION_END_NONE)}, /* an adopted guest (session_adopt.c) */
        {ST_PENDING, ST_STARTING, REASON(SESSION_END_NONE)},
        {ST_PENDING, ST_ENDED, LIVE},
        {ST_STARTING, ST_RUNNING, REASON(SESSION_END_NONE)},
        {ST_STARTING, ST_STOPPING, LIVE},
        {ST_RUNNING, ST_STOPPING, LIVE},
        {ST_NEW, ST_PAUSED, REASON(SESSION_END_NONE)}, /* issue 27: pause and resume */
        {ST_RUNNING, ST_PAUSING, REASON(SESSION_END_NONE)},
        {ST_PAUSING, ST_PAUSED, REASON(SESSION_END_NONE)},
        {ST_PAUSING, ST_RUNNING, REASON(SESSION_END_NONE)},
        {ST_PAUSING, ST_STOPPING, LIVE},
        {ST_PAUSED, ST_RESUMING, REASON(SESSION_END_NONE)},
        {ST_PAUSED, ST_STOPPING, LIVE},
        {ST_RESUMING, ST_RUNNING, REASON(SESSION_END_NONE)},
        {ST_RESUMING, ST_STOPPING, LIVE},
        {ST_STOPPING, ST_EXTRACTING, REASON(SESSION_END_NONE)},
        {ST_STOPPING, ST_ENDED, REASON(SESSION_END_NONE)},
        {ST_EXTRACTING, ST_ENDED, REASON(SESSION_END_NONE)},
    };
    for (size_t i = 0; i < ELEMENTSOF(t); i++)
        if (t[i].from == from && t[i].to == to)
            return t[i].reasons;
    return 0;
}

static void
test_table(void **state)
{
    (void) state;
    for (SessionState from = ST_NEW; from < ST_COUNT_; from++)
        for (SessionState to = ST_NEW; to < ST_COUNT_; to++) {
            assert_int_equal(session_state_can_go(from, to), expected(from, to) != 0);
            for (SessionEndReason r = SESSION_END_NONE; r < SESSION_END_COUNT_; r++)
                assert_int_equal(session_state_takes(from, to, r),
                                 (expected(from, to) & REASON(r)) != 0);
        }
    assert_false(session_state_can_go(ST_COUNT_, ST_ENDED)); /* out of range: no move */
    assert_false(session_state_takes(ST_RUNNING, ST_STOPPING, SESSION_END_COUNT_));
    assert_true(session_state_is_ending(ST_STOPPING) && session_state_is_ending(ST_EXTRACTING) &&
                session_state_is_ending(ST_ENDED));
    assert_false(session_state_is_ending(ST_NEW) || session_state_is_ending(ST_PENDING) ||
                 session_state_is_ending(ST_STARTING) || session_state_is_ending(ST_RUNNING));
    assert_false(session_state_is_ending(ST_PAUSING) || session_state_is_ending(ST_PAUSED) ||
                 session_state_is_ending(ST_RESUMING));
}

/* From s's state, every move and reason the table does not take is refused: an error that
 * says so, and nothing changed, in memory or in the store. */
static void
refuses_all_but_the_table(FakeWorld *w, Session *s)
{
    SessionState from = s->state;
    SessionRecord before = s->rec;
    unsigned refused = 0;

    for (SessionState to = ST_NEW; to < ST_COUNT_; to++)
        for (SessionEndReason r = SESSION_END_NONE; r < SESSION_END_COUNT_; r++) {
            if (session_state_takes(from, to, r))
                continue;
            Error *e = NULL;
            assert_int_equal(session_set_state(s, to, r, &e), -1);
            assert_int_equal(e->category, E_INTERNAL);
            assert_non_null(strstr(e->message, "is not a session state transition"));
            error_free(e);
            refused++;
        }
    assert_int_equal(s->state, from);
    assert_int_equal(s->rec.last_seq, before.last_seq); /* no event */
    assert_int_equal(s->rec.end_reason, before.end_reason);
    assert_int_equal(s->rec.ended_usec, before.ended_usec);
    if (from != ST_NEW)
        assert_int_equal(stored(w, s->rec.id).state, from == ST_ENDED ? ST_ENDED : from);
    assert_true(refused >= ST_COUNT_ * SESSION_END_COUNT_ - 2 * SESSION_END_COUNT_);
}

static void
test_refused_moves(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    Error *e = NULL;

    Session *fresh = session_alloc(w->m); /* new: not placed, not recorded */
    snprintf(fresh->rec.id, sizeof(fresh->rec.id), "ses_new");
    refuses_all_but_the_table(w, fresh);
    session_free(fresh);

    Session *pending = fake_create(w, NULL);
    refuses_all_but_the_table(w, pending);
    Session *starting = fake_create(w, NULL);
    (void) starting;
    fake_guest_idle(); /* the first pending one takes it */
    assert_int_equal(pending->state, ST_STARTING);
    refuses_all_but_the_table(w, pending);
    fake_ack(pending->guest, fake.hello_req);
    refuses_all_but_the_table(w, pending); /* running */
    Guest *g = pending->guest;
    assert_int_equal(sessions_cancel(w->m, "default", pending->rec.id, &e), 0);
    refuses_all_but_the_table(w, pending); /* stopping */
    fake_gone(g);
    refuses_all_but_the_table(w, pending); /* extracting */
    fake_salvage_done(NULL);

    /* ended: the setter does not free; the end path does (here, the test) */
    Session *ended = fake_create(w, NULL);
    assert_int_equal(session_set_state(ended, ST_ENDED, SESSION_END_CANCELLED, &e), 0);
    refuses_all_but_the_table(w, ended);
    session_free(ended);
}

/* ------------------------------------------------------------------ watches */

typedef struct {
    Sessions *m;
    unsigned calls;
    SessionsChange last;
    char last_id[SESSION_ID_BYTES];
    SessionsWatch *self;
    bool unwatch;           /* in its first call */
    bool cancel_on_running; /* a call that changes the session again */
} Watcher;

static void
on_change(void *userdata, const SessionsChange *c)
{
    Watcher *wt = userdata;
    wt->calls++;
    wt->last = *c;
    snprintf(wt->last_id, sizeof(wt->last_id), "%s", c->id);
    wt->last.id = wt->last_id;
    if (wt->unwatch) {
        sessions_unwatch(wt->m, wt->self);
        wt->self = NULL;
    }
    if (wt->cancel_on_running && c->to == ST_RUNNING)
        assert_int_equal(sessions_cancel(wt->m, NULL, c->id, NULL), 0);
}

static void
turn(FakeWorld *w)
{
    assert_int_equal(fake_run(w, 5000), 1); /* nothing quits: one short slice of the loop */
}

static void
test_watch(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    Watcher a = {.m = w->m}, gone = {.m = w->m};
    Error *e = NULL;

    Session *s = fake_create(w, NULL);
    char id[SESSION_ID_BYTES];
    snprintf(id, sizeof(id), "%s", s->rec.id);
    assert_int_equal(sessions_watch(w->m, id, on_change, &a, &a.self, &e), 0);
    assert_int_equal(
        sessions_watch(w->m, "ses_nosuchsessionaaaaaaaaaaa", on_change, &gone, &gone.self, &e), 0);
    fake_guest_idle();
    assert_int_equal(s->state, ST_STARTING);
    assert_int_equal(a.calls, 0); /* never inside the change */
    turn(w);
    assert_int_equal(a.calls, 1);
    assert_string_equal(a.last.id, id);
    assert_int_equal(a.last.from, ST_PENDING);
    assert_int_equal(a.last.to, ST_STARTING);

    fake_ack(s->guest, fake.hello_req); /* running ... */
    Guest *g = s->guest;
    assert_int_equal(sessions_cancel(w->m, "default", id, &e), 0); /* ... stopping, one turn */
    turn(w);
    assert_int_equal(a.calls, 2); /* folded */
    assert_int_equal(a.last.from, ST_STARTING);
    assert_int_equal(a.last.to, ST_STOPPING);
    assert_int_equal(a.last.reason, SESSION_END_CANCELLED);

    Error *refused = NULL; /* a refused move is no change */
    assert_int_equal(session_set_state(s, ST_RUNNING, SESSION_END_NONE, &refused), -1);
    error_free(refused);
    turn(w);
    assert_int_equal(a.calls, 2);

    fake_gone(g);
    fake_salvage_done(NULL); /* extracting, ended: freed */
    turn(w);
    assert_int_equal(a.calls, 3);
    assert_int_equal(a.last.from, ST_STOPPING);
    assert_int_equal(a.last.to, ST_ENDED);
    assert_int_equal(a.last.reason, SESSION_END_CANCELLED);
    assert_int_equal(gone.calls, 0); /* a session that does not exist never changes */
    sessions_unwatch(w->m, a.self);
    sessions_unwatch(w->m, gone.self);
    sessions_unwatch(w->m, NULL);
}

/* A watch dropped in its own call hears no more; one whose call cancels the session hears
 * that too, in the same turn. */
static void
test_watch_calls_back_in(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    Watcher once = {.m = w->m, .unwatch = true}, canceller = {.m = w->m, .cancel_on_running = true};
    Error *e = NULL;

    Session *s = fake_create(w, NULL);
    char id[SESSION_ID_BYTES];
    snprintf(id, sizeof(id), "%s", s->rec.id);
    assert_int_equal(sessions_watch(w->m, id, on_change, &once, &once.self, &e), 0);
    assert_int_equal(sessions_watch(w->m, id, on_change, &canceller, &canceller.self, &e), 0);
    fake_guest_idle();
    turn(w);
    fake_ack(s->guest, fake.hello_req);
    turn(w);
    assert_int_equal(once.calls, 1);
    assert_null(once.self);
    assert_int_equal(canceller.calls, 3); /* starting, running, then its own cancel */
    assert_int_equal(canceller.last.from, ST_RUNNING);
    assert_int_equal(canceller.last.to, ST_STOPPING);
    assert_int_equal(s->state, ST_STOPPING);
    assert_int_equal(s->rec.end_reason, SESSION_END_CANCELLED);
    sessions_unwatch(w->m, canceller.self);
}

static void
test_watch_cap(void **state)
{
    Fixture *fx = *state;
    FakeWorld *w = &fx->w;
    static SessionsWatch *v[SESSIONS_WATCHES_MAX];
    SessionsWatch *more;
    Watcher x = {.m = w->m};
    Error *e = NULL;

    for (size_t i = 0; i < SESSIONS_WATCHES_MAX; i++)
        assert_int_equal(sessions_watch(w->m, "ses_x", on_change, &x, &v[i], &e), 0);
    assert_int_equal(sessions_watch(w->m, "ses_x", on_change, &x, &more, &e), -1);
    assert_int_equal(e->category, E_UNAVAILABLE);
    error_free(e);
    e = NULL;
    sessions_unwatch(w->m, v[0]);
    assert_int_equal(sessions_watch(w->m, "ses_x", on_change, &x, &v[0], &e), 0);
    for (size_t i = 0; i < SESSIONS_WATCHES_MAX / 2; i++)
        sessions_unwatch(w->m, v[i]); /* the rest go with the module */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test_setup_teardown(test_main_line, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_pending_ends_unbound, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_starting_guest_fails, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_earlier_run_recorded, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_earlier_run_paused, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_finalize_line, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_refused_moves, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_watch, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_watch_calls_back_in, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_watch_cap, setup, fake_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
