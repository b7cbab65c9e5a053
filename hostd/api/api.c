/* Route table (with who may call each route), dispatch and the loop hand-off. See api.h;
 * who the caller is: api_auth.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "http_json.h"
#include "http_route.h"
#include "http_url.h"
#include "log.h"

/* Who may call a route: anyone (health), any valid token (tenant), or an operator (admin:
 * the unix socket or an operator token). */
typedef enum { AUTH_NONE, AUTH_TENANT, AUTH_ADMIN } RouteAuth;

/* The pattern (http_route.h): "{id}" is a session id (the route checks it), "*" any one
 * segment, "**" one or more (a workspace path). */
typedef struct Route {
    HttpRoute r;
    ApiRouteFn fn;
    RouteAuth auth;
} Route;

static const Route routes[] = {
    {{"GET", {"v1", "health"}}, route_health, AUTH_NONE},
    {{"GET", {"metrics"}}, route_metrics, AUTH_ADMIN},
    {{"GET", {"v1", "pool"}}, route_pool, AUTH_TENANT},
    {{"POST", {"v1", "sessions"}}, route_session_create, AUTH_TENANT},
    {{"GET", {"v1", "sessions"}}, route_session_list, AUTH_TENANT},
    {{"GET", {"v1", "sessions", "{id}"}}, route_session_get, AUTH_TENANT},
    {{"DELETE", {"v1", "sessions", "{id}"}}, route_session_close, AUTH_TENANT},
    {{"POST", {"v1", "sessions", "{id}", "cancel"}}, route_session_cancel, AUTH_TENANT},
    {{"POST", {"v1", "sessions", "{id}", "exec"}}, route_exec, AUTH_TENANT},
    {{"POST", {"v1", "sessions", "{id}", "execs", "*", "signal"}}, route_exec_signal, AUTH_TENANT},
    {{"POST", {"v1", "sessions", "{id}", "execs", "*", "stdin"}}, route_exec_stdin, AUTH_TENANT},
    {{"POST", {"v1", "sessions", "{id}", "execs", "*", "resize"}}, route_exec_resize, AUTH_TENANT},
    {{"GET", {"v1", "sessions", "{id}", "events"}}, route_events, AUTH_TENANT},
    {{"POST", {"v1", "sessions", "{id}", "code"}}, route_code_run, AUTH_TENANT},
    {{"GET", {"v1", "sessions", "{id}", "contexts"}}, route_context_list, AUTH_TENANT},
    {{"POST", {"v1", "sessions", "{id}", "contexts"}}, route_context_create, AUTH_TENANT},
    {{"DELETE", {"v1", "sessions", "{id}", "contexts", "*"}}, route_context_delete, AUTH_TENANT},
    {{"POST", {"v1", "sessions", "{id}", "contexts", "*", "restart"}},
     route_context_restart,
     AUTH_TENANT},
    {{"POST", {"v1", "sessions", "{id}", "contexts", "*", "interrupt"}},
     route_context_interrupt,
     AUTH_TENANT},
    {{"PUT", {"v1", "sessions", "{id}", "files", "**"}}, route_file_put, AUTH_TENANT},
    {{"GET", {"v1", "sessions", "{id}", "files", "**"}}, route_file_get, AUTH_TENANT},
    {{"GET", {"v1", "sessions", "{id}", "workspace"}}, route_workspace, AUTH_TENANT},
    {{"POST", {"v1", "tasks"}}, route_task_create, AUTH_TENANT},
    {{"GET", {"v1", "tasks", "{id}"}}, route_session_get, AUTH_TENANT},
    {{"POST", {"v1", "tasks", "{id}", "cancel"}}, route_session_cancel, AUTH_TENANT},
    {{"GET", {"v1", "tasks", "{id}", "events"}}, route_events, AUTH_TENANT},
    {{"GET", {"v1", "tasks", "{id}", "files", "**"}}, route_file_get, AUTH_TENANT},
    {{"GET", {"v1", "tasks", "{id}", "workspace"}}, route_workspace, AUTH_TENANT},
    {{"GET", {"v1", "admin", "tenants"}}, route_admin_tenants_list, AUTH_ADMIN},
    {{"POST", {"v1", "admin", "tenants"}}, route_admin_tenant_create, AUTH_ADMIN},
    {{"DELETE", {"v1", "admin", "tenants", "*"}}, route_admin_tenant_remove, AUTH_ADMIN},
    {{"GET", {"v1", "admin", "tenants", "*", "quota"}}, route_admin_quota_get, AUTH_ADMIN},
    {{"PUT", {"v1", "admin", "tenants", "*", "quota"}}, route_admin_quota_put, AUTH_ADMIN},
    {{"GET", {"v1", "admin", "tenants", "*", "usage"}}, route_admin_usage, AUTH_ADMIN},
    {{"GET", {"v1", "admin", "tenants", "*", "tokens"}}, route_admin_tokens_list, AUTH_ADMIN},
    {{"POST", {"v1", "admin", "tenants", "*", "tokens"}}, route_admin_token_create, AUTH_ADMIN},
    {{"POST", {"v1", "admin", "tokens"}}, route_admin_admin_token_create, AUTH_ADMIN},
    {{"DELETE", {"v1", "admin", "tokens", "*"}}, route_admin_token_revoke, AUTH_ADMIN},
    {{"GET", {"v1", "admin", "hosts"}}, route_admin_hosts, AUTH_ADMIN},
    {{"GET", {"v1", "admin", "drain"}}, route_admin_drain, AUTH_ADMIN},
    {{"POST", {"v1", "admin", "drain"}}, route_admin_drain, AUTH_ADMIN},
    {{"DELETE", {"v1", "admin", "drain"}}, route_admin_drain, AUTH_ADMIN},
};

void
api_ctx_done(ApiCtx *c)
{
    http_strv_free(c->seg);
    json_decref(c->body);
    free(c);
}

int
api_parse_body(ApiCtx *c, Error **errp)
{
    size_t len;
    const uint8_t *body = http_body(c->req, &len);

    c->body = http_json_object(body, len, 0, "request body", errp);
    return c->body ? 0 : -1;
}

void
api_reply_json(ApiCtx *c, unsigned status, json_t *body)
{
    http_respond_json(c->req, status, body);
    api_ctx_done(c);
}

void
api_reply_error(ApiCtx *c, const Error *e)
{
    http_respond_error(c->req, e, NULL);
    api_ctx_done(c);
}

void
api_reply_error_extra(ApiCtx *c, const Error *e, json_t *extra)
{
    http_respond_error(c->req, e, extra);
    api_ctx_done(c);
}

void
api_reply_errorf(ApiCtx *c, ErrorCategory cat, const char *fmt, ...)
{
    _cleanup_error_ Error *e = NULL;
    char msg[ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    error_set(&e, cat, 0, "%s", msg);
    api_reply_error(c, e);
}

typedef struct {
    ApiCtx *c;
    ApiRouteFn fn;
} LoopCall;

/* No timeout and no stop answer: the loop alone answers, so it claims the request at once
 * and the route answers through its context as it always did. */
static void
api_loop_trampoline(HttpLoopCall *call, void *userdata)
{
    LoopCall *lc = userdata;
    (void) http_loop_claim(call);
    lc->fn(lc->c);
    http_loop_release(call);
}

static void
api_loop_failed(HttpRequest *req, const Error *err, void *userdata)
{
    LoopCall *lc = userdata;
    (void) req;
    (void) err;
    api_reply_errorf(lc->c, E_UNAVAILABLE, "the daemon is overloaded");
}

void
api_on_loop(ApiCtx *c, ApiRouteFn fn)
{
    LoopCall *lc = malloc(sizeof(*lc));
    if (!lc) {
        api_reply_errorf(c, E_UNAVAILABLE, "the daemon is overloaded");
        return;
    }
    *lc = (LoopCall){.c = c, .fn = fn};
    http_loop_post(c->req, &(HttpLoopSpec){.loop = c->api->d.loop,
                                           .fn = api_loop_trampoline,
                                           .fail = api_loop_failed,
                                           .ctx = lc,
                                           .free_ctx = free});
}

const char *
api_session_id(ApiCtx *c, size_t i)
{
    if (i >= c->n_seg || !sessions_id_is_valid(c->seg[i])) {
        api_reply_errorf(c, E_NOT_FOUND, "no such session");
        return NULL;
    }
    return c->seg[i];
}

int
api_load_session(ApiCtx *c, const char *id, SessionRecord *ret, Error **errp)
{
    Store *s = store_reader_acquire(c->api->d.readers);
    int r = store_session_get(s, id, ret, errp);
    store_reader_release(c->api->d.readers, s);
    if (r == 0 && strcmp(ret->tenant_id, c->tenant) != 0 && !c->admin) {
        session_record_clear(ret);
        return error_set(errp, E_NOT_FOUND, 0, "no session %s", id); /* 404, never 403 */
    }
    return r;
}

static void
api_ctx_free(void *c)
{
    api_ctx_done(c);
}

/* The layer's per-caller shares (of the body budget, of the connections) count an
 * authenticated request for its tenant, whichever face or host it came through; an
 * unauthenticated one (health) stays its peer address's. */
static void
api_name_caller(ApiCtx *c)
{
    char key[HTTP_CALLER_MAX_BYTES];

    if (c->tenant[0] &&
        snprintf(key, sizeof(key), ADMIT_TENANT_CALLER_FMT, c->tenant) < (int) sizeof(key))
        (void) http_request_set_caller(c->req, key);
}

/* The head is in, the body not read: route and authenticate now, so a caller without a valid
 * token is answered 401 at once and never makes the server read its body. Whatever is
 * decided without the body is answered here; the route itself runs in api_handle(). */
bool
api_guard(HttpRequest *req, void *userdata)
{
    _cleanup_error_ Error *err = NULL;
    ApiCtx *c = calloc(1, sizeof(*c));
    HttpRouteMatch m;
    const Route *found = NULL;

    if (!c) {
        error_set(&err, E_INTERNAL, ENOMEM, "request");
        http_respond_error(req, err, NULL);
        return false;
    }
    c->api = userdata;
    c->req = req;
    if (http_path_segments(req, &c->seg, &c->n_seg, &err) < 0) {
        api_reply_error(c, err);
        return false;
    }
    ssize_t i = HTTP_ROUTE_FIND(routes, http_method(req), c->seg, c->n_seg, &m);
    if (i >= 0)
        found = &routes[i];
    /* Authentication before anything else answers: an unknown caller learns no more than 401
     * (not even which paths exist). */
    if ((m != HTTP_ROUTE_FOUND || found->auth != AUTH_NONE) && api_authenticate(c, &err) < 0)
        api_reply_error(c, err);
    else if (m == HTTP_ROUTE_FOUND && found->auth == AUTH_ADMIN && !c->admin)
        api_reply_errorf(c, E_FORBIDDEN,
                         "this needs an operator: the unix socket or an "
                         "operator token");
    else if (m == HTTP_ROUTE_NONE)
        api_reply_errorf(c, E_NOT_FOUND, "no such endpoint: %s %.200s", http_method(req),
                         http_path(req));
    else if (m == HTTP_ROUTE_PATH)
        api_reply_json(c, 405,
                       json_pack("{s:{s:s,s:s}}", "error", "code", "method_not_allowed", "message",
                                 "this method is not allowed on this path"));
    else {
        c->route = found;
        api_name_caller(c);
        http_request_set_context(req, c, api_ctx_free);
        return true;
    }
    return false;
}

void
api_handle(HttpRequest *req, void *userdata)
{
    ApiCtx *c = http_request_take_context(req); /* api_guard() passed it */

    (void) userdata;
    if (api_forward_take(c)) /* [cluster]: a session another host owns */
        return;
    c->route->fn(c);
}

int
api_start(const ApiDeps *deps, const HttpConfig *http, Api **ret, Error **errp)
{
    Api *a = calloc(1, sizeof(*a));
    if (!a)
        return error_set(errp, E_INTERNAL, ENOMEM, "api");
    a->d = *deps;
    if (deps->cluster && api_forward_new(deps->cluster_lookup, &a->fwd, errp) < 0) {
        free(a);
        return -1;
    }
    HttpConfig hc = *http;
    hc.guard = api_guard;
    if (http_server_start(&hc, api_handle, a, &a->http, errp) < 0) {
        api_forward_free(a->fwd);
        free(a);
        return -1;
    }
    *ret = a;
    return 0;
}

void
api_stop(Api *a)
{
    if (!a)
        return;
    api_stop_forwarding(a); /* transfers answer while the server still takes answers */
    api_drain_stop(a);      /* the same: a drain waiting when the loop stopped */
    http_server_stop(a->http);
    api_forward_free(a->fwd);
    free(a);
}
