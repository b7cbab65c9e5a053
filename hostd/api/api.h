/* The v1 HTTP API on top of the server layer (http.h): routes, request bodies, tenant
 * resolution, and the hand-off to the loop thread. Reference: hostd/api/README.md.
 *
 * Read-only routes (get, list, events, files of ended sessions, workspace tar) run on the
 * connection's thread against store readers. Everything that changes state is posted to the
 * loop thread, which answers at once: no request waits on a guest, except file transfers
 * with a running guest, which are bounded by their own chunk deadlines. */
#pragma once

#include "api_forward.h"
#include "cluster_route.h"
#include "error.h"
#include "eventhub.h"
#include "http.h"
#include "loop.h"
#include "pool_status.h"
#include "sessions.h"
#include "store.h"
#include "store_tenants.h"

#define API_TENANT_DEFAULT STORE_TENANT_DEFAULT /* operators' sessions, unless they act for one */
#define API_TENANT_HEADER "X-Stockade-Tenant"   /* an operator acts for this tenant */

typedef struct Api Api;

typedef struct ApiDeps {
    Loop *loop;
    Sessions *sessions;
    PoolStatusFn pool_status;        /* the pool's counts, for /v1/pool, /v1/health, /metrics */
    void *pool_userdata;
    StoreReaders *readers;
    Store *store;                    /* the loop thread's writer: admin changes only */
    Cluster *cluster;                /* [cluster]: the loop thread's connection; else NULL */
    Cluster *cluster_lookup;         /* [cluster]: a second one, for owner lookups off the loop
                                      * (any thread, one at a time: the API serialises them) */
    const AdmitQuota *default_quota; /* of tenants without their own */
    EventHub *hub;
    const char *state_dir;
} ApiDeps;

int api_start(const ApiDeps *deps, const HttpConfig *http, Api **ret, Error **errp);
/* The class of a v1 route a decoded path belongs to (HttpConfig.route_class: the daemon sets
 * it for /metrics' stockade_http_requests_total): health, metrics, pool, sessions, tasks,
 * exec, code, files, events, admin, or other (no route's prefix). Pure, any thread. */
unsigned api_route_class(const char *const *segments, size_t n);
void api_stop(Api *a);

/* Cluster mode, for the E2B faces (hostd/e2b, "Cluster"; handed to them by the daemon).
 *
 * The owner of a session as scope may see it (a tenant id, or "*" for a caller that sees
 * every tenant's, such as a holder of the sandbox's own access token): hostd/api/README.md,
 * "Forwarding" (cached per scope, found or not; one statement on the lookup connection,
 * never the loop's). E_NOT_FOUND, E_QUOTA (the scope's lookups kept its share under way
 * past the lookup's bound), E_UNAVAILABLE. Any thread; blocks for the lookup, bounded. */
int api_session_owner(Api *a, const char *scope, const char *session_id, ClusterOwner *ret,
                      Error **errp);

/* The hop of a forwarded request (hostd/api/README.md, "Forwarding") without an identity:
 * req goes to url (the owner's advertise_url: its host-to-host listener) + its path and query
 * for the owner's face `face`, with its body, its Content-Type and of its other headers only
 * those named in pass (a NULL-terminated list that outlives the transfer; a value that is not
 * plain one-line ASCII of at most 4 KiB is left out), the host credential and the hop's
 * marks, and nothing naming the caller: the owner's face authenticates the caller itself.
 * It counts against tenant's share of hops (429 beyond). The answer comes back as a
 * forwarded request's does (whole, or streamed as it arrives); 502 naming host_id when the
 * other end cannot be reached. Answers req exactly once, also when it cannot start (503
 * without [cluster] or once api_stop_forwarding() ran). Any thread. */
typedef struct ApiPassTarget {
    const char *host_id, *url, *tenant;
    ApiHopFace face;
} ApiPassTarget;
void api_forward_pass(Api *a, HttpRequest *req, const ApiPassTarget *t, const char *const *pass);
/* No new forwarded transfer from now on (they answer 503); waits a little for running ones
 * to end; then the host-to-host listener stops (no other host's hop reaches a face any
 * more). Before stopping the servers whose requests they answer (the E2B faces' too).
 * NULL is fine; api_stop() does it again. */
void api_stop_forwarding(Api *a);

/* The host-to-host listener (issue 25; hostd/api/README.md, "The host-to-host listener"):
 * where every other host's hops arrive, apart from the clients' listeners and their limits.
 * It serves only requests with the host credential and this host's id in the hop's marks,
 * and hands each to the face it names: the native one (always), and the E2B faces given
 * here (a NULL guard: this host runs none, such hops are 404). Cluster mode only; after
 * api_start() and e2b_start(). */
typedef struct ApiHopFaceSpec {
    HttpGuard guard;
    HttpHandler handler;
    void *userdata;
    size_t max_body_bytes;
} ApiHopFaceSpec;
typedef struct ApiHopConfig {
    const char *address;    /* numeric IPv4/IPv6 */
    uint16_t port;          /* 0: any (see api_hop_port()) */
    const HttpConfig *http; /* the API's: deadlines, body budget and spool */
    ApiHopFaceSpec e2b_api, e2b_envd;
} ApiHopConfig;
int api_hop_start(Api *a, const ApiHopConfig *cfg, Error **errp);
uint16_t api_hop_port(const Api *a);

/* Makes a new API token for tenant_id (admin: an operator token) from 256 bits of getrandom,
 * stores only its SHA-256 and commits. ret_token gets the text, the one time it exists;
 * ret (may be NULL) the stored record. Loop thread (or a process of its own). */
int api_token_issue(Store *store, const char *tenant_id, bool admin,
                    char ret_token[ADMIT_TOKEN_TEXT_BYTES], TokenRecord *ret, Error **errp);
/* The same without writing it anywhere: the caller stores *ret (the cluster first, in
 * cluster mode) and wipes ret_token once answered. */
int api_token_mint(const char *tenant_id, bool admin, char ret_token[ADMIT_TOKEN_TEXT_BYTES],
                   TokenRecord *ret, Error **errp);
