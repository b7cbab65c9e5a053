/* Frame codec: see frame.h. Pure; fuzzed by tests/fuzz/fuzz_frame.c. */
#include "frame.h"

#include <string.h>

static const uint8_t sync_magic[8] = {0, 0, 0, 0, 'S', 'T', 'K', 'S'};

static uint32_t
load_be32(const uint8_t *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

FrameStatus
frame_peek(const uint8_t *buf, size_t avail, size_t *ret_len)
{
    if (avail < FRAME_HDR_BYTES)
        return FRAME_NEED_MORE;
    uint32_t len = load_be32(buf);
    if (len == 0) {
        size_t have = MIN_SIZE(avail, sizeof(sync_magic));
        if (memcmp(buf, sync_magic, have) != 0)
            return FRAME_BAD;
        if (avail < FRAME_SYNC_BYTES)
            return FRAME_NEED_MORE;
        *ret_len = FRAME_SYNC_BYTES;
        return FRAME_SYNC;
    }
    if (len > FRAME_MAX_BYTES)
        return FRAME_BAD;
    if (avail - FRAME_HDR_BYTES < len)
        return FRAME_NEED_MORE;
    *ret_len = FRAME_HDR_BYTES + (size_t) len;
    return FRAME_OK;
}

void
frame_put_header(uint8_t out[FRAME_HDR_BYTES], uint32_t len)
{
    out[0] = (uint8_t) (len >> 24);
    out[1] = (uint8_t) (len >> 16);
    out[2] = (uint8_t) (len >> 8);
    out[3] = (uint8_t) len;
}

void
frame_put_sync(uint8_t out[FRAME_SYNC_BYTES], uint64_t nonce)
{
    memcpy(out, sync_magic, sizeof(sync_magic));
    for (int i = 0; i < 8; i++)
        out[8 + i] = (uint8_t) (nonce >> (56 - 8 * i));
}

uint64_t
frame_sync_nonce(const uint8_t marker[FRAME_SYNC_BYTES])
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | marker[8 + i];
    return v;
}

size_t
frame_sync_scan(const uint8_t *buf, size_t avail)
{
    for (size_t i = 0; i < avail; i++) {
        size_t have = MIN_SIZE(avail - i, sizeof(sync_magic));
        if (memcmp(buf + i, sync_magic, have) == 0)
            return i;
    }
    return avail;
}

void
frame_reader_init(FrameReader *r)
{
    r->state = READER_FRAMED;
    r->len = 0;
    r->consumed = 0;
}

static void
frame_reader_compact(FrameReader *r)
{
    if (r->consumed == 0)
        return;
    memmove(r->buf, r->buf + r->consumed, r->len - r->consumed);
    r->len -= r->consumed;
    r->consumed = 0;
}

uint8_t *
frame_reader_space(FrameReader *r, size_t *ret_space)
{
    frame_reader_compact(r);
    *ret_space = sizeof(r->buf) - r->len;
    return r->buf + r->len;
}

void
frame_reader_commit(FrameReader *r, size_t n)
{
    r->len += n; /* the caller never commits more than frame_reader_space() offered */
}

size_t
frame_reader_feed(FrameReader *r, const uint8_t *data, size_t len)
{
    size_t space;
    uint8_t *dst = frame_reader_space(r, &space);
    size_t n = MIN_SIZE(space, len);
    memcpy(dst, data, n);
    frame_reader_commit(r, n);
    return n;
}

static ReadResult
frame_reader_take_sync(FrameReader *r, uint64_t *ret_nonce)
{
    *ret_nonce = frame_sync_nonce(r->buf + r->consumed);
    r->consumed += FRAME_SYNC_BYTES;
    r->state = READER_FRAMED;
    return READ_SYNC;
}

ReadResult
frame_reader_next(FrameReader *r, const uint8_t **ret_payload, size_t *ret_len,
                  uint64_t *ret_nonce)
{
    size_t avail = r->len - r->consumed;
    size_t n;

    switch (r->state) {
    case READER_BROKEN:
        return READ_BAD;
    case READER_HUNTING:
        r->consumed += frame_sync_scan(r->buf + r->consumed, avail);
        if (r->len - r->consumed < FRAME_SYNC_BYTES)
            return READ_NONE;
        return frame_reader_take_sync(r, ret_nonce);
    case READER_FRAMED:
        break;
    }
    switch (frame_peek(r->buf + r->consumed, avail, &n)) {
    case FRAME_NEED_MORE:
        return READ_NONE;
    case FRAME_SYNC:
        return frame_reader_take_sync(r, ret_nonce);
    case FRAME_OK:
        *ret_payload = r->buf + r->consumed + FRAME_HDR_BYTES;
        *ret_len = n - FRAME_HDR_BYTES;
        r->consumed += n;
        return READ_FRAME;
    case FRAME_BAD:
        break;
    }
    r->state = READER_BROKEN;
    return READ_BAD;
}

void
frame_reader_hunt(FrameReader *r)
{
    /* Skip one byte so the bad header itself is not taken for a marker start again. */
    if (r->consumed < r->len)
        r->consumed++;
    r->state = READER_HUNTING;
}
