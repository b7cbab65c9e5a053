/* Inside forwarding (api_forward.c decides and caches owners; api_forward_hop.c carries a
 * request to its owner and the answer back). Not for the routes. */
#pragma once

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "api_forward.h"
#include "api_internal.h"
#include "cluster_route.h"

#define FWD_CACHE_SLOTS 256 /* owners remembered (direct-mapped) */
/* Idle curl handles kept with their open connections to the owners: a forwarded request
 * then costs the owner no accept, head peek and thread start (measured: that was most of
 * the routed overhead of a GET). */
#define FWD_IDLE_HANDLES 16

typedef struct {
    char id[64];
    ClusterOwner owner;
    uint64_t expires_usec; /* monotonic; 0: empty */
} CacheSlot;

struct ApiForward {
    pthread_mutex_t lock;
    unsigned live; /* transfer threads running, under lock */
    atomic_bool stopping;
    atomic_uint_fast64_t forwarded, unreachable, placed; /* for /metrics */
    CacheSlot cache[FWD_CACHE_SLOTS];            /* under lock */
    CURL *handles[FWD_IDLE_HANDLES];             /* idle, under lock */
    size_t n_idle;
};

/* Carries req to the owner (a thread of its own) as tenant (admin: an operator); the
 * transfer answers req, always exactly once, also when it cannot start. */
void api_forward_hop_start(Api *a, HttpRequest *req, const ClusterOwner *owner, const char *tenant,
                           bool admin);
/* The idle handles closed (api_forward_free(), once no transfer runs). */
void api_forward_handles_free(ApiForward *af);
