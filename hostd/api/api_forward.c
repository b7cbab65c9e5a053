/* Forwarding a request for a session another host owns (issue 16): when, to whom, and the
 * owner's acceptance of a forwarded identity. See api_forward.h for the trust rules,
 * api_forward_owner.c for the owner lookup, api_forward_hop.c for the transfer, api_hop.c for
 * the listener hops arrive on, hostd/api/README.md ("Forwarding") for the picture.
 *
 * Where: api_handle() asks api_forward_take() once the request (head and body, within the
 * local limits) is in and its caller authenticated. Only a request naming one session that
 * is not this caller's in this host's store, in cluster mode, not itself a hop, is taken.
 * The owner lookup runs right there, on the connection thread, on the lookup connection
 * (never the loop's: api_forward_owner.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_forward_internal.h"
#include "log.h"
#include "timeutil.h"

#define FWD_STOP_WAIT_USEC (3 * USEC_PER_SEC) /* api_stop() waits for transfers this long */

int
api_forward_new(Cluster *dir, ApiForward **ret, Error **errp)
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
    api_forward_owner_init(af, dir);
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
    api_forward_owner_free(af);
    pthread_mutex_destroy(&af->lock);
    free(af);
}

/* ------------------------------------------------------------------ deciding */

static void
respond_no_session(HttpRequest *req, const char *id)
{
    Error e = {.category = E_NOT_FOUND};
    snprintf(e.message, sizeof(e.message), "no session %s", id); /* as api_load_session() */
    http_respond_error(req, &e, NULL);
}

/* Whether this host's store holds the session as this caller may see it (its tenant's, or
 * any for an operator). Another tenant's session here is looked up in the index like a
 * missing one (and answered 404 the same way, at the same cost). */
static bool
session_is_callers(ApiCtx *c, const char *id)
{
    SessionRecord rec;
    Store *s = store_reader_acquire(c->api->d.readers);
    int r = store_session_get(s, id, &rec, NULL);
    store_reader_release(c->api->d.readers, s);
    if (r < 0)
        return false;
    bool mine = c->admin || strcmp(rec.tenant_id, c->tenant) == 0;
    session_record_clear(&rec);
    return mine;
}

/* The native face's hop: req carried to o's host with the caller's identity. */
static void
hop_to_owner(Api *a, HttpRequest *req, const ClusterOwner *o, const char *tenant, bool admin)
{
    api_forward_hop_start(a, req,
                          &(HopSpec){.host_id = o->host_id,
                                     .base_url = o->url,
                                     .face = API_HOP_FACE_API,
                                     .tenant = tenant,
                                     .admin = admin});
}

bool
api_forward_take(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    Api *a = c->api;
    ClusterOwner o;

    if (!a->d.cluster || c->forwarded || !api_forward_is_session_path(c->seg, c->n_seg) ||
        !sessions_id_is_valid(c->seg[2]) || session_is_callers(c, c->seg[2]))
        return false; /* the local route answers (404 for an unknown id) */
    char id[64], tenant[sizeof(c->tenant)];
    bool admin = c->admin;
    snprintf(id, sizeof(id), "%s", c->seg[2]);
    snprintf(tenant, sizeof(tenant), "%s", c->tenant);
    HttpRequest *req = c->req;
    api_ctx_done(c);
    if (api_forward_owner(a->fwd, admin ? FWD_SCOPE_OPERATOR : tenant, id, &o, &err) < 0) {
        if (err->category == E_NOT_FOUND) {
            respond_no_session(req, id);
            return true;
        }
        if (err->category == E_UNAVAILABLE)
            log_warn("forward: owner of %s: %s", id, err->message);
        http_respond_error(req, err, NULL); /* 503 as elsewhere in a cluster; 429 */
        return true;
    }
    /* 404 for another tenant's session (never 403: a tenant must not learn it exists), for
     * one the index gives this host (not here for this caller: no second hop). */
    if ((strcmp(o.tenant_id, tenant) != 0 && !admin) ||
        strcmp(o.host_id, cluster_host_id(a->d.cluster)) == 0)
        respond_no_session(req, id);
    else
        hop_to_owner(a, req, &o, tenant, admin);
    return true;
}

int
api_session_owner(Api *a, const char *scope, const char *session_id, ClusterOwner *ret,
                  Error **errp)
{
    if (!a || !a->fwd)
        return error_set(errp, E_UNAVAILABLE, 0, "not a cluster");
    return api_forward_owner(a->fwd, scope, session_id, ret, errp);
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
    /* A draining host (stockade drain) takes no new session: another host does, as if this
     * one lacked the pool; none: this host's own answer (503, draining). */
    bool have = here != NULL && !sessions_draining(a->d.sessions);
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
    hop_to_owner(a, req, &o, tenant, admin);
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
    bool hop = http_request_from_peer(c->req);
    int r = api_forward_identity(hop_credential_ok, c->api->d.cluster, hop,
                                 http_header(c->req, API_FORWARD_HOST_HEADER),
                                 http_header(c->req, API_FORWARD_TENANT_HEADER),
                                 http_header(c->req, API_FORWARD_ADMIN_HEADER), tenant, &admin);
    if (r == 1)
        return 0;
    if (r < 0 && !hop)
        return error_set(errp, E_UNAUTHORIZED, 0,
                         "forwarding headers are taken only on the host-to-host listener");
    /* Only a request another host would forward: the credential opens nothing else. */
    if (r < 0 || !(api_forward_is_session_path(c->seg, c->n_seg) ||
                   api_forward_is_create(http_method(c->req), c->seg, c->n_seg)))
        return error_set(errp, E_UNAUTHORIZED, 0,
                         "a hop needs the host credential, an identity and a session path");
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
            "# TYPE stockade_forward_placed_total counter\nstockade_forward_placed_total %llu\n"
            "# HELP stockade_forward_lookups_total Owner lookups in the cluster's session "
            "index (the cache had no answer).\n"
            "# TYPE stockade_forward_lookups_total counter\nstockade_forward_lookups_total %llu\n"
            "# HELP stockade_forward_lookup_hits_total Owner lookups the cache answered (found "
            "or not).\n"
            "# TYPE stockade_forward_lookup_hits_total counter\n"
            "stockade_forward_lookup_hits_total %llu\n"
            "# HELP stockade_forward_refused_total Requests refused 429 here: their tenant held "
            "its share of hops or of owner lookups.\n"
            "# TYPE stockade_forward_refused_total counter\n"
            "stockade_forward_refused_total{what=\"hops\"} %llu\n"
            "stockade_forward_refused_total{what=\"lookups\"} %llu\n",
            live, (unsigned long long) atomic_load(&af->forwarded),
            (unsigned long long) atomic_load(&af->unreachable),
            (unsigned long long) atomic_load(&af->placed),
            (unsigned long long) atomic_load(&af->index_lookups),
            (unsigned long long) atomic_load(&af->lookup_hits),
            (unsigned long long) atomic_load(&af->refused_hops),
            (unsigned long long) atomic_load(&af->refused_lookups));
}
