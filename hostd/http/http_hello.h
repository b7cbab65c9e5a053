/* What the TCP front door looks for before it hands a connection to MHD (http_accept.c),
 * pure so it is unit-tested and fuzzed: on a plain listener the blank line that ends the
 * request head; on a TLS listener the first TLS record, which carries the ClientHello. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether the head peeked so far, buf[0..len) (the connection's first bytes, growing from
 * one call to the next), holds a blank line: LF LF or LF CR LF (MHD judges CRLF against a
 * bare LF). *scanned (0 before the first call) is how far earlier calls searched: only the
 * new bytes and the two before them are searched again. */
bool http_head_complete(size_t *scanned, const uint8_t *buf, size_t len);

/* A TLS record: type, version (2), length (2), then at most 2^14 bytes of a handshake. */
#define HTTP_TLS_RECORD_HEADER_BYTES 5
#define HTTP_TLS_RECORD_MAX_BYTES (HTTP_TLS_RECORD_HEADER_BYTES + 16384)

typedef enum {
    HTTP_HELLO_MORE,     /* a plausible start: wait for more bytes */
    HTTP_HELLO_COMPLETE, /* the first record is whole: hand the connection over */
    HTTP_HELLO_NOT_TLS,  /* not a TLS handshake record (e.g. plain HTTP): close */
} HttpHelloState;

/* Judges the first len bytes a client sent to a TLS listener. */
HttpHelloState http_tls_hello_state(const uint8_t *buf, size_t len);
