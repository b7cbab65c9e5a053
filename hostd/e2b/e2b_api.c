/* The control plane: E2B's REST API as the SDK 2.51.0 calls it (and the v1 paths older SDKs
 * call). "X-API-KEY" is a Stockade token; a sandbox is a session of its tenant. Errors are
 * {"code": <status>, "message"}: the SDK branches on body.code (kill's 404 is "false", a 429
 * is a RateLimitError retried on an integer Retry-After, other codes a SandboxError).
 *
 * Create answers only once the guest runs: the handler waits on its own connection thread
 * (EventHub subscription + the session's record, bounded by [e2b] create_wait_s), never on
 * the loop. The sandbox's E2B timeout is the session's timer (sessions_set_timeout()), inside
 * the lifetime admitted and reserved for it at create ([e2b] lifetime_s): Stockade's own
 * quota and ledger decide, and extensions never outlive what the tenant was charged for. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit.h"
#include "e2b_internal.h"
#include "eventhub.h"
#include "http_url.h"
#include "store_tenants.h"
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
reply_status(ApiReq *a, unsigned status, const char *message)
{
    http_respond_json(a->req, status, e2b_render_api_error(status, message));
}

static void
reply_error(ApiReq *a, const Error *err)
{
    reply_status(a, http_status_for_category(err->category), err->message);
}

static void
reply_no_content(ApiReq *a)
{
    http_respond_bytes(a->req, 204, NULL, NULL, 0);
}

/* ------------------------------------------------------------------ API keys */

#define API_KEY_FAILED                                                                             \
    "missing, malformed, unknown or revoked API key (X-API-KEY: a Stockade token, stk_...)"

/* The token an X-API-KEY names: stk_<hex> as is, e2b_<hex> as stk_<hex>. -1 if neither. */
static int
api_key_token(const char *key, char token[ADMIT_TOKEN_TEXT_BYTES])
{
    if (!key || strlen(key) != ADMIT_TOKEN_TEXT_LEN)
        return -1;
    bool e2b = strncmp(key, "e2b_", 4) == 0;
    snprintf(token, ADMIT_TOKEN_TEXT_BYTES, "%s%s", e2b ? ADMIT_TOKEN_PREFIX : "", key + 4 * e2b);
    return admit_token_is_valid(token, strlen(token)) ? 0 : -1;
}

int
e2b_api_key_tenant(E2b *e, HttpRequest *req, char ret_tenant[STORE_ID_MAX_BYTES], Error **errp)
{
    char token[ADMIT_TOKEN_TEXT_BYTES];
    uint8_t hash[SHA256_BYTES];
    TokenRecord t;

    if (api_key_token(http_header(req, E2B_API_KEY_HEADER), token) < 0)
        return error_set(errp, E_UNAUTHORIZED, 0, API_KEY_FAILED);
    admit_token_hash(token, hash);
    explicit_bzero(token, sizeof(token));
    _cleanup_error_ Error *err = NULL;
    if (store_readers_live_token(e->d.readers, hash, &t, &err) < 0)
        return err->category == E_NOT_FOUND /* else the store failed: not the caller's fault */
                   ? error_set(errp, E_UNAUTHORIZED, 0, API_KEY_FAILED)
                   : error_set(errp, err->category, 0, "%s", err->message);
    memcpy(ret_tenant, t.tenant_id, STORE_ID_MAX_BYTES);
    return 0;
}

/* ------------------------------------------------------------------ create */

typedef struct CreateCall {
    E2bCall c;
    /* in */
    char tenant[STORE_ID_MAX_BYTES];
    char template_id[E2B_TEMPLATE_NAME_MAX_BYTES + 1];
    char pool[E2B_POOL_NAME_MAX_BYTES + 1];
    uint64_t lifetime_usec, timeout_usec;
    EnvPair *env;
    size_t n_env;
    json_t *metadata;
    /* out */
    char session_id[E2B_SESSION_ID_BYTES];
    AdmitRefusal refusal;
    json_t *answer;
} CreateCall;

static void
create_call_free(E2bCall *c)
{
    CreateCall *cc = (CreateCall *) c;
    for (size_t i = 0; i < cc->n_env; i++)
        free(cc->env[i].name), free(cc->env[i].value);
    free(cc->env);
    json_decref(cc->metadata);
    json_decref(cc->answer);
}

static int
pool_shape(E2b *e, const char *pool, unsigned *ret_vcpus, unsigned *ret_mib)
{
    PoolStatus st;
    e->d.pool_status(e->d.pool_userdata, &st);
    for (size_t i = 0; i < st.n_shapes; i++)
        if (strcmp(st.shapes[i].name, pool) == 0) {
            *ret_vcpus = st.shapes[i].vcpus;
            *ret_mib = st.shapes[i].memory_mib;
            return 0;
        }
    return -1;
}

static void
create_on_loop(E2bCall *c)
{
    CreateCall *cc = (CreateCall *) c;
    _cleanup_error_ Error *err = NULL;
    SessionSpec spec = {.tenant_id = cc->tenant,
                        .pool = cc->pool,
                        .mirror = true,
                        .timeout_usec = cc->lifetime_usec,
                        .env = cc->env,
                        .n_env = cc->n_env};
    char id[SESSION_ID_BYTES];
    unsigned vcpus, mib;
    E2bSandbox *sb;

    if (pool_shape(c->e, cc->pool, &vcpus, &mib) < 0) {
        error_set(&err, E_INVALID, 0,
                  "template '%s' is not known here: name a pool, or map it "
                  "with [e2b] template_map",
                  cc->template_id);
    } else if (sessions_create(c->e->d.sessions, &spec, id, &cc->refusal, &err) == 0 &&
               e2b_sandbox_add(c->e, id, cc->tenant, cc->template_id, cc->metadata, &sb, &err) <
                   0) {
        (void) sessions_cancel(c->e->d.sessions, NULL, id, NULL);
    } else if (!err) {
        sb->vcpus = vcpus;
        sb->memory_mib = mib;
        snprintf(cc->session_id, sizeof(cc->session_id), "%s", id);
    }
    e2b_call_done(c, err);
}

/* Waits until the session runs: 0; or -1 (it ended, did not start in time, the daemon
 * stops). Connection thread: the EventHub wakes it, the record says the state. */
static int
wait_running(E2b *e, const char *session_id, uint64_t deadline, Error **errp)
{
    int fd = eventhub_subscribe(e->d.hub, session_id, errp);
    if (fd < 0)
        return -1;
    for (;;) {
        SessionRecord r;
        Store *s = store_reader_acquire(e->d.readers);
        int rc = store_session_get(s, session_id, &r, errp);
        store_reader_release(e->d.readers, s);
        if (rc < 0)
            break;
        SessionState st = ST_ENDED; /* a name no state has: treated as over */
        (void) session_state_from_name(r.state, &st);
        bool running = st == ST_RUNNING;
        bool ended = st != ST_RUNNING && st != ST_PENDING && st != ST_STARTING;
        char reason[STORE_REASON_MAX_BYTES];
        snprintf(reason, sizeof(reason), "%s", r.end_reason);
        session_record_clear(&r);
        if (running) {
            eventhub_unsubscribe(e->d.hub, fd);
            return 0;
        }
        if (ended) {
            error_set(errp, strcmp(reason, "no_capacity") == 0 ? E_UNAVAILABLE : E_GUEST, 0,
                      "the sandbox's guest did not start (%s)", reason[0] ? reason : "stopped");
            break;
        }
        uint64_t now = now_usec();
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = e->stop_fd, .events = POLLIN}};
        if (now >= deadline || poll(p, 2, (int) ((deadline - now + 999) / 1000)) < 0 ||
            (p[1].revents & POLLIN)) {
            error_set(errp, E_UNAVAILABLE, 0,
                      "no guest was ready within the create wait "
                      "(the pool may be refilling): retry");
            break;
        }
        uint64_t drained;
        (void) !read(fd, &drained, sizeof(drained));
    }
    eventhub_unsubscribe(e->d.hub, fd);
    return -1;
}

static void
activate_on_loop(E2bCall *c)
{
    CreateCall *cc = (CreateCall *) c;
    _cleanup_error_ Error *err = NULL;
    char id[E2B_SANDBOX_ID_BYTES];
    uint64_t left = 0;
    E2bSandbox *sb =
        e2b_sandbox_id_from_session(cc->session_id, id) == 0 ? e2b_sandbox_find(c->e, id) : NULL;
    uint64_t t = cc->timeout_usec;

    if (!sb || sessions_timeout_left(c->e->d.sessions, NULL, cc->session_id, &left, &err) < 0 ||
        sessions_set_timeout(c->e->d.sessions, NULL, cc->session_id, MIN(t, left), &err) < 0) {
        if (!err)
            error_set(&err, E_GUEST, 0, "the sandbox ended while it started");
        e2b_call_done(c, err);
        return;
    }
    sb->active = true;
    sb->started_usec = (int64_t) wall_usec();
    sb->end_usec = sb->started_usec + (int64_t) MIN(t, left);
    E2bSandboxView v;
    e2b_sandbox_view(c->e, sb, &v);
    cc->answer = e2b_render_sandbox(&v);
    e2b_call_done(c, NULL);
}

static void
abort_on_loop(E2bCall *c)
{
    CreateCall *cc = (CreateCall *) c;
    char id[E2B_SANDBOX_ID_BYTES];
    (void) sessions_cancel(c->e->d.sessions, NULL, cc->session_id, NULL);
    E2bSandbox *sb =
        e2b_sandbox_id_from_session(cc->session_id, id) == 0 ? e2b_sandbox_find(c->e, id) : NULL;
    if (sb)
        e2b_sandbox_remove(c->e, sb);
    e2b_call_done(c, NULL);
}

/* The lifetime to admit: what the tenant's quota and the server allow, up to [e2b]
 * lifetime_s, and never less than the timeout asked (admission refuses that if too long). */
static uint64_t
create_lifetime(ApiReq *a, uint64_t timeout_s)
{
    AdmitQuota q;
    uint64_t life_s = a->e->cfg.lifetime_usec / USEC_PER_SEC;
    Store *s = store_reader_acquire(a->e->d.readers);
    if (store_quota_get(s, a->tenant, a->e->d.default_quota, &q, NULL) == 0)
        life_s = MIN(life_s, q.max_timeout_s);
    store_reader_release(a->e->d.readers, s);
    life_s = MIN(life_s, a->e->d.max_timeout_usec / USEC_PER_SEC);
    return MAX(life_s, timeout_s) * USEC_PER_SEC;
}

static int
create_fill(ApiReq *a, const E2bNewSandbox *n, CreateCall *cc, Error **errp)
{
    const char *pool = e2b_config_template_pool(&a->e->cfg, n->template_id);
    const char *k;
    json_t *v;

    snprintf(cc->tenant, sizeof(cc->tenant), "%s", a->tenant);
    snprintf(cc->template_id, sizeof(cc->template_id), "%s", n->template_id);
    if (strlen(pool ? pool : n->template_id) > E2B_POOL_NAME_MAX_BYTES)
        return error_set(errp, E_INVALID, 0,
                         "template '%s' is not known here: name a pool, or "
                         "map it with [e2b] template_map",
                         n->template_id);
    snprintf(cc->pool, sizeof(cc->pool), "%s", pool ? pool : n->template_id);
    uint64_t t = n->timeout_s ? n->timeout_s : E2B_DEFAULT_TIMEOUT_S;
    cc->timeout_usec = t * USEC_PER_SEC;
    cc->lifetime_usec = create_lifetime(a, t);
    cc->metadata = n->metadata ? json_deep_copy(n->metadata) : NULL;
    cc->env = calloc(json_object_size(n->env) + 1, sizeof(EnvPair));
    if (!cc->env)
        return error_set(errp, E_INTERNAL, ENOMEM, "env");
    json_object_foreach(n->env, k, v)
    {
        EnvPair *p = &cc->env[cc->n_env++];
        p->name = strdup(k);
        p->value = strdup(json_string_value(v));
        if (!p->name || !p->value)
            return error_set(errp, E_INTERNAL, ENOMEM, "env");
    }
    return 0;
}

/* A quota refusal is a 429 (the SDK's RateLimitError) that says which limit and whether
 * waiting helps; an integer Retry-After makes the SDK retry by itself. */
static void
reply_create_error(ApiReq *a, const CreateCall *cc, const Error *err)
{
    char retry[24], msg[ERROR_MESSAGE_MAX + 128];
    if (err->category != E_QUOTA) {
        reply_error(a, err);
        return;
    }
    if (cc->refusal.retry_after_s >= 0) {
        snprintf(retry, sizeof(retry), "%lld", (long long) cc->refusal.retry_after_s);
        http_response_header(a->req, "Retry-After", retry);
        snprintf(msg, sizeof(msg), "%s: this tenant's Stockade quota; it may pass in %lld s",
                 err->message, (long long) cc->refusal.retry_after_s);
    } else {
        snprintf(msg, sizeof(msg),
                 "%s: this tenant's Stockade quota; only an operator can "
                 "raise it",
                 err->message);
    }
    reply_status(a, 429, msg);
}

/* A loop call of fn on a fresh CreateCall for session_id; *ret (on success) holds its answer. */
static int
session_call(E2b *e, const char *session_id, uint64_t timeout_usec, E2bCallFn fn, CreateCall **ret,
             Error **errp)
{
    CreateCall *cc = e2b_call_new(sizeof(*cc), create_call_free);
    if (!cc)
        return error_set(errp, E_INTERNAL, ENOMEM, "create");
    cc->timeout_usec = timeout_usec;
    snprintf(cc->session_id, sizeof(cc->session_id), "%s", session_id);
    if (e2b_call(e, &cc->c, fn, E2B_CALL_TIMEOUT_USEC, errp) < 0) {
        e2b_call_unref(&cc->c);
        return -1;
    }
    *ret = cc;
    return 0;
}

/* The session exists: wait for its guest, then start its E2B timeout and answer 201; or
 * cancel it and answer why it did not start. */
static void
create_finish(ApiReq *a, const char *session_id, uint64_t timeout_usec, uint64_t deadline)
{
    _cleanup_error_ Error *err = NULL;
    CreateCall *done = NULL, *gone = NULL;

    if (wait_running(a->e, session_id, deadline, &err) == 0 &&
        session_call(a->e, session_id, timeout_usec, activate_on_loop, &done, &err) == 0) {
        http_respond_json(a->req, 201, TAKE_PTR(done->answer));
        e2b_call_unref(&done->c);
        return;
    }
    if (session_call(a->e, session_id, 0, abort_on_loop, &gone, NULL) == 0)
        e2b_call_unref(&gone->c);
    reply_error(a, err);
}

static void
route_create(ApiReq *a, bool v2)
{
    _cleanup_error_ Error *err = NULL;
    E2bNewSandbox n;
    CreateCall *cc = e2b_call_new(sizeof(*cc), create_call_free);
    uint64_t deadline = now_usec() + a->e->cfg.create_wait_usec;

    if (!cc || e2b_parse_new_sandbox(a->body, v2, &n, &err) < 0 ||
        create_fill(a, &n, cc, &err) < 0 ||
        e2b_call(a->e, &cc->c, create_on_loop, E2B_CALL_TIMEOUT_USEC, &err) < 0) {
        if (!err)
            error_set(&err, E_INTERNAL, ENOMEM, "create");
        if (cc)
            reply_create_error(a, cc, err);
        else
            reply_error(a, err);
    } else {
        create_finish(a, cc->session_id, cc->timeout_usec, deadline);
    }
    e2b_call_unref(cc ? &cc->c : NULL);
}

/* ------------------------------------------------------------------ one sandbox */

typedef enum { OP_GET, OP_KILL, OP_TIMEOUT, OP_CONNECT, OP_REFRESH } SandboxOp;

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
route_sandbox(ApiReq *a, SandboxOp op)
{
    _cleanup_error_ Error *err = NULL;
    SandboxCall *sc = e2b_call_new(sizeof(*sc), sandbox_call_free);
    uint64_t t_s = E2B_DEFAULT_TIMEOUT_S;

    if (!sc) {
        reply_status(a, 500, "out of memory");
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
        reply_error(a, err);
        e2b_call_unref(&sc->c);
        return;
    }
    sc->timeout_usec = t_s * USEC_PER_SEC;
    if (e2b_call(a->e, &sc->c, sandbox_on_loop, E2B_CALL_TIMEOUT_USEC, &err) < 0)
        reply_error(a, err);
    else if (sc->answer)
        http_respond_json(a->req, 200, TAKE_PTR(sc->answer));
    else
        reply_no_content(a);
    e2b_call_unref(&sc->c);
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
    route_create(a, false);
}

static void
route_create_v2(ApiReq *a)
{
    route_create(a, true);
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
route_list(ApiReq *a)
{
    _cleanup_error_ Error *err = NULL;
    ListCall *lc = e2b_call_new(sizeof(*lc), list_call_free);

    if (!lc || list_filters(a, lc, &err) < 0 ||
        e2b_call(a->e, &lc->c, list_on_loop, E2B_CALL_TIMEOUT_USEC, &err) < 0) {
        if (!err)
            error_set(&err, E_INTERNAL, ENOMEM, "list");
        reply_error(a, err);
    } else {
        if (lc->next[0])
            http_response_header(a->req, "X-Next-Token", lc->next);
        http_respond_json(a->req, 200, TAKE_PTR(lc->answer));
    }
    e2b_call_unref(lc ? &lc->c : NULL);
}

/* ------------------------------------------------------------------ the rest */

static void
route_health(ApiReq *a)
{
    http_respond_json(a->req, 200, json_pack("{s:s}", "message", "Health check successful"));
}

static void
route_unsupported(ApiReq *a)
{
    reply_status(a, 501,
                 "not supported by Stockade: a sandbox's guest is used once and "
                 "destroyed (no pause, resume, snapshots or forks), and it has no metrics, logs "
                 "or network settings here (hostd/e2b/README.md)");
}

typedef struct {
    const char *method;
    const char *pattern[4]; /* literal segments; "*" = a sandbox id */
    ApiFn fn;
    bool auth;
} ApiRoute;

static const ApiRoute routes[] = {
    {"GET", {"health"}, route_health, false},
    {"POST", {"sandboxes"}, route_create_v1, true},
    {"POST", {"v2", "sandboxes"}, route_create_v2, true},
    {"GET", {"sandboxes"}, route_list, true},
    {"GET", {"v2", "sandboxes"}, route_list, true},
    {"GET", {"sandboxes", "*"}, route_get, true},
    {"DELETE", {"sandboxes", "*"}, route_kill, true},
    {"POST", {"sandboxes", "*", "timeout"}, route_timeout, true},
    {"POST", {"sandboxes", "*", "connect"}, route_connect, true},
    {"POST", {"v2", "sandboxes", "*", "connect"}, route_connect, true},
    {"POST", {"sandboxes", "*", "refreshes"}, route_refresh, true},
    {"POST", {"sandboxes", "*", "pause"}, route_unsupported, true},
    {"POST", {"sandboxes", "*", "resume"}, route_unsupported, true},
    {"POST", {"sandboxes", "*", "snapshots"}, route_unsupported, true},
    {"POST", {"sandboxes", "*", "fork"}, route_unsupported, true},
    {"GET", {"sandboxes", "*", "metrics"}, route_unsupported, true},
    {"GET", {"sandboxes", "*", "logs"}, route_unsupported, true},
    {"PUT", {"sandboxes", "*", "network"}, route_unsupported, true},
};

static const ApiRoute *
route_find(const ApiReq *a)
{
    for (size_t r = 0; r < ELEMENTSOF(routes); r++) {
        size_t i = 0;
        for (; i < ELEMENTSOF(routes[r].pattern) && routes[r].pattern[i]; i++)
            if (i >= a->n_seg || (strcmp(routes[r].pattern[i], "*") != 0 &&
                                  strcmp(routes[r].pattern[i], a->seg[i]) != 0))
                break;
        bool method =
            strcmp(routes[r].method, http_method(a->req)) == 0 ||
            (strcmp(routes[r].method, "GET") == 0 && strcmp(http_method(a->req), "HEAD") == 0);
        if ((i == ELEMENTSOF(routes[r].pattern) || !routes[r].pattern[i]) && i == a->n_seg &&
            method)
            return &routes[r];
    }
    return NULL;
}

static int
parse_body(ApiReq *a, Error **errp)
{
    size_t len;
    const uint8_t *body = http_body(a->req, &len);
    json_error_t jerr;
    if (len == 0)
        return 0;
    if (!http_json_depth_within(body, len, HTTP_JSON_MAX_DEPTH))
        return error_set(errp, E_INVALID, 0, "the body nests deeper than %d levels",
                         HTTP_JSON_MAX_DEPTH);
    a->body = json_loadb((const char *) body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!a->body || !json_is_object(a->body))
        return error_set(errp, E_INVALID, 0, "the body must be a JSON object");
    return 0;
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

bool
e2b_api_guard(HttpRequest *req, void *userdata)
{
    _cleanup_error_ Error *err = NULL;
    ApiReq a = {.e = userdata, .req = req};

    if (!http_request_has_body(req))
        return true; /* the head is all there is: the handler checks it */
    (void) api_req_admit(&a, &err);
    http_strv_free(a.seg);
    if (!err)
        return true;
    reply_error(&a, err);
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
        reply_error(&a, err);
    else if (!r)
        reply_status(&a, 404, "no such endpoint in Stockade's E2B API");
    else
        r->fn(&a);
    http_strv_free(a.seg);
    json_decref(a.body);
}
