/* Forwarding a request for a session another host owns (issue 16): when, to whom, and the
 * owner's acceptance of a forwarded identity. See api_forward.h for the trust rules,
 * api_forward_hop.c for the transfer, hostd/api/README.md ("Forwarding") for the picture.
 *
 * Where: api_handle() asks api_forward_take() once the request (head and body, within the
 * local limits) is in and its caller authenticated. Only a request naming one session whose
 * id this host's store does not hold, in cluster mode, not itself forwarded, is taken.
 *
 * The owner lookup uses the daemon's one PostgreSQL connection, which belongs to the loop
 * thread: the lookup is posted there (http_loop_post) rather than given a connection of
 * its own, so PostgreSQL sees one connection per host, an outage is met by the connection's
 * own reconnect backoff (503 at once, not a connect per request), and nothing else touches
 * the connection from another thread. Owners are cached (session ids never move; a short
 * expiry follows a host that comes back at another advertise_url), so the loop is asked
 * once per session and a minute, not per request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_forward_internal.h"
#include "log.h"
#include "timeutil.h"

#define FWD_LOOKUP_TIMEOUT_USEC (10 * USEC_PER_SEC) /* the loop's owner lookup */
#define FWD_CACHE_TTL_USEC (60 * USEC_PER_SEC)
#define FWD_STOP_WAIT_USEC (3 * USEC_PER_SEC) /* api_stop() waits for transfers this long */

static uint64_t
slot_of(const char *id)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *id; id++)
        h = (h ^ (unsigned char) *id) * 1099511628211ull;
    return h % FWD_CACHE_SLOTS;
}

static bool
cache_get(ApiForward *af, const char *id, ClusterOwner *ret)
{
    pthread_mutex_lock(&af->lock);
    CacheSlot *s = &af->cache[slot_of(id)];
    bool hit = s->expires_usec > now_usec() && strcmp(s->id, id) == 0;
    if (hit)
        *ret = s->owner;
    pthread_mutex_unlock(&af->lock);
    return hit;
}

static void
cache_put(ApiForward *af, const char *id, const ClusterOwner *o)
{
    pthread_mutex_lock(&af->lock);
    CacheSlot *s = &af->cache[slot_of(id)];
    snprintf(s->id, sizeof(s->id), "%s", id);
    s->owner = *o;
    s->expires_usec = now_usec() + FWD_CACHE_TTL_USEC;
    pthread_mutex_unlock(&af->lock);
}

int
api_forward_new(ApiForward **ret, Error **errp)
{
    ApiForward *af = calloc(1, sizeof(*af));
    if (!af)
        return error_set(errp, E_INTERNAL, ENOMEM, "forward");
    /* Once, while the daemon starts (curl_global_init is not safe against other threads). */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(af);
        return error_set(errp, E_INTERNAL, 0, "curl_global_init");
    }
    pthread_mutex_init(&af->lock, NULL);
    *ret = af;
    return 0;
}

void
api_forward_stop(ApiForward *af)
{
    if (!af)
        return;
    uint64_t until = now_usec() + FWD_STOP_WAIT_USEC;
    pthread_mutex_lock(&af->lock);
    atomic_store(&af->stopping, true); /* no new transfer; running ones see it within ~1 s */
    while (af->live > 0 && now_usec() < until) {
        pthread_mutex_unlock(&af->lock);
        usleep(10000);
        pthread_mutex_lock(&af->lock);
    }
    pthread_mutex_unlock(&af->lock);
}

void
api_forward_free(ApiForward *af)
{
    if (!af)
        return;
    pthread_mutex_lock(&af->lock);
    unsigned left = af->live;
    pthread_mutex_unlock(&af->lock);
    if (left > 0) /* a transfer still ends and touches af: leave it (only at a stuck stop) */
        return;
    api_forward_handles_free(af);
    pthread_mutex_destroy(&af->lock);
    free(af);
}

/* ------------------------------------------------------------------ deciding */

typedef struct {
    Api *api;
    char id[64];
    char tenant[64];
    bool admin;
} Lookup;

static void
respond_no_session(HttpRequest *req, const char *id)
{
    Error e = {.category = E_NOT_FOUND};
    snprintf(e.message, sizeof(e.message), "no session %s", id); /* as api_load_session() */
    http_respond_error(req, &e, NULL);
}

/* With the owner known: 404 for another tenant's session (never 403: a tenant must not
 * learn it exists), for one the index gives this host (lost here: no second hop), else on
 * to the owner. */
static void
fwd_route(Api *a, HttpRequest *req, const Lookup *l, const ClusterOwner *o)
{
    if ((strcmp(o->tenant_id, l->tenant) != 0 && !l->admin) ||
        strcmp(o->host_id, cluster_host_id(a->d.cluster)) == 0)
        respond_no_session(req, l->id);
    else
        api_forward_hop_start(a, req, o, l->tenant, l->admin);
}

static void
lookup_on_loop(HttpLoopCall *call, void *userdata)
{
    Lookup *l = userdata;
    _cleanup_error_ Error *err = NULL;
    ClusterOwner o;
    HttpRequest *req = http_loop_claim(call);

    if (!req) {
        http_loop_release(call);
        return;
    }
    if (cluster_session_owner(l->api->d.cluster, l->id, &o, &err) == 0) {
        cache_put(l->api->fwd, l->id, &o);
        fwd_route(l->api, req, l, &o);
    } else if (err->category == E_NOT_FOUND) {
        respond_no_session(req, l->id);
    } else {
        log_warn("forward: owner of %s: %s", l->id, err->message);
        http_respond_error(req, err, NULL); /* E_UNAVAILABLE: 503, as elsewhere in a cluster */
    }
    http_loop_release(call);
}

static bool
session_is_local(Api *a, const char *id)
{
    SessionRecord rec;
    Store *s = store_reader_acquire(a->d.readers);
    int r = store_session_get(s, id, &rec, NULL);
    store_reader_release(a->d.readers, s);
    if (r == 0)
        session_record_clear(&rec);
    return r == 0; /* a store error: answered here, by the route, as before */
}

bool
api_forward_take(ApiCtx *c)
{
    Api *a = c->api;
    if (!a->d.cluster || c->forwarded || !api_forward_is_session_path(c->seg, c->n_seg) ||
        !sessions_id_is_valid(c->seg[2]) || session_is_local(a, c->seg[2]))
        return false; /* the local route answers (404 for an unknown id) */
    Lookup *l = calloc(1, sizeof(*l));
    if (!l)
        return false;
    *l = (Lookup){.api = a, .admin = c->admin};
    snprintf(l->id, sizeof(l->id), "%s", c->seg[2]);
    snprintf(l->tenant, sizeof(l->tenant), "%s", c->tenant);
    HttpRequest *req = c->req;
    api_ctx_done(c);
    ClusterOwner o;
    if (cache_get(a->fwd, l->id, &o)) {
        fwd_route(a, req, l, &o);
        free(l);
        return true;
    }
    http_loop_post(req, &(HttpLoopSpec){.loop = a->d.loop,
                                        .fn = lookup_on_loop,
                                        .ctx = l,
                                        .free_ctx = free,
                                        .timeout_usec = FWD_LOOKUP_TIMEOUT_USEC,
                                        .timeout_message = "the session's owner lookup timed out",
                                        .stop_answers = true});
    return true;
}

/* ------------------------------------------------------------------ placing a create */

bool
api_forward_place(ApiCtx *c, const char *pool)
{
    _cleanup_error_ Error *err = NULL;
    Api *a = c->api;
    PoolStatus st;
    ClusterOwner o;

    if (!a->d.cluster || c->forwarded)
        return false; /* a create placed here by another host stays here (one hop) */
    a->d.pool_status(a->d.pool_userdata, &st);
    const PoolShapeStatus *here = pool_status_shape(&st, pool);
    bool have = here != NULL;
    if (have && here->idle > 0)
        return false; /* prefer this host */
    int r = cluster_place(a->d.cluster, pool, true, &o, &err);
    if (r == 0 && !have) /* no idle guest anywhere: a host that has the pool queues it */
        r = cluster_place(a->d.cluster, pool, false, &o, &err);
    if (r < 0) /* the database away: the local admission answers (503) */
        log_warn("forward: placing a create of pool %s: %s", pool, err->message);
    if (r <= 0)
        return false; /* here: queued for this host's next guest, or its "no such pool" */
    char tenant[sizeof(c->tenant)];
    bool admin = c->admin;
    snprintf(tenant, sizeof(tenant), "%s", c->tenant);
    HttpRequest *req = c->req;
    api_ctx_done(c);
    atomic_fetch_add(&a->fwd->placed, 1);
    api_forward_hop_start(a, req, &o, tenant, admin);
    return true;
}

static bool
hop_credential_ok(void *userdata, const char *presented)
{
    return cluster_hop_credential_ok(userdata, presented);
}

int
api_forward_identify(ApiCtx *c, Error **errp)
{
    char tenant[API_FORWARD_TENANT_MAX_BYTES + 1];
    bool admin = false;

    if (!c->api->d.cluster) /* without [cluster] nothing changes: the headers mean nothing */
        return 0;
    int r = api_forward_identity(hop_credential_ok, c->api->d.cluster,
                                 http_header(c->req, API_FORWARD_HOST_HEADER),
                                 http_header(c->req, API_FORWARD_TENANT_HEADER),
                                 http_header(c->req, API_FORWARD_ADMIN_HEADER), tenant, &admin);
    if (r == 1)
        return 0;
    /* Only a request another host would forward: the credential opens nothing else. */
    if (r < 0 || !(api_forward_is_session_path(c->seg, c->n_seg) ||
                   api_forward_is_create(http_method(c->req), c->seg, c->n_seg)))
        return error_set(errp, E_UNAUTHORIZED, 0,
                         "forwarding headers without a valid host credential");
    snprintf(c->tenant, sizeof(c->tenant), "%s", tenant);
    c->admin = admin;
    c->forwarded = true;
    return 1;
}

void
api_forward_metrics(ApiForward *af, FILE *f)
{
    if (!af)
        return;
    pthread_mutex_lock(&af->lock);
    unsigned live = af->live;
    pthread_mutex_unlock(&af->lock);
    fprintf(f,
            "# HELP stockade_forward_live Requests being forwarded to the session's host now.\n"
            "# TYPE stockade_forward_live gauge\nstockade_forward_live %u\n"
            "# HELP stockade_forward_total Requests forwarded to the session's host.\n"
            "# TYPE stockade_forward_total counter\nstockade_forward_total %llu\n"
            "# HELP stockade_forward_unreachable_total Forwarded requests answered 502.\n"
            "# TYPE stockade_forward_unreachable_total counter\n"
            "stockade_forward_unreachable_total %llu\n"
            "# HELP stockade_forward_placed_total Creates placed on another host (no idle "
            "guest of the pool here).\n"
            "# TYPE stockade_forward_placed_total counter\nstockade_forward_placed_total %llu\n",
            live, (unsigned long long) atomic_load(&af->forwarded),
            (unsigned long long) atomic_load(&af->unreachable),
            (unsigned long long) atomic_load(&af->placed));
}
