/* The TCP front door: accepts connections and holds each one, at the cost of a descriptor
 * and a small record, until its request head is complete (or max_header_bytes of it are
 * in), then hands it to MHD (MHD_add_connection(): a connection thread from there on).
 *
 * Why: MHD runs a thread per connection here (http.c), capped by max_connections. Without
 * this door a client that opens connections and sends one byte of head, or nothing, held a
 * thread each until the absolute deadline, and 512 such connections locked every other
 * client out. Here a waiting connection costs HttpPending (under 100 bytes) plus the
 * kernel's socket; it is closed head_timeout_s after accept (or request_timeout_s or
 * idle_timeout_s, if shorter); at most max_per_ip of them
 * wait per address; at most max_pending in total, and when that is full the oldest waiting
 * one is closed to make room (a legitimate client sends its head within milliseconds, so it
 * is never the oldest).
 *
 * The head is peeked (MSG_PEEK), never read, so MHD reads it as if it had accepted the
 * socket itself. One thread, one edge-triggered epoll set: a waiting connection costs CPU
 * only when bytes arrive. Each peek copies what is queued again, so a head trickled one
 * byte per segment costs copying quadratic in its length, bounded by max_header_bytes and
 * head_timeout_s.
 *
 * On a TLS listener the head is ciphertext the door cannot read (only MHD's thread holds the
 * session's keys, and a GnuTLS session cannot be handed from here to MHD): there the door
 * waits for the first TLS record, the ClientHello (http_hello.c; up to 16 KiB + 5, so the
 * peek buffer holds one whole), and closes a connection whose first bytes are not a TLS
 * handshake record (plain HTTP sent to the HTTPS port) without handing it over. A connection
 * that sends nothing or part of a hello still costs no thread; one that sends a hello gets a
 * thread, which the watchdog cuts when the handshake and the request head are not done
 * within the head window (http_conn.c). Nothing here logs. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "http_hello.h"
#include "http_internal.h"

#define ACCEPT_BURST 256        /* accept()s per wake-up, so waiting heads are served too */
#define ACCEPT_EVENTS 64        /* epoll events per wait */
#define PER_IP_BUCKETS 4096     /* per-address counters' hash buckets (power of two) */
#define ACCEPT_BACKOFF_USEC (100 * USEC_PER_MSEC) /* out of descriptors: stop accepting */

/* Connections waiting for their head, per client address. */
typedef struct PerIp {
    struct PerIp *next;
    unsigned n;
    uint8_t key[16]; /* IPv4 as ::ffff:a.b.c.d */
} PerIp;

typedef union {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
} PeerAddr;

typedef struct HttpPending {
    int fd; /* -1 once handed off or closed (then only in the graveyard) */
    socklen_t addr_len;
    uint64_t deadline_usec;
    struct HttpPending *prev, *next; /* FIFO by accept time, hence by deadline */
    PerIp *ip;
    size_t scanned; /* head bytes already searched for the blank line */
    PeerAddr addr;
} HttpPending;

struct HttpAcceptor {
    HttpServer *srv;
    struct MHD_Daemon *mhd;
    int listen_fd;
    int epoll_fd;
    pthread_t thread;
    bool running;
    bool listen_off; /* listen fd out of the epoll set until backoff_until_usec */
    uint64_t backoff_until_usec;
    HttpPending *head, *tail;
    HttpPending *graveyard; /* closed during one batch of events, freed after it */
    atomic_uint n_pending;
    PerIp *buckets[PER_IP_BUCKETS];
    uint8_t *peek_buf;
    size_t peek_cap;
    uint64_t head_timeout_usec;
    bool tls; /* wait for the ClientHello, not the request head */
};

static char tag_listen, tag_stop; /* epoll data of the listening socket and the stop fd */

static void
peer_key(const PeerAddr *a, uint8_t key[16])
{
    memset(key, 0, 16);
    if (a->sa.sa_family == AF_INET6) {
        memcpy(key, &a->in6.sin6_addr, 16);
        return;
    }
    key[10] = key[11] = 0xff;
    memcpy(key + 12, &a->in.sin_addr, 4);
}

static PerIp **
per_ip_slot(HttpAcceptor *a, const uint8_t key[16])
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < 16; i++)
        h = (h ^ key[i]) * 16777619u;
    PerIp **pp = &a->buckets[h & (PER_IP_BUCKETS - 1)];
    while (*pp && memcmp((*pp)->key, key, 16) != 0)
        pp = &(*pp)->next;
    return pp;
}

static PerIp *
per_ip_get(HttpAcceptor *a, const PeerAddr *addr)
{
    uint8_t key[16];
    peer_key(addr, key);
    PerIp **pp = per_ip_slot(a, key);
    if (!*pp && (*pp = calloc(1, sizeof(PerIp))))
        memcpy((*pp)->key, key, 16);
    return *pp;
}

static void
per_ip_put(HttpAcceptor *a, PerIp *ip)
{
    if (--ip->n > 0)
        return;
    PerIp **pp = per_ip_slot(a, ip->key);
    *pp = ip->next;
    free(ip);
}

/* Takes p out of the queue and its address's count; p waits in the graveyard. */
static void
pending_unlink(HttpAcceptor *a, HttpPending *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        a->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        a->tail = p->prev;
    per_ip_put(a, p->ip);
    atomic_fetch_sub(&a->n_pending, 1);
    p->fd = -1;
    p->next = a->graveyard;
    a->graveyard = p;
}

static void
pending_drop(HttpAcceptor *a, HttpPending *p)
{
    safe_close(p->fd); /* also leaves the epoll set */
    pending_unlink(a, p);
}

/* The head is in: MHD takes the socket (and closes it itself if it is at its limits). */
static void
pending_hand_off(HttpAcceptor *a, HttpPending *p)
{
    int fd = p->fd;

    (void) epoll_ctl(a->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
    pending_unlink(a, p);
    (void) MHD_add_connection(a->mhd, fd, &p->addr.sa, p->addr_len);
}

static void
pending_ready(HttpAcceptor *a, HttpPending *p, uint32_t events)
{
    if (p->fd < 0)
        return; /* closed earlier in this batch */
    ssize_t n = recv(p->fd, a->peek_buf, a->peek_cap, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        pending_drop(a, p); /* reset, or EOF before any head */
        return;
    }
    if (a->tls) {
        HttpHelloState st = http_tls_hello_state(a->peek_buf, (size_t) n);
        if (st == HTTP_HELLO_COMPLETE)
            pending_hand_off(a, p);
        else if (st == HTTP_HELLO_NOT_TLS || (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
            pending_drop(a, p);
        return;
    }
    if ((size_t) n >= a->peek_cap || http_head_complete(&p->scanned, a->peek_buf, (size_t) n))
        pending_hand_off(a, p); /* a head over the cap: MHD answers 431 */
    else if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        pending_drop(a, p); /* the client stopped sending before its head was whole */
}

static void
pending_add(HttpAcceptor *a, int fd, const PeerAddr *addr, socklen_t addr_len)
{
    const HttpConfig *c = &a->srv->cfg;
    PerIp *ip = per_ip_get(a, addr);
    HttpPending *p = NULL;

    if (!ip) {
        safe_close(fd);
        return;
    }
    if (++ip->n > c->max_per_ip || !(p = calloc(1, sizeof(*p)))) {
        per_ip_put(a, ip); /* this address has its share waiting already */
        safe_close(fd);
        return;
    }
    if (atomic_load(&a->n_pending) >= c->max_pending)
        pending_drop(a, a->head); /* the oldest makes room */
    *p = (HttpPending){.fd = fd, .addr_len = addr_len, .ip = ip, .addr = *addr,
                       .deadline_usec = now_usec() + a->head_timeout_usec};
    atomic_fetch_add(&a->n_pending, 1);
    p->prev = a->tail;
    if (a->tail)
        a->tail->next = p;
    else
        a->head = p;
    a->tail = p;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = p};
    if (epoll_ctl(a->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
        pending_drop(a, p);
}

static void
listen_interest(HttpAcceptor *a, bool on)
{
    struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.ptr = &tag_listen};
    (void) epoll_ctl(a->epoll_fd, EPOLL_CTL_MOD, a->listen_fd, &ev);
    a->listen_off = !on;
}

static void
accept_burst(HttpAcceptor *a)
{
    for (int i = 0; i < ACCEPT_BURST; i++) {
        PeerAddr addr;
        socklen_t len = sizeof(addr);
        int fd = accept4(a->listen_fd, &addr.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            pending_add(a, fd, &addr, len);
            continue;
        }
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* Level-triggered: it would wake us at once again. Pause instead. */
            a->backoff_until_usec = now_usec() + ACCEPT_BACKOFF_USEC;
            listen_interest(a, false);
        }
        return; /* EAGAIN, or a client that left before accept() */
    }
}

/* Closes heads past their deadline; returns the epoll timeout until the next one (ms). */
static int
pending_expire(HttpAcceptor *a)
{
    uint64_t now = now_usec(), next = UINT64_MAX;

    while (a->head && a->head->deadline_usec <= now)
        pending_drop(a, a->head);
    if (a->head)
        next = a->head->deadline_usec;
    if (a->listen_off) {
        if (a->backoff_until_usec <= now)
            listen_interest(a, true);
        else
            next = MIN(next, a->backoff_until_usec);
    }
    return next == UINT64_MAX ? -1 : (int) ((next - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC);
}

static void
graveyard_free(HttpAcceptor *a)
{
    while (a->graveyard) {
        HttpPending *p = a->graveyard;
        a->graveyard = p->next;
        free(p);
    }
}

static void *
acceptor_main(void *arg)
{
    HttpAcceptor *a = arg;
    struct epoll_event ev[ACCEPT_EVENTS];

    for (;;) {
        int n = epoll_wait(a->epoll_fd, ev, ACCEPT_EVENTS, pending_expire(a));
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == &tag_stop)
                return NULL;
            if (ev[i].data.ptr == &tag_listen)
                accept_burst(a);
            else
                pending_ready(a, ev[i].data.ptr, ev[i].events);
        }
        graveyard_free(a);
    }
    return NULL;
}

static int
epoll_watch(int epoll_fd, int fd, void *tag, Error **errp)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return error_set(errp, E_INTERNAL, errno, "epoll_ctl");
    return 0;
}

int
http_acceptor_start(HttpServer *s, int listen_fd, struct MHD_Daemon *mhd, HttpAcceptor **ret,
                    Error **errp)
{
    HttpAcceptor *a = calloc(1, sizeof(*a));
    bool tls = s->tcp.tls;
    size_t cap = tls ? HTTP_TLS_RECORD_MAX_BYTES : s->cfg.max_header_bytes;
    pthread_attr_t attr;
    int r;

    if (!a || !(a->peek_buf = malloc(cap))) {
        free(a);
        safe_close(listen_fd);
        return error_set(errp, E_INTERNAL, ENOMEM, "http acceptor");
    }
    a->epoll_fd = -1;
    a->srv = s;
    a->mhd = mhd;
    a->listen_fd = listen_fd;
    a->peek_cap = cap;
    a->tls = tls;
    /* The other two deadlines hold here as well: a waiting head is never given longer. */
    a->head_timeout_usec = http_head_window_usec(&s->cfg);
    *ret = a; /* http_acceptor_stop() frees it whatever happens below */
    if ((a->epoll_fd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return error_set(errp, E_INTERNAL, errno, "epoll_create1");
    if (epoll_watch(a->epoll_fd, listen_fd, &tag_listen, errp) < 0 ||
        epoll_watch(a->epoll_fd, s->stop_fd, &tag_stop, errp) < 0)
        return -1;
    if ((r = pthread_attr_init(&attr)) != 0)
        return error_set(errp, E_INTERNAL, r, "pthread_attr_init");
    (void) pthread_attr_setstacksize(&attr, HTTP_THREAD_STACK_BYTES);
    r = pthread_create(&a->thread, &attr, acceptor_main, a);
    pthread_attr_destroy(&attr);
    if (r != 0)
        return error_set(errp, E_INTERNAL, r, "start the HTTP acceptor thread");
    a->running = true;
    return 0;
}

void
http_acceptor_stop(HttpAcceptor *a)
{
    if (!a)
        return;
    if (a->running)
        pthread_join(a->thread, NULL); /* it leaves once the server's stop fd is readable */
    while (a->head)
        pending_drop(a, a->head);
    graveyard_free(a);
    safe_close(a->listen_fd);
    safe_close(a->epoll_fd);
    free(a->peek_buf);
    free(a);
}

unsigned
http_acceptor_pending(const HttpAcceptor *a)
{
    return a ? atomic_load(&a->n_pending) : 0;
}
