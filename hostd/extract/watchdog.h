/* A deadline on a blocking libguestfs call that cannot be interrupted any other way: a
 * thread that calls fire() once the deadline passes, and again every repeat_usec until
 * watchdog_stop() (a launch may not have started qemu yet when the deadline passes).
 * Internal to hostd/extract. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct Watchdog {
    pthread_t thread;
    pthread_mutex_t m;
    pthread_cond_t c;
    bool done, fired;
    uint64_t at_usec;     /* CLOCK_MONOTONIC, as now_usec() */
    uint64_t repeat_usec; /* 0: fire once */
    void (*fire)(void *arg);
    void *arg;
} Watchdog;

/* Starts the thread. Returns 0, or -errno (nothing to stop then). */
int watchdog_start(Watchdog *w, uint64_t at_usec, uint64_t repeat_usec, void (*fire)(void *arg),
                   void *arg);

/* Stops and joins the thread; fire() is not running and will not run after this. Returns
 * whether it fired at least once. */
bool watchdog_stop(Watchdog *w);
