/* The upstream side of a stream: a non-blocking connect to each vetted address in turn, then
 * bytes both ways under the stream's credit (flow.h). An fd is watched only for what the
 * stream can act on now, so a peer's hang-up never spins the loop; functions that may end a
 * stream say so by returning true ("gone"), after which it is not touched again. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "egress_internal.h"
#include "inspect.h"
#include "timeutil.h"

static void stream_on_fd(LoopSource *src, int fd, uint32_t events, void *userdata);

static socklen_t
stream_sockaddr(const EgressAddr *a, uint16_t port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (a->family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *) ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        memcpy(&in->sin_addr, a->bytes, 4);
        return sizeof(*in);
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    memcpy(&in6->sin6_addr, a->bytes, 16);
    return sizeof(*in6);
}

static void
stream_set_events(Stream *st, uint32_t ev)
{
    if (ev == st->events)
        return;
    if (ev == 0) {
        loop_source_free(st->src);
        st->src = NULL;
    } else if (!st->src) {
        if (loop_watch_fd(st->e->loop, st->fd, ev, stream_on_fd, st, &st->src, NULL) < 0)
            ev = 0; /* out of memory: the connect deadline or the session's end cleans up */
    } else {
        (void) loop_source_set_events(st->src, ev);
    }
    st->events = ev;
}

void
stream_update_events(Stream *st)
{
    EgressSession *e = st->e;
    uint32_t ev = 0;

    if (st->state == STREAM_CONNECTING) {
        ev = EPOLLOUT;
    } else if (st->state == STREAM_OPEN && !st->inspecting) {
        if (!st->upstream_eof && st->send.credit > 0) {
            if (e->ops->backlog(e->ud) < EGRESS_GUEST_BACKLOG_BYTES)
                ev |= EPOLLIN;
            else if (!e->backlog_timer)
                e->backlog_timer = loop_add_timer(e->loop, now_usec() + EGRESS_BACKLOG_RETRY_USEC,
                                                  egress_backlog_retry, e);
        }
        if (st->up_len > 0)
            ev |= EPOLLOUT;
    }
    stream_set_events(st, ev);
}

void
egress_backlog_retry(Loop *l, void *userdata)
{
    EgressSession *e = userdata;
    (void) l;
    e->backlog_timer = 0;
    egress_enter(e);
    for (Stream *st = e->streams; st; st = st->next)
        stream_update_events(st);
    egress_leave(e);
}

/* Connected: the stream opens, the runner gets its credit. */
static void
stream_opened(Stream *st)
{
    EgressSession *e = st->e;

    if (!(st->up = malloc(TUNNEL_WINDOW_BYTES))) {
        stream_end(st, "connect_failed", "out of memory");
        return;
    }
    loop_cancel_timer(e->loop, st->timer);
    st->timer = 0;
    if (st->inspecting) /* the first bytes must come, and be judged, in time */
        st->timer = loop_add_timer(e->loop, now_usec() + e->lim.first_flight_timeout_usec,
                                   stream_on_timeout, st);
    flow_send_init(&st->send);
    flow_recv_init(&st->recv);
    st->state = STREAM_OPEN;
    if (egress_send_open_result(e, st->id, OPEN_CODE(OK), "") < 0) {
        if (!e->dying)
            stream_end(st, "channel", NULL);
        return;
    }
    stream_update_events(st);
}

void
stream_connect(Stream *st)
{
    struct sockaddr_storage ss;

    while (st->next_addr < st->n_addrs) {
        st->addr = st->addrs[st->next_addr++];
        st->fd = safe_close(st->fd);
        st->fd = socket(st->addr.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (st->fd < 0) {
            st->connect_errno = errno;
            continue;
        }
        socklen_t len = stream_sockaddr(&st->addr, st->port, &ss);
        if (connect(st->fd, (struct sockaddr *) &ss, len) == 0) {
            stream_opened(st);
            return;
        }
        if (errno == EINPROGRESS) {
            st->state = STREAM_CONNECTING;
            stream_update_events(st);
            return;
        }
        st->connect_errno = errno;
    }
    stream_end(st, "connect_failed",
               strerror(st->connect_errno ? st->connect_errno : EHOSTUNREACH));
}

static void
stream_on_connect_done(Stream *st)
{
    int err = 0;
    socklen_t len = sizeof(err);

    if (getsockopt(st->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err == 0) {
        stream_opened(st);
        return;
    }
    st->connect_errno = err;
    stream_set_events(st, 0);
    stream_connect(st); /* the next vetted address, if any */
}

void
stream_on_timeout(Loop *l, void *userdata)
{
    Stream *st = userdata;
    EgressSession *e = st->e;
    (void) l;

    st->timer = 0;
    egress_enter(e);
    if (st->state == STREAM_RESOLVING)
        stream_deny(st, OPEN_CODE(TIMEOUT), "timeout", "the name did not resolve in time", NULL);
    else if (st->state == STREAM_CONNECTING)
        stream_end(st, "connect_timeout", "no vetted address answered in time");
    else if (st->inspecting)
        stream_refuse(st, "inspect_limit", "no complete first request or ClientHello in time");
    egress_leave(e);
}

/* Guest bytes out to the upstream; consumed bytes become credit for the guest. */
static bool
stream_write_upstream(Stream *st)
{
    EgressSession *e = st->e;
    struct iovec iov[2];
    size_t first = MIN(st->up_len, TUNNEL_WINDOW_BYTES - st->up_head);
    int n = 0;

    iov[n++] = (struct iovec){st->up + st->up_head, first};
    if (st->up_len > first)
        iov[n++] = (struct iovec){st->up, st->up_len - first};
    ssize_t w = st->up_len ? writev(st->fd, iov, n) : 0;
    if (w < 0 && (errno == EAGAIN || errno == EINTR))
        return false;
    if (w < 0) {
        stream_end(st, "upstream_reset", strerror(errno));
        return true;
    }
    st->up_head = (st->up_head + (size_t) w) % TUNNEL_WINDOW_BYTES;
    st->up_len -= (size_t) w;
    (void) flow_recv_consumed(&st->recv, (size_t) w);
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__TunnelCredit c = STOCKADE__RUNNER__TUNNEL_CREDIT__INIT;
    if ((c.bytes = flow_recv_take_grant(&st->recv)) > 0) {
        c.stream_id = st->id;
        m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_CREDIT;
        m.tunnel_credit = &c;
        if (egress_send(e, &m) < 0) {
            if (!e->dying)
                stream_end(st, "channel", NULL);
            return true;
        }
    }
    if (st->up_len == 0 && st->guest_eof && !st->up_shut) {
        st->up_shut = true;
        (void) shutdown(st->fd, SHUT_WR);
    }
    return false;
}

/* Both directions ended and everything was written: a clean close. */
static bool
stream_check_done(Stream *st)
{
    if (!(st->upstream_eof && st->guest_eof && st->up_len == 0))
        return false;
    stream_end(st, "done", NULL);
    return true;
}

static bool
stream_send_data(Stream *st, const uint8_t *data, size_t len, bool eof)
{
    EgressSession *e = st->e;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__TunnelData d = STOCKADE__RUNNER__TUNNEL_DATA__INIT;

    (void) flow_send_spend(&st->send, len); /* len came from flow_send_allowance */
    d.stream_id = st->id;
    d.data.data = (uint8_t *) data;
    d.data.len = len;
    d.eof = eof;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_DATA;
    m.tunnel_data = &d;
    if (egress_send(e, &m) == 0)
        return false;
    if (!e->dying)
        stream_end(st, "channel", NULL);
    return true;
}

/* Upstream bytes to the guest, within the stream's credit and the session's byte limit. */
static bool
stream_read_upstream(Stream *st)
{
    EgressSession *e = st->e;
    uint64_t left = e->lim.max_bytes_in - MIN(e->bytes_in, e->lim.max_bytes_in);
    size_t want = flow_send_allowance(&st->send, MIN(sizeof(e->buf), left));

    if (left == 0) {
        e->bytes_spent = true;
        stream_end(st, "limit_bytes_in", "the session's egress download limit is reached");
        return true;
    }
    if (want == 0)
        return false;
    ssize_t n = read(st->fd, e->buf, want);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return false;
    if (n < 0) {
        stream_end(st, "upstream_reset", strerror(errno));
        return true;
    }
    st->bytes_in += (uint64_t) n;
    e->bytes_in += (uint64_t) n;
    st->upstream_eof = n == 0;
    if (stream_send_data(st, e->buf, (size_t) n, n == 0))
        return true;
    return st->upstream_eof && stream_check_done(st);
}

static void
stream_on_fd(LoopSource *src, int fd, uint32_t events, void *userdata)
{
    Stream *st = userdata;
    EgressSession *e = st->e;
    bool gone = false;
    (void) src;
    (void) fd;

    egress_enter(e);
    if (st->state == STREAM_CONNECTING) {
        stream_on_connect_done(st);
        egress_leave(e);
        return;
    }
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && st->up_len > 0)
        gone = stream_write_upstream(st) || stream_check_done(st);
    if (!gone && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && (st->events & EPOLLIN))
        gone = stream_read_upstream(st);
    if (!gone)
        stream_update_events(st);
    egress_leave(e);
}

/* A stream to a name: its first bytes (all held in st->up, from offset 0: nothing was written
 * yet) must ask that name (inspect.h). true: stop here, the stream is gone or waits for more. */
static bool
stream_inspect(Stream *st)
{
    InspectVerdict v;

    if (++st->pieces > EGRESS_FIRST_FLIGHT_PIECES_MAX) {
        stream_refuse(st, "inspect_limit", "too many pieces before a complete first request");
        return true;
    }
    switch (egress_inspect_first(st->up, st->up_len, st->guest_eof, st->name, st->port, &v)) {
    case INSPECT_NEED_MORE:
        return true;
    case INSPECT_REFUSE:
        stream_refuse(st, v.reason, v.detail);
        return true;
    case INSPECT_PASS:
        break;
    }
    st->inspecting = false;
    loop_cancel_timer(st->e->loop, st->timer);
    st->timer = 0;
    return false;
}

int
stream_on_guest_data(Stream *st, const Stockade__Runner__TunnelData *d, Error **errp)
{
    EgressSession *e = st->e;
    size_t len = d->data.len;

    if (st->state != STREAM_OPEN || st->guest_eof || flow_recv_on_data(&st->recv, len) < 0)
        return error_set(errp, E_GUEST, 0,
                         "tunnel stream %u: data before its open, after its "
                         "eof, or beyond its credit",
                         st->id);
    if (e->bytes_out + len > e->lim.max_bytes_out) {
        e->bytes_spent = true;
        stream_end(st, "limit_bytes_out", "the session's egress upload limit is reached");
        return 0;
    }
    size_t tail = (st->up_head + st->up_len) % TUNNEL_WINDOW_BYTES;
    size_t first = MIN(len, TUNNEL_WINDOW_BYTES - tail);
    if (len > 0) { /* an empty eof carries no buffer at all */
        memcpy(st->up + tail, d->data.data, first);
        memcpy(st->up, d->data.data + first, len - first);
    }
    st->up_len += len;
    st->bytes_out += len;
    e->bytes_out += len;
    st->guest_eof = d->eof;
    if (st->inspecting && stream_inspect(st))
        return 0;
    if (stream_write_upstream(st) || stream_check_done(st))
        return 0;
    stream_update_events(st);
    return 0;
}

int
stream_on_guest_credit(Stream *st, uint32_t bytes, Error **errp)
{
    if (st->state != STREAM_OPEN || flow_send_on_credit(&st->send, bytes) < 0)
        return error_set(errp, E_GUEST, 0,
                         "tunnel stream %u: credit before its open or over "
                         "the window",
                         st->id);
    stream_update_events(st);
    return 0;
}
