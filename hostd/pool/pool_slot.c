/* The slot state machine (see pool.h for the cycle). Loop thread only. These are loop
 * callbacks, so this is where pool failures are logged: once, with the slot's name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "log.h"
#include "pool_internal.h"
#include "sha256.h"
#include "timeutil.h"

void accel_probe_finished(Guest *g, bool ready, const char *why); /* pool_accel.c */

static void slot_on_ready(Channel *c, const Stockade__Runner__Ready *r, void *userdata);
static void slot_on_message(Channel *c, const GuestMsg *m, void *userdata);
static void slot_on_broken(Channel *c, const Error *why, void *userdata);
static const ChannelOps slot_channel_ops = {slot_on_ready, slot_on_message, slot_on_broken};

static void slot_maybe_finish(Guest *g);
static void slot_on_restore_failed(Guest *g, const char *why);
static void slot_on_backoff_over(Loop *l, void *userdata);
static void slot_send_prepare(Guest *g);
static void slot_on_prepare_timeout(Loop *l, void *userdata);

void
slot_cancel_timer(Guest *g)
{
    loop_cancel_timer(g->pool->loop, g->timer);
    g->timer = 0;
}

static void
slot_arm_timer(Guest *g, uint64_t delay_usec, LoopTimerFn fn)
{
    slot_cancel_timer(g);
    g->timer = loop_add_timer(g->pool->loop, now_usec() + delay_usec, fn, g);
}

void
slot_close_channel(Guest *g)
{
    channel_free(g->ch);
    g->ch = NULL;
}

int
slot_prepare_xml(Guest *g, Error **errp)
{
    Pool *p = g->pool;
    Shape *s = g->shape;
    DomainSpec spec = {
        .name = g->name,
        .uuid = g->uuid,
        .accel = g->probe ? (p->cfg.kvm_probe_under_tcg ? ACCEL_TCG : ACCEL_KVM) : p->accel,
        .vcpus = s->vcpus,
        .memory_mib = s->memory_mib,
        .kernel_path = s->image->kernel_path,
        .initrd_path = s->image->initrd_path,
        .cmdline = g->cmdline ? g->cmdline : s->image->cmdline,
        .root_disk_path = s->image->root_path,
        .workspace_disk_path = g->workspace_path,
        .channel_socket_path = g->socket_path,
        .console_log_path = g->console_path,
        .tb_cache_mib = p->cfg.tb_cache_mib,
        .cpu_quota_percent = p->cfg.cpu_quota_percent,
        .disk_bytes_per_sec = p->cfg.disk_bytes_per_sec,
        .disk_iops = p->cfg.disk_iops,
        .rng_bytes_per_sec = p->cfg.rng_bytes_per_sec,
    };
    PoolGuestMemory mode = g->probe ? POOL_MEMORY_COPY : p->memory;
    if (g->tmpl) {
        spec.memory = DOMXML_MEMORY_TEMPLATE;
        spec.memory_path = s->mem_new_path;
    } else if (mode == POOL_MEMORY_TEMPLATE) {
        spec.memory = DOMXML_MEMORY_CLONE;
        spec.memory_path = s->mem_path;
        spec.memory_readonly = p->qemu_version >= POOL_QEMU_READONLY_MEMORY_VERSION;
    }
    Sha256 h;
    uint8_t digest[SHA256_BYTES];

    free(g->xml);
    g->xml = NULL;
    if (domxml_build(&spec, &g->xml, errp) < 0)
        return -1;
    g->xml_memory = mode;
    sha256_init(&h);
    sha256_update(&h, g->xml, strlen(g->xml));
    sha256_update(&h, s->image->content_hash, strlen(s->image->content_hash));
    if (s->code_kernel) { /* the snapshot holds the kernel, started as this user */
        char ck[64];
        int n = snprintf(ck, sizeof(ck), "\ncode-kernel %u:%u", (unsigned) g->pool->cfg.exec_uid,
                         (unsigned) g->pool->cfg.exec_gid);
        sha256_update(&h, ck, (size_t) n);
    }
    sha256_final(&h, digest);
    hex_encode(digest, sizeof(digest), g->key);
    return 0;
}

/* ------------------------------------------------------------------ health */

static void slot_on_health(Loop *l, void *userdata);

static void
slot_schedule_ping(Guest *g)
{
    g->ping_req_id = 0;
    slot_arm_timer(g, g->pool->cfg.health_interval_usec, slot_on_health);
}

static void
slot_on_health(Loop *l, void *userdata)
{
    Guest *g = userdata;
    Stockade__Runner__Ping ping = STOCKADE__RUNNER__PING__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    _cleanup_error_ Error *err = NULL;
    (void) l;

    g->timer = 0;
    if (g->ping_req_id != 0) {
        g->pool->stats.wedged++;
        slot_fail(g, "ping unanswered: guest wedged");
        return;
    }
    if ((g->state != SLOT_IDLE && g->state != SLOT_BUSY) || !g->ch)
        return;
    m.req_id = channel_next_req_id(g->ch);
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PING;
    m.ping = &ping;
    ping.nonce = m.req_id;
    if (channel_send(g->ch, &m, &err) < 0) {
        if (err->category == E_TOO_LARGE) { /* host-side queue full: the owner's business */
            slot_schedule_ping(g);
            return;
        }
        slot_fail(g, err->message);
        return;
    }
    g->ping_req_id = m.req_id;
    slot_arm_timer(g, g->pool->cfg.ping_timeout_usec, slot_on_health);
}

/* ------------------------------------------------------------------ prepare */

static void
slot_send_prepare(Guest *g)
{
    Stockade__Runner__Prepare prep = STOCKADE__RUNNER__PREPARE__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    char *argv[] = {POOL_WARMUP_COMMAND};
    uint8_t entropy[HELLO_ENTROPY_BYTES];
    _cleanup_error_ Error *err = NULL;

    if (getrandom(entropy, sizeof(entropy), 0) != (ssize_t) sizeof(entropy)) {
        slot_fail(g, "getrandom failed");
        return;
    }
    prep.wall_time_ns = wall_usec() * NSEC_PER_USEC;
    prep.entropy.data = entropy;
    prep.entropy.len = sizeof(entropy);
    prep.workspace_device = "/dev/vdb";
    prep.warmup_argv = argv;
    prep.n_warmup_argv = ELEMENTSOF(argv);
    prep.warm_parked = g->shape->code_kernel; /* its code kernel's request path too */
    m.req_id = channel_next_req_id(g->ch);
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PREPARE;
    m.prepare = &prep;
    int r = channel_send(g->ch, &m, &err);
    explicit_bzero(entropy, sizeof(entropy));
    if (r < 0) {
        slot_fail(g, err->message);
        return;
    }
    g->prepare_req_id = m.req_id;
    g->state = SLOT_PREPARING;
    slot_arm_timer(g, g->pool->cfg.sync_timeout_usec, slot_on_prepare_timeout);
}

/* ------------------------------------------------------------------ code kernel */

static void slot_on_saved(Guest *g, Error *err);

static void
slot_start_save(Guest *g)
{
    g->state = SLOT_SAVING;
    job_save(g, slot_on_saved);
}

static void
shape_code_kernel_failed(Guest *g, const char *why)
{
    log_warn("pool %s: the code kernel did not start in %s (%s): its guests are saved without "
             "it from now on, and sessions start their kernels themselves",
             g->shape->name, g->name, why);
    g->shape->code_kernel_failed = true;
}

static void
slot_on_prestart_timeout(Loop *l, void *userdata)
{
    Guest *g = userdata;
    (void) l;
    g->timer = 0;
    g->prestart_req_id = 0;
    shape_code_kernel_failed(g, "no answer to Prestart in time");
    slot_fail(g, "the code kernel did not start in time"); /* a late answer must not follow */
}

/* After the cold boot's Ready: the kernel first, when the shape has one; then the save. */
static void
slot_after_boot(Guest *g)
{
    Stockade__Runner__Prestart ps = STOCKADE__RUNNER__PRESTART__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    char *argv[] = {POOL_CODE_KERNEL_ARGV};
    _cleanup_error_ Error *err = NULL;

    if (!g->shape->code_kernel || g->shape->code_kernel_failed || g->probe) {
        slot_start_save(g);
        return;
    }
    ps.argv = argv;
    ps.n_argv = ELEMENTSOF(argv);
    ps.uid = g->pool->cfg.exec_uid;
    ps.gid = g->pool->cfg.exec_gid;
    m.req_id = channel_next_req_id(g->ch);
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PRESTART;
    m.prestart = &ps;
    if (channel_send(g->ch, &m, &err) < 0) {
        slot_fail(g, err->message);
        return;
    }
    g->prestart_req_id = m.req_id;
    g->prestart_started_usec = now_usec();
    slot_arm_timer(g, g->pool->cfg.boot_timeout_usec, slot_on_prestart_timeout);
}

static void
slot_on_prestart_reply(Guest *g, const GuestMsg *m)
{
    slot_cancel_timer(g);
    g->prestart_req_id = 0;
    if (m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR)
        shape_code_kernel_failed(g, m->error->message); /* escaped by the log */
    else
        log_info("%s: code kernel up in %.1f s; saving it with the guest", g->name,
                 (double) (now_usec() - g->prestart_started_usec) / USEC_PER_SEC);
    slot_start_save(g);
}

/* ------------------------------------------------------------------ channel callbacks */

static void
slot_on_saved(Guest *g, Error *err)
{
    _cleanup_error_ Error *e = err;
    Pool *p = g->pool;

    slot_close_channel(g); /* QEMU exited after the save: the EOF is expected */
    if (e) {
        log_error("snapshot of %s failed: %s", g->name, e->message);
        if (g->tmpl && pool_template_unproven(p))
            pool_template_failed(p, e->message);
        g->state = SLOT_BOOT_SYNC; /* the domain may still run: destroy it */
        slot_destroy(g, true);
        return;
    }
    if (g->tmpl) {
        log_info("template %s saved: %s clones it (copy on write)", g->name, g->shape->name);
        p->template_ever_saved = true;
        shape_set_template_ok(g->shape, true);
    }
    g->snapshot_ok = true;
    g->qemu_pid = -1;
    p->stats.boots++;
    g->state = SLOT_EMPTY;
    if (p->stopping) {
        pool_check_stopped(p);
        return;
    }
    pool_fill(p);
}

static void
slot_on_ready(Channel *c, const Stockade__Runner__Ready *r, void *userdata)
{
    Guest *g = userdata;
    (void) c;
    (void) r;

    if (g->probe) {
        accel_probe_finished(g, true, NULL);
        return;
    }
    if (g->state == SLOT_BOOT_SYNC) {
        histogram_add(&g->pool->stats.boot_to_ready, now_usec() - g->boot_started_usec);
        slot_after_boot(g);
        return;
    }
    if (g->state == SLOT_SYNCING)
        slot_send_prepare(g);
    if (g->state == SLOT_ADOPTING)
        pool_adopt_on_ready(g);
}

static void
slot_become_idle(Guest *g)
{
    slot_cancel_timer(g);
    histogram_add(&g->pool->stats.restore_to_ready, now_usec() - g->restore_started_usec);
    g->state = SLOT_IDLE;
    g->prepare_req_id = 0;
    g->restore_failures = 0;
    slot_schedule_ping(g);
    pool_fill(g->pool);
    if (g->pool->on_idle)
        g->pool->on_idle(g->pool->on_idle_userdata);
}

static void
slot_on_prepare_timeout(Loop *l, void *userdata)
{
    Guest *g = userdata;
    (void) l;
    g->timer = 0;
    g->pool->stats.prepare_failures++;
    slot_fail(g, "no answer to Prepare (workspace mount and warm-up) in time");
}

/* Fails the slot with the runner's own reason (escaped in the log by slot_fail). */
static void
slot_fail_reported(Guest *g, const char *what, const Stockade__Runner__Error *e)
{
    char why[ERROR_MESSAGE_MAX_BYTES + 64];
    snprintf(why, sizeof(why), "%s: %s", what, e->message);
    slot_fail(g, why);
}

/* The prepare step's replies: ExecStarted then ExecExit of the warm-up, or Ack, or Error. */
static bool
slot_on_prepare_reply(Guest *g, const GuestMsg *m)
{
    switch (m->body_case) {
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED:
    case STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT:
        return m->req_id == g->prepare_req_id || m->req_id == 0;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT:
        if (m->exec_exit->exec_id != EXEC_ID_WARMUP)
            return false;
        slot_become_idle(g); /* a failing warm-up command still warmed the exec path */
        return true;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ACK:
        if (m->req_id != g->prepare_req_id)
            return false;
        slot_become_idle(g);
        return true;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR:
        if (m->req_id != g->prepare_req_id)
            return false;
        g->pool->stats.prepare_failures++;
        slot_fail_reported(g, "Prepare failed in the guest", m->error);
        return true;
    default:
        return false;
    }
}

static void
slot_on_message(Channel *c, const GuestMsg *m, void *userdata)
{
    Guest *g = userdata;
    (void) c;

    if (g->state == SLOT_PREPARING && slot_on_prepare_reply(g, m))
        return;
    if (g->state == SLOT_BOOT_SYNC && g->prestart_req_id && m->req_id == g->prestart_req_id &&
        (m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ACK ||
         m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR)) {
        slot_on_prestart_reply(g, m);
        return;
    }
    if (m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_PONG && m->req_id != 0 &&
        m->req_id == g->ping_req_id) {
        slot_schedule_ping(g);
        return;
    }
    if (m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR && m->req_id != 0 &&
        m->req_id == g->ping_req_id && g->state == SLOT_IDLE) {
        slot_fail_reported(g, "unhealthy", m->error); /* e.g. a read-only workspace */
        return;
    }
    if (g->state == SLOT_BUSY && g->ops) {
        g->ops->message(g, m, g->userdata);
        return;
    }
    g->pool->stats.broken += !g->probe; /* a protocol break; the probe's is a verdict on KVM */
    slot_fail(g, "message from a guest nobody asked");
}

static void
slot_on_broken(Channel *c, const Error *why, void *userdata)
{
    Guest *g = userdata;
    (void) c;

    slot_close_channel(g);
    if (g->state == SLOT_SAVING)
        return; /* virDomainSave stops QEMU: its EOF is expected */
    if (!g->probe) /* a probe that never synced is a verdict on KVM, counted by pool_accel.c */
        g->pool->stats.broken++;
    slot_fail(g, why->message);
}

void
slot_open_channel(Guest *g, uint64_t timeout_usec)
{
    _cleanup_error_ Error *err = NULL;
    if (channel_open(g->pool->loop, g->socket_path, now_usec() + timeout_usec, &slot_channel_ops, g,
                     &g->ch, &err) < 0)
        slot_fail(g, err->message);
}

/* ------------------------------------------------------------------ starting */

static void
slot_on_booted(Guest *g, Error *err)
{
    _cleanup_error_ Error *e = err;
    Pool *p = g->pool;

    if (e) {
        log_error("cold boot of %s failed: %s", g->name, e->message);
        if (g->probe)
            accel_probe_finished(g, false, e->message);
        if (g->tmpl && pool_template_unproven(p))
            pool_template_failed(p, e->message);
        g->state = SLOT_BOOT_SYNC; /* so that slot_destroy() cleans up */
        slot_destroy(g, true);
        return;
    }
    g->state = SLOT_BOOT_SYNC;
    g->prestart_req_id = 0;
    if (p->stopping && !g->probe) {
        slot_destroy(g, false);
        return;
    }
    slot_open_channel(g, g->probe ? p->cfg.kvm_probe_timeout_usec : p->cfg.boot_timeout_usec);
}

/* A slot whose XML was made for the other memory mode (a fallback happened while a worker
 * used it) gets a new one first. false: it could not, and the slot backs off. */
static bool
slot_xml_current(Guest *g)
{
    _cleanup_error_ Error *err = NULL;
    if (g->probe || g->tmpl || g->xml_memory == g->pool->memory || slot_refresh(g, &err) == 0)
        return true;
    log_error("guest %s: %s", g->name, err->message);
    g->state = SLOT_BACKOFF;
    slot_arm_timer(g, POOL_BACKOFF_MAX_USEC, slot_on_backoff_over);
    return false;
}

void
slot_start_boot(Guest *g)
{
    if (!slot_xml_current(g))
        return;
    g->state = SLOT_BOOTING;
    g->boot_started_usec = now_usec();
    job_boot(g, slot_on_booted);
}

static void
slot_on_restored(Guest *g, Error *err)
{
    _cleanup_error_ Error *e = err;
    Pool *p = g->pool;

    g->state = SLOT_SYNCING;
    if (e) {
        p->stats.restore_failures++;
        log_error("restore of %s failed: %s", g->name, e->message);
        slot_on_restore_failed(g, e->message);
        slot_destroy(g, true);
        return;
    }
    p->stats.restores++;
    p->clone_ever_started |= g->xml_memory == POOL_MEMORY_TEMPLATE;
    if (p->stopping) {
        slot_destroy(g, false);
        return;
    }
    slot_open_channel(g, p->cfg.sync_timeout_usec);
}

/* Twice in a row: remake what the slot restores from (its save, or its shape's template). */
static void
slot_on_restore_failed(Guest *g, const char *why)
{
    Pool *p = g->pool;
    bool clone = g->xml_memory == POOL_MEMORY_TEMPLATE;

    /* Clones of a template made this run that never start: the path does not work here. A
     * template reused from an earlier run (another QEMU, say) is remade first, below. */
    if (clone && p->template_ever_saved && !p->clone_ever_started &&
        ++p->clone_failures >= POOL_CLONE_FAILURES_BEFORE_FALLBACK)
        pool_template_failed(p, why);
    if (++g->restore_failures < POOL_RESTORE_FAILURES_BEFORE_REBOOT)
        return;
    if (clone && p->memory == POOL_MEMORY_TEMPLATE) {
        g->restore_failures = 0;
        shape_set_template_ok(g->shape, false);
        return;
    }
    g->snapshot_ok = false; /* remake the snapshot next time */
    (void) unlink(g->key_path);
}

static void
slot_start(Guest *g)
{
    if (!slot_xml_current(g))
        return;
    if (!g->snapshot_ok) {
        slot_start_boot(g);
        return;
    }
    g->state = SLOT_RESTORING;
    g->restore_started_usec = now_usec();
    job_restore(g, slot_on_restored);
}

/* ------------------------------------------------------------------ fill */

static bool
slot_is_starting(const Guest *g)
{
    return g->state == SLOT_BOOTING || g->state == SLOT_BOOT_SYNC || g->state == SLOT_SAVING ||
           g->state == SLOT_RESTORING;
}

static unsigned
pool_starting(Pool *p)
{
    unsigned n = 0;
    for (size_t i = 0; i < p->n_shapes; i++) {
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++)
            n += slot_is_starting(&p->shapes[i].slots[k]);
        n += p->shapes[i].tmpl && slot_is_starting(p->shapes[i].tmpl);
    }
    return n + (p->probe != NULL);
}

/* Slots that will be idle without further help: idle, or restoring/syncing towards it. */
static unsigned
shape_warming(const Shape *s)
{
    unsigned n = 0;
    for (unsigned k = 0; k < s->n_slots; k++) {
        SlotState st = s->slots[k].state;
        n += st == SLOT_IDLE || st == SLOT_RESTORING || st == SLOT_SYNCING || st == SLOT_PREPARING;
    }
    return n;
}

static Guest *
shape_pick_empty(Shape *s, bool want_snapshot)
{
    for (unsigned k = 0; k < s->n_slots; k++)
        if (s->slots[k].state == SLOT_EMPTY && s->slots[k].snapshot_ok == want_snapshot)
            return &s->slots[k];
    return NULL;
}

void
pool_fill(Pool *p)
{
    if (!p->accel_decided || p->stopping)
        return;
    unsigned budget = p->cfg.refill_concurrency;
    unsigned starting = pool_starting(p);

    /* First the warm targets: restore where a snapshot exists, else boot one. */
    for (size_t i = 0; i < p->n_shapes && starting < budget; i++) {
        Shape *s = &p->shapes[i];
        for (unsigned w = shape_warming(s); w < s->warm && starting < budget; w++) {
            Guest *g = shape_pick_empty(s, true);
            if (!g)
                break; /* snapshots are being made below */
            slot_start(g);
            starting++;
        }
    }
    /* Then snapshots for every slot that lacks one, so later refills only restore; or in
     * template mode, the one template of each shape that lacks it. */
    for (size_t i = 0; i < p->n_shapes && starting < budget; i++) {
        Guest *g, *t = p->shapes[i].tmpl;
        if (p->memory == POOL_MEMORY_TEMPLATE) {
            if (!p->shapes[i].template_ok && t->state == SLOT_EMPTY && t->xml) {
                slot_start_boot(t);
                starting++;
            }
            continue;
        }
        while (starting < budget && (g = shape_pick_empty(&p->shapes[i], false))) {
            slot_start_boot(g);
            starting++;
        }
    }
}

/* ------------------------------------------------------------------ failure and destroy */

void
slot_fail(Guest *g, const char *why)
{
    char safe[256];
    log_warn("guest %s: %s; destroying it", g->name,
             log_escape(safe, sizeof(safe), why, strlen(why)));
    if (g->probe && (g->state == SLOT_BOOT_SYNC || g->state == SLOT_BOOTING))
        accel_probe_finished(g, false, why);
    if (g->state == SLOT_ADOPTING) {
        pool_adopt_failed(g, why); /* busy now: its owner releases it */
        return;
    }
    if (g->state == SLOT_BUSY && g->ops && !g->lost_notified) {
        _cleanup_error_ Error *err = NULL;
        error_set(&err, E_GUEST, 0, "%s", why);
        g->lost_notified = true;
        g->ops->lost(g, err, g->userdata); /* may call pool_release() */
    }
    slot_destroy(g, true);
}

static void
slot_on_gone_poll(Loop *l, void *userdata)
{
    Guest *g = userdata;
    (void) l;
    g->gone_timer = 0;
    uint64_t now = now_usec();
    bool gone = virt_pid_gone(g->qemu_pid);
    if (gone || now - g->destroy_requested_usec > POOL_GONE_GIVE_UP_USEC) {
        g->pid_gone = true;
        g->gone_usec = now;
        if (gone && !g->probe)
            histogram_add(&g->pool->stats.destroy_to_gone, now - g->destroy_requested_usec);
        slot_maybe_finish(g);
        return;
    }
    g->gone_timer = loop_add_timer(g->pool->loop, now + POOL_GONE_POLL_USEC, slot_on_gone_poll, g);
}

static void
slot_on_destroyed(Guest *g, Error *err)
{
    _cleanup_error_ Error *e = err;
    if (e) /* libvirt may still hold the domain (libvirtd restarting, say): retry later */
        log_error("destroy of %s: %s; trying again after a backoff", g->name, e->message);
    g->destroy_failed = e != NULL;
    g->failed |= g->destroy_failed;
    g->destroy_done = true;
    if (!g->pid_gone) { /* pid unknown, or the poll gave up: the call's return is all we have */
        loop_cancel_timer(g->pool->loop, g->gone_timer);
        g->gone_timer = 0;
        g->pid_gone = true;
        g->gone_usec = now_usec();
    }
    slot_maybe_finish(g);
}

void
slot_destroy(Guest *g, bool failed)
{
    Pool *p = g->pool;

    g->failed |= failed;
    switch (g->state) {
    case SLOT_EMPTY:
    case SLOT_BACKOFF:
    case SLOT_DESTROYING:
    case SLOT_HELD:
    case SLOT_KEPT:
    case SLOT_BOOTING:
    case SLOT_RESTORING:
    case SLOT_SAVING:
        return; /* nothing runs, or a job runs whose completion destroys (see handlers) */
    default:
        break;
    }
    slot_close_channel(g);
    slot_cancel_timer(g);
    g->state = SLOT_DESTROYING;
    g->destroy_done = false;
    g->pid_gone = g->qemu_pid <= 0;
    g->destroy_requested_usec = g->gone_usec = now_usec();
    p->stats.destroys += !g->probe && !g->tmpl;
    /* Without the guest's help and without waiting for libvirt (whose destroy takes 1-2 s on
     * hosts whose PID 1 reaps late): QEMU dies now; the destroy job tidies libvirt's state. */
    if (!g->pid_gone)
        (void) virt_kill_qemu(g->qemu_pid, g->name);
    if (!g->pid_gone)
        g->gone_timer = loop_add_timer(p->loop, now_usec(), slot_on_gone_poll, g);
    job_destroy(g, slot_on_destroyed);
}

static void
slot_on_backoff_over(Loop *l, void *userdata)
{
    Guest *g = userdata;
    (void) l;
    g->timer = 0;
    if (g->destroy_failed && !g->pool->stopping) { /* (stopping: the final sweep does it) */
        g->state = SLOT_DESTROYING;
        g->destroy_done = false;
        g->pid_gone = true;
        job_destroy(g, slot_on_destroyed);
        return;
    }
    g->destroy_failed = false;
    g->state = SLOT_EMPTY;
    pool_fill(g->pool);
}

static void
slot_reset_bookkeeping(Guest *g)
{
    g->qemu_pid = -1;
    g->ops = NULL;
    g->userdata = NULL;
    g->lost_notified = false;
    g->gone_fn = NULL;
    g->gone_userdata = NULL;
    g->released = false;
    g->ping_req_id = 0;
}

static void
slot_maybe_finish(Guest *g)
{
    Pool *p = g->pool;

    if (g->state != SLOT_DESTROYING && g->state != SLOT_HELD)
        return;
    if (g->pid_gone && g->released && g->gone_fn) { /* hand the disk to the owner */
        GuestGoneFn fn = g->gone_fn;
        g->gone_fn = NULL;
        g->awaiting_recycle = true;
        fn(g, g->destroy_requested_usec, g->gone_usec, g->gone_userdata);
    }
    if (!g->destroy_done || !g->pid_gone)
        return;
    if (g->probe) {
        accel_probe_finished(g, false, NULL); /* frees the probe once its domain is gone */
        return;
    }
    if (g->ops || g->awaiting_recycle) { /* still owned, or the disk is being extracted */
        g->state = SLOT_HELD;
        return;
    }
    slot_reset_bookkeeping(g);
    if (g->failed && !p->stopping) {
        g->failed = false;
        g->backoff_usec = g->backoff_usec ? MIN(g->backoff_usec * 2, POOL_BACKOFF_MAX_USEC)
                                          : POOL_BACKOFF_MIN_USEC;
        g->state = SLOT_BACKOFF;
        slot_arm_timer(g, g->backoff_usec, slot_on_backoff_over);
        return;
    }
    if (!g->failed)
        g->backoff_usec = 0;
    g->failed = false;
    g->state = SLOT_EMPTY;
    pool_fill(p);
    pool_check_stopped(p);
}

/* ------------------------------------------------------------------ owner side */

void
pool_release(Pool *p, Guest *g, GuestGoneFn gone, void *userdata)
{
    (void) p;
    g->ops = NULL;
    g->userdata = NULL;
    g->released = true;
    g->gone_fn = gone;
    g->gone_userdata = userdata;
    if (g->state == SLOT_BUSY)
        slot_destroy(g, false);
    else
        slot_maybe_finish(g); /* already destroying after a failure */
}

void
pool_recycle(Pool *p, Guest *g)
{
    (void) p;
    g->awaiting_recycle = false;
    slot_maybe_finish(g);
}
