/* E2B compatibility (issue 9): platforms written against the E2B SDK (npm and PyPI `e2b`,
 * checked against npm 2.51.0) drive Stockade sessions unchanged, by pointing E2B_API_URL and
 * E2B_SANDBOX_URL at the two listeners started here. Reference: hostd/e2b/README.md.
 *
 *   control plane  E2B's REST API ("X-API-KEY: <a Stockade token>") on [e2b] api_port:
 *                  create, connect, get, list, kill, set timeout; a sandbox is one session
 *   envd face      what E2B runs inside its VMs, served here on the host on [e2b] envd_port
 *                  for every sandbox (routed by E2b-Sandbox-Id, or a <port>-<id>.<domain>
 *                  Host): Connect-RPC JSON process.Process and filesystem.Filesystem, /files,
 *                  /health, translated to the sessions module's execs, stdin, signals and
 *                  file round trips with the runner
 *
 * Threading: both listeners are stockade_http servers (a thread per connection). Handlers
 * run on their connection thread, post their work to the loop thread and return; the loop
 * answers (http_loop_post(); only the envd guard waits, bounded); the sandbox table is the
 * loop thread's. Streams follow committed session
 * events through the EventHub like the native events route. Nothing here logs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "e2b_config.h"
#include "error.h"
#include "http.h"
#include "pool_status.h"

typedef struct E2b E2b;
typedef struct Loop Loop;
typedef struct Sessions Sessions;
typedef struct StoreReaders StoreReaders;
typedef struct EventHub EventHub;
typedef struct AdmitQuota AdmitQuota;

/* Cluster mode (README.md, "Cluster"): where a sandbox this host does not hold lives. */
#define E2B_PEER_URL_MAX_BYTES 255
/* Cluster mode's envd token keys (E2bDeps.envd_keys): the cluster's CLUSTER_SECRETS_MAX and
 * CLUSTER_KEY_BYTES, checked where the daemon wires the two. */
#define E2B_ENVD_KEYS_MAX 2
#define E2B_ENVD_KEY_BYTES 32
typedef struct E2bOwner {
    char tenant[64];
    char host_id[64];
    char url[E2B_PEER_URL_MAX_BYTES + 1]; /* its host-to-host listener (advertise_url) */
    bool here;                /* the cluster says this host: never forwarded (one hop) */
    bool ended;               /* the index says the session ended */
    bool api_face, envd_face; /* the owner runs these E2B faces */
} E2bOwner;
/* The session's owner from the cluster's index, as scope may see it (the API key's tenant;
 * for envd, whose caller proved it holds the sandbox's token, a scope of the sandbox's own).
 * Any thread (a connection thread: it blocks for a lookup, bounded, never on the loop).
 * E_NOT_FOUND when the index has no such session; E_QUOTA when scope's lookups kept their
 * share under way past the lookup's bound; E_UNAVAILABLE when the database is away. */
typedef int (*E2bOwnerFn)(void *userdata, const char *scope, const char *session_id, E2bOwner *ret,
                          Error **errp);
/* Carries req unchanged (with the headers named in pass) to the owner's host-to-host
 * listener at url, for its envd face (envd) or its control plane, counted against tenant's
 * share of hops, and answers it with what comes back, exactly once (hostd/api:
 * api_forward_pass()). Any thread. */
typedef void (*E2bForwardFn)(void *userdata, HttpRequest *req, const char *host_id, const char *url,
                             bool envd, const char *tenant, const char *const *pass);

typedef struct E2bDeps {
    Loop *loop;
    Sessions *sessions;
    PoolStatusFn pool_status; /* the pools' shapes, which a template maps to */
    void *pool_userdata;
    StoreReaders *readers; /* API keys, session states, events */
    EventHub *hub;
    const AdmitQuota *default_quota; /* of tenants without their own */
    uint64_t max_timeout_usec;       /* [sessions] max_timeout_s: an exec without a deadline */
    unsigned workspace_mib;          /* reported as diskSizeMB */
    struct HttpBudget *body_budget;  /* request bodies in memory, shared with the API; NULL: the
                                      * listeners' own */
    const char *spool_dir;           /* large bodies go to unlinked files here (HttpConfig) */
    HttpAuthenticateFn authenticate; /* X-API-KEY's tenant: the API's lookup (HttpConfig) */
    void *authenticate_userdata;
    /* [cluster]: a sandbox of another host is proxied to it. NULL owner: a single host. */
    E2bOwnerFn owner;
    E2bForwardFn forward;
    void *cluster_userdata; /* of both */
    /* [cluster]: the envd token keys derived from the host credential every host shares
     * (current first, two during a rotation: hostd/cluster/cluster_keys.h), into ret; returns
     * how many. A sandbox's envd token is an HMAC under the current one and any host accepts
     * either's (e2b_envd_token_for()). NULL: a single host, random tokens. Any thread (the
     * envd guard checks a token on the connection thread). */
    size_t (*envd_keys)(void *cluster_userdata, uint8_t ret[E2B_ENVD_KEYS_MAX][E2B_ENVD_KEY_BYTES]);
} E2bDeps;

/* Opens both listeners (cfg->enabled must be true). cfg and deps are copied; deps' objects
 * must outlive e2b_stop(). E_IO when a port cannot be bound. Loop thread. */
int e2b_start(const E2bDeps *deps, const E2bConfig *cfg, E2b **ret, Error **errp);
/* Wakes every waiting handler, closes both listeners, joins their threads, frees. Once the
 * loop no longer runs (daemon_free(): calls posted to it refer to e); NULL is fine. */
void e2b_stop(E2b *e);
/* A face's guard and handler (userdata: the E2b) and its body cap, for the host-to-host
 * listener (hostd/api/api_hop.c), which hands it the other hosts' hops for this face. */
typedef struct E2bFace {
    HttpGuard guard;
    HttpHandler handler;
    size_t max_body_bytes;
} E2bFace;
void e2b_face(const E2b *e, bool envd, E2bFace *ret);
/* The bound ports (useful with port 0 in tests). */
unsigned e2b_api_port(const E2b *e);
unsigned e2b_envd_port(const E2b *e);
/* Whether both listeners serve HTTPS ([e2b] or [api] tls_cert). */
bool e2b_tls(const E2b *e);
/* Connection threads of both listeners inside a handler (http_server_handlers_running()); any
 * thread. NULL: 0. */
unsigned e2b_handlers_running(const E2b *e);
