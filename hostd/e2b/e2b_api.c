/* The control plane: E2B's REST API as the SDK 2.51.0 calls it (and the v1 paths older SDKs
 * call). "X-API-KEY" is a Stockade token; a sandbox is a session of its tenant. Errors are
 * {"code": <status>, "message"}: the SDK branches on body.code (kill's 404 is "false", a 429
 * is a RateLimitError retried on an integer Retry-After, other codes a SandboxError).
 *
 * Every route that needs the loop posts to it (e2b_post()) and returns: the loop answers.
 * Create answers only once the guest runs (e2b_create.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "e2b_internal.h"
#include "http_route.h"
#include "http_url.h"
#include "timeutil.h"

typedef struct ApiReq {
    E2b *e;
    HttpRequest *req;
    char **seg;
    size_t n_seg;
    char tenant[STORE_ID_MAX_BYTES];
    json_t *body;
} ApiReq;

typedef void (*ApiFn)(ApiReq *a);

/* ------------------------------------------------------------------ answers */

static void
reply_status(HttpRequest *req, unsigned status, const char *message)
{
    http_respond_json(req, status, e2b_render_api_error(status, message));
}

static void
reply_error(HttpRequest *req, const Error *err)
{
    reply_status(req, http_status_for_category(err->category), err->message);
}

/* ------------------------------------------------------------------ API keys */

#define API_KEY_FAILED                                                                             \
    "missing, malformed, unknown or revoked API key (X-API-KEY: a Stockade token, e2b_...)"

/* The token an X-API-KEY names: stk_<hex> as is, e2b_<hex> as stk_<hex> (one token, one
 * hash: admit_token_hash()); the lookup checks its shape. -1 if it cannot be either (the wrong
 * length). */
static int
api_key_token(const char *key, char token[ADMIT_TOKEN_TEXT_BYTES])
{
    if (!key || strlen(key) != ADMIT_TOKEN_TEXT_LEN)
        return -1;
    bool e2b = strncmp(key, "e2b_", 4) == 0;
    snprintf(token, ADMIT_TOKEN_TEXT_BYTES, "%s%s", e2b ? ADMIT_TOKEN_PREFIX : "", key + 4 * e2b);
    return 0;
}

/* The key's tenant by the HTTP layer's authenticator: the native API's own lookup. */
int
e2b_api_key_tenant(E2b *e, HttpRequest *req, char ret_tenant[STORE_ID_MAX_BYTES], Error **errp)
{
    char token[ADMIT_TOKEN_TEXT_BYTES] = "";
    _cleanup_error_ Error *err = NULL;
    HttpIdentity id;

    (void) e;
    bool key = api_key_token(http_header(req, E2B_API_KEY_HEADER), token) == 0;
    int r = http_authenticate(req, key ? token : NULL, &id, &err);
    explicit_bzero(token, sizeof(token));
    if (r < 0)
        return err->category == E_UNAUTHORIZED /* else the lookup failed: not the caller's */
                   ? error_set(errp, E_UNAUTHORIZED, 0, API_KEY_FAILED)
                   : error_set(errp, err->category, 0, "%s", err->message);
    snprintf(ret_tenant, STORE_ID_MAX_BYTES, "%.*s", STORE_ID_MAX_BYTES - 1, id.tenant);
    return 0;
}

/* ------------------------------------------------------------------ one sandbox */

/* OP_UNSUPPORTED: pause, resume, snapshots, fork, metrics, logs, network: the sandbox is
 * looked up first, so an unknown one is 404 before the 501, in E2B's order (its API resolves
 * the sandbox before anything else: e2b-dev/infra packages/api/internal/handlers) */
typedef enum { OP_GET, OP_KILL, OP_TIMEOUT, OP_CONNECT, OP_REFRESH, OP_UNSUPPORTED } SandboxOp;

typedef struct SandboxCall {
    E2bCall c;
    SandboxOp op;
    char id[E2B_SANDBOX_ID_BYTES];
    char tenant[STORE_ID_MAX_BYTES];
    uint64_t timeout_usec; /* OP_TIMEOUT: the new one; OP_CONNECT, OP_REFRESH: at least this */
    json_t *answer;        /* OP_GET, OP_CONNECT */
} SandboxCall;

static void
sandbox_call_free(E2bCall *c)
{
    json_decref(((SandboxCall *) c)->answer);
}

/* Connect and refresh extend the timeout, never shorten it, and stay in the lifetime. */
static int
extend_timeout(E2b *e, E2bSandbox *sb, uint64_t want_usec, Error **errp)
{
    uint64_t left;
    int64_t now = (int64_t) wall_usec();
    if (sb->end_usec >= now + (int64_t) want_usec)
        return 0;
    if (sessions_timeout_left(e->d.sessions, NULL, sb->session_id, &left, errp) < 0)
        return -1;
    uint64_t t = MIN(want_usec, left);
    if (sessions_set_timeout(e->d.sessions, NULL, sb->session_id, t, errp) < 0)
        return -1;
    sb->end_usec = MAX(sb->end_usec, now + (int64_t) t);
    return 0;
}

static int
sandbox_op(E2b *e, SandboxCall *sc, E2bSandbox *sb, Error **errp)
{
    E2bSandboxView v;
    switch (sc->op) {
    case OP_KILL:
        if (sessions_close(e->d.sessions, NULL, sb->session_id, errp) < 0)
            return -1;
        e2b_sandbox_remove(e, sb);
        return 0;
    case OP_TIMEOUT:
        if (sessions_set_timeout(e->d.sessions, NULL, sb->session_id, sc->timeout_usec, errp) < 0)
            return -1;
        sb->end_usec = (int64_t) (wall_usec() + sc->timeout_usec);
        return 0;
    case OP_CONNECT:
    case OP_REFRESH:
        if (extend_timeout(e, sb, sc->timeout_usec, errp) < 0)
            return -1;
        break;
    case OP_GET:
        break;
    case OP_UNSUPPORTED:
        return 0; /* sandbox_reply() answers 501 */
    }
    e2b_sandbox_view(e, sb, &v);
    sc->answer = sc->op == OP_GET ? e2b_render_detail(&v, false) : e2b_render_sandbox(&v);
    return 0;
}

static void
sandbox_on_loop(E2bCall *c)
{
    SandboxCall *sc = (SandboxCall *) c;
    _cleanup_error_ Error *err = NULL;
    E2bSandbox *sb = e2b_sandbox_running(c->e, sc->id, sc->tenant, &err);
    if (sb)
        (void) sandbox_op(c->e, sc, sb, &err);
    e2b_call_done(c, err);
}

static void
sandbox_reply(E2bCall *c, HttpRequest *req, const Error *err)
{
    SandboxCall *sc = (SandboxCall *) c;
    if (err)
        reply_error(req, err);
    else if (sc->op == OP_UNSUPPORTED)
        reply_status(req, 501,
                     "not supported by Stockade: a sandbox's guest is used once and "
                     "destroyed (no pause, resume, snapshots or forks), and it has no metrics, "
                     "logs or network settings here (hostd/e2b/README.md)");
    else if (sc->answer)
        http_respond_json(req, 200, TAKE_PTR(sc->answer));
    else
        http_respond_bytes(req, 204, NULL, NULL, 0);
}

static void
route_sandbox(ApiReq *a, SandboxOp op)
{
    _cleanup_error_ Error *err = NULL;
    SandboxCall *sc = e2b_call_new(sizeof(*sc), sandbox_call_free);
    uint64_t t_s = E2B_DEFAULT_TIMEOUT_S;

    if (!sc) {
        reply_status(a->req, 500, "out of memory");
        return;
    }
    sc->op = op;
    snprintf(sc->id, sizeof(sc->id), "%.*s", E2B_SANDBOX_ID_LEN,
             a->seg[strcmp(a->seg[0], "v2") == 0 ? 2 : 1]);
    memcpy(sc->tenant, a->tenant, sizeof(sc->tenant));
    if (op == OP_REFRESH) {
        json_t *d = json_object_get(a->body, "duration");
        t_s = json_is_integer(d) && json_integer_value(d) >= 0 &&
                      json_integer_value(d) <= E2B_LIFETIME_MAX_S
                  ? (uint64_t) json_integer_value(d)
                  : E2B_DEFAULT_TIMEOUT_S;
    }
    if ((op == OP_TIMEOUT || op == OP_CONNECT) &&
        e2b_parse_timeout(a->body, op == OP_TIMEOUT, &t_s, &err) < 0) {
        reply_error(a->req, err);
        e2b_call_unref(&sc->c);
        return;
    }
    sc->timeout_usec = t_s * USEC_PER_SEC;
    /* Cluster mode: another host's sandbox of this tenant goes to that host's E2B API (through
     * its host-to-host listener), looked up here (the connection thread), never on the loop. */
    E2bRemote remote;
    int where = e2b_elsewhere(a->e, a->req, sc->id, sc->tenant, false, &remote, &err);
    if (where != 0) {
        if (where > 0)
            e2b_forward(a->e, a->req, &remote);
        else
            reply_error(a->req, err);
        e2b_call_unref(&sc->c);
        return;
    }
    e2b_post(a->e, a->req, &sc->c, sandbox_on_loop, sandbox_reply, E2B_CALL_TIMEOUT_USEC);
}

static void
route_get(ApiReq *a)
{
    route_sandbox(a, OP_GET);
}

static void
route_kill(ApiReq *a)
{
    route_sandbox(a, OP_KILL);
}

static void
route_timeout(ApiReq *a)
{
    route_sandbox(a, OP_TIMEOUT);
}

static void
route_connect(ApiReq *a)
{
    route_sandbox(a, OP_CONNECT);
}

static void
route_refresh(ApiReq *a)
{
    route_sandbox(a, OP_REFRESH);
}

static void
route_create_v1(ApiReq *a)
{
    e2b_create(a->e, a->req, a->tenant, a->body, false);
}

static void
route_create_v2(ApiReq *a)
{
    e2b_create(a->e, a->req, a->tenant, a->body, true);
}

/* ------------------------------------------------------------------ list */

typedef struct ListCall {
    E2bCall c;
    char tenant[STORE_ID_MAX_BYTES];
    json_t *metadata; /* filter, or NULL */
    const char *template_id;
    bool running_wanted, asc;
    int64_t started_after, after_usec; /* after_usec: the page token's; 0 = first page */
    char after_id[E2B_SANDBOX_ID_BYTES];
    size_t limit;
    json_t *answer;
    char next[E2B_PAGE_TOKEN_BYTES];
} ListCall;

static void
list_call_free(E2bCall *c)
{
    ListCall *lc = (ListCall *) c;
    json_decref(lc->metadata);
    json_decref(lc->answer);
}

/* Page order: started_usec, then id; asc or desc. */
static int
list_cmp(const ListCall *lc, const E2bSandbox *x, int64_t started, const char *id)
{
    int c = x->started_usec < started ? -1 : x->started_usec > started ? 1 : strcmp(x->id, id);
    return lc->asc ? c : -c;
}

static bool
list_wants(const ListCall *lc, const E2bSandbox *sb)
{
    return sb->active && strcmp(sb->tenant, lc->tenant) == 0 && lc->running_wanted &&
           (!lc->template_id || strcmp(lc->template_id, sb->template_id) == 0) &&
           sb->started_usec >= lc->started_after &&
           (!lc->metadata || e2b_metadata_matches(sb->metadata, lc->metadata)) &&
           (lc->after_usec == 0 || list_cmp(lc, sb, lc->after_usec, lc->after_id) > 0);
}

static void
list_on_loop(E2bCall *c)
{
    ListCall *lc = (ListCall *) c;
    const E2bSandbox *page[E2B_LIST_LIMIT_MAX + 1];
    size_t n = 0;

    e2b_sandboxes_sweep(c->e);
    for (E2bSandbox *sb = c->e->sandboxes; sb; sb = sb->next) {
        if (!list_wants(lc, sb) || !sessions_is_running(c->e->d.sessions, NULL, sb->session_id))
            continue;
        size_t i = n; /* insertion into the first limit+1, in page order */
        while (i > 0 && list_cmp(lc, page[i - 1], sb->started_usec, sb->id) > 0)
            i--;
        if (i > lc->limit)
            continue;
        memmove(&page[i + 1], &page[i], (MIN(n, lc->limit) - i) * sizeof(page[0]));
        page[i] = sb;
        n = MIN(n + 1, lc->limit + 1);
    }
    lc->answer = json_array();
    for (size_t i = 0; i < MIN(n, lc->limit); i++) {
        E2bSandboxView v;
        e2b_sandbox_view(c->e, page[i], &v);
        json_array_append_new(lc->answer, e2b_render_detail(&v, true));
    }
    if (n > lc->limit)
        e2b_page_token(page[lc->limit - 1]->started_usec, page[lc->limit - 1]->id, lc->next);
    e2b_call_done(c, NULL);
}

static int
list_filters(ApiReq *a, ListCall *lc, Error **errp)
{
    const char *limit = http_query(a->req, "limit"), *token = http_query(a->req, "nextToken");
    const char *state = http_query(a->req, "state"), *meta = http_query(a->req, "metadata");
    const char *after = http_query(a->req, "startedAfter"), *order = http_query(a->req, "order");
    char *end = NULL;
    long l = limit ? strtol(limit, &end, 10) : E2B_LIST_LIMIT_DEFAULT;

    if ((limit && (*end || l < 1 || l > E2B_LIST_LIMIT_MAX)) ||
        (token && e2b_page_token_parse(token, &lc->after_usec, lc->after_id) < 0) ||
        (meta && e2b_metadata_query(meta, &lc->metadata) < 0) ||
        (after && e2b_time_parse(after, &lc->started_after) < 0) ||
        (order && strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0))
        return error_set(errp, E_INVALID, 0,
                         "limit (1..%d), nextToken, metadata, startedAfter "
                         "(RFC 3339) or order (asc, desc) is malformed",
                         E2B_LIST_LIMIT_MAX);
    lc->limit = (size_t) l;
    lc->asc = order && strcmp(order, "asc") == 0;
    lc->running_wanted = !state || strstr(state, "running") != NULL;
    lc->template_id = http_query(a->req, "template");
    if (lc->template_id && !lc->template_id[0])
        lc->template_id = NULL;
    memcpy(lc->tenant, a->tenant, sizeof(lc->tenant));
    return 0;
}

static void
list_reply(E2bCall *c, HttpRequest *req, const Error *err)
{
    ListCall *lc = (ListCall *) c;
    if (err) {
        reply_error(req, err);
        return;
    }
    if (lc->next[0])
        http_response_header(req, "X-Next-Token", lc->next);
    http_respond_json(req, 200, TAKE_PTR(lc->answer));
}

static void
route_list(ApiReq *a)
{
    _cleanup_error_ Error *err = NULL;
    ListCall *lc = e2b_call_new(sizeof(*lc), list_call_free);

    if (!lc || list_filters(a, lc, &err) < 0) {
        if (!err)
            error_set(&err, E_INTERNAL, ENOMEM, "list");
        reply_error(a->req, err);
        e2b_call_unref(lc ? &lc->c : NULL);
        return;
    }
    e2b_post(a->e, a->req, &lc->c, list_on_loop, list_reply, E2B_CALL_TIMEOUT_USEC);
}

/* ------------------------------------------------------------------ the rest */

static void
route_health(ApiReq *a)
{
    http_respond_json(a->req, 200, json_pack("{s:s}", "message", "Health check successful"));
}

static void
route_template_alias(ApiReq *a)
{
    e2b_template_alias(a->e, a->req, a->seg[2]);
}

static void
route_unsupported(ApiReq *a)
{
    route_sandbox(a, OP_UNSUPPORTED);
}

/* The pattern (http_route.h): "*" is a sandbox id or a template alias (the route checks it). */
typedef struct {
    HttpRoute r;
    ApiFn fn;
    bool auth;
} ApiRoute;

static const ApiRoute routes[] = {
    {{"GET", {"health"}}, route_health, false},
    {{"POST", {"sandboxes"}}, route_create_v1, true},
    {{"POST", {"v2", "sandboxes"}}, route_create_v2, true},
    {{"GET", {"sandboxes"}}, route_list, true},
    {{"GET", {"v2", "sandboxes"}}, route_list, true},
    {{"GET", {"sandboxes", "*"}}, route_get, true},
    {{"DELETE", {"sandboxes", "*"}}, route_kill, true},
    {{"POST", {"sandboxes", "*", "timeout"}}, route_timeout, true},
    {{"POST", {"sandboxes", "*", "connect"}}, route_connect, true},
    {{"POST", {"v2", "sandboxes", "*", "connect"}}, route_connect, true},
    {{"POST", {"sandboxes", "*", "refreshes"}}, route_refresh, true},
    {{"GET", {"templates", "aliases", "*"}}, route_template_alias, true},
    {{"POST", {"sandboxes", "*", "pause"}}, route_unsupported, true},
    {{"POST", {"sandboxes", "*", "resume"}}, route_unsupported, true},
    {{"POST", {"sandboxes", "*", "snapshots"}}, route_unsupported, true},
    {{"POST", {"sandboxes", "*", "fork"}}, route_unsupported, true},
    {{"GET", {"sandboxes", "*", "metrics"}}, route_unsupported, true},
    {{"GET", {"sandboxes", "*", "logs"}}, route_unsupported, true},
    {{"PUT", {"sandboxes", "*", "network"}}, route_unsupported, true},
};

/* E2B's API has no 405: a path without the method is not an endpoint either. */
static const ApiRoute *
route_find(const ApiReq *a)
{
    HttpRouteMatch m;
    ssize_t i = HTTP_ROUTE_FIND(routes, http_method(a->req), a->seg, a->n_seg, &m);
    return m == HTTP_ROUTE_FOUND ? &routes[i] : NULL;
}

/* An empty body stays none (a create then says what it needs); any other must be an object. */
static int
parse_body(ApiReq *a, Error **errp)
{
    size_t len;
    const uint8_t *body = http_body(a->req, &len);
    if (len == 0)
        return 0;
    a->body = http_json_object(body, len, 0, "the body", errp);
    return a->body ? 0 : -1;
}

/* The route of a request and, unless it needs none, its caller (an unknown caller learns no
 * more than 401: not even which paths exist). */
static const ApiRoute *
api_req_admit(ApiReq *a, Error **errp)
{
    const ApiRoute *r = NULL;

    if (http_path_segments(a->req, &a->seg, &a->n_seg, errp) < 0)
        return NULL;
    r = route_find(a);
    if ((!r || r->auth) && e2b_api_key_tenant(a->e, a->req, a->tenant, errp) < 0)
        return NULL;
    return r;
}

/* Every request's caller is checked at its head, with or without a body: a request without a
 * valid key is answered 401 before a body byte is read, and its connection closed (not kept
 * alive for idle_timeout_s); an authenticated one counts for its tenant in the layer's
 * per-caller shares. The handler checks again (a store read): it trusts no context. */
bool
e2b_api_guard(HttpRequest *req, void *userdata)
{
    _cleanup_error_ Error *err = NULL;
    ApiReq a = {.e = userdata, .req = req};
    char key[HTTP_CALLER_MAX_BYTES];

    (void) api_req_admit(&a, &err);
    http_strv_free(a.seg);
    if (!err) {
        if (a.tenant[0] &&
            snprintf(key, sizeof(key), ADMIT_TENANT_CALLER_FMT, a.tenant) < (int) sizeof(key))
            (void) http_request_set_caller(req, key);
        return true;
    }
    reply_error(a.req, err);
    return false;
}

void
e2b_api_handle(HttpRequest *req, void *userdata)
{
    _cleanup_error_ Error *err = NULL;
    ApiReq a = {.e = userdata, .req = req};
    const ApiRoute *r = api_req_admit(&a, &err);

    if (!err && r)
        (void) parse_body(&a, &err);
    if (err)
        reply_error(a.req, err);
    else if (!r)
        reply_status(a.req, 404, "no such endpoint in Stockade's E2B API");
    else
        r->fn(&a);
    http_strv_free(a.seg);
    json_decref(a.body);
}
