/* The server name a TLS client asks for: the server_name extension (RFC 6066 3) of the
 * ClientHello (RFC 8446 4.1.2) a client of the egress proxy sends first on a stream. The
 * engine compares it with the host the stream was opened for (inspect.h), so a guest cannot
 * CONNECT to an allowed name and then ask the same CDN for another site (domain fronting).
 * Pure: no I/O, no allocation; unit tested and fuzzed (tests/fuzz/fuzz_egress_sni.c).
 *
 * Input: the bytes the client sent so far, from the stream's first byte: TLS records of type
 * handshake (22), version 3.x, 1..16384 bytes each. The ClientHello may be split over any
 * number of records (record layer fragmentation) and those may arrive in any pieces: the
 * parser walks across record headers, so nothing is reassembled or copied but the name.
 * Every length (record, handshake, session id, cipher suites, compression methods, the
 * extensions block, each extension, the name list, each name) is checked against the span
 * that holds it; the extensions must end exactly where the ClientHello ends.
 * Refused (SNI_BAD, with why): a record that is not a handshake, a handshake message that is
 * not a ClientHello, any inconsistent length, two
 * server_name extensions, an empty name list, a name type other than host_name, more than
 * one name, a name with bytes outside printable ASCII or that is not a host name (an IP
 * literal, which RFC 6066 forbids, or bad label syntax). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host.h"

#define TLS_RECORD_HEADER_BYTES 5
#define TLS_RECORD_MAX_BYTES 16384 /* 2^14: a plaintext record's payload (RFC 8446 5.1) */
#define TLS_CONTENT_HANDSHAKE 22
#define TLS_HANDSHAKE_CLIENT_HELLO 1
#define TLS_EXT_SERVER_NAME 0x0000
#define TLS_EXT_ECH 0xfe0d /* encrypted_client_hello (RFC 9849): the real name is hidden */
/* The ClientHello message (header included) may be at most this long; with its record
 * headers it must also fit in what the engine buffers (EGRESS_FIRST_FLIGHT_MAX_BYTES). */
#define EGRESS_HELLO_MAX_BYTES (16u * 1024u)

typedef enum {
    SNI_NEED_MORE, /* a prefix of a well-formed ClientHello: give more bytes */
    SNI_FOUND,     /* ret->name holds the one host name, normalised (host.h) */
    SNI_ABSENT,    /* a well-formed ClientHello without server_name */
    SNI_BAD,       /* ret->why says what */
    SNI_TOO_LARGE, /* the ClientHello says it is over EGRESS_HELLO_MAX_BYTES */
} SniStatus;

typedef struct SniResult {
    char name[EGRESS_NAME_MAX_BYTES + 1]; /* SNI_FOUND: lowercased, no trailing dot */
    bool ech;                             /* FOUND/ABSENT: an encrypted_client_hello was offered */
    const char *why;                      /* SNI_BAD, SNI_TOO_LARGE: static, printable */
} SniResult;

/* Parses buf[0..len), the first bytes of a stream. *ret is filled in every case. */
SniStatus egress_sni_parse(const uint8_t *buf, size_t len, SniResult *ret);
