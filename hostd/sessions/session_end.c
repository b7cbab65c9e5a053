/* Every way a session ends. A clean end whose runner still answers (a completed task, a
 * closed session) hands its files over the channel (session_finalize.c) and ends without a
 * disk read. Every other end, and a finalize that fails, stops accepting the guest, destroys
 * it without its help, pulls the workspace out with the warm extraction appliance (or a cold
 * one when none is up), merges with the live mirror, and ends.
 * Also owns the extraction appliance: launched as soon as the pool's disks exist, in parallel
 * with the accel decision (under TCG until KVM is proven: TCG works on every host), relaunched
 * with KVM once the pool decides KVM and no salvage uses it, and when a salvage leaves it
 * dead. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

#define APPLIANCE_POLL_USEC (100 * 1000)
#define APPLIANCE_RETRY_USEC (30 * 1000000)


static void
session_cancel_timers(Session *s)
{
    Loop *l = s->mgr->loop;
    loop_cancel_timer(l, s->timeout_timer);
    loop_cancel_timer(l, s->pending_timer);
    loop_cancel_timer(l, s->hello_timer);
    s->timeout_timer = s->pending_timer = s->hello_timer = 0;
    for (Exec *e = s->execs; e; e = e->next) {
        loop_cancel_timer(l, e->timer);
        e->timer = 0;
    }
}

static void
session_unqueue(Session *s)
{
    Sessions *m = s->mgr;
    Session **pp = &m->pending_head;
    while (*pp && *pp != s)
        pp = &(*pp)->next_pending;
    if (*pp)
        *pp = s->next_pending;
    m->pending_tail = &m->pending_head;
    while (*m->pending_tail)
        m->pending_tail = &(*m->pending_tail)->next_pending;
    s->next_pending = NULL;
}

static void
session_on_gone(Guest *g, uint64_t requested_usec, uint64_t gone_usec, void *userdata)
{
    Session *s = userdata;
    (void) g;
    session_event(s, "guest.destroyed", 0, NULL, 0,
                  json_pack("{s:I}", "destroy_ms",
                            (json_int_t) ((gone_usec - requested_usec) / 1000)));
    session_set_state(s, ST_EXTRACTING, NULL);
    session_extract(s);
}

void
session_release_guest(Session *s)
{
    s->accepting = false;
    if (s->rec.stopped_usec == 0)
        s->rec.stopped_usec = (int64_t) wall_usec(); /* the guest's life, and its charge, end */
    mirror_abort(s);
    session_egress_stop(s); /* every stream closes before the guest goes */
    session_guest_events_summary(s); /* nothing from the guest counts from here on */
    pool_release(s->mgr->pool, s->guest, session_on_gone, s);
}

/* A session that never had a guest ends at once: nothing to destroy, nothing to salvage. */
static void
session_end_unbound(Session *s, const char *reason)
{
    Sessions *m = s->mgr;
    artifacts_drop_work(m, s->rec.id);
    session_set_state(s, ST_ENDED, reason);
    m->stats.ended++;
    session_free(s);
    sessions_check_stopped(m);
}

void
session_end(Session *s, const char *reason)
{
    Sessions *m = s->mgr;

    if (s->state >= ST_STOPPING)
        return; /* the first reason wins */
    bool finalize = session_finalize_wanted(s, reason);
    s->accepting = finalize; /* the runner's last mirror records and its manifest come */
    session_cancel_timers(s);
    session_ops_fail_all(s, reason);
    if (strcmp(reason, "cancelled") == 0)
        m->stats.cancels++;
    else if (strcmp(reason, "timed_out") == 0)
        m->stats.timeouts++;
    if (s->state == ST_PENDING) {
        session_unqueue(s);
        session_end_unbound(s, reason);
        return;
    }
    session_set_state(s, ST_STOPPING, reason);
    if (!s->guest) { /* lost before a guest was bound */
        session_end_unbound(s, reason);
        return;
    }
    if (finalize)
        session_finalize_start(s);
    else
        session_release_guest(s);
}

/* ------------------------------------------------------------------ extraction */

static void
appliance_free_work(void *userdata)
{
    extract_appliance_free(userdata);
}

static void
appliance_on_timer(Loop *l, void *userdata)
{
    (void) l;
    sessions_extract_appliance_tick(userdata);
}

typedef struct {
    Session *s;
    Sessions *m;
    bool force_tcg;
    ExtractAppliance *appliance; /* NULL: cold salvage of disk_path */
    char *disk_path;
    size_t disk_index;
    ExtractStats stats;
    ExtractLimits limits; /* the global caps, workspace bytes at min(global, tenant) */
    Error *err;
    uint64_t merged_bytes;
    uint32_t merged_files;
    char id[SESSION_ID_BYTES];
} ExtractJob;

static void
extract_job_work(void *userdata)
{
    ExtractJob *j = userdata;
    _cleanup_free_ char *dir = NULL;
    ExtractConfig xc = {.force_tcg = j->force_tcg, .state_dir = j->m->cfg.state_dir};

    if (asprintf(&dir, "%s/%s/.salvage", j->m->artifacts_dir, j->id) < 0) {
        error_set(&j->err, E_INTERNAL, ENOMEM, "salvage path");
        return;
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        error_set(&j->err, E_IO, errno, "create %s", dir);
        return;
    }
    _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        error_set(&j->err, E_IO, errno, "open %s", dir);
        return;
    }
    int r = j->appliance
                ? extract_salvage(j->appliance, j->disk_index, fd, &j->limits, &j->stats, &j->err)
                : extract_salvage_cold(j->disk_path, &xc, fd, &j->limits, &j->stats, &j->err);
    (void) r; /* files salvaged before a failure still count: merge what is there */
    bool capped = false;
    artifacts_merge(j->m->artifacts_dir, j->id, j->m->cfg.extract.max_files, &j->merged_bytes,
                    &j->merged_files, &capped, j->err ? NULL : &j->err);
    j->stats.truncated |= capped;
}

static void
extract_job_done(void *userdata)
{
    ExtractJob *j = userdata;
    Session *s = j->s;
    Sessions *m = j->m;
    json_t *attrs = json_pack("{s:s,s:I,s:i,s:i,s:b,s:s,s:I}", "via", "salvage", "bytes",
                              (json_int_t) j->merged_bytes,
                              "files", (int) j->merged_files, "skipped", (int) j->stats.skipped,
                              "truncated", j->stats.truncated, "stop",
                              extract_stop_name(j->stats.stop), "salvage_ms",
                              (json_int_t) ((now_usec() - s->extract_started_usec) / 1000));

    if (s->fin_fallback) /* a finalize was tried and failed: say why */
        json_object_set_new(attrs, "finalize_fallback", json_string(s->fin_fallback));
    m->stats.artifacts_salvage++;
    histogram_add(&m->stats.extraction, now_usec() - s->extract_started_usec);
    m->stats.extraction_bytes += j->stats.bytes;
    m->extractions_running -= j->appliance != NULL;
    if (j->err) {
        m->stats.extraction_failures++;
        json_object_set_new(attrs, "error", json_string(j->err->message));
        log_warn("session %s: extraction: %s", s->rec.id, j->err->message);
    }
    if (j->appliance && !extract_appliance_alive(j->appliance) && m->appliance == j->appliance) {
        log_warn("extraction appliance died; relaunching");
        m->appliance = NULL;
        m->appliance_state = APPLIANCE_WANTED;
        workq_submit(m->q, appliance_free_work, NULL, j->appliance);
    }
    s->rec.artifact_bytes = j->merged_bytes;
    s->rec.artifact_files = j->merged_files;
    s->rec.artifacts_truncated = j->stats.truncated;
    session_event(s, "artifacts", 0, NULL, 0, attrs);
    if (s->guest)
        pool_recycle(m->pool, s->guest);
    else if (s->held_disk)
        pool_unhold_disk(m->pool, s->disk_index);
    s->guest = NULL;
    s->rec.guest[0] = '\0';
    session_set_state(s, ST_ENDED, NULL);
    m->stats.ended++;
    session_free(s);
    error_free(j->err);
    free(j->disk_path);
    free(j);
    sessions_extract_appliance_tick(m);
    sessions_check_stopped(m);
}

void
session_extract(Session *s)
{
    Sessions *m = s->mgr;
    const char *const *disks;
    ExtractJob *j;

    /* The wait for the appliance counts in salvage_ms: it is part of what the client waits. */
    s->extract_started_usec = s->extract_started_usec ? s->extract_started_usec : now_usec();
    if (m->appliance_state == APPLIANCE_WANTED || m->appliance_state == APPLIANCE_STARTING) {
        s->next_pending = m->extract_waiting; /* it is coming: wait rather than launch cold */
        m->extract_waiting = s;
        return;
    }
    if (!(j = calloc(1, sizeof(*j))))
        abort(); /* the session would never end */
    PoolStatus st;
    pool_status(m->pool, &st);
    j->s = s;
    j->m = m;
    j->force_tcg = st.accel != ACCEL_KVM;
    j->appliance = m->appliance;
    m->extractions_running += j->appliance != NULL;
    j->disk_index = s->disk_index;
    session_extract_limits(s, &j->limits);
    snprintf(j->id, sizeof(j->id), "%s", s->rec.id);
    size_t n = pool_workspace_disks(m->pool, &disks);
    j->disk_path = s->disk_index < n ? strdup(disks[s->disk_index]) : NULL;
    if (workq_submit(m->q, extract_job_work, extract_job_done, j) < 0) {
        error_set(&j->err, E_INTERNAL, ENOMEM, "queue extraction");
        extract_job_done(j);
    }
}

/* ------------------------------------------------------------------ the appliance */

typedef struct {
    Sessions *m;
    ExtractAppliance *a;
    Error *err;
    bool force_tcg;
} LaunchJob;

static void
launch_work(void *userdata)
{
    LaunchJob *j = userdata;
    const char *const *disks;
    size_t n = pool_workspace_disks(j->m->pool, &disks);
    ExtractConfig cfg = {.force_tcg = j->force_tcg, .memsize_mib = 512, .smp = 2,
                         .state_dir = j->m->cfg.state_dir};
    extract_appliance_start(disks, n, &cfg, &j->a, &j->err);
}

static void
launch_done(void *userdata)
{
    LaunchJob *j = userdata;
    Sessions *m = j->m;

    uint64_t took_usec = now_usec() - m->appliance_launch_started_usec;
    if (j->err) {
        log_error("extraction appliance did not start (salvage falls back to a slow cold "
                  "launch per session): %s", j->err->message);
        error_free(j->err);
        m->stats.appliance_launch_failures++;
        m->appliance_state = APPLIANCE_FAILED;
        m->appliance_timer = loop_add_timer(m->loop, now_usec() + APPLIANCE_RETRY_USEC,
                                            appliance_on_timer, m);
    } else {
        log_info("extraction appliance ready (launched in %.1f s, %s)", (double) took_usec / 1e6,
                 j->force_tcg ? "TCG" : "KVM");
        m->stats.appliance_launches++;
        m->stats.appliance_launch_usec = took_usec;
        m->appliance = j->a;
        m->appliance_state = APPLIANCE_UP;
    }
    free(j);
    while (m->extract_waiting) { /* sessions that waited for it */
        Session *s = m->extract_waiting;
        m->extract_waiting = s->next_pending;
        s->next_pending = NULL;
        session_extract(s);
    }
    if (m->appliance)
        sessions_extract_appliance_tick(m); /* launched before the accel decision? */
    sessions_check_stopped(m);
}

static void
appliance_poll_later(Sessions *m)
{
    m->appliance_timer =
        loop_add_timer(m->loop, now_usec() + APPLIANCE_POLL_USEC, appliance_on_timer, m);
}

/* An appliance launched under TCG before the pool proved KVM: once it has, and no salvage
 * uses the appliance, it goes and a KVM one is launched (much faster per salvage). */
static bool
appliance_retire_if_stale(Sessions *m, const PoolStatus *st)
{
    if (!st->accel_decided) {
        appliance_poll_later(m);
        return false;
    }
    if (m->appliance_force_tcg == (st->accel != ACCEL_KVM))
        return false;
    if (m->extractions_running || m->extract_waiting)
        return false; /* extract_job_done ticks again */
    log_info("the pool chose %s: relaunching the extraction appliance with it",
             accel_to_string(st->accel));
    if (workq_submit(m->q, appliance_free_work, NULL, m->appliance) < 0)
        return false;
    m->appliance = NULL;
    m->appliance_state = APPLIANCE_WANTED;
    return true;
}

void
sessions_extract_appliance_tick(Sessions *m)
{
    PoolStatus st;

    loop_cancel_timer(m->loop, m->appliance_timer);
    m->appliance_timer = 0;
    if (m->appliance_state == APPLIANCE_STARTING || m->stopping)
        return;
    pool_status(m->pool, &st);
    if (m->appliance && !appliance_retire_if_stale(m, &st))
        return;
    if (!st.disks_ready) { /* it attaches every slot's disk: wait until they exist */
        appliance_poll_later(m);
        return;
    }
    LaunchJob *j = calloc(1, sizeof(*j));
    if (!j)
        return;
    j->m = m;
    j->force_tcg = !st.accel_decided || st.accel != ACCEL_KVM;
    m->appliance_force_tcg = j->force_tcg;
    m->appliance_launch_started_usec = now_usec();
    m->appliance_state = APPLIANCE_STARTING;
    if (!st.accel_decided)
        log_info("launching the extraction appliance under TCG while the pool decides its accel");
    if (workq_submit(m->q, launch_work, launch_done, j) < 0) {
        m->appliance_state = APPLIANCE_FAILED;
        free(j);
    }
}
