/* Time in integer microseconds; names carry units. */
#pragma once

#include <stdint.h>
#include <time.h>

#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_PER_SEC UINT64_C(1000000)
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_SEC UINT64_C(1000000000)

static inline uint64_t
clock_now_usec(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

/* Monotonic clock for deadlines and latencies. */
static inline uint64_t
now_usec(void)
{
    return clock_now_usec(CLOCK_MONOTONIC);
}

/* Wall clock for records shown to humans and for the guest's clock. */
static inline uint64_t
wall_usec(void)
{
    return clock_now_usec(CLOCK_REALTIME);
}
