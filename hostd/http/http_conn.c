/* Connection tracking and the absolute request deadline (slow-loris).
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
 * On a TLS listener the front door hands a connection over once its ClientHello is in, not
 * its request head (which is ciphertext to it): there the first request's deadline is the
 * head window (head_timeout_s) until the head is in, for the handshake and the head on this
 * thread, then the request deadline counted from when MHD took the connection. */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>

#include "http_internal.h"

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
    if (l->is_unix) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
            c->has_uid = true;
            c->uid = cred.uid;
        }
    }
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

/* Under s->lock: cuts every connection past its deadline; returns the earliest deadline
 * still ahead (UINT64_MAX: none). */
static uint64_t
watchdog_scan(HttpServer *s)
{
    uint64_t now = now_usec(), next = UINT64_MAX;

    for (HttpConn *c = s->conns; c; c = c->next) {
        if (c->deadline_usec == 0 || c->cut)
            continue;
        if (c->deadline_usec <= now) {
            (void) shutdown(c->fd, SHUT_RDWR);
            c->cut = true;
            continue;
        }
        next = MIN(next, c->deadline_usec);
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
