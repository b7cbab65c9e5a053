/* Benchmark of the warm pool (issue 3). Prints figures, never passes or fails on time.
 *
 * In one run, on the minimal image, with whatever accel `auto` finds:
 *   cold boot -> Ready and restore -> Ready (the pool's own histograms);
 *   warm hand-out -> first byte of an exec's output, p50/p99 over N sessions (each from a
 *     full pool: take, Hello and Exec pipelined, wait for the first Output byte);
 *   speed-up: a cold start to the first output byte (mean boot -> Ready + mean hand-out ->
 *     first byte: the same exec on a guest that just became Ready) over the mean warm
 *     hand-out -> first byte; like end points, like statistics;
 *   refill rate: release `warm` guests at once, time until the pool is full again (3 rounds);
 *   baselines in the same run and guests: Ping->Pong, and a second exec -> first byte (what
 *     an exec costs once the guest is awake and its paths are translated);
 *   host memory per idle pooled guest: QEMU VmRSS and Pss (smaps_rollup);
 *   guest memory (issue 15): the template's file (allocated, and in the page cache), host
 *     memory per idle guest ((sum of PSS + the template's page cache) / idle guests), and
 *     what the snapshots take (per-slot save images, or the template's files);
 *   destroy -> QEMU gone (by its pid, not by the API call returning).
 * Each guest_memory mode asked for runs the whole measurement on its own pool, one after the
 * other. The last line is one JSON object: the first mode's figures at the top level, the
 * other mode's under its name.
 *
 * --density N,N,...: only the memory figures, for a pool of N idle guests for each N (default
 * 1,4,8,16), in each mode; copy (a private save image per slot, what main did before
 * templates) is the baseline of the same run. The JSON has per mode and N the figures, and
 * at the top level the largest N's host MiB per idle guest in each mode and their ratio.
 * Usage:
 *   bench_pool [--sessions N] [--warm W] [--quick] [--guest-memory copy|template|both]
 *              [--density N,N,...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest_memory.h"
#include "poolharness.h"
#include "timeutil.h"
#include "virt.h"

#define FILL_TIMEOUT_USEC (600 * USEC_PER_SEC)
#define REFILL_ROUNDS 3 /* one round of `warm` restores is too few to be a rate */

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static double
mean_ms(const uint64_t *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double) v[i];
    return n ? sum / (double) n / 1000.0 : 0;
}

static double
percentile_ms(uint64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_u64);
    size_t i = (size_t) (p * (double) (n - 1) + 0.5);
    return (double) v[i] / 1000.0;
}

static bool
first_byte_or_done(void *userdata)
{
    TestSession *s = userdata;
    return s->first_byte_usec != 0 || s->lost || s->errored;
}

typedef struct {
    Pool *pool;
    uint64_t *gone_usec;
    size_t n_gone;
    size_t want; /* wait until n_gone reaches this */
} GoneLog;

static void
on_gone(Guest *g, uint64_t requested_usec, uint64_t gone_usec, void *userdata)
{
    GoneLog *log = userdata;
    log->gone_usec[log->n_gone++] = gone_usec - requested_usec;
    pool_recycle(log->pool, g);
}

static bool
cond_gone(void *userdata)
{
    GoneLog *log = userdata;
    return log->n_gone >= log->want;
}

/* Seconds for one round: take every warm guest, release them at once, wait for a full pool. */
static double
refill_round(Harness *h, TestSession *s, unsigned warm)
{
    for (unsigned i = 0; i < warm; i++)
        if (!ts_take(h, &s[i], "refill")) {
            fprintf(stderr, "refill: only %u of %u guests idle\n", i, warm);
            for (unsigned k = 0; k < i; k++)
                ts_release(&s[k]);
            return -1;
        }
    uint64_t t0 = now_usec();
    for (unsigned i = 0; i < warm; i++)
        ts_release(&s[i]);
    if (!harness_wait_full(h, FILL_TIMEOUT_USEC))
        return -1;
    return (double) (now_usec() - t0) / 1e6;
}

static double
measure_refill_per_min(Harness *h, unsigned warm)
{
    TestSession *s = calloc(warm, sizeof(*s));
    double secs = 0;
    unsigned rounds = 0;
    for (; rounds < REFILL_ROUNDS; rounds++) {
        double r = refill_round(h, s, warm);
        if (r < 0)
            break;
        secs += r;
    }
    free(s);
    return rounds && secs > 0 ? (double) (warm * rounds) / secs * 60.0 : 0;
}

typedef struct {
    const char *mode;
    int ok; /* 1: every session served */
    size_t sessions;
    double p50, p99, cold_s, restore_s, speedup, refill, gone_p50, gone_p99, rtt_p50;
    double second_p50, ack_p50, started_p50, ready_s, handout_mean, cold_first_byte_ms;
    MemoryFigures mem;
    char accel[8];
} Figures;

/* Hand-outs: each from a full pool, take + Hello + Exec pipelined, first byte; then the
 * baselines in the same guest; then release and time QEMU's going. */
static size_t
measure_handouts(Harness *h, unsigned sessions, Figures *f)
{
    uint64_t *handout = calloc(sessions, sizeof(uint64_t));
    uint64_t *to_ack = calloc(sessions, sizeof(uint64_t));
    uint64_t *to_started = calloc(sessions, sizeof(uint64_t));
    uint64_t *rtt = calloc(sessions, sizeof(uint64_t));
    uint64_t *second = calloc(sessions, sizeof(uint64_t));
    size_t n_rtt = 0, n_second = 0;
    GoneLog gone = {h->pool, calloc(sessions, sizeof(uint64_t)), 0, 0};
    const char *argv_echo[] = {"echo", "x", NULL};
    size_t ok = 0;
    for (unsigned i = 0; i < sessions; i++) {
        TestSession s;
        if (!harness_wait_full(h, FILL_TIMEOUT_USEC))
            break;
        uint64_t t0 = now_usec();
        if (!ts_take(h, &s, "bench") || !ts_exec_start(&s, argv_echo))
            break;
        harness_run_until(h, first_byte_or_done, &s, 30 * USEC_PER_SEC);
        ts_exec_wait(&s, 30 * USEC_PER_SEC);
        if (s.first_byte_usec && s.acked_usec && s.started_usec) {
            to_ack[ok] = s.acked_usec - t0;
            to_started[ok] = s.started_usec - t0;
            handout[ok++] = s.first_byte_usec - t0;
        }
        int64_t r = ts_ping_usec(&s, 5 * USEC_PER_SEC);
        if (r >= 0)
            rtt[n_rtt++] = (uint64_t) r;
        uint64_t t1 = now_usec();
        if (ts_exec_start(&s, argv_echo)) {
            harness_run_until(h, first_byte_or_done, &s, 30 * USEC_PER_SEC);
            if (s.first_byte_usec)
                second[n_second++] = s.first_byte_usec - t1;
            ts_exec_wait(&s, 30 * USEC_PER_SEC);
        }
        size_t before = gone.n_gone;
        gone.want = before + 1;
        pool_release(h->pool, s.g, on_gone, &gone);
        harness_run_until(h, cond_gone, &gone, 30 * USEC_PER_SEC);
        if (gone.n_gone == before)
            fprintf(stderr, "session %u: QEMU not gone within 30 s\n", i);
    }
    f->ack_p50 = percentile_ms(to_ack, ok, 0.5);
    f->started_p50 = percentile_ms(to_started, ok, 0.5);
    f->handout_mean = mean_ms(handout, ok);
    f->p50 = percentile_ms(handout, ok, 0.50);
    f->p99 = percentile_ms(handout, ok, 0.99);
    f->gone_p50 = percentile_ms(gone.gone_usec, gone.n_gone, 0.50);
    f->gone_p99 = percentile_ms(gone.gone_usec, gone.n_gone, 0.99);
    f->rtt_p50 = percentile_ms(rtt, n_rtt, 0.5);
    f->second_p50 = percentile_ms(second, n_second, 0.5);
    free(handout), free(to_ack), free(to_started), free(rtt), free(second);
    free(gone.gone_usec);
    return ok;
}

static void
print_figures(const Figures *f, unsigned warm, unsigned refill_concurrency)
{
    printf("== guest_memory = %s ==\n", f->mode);
    printf("pool of %u warm guests ready %.1f s after start (snapshots or template included)\n",
           warm, f->ready_s);
    printf("cold boot -> Ready: mean %.2f s\n", f->cold_s);
    printf("restore -> Ready: mean %.3f s\n", f->restore_s);
    printf("hand-out -> first output byte: p50 %.2f ms, p99 %.2f ms over %zu sessions "
           "(targets here: p50 <= 15, p99 <= 40)\n", f->p50, f->p99, f->sessions);
    printf("  phases (p50 from take): Hello Ack %.2f ms, ExecStarted %.2f ms\n", f->ack_p50,
           f->started_p50);
    printf("  baselines (p50, same guests after hand-out): Ping->Pong %.2f ms; a second exec -> "
           "first byte %.2f ms\n", f->rtt_p50, f->second_p50);
    printf("speed-up vs cold boot in this run: %.0fx (target >= 300x): cold start -> first "
           "byte %.0f ms (means: boot -> Ready + hand-out -> first byte) over warm hand-out -> "
           "first byte %.2f ms (mean)\n", f->speedup, f->cold_first_byte_ms, f->handout_mean);
    printf("refill: %.1f guests/min with refill_concurrency %u, %u rounds of %u (target >= 60)\n",
           f->refill, refill_concurrency, REFILL_ROUNDS, warm);
    print_memory(&f->mem);
    printf("destroy -> QEMU gone: p50 %.1f ms, p99 %.1f ms (target <= 150)\n", f->gone_p50,
           f->gone_p99);
}

static void
json_figures(const Figures *f)
{
    printf("\"guest_memory\":\"%s\",\"accel\":\"%s\",\"sessions\":%zu,"
           "\"handout_first_byte_p50_ms\":%.2f,\"handout_first_byte_p99_ms\":%.2f,"
           "\"cold_boot_s\":%.3f,\"restore_s\":%.3f,\"speedup_vs_cold_boot\":%.0f,"
           "\"refill_per_min\":%.1f,\"idle_guest_rss_mib\":%.1f,\"idle_guest_pss_mib\":%.1f,"
           "\"tcg_code_mib\":%.1f,\"idle_guest_pss_less_tcg_mib\":%.1f,"
           "\"template_mib\":%.1f,\"template_cache_mib\":%.1f,\"host_mib_per_idle_guest\":%.1f,"
           "\"host_mib_per_idle_guest_less_tcg\":%.1f,\"host_exact_mib_per_idle_guest\":%.1f,"
           "\"snapshot_disk_mib\":%.1f,\"destroy_ms\":%.1f,\"destroy_p99_ms\":%.1f,"
           "\"ping_rtt_ms\":%.2f,\"second_exec_first_byte_ms\":%.2f",
           f->mode, f->accel, f->sessions, f->p50, f->p99, f->cold_s, f->restore_s, f->speedup,
           f->refill, f->mem.rss_mib, f->mem.pss_mib, f->mem.tcg_mib,
           f->mem.pss_mib - f->mem.tcg_mib, f->mem.template_mib, f->mem.template_cache_mib,
           f->mem.host_mib_per_idle_guest, f->mem.host_mib_per_idle_guest - f->mem.tcg_mib,
           f->mem.host_exact_mib_per_idle_guest, f->mem.snapshot_disk_mib,
           f->gone_p50, f->gone_p99, f->rtt_p50, f->second_p50);
}

/* One whole measurement on a fresh pool in one guest_memory mode. false: the pool never
 * filled or refused the mode (fell back). */
static bool
run_mode(const char *mode, unsigned sessions, unsigned warm, Figures *f)
{
    Harness h;
    HarnessOptions o = {.image = "minimal", .warm = warm, .slots = 2 * warm, /* spare slots */
                        .guest_memory = mode};
    PoolStatus st;

    *f = (Figures){.mode = mode};
    harness_start_opts(&h, &o);
    uint64_t t_start = now_usec();
    if (!harness_wait_full(&h, FILL_TIMEOUT_USEC)) {
        fprintf(stderr, "%s: pool never filled\n", mode);
        return false;
    }
    f->ready_s = (double) (now_usec() - t_start) / 1e6;
    pool_status(h.pool, &st);
    if (strcmp(pool_guest_memory_to_string(st.guest_memory), mode) != 0) {
        fprintf(stderr, "%s: not in effect: %s\n", mode, st.guest_memory_reason);
        harness_stop(&h);
        harness_cleanup(&h);
        return false;
    }
    sleep(2); /* let just-restored guests settle before measuring their memory */
    measure_memory(&h, &f->mem);
    f->sessions = measure_handouts(&h, sessions, f);
    harness_wait_full(&h, FILL_TIMEOUT_USEC);
    f->refill = measure_refill_per_min(&h, warm);
    pool_status(h.pool, &st);
    f->cold_s = (double) histogram_mean_usec(&st.boot_to_ready) / 1e6;
    f->restore_s = (double) histogram_mean_usec(&st.restore_to_ready) / 1e6;
    f->cold_first_byte_ms = f->cold_s * 1000.0 + f->handout_mean;
    f->speedup = f->handout_mean > 0 ? f->cold_first_byte_ms / f->handout_mean : 0;
    snprintf(f->accel, sizeof(f->accel), "%s", accel_to_string(st.accel));
    printf("accel: %s (%s)\n", f->accel, st.accel_reason);
    print_figures(f, warm, h.cfg.refill_concurrency);
    harness_stop(&h);
    harness_cleanup(&h);
    f->ok = f->sessions == sessions;
    return true;
}

#define DENSITY_MAX_STEPS 8

/* A fresh pool of n idle guests in mode: its memory figures. false: it never filled, or the
 * mode fell back. */
static bool
density_step(const char *mode, unsigned n, MemoryFigures *f)
{
    Harness h;
    HarnessOptions o = {.image = "minimal", .warm = n, .slots = n, .guest_memory = mode};
    PoolStatus st;
    bool ok = false;

    harness_start_opts(&h, &o);
    uint64_t t0 = now_usec();
    if (!harness_wait_full(&h, FILL_TIMEOUT_USEC))
        fprintf(stderr, "%s, %u guests: the pool never filled\n", mode, n);
    else if (pool_status(h.pool, &st),
             strcmp(pool_guest_memory_to_string(st.guest_memory), mode) != 0)
        fprintf(stderr, "%s: not in effect: %s\n", mode, st.guest_memory_reason);
    else {
        double ready_s = (double) (now_usec() - t0) / 1e6;
        sleep(2); /* let just-restored guests settle before measuring their memory */
        measure_memory(&h, f);
        printf("== %s, %u idle guests (ready in %.1f s)\n", mode, f->idle_guests, ready_s);
        print_memory(f);
        ok = f->idle_guests == n;
    }
    harness_stop(&h);
    harness_cleanup(&h);
    return ok;
}

static int
run_density(const char *list)
{
    static const char *const modes[] = {"template", "copy"};
    unsigned ns[DENSITY_MAX_STEPS];
    size_t n_ns = 0;
    MemoryFigures f[2][DENSITY_MAX_STEPS];
    bool ok[2][DENSITY_MAX_STEPS] = {{false}};
    char *end;

    for (const char *p = list; *p && n_ns < DENSITY_MAX_STEPS; p = *end ? end + 1 : end) {
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || v == 0 || v > 64 || (*end && *end != ',')) {
            fprintf(stderr, "--density: a comma-separated list of guest counts (1..64)\n");
            return 2;
        }
        ns[n_ns++] = (unsigned) v;
    }
    for (size_t m = 0; m < 2; m++)
        for (size_t i = 0; i < n_ns; i++)
            ok[m][i] = density_step(modes[m], ns[i], &f[m][i]);
    size_t last = n_ns - 1;
    const MemoryFigures *ft = &f[0][last];
    double t = ft->host_mib_per_idle_guest, c = f[1][last].host_mib_per_idle_guest;
    double t_pss = ft->pss_mib - ft->tcg_mib, t_host = t - ft->tcg_mib;
    if (ok[0][last] && ok[1][last])
        printf("at %u guests: host memory per idle guest %.1f MiB with a template, %.1f MiB "
               "with a copy per slot (%.2fx). Less TCG's translation cache (%.1f MiB per guest, "
               "measured in this run; KVM has none): idle PSS %.1f MiB (target <= 40), host "
               "%.1f MiB per idle guest (target <= 48)\n",
               ns[last], t, c, t > 0 ? c / t : 0, ft->tcg_mib, t_pss, t_host);
    printf("{\"density\":{");
    for (size_t m = 0; m < 2; m++) {
        printf("%s\"%s\":{", m ? "," : "", modes[m]);
        for (size_t i = 0, first = 1; i < n_ns; i++) {
            if (!ok[m][i])
                continue;
            const MemoryFigures *x = &f[m][i];
            printf("%s\"%u\":{\"idle_guest_pss_mib\":%.1f,\"idle_guest_rss_mib\":%.1f,"
                   "\"tcg_code_mib\":%.1f,\"idle_guest_pss_less_tcg_mib\":%.1f,"
                   "\"template_mib\":%.1f,\"host_mib_per_idle_guest\":%.1f,"
                   "\"host_mib_per_idle_guest_less_tcg\":%.1f,"
                   "\"host_exact_mib_per_idle_guest\":%.1f,\"snapshot_disk_mib\":%.1f}",
                   first ? "" : ",", ns[i], x->pss_mib, x->rss_mib, x->tcg_mib,
                   x->pss_mib - x->tcg_mib, x->template_mib, x->host_mib_per_idle_guest,
                   x->host_mib_per_idle_guest - x->tcg_mib, x->host_exact_mib_per_idle_guest,
                   x->snapshot_disk_mib);
            first = 0;
        }
        printf("}");
    }
    printf("},\"guests\":%u,\"template_host_mib_per_idle_guest\":%.1f,"
           "\"copy_host_mib_per_idle_guest\":%.1f,\"copy_over_template\":%.2f,"
           "\"template_idle_guest_pss_less_tcg_mib\":%.1f,"
           "\"template_host_mib_per_idle_guest_less_tcg\":%.1f}\n",
           ns[last], ok[0][last] ? t : 0, ok[1][last] ? c : 0,
           ok[0][last] && ok[1][last] && t > 0 ? c / t : 0, ok[0][last] ? t_pss : 0,
           ok[0][last] ? t_host : 0);
    return ok[0][last] && ok[1][last] ? 0 : 1;
}

int
main(int argc, char **argv)
{
    unsigned sessions = 30, warm = 4;
    const char *modes[2] = {"template", "copy"};
    size_t n_modes = 2;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            sessions = 3, warm = 2;
        else if (strcmp(argv[i], "--sessions") == 0 && i + 1 < argc)
            sessions = (unsigned) atoi(argv[++i]);
        else if (strcmp(argv[i], "--warm") == 0 && i + 1 < argc)
            warm = (unsigned) atoi(argv[++i]);
        else if (strcmp(argv[i], "--guest-memory") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "copy") == 0 || strcmp(argv[i + 1], "template") == 0)) {
            modes[0] = argv[++i];
            n_modes = 1;
        } else if (strcmp(argv[i], "--guest-memory") == 0 && i + 1 < argc &&
                   strcmp(argv[i + 1], "both") == 0) {
            i++;
        } else if (strcmp(argv[i], "--density") == 0) {
            return run_density(i + 1 < argc ? argv[i + 1] : "1,4,8,16");
        } else {
            fprintf(stderr, "usage: %s [--sessions N] [--warm W] [--quick] "
                            "[--guest-memory copy|template|both] [--density N,N,...]\n",
                    argv[0]);
            return 2;
        }
    }
    Figures f[2];
    bool ran[2] = {false, false};
    for (size_t m = 0; m < n_modes; m++)
        ran[m] = run_mode(modes[m], sessions, warm, &f[m]);
    if (!ran[0])
        return 1;
    printf("{");
    json_figures(&f[0]);
    if (n_modes == 2 && ran[1]) {
        printf(",\"%s\":{", f[1].mode);
        json_figures(&f[1]);
        printf("}");
    }
    printf("}\n");
    return f[0].ok && (n_modes == 1 || (ran[1] && f[1].ok)) ? 0 : 1;
}
