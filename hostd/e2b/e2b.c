/* The module: listeners, loop calls (posted: the loop answers; or waited for, bounded, where
 * the caller needs the result), and the loop thread's tables of sandboxes and processes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "e2b_internal.h"
#include "loop.h"
#include "sha256.h"
#include "timeutil.h"

/* ------------------------------------------------------------------ loop calls */

void *
e2b_call_new(size_t size, void (*free_fn)(E2bCall *c))
{
    E2bCall *c = calloc(1, size);
    if (c)
        c->free_fn = free_fn;
    return c;
}

static void
call_trampoline(void *userdata)
{
    E2bCall *c = userdata;
    E2b *e = c->e;
    pthread_mutex_lock(&e->lock);
    bool cancelled = c->cancelled;
    c->started = c->running = !cancelled;
    if (!cancelled)
        c->refs++; /* fn may complete the call, and its waiter free it, before fn returns */
    pthread_mutex_unlock(&e->lock);
    if (cancelled) { /* its waiter gave up before it began: it never runs */
        e2b_call_done(c, NULL);
        return;
    }
    c->fn(c);
    pthread_mutex_lock(&e->lock);
    c->running = false;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    e2b_call_unref(c);
}

static bool
e2b_is_stopping(E2b *e)
{
    pthread_mutex_lock(&e->lock);
    bool r = e->stopping;
    pthread_mutex_unlock(&e->lock);
    return r;
}

int
e2b_call(E2b *e, E2bCall *c, E2bCallFn fn, uint64_t timeout_usec, Error **errp)
{
    uint64_t deadline = now_usec() + timeout_usec;
    struct timespec ts = {.tv_sec = (time_t) (deadline / USEC_PER_SEC),
                          .tv_nsec = (long) (deadline % USEC_PER_SEC) * 1000};
    bool timed_out = false;

    c->e = e;
    c->fn = fn;
    c->refs = 2;
    if (e2b_is_stopping(e) || loop_post(e->d.loop, call_trampoline, c) < 0) {
        c->refs = 1;
        return error_set(errp, E_UNAVAILABLE, 0, "the daemon is stopping or overloaded");
    }
    pthread_mutex_lock(&e->lock);
    while (!c->done && !e->stopping && !timed_out)
        timed_out = pthread_cond_timedwait(&e->cond, &e->lock, &ts) != 0;
    bool done = c->done;
    Error *err = c->err;
    c->cancelled = !done && !c->started;
    while (!done && c->running) /* fn is on the loop right now: it reads our inputs */
        pthread_cond_wait(&e->cond, &e->lock);
    pthread_mutex_unlock(&e->lock);
    if (!done)
        return error_set(errp, timed_out ? E_TIMEOUT : E_UNAVAILABLE, 0,
                         timed_out ? "the sandbox did not answer in time"
                                   : "the daemon is stopping");
    if (err)
        return error_set(errp, err->category, 0, "%s", err->message);
    return 0;
}

static void
post_trampoline(HttpLoopCall *hl, void *ctx)
{
    E2bCall *c = ctx;
    c->hl = hl;
    c->fn(c);
}

static void
post_failed(HttpRequest *req, const Error *err, void *ctx)
{
    E2bCall *c = ctx;
    c->reply(c, req, err);
}

static void
post_free(void *ctx)
{
    e2b_call_unref(ctx);
}

void
e2b_post(E2b *e, HttpRequest *req, E2bCall *c, E2bCallFn fn, E2bReplyFn reply,
         uint64_t timeout_usec)
{
    c->e = e;
    c->fn = fn;
    c->reply = reply;
    c->refs = 1; /* the loop call's (post_free) */
    http_loop_post(req, &(HttpLoopSpec){.loop = e->d.loop,
                                        .fn = post_trampoline,
                                        .fail = post_failed,
                                        .ctx = c,
                                        .free_ctx = post_free,
                                        .timeout_usec = timeout_usec,
                                        .timeout_message = "the sandbox did not answer in time",
                                        .stop_answers = true});
}

/* A posted call's end: the loop answers unless the layer did already. */
static void
post_done(E2bCall *c, const Error *err)
{
    HttpLoopCall *hl = TAKE_PTR(c->hl);
    HttpRequest *req = http_loop_claim(hl);
    if (req)
        c->reply(c, req, err);
    http_loop_release(hl); /* may free c */
}

void
e2b_call_done(E2bCall *c, const Error *err)
{
    E2b *e = c->e;
    if (c->reply) {
        post_done(c, err);
        return;
    }
    pthread_mutex_lock(&e->lock);
    if (!c->done) {
        c->done = true;
        if (err)
            error_set(&c->err, err->category, 0, "%s", err->message);
    }
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    e2b_call_unref(c);
}

void
e2b_call_unref(E2bCall *c)
{
    unsigned left = 0;
    if (!c)
        return;
    if (c->e) { /* else it was never handed to e2b_call(): only its creator holds it */
        pthread_mutex_lock(&c->e->lock);
        left = --c->refs;
        pthread_mutex_unlock(&c->e->lock);
    }
    if (left > 0)
        return;
    if (c->free_fn)
        c->free_fn(c);
    error_free(c->err);
    free(c);
}

/* ------------------------------------------------------------------ sandboxes */

static void
proc_free(E2bProc *p)
{
    free(p->tag);
    json_decref(p->config);
    free(p);
}

static void
sandbox_free(E2bSandbox *sb)
{
    while (sb->procs) {
        E2bProc *p = sb->procs;
        sb->procs = p->next;
        proc_free(p);
    }
    explicit_bzero(sb->token, sizeof(sb->token));
    json_decref(sb->metadata);
    free(sb);
}

E2bSandbox *
e2b_sandbox_find(E2b *e, const char *id)
{
    for (E2bSandbox *sb = e->sandboxes; sb; sb = sb->next)
        if (strcmp(sb->id, id) == 0)
            return sb;
    return NULL;
}

void
e2b_sandbox_remove(E2b *e, E2bSandbox *sb)
{
    for (E2bSandbox **pp = &e->sandboxes; *pp; pp = &(*pp)->next)
        if (*pp == sb) {
            *pp = sb->next;
            e->n_sandboxes--;
            sandbox_free(sb);
            return;
        }
}

void
e2b_sandboxes_sweep(E2b *e)
{
    for (E2bSandbox **pp = &e->sandboxes; *pp;) {
        E2bSandbox *sb = *pp;
        if (sessions_is_live(e->d.sessions, NULL, sb->session_id)) {
            pp = &sb->next;
            continue;
        }
        *pp = sb->next;
        e->n_sandboxes--;
        sandbox_free(sb);
    }
}

E2bSandbox *
e2b_sandbox_running(E2b *e, const char *id, const char *tenant, Error **errp)
{
    E2bSandbox *sb = e2b_sandbox_id_is_valid(id) ? e2b_sandbox_find(e, id) : NULL;
    if (sb && (tenant && strcmp(sb->tenant, tenant) != 0))
        sb = NULL; /* another tenant's: not found, never forbidden */
    if (sb && !sessions_is_running(e->d.sessions, NULL, sb->session_id)) {
        if (!sessions_is_live(e->d.sessions, NULL, sb->session_id))
            e2b_sandbox_remove(e, sb);
        sb = NULL;
    }
    if (!sb || !sb->active) {
        error_set(errp, E_NOT_FOUND, 0,
                  "sandbox %.40s not found (never made here, killed, or "
                  "timed out)",
                  id);
        return NULL;
    }
    return sb;
}

int
e2b_sandbox_add(E2b *e, const char *session_id, const char *tenant, const char *template_id,
                json_t *metadata, E2bSandbox **ret, Error **errp)
{
    uint8_t secret[E2B_TOKEN_RANDOM_BYTES];
    E2bSandbox *sb;

    if (e->n_sandboxes >= E2B_SANDBOXES_MAX)
        e2b_sandboxes_sweep(e);
    if (e->n_sandboxes >= E2B_SANDBOXES_MAX)
        return error_set(errp, E_UNAVAILABLE, 0, "%d sandboxes are live", E2B_SANDBOXES_MAX);
    if (!(sb = calloc(1, sizeof(*sb))) ||
        !(sb->metadata = metadata ? json_deep_copy(metadata) : json_object())) {
        free(sb);
        return error_set(errp, E_INTERNAL, ENOMEM, "sandbox");
    }
    if (e2b_sandbox_id_from_session(session_id, sb->id) < 0 ||
        (!e->d.envd_keys && getrandom(secret, sizeof(secret), 0) != (ssize_t) sizeof(secret))) {
        sandbox_free(sb);
        return error_set(errp, E_INTERNAL, errno, "sandbox id or token");
    }
    if (e->d.envd_keys) { /* cluster mode: any host can check it (e2b_cluster.c) */
        uint8_t keys[E2B_ENVD_KEYS_MAX][E2B_ENVD_KEY_BYTES];
        size_t n = e->d.envd_keys(e->d.cluster_userdata, keys);
        int r = n > 0 ? e2b_envd_token_for(keys[0], sb->id, sb->token, errp)
                      : error_set(errp, E_INTERNAL, 0, "no envd key");
        explicit_bzero(keys, sizeof(keys));
        if (r < 0) {
            sandbox_free(sb);
            return -1;
        }
    } else {
        hex_encode(secret, sizeof(secret), sb->token);
    }
    explicit_bzero(secret, sizeof(secret));
    snprintf(sb->session_id, sizeof(sb->session_id), "%s", session_id);
    snprintf(sb->tenant, sizeof(sb->tenant), "%s", tenant);
    snprintf(sb->template_id, sizeof(sb->template_id), "%s", template_id);
    sb->next = e->sandboxes;
    e->sandboxes = sb;
    e->n_sandboxes++;
    *ret = sb;
    return 0;
}

void
e2b_sandbox_view(E2b *e, const E2bSandbox *sb, E2bSandboxView *ret)
{
    *ret = (E2bSandboxView){.id = sb->id,
                            .template_id = sb->template_id,
                            .token = sb->token,
                            .domain = e->cfg.domain,
                            .metadata = sb->metadata,
                            .started_usec = sb->started_usec,
                            .end_usec = sb->end_usec,
                            .vcpus = sb->vcpus,
                            .memory_mib = sb->memory_mib,
                            .disk_mib = e->d.workspace_mib};
}

/* ------------------------------------------------------------------ processes */

/* Forgets the processes that finished, oldest first, until there is room for one more. */
static void
procs_make_room(E2b *e, E2bSandbox *sb)
{
    for (E2bProc **pp = &sb->procs; *pp && sb->n_procs >= E2B_PROCS_MAX;) {
        SessionsExecState st;
        E2bProc *p = *pp;
        if (sessions_exec_state(e->d.sessions, NULL, sb->session_id, p->pid, &st, NULL) == 0 &&
            st != SESSIONS_EXEC_DONE) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        sb->n_procs--;
        proc_free(p);
    }
}

int
e2b_proc_add(E2b *e, E2bSandbox *sb, uint32_t pid, const char *tag, json_t *config, Error **errp)
{
    E2bProc *p = calloc(1, sizeof(*p)), **tail;
    if (!p || (tag && !(p->tag = strdup(tag)))) {
        free(p);
        json_decref(config);
        return error_set(errp, E_INTERNAL, ENOMEM, "process");
    }
    p->pid = pid;
    p->config = config;
    procs_make_room(e, sb);
    for (tail = &sb->procs; *tail; tail = &(*tail)->next)
        ; /* oldest first: appended */
    *tail = p;
    sb->n_procs++;
    return 0;
}

E2bProc *
e2b_proc_find(E2bSandbox *sb, const E2bSelector *sel)
{
    E2bProc *found = NULL;
    for (E2bProc *p = sb->procs; p; p = p->next)
        if (sel->tag ? (p->tag && strcmp(p->tag, sel->tag) == 0) : p->pid == sel->pid)
            found = p; /* the newest with that tag */
    return found;
}

/* ------------------------------------------------------------------ life cycle */

static int
listen_on(E2b *e, unsigned port, size_t max_body, unsigned max_per_ip, HttpHandler handler,
          HttpGuard guard, HttpServer **ret, Error **errp)
{
    HttpConfig hc;
    http_config_defaults(&hc);
    hc.tcp_address = e->cfg.address;
    hc.tcp_port = (uint16_t) port;
    hc.unix_path = NULL;
    hc.max_body_bytes = max_body;
    hc.max_per_ip = max_per_ip;
    hc.body_budget = e->d.body_budget;
    hc.spool_dir = e->d.spool_dir;
    hc.guard = guard;
    hc.authenticate = e->d.authenticate;
    hc.authenticate_userdata = e->d.authenticate_userdata;
    hc.tls_cert_file = e->cfg.tls_cert[0] ? e->cfg.tls_cert : NULL;
    hc.tls_key_file = e->cfg.tls_key[0] ? e->cfg.tls_key : NULL;
    if (http_server_start(&hc, handler, e, ret, errp) < 0)
        return error_prefix(errp, "e2b listener on %s port %u", e->cfg.address, port);
    return 0;
}

int
e2b_start(const E2bDeps *deps, const E2bConfig *cfg, E2b **ret, Error **errp)
{
    if (deps->owner && !deps->envd_keys) /* another host's envd tokens could not be checked */
        return error_set(errp, E_INVALID, 0, "e2b: cluster mode without the host credential");
    E2b *e = calloc(1, sizeof(*e));
    if (!e)
        return error_set(errp, E_INTERNAL, ENOMEM, "e2b");
    e->d = *deps;
    e->cfg = *cfg;
    pthread_mutex_init(&e->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (listen_on(e, cfg->api_port, E2B_API_MAX_BODY_BYTES, HTTP_DEFAULT_MAX_PER_IP, e2b_api_handle,
                  e2b_api_guard, &e->api, errp) < 0 ||
        listen_on(e, cfg->envd_port, E2B_ENVD_MAX_BODY_BYTES, E2B_ENVD_MAX_PER_IP, e2b_envd_handle,
                  e2b_envd_guard, &e->envd, errp) < 0) {
        e2b_stop(e);
        return -1;
    }
    *ret = e;
    return 0;
}

void
e2b_face(const E2b *e, bool envd, E2bFace *ret)
{
    (void) e; /* the handlers' userdata is e itself */
    *ret = envd ? (E2bFace){.guard = e2b_envd_guard,
                            .handler = e2b_envd_handle,
                            .max_body_bytes = E2B_ENVD_MAX_BODY_BYTES}
                : (E2bFace){.guard = e2b_api_guard,
                            .handler = e2b_api_handle,
                            .max_body_bytes = E2B_API_MAX_BODY_BYTES};
}

unsigned
e2b_api_port(const E2b *e)
{
    return http_server_tcp_port(e->api);
}

unsigned
e2b_envd_port(const E2b *e)
{
    return http_server_tcp_port(e->envd);
}

bool
e2b_tls(const E2b *e)
{
    return http_server_tls(e->api) && http_server_tls(e->envd);
}

unsigned
e2b_handlers_running(const E2b *e)
{
    return e ? http_server_handlers_running(e->api) + http_server_handlers_running(e->envd) : 0;
}

void
e2b_stop(E2b *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->stopping = true;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    http_server_stop(e->api);
    http_server_stop(e->envd);
    while (e->sandboxes) {
        E2bSandbox *sb = e->sandboxes;
        e->sandboxes = sb->next;
        sandbox_free(sb);
    }
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
    free(e);
}
