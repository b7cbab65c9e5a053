/* Operator routes under /v1/admin: tenants, quotas, usage and tokens (issue 5), and the
 * removal of a tenant (issue 30). The route
 * table lets only operators here (the unix socket or an operator token). Changes run on the
 * loop thread against the writer and commit before the answer; reads use store readers.
 * A new token's text is in exactly one response and nowhere else.
 *
 * Cluster mode (issue 16): tenants and tokens are the cluster's. A create, an issue or a
 * revoke is written to PostgreSQL first (one transaction) and then to this host's copy;
 * when the database is away it answers 503 and writes nothing. The other hosts' copies
 * follow within one sync period (the daemon's pull, hostd/cluster/README.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api_internal.h"
#include "render.h"
#include "timeutil.h"

/* Answers a failed change. The writer's transaction stays open after a failed statement (only
 * the statement was undone): commit it now, as it holds SQLite's write lock until then. */
static void
admin_fail(ApiCtx *c, Error *err)
{
    (void) store_commit(c->api->d.store, NULL);
    api_reply_error(c, err);
}

/* Answers a change the cluster's database refused or could not take (E_UNAVAILABLE: 503),
 * saying that nothing was written. */
static void
admin_cluster_fail(ApiCtx *c, Error *err, const char *what)
{
    if (err->category == E_UNAVAILABLE)
        error_prefix(&err, "%s: nothing changed on any host", what);
    admin_fail(c, err);
}

/* A new token into this host's store, in one commit with what the writer's transaction
 * holds (a new tenant's rows). */
static int
token_store(Store *st, const TokenRecord *t, Error **errp)
{
    if (store_begin(st, errp) < 0 || store_token_insert(st, t, errp) < 0)
        return -1;
    return store_commit(st, errp);
}

/* A tenant id from path segment 3, checked; answers 404 itself and returns NULL if bad. */
static const char *
admin_tenant_id(ApiCtx *c)
{
    const char *id = c->seg[3];
    if (strcmp(id, API_TENANT_DEFAULT) != 0 && !admit_id_is_valid(API_TENANT_ID_PREFIX, id)) {
        api_reply_errorf(c, E_NOT_FOUND, "no such tenant");
        return NULL;
    }
    return id;
}

static void
set_time(json_t *o, const char *key, int64_t usec)
{
    char ts[40];
    if (usec <= 0) {
        json_object_set_new(o, key, json_null());
        return;
    }
    render_time(usec, ts, sizeof(ts));
    json_object_set_new(o, key, json_string(ts));
}

static json_t *
quota_json(const AdmitQuota *q)
{
    json_t *o = json_object();
    for (size_t i = 0; i < admit_quota_n_keys; i++)
        json_object_set_new(o, admit_quota_keys[i].name,
                            json_integer((json_int_t) admit_quota_get(q, &admit_quota_keys[i])));
    return o;
}

static json_t *
token_json(const TokenRecord *t, const char *secret /* NULL: never shown again */)
{
    json_t *o = json_pack("{s:s,s:s,s:b}", "id", t->id, "tenant", t->tenant_id, "admin", t->admin);
    set_time(o, "created_at", t->created_usec);
    if (secret)
        json_object_set_new(o, "token", json_string(secret));
    else
        set_time(o, "revoked_at", t->revoked_usec);
    return o;
}

/* ------------------------------------------------------------------ tenants */

/* A yes/no query parameter: absent, "0" or "false" no; "1" or "true" yes; else -1. */
static int
query_flag(ApiCtx *c, const char *key)
{
    const char *v = http_query(c->req, key);
    if (!v || strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
        return 0;
    return strcmp(v, "1") == 0 || strcmp(v, "true") == 0 ? 1 : -1;
}

void
route_admin_tenants_list(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_free_ TenantRecord *v = NULL;
    size_t n = 0;
    int removed = query_flag(c, "removed");
    if (removed < 0) {
        api_reply_errorf(c, E_INVALID, "removed must be 1 or 0");
        return;
    }
    Store *s = store_reader_acquire(c->api->d.readers);
    int r = store_tenant_list(s, removed, &v, &n, &err);
    store_reader_release(c->api->d.readers, s);
    if (r < 0) {
        api_reply_error(c, err);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack("{s:s,s:s}", "id", v[i].id, "name", v[i].name);
        set_time(o, "created_at", v[i].created_usec);
        if (removed)
            set_time(o, "removed_at", v[i].removed_usec);
        json_array_append_new(arr, o);
    }
    api_reply_json(c, 200, json_pack("{s:o}", "tenants", arr));
}

/* The tenant's id and first token, made here and stored nowhere yet. */
static int
tenant_mint(ApiCtx *c, TenantRecord *t, char token[ADMIT_TOKEN_TEXT_BYTES], TokenRecord *tok,
            Error **errp)
{
    uint8_t idr[ADMIT_ID_RANDOM_CHARS];
    *t = (TenantRecord){.created_usec = (int64_t) wall_usec()};
    snprintf(t->name, sizeof(t->name), "%s", json_string_value(json_object_get(c->body, "name")));
    if (getrandom(idr, sizeof(idr), 0) != (ssize_t) sizeof(idr))
        return error_set(errp, E_INTERNAL, errno, "getrandom failed");
    admit_id_format(API_TENANT_ID_PREFIX, idr, t->id);
    return api_token_mint(t->id, false, token, tok, errp);
}

static void
tenant_create_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    char token[ADMIT_TOKEN_TEXT_BYTES];
    TenantRecord t;
    TokenRecord tok;
    Store *st = c->api->d.store;
    Cluster *cl = c->api->d.cluster;

    if (tenant_mint(c, &t, token, &tok, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    if (cl && cluster_tenant_create(cl, &t, c->api->d.default_quota, &tok, &err) < 0) {
        explicit_bzero(token, sizeof(token));
        if (err->category == E_CONFLICT)
            snprintf(err->message, sizeof(err->message), "a tenant with that name exists");
        admin_cluster_fail(c, err, "tenant not created");
        return;
    }
    /* The quota row freezes today's defaults for this tenant. One commit (the token's) makes
     * the tenant, its quota and its first token durable together. */
    if (store_begin(st, &err) < 0 ||
        store_tenant_insert(st, &t, c->api->d.default_quota, &err) < 0 ||
        token_store(st, &tok, &err) < 0) {
        explicit_bzero(token, sizeof(token));
        if (err->category == E_CONFLICT)
            snprintf(err->message, sizeof(err->message), "a tenant with that name exists");
        admin_fail(c, err);
        return;
    }
    json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "id", t.id, "name", t.name, "token", token,
                          "token_id", tok.id);
    explicit_bzero(token, sizeof(token));
    set_time(o, "created_at", t.created_usec);
    api_reply_json(c, 201, o);
}

void
route_admin_tenant_create(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    json_t *name;

    if (api_parse_body(c, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    name = json_object_get(c->body, "name");
    if (!json_is_string(name) ||
        !store_tenant_name_is_valid(json_string_value(name), json_string_length(name))) {
        api_reply_errorf(c, E_INVALID, "name must be 1..%d bytes of text",
                         STORE_TENANT_NAME_MAX_BYTES);
        return;
    }
    api_on_loop(c, tenant_create_on_loop);
}

/* E_NOT_FOUND for no such tenant, E_CONFLICT for a removed one: nothing new for it. */
static int
tenant_live(Store *st, const char *id, Error **errp)
{
    TenantRecord t;
    if (store_tenant_get(st, id, &t, errp) < 0)
        return -1;
    return t.removed_usec ? error_set(errp, E_CONFLICT, 0, "tenant %s was removed", t.id) : 0;
}

/* ------------------------------------------------------------------ removal */

/* What a removal did (or, not removed, why not). */
typedef struct {
    TenantRecord tenant;
    bool removed;
    uint64_t open_sessions;
    size_t tokens_revoked;
} TenantRemoval;

/* This host's store: the tenant marked removed at when, its tokens revoked. In a cluster the
 * tenant may not be in this host's copy yet: the pull brings it, removed. */
static int
removal_store(ApiCtx *c, TenantRemoval *x, int64_t when, bool in_cluster, Error **errp)
{
    _cleanup_error_ Error *err = NULL;
    Store *st = c->api->d.store;
    size_t revoked = 0;
    if (store_savepoint(st, &err) < 0 ||
        store_tenant_remove(st, x->tenant.id, when, &revoked, &err) < 0 ||
        store_savepoint_release(st, &err) < 0 || store_commit(st, &err) < 0) {
        store_savepoint_rollback(st); /* the tenant and its tokens together, or neither */
        (void) store_commit(st, NULL);
        if (in_cluster && err->category == E_NOT_FOUND)
            return 0;
        return error_set(errp, err->category, 0, "%s", err->message);
    }
    if (!in_cluster)
        x->tokens_revoked = revoked;
    x->tenant.removed_usec = x->tenant.removed_usec ? x->tenant.removed_usec : when;
    return 0;
}

/* A tenant only this host knows (single host; or made here before it joined a cluster, so
 * the cluster's ledger never admitted it): the store's ledger counts its open sessions. */
static int
removal_local(ApiCtx *c, const char *id, bool cancel, bool in_cluster, TenantRemoval *x,
              Error **errp)
{
    AdmitUsage u = {0};
    Store *st = c->api->d.store;
    if (store_tenant_get(st, id, &x->tenant, errp) < 0 ||
        (!in_cluster && store_usage_get(st, id, &u, errp) < 0))
        return -1;
    x->open_sessions = u.open_sessions;
    if (x->tenant.removed_usec == 0 && x->open_sessions > 0 && !cancel)
        return 0;
    x->removed = true;
    return removal_store(c, x, (int64_t) wall_usec(), false, errp);
}

/* Cluster mode: the cluster decides (its ledger counts the sessions of every host) and
 * removes first; then this host's copy. E_NOT_FOUND from the cluster: a local tenant. */
static int
removal_cluster(ApiCtx *c, const char *id, bool cancel, TenantRemoval *x, Error **errp)
{
    _cleanup_error_ Error *err = NULL;
    ClusterTenantRemoval cx;
    if (cluster_tenant_remove(c->api->d.cluster, id, (int64_t) wall_usec(), cancel, &cx, &err) <
        0) {
        if (err->category == E_NOT_FOUND)
            return removal_local(c, id, cancel, true, x, errp);
        if (err->category == E_UNAVAILABLE)
            error_prefix(&err, "tenant not removed: nothing changed on any host");
        return error_set(errp, err->category, 0, "%s", err->message);
    }
    *x = (TenantRemoval){.tenant = cx.tenant,
                         .removed = cx.removed,
                         .open_sessions = cx.open_sessions,
                         .tokens_revoked = cx.tokens_revoked};
    return cx.removed ? removal_store(c, x, cx.tenant.removed_usec, true, errp) : 0;
}

static void
tenant_remove_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    const char *id = c->seg[3];
    bool cancel = c->extra != NULL;
    TenantRemoval x = {0};
    int r = c->api->d.cluster ? removal_cluster(c, id, cancel, &x, &err)
                              : removal_local(c, id, cancel, false, &x, &err);
    if (r < 0) {
        api_reply_error(c, err);
        return;
    }
    if (!x.removed) {
        error_set(&err, E_CONFLICT, 0,
                  "tenant %s has %llu session(s) not ended yet%s: end them first, or remove it "
                  "with ?cancel=1 to cancel them (stockade tenants rm --cancel-sessions)",
                  x.tenant.name, (unsigned long long) x.open_sessions,
                  c->api->d.cluster ? " (on all hosts)" : "");
        api_reply_error_extra(c, err,
                              json_pack("{s:I}", "open_sessions", (json_int_t) x.open_sessions));
        return;
    }
    /* Its sessions here end now; in a cluster the other hosts end theirs when their pull
     * brings the removal (hostd/daemon.c). Nothing of a removed tenant is admitted again. */
    size_t ended =
        cancel ? sessions_end_tenant(c->api->d.sessions, id, SESSION_END_TENANT_REMOVED) : 0;
    json_t *o = json_pack("{s:s,s:s}", "id", x.tenant.id, "name", x.tenant.name);
    set_time(o, "created_at", x.tenant.created_usec);
    set_time(o, "removed_at", x.tenant.removed_usec);
    json_object_set_new(o, "tokens_revoked", json_integer((json_int_t) x.tokens_revoked));
    json_object_set_new(o, "sessions_cancelled", json_integer((json_int_t) ended));
    api_reply_json(c, 200, o);
}

void
route_admin_tenant_remove(ApiCtx *c)
{
    int cancel = query_flag(c, "cancel");
    if (!admin_tenant_id(c))
        return;
    if (strcmp(c->seg[3], API_TENANT_DEFAULT) == 0) {
        api_reply_errorf(c, E_CONFLICT, "the built-in tenant 'default' cannot be removed");
        return;
    }
    if (cancel < 0) {
        api_reply_errorf(c, E_INVALID, "cancel must be 1 or 0");
        return;
    }
    c->extra = cancel ? (void *) 1 : NULL;
    api_on_loop(c, tenant_remove_on_loop);
}

/* ------------------------------------------------------------------ quota */

/* Cluster mode: the cluster's quota row is the tenant's quota on every host, so a change
 * starts from it (when there is one) and is written there first; this host's store keeps a
 * copy, its fallback for a tenant the cluster has no row for. */
static int
quota_cluster_base(ApiCtx *c, const char *id, AdmitQuota *q, Error **errp)
{
    _cleanup_error_ Error *err = NULL;
    if (!c->api->d.cluster || cluster_quota_get(c->api->d.cluster, id, q, &err) == 0)
        return 0;
    if (err->category == E_NOT_FOUND)
        return 0;
    return error_set(errp, err->category, 0, "%s", err->message);
}

static void
quota_put_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    Store *st = c->api->d.store;
    const char *id = c->seg[3];
    AdmitQuota q;

    if (tenant_live(st, id, &err) < 0 ||
        store_quota_get(st, id, c->api->d.default_quota, &q, &err) < 0 ||
        quota_cluster_base(c, id, &q, &err) < 0 || api_json_quota(c->body, &q, &err) < 0 ||
        (c->api->d.cluster &&
         cluster_quota_put(c->api->d.cluster, id, &q, (int64_t) wall_usec(), &err) < 0) ||
        store_begin(st, &err) < 0 || store_quota_put(st, id, &q, &err) < 0 ||
        store_commit(st, &err) < 0) {
        admin_fail(c, err);
        return;
    }
    json_t *o = quota_json(&q);
    json_object_set_new(o, "tenant", json_string(id));
    api_reply_json(c, 200, o);
}

void
route_admin_quota_put(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    if (!admin_tenant_id(c))
        return;
    if (api_parse_body(c, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    api_on_loop(c, quota_put_on_loop);
}

typedef struct {
    TenantRecord tenant;
    AdmitQuota quota;
    AdmitUsage usage;
    uint64_t counts[3]; /* reservations by ReservationState */
} TenantUsage;

/* A tenant's quota (and usage) through one reader. */
static int
usage_load(ApiCtx *c, const char *id, bool with_usage, TenantUsage *ret, Error **errp)
{
    Store *s = store_reader_acquire(c->api->d.readers);
    int r = 0;
    if (store_tenant_get(s, id, &ret->tenant, errp) < 0 ||
        store_quota_get(s, id, c->api->d.default_quota, &ret->quota, errp) < 0)
        r = -1;
    else if (with_usage && (store_usage_get(s, id, &ret->usage, errp) < 0 ||
                            store_reservation_counts(s, id, ret->counts, errp) < 0))
        r = -1;
    store_reader_release(c->api->d.readers, s);
    return r;
}

static json_t *
usage_render(const TenantUsage *tu, int64_t now_usec)
{
    const AdmitQuota *q = &tu->quota;
    const AdmitUsage *u = &tu->usage;
    uint64_t used = admit_wallet_used(u);
    uint64_t level = admit_bucket_level(&u->bucket, q->sessions_per_minute, now_usec);
    json_t *o = json_pack("{s:s,s:s,s:o}", "tenant", tu->tenant.id, "name", tu->tenant.name,
                          "quota", quota_json(q));
    if (tu->tenant.removed_usec) /* its ledger stays readable: accounting */
        set_time(o, "removed_at", tu->tenant.removed_usec);
    json_object_set_new(o, "sessions",
                        json_pack("{s:I,s:I}", "open", (json_int_t) u->open_sessions, "limit",
                                  (json_int_t) q->max_sessions));
    json_object_set_new(
        o, "wallet_guest_seconds",
        json_pack(
            "{s:I,s:I,s:I,s:I}", "limit", (json_int_t) q->wallet_guest_seconds, "charged",
            (json_int_t) u->charged_guest_s, "reserved", (json_int_t) u->reserved_guest_s,
            "available",
            (json_int_t) (used >= q->wallet_guest_seconds ? 0 : q->wallet_guest_seconds - used)));
    json_object_set_new(o, "sessions_per_minute",
                        json_pack("{s:I,s:I}", "limit", (json_int_t) q->sessions_per_minute,
                                  "available", (json_int_t) (level / ADMIT_BUCKET_MILLI)));
    json_object_set_new(o, "reservations",
                        json_pack("{s:I,s:I,s:I}", "open",
                                  (json_int_t) tu->counts[RESERVATION_OPEN], "charged",
                                  (json_int_t) tu->counts[RESERVATION_CHARGED], "released",
                                  (json_int_t) tu->counts[RESERVATION_RELEASED]));
    return o;
}

/* Answers a tenant's quota, or with usage its usage report. */
static void
usage_reply(ApiCtx *c, bool with_usage)
{
    _cleanup_error_ Error *err = NULL;
    TenantUsage tu;
    const char *id = admin_tenant_id(c);

    if (!id)
        return;
    if (usage_load(c, id, with_usage, &tu, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    api_reply_json(c, 200,
                   with_usage ? usage_render(&tu, (int64_t) wall_usec())
                              : json_pack("{s:s,s:o}", "tenant", tu.tenant.id, "quota",
                                          quota_json(&tu.quota)));
}

void
route_admin_quota_get(ApiCtx *c)
{
    usage_reply(c, false);
}

void
route_admin_usage(ApiCtx *c)
{
    usage_reply(c, true);
}

/* ------------------------------------------------------------------ tokens */

void
route_admin_tokens_list(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_free_ TokenRecord *v = NULL;
    TenantRecord t;
    size_t n = 0;
    const char *id = admin_tenant_id(c);

    if (!id)
        return;
    Store *s = store_reader_acquire(c->api->d.readers);
    int r =
        store_tenant_get(s, id, &t, &err) < 0 || store_token_list(s, id, &v, &n, &err) < 0 ? -1 : 0;
    store_reader_release(c->api->d.readers, s);
    if (r < 0) {
        api_reply_error(c, err);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, token_json(&v[i], NULL));
    api_reply_json(c, 200, json_pack("{s:o}", "tokens", arr));
}

static void
token_create_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    char token[ADMIT_TOKEN_TEXT_BYTES];
    TokenRecord t;
    TenantRecord tenant;
    bool admin = c->extra != NULL;
    const char *id = admin ? API_TENANT_DEFAULT : c->seg[3];
    Cluster *cl = c->api->d.cluster;

    if (tenant_live(c->api->d.store, id, &err) < 0 ||
        store_tenant_get(c->api->d.store, id, &tenant, &err) < 0 ||
        api_token_mint(id, admin, token, &t, &err) < 0) {
        admin_fail(c, err);
        return;
    }
    if (cl && cluster_token_insert(cl, &tenant, &t, &err) < 0) {
        explicit_bzero(token, sizeof(token));
        admin_cluster_fail(c, err, "token not issued");
        return;
    }
    if (token_store(c->api->d.store, &t, &err) < 0) { /* the pull copies it here later */
        explicit_bzero(token, sizeof(token));
        admin_fail(c, err);
        return;
    }
    json_t *o = token_json(&t, token);
    explicit_bzero(token, sizeof(token));
    api_reply_json(c, 201, o);
}

void
route_admin_token_create(ApiCtx *c)
{
    if (admin_tenant_id(c))
        api_on_loop(c, token_create_on_loop);
}

void
route_admin_admin_token_create(ApiCtx *c)
{
    c->extra = (void *) 1; /* an operator token */
    api_on_loop(c, token_create_on_loop);
}

/* Cluster mode: the revocation in the cluster first. *ret_found false: the cluster has no
 * such token (this host made it before it joined a cluster; it exists here only). */
static int
token_revoke_cluster(ApiCtx *c, int64_t now_usec, TokenRecord *ret, bool *ret_found, Error **errp)
{
    _cleanup_error_ Error *err = NULL;
    *ret_found = false;
    if (!c->api->d.cluster)
        return 0;
    if (cluster_token_revoke(c->api->d.cluster, c->seg[3], now_usec, ret, &err) == 0) {
        *ret_found = true;
        return 0;
    }
    if (err->category == E_NOT_FOUND)
        return 0;
    return error_set(errp, err->category, 0, "%s", err->message);
}

static void
token_revoke_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    Store *st = c->api->d.store;
    TokenRecord t;
    bool in_cluster;
    int64_t when = (int64_t) wall_usec();

    if (token_revoke_cluster(c, when, &t, &in_cluster, &err) < 0) {
        admin_cluster_fail(c, err, "token not revoked");
        return;
    }
    if (in_cluster)
        when = t.revoked_usec; /* the first revocation's time, on every host */
    if (store_begin(st, &err) < 0 || store_token_revoke(st, c->seg[3], when, &err) < 0 ||
        store_commit(st, &err) < 0 || store_token_get(st, c->seg[3], &t, &err) < 0) {
        /* Revoked in the cluster but not yet copied here: the pull brings it revoked. */
        if (!(in_cluster && err->category == E_NOT_FOUND)) {
            admin_fail(c, err);
            return;
        }
        (void) store_commit(st, NULL);
    }
    api_reply_json(c, 200, token_json(&t, NULL));
}

void
route_admin_token_revoke(ApiCtx *c)
{
    if (!admit_id_is_valid(API_TOKEN_ID_PREFIX, c->seg[3])) {
        api_reply_errorf(c, E_NOT_FOUND, "no such token");
        return;
    }
    api_on_loop(c, token_revoke_on_loop);
}
