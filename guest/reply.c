/* Reply helpers and error mapping: see reply.h. */
#include "reply.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "guest_limits.h"

ErrCode
reply_code_from_category(ErrorCategory c)
{
    switch (c) {
    case E_NOT_FOUND:
        return ERRC(NOT_FOUND);
    case E_CONFLICT:
        return ERRC(EXISTS);
    case E_INVALID:
    case E_FORBIDDEN:
        return ERRC(INVALID_PATH);
    case E_TOO_LARGE:
        return ERRC(TOO_LARGE);
    case E_IO:
        return ERRC(IO);
    case E_UNAVAILABLE:
    case E_QUOTA:
        return ERRC(BUSY);
    default:
        return ERRC(INTERNAL);
    }
}

ErrorCategory
reply_category_from_errno(int e)
{
    switch (e) {
    case ENOENT:
    case ESRCH:
        return E_NOT_FOUND;
    case EEXIST:
    case ENOTEMPTY:
        return E_CONFLICT;
    case ELOOP:
    case EXDEV:
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
    case EINVAL:
    case ENXIO:
    case ENOEXEC:
    case EACCES:
    case EPERM:
        return E_INVALID;
    case EFBIG:
    case E2BIG:
    case EMFILE:
    case ENFILE:
        return E_TOO_LARGE;
    case ENOMEM:
    case EAGAIN:
    case EBUSY:
        return E_UNAVAILABLE;
    default:
        return E_IO;
    }
}

/* Reads a varint at p[*off..len); false when it is cut short or longer than 10 bytes. */
static bool
wire_varint(const uint8_t *p, size_t len, size_t *off, uint64_t *ret)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*off >= len)
            return false;
        uint8_t b = p[(*off)++];
        v |= (uint64_t) (b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *ret = v;
            return true;
        }
    }
    return false;
}

static bool
wire_skip(const uint8_t *p, size_t len, size_t *off, unsigned wire_type)
{
    uint64_t v;
    switch (wire_type) {
    case 0:
        return wire_varint(p, len, off, &v);
    case 1:
        return len - *off >= 8 ? (*off += 8, true) : false;
    case 2:
        if (!wire_varint(p, len, off, &v) || v > len - *off)
            return false;
        *off += (size_t) v;
        return true;
    case 5:
        return len - *off >= 4 ? (*off += 4, true) : false;
    default:
        return false;
    }
}

uint32_t
reply_peek_req_id(const uint8_t *payload, size_t len)
{
    size_t off = 0;
    uint64_t key, v;

    while (off < len) {
        if (!wire_varint(payload, len, &off, &key))
            return 0;
        if (key == (1u << 3 | 0)) /* field 1, varint */
            return wire_varint(payload, len, &off, &v) && v <= UINT32_MAX ? (uint32_t) v : 0;
        if (!wire_skip(payload, len, &off, (unsigned) (key & 7)))
            return 0;
    }
    return 0;
}

void
reply_sanitize(char *out, size_t cap, const char *in)
{
    size_t max = MIN(cap - 1, (size_t) ERROR_MESSAGE_MAX_BYTES);
    size_t o = 0;

    for (; in[o] && o < max; o++) {
        unsigned char c = (unsigned char) in[o];
        out[o] = c >= 0x20 && c <= 0x7e ? (char) c : '?';
    }
    out[o] = '\0';
}

static int
reply_push(OutQueue *q, uint32_t req_id, GuestMsg *m)
{
    m->req_id = req_id;
    return outq_push_msg(q, m);
}

int
reply_ack(OutQueue *q, uint32_t req_id)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Ack ack = STOCKADE__RUNNER__ACK__INIT;

    m.body_case = GBODY(ACK);
    m.ack = &ack;
    return reply_push(q, req_id, &m);
}

static int
reply_error_text(OutQueue *q, uint32_t req_id, ErrCode code, const char *text)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Error err = STOCKADE__RUNNER__ERROR__INIT;
    char clean[ERROR_MESSAGE_MAX_BYTES + 1];

    reply_sanitize(clean, sizeof(clean), text);
    err.code = code;
    err.message = clean;
    m.body_case = GBODY(ERROR);
    m.error = &err;
    return reply_push(q, req_id, &m);
}

int
reply_error(OutQueue *q, uint32_t req_id, ErrCode code, const char *fmt, ...)
{
    char text[ERROR_MESSAGE_MAX_BYTES + 1];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return reply_error_text(q, req_id, code, text);
}

int
reply_from_error(OutQueue *q, uint32_t req_id, const Error *e)
{
    return reply_error_text(q, req_id, reply_code_from_category(e->category), e->message);
}

void
reply_ready_init(GuestMsg *m, Stockade__Runner__Ready *ready, uint64_t nonce)
{
    *ready = (Stockade__Runner__Ready) STOCKADE__RUNNER__READY__INIT;
    ready->nonce = nonce;
    ready->protocol_version = PROTOCOL_VERSION;
    ready->runner_version = (char *) STOCKADE_VERSION;
    *m = (GuestMsg) STOCKADE__RUNNER__GUEST_MSG__INIT;
    m->body_case = GBODY(READY);
    m->ready = ready;
}
