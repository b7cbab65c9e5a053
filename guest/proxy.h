/* The egress proxy inside the guest: HTTP clients of the session reach the network only
 * through here, and from here only through the channel (runner.proto "Tunnel").
 *
 * Listens on 127.0.0.1:PROXY_PORT (guest_limits.h) once Hello asked for egress; the guest has
 * no NIC and no resolver, so this is the only way out. Each client connection carries one
 * request head (proxyreq.h: CONNECT host:port, or absolute-form plain HTTP rewritten to origin
 * form with `Connection: close`), becomes one tunnel stream (TunnelOpen with the host exactly
 * as written) and, once the host answers OK, relays bytes both ways under credit-based flow
 * control (flow.h): a client is read only while its stream has credit and the outbound queue
 * has room, and at most TUNNEL_WINDOW_BYTES from the host wait per connection.
 * The host's refusals become HTTP answers: DENIED 403, UNREACHABLE 502, LIMIT 429,
 * TIMEOUT 504; a bad request head 400/431; more than max_conns clients at once 503.
 * Half closes travel both ways (TunnelData.eof <-> shutdown); a client that resets or errs
 * resets its stream (TunnelClose{reset}); a host that breaks the stream protocol (data beyond
 * credit, data after eof, credit over the window) gets its stream reset and an error back.
 * Memory: per connection one head buffer (PROXY_HEAD_MAX_BYTES) until the head is parsed,
 * then one window of TUNNEL_WINDOW_BYTES. No logging: callers log what is returned. */
#pragma once

#include <poll.h>
#include <stdint.h>

#include "error.h"
#include "message.h"
#include "outq.h"

typedef struct Proxy Proxy;

/* Listens on 127.0.0.1:port; messages go to q (borrowed). max_conns: 1..TUNNEL_STREAMS_MAX. */
Proxy *proxy_new(OutQueue *q, uint16_t port, unsigned max_conns, Error **errp);
/* Closes the listener and every client; sends nothing (the session is over). NULL is fine. */
void proxy_free(Proxy *p);

/* Loop integration: fds to poll (clients are read only while the queue has room), their
 * results, and the work that waits only for queue room (a stream's first bytes). */
size_t proxy_poll_add(Proxy *p, struct pollfd *pfd, size_t cap);
int proxy_poll_handle(Proxy *p, const struct pollfd *pfd, size_t n, Error **errp);
int proxy_flush(Proxy *p, Error **errp);

/* A tunnel message from the host (already checked by proto/). Messages for streams that are
 * gone are dropped. -1 with errp when the host broke the stream protocol (that stream is
 * reset) or a reply could not be queued. */
int proxy_on_host_msg(Proxy *p, const HostMsg *m, Error **errp);
