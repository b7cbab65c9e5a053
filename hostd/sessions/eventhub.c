/* See eventhub.h. One mutex and one condition variable; entries in a flat array (a few
 * hundred live sessions: a linear scan is cheaper than any map here). */
#include "eventhub.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "timeutil.h"

#define EVENTHUB_ID_BYTES 40

typedef struct {
    char id[EVENTHUB_ID_BYTES];
    uint64_t seq;
    bool ended;
    uint64_t touched; /* publish counter at the last change, for eviction */
} Entry;

typedef struct {
    char id[EVENTHUB_ID_BYTES];
    int fd; /* -1: free slot */
} Subscriber;

struct EventHub {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    Entry *entries;
    size_t n;
    uint64_t clock;
    bool shut_down;
    Subscriber subs[EVENTHUB_MAX_SUBSCRIBERS];
};

static void
hub_kick(int fd)
{
    uint64_t one = 1;
    (void) !write(fd, &one, sizeof(one));
}

int
eventhub_new(EventHub **ret, Error **errp)
{
    EventHub *h = calloc(1, sizeof(*h));
    if (!h || !(h->entries = calloc(EVENTHUB_MAX_SESSIONS, sizeof(Entry)))) {
        free(h);
        return error_set(errp, E_INTERNAL, ENOMEM, "event hub");
    }
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cond, &attr);
    pthread_condattr_destroy(&attr);
    for (size_t i = 0; i < EVENTHUB_MAX_SUBSCRIBERS; i++)
        h->subs[i].fd = -1;
    *ret = h;
    return 0;
}

void
eventhub_free(EventHub *h)
{
    if (!h)
        return;
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
    free(h->entries);
    free(h);
}

static Entry *
hub_find(EventHub *h, const char *id)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(h->entries[i].id, id) == 0)
            return &h->entries[i];
    return NULL;
}

/* A slot for a new entry: append, or replace the least recently touched ended entry, or
 * failing that the least recently touched one. */
static Entry *
hub_slot(EventHub *h)
{
    if (h->n < EVENTHUB_MAX_SESSIONS)
        return &h->entries[h->n++];
    Entry *victim = &h->entries[0];
    for (size_t i = 1; i < h->n; i++) {
        Entry *e = &h->entries[i];
        if ((e->ended && !victim->ended) ||
            (e->ended == victim->ended && e->touched < victim->touched))
            victim = e;
    }
    return victim;
}

void
eventhub_publish(EventHub *h, const char *session_id, uint64_t seq, bool ended)
{
    pthread_mutex_lock(&h->lock);
    Entry *e = hub_find(h, session_id);
    if (!e) {
        e = hub_slot(h);
        memset(e, 0, sizeof(*e));
        strncpy(e->id, session_id, sizeof(e->id) - 1);
    }
    if (seq > e->seq)
        e->seq = seq;
    e->ended |= ended;
    e->touched = ++h->clock;
    pthread_cond_broadcast(&h->cond);
    for (size_t i = 0; i < EVENTHUB_MAX_SUBSCRIBERS; i++)
        if (h->subs[i].fd >= 0 && strcmp(h->subs[i].id, session_id) == 0)
            hub_kick(h->subs[i].fd);
    pthread_mutex_unlock(&h->lock);
}

int
eventhub_subscribe(EventHub *h, const char *session_id, Error **errp)
{
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
        return error_set(errp, E_INTERNAL, errno, "eventfd");
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < EVENTHUB_MAX_SUBSCRIBERS; i++)
        if (h->subs[i].fd < 0) {
            h->subs[i].fd = fd;
            snprintf(h->subs[i].id, sizeof(h->subs[i].id), "%s", session_id);
            if (h->shut_down)
                hub_kick(fd);
            pthread_mutex_unlock(&h->lock);
            return fd;
        }
    pthread_mutex_unlock(&h->lock);
    close(fd);
    return error_set(errp, E_UNAVAILABLE, 0, "too many event followers (%d)",
                     EVENTHUB_MAX_SUBSCRIBERS);
}

void
eventhub_unsubscribe(EventHub *h, int fd)
{
    if (fd < 0)
        return;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < EVENTHUB_MAX_SUBSCRIBERS; i++)
        if (h->subs[i].fd == fd)
            h->subs[i].fd = -1;
    pthread_mutex_unlock(&h->lock);
    close(fd);
}

bool
eventhub_peek(EventHub *h, const char *session_id, uint64_t *ret_seq, bool *ret_ended)
{
    pthread_mutex_lock(&h->lock);
    Entry *e = hub_find(h, session_id);
    *ret_seq = e ? e->seq : 0;
    *ret_ended = e ? e->ended : true;
    pthread_mutex_unlock(&h->lock);
    return e != NULL;
}

bool
eventhub_wait(EventHub *h, const char *session_id, uint64_t after_seq, uint64_t deadline_usec,
              uint64_t *ret_seq, bool *ret_ended)
{
    struct timespec ts = {.tv_sec = (time_t) (deadline_usec / USEC_PER_SEC),
                          .tv_nsec = (long) (deadline_usec % USEC_PER_SEC) * 1000};
    bool known = false, timed_out = false;

    pthread_mutex_lock(&h->lock);
    for (;;) {
        Entry *e = hub_find(h, session_id); /* again after every wait: entries may move */
        known = e != NULL;
        if (!e || e->seq > after_seq || e->ended || h->shut_down || timed_out) {
            *ret_seq = e ? e->seq : 0;
            *ret_ended = e ? e->ended : true;
            break;
        }
        timed_out = pthread_cond_timedwait(&h->cond, &h->lock, &ts) != 0;
    }
    pthread_mutex_unlock(&h->lock);
    return known;
}

void
eventhub_shutdown(EventHub *h)
{
    pthread_mutex_lock(&h->lock);
    h->shut_down = true;
    pthread_cond_broadcast(&h->cond);
    for (size_t i = 0; i < EVENTHUB_MAX_SUBSCRIBERS; i++)
        if (h->subs[i].fd >= 0)
            hub_kick(h->subs[i].fd);
    pthread_mutex_unlock(&h->lock);
}

bool
eventhub_is_shut_down(EventHub *h)
{
    pthread_mutex_lock(&h->lock);
    bool r = h->shut_down;
    pthread_mutex_unlock(&h->lock);
    return r;
}
