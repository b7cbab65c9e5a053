/* hostd/egress: the allow-list proxy a session's guest reaches through its channel
 * (DESIGN.md invariant 5; runner.proto "Tunnel").
 *
 * One EgressSession per session with egress. For every TunnelOpen it decides, in this order:
 * per-session limits (streams at once, streams in all, bytes), the host's form (host.h),
 * then for a numeric host (any spelling) that its address lies in one of the session's CIDRs
 * and is not refused by classify.h unless a CIDR exempts it; for a name, that a pattern of
 * the session's allow-list matches it (names that do not match are never resolved: no DNS
 * leaks), then resolves it on a worker (resolver.h) and refuses it if any address is refused.
 * It connects, non-blocking, to exactly the addresses it vetted, in order (no second lookup).
 * On a stream to a name the guest's first bytes are held until inspect.h judged them (TLS
 * server_name or HTTP Host must name the host; at most EGRESS_FIRST_FLIGHT_MAX_BYTES, within
 * first_flight_timeout_usec); after that, and on numeric hosts from the start, bytes are
 * relayed under credit-based flow control (flow.h) without parsing: a redirect is the
 * guest's to follow or not. Upstream reads stop while the guest's channel holds more
 * than EGRESS_GUEST_BACKLOG_BYTES, so a slow guest never makes the daemon buffer more.
 * Memory per stream: one window (TUNNEL_WINDOW_BYTES) of guest bytes for the upstream.
 *
 * Events (through ops->event, attributes as JSON):
 *   egress.allowed  {stream, host, port, address, addresses}        the decision to connect
 *   egress.denied   {stream, host, port, reason, detail[, address]} every refusal; after
 *                   limits.max_denied_events, one egress.suppressed and then counts only
 *   egress.closed   {stream, host, port, address, reason, bytes_in, bytes_out, ms}
 *   egress.summary  {opened, allowed, denied, denied_unrecorded, bytes_in, bytes_out} at the end
 * reason (denied): limit_streams, limit_streams_total, limit_bytes, limit_lookups, bad_host,
 *   not_allowed, forbidden_address, unresolvable, timeout; after the open, on a stream to a
 *   name whose first bytes do not ask for it (inspect.h): sni_mismatch, host_mismatch,
 *   unknown_protocol, inspect_limit (followed by egress.closed with the same reason);
 * reason (closed): done, guest_reset, upstream_reset, connect_failed, connect_timeout,
 *   limit_bytes_in, limit_bytes_out, channel, session_ended, and those four.
 * A guest that breaks the tunnel protocol (an id not above the last, data beyond credit or
 * before OK or after eof, credit over the window, a message for an id never opened) makes
 * egress_session_on_message() fail with E_GUEST: the owner destroys the guest.
 * Loop thread only. Callbacks (ops) may end the session: egress_session_free() from inside
 * one is deferred until the egress code on the stack has returned. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "error.h"
#include "loop.h"
#include "message.h"
#include "policy.h"
#include "resolver.h"

#define EGRESS_GUEST_BACKLOG_BYTES (1024u * 1024u) /* channel bytes queued for the guest */
#define EGRESS_BACKLOG_RETRY_USEC 2000             /* how soon a held-back read is retried */
#define EGRESS_ADDRS_MAX 16                        /* vetted addresses tried, in order */
#define EGRESS_LOOKUPS_MAX 8                       /* names being resolved at once per session */

typedef struct EgressOps {
    /* Queues m for the guest (req_id is left 0). */
    int (*send)(void *userdata, HostMsg *m, Error **errp);
    /* Bytes queued for the guest and not yet written. */
    size_t (*backlog)(void *userdata);
    /* Records a session event; attrs is stolen. */
    void (*event)(void *userdata, const char *type, json_t *attrs);
} EgressOps;

typedef struct EgressSession EgressSession;

/* allowed (the session's allow-list) and lim are copied; ops and userdata must outlive it. */
int egress_session_new(Loop *l, EgressResolver *r, const EgressPolicy *allowed,
                       const EgressLimits *lim, const EgressOps *ops, void *userdata,
                       EgressSession **ret, Error **errp);
/* A tunnel message from the guest. -1 with E_GUEST when the guest broke the protocol. */
int egress_session_on_message(EgressSession *e, const GuestMsg *m, Error **errp);
/* Closes every stream (egress.closed reason session_ended), then egress.summary. */
void egress_session_free(EgressSession *e);
