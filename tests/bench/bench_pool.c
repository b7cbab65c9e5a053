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
 *   destroy -> QEMU gone (by its pid, not by the API call returning).
 * The last line is one JSON object. Usage: bench_pool [--sessions N] [--warm W] [--quick] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static uint64_t
proc_kib(pid_t pid, const char *file, const char *key)
{
    char path[64], line[256];
    uint64_t v = 0;
    snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, strlen(key)) == 0) {
            v = strtoull(line + strlen(key), NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static void
measure_idle_memory(Harness *h, double *ret_rss_mib, double *ret_pss_mib)
{
    char **names = harness_domains(h);
    uint64_t rss = 0, pss = 0, n = 0;
    for (char **p = names; p && *p; p++) {
        pid_t pid = virt_qemu_pid(*p);
        if (pid <= 0)
            continue;
        rss += proc_kib(pid, "status", "VmRSS:");
        pss += proc_kib(pid, "smaps_rollup", "Pss:");
        n++;
    }
    virt_strv_free(names);
    *ret_rss_mib = n ? (double) rss / (double) n / 1024.0 : 0;
    *ret_pss_mib = n ? (double) pss / (double) n / 1024.0 : 0;
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

int
main(int argc, char **argv)
{
    unsigned sessions = 30, warm = 4;
    Harness h;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            sessions = 3, warm = 2;
        else if (strcmp(argv[i], "--sessions") == 0 && i + 1 < argc)
            sessions = (unsigned) atoi(argv[++i]);
        else if (strcmp(argv[i], "--warm") == 0 && i + 1 < argc)
            warm = (unsigned) atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--sessions N] [--warm W] [--quick]\n", argv[0]);
            return 2;
        }
    }
    harness_start(&h, "minimal", warm, 2 * warm, NULL); /* spare slots: restores never wait for a destroy */
    uint64_t t_start = now_usec();
    if (!harness_wait_full(&h, FILL_TIMEOUT_USEC)) {
        fprintf(stderr, "pool never filled\n");
        return 1;
    }
    printf("pool of %u warm guests ready %.1f s after start (first start: snapshots included)\n",
           warm, (double) (now_usec() - t_start) / 1e6);
    sleep(2); /* let just-restored guests settle before measuring their memory */
    double rss_mib, pss_mib;
    measure_idle_memory(&h, &rss_mib, &pss_mib);

    uint64_t *handout = calloc(sessions, sizeof(uint64_t));
    uint64_t *to_ack = calloc(sessions, sizeof(uint64_t));
    uint64_t *to_started = calloc(sessions, sizeof(uint64_t));
    uint64_t *rtt = calloc(sessions, sizeof(uint64_t));
    uint64_t *second = calloc(sessions, sizeof(uint64_t));
    size_t n_rtt = 0, n_second = 0;
    GoneLog gone = {h.pool, calloc(sessions, sizeof(uint64_t)), 0, 0};
    const char *argv_echo[] = {"echo", "x", NULL};
    size_t ok = 0;
    for (unsigned i = 0; i < sessions; i++) {
        TestSession s;
        if (!harness_wait_full(&h, FILL_TIMEOUT_USEC))
            break;
        uint64_t t0 = now_usec();
        if (!ts_take(&h, &s, "bench") || !ts_exec_start(&s, argv_echo))
            break;
        harness_run_until(&h, first_byte_or_done, &s, 30 * USEC_PER_SEC);
        ts_exec_wait(&s, 30 * USEC_PER_SEC);
        if (s.first_byte_usec && s.acked_usec && s.started_usec) {
            to_ack[ok] = s.acked_usec - t0;
            to_started[ok] = s.started_usec - t0;
            handout[ok++] = s.first_byte_usec - t0;
        }
        /* Baselines in the same guest, after the hand-out: the channel's own round trip,
         * and the same exec again once its paths are translated and cached. */
        int64_t r = ts_ping_usec(&s, 5 * USEC_PER_SEC);
        if (r >= 0)
            rtt[n_rtt++] = (uint64_t) r;
        uint64_t t1 = now_usec();
        if (ts_exec_start(&s, argv_echo)) {
            harness_run_until(&h, first_byte_or_done, &s, 30 * USEC_PER_SEC);
            if (s.first_byte_usec)
                second[n_second++] = s.first_byte_usec - t1;
            ts_exec_wait(&s, 30 * USEC_PER_SEC);
        }
        size_t before = gone.n_gone;
        gone.want = before + 1;
        pool_release(h.pool, s.g, on_gone, &gone);
        harness_run_until(&h, cond_gone, &gone, 30 * USEC_PER_SEC);
        if (gone.n_gone == before)
            fprintf(stderr, "session %u: QEMU not gone within 30 s\n", i);
    }
    double ack_p50 = percentile_ms(to_ack, ok, 0.5), started_p50 = percentile_ms(to_started, ok, 0.5);
    harness_wait_full(&h, FILL_TIMEOUT_USEC);
    double refill = measure_refill_per_min(&h, warm);

    PoolStatus st;
    pool_status(h.pool, &st);
    double cold_s = (double) histogram_mean_usec(&st.boot_to_ready) / 1e6;
    double restore_s = (double) histogram_mean_usec(&st.restore_to_ready) / 1e6;
    double p50 = percentile_ms(handout, ok, 0.50), p99 = percentile_ms(handout, ok, 0.99);
    double gone_p50 = percentile_ms(gone.gone_usec, gone.n_gone, 0.50);
    double gone_p99 = percentile_ms(gone.gone_usec, gone.n_gone, 0.99);
    double handout_mean = mean_ms(handout, ok);
    double cold_first_byte_ms = cold_s * 1000.0 + handout_mean;
    double speedup = handout_mean > 0 ? cold_first_byte_ms / handout_mean : 0;

    printf("accel: %s (%s)\n", accel_to_string(st.accel), st.accel_reason);
    printf("cold boot -> Ready: mean %.2f s over %llu boots\n", cold_s,
           (unsigned long long) st.boot_to_ready.count);
    printf("restore -> Ready: mean %.3f s (min %.3f, max %.3f) over %llu restores\n", restore_s,
           (double) st.restore_to_ready.min_usec / 1e6,
           (double) st.restore_to_ready.max_usec / 1e6,
           (unsigned long long) st.restore_to_ready.count);
    printf("hand-out -> first output byte: p50 %.2f ms, p99 %.2f ms over %zu sessions "
           "(targets here: p50 <= 15, p99 <= 40)\n", p50, p99, ok);
    printf("  phases (p50 from take): Hello Ack %.2f ms, ExecStarted %.2f ms\n", ack_p50,
           started_p50);
    double rtt_p50 = percentile_ms(rtt, n_rtt, 0.5);
    double second_p50 = percentile_ms(second, n_second, 0.5);
    printf("  baselines (p50, same guests after hand-out): Ping->Pong %.2f ms; a second exec -> "
           "first byte %.2f ms\n", rtt_p50, second_p50);
    printf("speed-up vs cold boot in this run: %.0fx (target >= 300x): cold start -> first "
           "byte %.0f ms (means: boot -> Ready + hand-out -> first byte) over warm hand-out -> "
           "first byte %.2f ms (mean)\n", speedup, cold_first_byte_ms, handout_mean);
    printf("refill: %.1f guests/min with refill_concurrency %u, %u rounds of %u (target >= 60)\n",
           refill, h.cfg.refill_concurrency, REFILL_ROUNDS, warm);
    printf("idle pooled guest: QEMU RSS %.1f MiB, PSS %.1f MiB\n", rss_mib, pss_mib);
    printf("destroy -> QEMU gone: p50 %.1f ms, p99 %.1f ms over %zu (target <= 150)\n", gone_p50,
           gone_p99, gone.n_gone);
    harness_stop(&h);
    harness_cleanup(&h);
    printf("{\"accel\":\"%s\",\"sessions\":%zu,\"handout_first_byte_p50_ms\":%.2f,"
           "\"handout_first_byte_p99_ms\":%.2f,\"cold_boot_s\":%.3f,\"restore_s\":%.3f,"
           "\"speedup_vs_cold_boot\":%.0f,\"refill_per_min\":%.1f,\"idle_guest_rss_mib\":%.1f,"
           "\"idle_guest_pss_mib\":%.1f,\"destroy_ms\":%.1f,\"destroy_p99_ms\":%.1f,"
           "\"ping_rtt_ms\":%.2f,\"second_exec_first_byte_ms\":%.2f}\n",
           accel_to_string(st.accel), ok, p50, p99, cold_s, restore_s, speedup, refill, rss_mib,
           pss_mib, gone_p50, gone_p99, rtt_p50, second_p50);
    free(handout);
    free(to_ack);
    free(to_started);
    free(rtt);
    free(second);
    free(gone.gone_usec);
    return ok == sessions ? 0 : 1;
}
