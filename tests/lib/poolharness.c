/* See poolharness.h. */
#include "poolharness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "timeutil.h"
#include "virt.h"

#ifndef STOCKADE_TEST_IMAGE_DIR
#error "STOCKADE_TEST_IMAGE_DIR must point at the build's images"
#endif

/* ------------------------------------------------------------------ cleanup at exit */

#define HARNESS_EXIT_MAX 8

const char *harness_default_guest_memory;

/* Harnesses started in this process. A scenario that fails a TEST_CHECK exits from wherever
 * it is; its guests (and a state dir the harness made) must not outlive the test. */
static struct {
    char prefix[POOL_PREFIX_MAX_BYTES + 1];
    char state_dir[1024]; /* "" when the test passed its own */
    char template_dir[1024]; /* "" in copy mode, or when it is under state_dir */
} exit_list[HARNESS_EXIT_MAX];
static size_t n_exit;

static void
harness_atexit(void)
{
    Virt *v = NULL;
    if (virt_open("qemu:///system", &v, NULL) < 0)
        return;
    for (size_t i = 0; i < n_exit; i++) {
        char **names = NULL;
        if (virt_list_prefixed(v, exit_list[i].prefix, &names, NULL) < 0)
            continue;
        for (char **p = names; *p; p++) {
            fprintf(stderr, "harness: at exit, destroying leftover guest %s\n", *p);
            (void) virt_destroy(v, *p, NULL);
            (void) virt_undefine(v, *p, NULL);
        }
        virt_strv_free(names);
        if (exit_list[i].state_dir[0])
            test_rm_rf(exit_list[i].state_dir);
        if (exit_list[i].state_dir[0] && exit_list[i].template_dir[0])
            test_rm_rf(exit_list[i].template_dir);
    }
    virt_close(v);
}

static void
harness_exit_register(const char *prefix, const char *own_state_dir)
{
    for (size_t i = 0; i < n_exit; i++)
        if (strcmp(exit_list[i].prefix, prefix) == 0)
            return;
    if (n_exit == HARNESS_EXIT_MAX)
        return;
    if (n_exit == 0)
        atexit(harness_atexit);
    snprintf(exit_list[n_exit].prefix, sizeof(exit_list[n_exit].prefix), "%s", prefix);
    snprintf(exit_list[n_exit].state_dir, sizeof(exit_list[n_exit].state_dir), "%s",
             own_state_dir ? own_state_dir : "");
    n_exit++;
}

/* Templates outside the state directory (/dev/shm) go with it at exit. */
static void
harness_exit_template_dir(const char *prefix, const char *template_dir)
{
    for (size_t i = 0; i < n_exit; i++)
        if (strcmp(exit_list[i].prefix, prefix) == 0)
            snprintf(exit_list[i].template_dir, sizeof(exit_list[i].template_dir), "%s",
                     template_dir);
}

static PoolGuestMemory
harness_guest_memory(const HarnessOptions *o, PoolGuestMemory dflt)
{
    const char *m = o->guest_memory ? o->guest_memory : harness_default_guest_memory;
    if (!m)
        return dflt;
    if (strcmp(m, "template") == 0)
        return POOL_MEMORY_TEMPLATE;
    if (strcmp(m, "copy") == 0)
        return POOL_MEMORY_COPY;
    fprintf(stderr, "harness: unknown guest_memory %s\n", m);
    abort();
}

static void
harness_check_host(Harness *h, const char *image)
{
    Virt *v = NULL;
    Error *err = NULL;
    char manifest[1200];

    if (geteuid() != 0)
        test_skip("needs root (libvirt qemu:///system, guest disks)");
    if (virt_open("qemu:///system", &v, &err) < 0)
        test_skip("libvirtd is not reachable: %s (start virtlogd -d; libvirtd -d)", err->message);
    virt_close(v);
    snprintf(h->image_dir, sizeof(h->image_dir), "%s/%s", STOCKADE_TEST_IMAGE_DIR, image);
    snprintf(manifest, sizeof(manifest), "%s/manifest.json", h->image_dir);
    if (access(manifest, R_OK) < 0)
        test_skip("image %s is not built (%s)", image, manifest);
}

void
harness_start_opts(Harness *h, const HarnessOptions *o)
{
    Error *err = NULL;
    uint32_t r;

    memset(h, 0, sizeof(*h));
    harness_check_host(h, o->image);
    if (getrandom(&r, sizeof(r), 0) != sizeof(r))
        abort();
    if (o->prefix)
        snprintf(h->prefix, sizeof(h->prefix), "%s", o->prefix);
    else
        snprintf(h->prefix, sizeof(h->prefix), "stktest%06x-", r & 0xffffff);
    h->state_dir = o->state_dir ? strdup(o->state_dir) : test_mkdtemp("stockade-pool");
    chmod(h->state_dir, 0711);
    harness_exit_register(h->prefix, o->state_dir || !h->state_dir ? NULL : h->state_dir);
    pool_config_defaults(&h->cfg);
    h->cfg.state_dir = h->state_dir;
    h->cfg.domain_prefix = h->prefix;
    h->cfg.workspace_mib = 64;
    if (o->health_interval_usec)
        h->cfg.health_interval_usec = o->health_interval_usec;
    if (o->ping_timeout_usec)
        h->cfg.ping_timeout_usec = o->ping_timeout_usec;
    if (o->sync_timeout_usec)
        h->cfg.sync_timeout_usec = o->sync_timeout_usec;
    if (o->kvm_probe_timeout_usec)
        h->cfg.kvm_probe_timeout_usec = o->kvm_probe_timeout_usec;
    h->cfg.accel = o->accel;
    h->cfg.kvm_probe_append = o->kvm_probe_append;
    h->cfg.kvm_probe_under_tcg = o->kvm_probe_under_tcg;
    h->cfg.guest_memory = harness_guest_memory(o, h->cfg.guest_memory);
    h->cfg.template_dir = o->template_dir;
    h->shape = (PoolShapeConfig){.name = o->image,
                                 .image_dir = h->image_dir,
                                 .vcpus = 1,
                                 .memory_mib = 256,
                                 .warm = o->warm,
                                 .slots = o->slots};
    h->cfg.shapes = &h->shape;
    h->cfg.n_shapes = 1;
    if (loop_new(&h->loop, &err) < 0 || workq_new(h->loop, 6, &h->q, &err) < 0 ||
        pool_new(h->loop, h->q, &h->cfg, &h->pool, &err) < 0) {
        fprintf(stderr, "harness: %s\n", err->message);
        abort();
    }
    PoolStatus st;
    pool_status(h->pool, &st);
    if (st.template_dir[0]) {
        h->template_dir = strdup(st.template_dir);
        harness_exit_template_dir(h->prefix, h->template_dir);
    }
    printf("harness: guest memory %s\n", st.guest_memory_reason);
    if (!o->no_start)
        pool_start(h->pool);
}

void
harness_start(Harness *h, const char *image, unsigned warm, unsigned slots, const char *state_dir)
{
    HarnessOptions o = {.image = image, .warm = warm, .slots = slots, .state_dir = state_dir};
    harness_start_opts(h, &o);
}

static void
harness_on_tick(Loop *l, void *userdata)
{
    (void) userdata;
    loop_quit(l, 0);
}

bool
harness_run_until(Harness *h, bool (*cond)(void *userdata), void *userdata, uint64_t timeout_usec)
{
    uint64_t deadline = now_usec() + timeout_usec;
    while (!cond(userdata)) {
        if (now_usec() >= deadline)
            return false;
        TimerId t = loop_add_timer(h->loop, now_usec() + 5 * USEC_PER_MSEC, harness_on_tick, h);
        loop_run(h->loop);
        loop_cancel_timer(h->loop, t);
    }
    return true;
}

static bool
cond_full(void *userdata)
{
    return pool_is_full(((Harness *) userdata)->pool);
}

bool
harness_wait_full(Harness *h, uint64_t timeout_usec)
{
    return harness_run_until(h, cond_full, h, timeout_usec);
}

static void
harness_on_stopped(void *userdata)
{
    ((Harness *) userdata)->stopped = true;
}

static bool
cond_stopped(void *userdata)
{
    return ((Harness *) userdata)->stopped;
}

static void
harness_free(Harness *h)
{
    workq_free(h->q);
    pool_free(h->pool);
    loop_free(h->loop);
    h->q = NULL;
    h->pool = NULL;
    h->loop = NULL;
}

void
harness_stop(Harness *h)
{
    pool_stop(h->pool, harness_on_stopped, h);
    if (!harness_run_until(h, cond_stopped, h, 120 * USEC_PER_SEC)) {
        PoolStatus st;
        pool_status(h->pool, &st);
        fprintf(stderr,
                "harness: pool did not stop in 120 s (idle %u busy %u starting %u "
                "draining %u)\n",
                st.shapes[0].idle, st.shapes[0].busy, st.shapes[0].starting, st.shapes[0].draining);
    }
    harness_free(h);
}

void
harness_abandon(Harness *h)
{
    harness_free(h);
}

void
harness_cleanup(Harness *h)
{
    if (h->template_dir) {
        test_rm_rf(h->template_dir);
        free(h->template_dir);
        h->template_dir = NULL;
    }
    if (h->state_dir) {
        test_rm_rf(h->state_dir);
        free(h->state_dir);
        h->state_dir = NULL;
    }
}

char **
harness_domains(Harness *h)
{
    Virt *v = NULL;
    char **names = NULL;
    if (virt_open("qemu:///system", &v, NULL) < 0)
        return NULL;
    char **all = NULL;
    if (virt_list_prefixed(v, h->prefix, &all, NULL) == 0) {
        size_t n = 0;
        names = calloc(64, sizeof(char *));
        for (char **p = all; *p && n < 63; p++)
            if (virt_is_active(v, *p))
                names[n++] = strdup(*p);
        virt_strv_free(all);
    }
    virt_close(v);
    return names;
}

size_t
harness_domain_count(Harness *h)
{
    char **names = harness_domains(h);
    size_t n = 0;
    for (char **p = names; p && *p; p++)
        n++;
    virt_strv_free(names);
    return n;
}

/* ------------------------------------------------------------------ test sessions */

static void
ts_append(char *buf, size_t cap, size_t *len, const uint8_t *data, size_t n)
{
    size_t room = cap - 1 - *len;
    if (n > room)
        n = room;
    memcpy(buf + *len, data, n);
    *len += n;
    buf[*len] = '\0';
}

static void
ts_on_message(Guest *g, const GuestMsg *m, void *userdata)
{
    TestSession *s = userdata;
    (void) g;
    switch (m->body_case) {
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ACK:
        if (m->req_id == s->hello_req) {
            s->acked = true;
            s->acked_usec = now_usec();
        }
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_PONG:
        if (m->req_id == s->ping_req)
            s->pong_usec = now_usec();
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED:
        s->started = true;
        s->started_usec = now_usec();
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT:
        if (s->first_byte_usec == 0)
            s->first_byte_usec = now_usec();
        if (m->output->stream == STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT)
            ts_append(s->out, sizeof(s->out), &s->out_len, m->output->data.data,
                      m->output->data.len);
        else
            ts_append(s->err, sizeof(s->err), &s->err_len, m->output->data.data,
                      m->output->data.len);
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT:
        s->exited = true;
        s->exit_code = m->exec_exit->exit_code;
        s->signal = m->exec_exit->signal;
        break;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR:
        s->errored = true;
        snprintf(s->error_message, sizeof(s->error_message), "%s", m->error->message);
        break;
    default:
        break;
    }
}

static void
ts_on_lost(Guest *g, const Error *why, void *userdata)
{
    TestSession *s = userdata;
    (void) g;
    s->lost = true;
    snprintf(s->error_message, sizeof(s->error_message), "lost: %s", why->message);
}

static const GuestOps ts_ops = {ts_on_message, ts_on_lost};

bool
ts_take(Harness *h, TestSession *s, const char *session_id)
{
    Stockade__Runner__SessionConfig cfg = STOCKADE__RUNNER__SESSION_CONFIG__INIT;
    Error *err = NULL;

    memset(s, 0, sizeof(*s));
    s->h = h;
    s->taken_usec = now_usec();
    s->g = pool_take(h->pool, h->shape.name, &ts_ops, s, &err);
    if (!s->g) {
        error_free(err);
        return false;
    }
    cfg.session_id = (char *) session_id;
    cfg.uid = 1000;
    cfg.gid = 1000;
    cfg.workspace_device = "/dev/vdb";
    if (guest_hello(s->g, &cfg, &s->hello_req, &err) < 0) {
        snprintf(s->error_message, sizeof(s->error_message), "hello: %s", err->message);
        error_free(err);
        return false;
    }
    return true;
}

static bool
ts_ponged(void *userdata)
{
    TestSession *s = userdata;
    return s->pong_usec != 0 || s->lost;
}

int64_t
ts_ping_usec(TestSession *s, uint64_t timeout_usec)
{
    Stockade__Runner__Ping p = STOCKADE__RUNNER__PING__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Error *err = NULL;

    p.nonce = 0x5eed;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PING;
    m.ping = &p;
    s->pong_usec = 0;
    uint64_t t0 = now_usec();
    if (guest_send(s->g, &m, &s->ping_req, &err) < 0) {
        error_free(err);
        return -1;
    }
    harness_run_until(s->h, ts_ponged, s, timeout_usec);
    return s->pong_usec ? (int64_t) (s->pong_usec - t0) : -1;
}

bool
ts_exec_start(TestSession *s, const char *const *argv)
{
    Stockade__Runner__Exec e = STOCKADE__RUNNER__EXEC__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Error *err = NULL;
    size_t n = 0;

    while (argv[n])
        n++;
    s->started = s->exited = s->errored = false;
    s->out_len = s->err_len = 0;
    s->out[0] = s->err[0] = '\0';
    s->first_byte_usec = 0;
    e.exec_id = ++s->exec_id;
    e.argv = (char **) argv;
    e.n_argv = n;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &e;
    if (guest_send(s->g, &m, &s->exec_req, &err) < 0) {
        snprintf(s->error_message, sizeof(s->error_message), "exec: %s", err->message);
        error_free(err);
        return false;
    }
    return true;
}

static bool
cond_exec_done(void *userdata)
{
    TestSession *s = userdata;
    return s->exited || s->lost || (s->errored && !s->started);
}

bool
ts_exec_wait(TestSession *s, uint64_t timeout_usec)
{
    return harness_run_until(s->h, cond_exec_done, s, timeout_usec) && s->exited;
}

int
ts_run(TestSession *s, const char *const *argv, uint64_t timeout_usec)
{
    if (!ts_exec_start(s, argv) || !ts_exec_wait(s, timeout_usec))
        return -1000;
    return s->exit_code;
}

void
ts_release(TestSession *s)
{
    if (s->g)
        pool_release(s->h->pool, s->g, NULL, NULL);
    s->g = NULL;
}
