/* Internal to hostd/api's routes. */
#pragma once

#include <jansson.h>
#include <stdio.h>

#include "api.h"
#include "api_json.h"

#define API_LIST_MAX 500 /* sessions per list page */
#define API_FILE_GET_MAX_BYTES (64u << 20)
#define API_TENANT_ID_PREFIX ADMIT_TENANT_ID_PREFIX
#define API_TOKEN_ID_PREFIX ADMIT_TOKEN_ID_PREFIX
#define API_HEARTBEAT_USEC (15ull * 1000000) /* a quiet event stream sends a heartbeat line */

typedef struct ApiForward ApiForward;
typedef struct ApiDrainWait ApiDrainWait;

struct Api {
    ApiDeps d;
    HttpServer *http;
    ApiForward *fwd; /* [cluster]: requests for other hosts' sessions (api_forward.c) */
    HttpServer *hop; /* [cluster]: the host-to-host listener (api_hop.c) */
    ApiHopFaceSpec hop_faces[API_HOP_FACES];
    ApiDrainWait *drain_waits; /* routes_drain.c: answers waiting for sessions to end (loop) */
};

struct Route;

/* One request on its way through a route. */
typedef struct ApiCtx {
    Api *api;
    HttpRequest *req;
    char **seg; /* decoded path segments */
    size_t n_seg;
    char tenant[64]; /* who the request is for: the token's tenant, or the operator's choice */
    bool admin;      /* unix-socket peer, or an operator token */
    bool acting;     /* an operator named the tenant (X-Stockade-Tenant): scope lists to it */
    bool forwarded;  /* came from another host of the cluster: never forwarded again */
    json_t *body;    /* parsed JSON body, when the route wants one */
    void *extra;     /* route-specific state carried to the loop */
    const struct Route *route; /* what the guard matched (api.c) */
} ApiCtx;

typedef void (*ApiRouteFn)(ApiCtx *c);

/* api.c: the native face's guard and handler (HttpGuard, HttpHandler; userdata the Api),
 * shared by its own listener and the host-to-host one (api_hop.c). */
bool api_guard(HttpRequest *req, void *userdata);
void api_handle(HttpRequest *req, void *userdata);

/* Runs fn(c) on the loop thread; fn must answer and then call api_ctx_done(c). */
void api_on_loop(ApiCtx *c, ApiRouteFn fn);
void api_ctx_done(ApiCtx *c);
/* Answer helpers that also end the context. */
void api_reply_json(ApiCtx *c, unsigned status, json_t *body);
void api_reply_error(ApiCtx *c, const Error *e);
void api_reply_errorf(ApiCtx *c, ErrorCategory cat, const char *fmt, ...) _printf_(3, 4);
/* An error with extra fields (stolen; "retry_after" also becomes Retry-After). */
void api_reply_error_extra(ApiCtx *c, const Error *e, json_t *extra);

/* api_auth.c: resolves the caller (connection thread). Unix-socket peers are operators;
 * TCP callers need "Authorization: Bearer <token>" of a token that is not revoked
 * (E_UNAUTHORIZED otherwise). API_TENANT_HEADER lets an operator act for a tenant. */
int api_authenticate(ApiCtx *c, Error **errp);
/* api_forward.c (cluster mode). The owner side: a forwarded identity (api_forward.h) taken
 * in place of a token: 1 taken, 0 none came, -1 refused (E_UNAUTHORIZED). The forwarding
 * side: true when the request names a session another host owns and was taken (forwarded,
 * or answered 404/503; c is done), false when the local route should answer. */
int api_forward_identify(ApiCtx *c, Error **errp);
bool api_forward_take(ApiCtx *c);
/* Loop thread, from a create's route: true when the create was placed on another host (this
 * one has no idle guest of pool, another has; c is done and the owner answers), false when
 * this host admits it (it has an idle guest, nobody has, not a cluster, or forwarded here). */
bool api_forward_place(ApiCtx *c, const char *pool);
/* dir: the lookup connection (ApiDeps.cluster_lookup), used from any thread, one at a time. */
int api_forward_new(Cluster *dir, ApiForward **ret, Error **errp);
/* Before the HTTP server stops: refuses new transfers (503) and waits (3 s at most) for the
 * running ones to end, each answering its request while the server can still take the
 * answer. NULL is fine. */
void api_forward_stop(ApiForward *af);
void api_forward_free(ApiForward *af); /* after the HTTP server stopped; NULL is fine */
/* The stockade_forward_* lines of /metrics (nothing when af is NULL: not a cluster). */
void api_forward_metrics(ApiForward *af, FILE *f);
/* The {"code","quota","limit","used","requested","retry_after"} extra of a 429. */
json_t *api_refusal_json(const AdmitRefusal *r);

/* The request body as a JSON object (strict: no duplicate keys, bounded nesting) in c->body;
 * an empty body is {}. E_INVALID otherwise. */
int api_parse_body(ApiCtx *c, Error **errp);

/* Routes. */
void route_session_create(ApiCtx *c);
void route_task_create(ApiCtx *c);
void route_session_list(ApiCtx *c);
void route_session_get(ApiCtx *c);
void route_session_close(ApiCtx *c);
void route_session_cancel(ApiCtx *c);
void route_exec(ApiCtx *c);
void route_exec_signal(ApiCtx *c);
void route_exec_stdin(ApiCtx *c);
void route_exec_resize(ApiCtx *c);
void route_events(ApiCtx *c);
/* routes_code.c */
void route_code_run(ApiCtx *c);
void route_context_list(ApiCtx *c);
void route_context_create(ApiCtx *c);
void route_context_delete(ApiCtx *c);
void route_context_restart(ApiCtx *c);
void route_context_interrupt(ApiCtx *c);
void route_file_put(ApiCtx *c);
void route_file_get(ApiCtx *c);
void route_workspace(ApiCtx *c);
void route_metrics(ApiCtx *c);
void route_health(ApiCtx *c);
void route_pool(ApiCtx *c);
/* routes_drain.c: GET, POST (on), DELETE (off) /v1/admin/drain[?timeout_s=N] */
void route_admin_drain(ApiCtx *c);
/* Answers the drains still waiting (503 "stopping"); after the loop stopped. */
void api_drain_stop(Api *a);
/* routes_admin.c: operators only (the route table checks) */
void route_admin_tenants_list(ApiCtx *c);
void route_admin_hosts(ApiCtx *c); /* routes_hosts.c */
void route_admin_tenant_create(ApiCtx *c);
void route_admin_tenant_remove(ApiCtx *c);
void route_admin_quota_get(ApiCtx *c);
void route_admin_quota_put(ApiCtx *c);
void route_admin_usage(ApiCtx *c);
void route_admin_tokens_list(ApiCtx *c);
void route_admin_token_create(ApiCtx *c);
void route_admin_admin_token_create(ApiCtx *c);
void route_admin_token_revoke(ApiCtx *c);

/* A session id from segment i, checked; answers 404 itself and returns NULL when malformed. */
const char *api_session_id(ApiCtx *c, size_t i);
/* The session's record for this tenant (E_NOT_FOUND for another tenant's). */
int api_load_session(ApiCtx *c, const char *id, SessionRecord *ret, Error **errp);
