/* See sessions_fake.h. */
#include "sessions_fake.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testlib.h"
#include "timeutil.h"

FakeHost fake;

/* ------------------------------------------------------------------ the pool */

static void
fake_status(Pool *p, PoolStatus *ret)
{
    (void) p;
    memset(ret, 0, sizeof(*ret));
    ret->n_shapes = 1;
    ret->shapes[0] = (PoolShapeStatus){
        .name = "minimal", .vcpus = 1, .memory_mib = 256, .warm = 1, .slots = FAKE_GUESTS_MAX};
    for (size_t i = 0; i < fake.n_guests; i++)
        ret->shapes[0].idle += fake.guests[i].idle;
}

static void
fake_set_on_idle(Pool *p, void (*fn)(void *userdata), void *userdata)
{
    (void) p;
    fake.on_idle = fn;
    fake.on_idle_userdata = userdata;
}

static Guest *
fake_take(Pool *p, const char *shape, const GuestOps *ops, void *userdata, Error **errp)
{
    (void) p;
    if (strcmp(shape, "minimal") != 0)
        return error_set(errp, E_NOT_FOUND, 0, "no shape %s", shape), NULL;
    for (size_t i = 0; i < fake.n_guests; i++) {
        FakeGuest *g = &fake.guests[i];
        if (!g->idle)
            continue;
        g->idle = false;
        g->taken = true;
        g->ops = ops;
        g->userdata = userdata;
        fake.takes++;
        return (Guest *) g;
    }
    return error_set(errp, E_UNAVAILABLE, 0, "none idle"), NULL;
}

static void
fake_release(Pool *p, Guest *g, GuestGoneFn gone, void *userdata)
{
    FakeGuest *f = fake_guest_of(g);
    (void) p;
    assert_false(f->released); /* once: the owner hears nothing more after it */
    f->released = true;
    f->gone = gone;
    f->gone_userdata = userdata;
    fake.releases++;
    if (fake.quit_on_release)
        loop_quit(fake.quit_on_release, 0);
}

static void
fake_recycle(Pool *p, Guest *g)
{
    (void) p;
    fake_guest_of(g)->recycled = true;
    fake.recycles++;
}

static ssize_t
fake_hold_disk(Pool *p, const char *domain_name)
{
    (void) p;
    fake.holds++;
    return strcmp(domain_name, fake.hold_name) == 0 ? fake.hold_result : -1;
}

static void
fake_unhold_disk(Pool *p, size_t disk_index)
{
    (void) p, (void) disk_index;
    fake.unholds++;
}

/* No guest outlives a fake daemon: nothing is kept, nothing adopted (the old path). */
static int
fake_keep(Pool *p, Guest *g)
{
    (void) p, (void) g;
    return -1;
}

static ssize_t
fake_adopt(Pool *p, const char *domain_name, const GuestOps *ops, void *userdata,
           GuestAdoptedFn done)
{
    (void) p, (void) domain_name, (void) ops, (void) userdata, (void) done;
    return -1;
}

/* ------------------------------------------------------------------ a guest */

static int
fake_hello(Guest *g, const Stockade__Runner__SessionConfig *cfg, uint32_t *ret_req_id, Error **errp)
{
    (void) g, (void) cfg;
    if (fake.hello_fails)
        return error_set(errp, E_GUEST, 0, "injected: hello");
    fake.hellos++;
    *ret_req_id = fake.hello_req = ++fake.next_req;
    return 0;
}

static int
fake_send(Guest *g, HostMsg *m, uint32_t *ret_req_id, Error **errp)
{
    (void) errp;
    assert_false(fake_guest_of(g)->released); /* nothing goes to a guest being destroyed */
    if ((size_t) m->body_case < FAKE_BODY_CASES)
        fake.sent[m->body_case]++;
    if (ret_req_id)
        *ret_req_id = ++fake.next_req;
    return 0; /* sent, and never answered unless the test says so */
}

static size_t
fake_send_backlog_bytes(const Guest *g)
{
    (void) g;
    return 0;
}

static const char *
fake_name(const Guest *g)
{
    return fake_guest_of(g)->name;
}

static const char *
fake_workspace_path(const Guest *g)
{
    (void) g;
    return fake.workspace_path;
}

static size_t
fake_disk_index(const Guest *g)
{
    return fake_guest_of(g)->disk_index;
}

/* ------------------------------------------------------------------ the salvage */

static void
fake_salvage(ExtractService *x, const ExtractRequest *r)
{
    (void) x;
    assert_false(fake.salvage_pending); /* one at a time in these tests */
    fake.salvage = *r;
    snprintf(fake.salvage_dest, sizeof(fake.salvage_dest), "%s", r->dest_dir);
    fake.salvage.dest_dir = fake.salvage_dest;
    fake.salvage_pending = true;
    fake.salvages++;
}

static void
fake_salvage_status(const ExtractService *x, ExtractServiceStatus *ret)
{
    (void) x;
    *ret = (ExtractServiceStatus){.state = "up"};
}

const SessionsHostOps fake_host_ops = {
    .status = fake_status,
    .set_on_idle = fake_set_on_idle,
    .take = fake_take,
    .release = fake_release,
    .recycle = fake_recycle,
    .hold_disk = fake_hold_disk,
    .unhold_disk = fake_unhold_disk,
    .keep = fake_keep,
    .adopt = fake_adopt,
    .hello = fake_hello,
    .send = fake_send,
    .send_backlog_bytes = fake_send_backlog_bytes,
    .name = fake_name,
    .workspace_path = fake_workspace_path,
    .disk_index = fake_disk_index,
    .salvage = fake_salvage,
    .salvage_status = fake_salvage_status,
};

/* ------------------------------------------------------------------ what the test does */

FakeGuest *
fake_guest_of(const Guest *g)
{
    FakeGuest *f = (FakeGuest *) g;
    assert_true(f >= fake.guests && f < fake.guests + fake.n_guests);
    return f;
}

FakeGuest *
fake_guest_idle(void)
{
    assert_true(fake.n_guests < FAKE_GUESTS_MAX);
    FakeGuest *g = &fake.guests[fake.n_guests];
    *g = (FakeGuest){.disk_index = fake.n_guests, .idle = true};
    snprintf(g->name, sizeof(g->name), "stktest-minimal-%zu", fake.n_guests);
    fake.n_guests++;
    if (fake.on_idle)
        fake.on_idle(fake.on_idle_userdata);
    return g;
}

void
fake_say(const Guest *g, GuestMsg *m)
{
    FakeGuest *f = fake_guest_of(g);
    assert_true(f->taken);
    if (!f->released) /* the pool stops reading a guest it was given back */
        f->ops->message((Guest *) f, m, f->userdata);
}

void
fake_ack(const Guest *g, uint32_t req_id)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Ack ack = STOCKADE__RUNNER__ACK__INIT;
    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_ACK;
    m.ack = &ack;
    m.req_id = req_id;
    fake_say(g, &m);
}

void
fake_lost(const Guest *g)
{
    FakeGuest *f = fake_guest_of(g);
    Error why = {.category = E_GUEST};
    snprintf(why.message, sizeof(why.message), "injected: lost");
    f->ops->lost((Guest *) f, &why, f->userdata);
}

void
fake_gone(const Guest *g)
{
    FakeGuest *f = fake_guest_of(g);
    assert_true(f->released);
    assert_non_null(f->gone);
    GuestGoneFn gone = f->gone;
    f->gone = NULL;
    gone((Guest *) f, 1000, 43000, f->gone_userdata);
}

void
fake_salvage_done(const Error *err)
{
    ExtractStats st = {0};
    Error *werr = NULL;
    if (err)
        error_set(&werr, err->category, 0, "%s", err->message);
    assert_true(fake.salvage_pending);
    fake.salvage_pending = false;
    if (fake.salvage.after_work)
        fake.salvage.after_work(fake.salvage.userdata, &st, &werr);
    fake.salvage.done(fake.salvage.userdata, &st, werr);
    error_free(werr);
}

/* ------------------------------------------------------------------ the world */

static void
world_start(FakeWorld *w, void (*tune)(SessionsConfig *c))
{
    SessionsConfig cfg;
    char path[512];
    Error *e = NULL;

    memset(&fake, 0, sizeof(fake));
    fake.hold_result = -1;
    snprintf(path, sizeof(path), "%s/stockade.db", w->dir);
    assert_int_equal(loop_new(&w->loop, &e), 0);
    assert_int_equal(workq_new(w->loop, 1, &w->q, &e), 0);
    assert_int_equal(store_open(path, &w->store, &e), 0);
    assert_int_equal(eventhub_new(&w->hub, &e), 0);
    sessions_config_defaults(&cfg);
    cfg.state_dir = w->dir;
    if (tune)
        tune(&cfg);
    SessionsHost host = {.ops = &fake_host_ops};
    assert_int_equal(sessions_new(w->loop, w->q, &host, w->store, w->hub, &cfg, &w->m, &e), 0);
    snprintf(fake.workspace_path, sizeof(fake.workspace_path), "%s/workspace.raw", w->dir);
    FILE *f = fopen(fake.workspace_path, "w"); /* sparse: a finalize caps sizes by the disk's */
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), 64 << 20), 0);
    fclose(f);
}

/* Everything goes as a killed daemon's would: the records stay as they are. */
static void
world_stop(FakeWorld *w)
{
    sessions_free(w->m);
    workq_free(w->q);
    store_close(w->store);
    eventhub_free(w->hub);
    loop_free(w->loop);
    w->m = NULL;
    w->q = NULL;
    w->store = NULL;
    w->hub = NULL;
    w->loop = NULL;
}

void
fake_world_open(FakeWorld *w, void (*tune)(SessionsConfig *c))
{
    memset(w, 0, sizeof(*w));
    w->dir = test_mkdtemp("stockade-sessions");
    world_start(w, tune);
}

void
fake_world_restart(FakeWorld *w, void (*tune)(SessionsConfig *c))
{
    world_stop(w);
    world_start(w, tune);
}

void
fake_world_close(FakeWorld *w)
{
    world_stop(w);
    test_rm_rf(w->dir);
    free(w->dir);
    w->dir = NULL;
}

int
fake_teardown(void **state)
{
    fake_world_close(*state);
    return 0;
}

Session *
fake_create(FakeWorld *w, const SessionSpec *spec)
{
    SessionSpec plain = {.tenant_id = "default", .pool = "minimal", .mirror = true};
    char id[SESSION_ID_BYTES];
    Error *e = NULL;
    int r = sessions_create(w->m, spec ? spec : &plain, id, NULL, &e);
    if (r < 0)
        fail_msg("sessions_create: %s", e->message);
    Session *s = sessions_find(w->m, NULL, id);
    assert_non_null(s);
    return s;
}

Session *
fake_running(FakeWorld *w, const SessionSpec *spec)
{
    Session *s = fake_create(w, spec);
    if (s->state == ST_PENDING)
        fake_guest_idle();
    assert_int_equal(s->state, ST_STARTING);
    fake_ack(s->guest, fake.hello_req);
    assert_int_equal(s->state, ST_RUNNING);
    return s;
}

static void
fake_on_guard(Loop *l, void *userdata)
{
    (void) userdata;
    loop_quit(l, 1);
}

int
fake_run(FakeWorld *w, uint64_t guard_usec)
{
    TimerId guard = loop_add_timer(w->loop, now_usec() + guard_usec, fake_on_guard, NULL);
    int r = loop_run(w->loop);
    loop_cancel_timer(w->loop, guard);
    return r;
}

EventRecord *
fake_events(FakeWorld *w, const char *id, uint64_t after, size_t *ret_n)
{
    EventRecord *v = NULL;
    Error *e = NULL;
    sessions_commit_now(w->m);
    assert_int_equal(store_events_read(w->store, id, after, 100000, &v, ret_n, &e), 0);
    return v;
}
