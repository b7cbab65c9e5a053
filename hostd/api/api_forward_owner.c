/* Which host owns a session, for forwarding (the native face's and, through the daemon, the
 * E2B faces'): the cluster's session index, read on a connection of its own and cached.
 *
 * Off the loop thread (issue 25, finding 7): the daemon's first connection is the loop's (it
 * admits and settles there); a lookup on it held the loop for a round trip per request, so a
 * flood of requests naming made-up ids slowed every session of the host. Lookups run on the
 * caller's thread (a connection thread, which waits for its answer anyway) on the second
 * connection, one at a time under dir_lock, each bounded: the connection's own bounds
 * (hostd/cluster: 5 s for an answer, reconnect backoff), and at most FWD_LOOKUP_TIMEOUT_USEC
 * waiting for the connection.
 *
 * The same cost for every answer (finding 8): a cached owner answered in microseconds and an
 * unknown id cost a lookup, so timing told anyone whether a session id existed. Now the cache
 * keeps absent ids as well, and keys every entry by the scope that asked (the tenant; an
 * operator's "*"): a tenant's first question about an id costs one lookup whether it exists
 * or not, whoever else asked before, and its next one is a cache hit either way.
 *
 * Fair use of the one connection: each scope has at most FWD_SCOPE_LOOKUPS_MAX lookups under
 * way at once, so one tenant naming many ids queues at most that many round trips ahead of
 * everyone else; its further questions wait their turn (and are often answered by the cache
 * meanwhile: a burst of requests for one new session costs one lookup), 429 after the
 * lookup's bound. Ids never move, but a host may come back at another URL and a
 * session may end: entries expire after FWD_CACHE_TTL_USEC. An absent id is never made later
 * under the same id (ids are 130 random bits, learnt only from the create's answer, after
 * its index row was written), so caching absence is safe. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api_forward_internal.h"
#include "timeutil.h"

#define FWD_CACHE_TTL_USEC (60 * USEC_PER_SEC)
#define FWD_LOOKUP_TIMEOUT_USEC (10 * USEC_PER_SEC) /* waiting for the lookup connection */

static size_t
slot_of(const char *scope, const char *id)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over scope, a separator, id */
    for (const char *p = scope; *p; p++)
        h = (h ^ (unsigned char) *p) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
    for (const char *p = id; *p; p++)
        h = (h ^ (unsigned char) *p) * 1099511628211ull;
    return (size_t) (h % FWD_CACHE_SLOTS);
}

/* 1 found, 0 cached as absent, -1 not cached. Under af->lock. */
static int
cache_get(ApiForward *af, const char *scope, const char *id, ClusterOwner *ret)
{
    CacheSlot *s = &af->cache[slot_of(scope, id)];
    if (s->expires_usec <= now_usec() || strcmp(s->id, id) != 0 || strcmp(s->scope, scope) != 0)
        return -1;
    if (s->found)
        *ret = s->owner;
    return s->found;
}

static void
cache_put(ApiForward *af, const char *scope, const char *id, const ClusterOwner *o)
{
    pthread_mutex_lock(&af->lock);
    CacheSlot *s = &af->cache[slot_of(scope, id)];
    snprintf(s->scope, sizeof(s->scope), "%s", scope);
    snprintf(s->id, sizeof(s->id), "%s", id);
    s->found = o != NULL;
    s->owner = o ? *o : (ClusterOwner){0};
    s->expires_usec = now_usec() + FWD_CACHE_TTL_USEC;
    pthread_mutex_unlock(&af->lock);
}

/* The lookup connection, waited for at most FWD_LOOKUP_TIMEOUT_USEC. */
static bool
dir_acquire(ApiForward *af)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* pthread_mutex_timedlock's clock */
    ts.tv_sec += FWD_LOOKUP_TIMEOUT_USEC / USEC_PER_SEC;
    return pthread_mutex_timedlock(&af->dir_lock, &ts) == 0;
}

static int
owner_from_index(ApiForward *af, const char *scope, const char *id, ClusterOwner *ret, Error **errp)
{
    _cleanup_error_ Error *err = NULL;
    ClusterOwner o;

    if (!dir_acquire(af))
        return error_set(errp, E_UNAVAILABLE, 0, "the cluster's session index is busy");
    pthread_mutex_lock(&af->lock);
    int cached = cache_get(af, scope, id, &o); /* answered while this waited */
    pthread_mutex_unlock(&af->lock);
    int r = cached < 0 ? cluster_session_owner(af->dir, id, &o, &err) : cached > 0 ? 0 : -1;
    pthread_mutex_unlock(&af->dir_lock);
    if (cached < 0)
        atomic_fetch_add(&af->index_lookups, 1);
    if (r == 0 || cached == 0 || err->category == E_NOT_FOUND) {
        if (cached < 0)
            cache_put(af, scope, id, r == 0 ? &o : NULL);
        if (r < 0)
            return error_set(errp, E_NOT_FOUND, 0, "no session %.64s", id);
        *ret = o;
        return 0;
    }
    return error_set(errp, err->category, 0, "%s", err->message);
}

/* Under af->lock: the cached answer (1, 0), or -1 with a lookup of scope's share taken
 * (*ret_admitted), or -1 without one once the lookup's bound passed. */
static int
cache_or_turn(ApiForward *af, const char *scope, const char *id, ClusterOwner *ret,
              bool *ret_admitted)
{
    uint64_t deadline = now_usec() + FWD_LOOKUP_TIMEOUT_USEC;
    for (;;) {
        int cached = cache_get(af, scope, id, ret);
        if (cached >= 0 || (*ret_admitted = api_tally_enter(&af->lookups, scope,
                                                             FWD_SCOPE_LOOKUPS_MAX)))
            return cached;
        uint64_t now = now_usec();
        if (now >= deadline)
            return -1;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t wake = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000 +
                        (deadline - now);
        ts = (struct timespec){.tv_sec = (time_t) (wake / USEC_PER_SEC),
                               .tv_nsec = (long) (wake % USEC_PER_SEC) * 1000};
        (void) pthread_cond_timedwait(&af->lookup_done, &af->lock, &ts);
    }
}

int
api_forward_owner(ApiForward *af, const char *scope, const char *id, ClusterOwner *ret,
                  Error **errp)
{
    ClusterOwner o;
    bool admitted = false;

    pthread_mutex_lock(&af->lock);
    int cached = cache_or_turn(af, scope, id, &o, &admitted);
    pthread_mutex_unlock(&af->lock);
    if (cached >= 0) {
        atomic_fetch_add(&af->lookup_hits, 1);
        if (cached == 0)
            return error_set(errp, E_NOT_FOUND, 0, "no session %.64s", id);
        *ret = o;
        return 0;
    }
    if (!admitted) {
        atomic_fetch_add(&af->refused_lookups, 1);
        return error_set(errp, E_QUOTA, 0,
                         "this tenant's session lookups waited their turn for %d s: retry later",
                         (int) (FWD_LOOKUP_TIMEOUT_USEC / USEC_PER_SEC));
    }
    int r = af->dir ? owner_from_index(af, scope, id, ret, errp)
                    : error_set(errp, E_UNAVAILABLE, 0, "no cluster session index");
    pthread_mutex_lock(&af->lock);
    api_tally_leave(&af->lookups, scope);
    pthread_cond_broadcast(&af->lookup_done);
    pthread_mutex_unlock(&af->lock);
    return r;
}

void
api_forward_owner_init(ApiForward *af, Cluster *dir)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&af->lookup_done, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&af->dir_lock, NULL);
    af->dir = dir;
}

void
api_forward_owner_free(ApiForward *af)
{
    pthread_cond_destroy(&af->lookup_done);
    pthread_mutex_destroy(&af->dir_lock);
}
