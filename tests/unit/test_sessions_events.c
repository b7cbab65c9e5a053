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
 * guest is a token pointer: pool_release() is wrapped at link time (sessions.cmake) so the
 * end path runs for real up to the pool and the guest stays "being destroyed".
 *
 * A finalize the runner never answers (issue 13): a completed task's clean end asks the
 * runner to finalize (guest_send is wrapped: the request goes nowhere) and the loop runs for
 * real; the deadline gives way to the salvage (the guest is released, the fallback counted
 * with its reason) no earlier than finalize_base and well before twice it.
 * A lying runner that never sends its manifest (issue 25, finding 4): junk FileChanged records
 * the mirror ignores, streamed without end, no longer move the deadline; records it stores do,
 * but never past the session's reserved lifetime; a cancel during the finalize gives way to
 * the salvage at once.
 *
 * Never a guest without what the session was admitted with (issue 17): when its egress
 * cannot be set up (egress_session_new wrapped to fail), the guest gets no Hello and the
 * session ends host_error. And the state transition table itself. */
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
#include "session_internal.h"
#include "testlib.h"
#include "timeutil.h"

#define CAP 1000
#define REMOVED 100000
#define OVER_BUDGET 10

typedef struct {
    char *dir;
    Loop *loop;
    Store *store;
    Sessions m;
    Session s;
} Fixture;

static int
setup(void **state)
{
    static Fixture fx;
    char path[512];
    Error *e = NULL;

    memset(&fx, 0, sizeof(fx));
    fx.dir = test_mkdtemp("stockade-sessions-events");
    snprintf(path, sizeof(path), "%s/stockade.db", fx.dir);
    assert_int_equal(loop_new(&fx.loop, &e), 0);
    assert_int_equal(store_open(path, &fx.store, &e), 0);
    sessions_config_defaults(&fx.m.cfg);
    fx.m.cfg.max_guest_events = CAP;
    fx.m.loop = fx.loop;
    fx.m.store = fx.store;
    fx.m.artifacts_dir = fx.dir;
    assert_int_equal(eventhub_new(&fx.m.hub, &e), 0); /* commits publish to followers */

    Session *s = &fx.s;
    s->mgr = &fx.m;
    s->state = ST_RUNNING;
    s->accepting = true;
    s->mirror.fd = -1;
    snprintf(s->rec.id, sizeof(s->rec.id), "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa");
    snprintf(s->rec.tenant_id, sizeof(s->rec.tenant_id), "default");
    snprintf(s->rec.kind, sizeof(s->rec.kind), "task");
    snprintf(s->rec.pool, sizeof(s->rec.pool), "minimal");
    snprintf(s->rec.state, sizeof(s->rec.state), "running");
    s->rec.timeout_usec = 60000000;
    assert_int_equal(store_session_insert(fx.store, &s->rec, &e), 0);
    snprintf(path, sizeof(path), "%s/%s", fx.dir, s->rec.id); /* the mirror's folders */
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/%s/files", fx.dir, s->rec.id);
    assert_int_equal(mkdir(path, 0700), 0);
    *state = &fx;
    return 0;
}

static int
teardown(void **state)
{
    Fixture *fx = *state;
    store_close(fx->store);
    eventhub_free(fx->m.hub);
    loop_free(fx->loop);
    test_rm_rf(fx->dir);
    free(fx->dir);
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
    mirror_on_changed(s, &c);
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

/* Every stored event of the session, page by page (a read returns at most a page). */
static size_t
count_events(Store *store, const char *id)
{
    uint64_t after = 0;
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
    Session *s = &fx->s;
    Error *e = NULL;
    char path[32];

    for (unsigned i = 0; i < REMOVED; i++) {
        snprintf(path, sizeof(path), "f%u", i);
        file_changed(s, path, true);
        if (i % 10000 == 0) /* over-budget files count against the same cap */
            file_changed(s, path, false);
    }
    session_guest_events_summary(s); /* what releasing the guest does */
    assert_int_equal(store_session_update(fx->store, &s->rec, &e), 0);
    assert_int_equal(store_commit(fx->store, &e), 0);

    size_t stored = count_events(fx->store, s->rec.id);
    printf("# %u records sent, %zu events stored (cap %d)\n", REMOVED + OVER_BUDGET, stored, CAP);
    assert_true(stored <= CAP + 2);

    EventRecord *v = NULL;
    size_t n = 0, changed = 0, suppressed = 0;
    assert_int_equal(store_events_read(fx->store, s->rec.id, 0, CAP + 2, &v, &n, &e), 0);
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
    assert_int_equal(store_session_get(fx->store, s->rec.id, &r, &e), 0);
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
    Session *s = &fx->s;
    Error *e = NULL;

    for (unsigned i = 0; i < CAP; i++)
        file_changed(s, "again", true);
    session_guest_events_summary(s);
    assert_int_equal(store_commit(fx->store, &e), 0);
    assert_int_equal(count_events(fx->store, s->rec.id), CAP);
    EventRecord *v = NULL;
    size_t n = 0;
    assert_int_equal(store_events_read(fx->store, s->rec.id, 0, CAP, &v, &n, &e), 0);
    assert_int_equal(n, CAP);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(v[i].type, "file.changed");
    assert_int_equal(s->rec.events_suppressed, 0);
    event_records_free(v, n);
}

/* ------------------------------------------------------------------ after the end */

static unsigned releases;
static Loop *quit_on_release; /* set: a release ends loop_run() */

void __wrap_pool_release(Pool *p, Guest *g, GuestGoneFn gone, void *userdata);
void
__wrap_pool_release(Pool *p, Guest *g, GuestGoneFn gone, void *userdata)
{
    (void) p, (void) g, (void) gone, (void) userdata;
    releases++; /* the destroy is under way; the gone callback never comes here */
    if (quit_on_release)
        loop_quit(quit_on_release, 0);
}

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

static void
test_nothing_from_the_guest_after_a_cancel(void **state)
{
    Fixture *fx = *state;
    Session *s = &fx->s;
    Error *e = NULL;
    static char token_guest; /* never dereferenced: pool_release() is wrapped */
    Exec ex = {.id = 1, .req_id = 7, .running = true, .session = s};
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Output o = STOCKADE__RUNNER__OUTPUT__INIT;

    s->execs = &ex;
    s->guest = (Guest *) &token_guest;
    s->output_limit_bytes = 1 << 20;
    releases = 0;
    o.exec_id = ex.id;
    o.data.data = (uint8_t *) "before\n";
    o.data.len = 7;
    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT;
    m.output = &o;
    guest_sends(s, &m); /* the control: a live session records it */
    /* GuestMsg's fields: req_id, then one per kind of body. */
    const size_t all_kinds = stockade__runner__guest_msg__descriptor.n_fields - 1;
    for (int i = 0; i < 3; i++) {
        session_end(s, "cancelled");
        /* a tight loop's frames, already on the channel */
        assert_int_equal(guest_sends_everything(s, ex.id, ex.req_id), all_kinds);
    }
    assert_int_equal(store_commit(fx->store, &e), 0);

    EventRecord *v = NULL;
    size_t n = 0;
    assert_int_equal(store_events_read(fx->store, s->rec.id, 0, 100, &v, &n, &e), 0);
    for (size_t i = 0; i < n; i++)
        printf("# event %zu: %s %s\n", i, v[i].type, v[i].attrs ? v[i].attrs : "");
    assert_int_equal(n, 2);
    assert_string_equal(v[0].type, "exec.stdout");
    assert_string_equal(v[1].type, "session.state");
    assert_non_null(strstr(v[1].attrs, "\"cancelled\""));
    event_records_free(v, n);
    assert_int_equal(releases, 1); /* one destroy, whatever the number of cancels */
    assert_int_equal(s->rec.output_bytes, 7);
    s->execs = NULL;
}

/* ------------------------------------------------------------------ finalize deadline */

#define FINALIZE_BASE_USEC 300000
static char workspace_path[512]; /* a sparse file: the finalize caps sizes by the disk's */
static uint32_t finalize_requests;

int __wrap_guest_send(Guest *g, HostMsg *m, uint32_t *ret_req_id, Error **errp);
int
__wrap_guest_send(Guest *g, HostMsg *m, uint32_t *ret_req_id, Error **errp)
{
    (void) g, (void) errp;
    finalize_requests += m->body_case == STOCKADE__RUNNER__HOST_MSG__BODY_FINALIZE;
    if (ret_req_id)
        *ret_req_id = 41;
    return 0; /* sent, and never answered */
}

const char *__wrap_guest_workspace_path(const Guest *g);
const char *
__wrap_guest_workspace_path(const Guest *g)
{
    (void) g;
    return workspace_path;
}

static void
quit_loop(Loop *l, void *userdata)
{
    (void) userdata;
    loop_quit(l, 1);
}

static void
test_finalize_never_answered(void **state)
{
    Fixture *fx = *state;
    Session *s = &fx->s;
    static char token_guest;

    snprintf(workspace_path, sizeof(workspace_path), "%s/workspace.raw", fx->dir);
    FILE *f = fopen(workspace_path, "w");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), 64 << 20), 0);
    fclose(f);
    fx->m.cfg.finalize_base_usec = FINALIZE_BASE_USEC;
    fx->m.cfg.finalize_usec_per_mib = 0;
    s->guest = (Guest *) &token_guest;
    releases = 0;
    finalize_requests = 0;
    quit_on_release = fx->loop;

    uint64_t t0 = now_usec();
    session_end(s, "completed");
    assert_int_equal(finalize_requests, 1);
    assert_int_equal(releases, 0); /* the guest is kept while the runner finalizes */
    (void) loop_add_timer(fx->loop, t0 + 20 * FINALIZE_BASE_USEC, quit_loop, NULL);
    assert_int_equal(loop_run(fx->loop), 0); /* 0: the release quit it, not the guard */
    uint64_t took = now_usec() - t0;
    printf("# finalize never answered: salvage after %.0f ms (deadline %d ms)\n",
           (double) took / 1000.0, FINALIZE_BASE_USEC / 1000);
    assert_int_equal(releases, 1);
    assert_non_null(s->fin_fallback);
    assert_string_equal(s->fin_fallback, "deadline");
    assert_int_equal(fx->m.stats.finalize_fallbacks, 1);
    assert_true(took >= FINALIZE_BASE_USEC);
    assert_null(s->fin);
    quit_on_release = NULL;
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
finalize_fixture(Fixture *fx, uint64_t base_usec, unsigned usec_per_mib)
{
    static char token_guest;
    char path[512];

    snprintf(workspace_path, sizeof(workspace_path), "%s/workspace.raw", fx->dir);
    FILE *f = fopen(workspace_path, "w");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), 64 << 20), 0);
    fclose(f);
    snprintf(path, sizeof(path), "%s/%s/.mirror", fx->dir, fx->s.rec.id);
    assert_int_equal(mkdir(path, 0700), 0);
    fx->m.cfg.finalize_base_usec = base_usec;
    fx->m.cfg.finalize_usec_per_mib = usec_per_mib;
    fx->s.guest = (Guest *) &token_guest;
    fx->s.workspace_limit_bytes = UINT64_MAX;
    fx->s.lifetime_start_usec = now_usec();
    fx->s.rec.timeout_usec = 3600ull * 1000000; /* an hour reserved */
    releases = 0;
    finalize_requests = 0;
}

/* Runs the loop until the guest is released; 0 when it was, 1 when the guard quit first. */
static int
run_until_release(Fixture *fx, uint64_t guard_usec)
{
    quit_on_release = fx->loop;
    TimerId guard = loop_add_timer(fx->loop, now_usec() + guard_usec, quit_loop, NULL);
    int r = loop_run(fx->loop);
    loop_cancel_timer(fx->loop, guard);
    quit_on_release = NULL;
    return r;
}

/* Junk records moved the deadline by 100 ms per MiB each, stored or not: 8 full chunks every
 * 50 ms moved it 200 ms every 50 ms, and the finalize (slot, vCPUs) never ended. Only what the
 * mirror keeps moves it now: it ends at its base, as if the runner had said nothing. */
static void
test_finalize_junk_records_do_not_extend(void **state)
{
    Fixture *fx = *state;
    Session *s = &fx->s;
    Liar z = {.s = s, .loop = fx->loop, .period_usec = 50000};

    finalize_fixture(fx, FINALIZE_BASE_USEC, SESSIONS_FINALIZE_USEC_PER_MIB);
    uint64_t t0 = now_usec();
    session_end(s, "completed");
    assert_int_equal(finalize_requests, 1);
    liar_tick(fx->loop, &z);
    int r = run_until_release(fx, 20 * FINALIZE_BASE_USEC);
    printf("# %u junk records (%u MiB claimed) during the finalize: %s after %.0f ms "
           "(base %d ms)\n",
           z.sent, (unsigned) ((uint64_t) z.sent * FILE_CHUNK_MAX_BYTES >> 20),
           r == 0 ? "salvage" : "STILL FINALIZING", (double) (now_usec() - t0) / 1000.0,
           FINALIZE_BASE_USEC / 1000);
    assert_int_equal(r, 0); /* released, not the guard */
    assert_int_equal(releases, 1);
    assert_string_equal(s->fin_fallback, "deadline");
    assert_int_equal(s->mirror_bytes, 0); /* nothing was stored, nothing moved the deadline */
    assert_null(s->fin);
}

/* Records the mirror keeps still move the deadline (an honest runner's last flush), but
 * never past the session's reserved lifetime: the guest never outlives what was reserved. */
static void
test_finalize_ends_by_the_reserved_lifetime(void **state)
{
    Fixture *fx = *state;
    Session *s = &fx->s;
    Liar z = {.s = s, .loop = fx->loop, .store = true, .period_usec = 50000};

    /* each 4 KiB stored moves the deadline 1 s: 8 a tick outrun any clock */
    finalize_fixture(fx, FINALIZE_BASE_USEC, 256u * 1000000u);
    s->rec.timeout_usec = 3 * FINALIZE_BASE_USEC; /* reserved: ends 3 x base from now */
    uint64_t t0 = now_usec();
    session_end(s, "completed");
    liar_tick(fx->loop, &z);
    int r = run_until_release(fx, 20 * FINALIZE_BASE_USEC);
    printf("# %u records stored (%llu KiB) during the finalize: %s after %.0f ms (lifetime "
           "ends %.0f ms after the start)\n",
           z.sent, (unsigned long long) (s->mirror_bytes >> 10),
           r == 0 ? "salvage" : "STILL FINALIZING", (double) (now_usec() - t0) / 1000.0,
           (double) (s->lifetime_start_usec + s->rec.timeout_usec - t0) / 1000.0);
    assert_int_equal(r, 0);
    assert_int_equal(releases, 1);
    assert_string_equal(s->fin_fallback, "deadline");
    assert_true(s->mirror_bytes > 0); /* they were stored: they did move the deadline */
    assert_true(now_usec() >= s->lifetime_start_usec + s->rec.timeout_usec);
}

/* A cancel during a finalize stops waiting on the runner: the guest goes at once. */
static void
test_cancel_during_finalize_salvages(void **state)
{
    Fixture *fx = *state;
    Session *s = &fx->s;
    Error *e = NULL;

    finalize_fixture(fx, 3600ull * 1000000, 0); /* the deadline alone would be an hour away */
    fx->m.all = s;
    session_end(s, "completed");
    assert_non_null(s->fin);
    assert_int_equal(releases, 0);
    assert_int_equal(sessions_close(&fx->m, "default", s->rec.id, &e), 0);
    assert_int_equal(releases, 0); /* a close waits for the clean end as before */
    assert_int_equal(sessions_cancel(&fx->m, "default", s->rec.id, &e), 0);
    assert_int_equal(releases, 1); /* the guest is destroyed now, its disk salvaged */
    assert_null(s->fin);
    assert_string_equal(s->fin_fallback, "cancelled");
    assert_int_equal(fx->m.stats.finalize_fallbacks, 1);
    assert_int_equal(sessions_cancel(&fx->m, "default", s->rec.id, &e), 0);
    assert_int_equal(releases, 1); /* once: the guest is already going */
    /* the first reason stays */
    assert_string_equal(s->rec.end_reason, "completed");
    fx->m.all = NULL;
}

/* ------------------------------------------------------------------ bind failures */

static unsigned hellos;

int __wrap_guest_hello(Guest *g, const Stockade__Runner__SessionConfig *cfg, uint32_t *ret_req_id,
                       Error **errp);
int
__wrap_guest_hello(Guest *g, const Stockade__Runner__SessionConfig *cfg, uint32_t *ret_req_id,
                   Error **errp)
{
    (void) g, (void) cfg, (void) ret_req_id, (void) errp;
    hellos++;
    return 0;
}

const char *__wrap_guest_name(const Guest *g);
const char *
__wrap_guest_name(const Guest *g)
{
    (void) g;
    return "stktest-minimal-0";
}

size_t __wrap_guest_disk_index(const Guest *g);
size_t
__wrap_guest_disk_index(const Guest *g)
{
    (void) g;
    return 0;
}

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
test_no_guest_without_its_egress(void **state)
{
    Fixture *fx = *state;
    Session *s = &fx->s;
    Error *e = NULL;
    static char token_guest, token_resolver;

    fx->m.egress_resolver = (EgressResolver *) &token_resolver;
    s->spec.egress_all = true;
    s->state = ST_PENDING;
    s->guest = NULL;
    releases = hellos = 0;
    session_bind_guest(s, (Guest *) &token_guest);
    assert_int_equal(hellos, 0);   /* the runner was never told to start the session */
    assert_int_equal(releases, 1); /* the guest goes */
    assert_null(s->egress);
    assert_int_equal(store_commit(fx->store, &e), 0);

    EventRecord *v = NULL;
    size_t n = 0;
    bool ended_host_error = false;
    assert_int_equal(store_events_read(fx->store, s->rec.id, 0, 100, &v, &n, &e), 0);
    for (size_t i = 0; i < n; i++)
        ended_host_error |= strcmp(v[i].type, "session.state") == 0 &&
                            strstr(v[i].attrs, "\"host_error\"") != NULL;
    event_records_free(v, n);
    assert_true(ended_host_error);
    fx->m.egress_resolver = NULL;
    s->spec.egress_all = false;
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
        cmocka_unit_test_setup_teardown(test_removed_files_are_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_below_cap_all_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_from_the_guest_after_a_cancel, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_finalize_never_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finalize_junk_records_do_not_extend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finalize_ends_by_the_reserved_lifetime, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cancel_during_finalize_salvages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_guest_without_its_egress, setup, teardown),
        cmocka_unit_test(test_state_transitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
