/* The pieces of the Connect protocol (connectrpc.com/docs/protocol) the envd face speaks:
 * the 5-byte envelope of streaming bodies (flags, u32 big-endian length, payload) and the
 * mapping of Stockade's error categories to Connect codes and their HTTP statuses.
 * Pure: no I/O, no allocation, no clock; the stream producers and the fuzzer call it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CONNECT_ENVELOPE_HDR_BYTES 5
#define CONNECT_FLAG_COMPRESSED 0x01u
#define CONNECT_FLAG_END_STREAM 0x02u
/* One request message of a streaming call (a Start, Connect or WatchDir request is a few
 * hundred bytes; argv and env are bounded far below this by the sessions module). */
#define CONNECT_REQUEST_MAX_BYTES (1u << 20)

typedef enum { CONNECT_NEED_MORE, CONNECT_OK, CONNECT_BAD } ConnectStatus;

typedef struct ConnectEnvelope {
    uint8_t flags;
    const uint8_t *payload; /* points into the buffer given */
    uint32_t len;
    size_t consumed; /* header + payload */
} ConnectEnvelope;

/* The envelope at the start of buf[0..avail). CONNECT_BAD for a length over max_payload or
 * flags other than CONNECT_FLAG_* bits. ret is written only for CONNECT_OK. */
ConnectStatus connect_envelope_peek(const uint8_t *buf, size_t avail, uint32_t max_payload,
                                    ConnectEnvelope *ret);
/* The single message of a server-streaming request body: exactly one uncompressed
 * message envelope (a small end-stream envelope after it is tolerated), nothing else.
 * -1 with *ret_why set (a static string) otherwise. */
int connect_stream_request(const uint8_t *body, size_t len, const uint8_t **ret_payload,
                           size_t *ret_len, const char **ret_why);
void connect_envelope_header(uint8_t flags, uint32_t len, uint8_t out[CONNECT_ENVELOPE_HDR_BYTES]);

typedef enum {
    CONNECT_CANCELED,
    CONNECT_UNKNOWN,
    CONNECT_INVALID_ARGUMENT,
    CONNECT_DEADLINE_EXCEEDED,
    CONNECT_NOT_FOUND,
    CONNECT_ALREADY_EXISTS,
    CONNECT_PERMISSION_DENIED,
    CONNECT_RESOURCE_EXHAUSTED,
    CONNECT_FAILED_PRECONDITION,
    CONNECT_ABORTED,
    CONNECT_OUT_OF_RANGE,
    CONNECT_UNIMPLEMENTED,
    CONNECT_INTERNAL,
    CONNECT_UNAVAILABLE,
    CONNECT_DATA_LOSS,
    CONNECT_UNAUTHENTICATED,
    _CONNECT_CODE_MAX,
} ConnectCode;

/* "not_found", ... as the wire and the SDK spell them. */
const char *connect_code_name(ConnectCode c);
/* The HTTP status of a unary error with that code (Connect's table). */
unsigned connect_code_http_status(ConnectCode c);
/* The code for an error of that category: E_GUEST (the sandbox broke or is gone) is
 * unavailable, like E_UNAVAILABLE. */
ConnectCode connect_code_for(ErrorCategory c);
