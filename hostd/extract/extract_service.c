/* The extraction appliance's life cycle and the salvages on it: see extract_service.h. */
#include "extract_service.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "macro.h"
#include "timeutil.h"

typedef enum { SVC_WAITING, SVC_STARTING, SVC_UP, SVC_FAILED } ServiceState;

typedef struct SalvageJob {
    ExtractService *x;
    ExtractRequest r;
    char *dest_dir;
    bool force_tcg;
    ExtractAppliance *appliance; /* NULL: a cold salvage of disk_path */
    char *disk_path;
    ExtractStats stats;
    Error *err;
    struct SalvageJob *next; /* waiting for a launch */
} SalvageJob;

typedef struct LaunchJob {
    ExtractService *x;
    ExtractAppliance *a;
    Error *err;
    bool force_tcg;
} LaunchJob;

struct ExtractService {
    Loop *loop;
    WorkQueue *q;
    ExtractHost host;
    char *state_dir;
    ServiceState state;
    ExtractAppliance *appliance;
    ExtractAppliance *dying; /* handed to a worker to shut down during stop */
    bool force_tcg;          /* of the appliance that is up or starting */
    unsigned running;        /* salvage jobs that use x->appliance */
    unsigned jobs;           /* every salvage job in flight */
    SalvageJob *waiting, **waiting_tail;
    TimerId timer;
    uint64_t launch_started_usec;
    uint64_t launches, launch_failures, launch_usec;
    bool stopping;   /* winding down: no launch from now on */
    bool stop_asked; /* extract_service_stop() was called */
    bool shutdown_submitted; /* the appliance went to a worker to shut down (or there was none) */
    atomic_bool launch_cancel; /* the launch in progress gives up (stop, nobody waits for it) */
    void (*stop_done)(void *userdata);
    void *stop_userdata;
};

static void service_tick(ExtractService *x);
static void service_check_stopped(ExtractService *x);
static void service_flush_waiting(ExtractService *x);

int
extract_service_new(Loop *l, WorkQueue *q, const ExtractHost *host, const char *state_dir,
                    ExtractService **ret, Error **errp)
{
    ExtractService *x = calloc(1, sizeof(*x));
    if (!x || !(x->state_dir = strdup(state_dir))) {
        free(x);
        return error_set(errp, E_INTERNAL, ENOMEM, "extraction service");
    }
    x->loop = l;
    x->q = q;
    x->host = *host;
    x->waiting_tail = &x->waiting;
    *ret = x;
    return 0;
}

static void
appliance_free_work(void *userdata)
{
    extract_appliance_free(userdata);
}

static void
service_on_timer(Loop *l, void *userdata)
{
    ExtractService *x = userdata;
    (void) l;
    x->timer = 0;
    if (x->state == SVC_FAILED)
        x->state = SVC_WAITING; /* the retry is due */
    service_tick(x);
}

static void
service_tick_later(ExtractService *x, uint64_t delay_usec)
{
    loop_cancel_timer(x->loop, x->timer);
    x->timer = loop_add_timer(x->loop, now_usec() + delay_usec, service_on_timer, x);
}

/* ------------------------------------------------------------------ salvages */

static int
salvage_open_dest(const char *dir, Error **errp)
{
    int fd = mkdir_open_dir(dir, 0700);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "create or open %s", dir);
    return fd;
}

static void
salvage_work(void *userdata)
{
    SalvageJob *j = userdata;
    ExtractConfig xc = {.force_tcg = j->force_tcg, .state_dir = j->x->state_dir};
    _cleanup_close_ int fd = salvage_open_dest(j->dest_dir, &j->err);

    if (fd >= 0 && j->appliance)
        extract_salvage(j->appliance, j->r.disk_index, fd, &j->r.limits, &j->stats, &j->err);
    else if (fd >= 0)
        extract_salvage_cold(j->disk_path, &xc, fd, &j->r.limits, &j->stats, &j->err);
    if (j->r.after_work) /* files salvaged before a failure still count */
        j->r.after_work(j->r.userdata, &j->stats, &j->err);
}

static void
salvage_job_free(SalvageJob *j)
{
    error_free(j->err);
    free(j->dest_dir);
    free(j->disk_path);
    free(j);
}

static void
salvage_done(void *userdata)
{
    SalvageJob *j = userdata;
    ExtractService *x = j->x;

    x->running -= j->appliance != NULL;
    x->jobs--;
    if (j->appliance && !extract_appliance_alive(j->appliance) && x->appliance == j->appliance) {
        log_warn("extraction appliance died; relaunching");
        x->appliance = NULL;
        x->state = SVC_WAITING;
        workq_submit(x->q, appliance_free_work, NULL, j->appliance);
    }
    j->r.done(j->r.userdata, &j->stats, j->err);
    salvage_job_free(j);
    service_tick(x);
    service_check_stopped(x);
}

static void
salvage_submit(ExtractService *x, SalvageJob *j)
{
    ExtractHostState st = {0};
    const char *const *disks;

    x->host.state(x->host.userdata, &st);
    j->force_tcg = !st.kvm;
    j->appliance = x->appliance;
    x->running += j->appliance != NULL;
    x->jobs++;
    if (!j->appliance && j->r.disk_index < x->host.disks(x->host.userdata, &disks) &&
        !(j->disk_path = strdup(disks[j->r.disk_index])))
        abort(); /* the salvage's owner would wait forever */
    if (!j->appliance && !j->disk_path)
        error_set(&j->err, E_INTERNAL, 0, "no workspace disk #%zu", j->r.disk_index);
    if (j->err || workq_submit(x->q, salvage_work, salvage_done, j) < 0) {
        if (!j->err)
            error_set(&j->err, E_INTERNAL, ENOMEM, "queue extraction");
        salvage_done(j);
    }
}

void
extract_service_salvage(ExtractService *x, const ExtractRequest *r)
{
    SalvageJob *j = calloc(1, sizeof(*j));
    if (!j || !(j->dest_dir = strdup(r->dest_dir)))
        abort(); /* the salvage's owner would wait forever */
    j->x = x;
    j->r = *r;
    j->r.dest_dir = j->dest_dir;
    if (x->state == SVC_STARTING || (x->state == SVC_WAITING && !x->stopping)) {
        *x->waiting_tail = j; /* it is coming: wait rather than launch cold */
        x->waiting_tail = &j->next;
        return;
    }
    salvage_submit(x, j);
}

/* Salvages that waited for a launch: it came (or failed, or none will come). */
static void
service_flush_waiting(ExtractService *x)
{
    while (x->waiting) {
        SalvageJob *w = x->waiting;
        x->waiting = w->next;
        w->next = NULL;
        salvage_submit(x, w);
    }
    x->waiting_tail = &x->waiting;
}

/* ------------------------------------------------------------------ the appliance */

static void
launch_work(void *userdata)
{
    LaunchJob *j = userdata;
    const char *const *disks;
    size_t n = j->x->host.disks(j->x->host.userdata, &disks);
    ExtractConfig cfg = {.force_tcg = j->force_tcg, .memsize_mib = EXTRACT_SERVICE_MEMSIZE_MIB,
                         .smp = EXTRACT_SERVICE_SMP, .state_dir = j->x->state_dir,
                         .cancel = &j->x->launch_cancel};
    extract_appliance_start(disks, n, &cfg, &j->a, &j->err);
}

static void
launch_done(void *userdata)
{
    LaunchJob *j = userdata;
    ExtractService *x = j->x;
    uint64_t took_usec = now_usec() - x->launch_started_usec;

    if (j->err && atomic_load(&x->launch_cancel)) {
        log_info("extraction appliance launch cancelled: the daemon is stopping");
        error_free(j->err);
        x->state = SVC_FAILED;
    } else if (j->err) {
        log_error("extraction appliance did not start (salvage falls back to a slow cold "
                  "launch per session): %s", j->err->message);
        error_free(j->err);
        x->launch_failures++;
        x->state = SVC_FAILED;
        if (!x->stopping)
            service_tick_later(x, EXTRACT_SERVICE_RETRY_USEC);
    } else {
        log_info("extraction appliance ready (launched in %.1f s, %s)", (double) took_usec / 1e6,
                 j->force_tcg ? "TCG" : "KVM");
        x->launches++;
        x->launch_usec = took_usec;
        x->appliance = j->a;
        x->state = SVC_UP;
    }
    free(j);
    service_flush_waiting(x);
    if (x->appliance)
        service_tick(x); /* launched before the accel decision? */
    service_check_stopped(x);
}

/* An appliance launched under TCG before the host proved KVM: once it has, and no salvage
 * uses the appliance, it goes and a KVM one is launched (much faster per salvage). */
static bool
appliance_retire_if_stale(ExtractService *x, const ExtractHostState *st)
{
    if (!st->accel_decided) {
        service_tick_later(x, EXTRACT_SERVICE_POLL_USEC);
        return false;
    }
    if (x->force_tcg == !st->kvm)
        return false;
    if (x->running || x->waiting)
        return false; /* salvage_done ticks again */
    log_info("the pool chose %s: relaunching the extraction appliance with it",
             st->kvm ? "KVM" : "TCG");
    if (workq_submit(x->q, appliance_free_work, NULL, x->appliance) < 0)
        return false;
    x->appliance = NULL;
    x->state = SVC_WAITING;
    return true;
}

static void
service_tick(ExtractService *x)
{
    ExtractHostState st = {0};

    if (x->state == SVC_STARTING || x->state == SVC_FAILED || x->stopping)
        return; /* a failed launch is retried by its timer only, not by every salvage */
    loop_cancel_timer(x->loop, x->timer);
    x->timer = 0;
    x->host.state(x->host.userdata, &st);
    if (x->appliance && !appliance_retire_if_stale(x, &st))
        return;
    if (!st.disks_ready) { /* it attaches every slot's disk: wait until they exist */
        service_tick_later(x, EXTRACT_SERVICE_POLL_USEC);
        return;
    }
    LaunchJob *j = calloc(1, sizeof(*j));
    if (!j)
        return; /* stays waiting; the next salvage or timer tries again */
    j->x = x;
    j->force_tcg = !st.accel_decided || !st.kvm;
    x->force_tcg = j->force_tcg;
    x->launch_started_usec = now_usec();
    x->state = SVC_STARTING;
    if (!st.accel_decided)
        log_info("launching the extraction appliance under TCG while the pool decides its accel");
    if (workq_submit(x->q, launch_work, launch_done, j) < 0) {
        x->state = SVC_FAILED;
        free(j);
    }
}

void
extract_service_start(ExtractService *x)
{
    service_tick(x);
}

/* ------------------------------------------------------------------ stop, status, free */

static void
service_on_appliance_freed(void *userdata)
{
    ExtractService *x = userdata;
    void (*done)(void *) = x->stop_done;
    x->stop_done = NULL;
    if (done)
        done(x->stop_userdata);
}

static void
appliance_shutdown_work(void *userdata)
{
    ExtractService *x = userdata; /* the loop touches x->dying no more */
    extract_appliance_free(x->dying);
    x->dying = NULL;
}

static void
service_check_stopped(ExtractService *x)
{
    if (!x->stopping || !x->stop_done || x->state == SVC_STARTING || x->shutdown_submitted)
        return; /* launch_done calls back here once it is up */
    if (x->jobs) { /* the stop gave up on them: extract_service_free() shuts it down */
        service_on_appliance_freed(x);
        return;
    }
    x->dying = x->appliance;
    x->appliance = NULL;
    /* Once: the salvage whose end let the sessions stop calls back here again after its owner
     * asked for this stop, and must not hand the worker a NULL in place of the appliance. */
    x->shutdown_submitted = true;
    if (!x->dying || workq_submit(x->q, appliance_shutdown_work, service_on_appliance_freed, x) < 0)
        service_on_appliance_freed(x);
}

void
extract_service_wind_down(ExtractService *x)
{
    if (x->stopping)
        return;
    x->stopping = true;
    loop_cancel_timer(x->loop, x->timer);
    x->timer = 0;
    if (x->state != SVC_STARTING)
        service_flush_waiting(x); /* no launch is coming for them: cold */
}

void
extract_service_stop(ExtractService *x, void (*done)(void *userdata), void *userdata)
{
    if (x->stop_asked)
        return;
    extract_service_wind_down(x);
    x->stop_asked = true;
    x->stop_done = done;
    x->stop_userdata = userdata;
    /* The sessions have stopped: a launch nobody waits for would only hold the stop up for
     * as long as it takes (tens of seconds under TCG). */
    if (x->state == SVC_STARTING && !x->waiting)
        atomic_store(&x->launch_cancel, true);
    service_check_stopped(x);
}

void
extract_service_status(const ExtractService *x, ExtractServiceStatus *ret)
{
    static const char *const names[] = {[SVC_WAITING] = "waiting", [SVC_STARTING] = "starting",
                                        [SVC_UP] = "up", [SVC_FAILED] = "failed"};
    unsigned waiting = 0;
    for (const SalvageJob *j = x->waiting; j; j = j->next)
        waiting++;
    *ret = (ExtractServiceStatus){.state = names[x->state],
                                  .force_tcg = x->force_tcg,
                                  .running = x->running,
                                  .waiting = waiting,
                                  .launches = x->launches,
                                  .launch_failures = x->launch_failures,
                                  .launch_usec = x->launch_usec};
}

void
extract_service_free(ExtractService *x)
{
    if (!x)
        return;
    loop_cancel_timer(x->loop, x->timer);
    while (x->waiting) {
        SalvageJob *j = x->waiting;
        x->waiting = j->next;
        salvage_job_free(j);
    }
    extract_appliance_free(x->appliance);
    extract_appliance_free(x->dying);
    free(x->state_dir);
    free(x);
}
