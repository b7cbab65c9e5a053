/* Unit tests of the extraction service's life cycle (hostd/extract/extract_service.c) on a
 * real loop and work queue. libguestfs is not here: the appliance calls are wrapped
 * (-Wl,--wrap), each fake appliance a token that can be made to die. Real guests and a real
 * appliance run the same code in the integration suites (extract, sessions, faults). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "extract_service.h"
#include "timeutil.h"

#include "testlib.h"

#define GUARD_USEC (10ull * USEC_PER_SEC) /* a test that hangs fails here instead */

/* ------------------------------------------------------------------ fake appliances */

struct ExtractAppliance {
    int id;
};

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ExtractAppliance fakes[8];
static bool fake_dead[8];
static int launches, frees, cold, warm, last_warm_id;
static bool fail_launch, kill_in_salvage, last_force_tcg, hold_salvage, hold_launch;
static char last_cold_path[64];
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;

int __wrap_extract_appliance_start(const char *const *disk_paths, size_t n,
                                   const ExtractConfig *cfg, ExtractAppliance **ret,
                                   Error **errp);
int __wrap_extract_salvage(ExtractAppliance *a, size_t index, int fd, const ExtractLimits *lim,
                           ExtractStats *stats, Error **errp);
int __wrap_extract_salvage_cold(const char *path, const ExtractConfig *cfg, int fd,
                                const ExtractLimits *lim, ExtractStats *stats, Error **errp);
bool __wrap_extract_appliance_alive(ExtractAppliance *a);
void __wrap_extract_appliance_free(ExtractAppliance *a);

int
__wrap_extract_appliance_start(const char *const *disk_paths, size_t n, const ExtractConfig *cfg,
                               ExtractAppliance **ret, Error **errp)
{
    (void) disk_paths;
    pthread_mutex_lock(&fake_lock);
    last_force_tcg = cfg->force_tcg;
    int k = launches++;
    bool fail = fail_launch;
    pthread_mutex_unlock(&fake_lock);
    assert_int_equal(n, 3);
    if (fail)
        return error_set(errp, E_UNAVAILABLE, 0, "fake launch failure");
    /* A launch that takes as long as it takes (as one under TCG): it ends when cancelled, or
     * at the test's guard, polling its cancel flag as the real watchdog does. */
    uint64_t give_up = now_usec() + GUARD_USEC;
    while (hold_launch && now_usec() < give_up) {
        if (cfg->cancel && atomic_load(cfg->cancel))
            return error_set(errp, E_UNAVAILABLE, 0, "fake launch cancelled");
        usleep(1000);
    }
    fakes[k].id = k;
    *ret = &fakes[k];
    return 0;
}

int
__wrap_extract_salvage(ExtractAppliance *a, size_t index, int fd, const ExtractLimits *lim,
                       ExtractStats *stats, Error **errp)
{
    (void) fd;
    (void) lim;
    pthread_mutex_lock(&fake_lock);
    warm++;
    last_warm_id = a->id;
    while (hold_salvage)
        pthread_cond_wait(&hold_cond, &fake_lock);
    bool kill = kill_in_salvage;
    fake_dead[a->id] |= kill;
    pthread_mutex_unlock(&fake_lock);
    stats->files = (uint32_t) index;
    return kill ? error_set(errp, E_UNAVAILABLE, 0, "fake appliance died") : 0;
}

int
__wrap_extract_salvage_cold(const char *path, const ExtractConfig *cfg, int fd,
                            const ExtractLimits *lim, ExtractStats *stats, Error **errp)
{
    (void) cfg;
    (void) fd;
    (void) lim;
    (void) errp;
    pthread_mutex_lock(&fake_lock);
    cold++;
    snprintf(last_cold_path, sizeof(last_cold_path), "%s", path);
    pthread_mutex_unlock(&fake_lock);
    stats->files = 100;
    return 0;
}

bool
__wrap_extract_appliance_alive(ExtractAppliance *a)
{
    pthread_mutex_lock(&fake_lock);
    bool alive = !fake_dead[a->id];
    pthread_mutex_unlock(&fake_lock);
    return alive;
}

void
__wrap_extract_appliance_free(ExtractAppliance *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&fake_lock);
    frees++;
    pthread_mutex_unlock(&fake_lock);
}

/* ------------------------------------------------------------------ fixture */

static const char *const disk_paths[] = {"/d/0", "/d/1", "/d/2"};
static ExtractHostState host_state;

static void
host_get_state(void *userdata, ExtractHostState *ret)
{
    (void) userdata;
    *ret = host_state;
}

static size_t
host_disks(void *userdata, const char *const **ret)
{
    (void) userdata;
    *ret = disk_paths;
    return 3;
}

typedef struct {
    char *dir;
    Loop *loop;
    WorkQueue *q;
    ExtractService *x;
    int done, after, stopped;
    Error *last_err;
    uint32_t last_files;
} Fixture;

static Fixture fx;
static bool stop_from_done; /* a salvage's done asks for the stop, as the daemon's does */

static int
setup(void **state)
{
    Error *e = NULL;
    ExtractHost host = {.state = host_get_state, .disks = host_disks};

    memset(&fx, 0, sizeof(fx));
    pthread_mutex_lock(&fake_lock);
    launches = frees = cold = warm = 0;
    last_warm_id = -1;
    fail_launch = kill_in_salvage = hold_salvage = stop_from_done = hold_launch = false;
    memset(fake_dead, 0, sizeof(fake_dead));
    pthread_mutex_unlock(&fake_lock);
    host_state = (ExtractHostState){.disks_ready = true};
    fx.dir = test_mkdtemp("stockade-extract-service");
    assert_int_equal(loop_new(&fx.loop, &e), 0);
    assert_int_equal(workq_new(fx.loop, 2, &fx.q, &e), 0);
    assert_int_equal(extract_service_new(fx.loop, fx.q, &host, fx.dir, &fx.x, &e), 0);
    *state = &fx;
    return 0;
}

static int
teardown(void **state)
{
    (void) state;
    workq_free(fx.q);
    extract_service_free(fx.x);
    loop_free(fx.loop);
    error_free(fx.last_err);
    test_rm_rf(fx.dir);
    free(fx.dir);
    return 0;
}

static void
on_guard(Loop *l, void *userdata)
{
    (void) userdata;
    loop_quit(l, 1);
}

static int want_done; /* the loop quits once this many salvages are done */
static void on_stopped(void *userdata);

static void
on_after(void *userdata, ExtractStats *stats, Error **errp)
{
    (void) userdata;
    (void) stats;
    (void) errp;
    __atomic_add_fetch(&fx.after, 1, __ATOMIC_SEQ_CST); /* worker thread */
}

static void
on_done(void *userdata, const ExtractStats *stats, const Error *err)
{
    (void) userdata;
    fx.done++;
    fx.last_files = stats->files;
    error_free(fx.last_err);
    fx.last_err = NULL;
    if (err)
        error_set(&fx.last_err, err->category, 0, "%s", err->message);
    if (stop_from_done) /* as the daemon: the last salvage lets the sessions stop, then this */
        extract_service_stop(fx.x, on_stopped, NULL);
    if (fx.done >= want_done)
        loop_quit(fx.loop, 0);
}

static void
salvage(size_t disk)
{
    char dest[600];
    snprintf(dest, sizeof(dest), "%s/salvage-%zu", fx.dir, disk);
    ExtractRequest r = {.disk_index = disk, .dest_dir = dest, .after_work = on_after,
                        .done = on_done};
    extract_limits_default(&r.limits);
    extract_service_salvage(fx.x, &r);
}

/* Runs the loop for usec at most (a salvage's done may end it sooner). */
static void
run_slice(uint64_t usec)
{
    TimerId t = loop_add_timer(fx.loop, now_usec() + usec, on_guard, NULL);
    loop_run(fx.loop);
    loop_cancel_timer(fx.loop, t);
}

/* Runs the loop until `until` is true (polled every 10 ms) or the guard fires. */
static bool
run_until(bool (*until)(void))
{
    uint64_t deadline = now_usec() + GUARD_USEC;
    while (!until() && now_usec() < deadline)
        run_slice(10000);
    return until();
}

static bool
is_up(void)
{
    ExtractServiceStatus st;
    extract_service_status(fx.x, &st);
    return strcmp(st.state, "up") == 0;
}

static bool
all_done(void)
{
    return fx.done >= want_done;
}

/* ------------------------------------------------------------------ tests */

/* A salvage asked before the launch waits for it and then runs on the warm appliance. */
static void
test_salvage_waits_for_launch(void **state)
{
    (void) state;
    want_done = 1;
    salvage(1);
    ExtractServiceStatus st;
    extract_service_status(fx.x, &st);
    assert_string_equal(st.state, "waiting");
    assert_int_equal(st.waiting, 1);
    extract_service_start(fx.x);
    assert_true(run_until(all_done));
    assert_null(fx.last_err);
    assert_int_equal(fx.last_files, 1); /* disk #1 */
    assert_int_equal(fx.after, 1);
    assert_int_equal(launches, 1);
    assert_true(last_force_tcg); /* the accel is undecided: TCG */
    assert_int_equal(warm, 1);
    assert_int_equal(last_warm_id, 0);
    assert_int_equal(cold, 0);
    extract_service_status(fx.x, &st);
    assert_string_equal(st.state, "up");
    assert_int_equal(st.launches, 1);
    assert_int_equal(st.waiting, 0);
}

/* No disks yet: nothing launches. Then a launch that fails: the waiting salvage goes cold on
 * its own disk, the state says failed, and the next launch waits for its retry timer (a
 * salvage's end once launched again at once, every time). */
static void
test_failed_launch_goes_cold(void **state)
{
    (void) state;
    want_done = 1;
    host_state.disks_ready = false;
    extract_service_start(fx.x);
    salvage(2);
    for (int i = 0; i < 5; i++) /* a few polls */
        run_slice(50000);
    assert_int_equal(launches, 0);
    assert_int_equal(fx.done, 0);
    pthread_mutex_lock(&fake_lock);
    fail_launch = true;
    pthread_mutex_unlock(&fake_lock);
    host_state.disks_ready = true;
    assert_true(run_until(all_done));
    assert_int_equal(launches, 1);
    assert_int_equal(cold, 1);
    assert_string_equal(last_cold_path, "/d/2");
    assert_int_equal(fx.last_files, 100);
    ExtractServiceStatus st;
    extract_service_status(fx.x, &st);
    assert_string_equal(st.state, "failed");
    assert_int_equal(st.launch_failures, 1);
    assert_int_equal(launches, 1); /* the salvage's end does not bypass the 30 s retry */
}

/* An appliance that dies in a salvage: the salvage's error reaches its owner, the dead one
 * is freed, a new one is launched and serves the next salvage. */
static void
test_dead_appliance_is_relaunched(void **state)
{
    (void) state;
    extract_service_start(fx.x);
    assert_true(run_until(is_up));
    kill_in_salvage = true;
    want_done = 1;
    salvage(0);
    assert_true(run_until(all_done));
    assert_non_null(fx.last_err);
    assert_int_equal(fx.last_err->category, E_UNAVAILABLE);
    kill_in_salvage = false;
    assert_true(run_until(is_up));
    assert_int_equal(launches, 2);
    want_done = 2;
    salvage(1);
    assert_true(run_until(all_done));
    assert_null(fx.last_err);
    assert_int_equal(last_warm_id, 1);
    assert_int_equal(frees, 1); /* the dead one */
}

static bool
relaunched_with_kvm(void)
{
    return launches == 2 && is_up();
}

/* Launched under TCG while undecided; once the host proves KVM (and nothing uses it) it is
 * replaced by a KVM one. */
static void
test_tcg_appliance_retired_for_kvm(void **state)
{
    (void) state;
    extract_service_start(fx.x);
    assert_true(run_until(is_up));
    assert_true(last_force_tcg);
    host_state.accel_decided = true;
    host_state.kvm = true;
    assert_true(run_until(relaunched_with_kvm));
    assert_false(last_force_tcg);
    assert_int_equal(frees, 1);
    ExtractServiceStatus st;
    extract_service_status(fx.x, &st);
    assert_false(st.force_tcg);
}

static void
on_stopped(void *userdata)
{
    (void) userdata;
    fx.stopped++;
    loop_quit(fx.loop, 0);
}

static bool
stopped(void)
{
    return fx.stopped > 0;
}

/* An idle service stops by shutting its appliance down; a second stop is ignored. */
static void
test_stop_idle(void **state)
{
    (void) state;
    extract_service_start(fx.x);
    assert_true(run_until(is_up));
    extract_service_stop(fx.x, on_stopped, NULL);
    extract_service_stop(fx.x, on_stopped, NULL);
    assert_true(run_until(stopped));
    assert_int_equal(frees, 1);
    assert_int_equal(fx.stopped, 1);
}

static bool
is_starting(void)
{
    ExtractServiceStatus st;
    extract_service_status(fx.x, &st);
    return strcmp(st.state, "starting") == 0;
}

/* A stop while a launch nobody waits for is still going cancels it rather than waiting it
 * out (tens of seconds under TCG): done within a few cancel polls, no appliance, no failure
 * counted. Without the cancel the launch would end only at the test's 10 s guard. */
static void
test_stop_cancels_launch(void **state)
{
    (void) state;
    hold_launch = true;
    extract_service_start(fx.x);
    assert_true(run_until(is_starting));
    uint64_t t0 = now_usec();
    extract_service_stop(fx.x, on_stopped, NULL);
    assert_true(run_until(stopped));
    assert_true(now_usec() - t0 < GUARD_USEC / 2);
    assert_int_equal(frees, 0);
    ExtractServiceStatus st;
    extract_service_status(fx.x, &st);
    assert_int_equal(st.launches, 0);
    assert_int_equal(st.launch_failures, 0);
}

/* A stop that finds a salvage running (the sessions gave up waiting for it) is done at once;
 * the salvage still reports, and the appliance is left to extract_service_free(). */
static void
test_stop_with_salvage_running(void **state)
{
    (void) state;
    extract_service_start(fx.x);
    assert_true(run_until(is_up));
    hold_salvage = true;
    want_done = 1;
    salvage(0);
    extract_service_stop(fx.x, on_stopped, NULL);
    assert_true(run_until(stopped));
    assert_int_equal(frees, 0);
    pthread_mutex_lock(&fake_lock);
    hold_salvage = false;
    pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&fake_lock);
    assert_true(run_until(all_done));
    assert_int_equal(fx.stopped, 1);
    assert_int_equal(launches, 1);
}

/* The daemon's order: wound down, a last salvage ends, its owner's done asks for the stop.
 * The appliance is shut down exactly once and the stop is done once (the salvage's end
 * checked the stop again and handed the worker a NULL: the appliance leaked, its qemu ran
 * on; LeakSanitizer found it in the E2B suite). */
static void
test_stop_from_last_salvage(void **state)
{
    (void) state;
    extract_service_start(fx.x);
    assert_true(run_until(is_up));
    extract_service_wind_down(fx.x);
    stop_from_done = true;
    want_done = 1;
    salvage(0);
    assert_true(run_until(stopped));
    assert_int_equal(fx.done, 1);
    assert_int_equal(fx.stopped, 1);
    assert_int_equal(frees, 1);
}

/* Winding down with no launch coming (the disks never appeared): waiting salvages go cold at
 * once, and a later one too. */
static void
test_wind_down_sends_waiting_cold(void **state)
{
    (void) state;
    host_state.disks_ready = false;
    extract_service_start(fx.x);
    salvage(0);
    want_done = 2;
    extract_service_wind_down(fx.x);
    salvage(1);
    assert_true(run_until(all_done));
    assert_int_equal(cold, 2);
    assert_int_equal(launches, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_salvage_waits_for_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_launch_goes_cold, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_appliance_is_relaunched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tcg_appliance_retired_for_kvm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_cancels_launch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_with_salvage_running, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_from_last_salvage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wind_down_sends_waiting_cold, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
