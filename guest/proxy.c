/* The egress proxy's client side: the listener, client connections, their request heads and
 * the bytes between them and their streams. See proxy.h; the wire side is proxy_tunnel.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proxy_internal.h"
#include "proxyreq.h"

#define PROXY_LISTEN_BACKLOG 128
#define PROXY_BUSY_DRAIN_READS 4 /* at most 4 x TUNNEL_DATA_MAX_BYTES read from a refused client   \
                                  */
#define PROXY_BUSY_REPLY                                                                           \
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 40\r\n"       \
    "Connection: close\r\n\r\nstockade egress: too many connections\r\n"

static const char *
proxy_reason_phrase(int status)
{
    switch (status) {
    case 200:
        return "Connection established";
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Error";
    }
}

Proxy *
proxy_new(OutQueue *q, uint16_t port, unsigned max_conns, Error **errp)
{
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    Proxy *p = calloc(1, sizeof(*p));

    if (!p) {
        error_set(errp, E_INTERNAL, ENOMEM, "proxy");
        return NULL;
    }
    *p = (Proxy){.q = q, .max_conns = MIN(max_conns, TUNNEL_STREAMS_MAX), .next_id = 1};
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->listen_fd < 0 ||
        setsockopt(p->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(p->listen_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
        listen(p->listen_fd, PROXY_LISTEN_BACKLOG) < 0) {
        error_set(errp, E_IO, errno, "egress proxy on 127.0.0.1:%u", port);
        proxy_free(p);
        return NULL;
    }
    return p;
}

void
proxy_conn_free(Proxy *p, ProxyConn *c)
{
    for (size_t i = 0; i < TUNNEL_STREAMS_MAX; i++)
        if (p->conns[i] == c) {
            p->conns[i] = NULL;
            p->n_conns--;
        }
    for (size_t i = 0; i < PROXY_POLL_FDS_MAX; i++)
        if (p->refs[i] == c)
            p->refs[i] = NULL; /* a later event of this turn must not reach freed memory */
    safe_close(c->fd);
    free(c->in);
    free(c->up);
    free(c->down);
    free(c);
}

void
proxy_free(Proxy *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < TUNNEL_STREAMS_MAX; i++)
        if (p->conns[i])
            proxy_conn_free(p, p->conns[i]);
    safe_close(p->listen_fd);
    free(p);
}

ProxyConn *
proxy_find(Proxy *p, uint32_t id)
{
    for (size_t i = 0; id && i < TUNNEL_STREAMS_MAX; i++)
        if (p->conns[i] && p->conns[i]->id == id)
            return p->conns[i];
    return NULL;
}

int
proxy_conn_abort(Proxy *p, ProxyConn *c, Error **errp)
{
    int r = c->id ? tunnel_send_close(p, c->id, errp) : 0;
    proxy_conn_free(p, c);
    return r;
}

void
proxy_conn_fail(ProxyConn *c, int status, const char *why)
{
    char body[ERROR_MESSAGE_MAX_BYTES + 32];
    int blen = snprintf(body, sizeof(body), "stockade egress: %s\r\n", why);

    blen = MIN(blen, (int) sizeof(body) - 1);
    int n = snprintf(c->reply, sizeof(c->reply),
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                     "Connection: close\r\n\r\n%.*s",
                     status, proxy_reason_phrase(status), blen, blen, body);
    c->reply_len = (size_t) MIN(n, (int) sizeof(c->reply) - 1);
    c->reply_off = 0;
    c->id = 0;
    c->down_len = 0;
    c->state = PC_CLOSING;
}

/* Over the cap: 503 at once, best effort. What the client already sent is read first, so the
 * close is a FIN and not a reset that could destroy the answer in flight. */
static void
proxy_refuse_busy(Proxy *p, int fd)
{
    (void) send(fd, PROXY_BUSY_REPLY, strlen(PROXY_BUSY_REPLY), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void) shutdown(fd, SHUT_WR);
    for (int i = 0; i < PROXY_BUSY_DRAIN_READS; i++)
        if (recv(fd, p->buf, sizeof(p->buf), MSG_DONTWAIT) <= 0)
            break;
    safe_close(fd);
}

static void
proxy_accept_one(Proxy *p, int fd)
{
    ProxyConn *c = NULL;

    if (p->n_conns < p->max_conns && p->next_id != 0 && (c = calloc(1, sizeof(*c))) &&
        (c->in = malloc(PROXY_HEAD_MAX_BYTES))) {
        c->fd = fd;
        for (size_t i = 0; i < TUNNEL_STREAMS_MAX; i++)
            if (!p->conns[i]) {
                p->conns[i] = c;
                p->n_conns++;
                return;
            }
    }
    if (c)
        free(c->in);
    free(c);
    proxy_refuse_busy(p, fd);
}

static void
proxy_accept(Proxy *p)
{
    for (unsigned i = 0; i < PROXY_ACCEPTS_PER_TURN; i++) {
        int fd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a client that left before we took it */
        proxy_accept_one(p, fd);
    }
}

/* The head is complete: start the stream, keep what goes first to the host. */
static int
proxy_open(Proxy *p, ProxyConn *c, const ProxyRequest *req, Error **errp)
{
    size_t early = c->in_len - req->head_len;

    c->up_len = req->out_len + early;
    if (c->up_len > 0) {
        if (!(c->up = malloc(c->up_len)))
            return error_set(errp, E_INTERNAL, ENOMEM, "proxy");
        memcpy(c->up, p->rewrite, req->out_len);
        memcpy(c->up + req->out_len, c->in + req->head_len, early);
    }
    free(c->in);
    c->in = NULL;
    c->id = p->next_id++;
    c->state = PC_OPENING;
    if (req->is_connect) {
        c->reply_len = (size_t) snprintf(c->reply, sizeof(c->reply), "HTTP/1.1 200 %s\r\n\r\n",
                                         proxy_reason_phrase(200));
    }
    return tunnel_send_open(p, c, req->host, req->port, errp);
}

static int
proxy_read_head(Proxy *p, ProxyConn *c, Error **errp)
{
    ProxyRequest req;
    ssize_t n = read(c->fd, c->in + c->in_len, PROXY_HEAD_MAX_BYTES - c->in_len);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        proxy_conn_free(p, c); /* the client left before asking anything */
        return 0;
    }
    c->in_len += (size_t) n;
    switch (proxyreq_parse(c->in, c->in_len, p->rewrite, sizeof(p->rewrite), &req)) {
    case PROXYREQ_NEED_MORE:
        return 0;
    case PROXYREQ_BAD:
        proxy_conn_fail(c, req.status, req.why);
        return 0;
    case PROXYREQ_OK:
        break;
    }
    if (proxy_open(p, c, &req, errp) < 0) {
        proxy_conn_free(p, c);
        return -1;
    }
    return 0;
}

/* Client -> host, within the stream's credit (the caller checked queue room). */
static int
proxy_read_client(Proxy *p, ProxyConn *c, Error **errp)
{
    size_t want = flow_send_allowance(&c->send, sizeof(p->buf));
    ssize_t n = want ? read(c->fd, p->buf, want) : 0;

    if (want == 0 || (n < 0 && (errno == EAGAIN || errno == EINTR)))
        return 0;
    if (n < 0)
        return proxy_conn_abort(p, c, errp); /* ECONNRESET and friends: the stream is reset */
    c->client_eof = n == 0;
    return tunnel_send_data(p, c, p->buf, (size_t) n, n == 0, errp);
}

static bool
proxy_nothing_to_write(const ProxyConn *c)
{
    return c->reply_off == c->reply_len && c->down_len == 0;
}

/* Our own answer first, then the ring; consumed bytes turn into credit for the host. */
static ssize_t
proxy_write_out(ProxyConn *c)
{
    struct iovec iov[3];
    int n = 0;
    size_t first = MIN(c->down_len, TUNNEL_WINDOW_BYTES - c->down_head);

    if (c->reply_off < c->reply_len)
        iov[n++] = (struct iovec){c->reply + c->reply_off, c->reply_len - c->reply_off};
    if (first)
        iov[n++] = (struct iovec){c->down + c->down_head, first};
    if (c->down_len > first)
        iov[n++] = (struct iovec){c->down, c->down_len - first};
    ssize_t w = n ? writev(c->fd, iov, n) : 0;
    if (w <= 0)
        return w;
    size_t left = (size_t) w, r = MIN(left, c->reply_len - c->reply_off);
    c->reply_off += r;
    left -= r;
    c->down_head = (c->down_head + left) % TUNNEL_WINDOW_BYTES;
    c->down_len -= left;
    return (ssize_t) left;
}

static int
proxy_write_client(Proxy *p, ProxyConn *c, Error **errp)
{
    ssize_t n = proxy_write_out(c);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n < 0)
        return proxy_conn_abort(p, c, errp);
    if (c->state == PC_CLOSING) {
        if (proxy_nothing_to_write(c))
            proxy_conn_free(p, c);
        return 0;
    }
    if (n > 0 &&
        (flow_recv_consumed(&c->recv, (size_t) n) < 0 || tunnel_send_credit(p, c, errp) < 0))
        return -1;
    if (c->host_eof && !c->client_shut && proxy_nothing_to_write(c)) {
        c->client_shut = true;
        (void) shutdown(c->fd, SHUT_WR);
    }
    return 0;
}

int
proxy_flush(Proxy *p, Error **errp)
{
    for (size_t i = 0; i < TUNNEL_STREAMS_MAX && outq_has_room(p->q); i++) {
        ProxyConn *c = p->conns[i];
        if (!c || c->state != PC_RELAY || c->up_off == c->up_len)
            continue;
        size_t n = flow_send_allowance(&c->send, c->up_len - c->up_off);
        if (n > 0 && tunnel_send_data(p, c, c->up + c->up_off, n, false, errp) < 0)
            return -1;
        c->up_off += n;
        if (c->up_off == c->up_len) {
            free(c->up);
            c->up = NULL;
            c->up_len = c->up_off = 0;
        }
    }
    return 0;
}

static short
proxy_conn_events(const Proxy *p, const ProxyConn *c)
{
    short ev = 0;

    switch (c->state) {
    case PC_HEAD:
        return POLLIN;
    case PC_OPENING:
        return 0; /* not read until the host answers; a client that left is noticed later */
    case PC_RELAY:
        if (!c->client_eof && c->up_len == 0 && c->send.credit > 0 && outq_has_room(p->q))
            ev |= POLLIN;
        if (!proxy_nothing_to_write(c))
            ev |= POLLOUT;
        return ev;
    case PC_CLOSING:
        return POLLOUT;
    }
    return 0;
}

size_t
proxy_poll_add(Proxy *p, struct pollfd *pfd, size_t cap)
{
    size_t n = 0;

    if (cap == 0)
        return 0;
    pfd[n] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
    p->refs[n++] = NULL;
    for (size_t i = 0; i < TUNNEL_STREAMS_MAX && n < cap && n < PROXY_POLL_FDS_MAX; i++) {
        ProxyConn *c = p->conns[i];
        short ev = c ? proxy_conn_events(p, c) : 0;
        if (ev == 0)
            continue; /* nothing wanted: not polled, so a hang-up cannot spin the loop */
        pfd[n] = (struct pollfd){.fd = c->fd, .events = ev};
        p->refs[n++] = c;
    }
    return n;
}

/* One polled client; p->refs[i] is cleared whenever a step frees the connection. */
static int
proxy_conn_event(Proxy *p, size_t i, short revents, Error **errp)
{
    ProxyConn *c = p->refs[i];

    if (c->state == PC_HEAD)
        return proxy_read_head(p, c, errp);
    if ((revents & (POLLOUT | POLLERR | POLLHUP)) && proxy_write_client(p, c, errp) < 0)
        return -1;
    if (!(c = p->refs[i]))
        return 0;
    if ((revents & (POLLIN | POLLERR | POLLHUP)) && c->state == PC_RELAY && !c->client_eof &&
        c->up_len == 0 && outq_has_room(p->q))
        return proxy_read_client(p, c, errp);
    return 0;
}

int
proxy_poll_handle(Proxy *p, const struct pollfd *pfd, size_t n, Error **errp)
{
    int r = 0;

    for (size_t i = 0; i < n && i < PROXY_POLL_FDS_MAX; i++) {
        if (pfd[i].revents == 0)
            continue;
        if (i == 0) {
            proxy_accept(p);
            continue;
        }
        if (p->refs[i] && proxy_conn_event(p, i, pfd[i].revents, errp) < 0)
            r = -1;
    }
    return r;
}
