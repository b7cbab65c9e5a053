/* Inside forwarding (api_forward.c decides; api_forward_owner.c looks owners up and caches
 * them; api_forward_hop.c carries a request to its owner and the answer back; api_hop.c is
 * the host-to-host listener the other hosts' hops arrive on). Not for the routes. */
#pragma once

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "api_forward.h"
#include "api_internal.h"
#include "cluster_route.h"

/* Owners remembered (direct-mapped), per (scope, id): a scope sees only what it asked for
 * itself, so no tenant learns from the timing of an answer that another asked (issue 25). */
#define FWD_CACHE_SLOTS 1024
/* Idle curl handles kept with their open connections to the owners: a forwarded request
 * then costs the owner no accept, head peek and thread start (measured: that was most of
 * the routed overhead of a GET). */
#define FWD_IDLE_HANDLES 16
/* Requests one tenant has on their way to other hosts from this one at once (each a
 * transfer thread here and a connection thread on the owner): README.md, "Forwarding",
 * for why this number. Operators count as one more tenant. */
#define FWD_TENANT_HOPS_MAX 64
/* Owner lookups one scope has under way at once (each a round trip on the one lookup
 * connection every tenant shares); more wait their turn. */
#define FWD_SCOPE_LOOKUPS_MAX 4
#define FWD_SCOPE_OPERATOR "*" /* an operator's lookups and hops: sees every tenant's */

typedef struct {
    char scope[API_FORWARD_TENANT_MAX_BYTES + 1];
    char id[64];
    bool found; /* false: the index has no such session (cached as well) */
    ClusterOwner owner;
    uint64_t expires_usec; /* monotonic; 0: empty */
} CacheSlot;

struct ApiForward {
    pthread_mutex_t lock;
    unsigned live; /* transfer threads running, under lock */
    atomic_bool stopping;
    /* for /metrics */
    atomic_uint_fast64_t forwarded, unreachable, placed, index_lookups, lookup_hits, refused_hops,
        refused_lookups;
    CacheSlot cache[FWD_CACHE_SLOTS]; /* under lock */
    CURL *handles[FWD_IDLE_HANDLES];  /* idle, under lock */
    size_t n_idle;
    ApiTally hops;    /* live transfers per tenant, under lock */
    ApiTally lookups; /* owner lookups under way per scope, under lock */
    pthread_cond_t lookup_done; /* one ended: a waiting one may take its turn (with lock) */
    /* The lookup connection (ApiDeps.cluster_lookup): one caller at a time. */
    pthread_mutex_t dir_lock;
    Cluster *dir;
};

/* Where a hop goes and whom it carries: the native face carries an identity (tenant, admin);
 * the E2B faces carry the client's headers of pass (the owner authenticates them) and count
 * against tenant (the session's, from the index). */
typedef struct {
    const char *host_id, *base_url;
    ApiHopFace face;
    const char *tenant;
    bool admin;
    const char *const *pass;
} HopSpec;

/* Carries req to the owner's host-to-host listener (a thread of its own); the transfer
 * answers req, always exactly once, also when it cannot start (503 stopping, 429 the
 * tenant holds FWD_TENANT_HOPS_MAX, 502 unreachable). Any thread. */
void api_forward_hop_start(Api *a, HttpRequest *req, const HopSpec *hs);
/* The idle handles closed (api_forward_free(), once no transfer runs). */
void api_forward_handles_free(ApiForward *af);

/* The owner of session id as scope may see it (a tenant id, or FWD_SCOPE_OPERATOR): from
 * the cache, else one statement on the lookup connection (never the loop's), and cached,
 * found or not. E_NOT_FOUND: the index has no such session; E_QUOTA: scope's lookups kept
 * FWD_SCOPE_LOOKUPS_MAX under way for the lookup's bound; E_UNAVAILABLE: the database is away
 * or the lookup connection stayed busy that long. Any thread; blocks about twice that at most. */
int api_forward_owner(ApiForward *af, const char *scope, const char *id, ClusterOwner *ret,
                      Error **errp);
/* The cache and the tallies set up, the lookup connection taken (NULL: none). */
void api_forward_owner_init(ApiForward *af, Cluster *dir);
void api_forward_owner_free(ApiForward *af);

/* The host-to-host listener (api_hop.c). */
void api_hop_server_stop(Api *a);
