/* The egress proxy's request parser: one HTTP/1.x request head from a client of the proxy
 * (proxy.c). Pure: bytes in, a decision out; no I/O, no allocation, fuzzed
 * (tests/fuzz/fuzz_proxyreq.c).
 *
 * Accepted: `CONNECT host:port HTTP/1.x` (authority form, port required), and plain HTTP in
 * absolute form, `METHOD http://host[:port][/path][?query] HTTP/1.x` (port defaults to 80),
 * which is rewritten to origin form for the upstream: `METHOD /path?query HTTP/1.x`, then
 * `Host: <the URL's authority>`, then the client's headers except the hop-by-hop ones and its
 * own Host (Connection, Proxy-Connection, Keep-Alive, Proxy-Authorization, TE, Upgrade), then
 * `Connection: close`: one request per connection, so every request on the stream went to
 * the host that was vetted for it.
 * The host is passed on exactly as written (a name, any inet_aton spelling of an IPv4
 * address, or an IPv6 address in brackets, zone included): the daemon, not the guest, decides
 * what it means. Nothing is resolved here.
 * Refused (with the HTTP status to answer): a head over PROXY_HEAD_MAX_BYTES or with more than
 * PROXY_HEADERS_MAX headers (431), lines not ended by CRLF, folded headers, a bad method,
 * version or header name (400), an origin-form or https:// target, userinfo, a fragment, a
 * host with characters outside [A-Za-z0-9._-] (brackets: also ':' and '%'), a port outside
 * 1..65535 (400). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest_limits.h"

typedef enum { PROXYREQ_NEED_MORE, PROXYREQ_OK, PROXYREQ_BAD } ProxyReqStatus;

typedef struct ProxyRequest {
    bool is_connect;
    char host[TUNNEL_HOST_MAX_BYTES + 1];
    uint16_t port;
    size_t head_len; /* bytes of the client's head, CRLFCRLF included; its data follows */
    size_t out_len;  /* plain HTTP: the rewritten head in out[0..out_len); CONNECT: 0 */
    int status;      /* PROXYREQ_BAD: the HTTP status to answer */
    const char *why; /* PROXYREQ_BAD: a static, printable reason */
} ProxyRequest;

/* Parses buf[0..len), the start of a client connection. NEED_MORE until the head is complete
 * (or over the limit). On OK, for plain HTTP, the rewritten head is written to out[0..outcap)
 * (outcap >= PROXY_REWRITE_MAX_BYTES always suffices). *ret is filled in every case. */
ProxyReqStatus proxyreq_parse(const uint8_t *buf, size_t len, uint8_t *out, size_t outcap,
                              ProxyRequest *ret);
