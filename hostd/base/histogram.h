/* Latency histogram with fixed buckets (Prometheus-style cumulative output later), plus
 * count, sum, min and max. No allocation; not thread-safe (the loop thread owns it). */
#pragma once

#include <stdint.h>

#define HISTOGRAM_BUCKETS 16

typedef struct Histogram {
    uint64_t count;
    uint64_t sum_usec;
    uint64_t min_usec, max_usec;
    uint64_t buckets[HISTOGRAM_BUCKETS]; /* non-cumulative counts per upper bound */
} Histogram;

/* Upper bounds in microseconds; the last is +Inf (UINT64_MAX). */
extern const uint64_t histogram_bounds_usec[HISTOGRAM_BUCKETS];

void histogram_add(Histogram *h, uint64_t usec);
/* Mean in microseconds, 0 when empty. */
uint64_t histogram_mean_usec(const Histogram *h);
