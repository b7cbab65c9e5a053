/* The first bytes a client sends on a stream to a name, judged before any of them reaches the
 * upstream: the allow-list admitted a name, so the bytes must ask that name for something.
 * Pure: no I/O, no allocation; unit tested and fuzzed (tests/fuzz/fuzz_egress_sni.c).
 *
 *  - A TLS handshake (first byte 22): the ClientHello (sni.h) must name the stream's host in
 *    server_name. Refused (sni_mismatch): another name, no name (a name-based stream without
 *    SNI reaches whatever the server's default site is, on a CDN someone else's), an
 *    encrypted_client_hello (ECH hides the real name behind a public one).
 *  - An HTTP/1.0 or 1.1 request head (a method token, then a space): the request target must
 *    be origin form ("/..." or "*"), there must be exactly one Host header and it must name
 *    the stream's host (and port, when it gives one), and Connection must be exactly "close"
 *    (the guest proxy always writes that): a compliant server answers that one request and no
 *    further one on the connection (RFC 9112 9.6), so no second request can name another host.
 *    Refused: host_mismatch.
 *  - Anything else (including a malformed ClientHello or request head, HTTP/2 prior
 *    knowledge, SSH, or an end of stream before a verdict): unknown_protocol.
 * Nothing passes until a verdict; more than EGRESS_FIRST_FLIGHT_MAX_BYTES without one is
 * inspect_limit (the caller also refuses after EGRESS_FIRST_FLIGHT_PIECES_MAX pieces and after
 * a deadline). Numeric hosts are not inspected: their CIDR admits the address, whatever name
 * it serves. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host.h"

#define EGRESS_FIRST_FLIGHT_MAX_BYTES (16u * 1024u) /* buffered before a verdict */
#define EGRESS_FIRST_FLIGHT_PIECES_MAX 64           /* guest messages before a verdict */
#define EGRESS_HTTP_METHOD_MAX_BYTES 32
#define EGRESS_INSPECT_DETAIL_BYTES 320

typedef enum { INSPECT_NEED_MORE, INSPECT_PASS, INSPECT_REFUSE } InspectStatus;

typedef struct InspectVerdict {
    const char *reason;                       /* INSPECT_REFUSE: sni_mismatch, host_mismatch,
                                                 unknown_protocol, inspect_limit */
    char detail[EGRESS_INSPECT_DETAIL_BYTES]; /* INSPECT_REFUSE: printable, for the event */
} InspectVerdict;

/* buf[0..len): everything the client sent so far; eof: it will send nothing more. name: the
 * stream's host, normalised (host.h); port: the stream's port. */
InspectStatus egress_inspect_first(const uint8_t *buf, size_t len, bool eof, const char *name,
                                   uint16_t port, InspectVerdict *ret);
