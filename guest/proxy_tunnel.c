/* The egress proxy's wire side: the runner's tunnel messages, and what the host's do to the
 * streams (runner.proto "Tunnel"). Stream state is checked here: the host is trusted more
 * than a client, but a host message that breaks the stream protocol resets that stream and
 * is reported, never followed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy_internal.h"
#include "reply.h"

static int
tunnel_push(Proxy *p, GuestMsg *g, Error **errp)
{
    if (outq_push_msg(p->q, g) < 0)
        return error_set(errp, E_INTERNAL, errno, "tunnel message not queued");
    return 0;
}

int
tunnel_send_open(Proxy *p, ProxyConn *c, const char *host, uint16_t port, Error **errp)
{
    GuestMsg g = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__TunnelOpen o = STOCKADE__RUNNER__TUNNEL_OPEN__INIT;

    o.stream_id = c->id;
    o.host = (char *) host;
    o.port = port;
    g.body_case = GBODY(TUNNEL_OPEN);
    g.tunnel_open = &o;
    return tunnel_push(p, &g, errp);
}

int
tunnel_send_data(Proxy *p, ProxyConn *c, const uint8_t *data, size_t len, bool eof, Error **errp)
{
    GuestMsg g = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__TunnelData d = STOCKADE__RUNNER__TUNNEL_DATA__INIT;

    if (flow_send_spend(&c->send, len) < 0)
        return error_set(errp, E_INTERNAL, 0, "stream %u: data over its credit", c->id);
    d.stream_id = c->id;
    d.data.data = (uint8_t *) data;
    d.data.len = len;
    d.eof = eof;
    g.body_case = GBODY(TUNNEL_DATA);
    g.tunnel_data = &d;
    return tunnel_push(p, &g, errp);
}

int
tunnel_send_credit(Proxy *p, ProxyConn *c, Error **errp)
{
    GuestMsg g = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__TunnelCredit cr = STOCKADE__RUNNER__TUNNEL_CREDIT__INIT;

    cr.bytes = flow_recv_take_grant(&c->recv);
    if (cr.bytes == 0 || c->id == 0)
        return 0;
    cr.stream_id = c->id;
    g.body_case = GBODY(TUNNEL_CREDIT);
    g.tunnel_credit = &cr;
    if (tunnel_push(p, &g, errp) < 0) {
        flow_recv_ungrant(&c->recv, cr.bytes); /* granted again with the next batch */
        return -1;
    }
    return 0;
}

int
tunnel_send_close(Proxy *p, uint32_t id, Error **errp)
{
    GuestMsg g = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__TunnelClose cl = STOCKADE__RUNNER__TUNNEL_CLOSE__INIT;

    cl.stream_id = id;
    cl.reset = true; /* the runner only ever aborts; clean ends are the host's to declare */
    g.body_case = GBODY(TUNNEL_CLOSE);
    g.tunnel_close = &cl;
    return tunnel_push(p, &g, errp);
}

static int
tunnel_status_of(OpenCode code)
{
    switch (code) {
    case OPEN_CODE(DENIED):
        return 403;
    case OPEN_CODE(LIMIT):
        return 429;
    case OPEN_CODE(TIMEOUT):
        return 504;
    default:
        return 502;
    }
}

/* A host message that breaks the stream protocol: reset the stream, report. */
static int
tunnel_host_broke(Proxy *p, ProxyConn *c, const char *what, Error **errp)
{
    uint32_t id = c->id;
    (void) proxy_conn_abort(p, c, NULL);
    return error_set(errp, E_GUEST, 0, "host broke stream %u: %s", id, what);
}

static int
tunnel_on_open_result(Proxy *p, const Stockade__Runner__TunnelOpenResult *r, Error **errp)
{
    ProxyConn *c = proxy_find(p, r->stream_id);

    if (!c)
        return 0; /* the client left meanwhile: we reset it, the host forgot it */
    if (c->state != PC_OPENING)
        return tunnel_host_broke(p, c, "a second open result", errp);
    if (r->code != OPEN_CODE(OK)) {
        proxy_conn_fail(c, tunnel_status_of(r->code), r->message[0] ? r->message : "refused");
        return 0;
    }
    if (!(c->down = malloc(TUNNEL_WINDOW_BYTES))) {
        (void) proxy_conn_abort(p, c, NULL);
        return error_set(errp, E_INTERNAL, ENOMEM, "proxy stream");
    }
    flow_send_init(&c->send);
    flow_recv_init(&c->recv);
    c->state = PC_RELAY;
    return proxy_flush(p, errp); /* the rewritten head goes first, if the queue has room */
}

/* Host bytes into the ring; the flow invariant guarantees they fit. */
static int
tunnel_on_data(Proxy *p, const Stockade__Runner__TunnelData *d, Error **errp)
{
    ProxyConn *c = proxy_find(p, d->stream_id);
    size_t len = d->data.len;

    if (!c)
        return 0;
    if (c->state != PC_RELAY || c->host_eof)
        return tunnel_host_broke(p, c, "data before open or after eof", errp);
    if (flow_recv_on_data(&c->recv, len) < 0 || c->down_len + len > TUNNEL_WINDOW_BYTES)
        return tunnel_host_broke(p, c, "data beyond its credit", errp);
    size_t tail = (c->down_head + c->down_len) % TUNNEL_WINDOW_BYTES;
    size_t first = MIN(len, TUNNEL_WINDOW_BYTES - tail);
    if (len > 0) { /* an empty eof carries no buffer at all */
        memcpy(c->down + tail, d->data.data, first);
        memcpy(c->down, d->data.data + first, len - first);
    }
    c->down_len += len;
    c->host_eof = d->eof;
    if (c->host_eof && c->down_len == 0 && c->reply_off == c->reply_len && !c->client_shut) {
        c->client_shut = true;
        (void) shutdown(c->fd, SHUT_WR);
    }
    return 0;
}

static int
tunnel_on_credit(Proxy *p, const Stockade__Runner__TunnelCredit *cr, Error **errp)
{
    ProxyConn *c = proxy_find(p, cr->stream_id);

    if (!c)
        return 0;
    if (c->state != PC_RELAY || flow_send_on_credit(&c->send, cr->bytes) < 0)
        return tunnel_host_broke(p, c, "credit before open or over the window", errp);
    return 0;
}

/* A clean close still delivers what the client has not read yet; a reset drops it. */
static int
tunnel_on_close(Proxy *p, const Stockade__Runner__TunnelClose *cl)
{
    ProxyConn *c = proxy_find(p, cl->stream_id);

    if (!c)
        return 0;
    c->id = 0; /* the host forgot it: nothing more is sent for it */
    if (cl->reset || c->state != PC_RELAY) {
        proxy_conn_free(p, c);
        return 0;
    }
    c->state = PC_CLOSING;
    if (c->reply_off == c->reply_len && c->down_len == 0)
        proxy_conn_free(p, c);
    return 0;
}

int
proxy_on_host_msg(Proxy *p, const HostMsg *m, Error **errp)
{
    switch (m->body_case) {
    case HBODY(TUNNEL_OPEN_RESULT):
        return tunnel_on_open_result(p, m->tunnel_open_result, errp);
    case HBODY(TUNNEL_DATA):
        return tunnel_on_data(p, m->tunnel_data, errp);
    case HBODY(TUNNEL_CREDIT):
        return tunnel_on_credit(p, m->tunnel_credit, errp);
    case HBODY(TUNNEL_CLOSE):
        return tunnel_on_close(p, m->tunnel_close);
    default:
        return error_set(errp, E_INTERNAL, 0, "not a tunnel message");
    }
}
