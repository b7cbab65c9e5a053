/* Connection tracking, the absolute request deadline (slow-loris), the minimum body rate
 * and the connections each caller holds.
 *
 * MHD's idle timeout restarts on every byte, so a client that trickles its head one byte a
 * second would hold a connection thread forever. Each connection therefore carries an
 * absolute deadline (request_timeout_s from accept, re-armed when a response completes on
 * a kept-alive connection, cleared once the request head and body are in). One watchdog
 * thread sleeps until the earliest deadline and shutdown()s a late socket: MHD's connection
 * thread then reads EOF and closes it. The watchdog acts on its own dup of the socket,
 * taken when MHD reports the connection STARTED and closed when MHD reports it CLOSED, so
 * the descriptor it shuts down can never be a reused number naming someone else's file.
 * The watchdog sleeps without a timeout when no deadline is armed: no polling.
 *
 * The same watchdog holds a body being read to the budget's minimum rate: at the end of
 * each window since the body began, the body must have grown by the rate times the window,
 * or the socket is shut down the same way. The absolute deadline alone let a client that
 * declared a large body and sent a byte every few seconds hold its reservation (and a
 * thread) for request_timeout_s; a body that is in within one window is never judged.
 *
 * A connection counts for a caller (the key its request's guard named, else its peer) from
 * the guard on until it closes, idle keep-alive time included: what a caller holds on this
 * server is its connections' threads, whatever they do.
 *
 * On a TLS listener the front door hands a connection over once its ClientHello is in, not
 * its request head (which is ciphertext to it): there the first request's deadline is the
 * head window (head_timeout_s) until the head is in, for the handshake and the head on this
 * thread, then the request deadline counted from when MHD took the connection. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "http_internal.h"

/* The default caller of a TCP connection: its peer's address ("addr:<IP>"; an IPv4-mapped
 * IPv6 address as IPv4, so both forms of one client are one caller). */
static void
conn_peer_tcp(HttpConn *c, struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    char ip[INET6_ADDRSTRLEN] = "?";

    if (sa && sa->sa_family == AF_INET) {
        (void) inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, ip, sizeof(ip));
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *) sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a))
            (void) inet_ntop(AF_INET, &a->s6_addr[12], ip, sizeof(ip));
        else
            (void) inet_ntop(AF_INET6, a, ip, sizeof(ip));
    }
    snprintf(c->peer, sizeof(c->peer), "addr:%s", ip);
}

static void
conn_peer_unix(HttpConn *c)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
        c->has_uid = true;
        c->uid = cred.uid;
    }
    if (c->has_uid)
        snprintf(c->peer, sizeof(c->peer), "uid:%u", (unsigned) c->uid);
    else
        snprintf(c->peer, sizeof(c->peer), "uid:?");
}

static HttpConn *
conn_new(HttpListener *l, struct MHD_Connection *mc)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    _cleanup_free_ HttpConn *c = calloc(1, sizeof(*c));

    if (!info || !c)
        return NULL;
    c->srv = l->srv;
    c->is_unix = l->is_unix;
    c->started_usec = now_usec();
    c->head_first = l->tls;
    c->fd = fcntl(info->connect_fd, F_DUPFD_CLOEXEC, 3);
    if (c->fd < 0)
        return NULL;
    if (l->is_unix)
        conn_peer_unix(c);
    else
        conn_peer_tcp(c, mc);
    return TAKE_PTR(c);
}

static void
conn_link(HttpServer *s, HttpConn *c)
{
    pthread_mutex_lock(&s->lock);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    pthread_mutex_unlock(&s->lock);
}

static void
conn_unlink_free(HttpServer *s, HttpConn *c)
{
    pthread_mutex_lock(&s->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->n_conns--;
    if (c->caller[0])
        http_tally_sub(s->conn_callers, c->caller, 1);
    pthread_mutex_unlock(&s->lock);
    safe_close(c->fd);
    free(c);
}

void
http_conn_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
                 enum MHD_ConnectionNotificationCode code)
{
    HttpListener *l = cls;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        HttpConn *c = conn_new(l, mc);
        if (!c) {
            /* Cannot track it, so cannot bound it: end it now. The request callbacks
             * refuse a connection without context. */
            const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (info)
                (void) shutdown(info->connect_fd, SHUT_RDWR);
            *socket_context = NULL;
            return;
        }
        conn_link(l->srv, c);
        http_conn_set_deadline(c, true);
        *socket_context = c;
        return;
    }
    if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        conn_unlink_free(l->srv, *socket_context);
        *socket_context = NULL;
    }
}

enum MHD_Result
http_conn_accept_policy(void *cls, const struct sockaddr *addr, socklen_t len)
{
    HttpListener *l = cls;
    HttpServer *s = l->srv;
    bool ok;

    (void) addr;
    (void) len;
    pthread_mutex_lock(&s->lock);
    ok = s->n_conns < s->cfg.max_connections && !atomic_load(&s->stopping);
    pthread_mutex_unlock(&s->lock);
    return ok ? MHD_YES : MHD_NO;
}

uint64_t
http_head_window_usec(const HttpConfig *c)
{
    return MIN(c->head_timeout_s, MIN(c->request_timeout_s, c->idle_timeout_s)) * USEC_PER_SEC;
}

/* Under s->lock: sets c's deadline and wakes the watchdog when it is the earliest. */
static void
deadline_set_locked(HttpServer *s, HttpConn *c, uint64_t deadline_usec)
{
    c->deadline_usec = deadline_usec;
    if (deadline_usec && deadline_usec < s->watchdog_wake_usec)
        pthread_cond_signal(&s->watchdog_cond);
}

void
http_conn_set_deadline(HttpConn *c, bool armed)
{
    HttpServer *s = c->srv;
    uint64_t now = now_usec(), d = 0;

    pthread_mutex_lock(&s->lock);
    if (armed)
        d = c->head_first ? now + http_head_window_usec(&s->cfg)
                          : now + s->cfg.request_timeout_s * USEC_PER_SEC;
    deadline_set_locked(s, c, d);
    pthread_mutex_unlock(&s->lock);
}

void
http_conn_head_in(HttpConn *c)
{
    HttpServer *s = c->srv;

    pthread_mutex_lock(&s->lock);
    if (c->head_first) {
        c->head_first = false;
        if (c->deadline_usec)
            deadline_set_locked(s, c, c->started_usec + s->cfg.request_timeout_s * USEC_PER_SEC);
    }
    pthread_mutex_unlock(&s->lock);
}

bool
http_conn_claim(HttpConn *c, const char *caller)
{
    HttpServer *s = c->srv;
    bool ok = true;

    pthread_mutex_lock(&s->lock);
    if (strcmp(c->caller, caller) != 0) {
        if (c->caller[0])
            http_tally_sub(s->conn_callers, c->caller, 1);
        c->caller[0] = '\0';
        ok = http_tally_get(s->conn_callers, caller) < s->max_per_caller &&
             http_tally_add(s->conn_callers, caller, 1) == 0;
        if (ok)
            snprintf(c->caller, sizeof(c->caller), "%s", caller);
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

void
http_conn_watch_body(HttpConn *c, bool on)
{
    HttpServer *s = c->srv;
    size_t rate;
    unsigned window_s;

    http_budget_min_rate(s->budget, &rate, &window_s);
    pthread_mutex_lock(&s->lock);
    atomic_store(&c->body_bytes, 0);
    c->rate_mark = 0;
    c->rate_check_usec = on && rate > 0 ? now_usec() + window_s * USEC_PER_SEC : 0;
    if (c->rate_check_usec && c->rate_check_usec < s->watchdog_wake_usec)
        pthread_cond_signal(&s->watchdog_cond);
    pthread_mutex_unlock(&s->lock);
}

/* Under s->lock: a body whose window ended; true when it grew too little (cut it). */
static bool
rate_too_slow(HttpServer *s, HttpConn *c, uint64_t now)
{
    size_t rate, got = atomic_load(&c->body_bytes);
    unsigned window_s;

    http_budget_min_rate(s->budget, &rate, &window_s);
    /* A late look (a busy watchdog) judges the longer time it saw, at the same rate. */
    uint64_t span_usec = now - (c->rate_check_usec - window_s * USEC_PER_SEC);
    if ((got - c->rate_mark) < (uint64_t) rate * span_usec / USEC_PER_SEC)
        return true;
    c->rate_mark = got;
    c->rate_check_usec = now + window_s * USEC_PER_SEC;
    return false;
}

static void
conn_cut(HttpConn *c)
{
    (void) shutdown(c->fd, SHUT_RDWR);
    c->cut = true;
}

/* Under s->lock: cuts every connection past its deadline or below the body rate; returns
 * the earliest deadline or window end still ahead (UINT64_MAX: none). */
static uint64_t
watchdog_scan(HttpServer *s)
{
    uint64_t now = now_usec(), next = UINT64_MAX;

    for (HttpConn *c = s->conns; c; c = c->next) {
        if (c->cut)
            continue;
        if (c->deadline_usec && c->deadline_usec <= now) {
            conn_cut(c);
            continue;
        }
        if (c->rate_check_usec && c->rate_check_usec <= now && rate_too_slow(s, c, now)) {
            http_budget_count_slow_cut(s->budget); /* its lock nests in s->lock */
            conn_cut(c);
            continue;
        }
        if (c->deadline_usec)
            next = MIN(next, c->deadline_usec);
        if (c->rate_check_usec)
            next = MIN(next, c->rate_check_usec);
    }
    return next;
}

static void *
watchdog_main(void *arg)
{
    HttpServer *s = arg;

    pthread_mutex_lock(&s->lock);
    while (!s->watchdog_quit) {
        uint64_t next = watchdog_scan(s);
        s->watchdog_wake_usec = next;
        if (next == UINT64_MAX) {
            pthread_cond_wait(&s->watchdog_cond, &s->lock);
        } else {
            struct timespec ts = {.tv_sec = (time_t) (next / USEC_PER_SEC),
                                  .tv_nsec = (long) (next % USEC_PER_SEC * NSEC_PER_USEC)};
            (void) pthread_cond_timedwait(&s->watchdog_cond, &s->lock, &ts);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int
http_watchdog_start(HttpServer *s, Error **errp)
{
    pthread_attr_t attr;
    int r;

    s->watchdog_wake_usec = UINT64_MAX;
    if ((r = pthread_attr_init(&attr)) != 0)
        return error_set(errp, E_INTERNAL, r, "pthread_attr_init");
    (void) pthread_attr_setstacksize(&attr, HTTP_THREAD_STACK_BYTES);
    r = pthread_create(&s->watchdog, &attr, watchdog_main, s);
    pthread_attr_destroy(&attr);
    if (r != 0)
        return error_set(errp, E_INTERNAL, r, "start the HTTP watchdog thread");
    s->watchdog_running = true;
    return 0;
}

void
http_watchdog_stop(HttpServer *s)
{
    if (!s->watchdog_running)
        return;
    pthread_mutex_lock(&s->lock);
    s->watchdog_quit = true;
    pthread_cond_signal(&s->watchdog_cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->watchdog, NULL);
    s->watchdog_running = false;
}
