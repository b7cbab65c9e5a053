/* What the TCP front door looks for on a TLS listener (http_accept.c), pure so it is
 * unit-tested and fuzzed: the first TLS record, which carries the client's ClientHello. */
#pragma once

#include <stddef.h>
#include <stdint.h>

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
