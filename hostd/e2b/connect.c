/* See connect.h. The envelope codec has the shape of proto/frame.c: peek, never copy. */
#include "connect.h"

#include <string.h>

ConnectStatus
connect_envelope_peek(const uint8_t *buf, size_t avail, uint32_t max_payload, ConnectEnvelope *ret)
{
    if (avail < CONNECT_ENVELOPE_HDR_BYTES)
        return CONNECT_NEED_MORE;
    uint8_t flags = buf[0];
    uint32_t len = (uint32_t) buf[1] << 24 | (uint32_t) buf[2] << 16 | (uint32_t) buf[3] << 8 |
                   (uint32_t) buf[4];
    if ((flags & ~(CONNECT_FLAG_COMPRESSED | CONNECT_FLAG_END_STREAM)) || len > max_payload)
        return CONNECT_BAD;
    if (avail - CONNECT_ENVELOPE_HDR_BYTES < len)
        return CONNECT_NEED_MORE;
    *ret = (ConnectEnvelope){.flags = flags,
                             .payload = buf + CONNECT_ENVELOPE_HDR_BYTES,
                             .len = len,
                             .consumed = CONNECT_ENVELOPE_HDR_BYTES + (size_t) len};
    return CONNECT_OK;
}

int
connect_stream_request(const uint8_t *body, size_t len, const uint8_t **ret_payload,
                       size_t *ret_len, const char **ret_why)
{
    ConnectEnvelope msg, tail;

    switch (connect_envelope_peek(body, len, CONNECT_REQUEST_MAX_BYTES, &msg)) {
    case CONNECT_NEED_MORE:
        *ret_why = "the body is not one whole envelope (5-byte prefix, then the message)";
        return -1;
    case CONNECT_BAD:
        *ret_why = "bad envelope: unknown flags, or a message over 1 MiB";
        return -1;
    case CONNECT_OK:
        break;
    }
    if (msg.flags != 0) {
        *ret_why = msg.flags & CONNECT_FLAG_COMPRESSED
                       ? "compressed messages are not supported (use identity)"
                       : "the request starts with an end-stream envelope";
        return -1;
    }
    if (msg.consumed < len) {
        ConnectStatus st =
            connect_envelope_peek(body + msg.consumed, len - msg.consumed, 64, &tail);
        if (st != CONNECT_OK || tail.flags != CONNECT_FLAG_END_STREAM ||
            msg.consumed + tail.consumed != len) {
            *ret_why = "a server-streaming request carries exactly one message";
            return -1;
        }
    }
    *ret_payload = msg.payload;
    *ret_len = msg.len;
    return 0;
}

void
connect_envelope_header(uint8_t flags, uint32_t len, uint8_t out[CONNECT_ENVELOPE_HDR_BYTES])
{
    out[0] = flags;
    out[1] = (uint8_t) (len >> 24);
    out[2] = (uint8_t) (len >> 16);
    out[3] = (uint8_t) (len >> 8);
    out[4] = (uint8_t) len;
}

static const struct {
    const char *name;
    unsigned status;
} codes[_CONNECT_CODE_MAX] = {
    [CONNECT_CANCELED] = {"canceled", 499},
    [CONNECT_UNKNOWN] = {"unknown", 500},
    [CONNECT_INVALID_ARGUMENT] = {"invalid_argument", 400},
    [CONNECT_DEADLINE_EXCEEDED] = {"deadline_exceeded", 504},
    [CONNECT_NOT_FOUND] = {"not_found", 404},
    [CONNECT_ALREADY_EXISTS] = {"already_exists", 409},
    [CONNECT_PERMISSION_DENIED] = {"permission_denied", 403},
    [CONNECT_RESOURCE_EXHAUSTED] = {"resource_exhausted", 429},
    [CONNECT_FAILED_PRECONDITION] = {"failed_precondition", 400},
    [CONNECT_ABORTED] = {"aborted", 409},
    [CONNECT_OUT_OF_RANGE] = {"out_of_range", 400},
    [CONNECT_UNIMPLEMENTED] = {"unimplemented", 501},
    [CONNECT_INTERNAL] = {"internal", 500},
    [CONNECT_UNAVAILABLE] = {"unavailable", 503},
    [CONNECT_DATA_LOSS] = {"data_loss", 500},
    [CONNECT_UNAUTHENTICATED] = {"unauthenticated", 401},
};

const char *
connect_code_name(ConnectCode c)
{
    return (unsigned) c < _CONNECT_CODE_MAX ? codes[c].name : "unknown";
}

unsigned
connect_code_http_status(ConnectCode c)
{
    return (unsigned) c < _CONNECT_CODE_MAX ? codes[c].status : 500;
}

ConnectCode
connect_code_for(ErrorCategory c)
{
    static const ConnectCode map[_E_CATEGORY_MAX] = {
        [E_INTERNAL] = CONNECT_INTERNAL,
        [E_INVALID] = CONNECT_INVALID_ARGUMENT,
        [E_UNAUTHORIZED] = CONNECT_UNAUTHENTICATED,
        [E_FORBIDDEN] = CONNECT_PERMISSION_DENIED,
        [E_NOT_FOUND] = CONNECT_NOT_FOUND,
        [E_CONFLICT] = CONNECT_FAILED_PRECONDITION,
        [E_TOO_LARGE] = CONNECT_RESOURCE_EXHAUSTED,
        [E_QUOTA] = CONNECT_RESOURCE_EXHAUSTED,
        [E_UNAVAILABLE] = CONNECT_UNAVAILABLE,
        [E_TIMEOUT] = CONNECT_DEADLINE_EXCEEDED,
        [E_GUEST] = CONNECT_UNAVAILABLE,
        [E_IO] = CONNECT_INTERNAL,
    };
    return (unsigned) c < _E_CATEGORY_MAX ? map[c] : CONNECT_INTERNAL;
}
