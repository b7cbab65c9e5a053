/* See histogram.h. */
#include "histogram.h"

const uint64_t histogram_bounds_usec[HISTOGRAM_BUCKETS] = {
    1000,    2500,    5000,    10000,    25000,    50000,    100000,   250000,
    500000,  1000000, 2500000, 5000000,  10000000, 30000000, 60000000, UINT64_MAX,
};

void
histogram_add(Histogram *h, uint64_t usec)
{
    if (h->count == 0 || usec < h->min_usec)
        h->min_usec = usec;
    if (usec > h->max_usec)
        h->max_usec = usec;
    h->count++;
    h->sum_usec += usec;
    for (int i = 0; i < HISTOGRAM_BUCKETS; i++)
        if (usec <= histogram_bounds_usec[i]) {
            h->buckets[i]++;
            return;
        }
}

uint64_t
histogram_mean_usec(const Histogram *h)
{
    return h->count ? h->sum_usec / h->count : 0;
}
