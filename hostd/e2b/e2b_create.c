/* Sandbox create (POST /v2/sandboxes, v1 POST /sandboxes): the handler hands it to the loop
 * and returns. On the loop: the session is admitted and made, then watched (sessions_watch(),
 * a timer at the end of [e2b] create_wait_s) until it runs (start its E2B timeout, answer
 * 201), ends first (cancel, 503 for no_capacity, else 502), or the wait runs out (cancel,
 * 503). The sandbox's E2B timeout is the session's timer (sessions_set_timeout()),
 * inside the lifetime admitted and reserved for it ([e2b] lifetime_s): Stockade's own quota
 * and ledger decide, and extensions never outlive what the tenant was charged for. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "e2b_internal.h"
#include "loop.h"
#include "store_tenants.h"

#define CREATE_WAIT_OVER                                                                           \
    "no guest was ready within the create wait (the pool may be refilling): retry"

typedef struct CreateCall {
    E2bCall c;
    /* in */
    char tenant[STORE_ID_MAX_BYTES];
    char template_id[E2B_TEMPLATE_NAME_MAX_BYTES + 1];
    char pool[E2B_POOL_NAME_MAX_BYTES + 1];
    uint64_t lifetime_usec, timeout_usec;
    uint64_t deadline_usec; /* monotonic: the create wait's end, from the request */
    EnvPair *env;
    size_t n_env;
    json_t *metadata;
    /* loop thread, while the session starts */
    char session_id[E2B_SESSION_ID_BYTES];
    SessionsWatch *watch; /* its state changes */
    TimerId timer;
    atomic_bool waiting; /* the session exists: a stop answers CREATE_WAIT_OVER */
    /* out */
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
    const PoolShapeStatus *sh = pool_status_shape(&st, pool);
    if (!sh)
        return -1;
    *ret_vcpus = sh->vcpus;
    *ret_mib = sh->memory_mib;
    return 0;
}

/* ------------------------------------------------------------------ on the loop */

/* The session runs: its E2B timeout starts, the sandbox is listed, the answer is ready. */
static int
create_activate(CreateCall *cc, Error **errp)
{
    E2b *e = cc->c.e;
    char id[E2B_SANDBOX_ID_BYTES];
    uint64_t left = 0, t = cc->timeout_usec;
    E2bSandbox *sb =
        e2b_sandbox_id_from_session(cc->session_id, id) == 0 ? e2b_sandbox_find(e, id) : NULL;

    if (!sb || sessions_timeout_left(e->d.sessions, NULL, cc->session_id, &left, errp) < 0 ||
        sessions_set_timeout(e->d.sessions, NULL, cc->session_id, MIN(t, left), errp) < 0)
        return sb ? -1 : error_set(errp, E_GUEST, 0, "the sandbox ended while it started");
    sb->active = true;
    sb->started_usec = (int64_t) wall_usec();
    sb->end_usec = sb->started_usec + (int64_t) MIN(t, left);
    E2bSandboxView v;
    e2b_sandbox_view(e, sb, &v);
    cc->answer = e2b_render_sandbox(&v);
    return 0;
}

/* Stops watching; on err cancels the session and forgets the sandbox; then the answer. */
static void
create_end(CreateCall *cc, const Error *err)
{
    E2b *e = cc->c.e;
    char id[E2B_SANDBOX_ID_BYTES];

    sessions_unwatch(e->d.sessions, TAKE_PTR(cc->watch));
    loop_cancel_timer(e->d.loop, cc->timer);
    if (err) {
        (void) sessions_cancel(e->d.sessions, NULL, cc->session_id, NULL);
        E2bSandbox *sb =
            e2b_sandbox_id_from_session(cc->session_id, id) == 0 ? e2b_sandbox_find(e, id) : NULL;
        if (sb)
            e2b_sandbox_remove(e, sb);
    }
    e2b_call_done(&cc->c, err);
}

/* Where the session is: running (answer), still starting (wait on), or over (why). */
static void
create_check(CreateCall *cc)
{
    _cleanup_error_ Error *err = NULL;
    SessionEndReason reason;
    SessionState st;

    if (sessions_state_of(cc->c.e->d.sessions, cc->session_id, &st, &reason, &err) == 0) {
        if (st == ST_PENDING || st == ST_STARTING)
            return;
        if (st == ST_RUNNING)
            (void) create_activate(cc, &err);
        else
            error_set(&err, reason == SESSION_END_NO_CAPACITY ? E_UNAVAILABLE : E_GUEST, 0,
                      "the sandbox's guest did not start (%s)",
                      reason != SESSION_END_NONE ? session_end_reason_name(reason) : "stopped");
    }
    create_end(cc, err);
}

static void
create_on_change(void *userdata, const SessionsChange *change)
{
    (void) change; /* create_check() reads where the session is now */
    create_check(userdata);
}

static void
create_on_deadline(Loop *l, void *userdata)
{
    CreateCall *cc = userdata;
    Error err = {.category = E_UNAVAILABLE};
    (void) l;
    cc->timer = 0;
    snprintf(err.message, sizeof(err.message), CREATE_WAIT_OVER);
    create_end(cc, &err);
}

static int
create_watch(CreateCall *cc, Error **errp)
{
    E2b *e = cc->c.e;
    if (sessions_watch(e->d.sessions, cc->session_id, create_on_change, cc, &cc->watch, errp) < 0)
        return -1;
    cc->timer = loop_add_timer(e->d.loop, cc->deadline_usec, create_on_deadline, cc);
    atomic_store(&cc->waiting, true);
    return 0;
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
        if (create_watch(cc, &err) == 0) {
            create_check(cc);
            return;
        }
        create_end(cc, err);
        return;
    }
    e2b_call_done(c, err);
}

/* ------------------------------------------------------------------ the request */

/* The lifetime to admit: what the tenant's quota and the server allow, up to [e2b]
 * lifetime_s, and never less than the timeout asked (admission refuses that if too long). */
static uint64_t
create_lifetime(E2b *e, const char *tenant, uint64_t timeout_s)
{
    AdmitQuota q;
    uint64_t life_s = e->cfg.lifetime_usec / USEC_PER_SEC;
    Store *s = store_reader_acquire(e->d.readers);
    if (store_quota_get(s, tenant, e->d.default_quota, &q, NULL) == 0)
        life_s = MIN(life_s, q.max_timeout_s);
    store_reader_release(e->d.readers, s);
    life_s = MIN(life_s, e->d.max_timeout_usec / USEC_PER_SEC);
    return MAX(life_s, timeout_s) * USEC_PER_SEC;
}

static int
create_fill(E2b *e, const char *tenant, const E2bNewSandbox *n, CreateCall *cc, Error **errp)
{
    const char *pool = e2b_config_template_pool(&e->cfg, n->template_id);
    const char *k;
    json_t *v;

    snprintf(cc->tenant, sizeof(cc->tenant), "%s", tenant);
    snprintf(cc->template_id, sizeof(cc->template_id), "%s", n->template_id);
    if (strlen(pool ? pool : n->template_id) > E2B_POOL_NAME_MAX_BYTES)
        return error_set(errp, E_INVALID, 0,
                         "template '%s' is not known here: name a pool, or "
                         "map it with [e2b] template_map",
                         n->template_id);
    snprintf(cc->pool, sizeof(cc->pool), "%s", pool ? pool : n->template_id);
    uint64_t t = n->timeout_s ? n->timeout_s : E2B_DEFAULT_TIMEOUT_S;
    cc->timeout_usec = t * USEC_PER_SEC;
    cc->lifetime_usec = create_lifetime(e, tenant, t);
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
reply_create_error(HttpRequest *req, const AdmitRefusal *refusal, const Error *err)
{
    char retry[24], msg[ERROR_MESSAGE_MAX + 128];
    if (err->category != E_QUOTA) {
        e2b_files_error(req, err); /* {"code": <status>, "message"} */
        return;
    }
    if (refusal->retry_after_s >= 0) {
        snprintf(retry, sizeof(retry), "%lld", (long long) refusal->retry_after_s);
        http_response_header(req, "Retry-After", retry);
        snprintf(msg, sizeof(msg), "%s: this tenant's Stockade quota; it may pass in %lld s",
                 err->message, (long long) refusal->retry_after_s);
    } else {
        snprintf(msg, sizeof(msg),
                 "%s: this tenant's Stockade quota; only an operator can "
                 "raise it",
                 err->message);
    }
    http_respond_json(req, 429, e2b_render_api_error(429, msg));
}

static void
create_reply(E2bCall *c, HttpRequest *req, const Error *err)
{
    CreateCall *cc = (CreateCall *) c;
    Error over = {.category = E_UNAVAILABLE};

    if (!err) {
        http_respond_json(req, 201, TAKE_PTR(cc->answer));
        return;
    }
    if (err->category == E_UNAVAILABLE && atomic_load(&cc->waiting)) {
        snprintf(over.message, sizeof(over.message), CREATE_WAIT_OVER); /* as the wait's end */
        err = &over;
    }
    reply_create_error(req, &cc->refusal, err);
}

void
e2b_create(E2b *e, HttpRequest *req, const char *tenant, json_t *body, bool v2)
{
    _cleanup_error_ Error *err = NULL;
    E2bNewSandbox n;
    CreateCall *cc = e2b_call_new(sizeof(*cc), create_call_free);

    if (!cc || e2b_parse_new_sandbox(body, v2, &n, &err) < 0 ||
        create_fill(e, tenant, &n, cc, &err) < 0) {
        if (!err)
            error_set(&err, E_INTERNAL, ENOMEM, "create");
        reply_create_error(req, cc ? &cc->refusal : &(AdmitRefusal){0}, err);
        e2b_call_unref(cc ? &cc->c : NULL);
        return;
    }
    cc->deadline_usec = now_usec() + e->cfg.create_wait_usec;
    /* The loop's own timer ends the wait; the layer's timeout is only a backstop. */
    e2b_post(e, req, &cc->c, create_on_loop, create_reply,
             e->cfg.create_wait_usec + E2B_CALL_TIMEOUT_USEC);
}

/* ------------------------------------------------------------------ template aliases */

/* GET /templates/aliases/{alias} (the SDK's Template.exists(), aliasExists()). E2B's API
 * (e2b-dev/infra packages/api/internal/handlers/template_alias.go, GetTemplatesAliasesAlias)
 * answers 200 {templateID, public} only to the team that owns the alias, 403 "You don't have
 * access to this template alias" to every other team (its public templates, `base` among
 * them, are E2B's own), and 404 "template '<alias>' not found" (cache/templates/errors.go)
 * when there is none. Here every template is the operator's, never a tenant's: one that
 * create accepts (mapped, or a pool's name) is 403, any other 404; the SDK reads both as E2B's
 * (buildApi.ts checkAliasExists(): 403 exists, 404 does not). */
typedef struct AliasCall {
    E2bCall c;
    char alias[E2B_TEMPLATE_NAME_MAX_BYTES + 1];
    bool too_long, known;
} AliasCall;

static void
alias_on_loop(E2bCall *c)
{
    AliasCall *ac = (AliasCall *) c;
    const char *pool = e2b_config_template_pool(&c->e->cfg, ac->alias);
    unsigned vcpus, mib;
    ac->known = !ac->too_long && pool_shape(c->e, pool ? pool : ac->alias, &vcpus, &mib) == 0;
    e2b_call_done(c, NULL);
}

static void
alias_reply(E2bCall *c, HttpRequest *req, const Error *err)
{
    AliasCall *ac = (AliasCall *) c;
    unsigned status = err ? http_status_for_category(err->category) : ac->known ? 403 : 404;
    char msg[ERROR_MESSAGE_MAX];

    if (err)
        snprintf(msg, sizeof(msg), "%s", err->message);
    else if (ac->known)
        snprintf(msg, sizeof(msg), "You don't have access to this template alias");
    else
        snprintf(msg, sizeof(msg), "template '%s%s' not found", ac->alias,
                 ac->too_long ? "..." : "");
    http_respond_json(req, status,
                      json_pack("{s:I,s:o}", "code", (json_int_t) status, "message",
                                e2b_json_string_lossy(msg, strlen(msg))));
}

void
e2b_template_alias(E2b *e, HttpRequest *req, const char *alias)
{
    AliasCall *ac = e2b_call_new(sizeof(*ac), NULL);
    if (!ac) {
        http_respond_json(req, 500, e2b_render_api_error(500, "out of memory"));
        return;
    }
    ac->too_long = strlen(alias) > E2B_TEMPLATE_NAME_MAX_BYTES;
    snprintf(ac->alias, sizeof(ac->alias), "%s", alias);
    e2b_post(e, req, &ac->c, alias_on_loop, alias_reply, E2B_CALL_TIMEOUT_USEC);
}
