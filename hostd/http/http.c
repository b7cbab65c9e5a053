/* The HTTP server: two libmicrohttpd daemons (TCP and unix socket) in thread-per-connection
 * mode sharing one handler, and the request flow through MHD's callbacks:
 *   URI log   the request line is in: make the HttpRequest (raw, undecoded target);
 *   access #1 the head is in: method, target and size checks; an error is answered at once
 *             ("early": MHD then reads no body and closes after the answer);
 *   access #n body chunks, appended within the cap;
 *   access    the last call: deadline off, the handler runs, and this connection thread
 *             sleeps on the request's condition variable until the handler answers (from
 *             any thread). MHD's manual prescribes exactly this for thread-per-connection
 *             mode ("applications can simply deal with this by performing their logic
 *             within the thread"); suspend/resume is not available in that mode.
 *   completed the answer is sent (or the connection died): drop the connection's reference
 *             and re-arm the deadline for the next request on a kept-alive connection.
 * Why thread-per-connection rather than one polling thread with suspend/resume: a streaming
 * producer may then block in poll() on its own fd, and a handler's late answer needs no
 * resume plumbing; the price, a thread per connection, is bounded by max_connections.
 * Limits and deadlines: see http.h and README.md. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>

#include "http_internal.h"

/* What MHD says when a daemon fails to start; kept for the start error only. */
#define HTTP_START_LOG_BYTES 256
static _Thread_local char start_log[HTTP_START_LOG_BYTES];

/* Each connection MHD serves holds two descriptors (MHD's socket and the watchdog's dup),
 * each one waiting for its head one. Running out would refuse connections under load, far
 * from the cause: refuse the config up front. The daemon raises its soft RLIMIT_NOFILE to
 * the hard limit at startup. */
static int
fd_budget_check(const HttpConfig *c, Error **errp)
{
    struct rlimit rl;
    rlim_t need = (rlim_t) HTTP_FDS_PER_CONNECTION * c->max_connections +
                  (c->tcp_address ? c->max_pending : 0) + HTTP_FD_RESERVE;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return error_set(errp, E_INTERNAL, errno, "getrlimit");
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
        return error_set(errp, E_INVALID, 0,
                         "http: %u connections and %u waiting heads need %llu descriptors but "
                         "RLIMIT_NOFILE is %llu: raise it or lower max_connections/max_pending",
                         c->max_connections, c->tcp_address ? c->max_pending : 0,
                         (unsigned long long) need, (unsigned long long) rl.rlim_cur);
    return 0;
}

static int
config_check(const HttpConfig *c, Error **errp)
{
    if (!c->tcp_address && !c->unix_path)
        return error_set(errp, E_INVALID, 0, "http: neither a TCP address nor a unix path");
    if (c->max_body_bytes > HTTP_MAX_BODY_BYTES_CEILING)
        return error_set(errp, E_INVALID, 0, "http: max body over %zu bytes",
                         HTTP_MAX_BODY_BYTES_CEILING);
    if (c->max_header_bytes < HTTP_MAX_HEADER_BYTES_FLOOR ||
        c->max_header_bytes > HTTP_MAX_HEADER_BYTES_CEILING)
        return error_set(errp, E_INVALID, 0, "http: max header bytes out of [%zu, %zu]",
                         HTTP_MAX_HEADER_BYTES_FLOOR, HTTP_MAX_HEADER_BYTES_CEILING);
    if (c->idle_timeout_s == 0 || c->idle_timeout_s > HTTP_TIMEOUT_S_CEILING ||
        c->request_timeout_s == 0 || c->request_timeout_s > HTTP_TIMEOUT_S_CEILING)
        return error_set(errp, E_INVALID, 0, "http: timeouts must be in [1, %u] s",
                         HTTP_TIMEOUT_S_CEILING);
    if (c->max_connections == 0 || c->max_connections > HTTP_MAX_CONNECTIONS_CEILING ||
        c->max_per_ip == 0 || c->max_pending == 0 || c->max_pending > HTTP_MAX_PENDING_CEILING)
        return error_set(errp, E_INVALID, 0, "http: connection limits out of range");
    if (c->head_timeout_s == 0 || c->head_timeout_s > HTTP_TIMEOUT_S_CEILING)
        return error_set(errp, E_INVALID, 0, "http: head timeout must be in [1, %u] s",
                         HTTP_TIMEOUT_S_CEILING);
    if (c->max_per_caller > c->max_connections)
        return error_set(errp, E_INVALID, 0, "http: max_per_caller (%u) is over max_connections",
                         c->max_per_caller);
    if (!c->body_budget && http_budget_check(c, errp) < 0)
        return -1;
    if (c->body_budget && http_budget_share(c->body_budget) < c->max_body_bytes)
        return error_set(errp, E_INVALID, 0,
                         "http: one caller's share of the shared body budget (%zu bytes) does "
                         "not hold one largest body (%zu)",
                         http_budget_share(c->body_budget), c->max_body_bytes);
    if (c->unix_mode & ~(mode_t) 0777)
        return error_set(errp, E_INVALID, 0, "http: unix mode %o is not a permission mode",
                         (unsigned) c->unix_mode);
    return fd_budget_check(c, errp);
}

static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
    HttpListener *l = cls;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    HttpConn *c = info ? info->socket_context : NULL;

    /* NULL (no tracked connection, or OOM) makes the access handler refuse the request. */
    return c && uri ? http_request_new(l->srv, c, uri) : NULL;
}

static void
on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
             enum MHD_RequestTerminationCode toe)
{
    HttpRequest *r = *con_cls;

    (void) cls;
    (void) mc;
    (void) toe;
    if (!r)
        return;
    *con_cls = NULL;
    /* A kept-alive connection's next request gets a fresh absolute deadline. */
    http_conn_set_deadline(r->conn, true);
    http_conn_watch_body(r->conn, false);
    if (r->active) {
        HttpServer *s = r->srv;
        pthread_mutex_lock(&s->lock);
        if (--s->n_active == 0)
            pthread_cond_broadcast(&s->drain_cond);
        pthread_mutex_unlock(&s->lock);
    }
    http_request_unref(r);
}

static void
waiting_link(HttpServer *s, HttpRequest *r, bool on)
{
    pthread_mutex_lock(&s->lock);
    if (on && r->active)
        s->n_active++;
    if (on) {
        r->wait_prev = NULL;
        r->wait_next = s->waiting;
        if (s->waiting)
            s->waiting->wait_prev = r;
        s->waiting = r;
    } else {
        if (r->wait_prev)
            r->wait_prev->wait_next = r->wait_next;
        else
            s->waiting = r->wait_next;
        if (r->wait_next)
            r->wait_next->wait_prev = r->wait_prev;
    }
    pthread_mutex_unlock(&s->lock);
}

/* A loop call (http_loop_post()) whose timeout passed, or that answers a stop itself: its
 * front door answers now, unless the loop claimed the request first (then its answer is
 * near). Called with r->lock held, released meanwhile. True if it was time. */
static bool
request_expire(HttpRequest *r, bool *expired)
{
    HttpLoopCall *c = r->loop_call; /* ours until http_loop_detach() */
    if (!c || *expired)
        return false;
    bool stop = atomic_load(&r->srv->stopping) && http_loop_answers_stop(c);
    uint64_t deadline = http_loop_deadline(c);
    if (!stop && (deadline == 0 || now_usec() < deadline))
        return false;
    *expired = true;
    pthread_mutex_unlock(&r->lock);
    http_loop_expire(c, stop);
    pthread_mutex_lock(&r->lock);
    return true;
}

/* Sleeps until the handler answered (or its loop call's timeout made its front door answer);
 * once the server stops, for HTTP_STOP_GRACE_USEC more at most. Returns whether it answered
 * (if not, the reply stays the handler's). */
static bool
request_wait(HttpRequest *r)
{
    uint64_t grace_end = 0;
    bool answered, expired = false;

    pthread_mutex_lock(&r->lock);
    while (!r->answered) {
        if (request_expire(r, &expired))
            continue;
        uint64_t until = !expired && r->loop_call ? http_loop_deadline(r->loop_call) : 0;
        if (atomic_load(&r->srv->stopping)) {
            if (grace_end == 0)
                grace_end = now_usec() + HTTP_STOP_GRACE_USEC;
            if (now_usec() >= grace_end)
                break;
            until = until ? MIN(until, grace_end) : grace_end;
        }
        if (until == 0) {
            pthread_cond_wait(&r->cond, &r->lock);
            continue;
        }
        struct timespec ts = {.tv_sec = (time_t) (until / USEC_PER_SEC),
                              .tv_nsec = (long) (until % USEC_PER_SEC * NSEC_PER_USEC)};
        (void) pthread_cond_timedwait(&r->cond, &r->lock, &ts);
    }
    answered = r->answered;
    pthread_mutex_unlock(&r->lock);
    return answered;
}

/* One more answered request under its route class (the face's classifier, on the decoded
 * path) and its status's hundred. */
static void
request_count(HttpServer *s, const HttpRequest *r, unsigned status)
{
    unsigned cls = 0, hundred = status / 100;
    if (s->cfg.route_class)
        cls = s->cfg.route_class((const char *const *) r->target.segments, r->target.n_segments);
    if (cls >= HTTP_ROUTE_CLASSES_MAX)
        cls = 0;
    if (hundred >= HTTP_STATUS_CLASSES)
        hundred = 0;
    atomic_fetch_add_explicit(&s->requests[cls][hundred], 1, memory_order_relaxed);
}

uint64_t
http_server_requests(HttpServer *s, unsigned route_class, unsigned status_class)
{
    if (route_class >= HTTP_ROUTE_CLASSES_MAX || status_class >= HTTP_STATUS_CLASSES)
        return 0;
    return atomic_load_explicit(&s->requests[route_class][status_class], memory_order_relaxed);
}

/* The whole request is in: run the handler and queue its answer. */
static enum MHD_Result
request_dispatch(HttpRequest *r, struct MHD_Connection *mc)
{
    HttpServer *s = r->srv;
    HttpReply stop_reply = {.fd = -1};
    enum MHD_Result ret;

    http_conn_set_deadline(r->conn, false);
    http_conn_watch_body(r->conn, false);
    r->phase = PHASE_HANDLING;
    /* MHD would count the handler's time as idleness and close on return; 0 turns that off
     * and setting it back restarts the idle clock (MHD_set_connection_option()). */
    (void) MHD_set_connection_option(mc, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    pthread_mutex_lock(&r->lock);
    r->refs++; /* the handler's, dropped by its http_respond_*() */
    pthread_mutex_unlock(&r->lock);
    r->active = true;
    waiting_link(s, r, true);
    atomic_fetch_add(&s->in_handler, 1);
    s->handler(r, s->userdata);
    atomic_fetch_sub(&s->in_handler, 1);
    bool answered = request_wait(r);
    http_loop_detach(r);
    waiting_link(s, r, false);
    (void) MHD_set_connection_option(mc, MHD_CONNECTION_OPTION_TIMEOUT, s->cfg.idle_timeout_s);
    r->phase = PHASE_DONE;
    /* A caller the guard did not name (a public route: health) is not kept alive: idle, its
     * connection would hold a thread for idle_timeout_s, counted only per address. */
    if (answered && s->cfg.guard && !r->caller_named)
        r->reply.close = true;
    if (answered) {
        request_count(s, r, r->reply.status);
        return http_reply_queue(s, &r->reply, mc);
    }

    Error e = {.category = E_UNAVAILABLE};
    snprintf(e.message, sizeof(e.message), "the server is shutting down");
    http_reply_set_error(&stop_reply, MHD_HTTP_SERVICE_UNAVAILABLE, &e);
    request_count(s, r, stop_reply.status);
    ret = http_reply_queue(s, &stop_reply, mc);
    http_reply_clear(&stop_reply);
    return ret;
}

/* Runs the guard on a head that passed our checks: true to go on. Otherwise r->reply holds
 * its answer (a guard that returned false without one, or answered with a stream, gets a
 * 500 in its place). */
static bool
request_guard(HttpRequest *r)
{
    HttpServer *s = r->srv;
    bool pass, answered;

    if (!s->cfg.guard)
        return true;
    pthread_mutex_lock(&r->lock);
    r->refs++; /* the guard's, dropped by its http_respond_*() */
    pthread_mutex_unlock(&r->lock);
    pass = s->cfg.guard(r, s->userdata);
    pthread_mutex_lock(&r->lock);
    answered = r->answered;
    pthread_mutex_unlock(&r->lock);
    if (!answered)
        http_request_unref(r); /* the connection's reference remains */
    if (pass && !answered)
        return true;
    if (!answered || r->reply.kind == REPLY_STREAM) {
        Error e = {.category = E_INTERNAL};
        snprintf(e.message, sizeof(e.message), "the request guard gave no answer");
        http_reply_clear(&r->reply);
        http_reply_set_error(&r->reply, MHD_HTTP_INTERNAL_SERVER_ERROR, &e);
    }
    return false;
}

/* Queues r->reply while no body byte has been read: MHD then skips the body and closes the
 * connection after the answer. Closes it also when there is no body: a connection whose
 * request never reached a route (refused by the guard, a bad head, no budget) is not kept
 * alive, or unauthenticated clients could each hold a connection thread idle for
 * idle_timeout_s with one bodiless request (the front door holds only waiting heads). MHD
 * 0.9.75 closes here by itself; the header makes it hold whatever MHD's version decides. */
static enum MHD_Result
request_answer_early(HttpRequest *r, struct MHD_Connection *mc)
{
    r->reply.close = true;
    http_conn_set_deadline(r->conn, false);
    http_conn_watch_body(r->conn, false);
    r->phase = PHASE_DONE;
    request_count(r->srv, r, r->reply.status);
    return http_reply_queue(r->srv, &r->reply, mc);
}

static enum MHD_Result
request_head(HttpRequest *r, struct MHD_Connection *mc, const char *method)
{
    _cleanup_error_ Error *e = NULL;
    unsigned status = MHD_HTTP_BAD_REQUEST;

    http_conn_head_in(r->conn);
    if (atomic_load(&r->srv->stopping)) {
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        (void) error_set(&e, E_UNAVAILABLE, 0, "the server is shutting down");
    } else if (http_request_check_head(r, mc, method, &status, &e) == 0) {
        if (!request_guard(r))
            return request_answer_early(r, mc);
        if (http_request_admit(r, &e) == 0) {
            r->phase = PHASE_BODY;
            http_conn_watch_body(r->conn, http_request_has_body(r));
            return MHD_YES;
        }
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        (void) http_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, HTTP_BUDGET_RETRY_AFTER_S);
    }
    http_reply_set_error(&r->reply, status, e);
    return request_answer_early(r, mc);
}

static enum MHD_Result
on_access(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
          const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    HttpRequest *r = *con_cls;

    (void) cls;
    (void) url; /* MHD's decoded copy: we parse the raw target ourselves */
    (void) version;
    if (!r)
        return MHD_NO;
    switch (r->phase) {
    case PHASE_HEAD:
        return request_head(r, mc, method);
    case PHASE_BODY:
        if (*upload_data_size == 0)
            return http_request_map_body(r) < 0 ? MHD_NO : request_dispatch(r, mc);
        /* Over the cap mid-body: MHD cannot queue an answer now (only before the body or
         * after all of it), so the connection is closed instead of reading on. */
        if (http_request_append_body(r, upload_data, *upload_data_size) < 0)
            return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    default:
        return MHD_NO;
    }
}

/* MHD hands its own format strings (a callback typed after vprintf): mark it so. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void) cls;
    /* Only the starting thread's messages are kept (thread-local); runtime ones are dropped:
     * modules do not log, and the connection's outcome reaches the client. */
    vsnprintf(start_log, sizeof(start_log), fmt, ap);
}

/* The unix listener's socket goes to MHD; the TCP one stays with the acceptor
 * (http_accept.c), which hands MHD each connection once its head is in. */
static int
listener_start(HttpServer *s, HttpListener *l, bool is_unix, Error **errp)
{
    const HttpConfig *c = &s->cfg;
    bool tls = !is_unix && s->tls.cert_pem;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | (is_unix ? 0u : MHD_USE_NO_LISTEN_SOCKET) |
                     (tls ? MHD_USE_TLS : 0u);

    /* The unix socket is this machine's (file permissions guard it): never TLS. */
    struct MHD_OptionItem listen_opt[] = {
        {is_unix ? MHD_OPTION_LISTEN_SOCKET : MHD_OPTION_END, l->fd, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_OptionItem tls_opt[] = {
        {tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s->tls.cert_pem},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls.key_pem},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *) HTTP_TLS_PRIORITIES},
        {MHD_OPTION_END, 0, NULL},
    };

    l->srv = s;
    l->is_unix = is_unix;
    l->tls = tls;
    start_log[0] = '\0';
    l->mhd = MHD_start_daemon(
        flags, 0, http_conn_accept_policy, l, on_access, l, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log,
        l, MHD_OPTION_ARRAY, listen_opt, MHD_OPTION_ARRAY, tls_opt, MHD_OPTION_CONNECTION_LIMIT,
        c->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, is_unix ? 0u : c->max_per_ip,
        MHD_OPTION_CONNECTION_TIMEOUT, c->idle_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        2 * c->max_header_bytes + HTTP_POOL_SLACK_BYTES, MHD_OPTION_THREAD_STACK_SIZE,
        HTTP_THREAD_STACK_BYTES, MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_URI_LOG_CALLBACK,
        on_uri, l, MHD_OPTION_NOTIFY_COMPLETED, on_completed, l, MHD_OPTION_NOTIFY_CONNECTION,
        http_conn_notify, l, MHD_OPTION_END);
    /* MHD's now (MHD_stop_daemon() or MHD_quiesce_daemon() gives it back). When the start
     * failed, MHD 0.9.75 has closed it or not depending on where it failed: leaking it is
     * safe, closing it again might close someone else's descriptor. */
    if (is_unix)
        l->fd = -1;
    if (!l->mhd)
        return error_set(errp, E_IO, 0, "start the HTTP %s daemon%s%s", is_unix ? "unix" : "TCP",
                         start_log[0] ? ": " : "", start_log);
    if (is_unix)
        return 0;
    int fd = TAKE_FD(l->fd);
    return http_acceptor_start(s, fd, l->mhd, &s->acceptor, errp);
}

static HttpServer *
server_new(const HttpConfig *cfg, HttpHandler handler, void *userdata)
{
    HttpServer *s = calloc(1, sizeof(*s));
    pthread_condattr_t attr;

    if (!s)
        return NULL;
    s->cfg = *cfg;
    s->handler = handler;
    s->userdata = userdata;
    s->tcp.fd = s->unx.fd = -1;
    s->stop_fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->watchdog_cond, &attr);
    pthread_cond_init(&s->drain_cond, &attr);
    pthread_condattr_destroy(&attr);
    s->max_per_caller =
        cfg->max_per_caller ? cfg->max_per_caller : MAX(1u, cfg->max_connections / 2);
    s->conn_callers = http_tally_new();
    if (cfg->body_budget)
        s->budget = cfg->body_budget;
    else if (http_budget_new(cfg, &s->own_budget, NULL) == 0) /* config_check() checked it */
        s->budget = s->own_budget;
    s->tcp_address = cfg->tcp_address ? strdup(cfg->tcp_address) : NULL;
    s->unix_path = cfg->unix_path ? strdup(cfg->unix_path) : NULL;
    s->cfg.tcp_address = s->tcp_address;
    s->cfg.unix_path = s->unix_path;
    if ((cfg->tcp_address && !s->tcp_address) || (cfg->unix_path && !s->unix_path) || !s->budget ||
        !s->conn_callers) {
        http_server_stop(s);
        return NULL;
    }
    return s;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(HttpServer, http_server_stop)

int
http_server_start(const HttpConfig *cfg, HttpHandler handler, void *userdata, HttpServer **ret,
                  Error **errp)
{
    _cleanup_(http_server_stopp) HttpServer *s = NULL;

    if (!handler)
        return error_set(errp, E_INVALID, 0, "http: no handler");
    if (config_check(cfg, errp) < 0)
        return -1;
    if (!(s = server_new(cfg, handler, userdata)))
        return error_set(errp, E_INTERNAL, ENOMEM, "http server");
    if ((s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return error_set(errp, E_INTERNAL, errno, "eventfd");
    if (http_watchdog_start(s, errp) < 0)
        return -1;
    if ((cfg->tls_cert_file || cfg->tls_key_file) && s->tcp_address &&
        http_tls_load(cfg->tls_cert_file, cfg->tls_key_file, &s->tls, errp) < 0)
        return -1;
    if (s->tcp_address &&
        (http_listen_tcp(s->tcp_address, cfg->tcp_port, &s->tcp.fd, &s->tcp_port, errp) < 0 ||
         listener_start(s, &s->tcp, false, errp) < 0))
        return -1;
    if (s->unix_path) {
        if (http_listen_unix(s->unix_path, cfg->unix_mode, &s->unx.fd, &s->unix_dev, &s->unix_ino,
                             errp) < 0)
            return -1;
        if (listener_start(s, &s->unx, true, errp) < 0)
            return -1; /* stop closes the socket and removes its file */
    }
    *ret = TAKE_PTR(s);
    return 0;
}

uint16_t
http_server_tcp_port(const HttpServer *s)
{
    return s->tcp.mhd ? s->tcp_port : 0;
}

bool
http_server_tls(const HttpServer *s)
{
    return s->tcp.tls;
}

unsigned
http_server_pending_heads(const HttpServer *s)
{
    return http_acceptor_pending(s->acceptor);
}

unsigned
http_server_handlers_running(const HttpServer *s)
{
    return atomic_load(&s->in_handler);
}

unsigned
http_server_connections(const HttpServer *s)
{
    HttpServer *m = (HttpServer *) s; /* the lock, not the server */
    pthread_mutex_lock(&m->lock);
    unsigned n = m->n_conns;
    pthread_mutex_unlock(&m->lock);
    return n;
}

HttpBudget *
http_server_budget(const HttpServer *s)
{
    return s->budget;
}

unsigned
http_server_max_per_caller(const HttpServer *s)
{
    return s->max_per_caller;
}

/* Stop begins: producers see the eventfd, handler waits see the flag. */
static void
server_wake_all(HttpServer *s)
{
    atomic_store(&s->stopping, true);
    if (s->stop_fd >= 0)
        (void) eventfd_write(s->stop_fd, 1);
    pthread_mutex_lock(&s->lock);
    for (HttpRequest *r = s->waiting; r; r = r->wait_next) {
        pthread_mutex_lock(&r->lock);
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
    }
    pthread_mutex_unlock(&s->lock);
}

/* No new connections: MHD hands the listening socket back and we close it. */
static void
listener_quiesce(HttpListener *l)
{
    if (l->mhd) {
        MHD_socket fd = MHD_quiesce_daemon(l->mhd);
        if (fd != MHD_INVALID_SOCKET)
            safe_close(fd);
    }
    l->fd = safe_close(l->fd); /* a listener that never reached MHD */
}

/* Waits until every dispatched request completed (answered and sent, stream ended) or
 * the grace and drain time passed. MHD_stop_daemon() would otherwise cut answers that are
 * queued but not yet written: MHD drops whatever is queued once it is shutting down. */
static void
server_drain(HttpServer *s)
{
    uint64_t end = now_usec() + HTTP_STOP_GRACE_USEC + HTTP_STOP_DRAIN_USEC;
    struct timespec ts = {.tv_sec = (time_t) (end / USEC_PER_SEC),
                          .tv_nsec = (long) (end % USEC_PER_SEC * NSEC_PER_USEC)};

    pthread_mutex_lock(&s->lock);
    while (s->n_active > 0 && pthread_cond_timedwait(&s->drain_cond, &s->lock, &ts) == 0)
        ;
    pthread_mutex_unlock(&s->lock);
}

void
http_server_stop(HttpServer *s)
{
    if (!s)
        return;
    server_wake_all(s);
    http_acceptor_stop(s->acceptor); /* before MHD goes: it hands MHD connections */
    s->acceptor = NULL;
    listener_quiesce(&s->tcp);
    listener_quiesce(&s->unx);
    if (s->unix_path && s->unix_ino)
        http_unlink_unix(s->unix_path, s->unix_dev, s->unix_ino);
    server_drain(s);
    /* Closes what is left (idle kept-alive connections, half-read requests) and joins every
     * connection thread. */
    if (s->tcp.mhd)
        MHD_stop_daemon(s->tcp.mhd);
    if (s->unx.mhd)
        MHD_stop_daemon(s->unx.mhd);
    http_watchdog_stop(s);
    safe_close(s->stop_fd);
    pthread_cond_destroy(&s->watchdog_cond);
    pthread_cond_destroy(&s->drain_cond);
    pthread_mutex_destroy(&s->lock);
    http_budget_free(s->own_budget);
    http_tally_free(s->conn_callers);
    http_tls_clear(&s->tls);
    free(s->tcp_address);
    free(s->unix_path);
    free(s);
}
