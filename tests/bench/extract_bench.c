/* Benchmark of hostd/extract under real libguestfs (root): prints figures, never judges
 * them. One warm appliance with three slots (empty filesystem, 21 MB in 8 files,
 * 2000 x 4 KiB), each salvaged BENCH_REPS times, then one cold one-shot salvage of the
 * 21 MB disk for comparison. Temp files and the appliance are removed at the end. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extract.h"
#include "testlib.h"
#include "timeutil.h"

#define BENCH_REPS 3
#define BENCH_SLOT_SIZE "1G"
#define BENCH_N_SLOTS 3

static char *scratch;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

static const char *const slot_names[BENCH_N_SLOTS] = {"empty", "21MB-8files", "2000x4KiB"};

static int
build(void)
{
    return sh("cd %s && mkdir -p empty 21MB-8files/d 2000x4KiB && "
              "head -c 20000000 /dev/urandom > 21MB-8files/big.bin && "
              "for i in 1 2 3 4 5 6; do head -c 125000 /dev/urandom > 21MB-8files/f$i; done && "
              "head -c 100000 /dev/urandom > 21MB-8files/d/leaf && "
              "for i in $(seq 1 2000); do head -c 4096 /dev/urandom > 2000x4KiB/f$i; done && "
              "for s in empty 21MB-8files 2000x4KiB; do "
              "truncate -s " BENCH_SLOT_SIZE
              " $s.img && mkfs.ext4 -q -F -d $s $s.img || exit 1; done",
              scratch);
}

static double
one_salvage(ExtractAppliance *a, size_t slot, const char *disk, const ExtractConfig *cfg,
            ExtractStats *st)
{
    ExtractLimits lim;
    Error *err = NULL;
    char dest[4096];
    extract_limits_default(&lim);
    snprintf(dest, sizeof(dest), "%s/out", scratch);
    sh("rm -rf %s && mkdir -p %s", dest, dest);
    int dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    uint64_t t0 = now_usec();
    int r = a ? extract_salvage(a, slot, dfd, &lim, st, &err)
              : extract_salvage_cold(disk, cfg, dfd, &lim, st, &err);
    double s = (double) (now_usec() - t0) / 1e6;
    close(dfd);
    if (r < 0)
        printf("  salvage failed: %s\n", err->message);
    error_free(err);
    return r < 0 ? -1 : s;
}

static void
bench_warm(const ExtractConfig *cfg)
{
    char paths[BENCH_N_SLOTS][4096];
    const char *disks[BENCH_N_SLOTS];
    ExtractAppliance *a = NULL;
    Error *err = NULL;
    for (int i = 0; i < BENCH_N_SLOTS; i++) {
        snprintf(paths[i], sizeof(paths[i]), "%s/%s.img", scratch, slot_names[i]);
        disks[i] = paths[i];
    }
    uint64_t t0 = now_usec();
    if (extract_appliance_start(disks, BENCH_N_SLOTS, cfg, &a, &err) < 0) {
        printf("launch failed: %s\n", err->message);
        error_free(err);
        return;
    }
    printf("warm appliance launch (%d disks): %.2f s\n", BENCH_N_SLOTS,
           (double) (now_usec() - t0) / 1e6);
    for (int i = 0; i < BENCH_N_SLOTS; i++) {
        ExtractStats st = {0};
        printf("warm salvage %-12s", slot_names[i]);
        for (int rep = 0; rep < BENCH_REPS; rep++)
            printf(" %.2f s", one_salvage(a, (size_t) i, NULL, cfg, &st));
        printf("   (%u files, %llu bytes; last: mount %.2f scan %.2f stream %.2f cleanup %.2f)\n",
               st.files, (unsigned long long) st.bytes, (double) st.mount_usec / 1e6,
               (double) st.scan_usec / 1e6, (double) st.stream_usec / 1e6,
               (double) st.cleanup_usec / 1e6);
    }
    t0 = now_usec();
    extract_appliance_free(a);
    printf("appliance shutdown: %.2f s\n", (double) (now_usec() - t0) / 1e6);
}

int
main(void)
{
    if (geteuid() != 0)
        test_skip("needs root (libguestfs appliance)");
    scratch = test_mkdtemp("extract-bench");
    if (!scratch || build() != 0) {
        fprintf(stderr, "could not build the bench images\n");
        return 1;
    }
    ExtractConfig cfg = {.force_tcg = true, .state_dir = scratch,
                         .qemu_wrapper = STOCKADE_APPLIANCE_QEMU};
    bench_warm(&cfg);
    ExtractStats st = {0};
    char disk[4096];
    snprintf(disk, sizeof(disk), "%s/21MB-8files.img", scratch);
    double cold = one_salvage(NULL, 0, disk, &cfg, &st);
    printf("cold salvage 21MB-8files (launch + salvage + shutdown): %.2f s (%u files)\n", cold,
           st.files);
    test_rm_rf(scratch);
    free(scratch);
    return 0;
}
