/* The pool's API: construction, start and stop, status, hand-out. The slot cycle itself is in
 * pool_slot.c, the blocking steps in pool_jobs.c. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "pool_internal.h"
#include "sha256.h"
#include "timeutil.h"

#define POOL_SNAPSHOT_KEY_MAX_BYTES 128

static bool
name_ok(const char *s, size_t max, bool allow_trailing_dash)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
        return false;
    return allow_trailing_dash || s[n - 1] != '-';
}

static int
pool_check_config(const PoolConfig *c, Error **errp)
{
    if (!c->state_dir || c->state_dir[0] != '/')
        return error_set(errp, E_INVALID, 0, "pool: state_dir must be an absolute path");
    if (!name_ok(c->domain_prefix, POOL_PREFIX_MAX_BYTES, true))
        return error_set(errp, E_INVALID, 0, "pool: domain_prefix must be 1..%d of [a-z0-9-]",
                         POOL_PREFIX_MAX_BYTES);
    if (c->n_shapes == 0 || c->n_shapes > POOL_SHAPES_MAX)
        return error_set(errp, E_INVALID, 0, "pool: 1..%d pools must be configured",
                         POOL_SHAPES_MAX);
    if (c->kvm_probe_append && (strlen(c->kvm_probe_append) > POOL_PROBE_APPEND_MAX_BYTES ||
                                strpbrk(c->kvm_probe_append, "\n\r")))
        return error_set(errp, E_INVALID, 0,
                         "pool: kvm_probe_append must be one line of at most %d bytes",
                         POOL_PROBE_APPEND_MAX_BYTES);
    if (c->refill_concurrency == 0)
        return error_set(errp, E_INVALID, 0, "pool: refill_concurrency must be >= 1");
    size_t total = 0;
    for (size_t i = 0; i < c->n_shapes; i++) {
        const PoolShapeConfig *s = &c->shapes[i];
        if (!name_ok(s->name, POOL_SHAPE_NAME_MAX_BYTES, false))
            return error_set(errp, E_INVALID, 0, "pool name must be 1..%d of [a-z0-9-]",
                             POOL_SHAPE_NAME_MAX_BYTES);
        for (size_t k = 0; k < i; k++)
            if (strcmp(c->shapes[k].name, s->name) == 0)
                return error_set(errp, E_INVALID, 0, "pool %s is configured twice", s->name);
        if (s->slots == 0 || s->warm > s->slots)
            return error_set(errp, E_INVALID, 0, "pool %s: need slots >= 1 and warm <= slots",
                             s->name);
        total += s->slots;
    }
    if (total > POOL_SLOTS_MAX)
        return error_set(errp, E_INVALID, 0, "pool: %zu slots in all, at most %d", total,
                         POOL_SLOTS_MAX);
    return 0;
}

/* A stable UUID per slot: derived from the state directory and the domain name. */
void
slot_uuid(const char *state_dir, const char *name, char out[37])
{
    uint8_t d[SHA256_BYTES];
    Sha256 h;
    sha256_init(&h);
    sha256_update(&h, "stockade-slot-uuid\n", 19);
    sha256_update(&h, state_dir, strlen(state_dir) + 1);
    sha256_update(&h, name, strlen(name));
    sha256_final(&h, d);
    d[6] = (uint8_t) ((d[6] & 0x0f) | 0x40);
    d[8] = (uint8_t) ((d[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12],
             d[13], d[14], d[15]);
}

int
guest_init_paths(Guest *g, const char *state_dir)
{
    return asprintf(&g->dir, "%s/guests/%s", state_dir, g->name) < 0 ||
                   asprintf(&g->workspace_path, "%s/workspace.raw", g->dir) < 0 ||
                   asprintf(&g->socket_path, "%s/channel.sock", g->dir) < 0 ||
                   asprintf(&g->console_path, "%s/console.log", g->dir) < 0
               ? -1
               : 0;
}

void
guest_free_fields(Guest *g)
{
    channel_free(g->ch);
    free(g->dir), free(g->workspace_path), free(g->socket_path), free(g->console_path);
    free(g->save_path), free(g->key_path), free(g->xml), free(g->cmdline);
    error_free(g->adopt_err);
}

static int
slot_init(Pool *p, Shape *s, unsigned k, Guest *g)
{
    const char *st = p->cfg.state_dir;
    g->pool = p;
    g->shape = s;
    g->index = k;
    g->qemu_pid = -1;
    g->state = SLOT_EMPTY;
    snprintf(g->name, sizeof(g->name), "%s%s-%u", p->cfg.domain_prefix, s->name, k);
    slot_uuid(st, g->name, g->uuid);
    if (guest_init_paths(g, st) < 0 ||
        asprintf(&g->save_path, "%s/snapshots/%s.save", st, g->name) < 0 ||
        asprintf(&g->key_path, "%s/snapshots/%s.key", st, g->name) < 0)
        return -1;
    return 0;
}

static char *
xstrdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int
pool_copy_config(Pool *p, const PoolConfig *cfg, Error **errp)
{
    p->cfg = *cfg;
    p->cfg.state_dir = xstrdup_or_null(cfg->state_dir);
    p->cfg.libvirt_uri = xstrdup_or_null(cfg->libvirt_uri);
    p->cfg.domain_prefix = xstrdup_or_null(cfg->domain_prefix);
    p->cfg.kvm_probe_append = xstrdup_or_null(cfg->kvm_probe_append ? cfg->kvm_probe_append : "");
    p->cfg.template_dir = xstrdup_or_null(cfg->template_dir ? cfg->template_dir : "");
    p->cfg.shapes = NULL; /* copied into p->shapes */
    if (!p->cfg.state_dir || !p->cfg.libvirt_uri || !p->cfg.domain_prefix ||
        !p->cfg.kvm_probe_append || !p->cfg.template_dir ||
        asprintf(&p->template_path, "%s/templates/workspace-%um.raw", cfg->state_dir,
                 cfg->workspace_mib) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "pool config");
    return 0;
}

static int
pool_init_shapes(Pool *p, const PoolConfig *cfg, Error **errp)
{
    size_t total = 0;
    for (size_t i = 0; i < cfg->n_shapes; i++)
        total += cfg->shapes[i].slots;
    p->disk_paths = calloc(total, sizeof(char *));
    if (!p->disk_paths)
        return error_set(errp, E_INTERNAL, ENOMEM, "pool");
    for (size_t i = 0; i < cfg->n_shapes; i++) {
        const PoolShapeConfig *c = &cfg->shapes[i];
        Shape *s = &p->shapes[p->n_shapes++];
        *s = (Shape){.vcpus = c->vcpus, .memory_mib = c->memory_mib, .warm = c->warm,
                     .n_slots = c->slots, .code_kernel = c->code_kernel};
        if (!(s->name = strdup(c->name)) || !(s->image_dir = strdup(c->image_dir)) ||
            !(s->slots = calloc(c->slots, sizeof(Guest))))
            return error_set(errp, E_INTERNAL, ENOMEM, "pool");
        if (image_load(c->image_dir, &s->image, errp) < 0)
            return error_prefix(errp, "pool %s", c->name);
        for (unsigned k = 0; k < c->slots; k++) {
            if (slot_init(p, s, k, &s->slots[k]) < 0)
                return error_set(errp, E_INTERNAL, ENOMEM, "pool");
            s->slots[k].disk_index = p->n_disks;
            p->disk_paths[p->n_disks++] = s->slots[k].workspace_path;
        }
        if (p->memory == POOL_MEMORY_TEMPLATE && template_guest_new(p, s, errp) < 0)
            return -1;
    }
    return 0;
}

/* The configured memory mode; the template directory is chosen before the shapes need it. */
static int
pool_init_memory(Pool *p, Error **errp)
{
    p->memory = p->cfg.guest_memory;
    if (p->memory == POOL_MEMORY_COPY) {
        snprintf(p->memory_reason, sizeof(p->memory_reason),
                 "copy: configured (a private save image per slot)");
        return 0;
    }
    return pool_template_choose_dir(p, errp);
}

int
pool_new(Loop *l, WorkQueue *q, const PoolConfig *cfg, Pool **ret, Error **errp)
{
    Pool *p;

    if (pool_check_config(cfg, errp) < 0)
        return -1;
    if (!(p = calloc(1, sizeof(*p))))
        return error_set(errp, E_INTERNAL, ENOMEM, "pool");
    p->loop = l;
    p->q = q;
    p->template_dir_fd = -1;
    if (pool_copy_config(p, cfg, errp) < 0 || pool_make_state_dirs(p, errp) < 0 ||
        pool_init_memory(p, errp) < 0 || pool_init_shapes(p, cfg, errp) < 0 ||
        virt_open(p->cfg.libvirt_uri, &p->virt, errp) < 0) {
        pool_free(p);
        return -1;
    }
    *ret = p;
    return 0;
}

void
pool_free(Pool *p)
{
    if (!p)
        return;
    loop_cancel_timer(p->loop, p->fill_timer);
    for (size_t i = 0; i < p->n_shapes; i++) {
        Shape *s = &p->shapes[i];
        for (unsigned k = 0; s->slots && k < s->n_slots; k++) {
            loop_cancel_timer(p->loop, s->slots[k].timer);
            loop_cancel_timer(p->loop, s->slots[k].gone_timer);
            guest_free_fields(&s->slots[k]);
        }
        if (s->tmpl) {
            loop_cancel_timer(p->loop, s->tmpl->timer);
            loop_cancel_timer(p->loop, s->tmpl->gone_timer);
            template_guest_free(s->tmpl);
        }
        free(s->mem_path), free(s->mem_new_path), free(s->state_path);
        free(s->state_new_path), free(s->tkey_path);
        free(s->slots), free(s->name), free(s->image_dir);
        image_free(s->image);
    }
    virt_close(p->virt);
    free(p->disk_paths);
    free(p->template_path);
    free(p->template_dir);
    safe_close(p->template_dir_fd);
    free((char *) p->cfg.template_dir);
    free((char *) p->cfg.state_dir), free((char *) p->cfg.libvirt_uri);
    free((char *) p->cfg.domain_prefix), free((char *) p->cfg.kvm_probe_append);
    free(p);
}

/* ------------------------------------------------------------------ start */

static bool
snapshot_matches(const Guest *g)
{
    _cleanup_free_ char *key = NULL;
    size_t len;
    struct stat st;
    if (stat(g->save_path, &st) < 0 || !S_ISREG(st.st_mode))
        return false;
    if (read_file_bounded(g->key_path, POOL_SNAPSHOT_KEY_MAX_BYTES, &key, &len) < 0)
        return false;
    return strcmp(key, g->key) == 0;
}

static const Guest *
pool_find_slot(Pool *p, const char *name, size_t name_len)
{
    for (size_t i = 0; i < p->n_shapes; i++)
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++) {
            const Guest *g = &p->shapes[i].slots[k];
            if (strlen(g->name) == name_len && strncmp(g->name, name, name_len) == 0)
                return g;
        }
    return NULL;
}

const Guest *
pool_slot_named(Pool *p, const char *name)
{
    return pool_find_slot(p, name, strlen(name));
}

/* Removes snapshot files that belong to no slot or whose key no longer matches. */
static void
pool_prune_snapshots(Pool *p)
{
    _cleanup_free_ char *dir = NULL;
    if (asprintf(&dir, "%s/snapshots", p->cfg.state_dir) < 0)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        const char *dot = strchr(e->d_name, '.');
        if (e->d_name[0] == '.' || !dot)
            continue;
        const Guest *g = pool_find_slot(p, e->d_name, (size_t) (dot - e->d_name));
        if (g && p->memory == POOL_MEMORY_COPY && (g->snapshot_ok || strcmp(dot, ".key") == 0))
            continue; /* template mode: per-slot save images go */
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            log_info("removed stale snapshot file %s/%s", dir, e->d_name);
    }
    closedir(d);
}

int
slot_refresh(Guest *g, Error **errp)
{
    if (slot_prepare_xml(g, errp) < 0)
        return -1;
    g->snapshot_ok = g->pool->memory == POOL_MEMORY_TEMPLATE ? g->shape->template_ok
                                                            : snapshot_matches(g);
    return 0;
}

/* Template mode: each shape's template XML and key, and whether its files are still valid. */
static void
pool_check_templates(Pool *p)
{
    for (size_t i = 0; i < p->n_shapes && p->memory == POOL_MEMORY_TEMPLATE; i++) {
        Shape *s = &p->shapes[i];
        _cleanup_error_ Error *err = NULL;
        if (slot_prepare_xml(s->tmpl, &err) < 0) {
            log_error("pool %s: template: %s", s->name, err->message);
            continue; /* no XML: never booted, the shape stays empty */
        }
        s->template_ok = template_matches(s);
        if (s->template_ok)
            log_info("pool %s: reusing the template in %s", s->name, p->template_dir);
    }
    if (p->memory == POOL_MEMORY_TEMPLATE)
        pool_prune_templates(p);
}

static void
pool_on_accel_decided(Pool *p)
{
    pool_check_templates(p);
    for (size_t i = 0; i < p->n_shapes; i++)
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++) {
            _cleanup_error_ Error *err = NULL;
            if (slot_refresh(&p->shapes[i].slots[k], &err) < 0)
                log_error("pool %s: %s", p->shapes[i].name, err->message);
            /* on failure the slot stays empty without a key: never started */
        }
    log_info("pool guest memory: %s", p->memory_reason);
    pool_prune_snapshots(p);
    pool_fill(p);
}

static void
pool_on_reconciled(Pool *p, Error *err)
{
    _cleanup_error_ Error *e = err;
    if (e) {
        log_error("pool start-up failed: %s", e->message);
        return; /* nothing will be filled; status shows accel undecided */
    }
    p->disks_ready = true;
    pool_adopt_continue(p); /* an earlier run's guests that still run: their channels */
    if (p->stopping) {
        pool_check_stopped(p);
        return;
    }
    pool_decide_accel(p, pool_on_accel_decided);
}

void
pool_start(Pool *p)
{
    if (p->started)
        return;
    p->started = true;
    job_reconcile(p, pool_on_reconciled);
}

/* ------------------------------------------------------------------ stop */

/* A domain with the pool's prefix that no slot accounts for: a start whose reply libvirtd
 * lost when it restarted mid-call, then finished by the new libvirtd. */
static void
pool_on_swept(Pool *p, char **destroyed, Error *err)
{
    _cleanup_error_ Error *e = err;
    for (char **n = destroyed; n && *n; n++)
        log_warn("stop: destroyed %s, a domain with this daemon's prefix that no slot tracked "
                 "(started by a libvirt call whose reply was lost?)", *n);
    if (e)
        log_error("stop: sweep of leftover domains failed: %s", e->message);
    pool_check_stopped(p);
}

void
pool_check_stopped(Pool *p)
{
    if (!p->stopping || !p->stop_done || p->jobs > 0 || p->probe)
        return;
    for (size_t i = 0; i < p->n_shapes; i++) {
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++) {
            SlotState st = p->shapes[i].slots[k].state;
            if (st != SLOT_EMPTY && st != SLOT_HELD && st != SLOT_BACKOFF && st != SLOT_KEPT)
                return;
        }
        SlotState t = p->shapes[i].tmpl ? p->shapes[i].tmpl->state : SLOT_EMPTY;
        if (t != SLOT_EMPTY && t != SLOT_BACKOFF)
            return;
    }
    if (!p->swept) { /* the job counts in p->jobs: its completion calls back here */
        p->swept = true;
        job_sweep(p, pool_on_swept);
        return;
    }
    pool_release_templates(p);
    void (*done)(void *) = p->stop_done;
    p->stop_done = NULL;
    done(p->stop_userdata);
}

void
pool_stop(Pool *p, void (*done)(void *userdata), void *userdata)
{
    p->stopping = true;
    loop_cancel_timer(p->loop, p->fill_timer);
    p->fill_timer = 0;
    p->stop_done = done;
    p->stop_userdata = userdata;
    for (size_t i = 0; i < p->n_shapes; i++)
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++) {
            Guest *g = &p->shapes[i].slots[k];
            if (g->state == SLOT_KEPT)
                continue; /* shutdown = keep: the next start adopts it */
            if (g->state == SLOT_BUSY)
                slot_fail(g, "the daemon is shutting down");
            else
                slot_destroy(g, false);
        }
    for (size_t i = 0; i < p->n_shapes; i++)
        if (p->shapes[i].tmpl)
            slot_destroy(p->shapes[i].tmpl, false);
    pool_check_stopped(p);
}

/* ------------------------------------------------------------------ status */

void
pool_status(Pool *p, PoolStatus *ret)
{
    *ret = p->stats;
    ret->accel = p->accel;
    ret->accel_decided = p->accel_decided;
    ret->disks_ready = p->disks_ready;
    ret->accel_reason = p->accel_decided ? p->accel_reason : "not decided yet";
    ret->guest_memory = p->memory;
    ret->guest_memory_reason = p->memory_reason;
    ret->template_dir = p->memory == POOL_MEMORY_TEMPLATE ? p->template_dir : "";
    ret->n_shapes = p->n_shapes;
    for (size_t i = 0; i < p->n_shapes; i++) {
        Shape *s = &p->shapes[i];
        PoolShapeStatus *o = &ret->shapes[i];
        *o = (PoolShapeStatus){.name = s->name, .image = s->image->name,
                               .content_hash = s->image->content_hash,
                               .vcpus = s->vcpus, .memory_mib = s->memory_mib,
                               .warm = s->warm, .slots = s->n_slots,
                               .template_ready = s->template_ok,
                               .code_kernel = !s->code_kernel         ? "off"
                                              : s->code_kernel_failed ? "failed"
                                                                      : "on"};
        for (unsigned k = 0; k < s->n_slots; k++) {
            const Guest *g = &s->slots[k];
            o->snapshots_ready += g->snapshot_ok;
            switch (g->state) {
            case SLOT_IDLE: o->idle++; break;
            case SLOT_BUSY: case SLOT_KEPT: case SLOT_ADOPTING: o->busy++; break;
            case SLOT_DESTROYING: case SLOT_HELD: o->draining++; break;
            case SLOT_EMPTY: case SLOT_BACKOFF: break;
            default: o->starting++; break;
            }
        }
    }
}

bool
pool_is_full(Pool *p)
{
    PoolStatus st;
    pool_status(p, &st);
    for (size_t i = 0; i < st.n_shapes; i++)
        if (st.shapes[i].idle < st.shapes[i].warm)
            return false;
    return st.accel_decided;
}

/* ------------------------------------------------------------------ hand-out */

static void
pool_on_fill_timer(Loop *l, void *userdata)
{
    Pool *p = userdata;
    (void) l;
    p->fill_timer = 0;
    pool_fill(p);
}

/* The refill a take needs, after refill_holdoff_ms: a restore starting (libvirtd, a new QEMU)
 * competes for the host's CPUs with the session that was just handed out. */
static void
pool_fill_soon(Pool *p)
{
    if (p->cfg.refill_holdoff_ms == 0) {
        pool_fill(p);
        return;
    }
    if (p->fill_timer == 0)
        p->fill_timer = loop_add_timer(p->loop,
                                       now_usec() + p->cfg.refill_holdoff_ms * USEC_PER_MSEC,
                                       pool_on_fill_timer, p);
}

Guest *
pool_take(Pool *p, const char *shape, const GuestOps *ops, void *userdata, Error **errp)
{
    for (size_t i = 0; i < p->n_shapes; i++) {
        Shape *s = &p->shapes[i];
        if (strcmp(s->name, shape) != 0)
            continue;
        for (unsigned k = 0; k < s->n_slots; k++) {
            Guest *g = &s->slots[k];
            if (g->state != SLOT_IDLE || !g->ch || !channel_is_ready(g->ch))
                continue;
            g->state = SLOT_BUSY;
            g->ops = ops;
            g->userdata = userdata;
            g->lost_notified = false;
            g->released = false;
            pool_fill_soon(p);
            return g;
        }
        error_set(errp, E_UNAVAILABLE, 0, "no warm guest in pool %s right now", shape);
        return NULL;
    }
    error_set(errp, E_NOT_FOUND, 0, "no pool named %s", shape);
    return NULL;
}

int
guest_send(Guest *g, HostMsg *m, uint32_t *ret_req_id, Error **errp)
{
    if (g->state != SLOT_BUSY || !g->ch)
        return error_set(errp, E_CONFLICT, 0, "guest %s is gone", g->name);
    if (msg_host_needs_req_id(m->body_case))
        m->req_id = channel_next_req_id(g->ch);
    if (channel_send(g->ch, m, errp) < 0)
        return -1;
    if (ret_req_id)
        *ret_req_id = m->req_id;
    return 0;
}

int
guest_hello(Guest *g, const Stockade__Runner__SessionConfig *cfg, uint32_t *ret_req_id,
            Error **errp)
{
    uint8_t entropy[HELLO_ENTROPY_BYTES];
    Stockade__Runner__Hello hello = STOCKADE__RUNNER__HELLO__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;

    if (getrandom(entropy, sizeof(entropy), 0) != (ssize_t) sizeof(entropy))
        return error_set(errp, E_INTERNAL, errno, "getrandom");
    hello.wall_time_ns = wall_usec() * NSEC_PER_USEC;
    hello.entropy.data = entropy;
    hello.entropy.len = sizeof(entropy);
    hello.config = (Stockade__Runner__SessionConfig *) cfg;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_HELLO;
    m.hello = &hello;
    int r = guest_send(g, &m, ret_req_id, errp);
    explicit_bzero(entropy, sizeof(entropy));
    return r;
}

size_t
guest_send_backlog_bytes(const Guest *g)
{
    return g->ch ? channel_outq_bytes(g->ch) : 0;
}

void
guest_set_reading(Guest *g, bool on)
{
    if (g->ch)
        channel_set_reading(g->ch, on);
}

const char *
guest_name(const Guest *g)
{
    return g->name;
}

const char *
guest_workspace_path(const Guest *g)
{
    return g->workspace_path;
}

const char *
guest_shape(const Guest *g)
{
    return g->shape->name;
}

size_t
pool_workspace_disks(Pool *p, const char *const **ret_paths)
{
    *ret_paths = p->disk_paths;
    return p->n_disks;
}

size_t
guest_disk_index(const Guest *g)
{
    return g->disk_index;
}

void
pool_set_on_idle(Pool *p, void (*fn)(void *userdata), void *userdata)
{
    p->on_idle = fn;
    p->on_idle_userdata = userdata;
}

static Guest *
pool_slot_by_disk(Pool *p, size_t disk_index)
{
    for (size_t i = 0; i < p->n_shapes; i++)
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++)
            if (p->shapes[i].slots[k].disk_index == disk_index)
                return &p->shapes[i].slots[k];
    return NULL;
}

ssize_t
pool_hold_disk(Pool *p, const char *domain_name)
{
    Guest *g = (Guest *) pool_find_slot(p, domain_name, strlen(domain_name));
    if (!g || p->started)
        return -1;
    g->state = SLOT_HELD; /* as if destroyed with its disk kept for extraction */
    g->destroy_done = g->pid_gone = true;
    g->awaiting_recycle = true;
    return (ssize_t) g->disk_index;
}

void
pool_unhold_disk(Pool *p, size_t disk_index)
{
    Guest *g = pool_slot_by_disk(p, disk_index);
    if (g && g->state == SLOT_HELD)
        pool_recycle(p, g);
}
