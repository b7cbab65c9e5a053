#include "watchdog.h"

#include <time.h>

#include "timeutil.h"

static void *
watchdog_main(void *p)
{
    Watchdog *w = p;
    pthread_mutex_lock(&w->m);
    while (!w->done) {
        uint64_t at = w->at_usec;
        struct timespec ts = {.tv_sec = (time_t) (at / USEC_PER_SEC),
                              .tv_nsec = (long) (at % USEC_PER_SEC * NSEC_PER_USEC)};
        if (now_usec() < at) {
            pthread_cond_timedwait(&w->c, &w->m, &ts);
            continue;
        }
        w->fired = true;
        w->fire(w->arg); /* under w->m: watchdog_stop() waits for it */
        if (w->repeat_usec == 0)
            break;
        w->at_usec = now_usec() + w->repeat_usec;
    }
    pthread_mutex_unlock(&w->m);
    return NULL;
}

int
watchdog_start(Watchdog *w, uint64_t at_usec, uint64_t repeat_usec, void (*fire)(void *arg),
               void *arg)
{
    pthread_condattr_t attr;
    *w = (Watchdog){.at_usec = at_usec, .repeat_usec = repeat_usec, .fire = fire, .arg = arg};
    pthread_mutex_init(&w->m, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->c, &attr);
    pthread_condattr_destroy(&attr);
    int r = pthread_create(&w->thread, NULL, watchdog_main, w);
    if (r != 0) {
        pthread_cond_destroy(&w->c);
        pthread_mutex_destroy(&w->m);
    }
    return -r;
}

bool
watchdog_stop(Watchdog *w)
{
    pthread_mutex_lock(&w->m);
    w->done = true;
    pthread_cond_signal(&w->c);
    pthread_mutex_unlock(&w->m);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->c);
    pthread_mutex_destroy(&w->m);
    return w->fired;
}
