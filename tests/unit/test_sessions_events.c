/* hostd/sessions driven through its real mirror, event and end code into a real SQLite store.
 *
 * The cap on events a session's workload can make without limit (issue 14): 10^5
 * FileChanged{removed} records and a few over-budget ones, as a runner sends them for a task
 * that made and removed 100 000 files. At most max_guest_events + 2 rows are stored (the
 * recorded ones and two events.suppressed), and the count of the others is exact, in the
 * final event and in the session's record.
 *
 * Nothing from the guest after a session's end (API.md, cancel): frames of every kind that
 * arrive after the cancel's session.state event, between repeated cancels, are dropped. The
 * session is the real module's, on the fake host of sessions_fake.c: the end path runs for
 * real up to the pool, and the guest stays "being destroyed".
 *
 * A finalize the runner never answers (issue 13): a completed task's clean end asks the
 * runner to finalize (the fake channel answers nothing) and the loop runs for real; the
 * deadline gives way to the salvage (the guest is released, the fallback counted with its
 * reason) no earlier than finalize_base and well before twice it.
 * A lying runner that never sends its manifest (issue 25, finding 4): junk FileChanged records
 * the mirror ignores, streamed without end, no longer move the deadline; records it stores do,
 * but never past the session's reserved lifetime; a cancel during the finalize gives way to
 * the salvage at once.
 *
 * A task cancelled during its upload ends cancelled, once (issue 26).
 *
 * Never a guest without what the session was admitted with (issue 17): when its egress
 * cannot be set up (egress_session_new wrapped to fail: an allocation in another module, the
 * one link-time seam left), the guest gets no Hello and the session ends host_error. And the
 * state transition table itself (every move is driven in test_sessions_states.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "eventhub.h"
#include "render.h"
#include "runner_limits.h"
#include "sessions_fake.h"
#include "testlib.h"
#include "timeutil.h"

#define CAP 1000
#define REMOVED 100000
#define OVER_BUDGET 10

typedef struct {
    FakeWorld w;
    Session *s;      /* running, on a fake guest */
    uint64_t before; /* its last seq once running: what the tests look at comes after */
} Fixture;

static void
tune(SessionsConfig *c)
{
    c->max_guest_events = CAP;
}

static int
setup(void **state)
{
    static Fixture fx;

    fake_world_open(&fx.w, tune);
    fx.s = fake_running(&fx.w, NULL);
    fx.before = fx.s->rec.last_seq;
    *state = &fx;
    return 0;
}

static void
file_changed(Session *s, const char *path, bool removed)
{
    Stockade__Runner__FileChanged c = STOCKADE__RUNNER__FILE_CHANGED__INIT;
    c.path = (char *) path;
    c.removed = removed;
    c.over_budget = !removed;
    c.size = removed ? 0 : 1u << 30;
    session_mirror_on_changed(s, &c);
}

static json_int_t
attr_int(const EventRecord *ev, const char *key)
{
    json_t *o = json_loads(ev->attrs, 0, NULL);
    json_t *v = json_object_get(o, key);
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
    json_decref(o);
    return n;
}

/* Every stored event of the session after seq `after`, page by page (a read returns at most a
 * page). */
static size_t
count_events(Store *store, const char *id, uint64_t after)
{
    size_t total = 0, n;
    Error *e = NULL;
    do {
        EventRecord *v = NULL;
        assert_int_equal(store_events_read(store, id, after, 1000, &v, &n, &e), 0);
        if (n > 0)
            after = v[n - 1].seq;
        total += n;
        event_records_free(v, n);
    } while (n > 0);
    return total;
}

static void
test_removed_files_are_capped(void **state)
{
    Fixture *fx = *state;
    Session *s = fx->s;
    Store *store = fx->w.store;
    Error *e = NULL;
    char path[32];

    for (unsigned i = 0; i < REMOVED; i++) {
        snprintf(path, sizeof(path), "f%u", i);
        file_changed(s, path, true);
        if (i % 10000 == 0) /* over-budget files count against the same cap */
            file_changed(s, path, false);
    }
    session_guest_events_summary(s); /* what releasing the guest does */
    assert_int_equal(store_session_update(store, &s->rec, &e), 0);
    assert_int_equal(store_commit(store, &e), 0);

    size_t stored = count_events(store, s->rec.id, fx->before);
    printf("# %u records sent, %zu events stored (cap %d)\n", REMOVED + OVER_BUDGET, stored, CAP);
    assert_true(stored <= CAP + 2);

    EventRecord *v = NULL;
    size_t n = 0, changed = 0, suppressed = 0;
    assert_int_equal(store_events_read(store, s->rec.id, fx->before, CAP + 2, &v, &n, &e), 0);
    assert_int_equal(n, stored);
    const uint64_t dropped = REMOVED + OVER_BUDGET - CAP;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].type, "file.changed") == 0) {
            changed++;
        } else {
            assert_string_equal(v[i].type, "events.suppressed");
            assert_int_equal(attr_int(&v[i], "after"), CAP);
            /* the first one when the cap is hit (no count yet), the last one with the count */
            json_int_t want = suppressed++ == 0 ? -1 : (json_int_t) dropped;
            assert_int_equal(attr_int(&v[i], "suppressed"), want);
        }
    }
    assert_int_equal(changed, CAP);
    assert_int_equal(suppressed, 2);
    assert_string_equal(v[n - 1].type, "events.suppressed");
    event_records_free(v, n);

    SessionRecord r;
    assert_int_equal(store_session_get(store, s->rec.id, &r, &e), 0);
    assert_int_equal(r.events_suppressed, dropped);
    json_t *o = render_session(&r);
    assert_int_equal(json_integer_value(json_object_get(o, "events_suppressed")), dropped);
    json_decref(o);
    session_record_clear(&r);
}

/* Below the cap nothing changes: every event is stored, no events.suppressed. */
static void
test_below_cap_all_recorded(void **state)
{
    Fixture *fx = *state;
    Session *s = fx->s;
    Store *store = fx->w.store;
    Error *e = NULL;

    for (unsigned i = 0; i < CAP; i++)
        file_changed(s, "again", true);
    session_guest_events_summary(s);
    assert_int_equal(store_commit(store, &e), 0);
    assert_int_equal(count_events(store, s->rec.id, fx->before), CAP);
    EventRecord *v = NULL;
    size_t n = 0;
    assert_int_equal(store_events_read(store, s->rec.id, fx->before, CAP, &v, &n, &e), 0);
    assert_int_equal(n, CAP);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(v[i].type, "file.changed");
    assert_int_equal(s->rec.events_suppressed, 0);
    event_records_free(v, n);
}

/* ------------------------------------------------------------------ after the end */

/* Straight to the session's handler, as frames already read from the channel would come:
 * the pool itself stops delivering once the guest is released. */
static void
guest_sends(Session *s, GuestMsg *m)
{
    session_guest_ops.message(s->guest, m, s);
}

/* Every kind of frame a guest can send, each as the live session would act on it: output on
 * both streams, the start and the exit of the running exec (its request id), a file's last
 * chunk, an unsolicited error (a guest.error event), the replies an operation waits for
 * (ack, file data, a listing, a pong, a ready), a manifest, and the four tunnel frames
 * (a tunnel frame in a session without egress ends it guest_error). Returns how many kinds
 * it sent: the caller checks that is every case of GuestMsg's body. */
static size_t
guest_sends_everything(Session *s, uint32_t exec_id, uint32_t req_id)
{
    Stockade__Runner__Ready ready = STOCKADE__RUNNER__READY__INIT;
    Stockade__Runner__Ack ack = STOCKADE__RUNNER__ACK__INIT;
    Stockade__Runner__ExecStarted st = STOCKADE__RUNNER__EXEC_STARTED__INIT;
    Stockade__Runner__Output o = STOCKADE__RUNNER__OUTPUT__INIT, e = STOCKADE__RUNNER__OUTPUT__INIT;
    Stockade__Runner__ExecExit x = STOCKADE__RUNNER__EXEC_EXIT__INIT;
    Stockade__Runner__FileData fd = STOCKADE__RUNNER__FILE_DATA__INIT;
    Stockade__Runner__FsResult fs = STOCKADE__RUNNER__FS_RESULT__INIT;
    Stockade__Runner__FileChanged fc = STOCKADE__RUNNER__FILE_CHANGED__INIT;
    Stockade__Runner__Error er = STOCKADE__RUNNER__ERROR__INIT;
    Stockade__Runner__Pong pong = STOCKADE__RUNNER__PONG__INIT;
    Stockade__Runner__TunnelOpen to = STOCKADE__RUNNER__TUNNEL_OPEN__INIT;
    Stockade__Runner__TunnelData td = STOCKADE__RUNNER__TUNNEL_DATA__INIT;
    Stockade__Runner__TunnelCredit tc = STOCKADE__RUNNER__TUNNEL_CREDIT__INIT;
    Stockade__Runner__TunnelClose tx = STOCKADE__RUNNER__TUNNEL_CLOSE__INIT;
    Stockade__Runner__Manifest mf = STOCKADE__RUNNER__MANIFEST__INIT;

    o.exec_id = e.exec_id = st.exec_id = x.exec_id = exec_id;
    o.data.data = e.data.data = (uint8_t *) "late\n";
    o.data.len = e.data.len = 5;
    e.stream = STOCKADE__RUNNER__OUTPUT__STREAM__STDERR;
    st.pid = 42;
    fd.data.data = (uint8_t *) "late";
    fd.data.len = fd.size = 4;
    fd.eof = true;
    fc.path = (char *) "late.txt";
    fc.size = fc.data.len = 4;
    fc.data.data = (uint8_t *) "late";
    fc.last = true;
    er.message = (char *) "late";
    er.code = STOCKADE__RUNNER__ERROR__CODE__BAD_MESSAGE;
    to.stream_id = td.stream_id = tc.stream_id = tx.stream_id = 1;
    to.host = (char *) "pypi.org";
    to.port = 443;
    td.data.data = (uint8_t *) "x";
    td.data.len = tc.bytes = 1;
    mf.last = true;
    GuestMsg kinds[] = {
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_READY, .ready = &ready},
        {.req_id = req_id, .body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_ACK, .ack = &ack},
        {.req_id = req_id,
         .body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED,
         .exec_started = &st},
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT, .output = &o},
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT, .exec_exit = &x},
        {.req_id = req_id,
         .body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_DATA,
         .file_data = &fd},
        {.req_id = req_id,
         .body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT,
         .fs_result = &fs},
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_CHANGED, .file_changed = &fc},
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR, .error = &er},
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_PONG, .pong = &pong},
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_OPEN, .tunnel_open = &to},
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_DATA, .tunnel_data = &td},
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CREDIT, .tunnel_credit = &tc},
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CLOSE, .tunnel_close = &tx},
        {.req_id = req_id,
         .body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_MANIFEST,
         .manifest = &mf},
        /* and stderr, a second stream of the same kind */
        {.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT, .output = &e},
    };
    bool seen[64] = {false};
    size_t n_kinds = 0;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        guest_sends(s, &kinds[i]);
        n_kinds += !seen[kinds[i].body_case];
        seen[kinds[i].body_case] = true;
    }
    return n_kinds;
}

/* An exec of s, started on the runner: its id. */
static uint32_t
exec_running(Fixture *fx, Session *s)
{
    char *argv[] = {"sh"};
    ExecSpec spec = {.argv = argv, .argc = 1};
    Stockade__Runner__ExecStarted st = STOCKADE__RUNNER__EXEC_STARTED__INIT;
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    uint32_t id;
    Error *e = NULL;

    assert_int_equal(sessions_exec(fx->w.m, "default", s->rec.id, &spec, &id, &e), 0);
    st.exec_id = id;
    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED;
    m.exec_started = &st;
    m.req_id = fake.next_req; /* the Exec's */
    guest_sends(s, &m);
    SessionsExecState es;
    assert_int_equal(sessions_exec_state(fx->w.m, "default", s->rec.id, id, &es, &e), 0);
    assert_int_equal(es, SESSIONS_EXEC_RUNNING);
    return id;
}

static void
test_nothing_from_the_guest_after_a_cancel(void **state)
{
    Fixture *fx = *state;
    Session *s = fx->s;
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Output o = STOCKADE__RUNNER__OUTPUT__INIT;
    uint32_t exec_id = exec_running(fx, s), exec_req = fake.next_req;
    uint64_t before = s->rec.last_seq;

    o.exec_id = exec_id;
    o.data.data = (uint8_t *) "before\n";
    o.data.len = 7;
    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT;
    m.output = &o;
    guest_sends(s, &m); /* the control: a live session records it */
    /* GuestMsg's fields: req_id, then one per kind of body. */
    const size_t all_kinds = stockade__runner__guest_msg__descriptor.n_fields - 1;
    for (int i = 0; i < 3; i++) {
        session_end(s, SESSION_END_CANCELLED);
        /* a tight loop's frames, already on the channel */
        assert_int_equal(guest_sends_everything(s, exec_id, exec_req), all_kinds);
    }

    size_t n = 0;
    EventRecord *v = fake_events(&fx->w, s->rec.id, before, &n);
    for (size_t i = 0; i < n; i++)
        printf("# event %zu: %s %s\n", i, v[i].type, v[i].attrs ? v[i].attrs : "");
    assert_int_equal(n, 2);
    assert_string_equal(v[0].type, "exec.stdout");
    assert_string_equal(v[1].type, "session.state");
    assert_non_null(strstr(v[1].attrs, "\"cancelled\""));
    event_records_free(v, n);
    assert_int_equal(fake.releases, 1); /* one destroy, whatever the number of cancels */
    assert_int_equal(s->rec.output_bytes, 7);
}

/* ------------------------------------------------------------------ finalize deadline */

#define FINALIZE_BASE_USEC 300000

static void
test_finalize_never_answered(void **state)
{
    Fixture *fx = *state;
    Session *s = fx->s;
    Sessions *m = fx->w.m;

    m->cfg.finalize_base_usec = FINALIZE_BASE_USEC;
    m->cfg.finalize_usec_per_mib = 0;
    fake.quit_on_release = fx->w.loop;

    uint64_t t0 = now_usec();
    session_end(s, SESSION_END_COMPLETED);
    assert_int_equal(fake.sent[STOCKADE__RUNNER__HOST_MSG__BODY_FINALIZE], 1);
    assert_int_equal(fake.releases, 0); /* the guest is kept while the runner finalizes */
    assert_int_equal(fake_run(&fx->w, 20 * FINALIZE_BASE_USEC), 0); /* the release quit it */
    uint64_t took = now_usec() - t0;
    printf("# finalize never answered: salvage after %.0f ms (deadline %d ms)\n",
           (double) took / 1000.0, FINALIZE_BASE_USEC / 1000);
    assert_int_equal(fake.releases, 1);
    assert_non_null(session_salvage_fallback(s));
    assert_string_equal(session_salvage_fallback(s), "deadline");
    assert_int_equal(m->stats.finalize_fallbacks, 1);
    assert_true(took >= FINALIZE_BASE_USEC);
    assert_null(s->fin);
}

/* A lying runner: FileChanged records on a timer, for ever, and never a manifest. */
typedef struct {
    Session *s;
    Loop *loop;
    bool store;    /* records the mirror keeps (new small files) rather than ones it ignores */
    unsigned sent; /* records sent */
    uint64_t period_usec;
} Liar;

#define LIAR_RECORDS_PER_TICK 8
static uint8_t liar_chunk[FILE_CHUNK_MAX_BYTES];

static void
liar_tick(Loop *l, void *userdata)
{
    Liar *z = userdata;
    Stockade__Runner__FileChanged c = STOCKADE__RUNNER__FILE_CHANGED__INIT;
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    char path[32];

    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_CHANGED;
    m.file_changed = &c;
    for (unsigned i = 0; i < LIAR_RECORDS_PER_TICK && z->s->fin; i++, z->sent++) {
        snprintf(path, sizeof(path), "junk%u", z->sent);
        c.path = path;
        c.data.data = liar_chunk;
        if (z->store) { /* a whole small file: stored, its 4 KiB count */
            c.size = c.data.len = 4096;
            c.last = true;
        } else { /* a full chunk the mirror ignores: over budget, or out of sequence */
            c.size = 1u << 30;
            c.data.len = FILE_CHUNK_MAX_BYTES;
            c.over_budget = z->sent % 2 == 0;
            c.offset = c.over_budget ? 0 : FILE_CHUNK_MAX_BYTES;
        }
        guest_sends(z->s, &m);
    }
    if (z->s->fin) /* until the finalize gives way */
        (void) loop_add_timer(l, now_usec() + z->period_usec, liar_tick, z);
}

static void
finalize_config(Fixture *fx, uint64_t base_usec, unsigned usec_per_mib)
{
    fx->w.m->cfg.finalize_base_usec = base_usec;
    fx->w.m->cfg.finalize_usec_per_mib = usec_per_mib;
}

/* A running session whose reserved lifetime ends lifetime_usec after now. */
static Session *
session_with_lifetime(Fixture *fx, uint64_t lifetime_usec)
{
    SessionSpec spec = {
        .tenant_id = "default", .pool = "minimal", .mirror = true, .timeout_usec = lifetime_usec};
    return fake_running(&fx->w, &spec);
}

/* Runs the loop until the guest is released; 0 when it was, 1 when the guard quit first. */
static int
run_until_release(Fixture *fx, uint64_t guard_usec)
{
    fake.quit_on_release = fx->w.loop;
    int r = fake_run(&fx->w, guard_usec);
    fake.quit_on_release = NULL;
    return r;
}

/* Junk records moved the deadline by 100 ms per MiB each, stored or not: 8 full chunks every
 * 50 ms moved it 200 ms every 50 ms, and the finalize (slot, vCPUs) never ended. Only what the
 * mirror keeps moves it now: it ends at its base, as if the runner had said nothing. */
static void
test_finalize_junk_records_do_not_extend(void **state)
{
    Fixture *fx = *state;
    Session *s = fx->s;
    Liar z = {.s = s, .loop = fx->w.loop, .period_usec = 50000};

    finalize_config(fx, FINALIZE_BASE_USEC, SESSIONS_FINALIZE_USEC_PER_MIB);
    uint64_t t0 = now_usec();
    session_end(s, SESSION_END_COMPLETED);
    assert_int_equal(fake.sent[STOCKADE__RUNNER__HOST_MSG__BODY_FINALIZE], 1);
    liar_tick(fx->w.loop, &z);
    int r = run_until_release(fx, 20 * FINALIZE_BASE_USEC);
    printf("# %u junk records (%u MiB claimed) during the finalize: %s after %.0f ms "
           "(base %d ms)\n",
           z.sent, (unsigned) ((uint64_t) z.sent * FILE_CHUNK_MAX_BYTES >> 20),
           r == 0 ? "salvage" : "STILL FINALIZING", (double) (now_usec() - t0) / 1000.0,
           FINALIZE_BASE_USEC / 1000);
    assert_int_equal(r, 0); /* released, not the guard */
    assert_int_equal(fake.releases, 1);
    assert_string_equal(session_salvage_fallback(s), "deadline");
    assert_int_equal(session_mirror_bytes(s), 0); /* nothing was stored: nothing moved it */
    assert_null(s->fin);
}

/* Records the mirror keeps still move the deadline (an honest runner's last flush), but
 * never past the session's reserved lifetime: the guest never outlives what was reserved. */
static void
test_finalize_ends_by_the_reserved_lifetime(void **state)
{
    Fixture *fx = *state;
    /* reserved: ends 3 x base from now */
    Session *s = session_with_lifetime(fx, 3 * FINALIZE_BASE_USEC);
    Liar z = {.s = s, .loop = fx->w.loop, .store = true, .period_usec = 50000};

    /* each 4 KiB stored moves the deadline 1 s: 8 a tick outrun any clock */
    finalize_config(fx, FINALIZE_BASE_USEC, 256u * 1000000u);
    uint64_t t0 = now_usec();
    session_end(s, SESSION_END_COMPLETED);
    liar_tick(fx->w.loop, &z);
    int r = run_until_release(fx, 20 * FINALIZE_BASE_USEC);
    printf("# %u records stored (%llu KiB) during the finalize: %s after %.0f ms (lifetime "
           "ends %.0f ms after the start)\n",
           z.sent, (unsigned long long) (session_mirror_bytes(s) >> 10),
           r == 0 ? "salvage" : "STILL FINALIZING", (double) (now_usec() - t0) / 1000.0,
           (double) (session_lifetime_end_usec(s) - t0) / 1000.0);
    assert_int_equal(r, 0);
    assert_int_equal(fake.releases, 1);
    assert_string_equal(session_salvage_fallback(s), "deadline");
    assert_true(session_mirror_bytes(s) > 0); /* they were stored: they did move the deadline */
    assert_true(now_usec() >= session_lifetime_end_usec(s));
}

/* A cancel during a finalize stops waiting on the runner: the guest goes at once. */
static void
test_cancel_during_finalize_salvages(void **state)
{
    Fixture *fx = *state;
    Session *s = fx->s;
    Sessions *m = fx->w.m;
    Error *e = NULL;

    finalize_config(fx, 3600ull * 1000000, 0); /* the deadline alone would be an hour away */
    session_end(s, SESSION_END_COMPLETED);
    assert_non_null(s->fin);
    assert_int_equal(fake.releases, 0);
    assert_int_equal(sessions_close(m, "default", s->rec.id, &e), 0);
    assert_int_equal(fake.releases, 0); /* a close waits for the clean end as before */
    assert_int_equal(sessions_cancel(m, "default", s->rec.id, &e), 0);
    assert_int_equal(fake.releases, 1); /* the guest is destroyed now, its disk salvaged */
    assert_null(s->fin);
    assert_string_equal(session_salvage_fallback(s), "cancelled");
    assert_int_equal(m->stats.finalize_fallbacks, 1);
    assert_int_equal(sessions_cancel(m, "default", s->rec.id, &e), 0);
    assert_int_equal(fake.releases, 1); /* once: the guest is already going */
    /* the first reason stays */
    assert_int_equal(s->rec.end_reason, SESSION_END_COMPLETED);
}

/* A task cancelled while its files go in: the upload fails because the session stops, and
 * that failure decides no second end. It did: the op's failure ended the task "failed" inside
 * the cancel, which then made stopping -> stopping and released the guest a second time. */
static void
test_cancel_during_task_upload(void **state)
{
    Fixture *fx = *state;
    TaskFile files[] = {{.path = "in/a.txt", .data = (uint8_t *) "x", .len = 1}};
    char *argv[] = {"true"};
    SessionSpec spec = {.tenant_id = "default",
                        .pool = "minimal",
                        .mirror = true,
                        .is_task = true,
                        .argv = argv,
                        .argc = 1,
                        .files = files,
                        .n_files = 1};
    Session *s = fake_running(&fx->w, &spec); /* its upload began: one op waits on the runner */
    uint64_t before = s->rec.last_seq;

    assert_int_equal(fake.sent[STOCKADE__RUNNER__HOST_MSG__BODY_FS_OP], 1); /* in/ first */
    unsigned released = fake.releases;
    session_end(s, SESSION_END_CANCELLED);
    assert_int_equal(fake.releases, released + 1);
    assert_int_equal(s->state, ST_STOPPING);
    assert_int_equal(s->rec.end_reason, SESSION_END_CANCELLED);
    size_t n = 0;
    unsigned states = 0;
    EventRecord *v = fake_events(&fx->w, s->rec.id, before, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].type, "session.state") == 0) {
            states++;
            assert_non_null(strstr(v[i].attrs, "\"cancelled\""));
        }
    event_records_free(v, n);
    assert_int_equal(states, 1);
}

/* ------------------------------------------------------------------ bind failures */

int __wrap_egress_session_new(Loop *l, EgressResolver *r, const EgressPolicy *allowed,
                              const EgressLimits *lim, const EgressOps *ops, void *userdata,
                              EgressSession **ret, Error **errp);
int
__wrap_egress_session_new(Loop *l, EgressResolver *r, const EgressPolicy *allowed,
                          const EgressLimits *lim, const EgressOps *ops, void *userdata,
                          EgressSession **ret, Error **errp)
{
    (void) l, (void) r, (void) allowed, (void) lim, (void) ops, (void) userdata;
    *ret = NULL;
    return error_set(errp, E_INTERNAL, ENOMEM, "injected: egress session");
}

static void
tune_egress(SessionsConfig *c)
{
    Error *e = NULL;
    assert_int_equal(egress_policy_add(&c->egress.allowed, "example.com", &e), 0);
}

static void
test_no_guest_without_its_egress(void **state)
{
    Fixture *fx = *state;
    SessionSpec spec = {
        .tenant_id = "default", .pool = "minimal", .mirror = true, .egress_all = true};

    fake_world_close(&fx->w); /* a server that allows some egress */
    fake_world_open(&fx->w, tune_egress);
    Session *s = fake_create(&fx->w, &spec);
    uint64_t before = s->rec.last_seq;
    fake_guest_idle();
    assert_int_equal(fake.takes, 1);
    assert_int_equal(fake.hellos, 0);   /* the runner was never told to start the session */
    assert_int_equal(fake.releases, 1); /* the guest goes */
    assert_null(s->egress);

    size_t n = 0;
    bool ended_host_error = false;
    EventRecord *v = fake_events(&fx->w, s->rec.id, before, &n);
    for (size_t i = 0; i < n; i++)
        ended_host_error |= strcmp(v[i].type, "session.state") == 0 &&
                            strstr(v[i].attrs, "\"host_error\"") != NULL;
    event_records_free(v, n);
    assert_true(ended_host_error);
}

/* The transition table (API.md "Sessions"): nothing leaves ended, nothing skips stopping
 * once a guest ran, nothing goes back. */
static void
test_state_transitions(void **state)
{
    (void) state;
    static const SessionState order[] = {ST_PENDING,  ST_STARTING,   ST_RUNNING,
                                         ST_STOPPING, ST_EXTRACTING, ST_ENDED};
    for (size_t i = 0; i + 1 < ELEMENTSOF(order); i++)
        assert_true(session_state_can_go(order[i], order[i + 1])); /* the main line */
    for (size_t i = 0; i < ELEMENTSOF(order); i++)
        for (size_t j = 0; j <= i; j++)
            assert_false(session_state_can_go(order[i], order[j])); /* never back, nor stay */
    for (size_t i = 0; i < ELEMENTSOF(order); i++)
        assert_false(session_state_can_go(ST_ENDED, order[i]));
    assert_true(session_state_can_go(ST_PENDING, ST_ENDED));     /* ended unbound */
    assert_true(session_state_can_go(ST_STARTING, ST_STOPPING)); /* its guest failed */
    assert_true(session_state_can_go(ST_STOPPING, ST_ENDED));    /* no disk to read */
    assert_false(session_state_can_go(ST_RUNNING, ST_ENDED));    /* a live guest stops first */
    assert_false(session_state_can_go(ST_PENDING, ST_RUNNING));  /* only through a Hello */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_removed_files_are_capped, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_below_cap_all_recorded, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_nothing_from_the_guest_after_a_cancel, setup,
                                        fake_teardown),
        cmocka_unit_test_setup_teardown(test_finalize_never_answered, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_finalize_junk_records_do_not_extend, setup,
                                        fake_teardown),
        cmocka_unit_test_setup_teardown(test_finalize_ends_by_the_reserved_lifetime, setup,
                                        fake_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_during_finalize_salvages, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_during_task_upload, setup, fake_teardown),
        cmocka_unit_test_setup_teardown(test_no_guest_without_its_egress, setup, fake_teardown),
        cmocka_unit_test(test_state_transitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
