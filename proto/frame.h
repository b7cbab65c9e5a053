/* Frame codec shared by the daemon and the runner. Pure: no I/O, no allocation.
 *
 * A frame is a u32 big-endian length L (1..FRAME_MAX_BYTES) and L payload bytes. A length of
 * 0 instead starts a sync marker: 00 00 00 00 'S' 'T' 'K' 'S' <u64 BE nonce>.
 * FrameReader reassembles frames from arbitrary read() chunks into a fixed buffer; a bad
 * length poisons it until the owner either drops the peer (host) or hunts for the next
 * marker (runner). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner_limits.h"

#define MIN_SIZE(a, b) ((a) < (b) ? (a) : (b))

typedef enum {
    FRAME_NEED_MORE, /* not enough bytes yet */
    FRAME_OK,        /* a whole frame: *ret_len = header + payload */
    FRAME_SYNC,      /* a whole sync marker: *ret_len = FRAME_SYNC_BYTES */
    FRAME_BAD,       /* length over the cap, or 0 not followed by a marker */
} FrameStatus;

FrameStatus frame_peek(const uint8_t *buf, size_t avail, size_t *ret_len);

/* Writes the frame header for a payload of len bytes; len must be 1..FRAME_MAX_BYTES. */
void frame_put_header(uint8_t out[FRAME_HDR_BYTES], uint32_t len);
void frame_put_sync(uint8_t out[FRAME_SYNC_BYTES], uint64_t nonce);
uint64_t frame_sync_nonce(const uint8_t marker[FRAME_SYNC_BYTES]);

/* Returns the offset of the first complete or partial (at the end of buf) sync marker
 * prefix in buf, or avail if no byte of buf can start one. Bytes before it can be dropped. */
size_t frame_sync_scan(const uint8_t *buf, size_t avail);

typedef enum {
    READER_FRAMED,  /* aligned on frame boundaries */
    READER_HUNTING, /* dropping bytes until a sync marker */
    READER_BROKEN,  /* saw a bad frame; the owner decides */
} ReaderState;

typedef struct FrameReader {
    ReaderState state;
    size_t len;                                 /* bytes buffered */
    size_t consumed;                            /* bytes of buf already returned */
    uint8_t buf[FRAME_HDR_BYTES + FRAME_MAX_BYTES];
} FrameReader;

typedef enum {
    READ_NONE,  /* nothing complete: read more */
    READ_FRAME, /* *ret_payload / *ret_len: one payload, valid until the next call */
    READ_SYNC,  /* *ret_nonce: a sync marker */
    READ_BAD,   /* the stream broke; state is READER_BROKEN */
} ReadResult;

void frame_reader_init(FrameReader *r);
/* How much may be appended now, and where; call frame_reader_commit(n) after reading n. */
uint8_t *frame_reader_space(FrameReader *r, size_t *ret_space);
void frame_reader_commit(FrameReader *r, size_t n);
/* Copies up to len bytes in; returns how many were taken (less when the buffer is full:
 * call frame_reader_next() and then feed the rest). */
size_t frame_reader_feed(FrameReader *r, const uint8_t *data, size_t len);
ReadResult frame_reader_next(FrameReader *r, const uint8_t **ret_payload, size_t *ret_len,
                             uint64_t *ret_nonce);
/* Drop everything and scan for the next sync marker (used by the runner after READ_BAD). */
void frame_reader_hunt(FrameReader *r);
