/* Internal to proxy.c (listener, clients) and proxy_tunnel.c (the wire side). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow.h"
#include "guest_limits.h"
#include "proxy.h"

typedef enum {
    PC_HEAD,    /* reading the request head */
    PC_OPENING, /* TunnelOpen sent, waiting for TunnelOpenResult; the client is not read */
    PC_RELAY,   /* the stream is open: bytes both ways */
    PC_CLOSING, /* no stream any more: writing what is left to the client, then closing */
} ProxyConnState;

typedef struct ProxyConn {
    int fd;
    ProxyConnState state;
    uint32_t id; /* the stream, while the host knows it (OPENING, RELAY); else 0 */
    uint8_t *in; /* PC_HEAD: the head so far, PROXY_HEAD_MAX_BYTES */
    size_t in_len;
    uint8_t *up; /* sent to the host before anything else: rewritten head + early bytes */
    size_t up_len, up_off;
    char reply[PROXY_REPLY_MAX_BYTES]; /* the proxy's own answer, written before relayed bytes */
    size_t reply_len, reply_off;
    uint8_t *down; /* ring of TUNNEL_WINDOW_BYTES: host -> client */
    size_t down_head, down_len;
    FlowSend send;   /* client -> host */
    FlowRecv recv;   /* host -> client */
    bool client_eof; /* the client's direction ended (sent on as TunnelData.eof) */
    bool host_eof;   /* the host's direction ended: shut the client's side once drained */
    bool client_shut;
} ProxyConn;

struct Proxy {
    OutQueue *q;
    int listen_fd;
    unsigned max_conns, n_conns;
    uint32_t next_id; /* 0 once the id space is used up */
    ProxyConn *conns[TUNNEL_STREAMS_MAX];
    ProxyConn *refs[PROXY_POLL_FDS_MAX]; /* the conn behind each polled fd (NULL: listener) */
    uint8_t buf[TUNNEL_DATA_MAX_BYTES];
    uint8_t rewrite[PROXY_REWRITE_MAX_BYTES];
};

/* proxy.c */
ProxyConn *proxy_find(Proxy *p, uint32_t id);
void proxy_conn_free(Proxy *p, ProxyConn *c);
/* Ends the stream (if the host knows it: TunnelClose{reset}) and the connection. */
int proxy_conn_abort(Proxy *p, ProxyConn *c, Error **errp);
/* The proxy's own HTTP answer; the connection then closes once it is written. */
void proxy_conn_fail(ProxyConn *c, int status, const char *why);

/* proxy_tunnel.c: builders of the runner's tunnel messages (req_id 0). */
int tunnel_send_open(Proxy *p, ProxyConn *c, const char *host, uint16_t port, Error **errp);
int tunnel_send_data(Proxy *p, ProxyConn *c, const uint8_t *data, size_t len, bool eof,
                     Error **errp);
/* Sends the credit that flow_recv_take_grant() says is due (none: nothing sent). */
int tunnel_send_credit(Proxy *p, ProxyConn *c, Error **errp);
int tunnel_send_close(Proxy *p, uint32_t id, Error **errp);
