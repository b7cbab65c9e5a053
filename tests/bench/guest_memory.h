/* What idle pooled guests cost the host in memory (issue 15), for bench_pool.
 *
 * Per idle guest (means over the pool's QEMU processes):
 *   rss_mib, pss_mib: VmRSS and Pss (smaps_rollup) of its QEMU;
 *   tcg_mib: the Pss of its anonymous executable mappings: TCG's translation cache, which a
 *     guest under KVM does not have. The in-run floor the emulator adds to every guest;
 *   template_share_mib: the Pss of the template's clean pages it maps (its share of pages
 *     the other clones map too; the pages it wrote are its own and stay in pss_mib).
 * Per pool:
 *   template_mib, template_cache_mib: the template RAM files, allocated and in the page cache;
 *   host_mib_per_idle_guest: (sum of Pss + template page cache) / guests, as issue 15 defines
 *     it: it counts the template pages the clones map twice (in their Pss and in the cache),
 *     so it is an upper bound;
 *   host_exact_mib_per_idle_guest: (sum of (Pss - template share) + template page cache) /
 *     guests: every page once;
 *   snapshot_disk_mib: per-slot save images, or the template's files. */
#pragma once

#include "poolharness.h"

typedef struct {
    double rss_mib, pss_mib, tcg_mib, template_share_mib;
    double template_mib, template_cache_mib;
    double host_mib_per_idle_guest, host_exact_mib_per_idle_guest;
    double snapshot_disk_mib;
    unsigned idle_guests;
} MemoryFigures;

void measure_memory(Harness *h, MemoryFigures *f);
void print_memory(const MemoryFigures *f); /* three lines of text */
