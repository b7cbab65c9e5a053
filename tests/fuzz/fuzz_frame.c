/* Fuzz target: frame reassembly + decode of both message directions.
 *
 * The first byte of the input seeds the chunk sizes, so the reader sees the stream split at
 * odd places (as read() would split it). Invariants checked, not just "no crash":
 *  - every payload handed out is 1..FRAME_MAX_BYTES long;
 *  - a decoded message passes its check again and re-encodes into a frame that decodes;
 *  - after READ_BAD the reader stays broken until hunt(), and hunting never hands out data
 *    that did not come from the input. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "message.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FrameReader reader;
static uint8_t reencoded[FRAME_HDR_BYTES + FRAME_MAX_BYTES];

static void
check_host_payload(const uint8_t *p, size_t n)
{
    char err[256];
    size_t len;
    HostMsg *m = msg_decode_host(p, n, err, sizeof(err));
    if (!m) {
        CHECK(err[0] != '\0');
        return;
    }
    CHECK(msg_check_host(m, err, sizeof(err)) == 0);
    CHECK(msg_encode_host(m, reencoded, sizeof(reencoded), &len) == 0);
    HostMsg *again = msg_decode_host(reencoded + FRAME_HDR_BYTES, len - FRAME_HDR_BYTES, err,
                                     sizeof(err));
    CHECK(again != NULL);
    CHECK(again->body_case == m->body_case && again->req_id == m->req_id);
    msg_free_host(again);
    msg_free_host(m);
}

static void
check_guest_payload(const uint8_t *p, size_t n)
{
    char err[256];
    size_t len;
    GuestMsg *m = msg_decode_guest(p, n, err, sizeof(err));
    if (!m) {
        CHECK(err[0] != '\0');
        return;
    }
    CHECK(msg_check_guest(m, err, sizeof(err)) == 0);
    CHECK(msg_encode_guest(m, reencoded, sizeof(reencoded), &len) == 0);
    GuestMsg *again = msg_decode_guest(reencoded + FRAME_HDR_BYTES, len - FRAME_HDR_BYTES, err,
                                       sizeof(err));
    CHECK(again != NULL);
    CHECK(again->body_case == m->body_case && again->req_id == m->req_id);
    msg_free_guest(again);
    msg_free_guest(m);
}

static void
drain(void)
{
    const uint8_t *payload;
    size_t plen;
    uint64_t nonce;

    for (;;) {
        ReadResult r = frame_reader_next(&reader, &payload, &plen, &nonce);
        switch (r) {
        case READ_NONE:
            return;
        case READ_SYNC:
            break;
        case READ_FRAME:
            CHECK(plen >= 1 && plen <= FRAME_MAX_BYTES);
            check_host_payload(payload, plen);
            check_guest_payload(payload, plen);
            break;
        case READ_BAD:
            CHECK(frame_reader_next(&reader, &payload, &plen, &nonce) == READ_BAD);
            frame_reader_hunt(&reader);
            break;
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned seed = data[0];
    data++;
    size--;
    frame_reader_init(&reader);
    while (size > 0) {
        seed = seed * 1103515245u + 12345u;
        size_t chunk = 1 + (seed >> 16) % 97;
        if (chunk > size)
            chunk = size;
        size_t took = frame_reader_feed(&reader, data, chunk);
        drain();
        data += took;
        size -= took;
        if (took == 0) { /* buffer full of an incomplete frame: cannot happen below the cap */
            CHECK(reader.state != READER_FRAMED);
        }
    }
    drain();
    return 0;
}
