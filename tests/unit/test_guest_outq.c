/* Unit tests of guest/outq.c: the outbound queue's soft and hard bounds, partial writes
 * through a small pipe, the position of a sync reply, and refusal of messages the host's
 * checks would reject. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "guest_limits.h"
#include "outq.h"
#include "reply.h"

static uint8_t chunk[OUTPUT_CHUNK_MAX_BYTES];

static int
push_output(OutQueue *q, uint32_t exec_id, size_t len)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Output out = STOCKADE__RUNNER__OUTPUT__INIT;

    out.exec_id = exec_id;
    out.stream = STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT;
    out.data = (ProtobufCBinaryData){len, chunk};
    m.body_case = GBODY(OUTPUT);
    m.output = &out;
    return outq_push_msg(q, &m);
}

static void
test_soft_and_hard_bounds(void **state)
{
    (void) state;
    OutQueue q = {0};
    size_t pushed = 0;

    assert_true(outq_is_empty(&q));
    /* A bulk producer runs only while there is room... */
    while (outq_has_room(&q)) {
        assert_int_equal(push_output(&q, 1, sizeof(chunk)), 0);
        pushed++;
    }
    assert_true(q.bytes >= OUTQ_SOFT_MAX_BYTES);
    assert_true(q.bytes < OUTQ_SOFT_MAX_BYTES + sizeof(chunk) + 64);
    /* ...small control frames still fit above the soft bound... */
    assert_int_equal(reply_ack(&q, 5), 0);
    /* ...and nothing passes the hard bound. */
    int r;
    while ((r = push_output(&q, 1, sizeof(chunk))) == 0)
        ;
    assert_int_equal(errno, ENOBUFS);
    assert_true(q.bytes <= OUTQ_HARD_MAX_BYTES);
    assert_true(pushed > 0);
    outq_clear(&q);
    assert_true(outq_is_empty(&q));
    assert_int_equal(q.bytes, 0);
}

static void
test_refuses_what_the_host_would_reject(void **state)
{
    (void) state;
    OutQueue q = {0};

    assert_int_equal(push_output(&q, 0, 10), -1); /* exec_id 0 */
    assert_int_equal(errno, EPROTO);
    assert_int_equal(push_output(&q, 1, 0), -1); /* empty output chunk */
    assert_true(outq_is_empty(&q));
}

/* Reads everything from fd into buf; returns the length. */
static size_t
drain(int fd, uint8_t *buf, size_t cap)
{
    size_t got = 0;
    ssize_t n;
    while (got < cap && (n = read(fd, buf + got, cap - got)) > 0)
        got += (size_t) n;
    return got;
}

static void
test_partial_writes_and_sync_position(void **state)
{
    (void) state;
    OutQueue q = {0};
    int p[2];
    static uint8_t wire[4 * 1024 * 1024];
    GuestMsg ready;
    Stockade__Runner__Ready rd;

    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    assert_true(fcntl(p[1], F_SETPIPE_SZ, 4096) > 0);
    memset(chunk, 'o', sizeof(chunk));
    assert_int_equal(push_output(&q, 1, 10000), 0); /* frame A */
    assert_int_equal(push_output(&q, 2, 10000), 0); /* frame B */
    ssize_t w = outq_write(&q, p[1]);               /* A leaves partly: the pipe is small */
    assert_true(w > 0 && (size_t) w < 10000);
    reply_ready_init(&ready, &rd, 77);
    assert_int_equal(outq_push_sync_reply(&q, 77, &ready), 0);

    size_t got = drain(p[0], wire, sizeof(wire));
    while (!outq_is_empty(&q)) {
        assert_true(outq_write(&q, p[1]) >= 0);
        got += drain(p[0], wire + got, sizeof(wire) - got);
    }
    /* Wire order: the rest of A, then marker + Ready{77}, then B. */
    size_t a_len;
    assert_int_equal(frame_peek(wire, got, &a_len), FRAME_OK);
    size_t n;
    assert_int_equal(frame_peek(wire + a_len, got - a_len, &n), FRAME_SYNC);
    assert_int_equal(frame_sync_nonce(wire + a_len), 77);
    size_t at = a_len + FRAME_SYNC_BYTES;
    assert_int_equal(frame_peek(wire + at, got - at, &n), FRAME_OK);
    char why[128];
    GuestMsg *m =
        msg_decode_guest(wire + at + FRAME_HDR_BYTES, n - FRAME_HDR_BYTES, why, sizeof(why));
    assert_non_null(m);
    assert_int_equal(m->body_case, GBODY(READY));
    assert_int_equal(m->ready->nonce, 77);
    msg_free_guest(m);
    at += n;
    assert_int_equal(frame_peek(wire + at, got - at, &n), FRAME_OK);
    assert_int_equal(at + n, got);
    close(p[0]);
    close(p[1]);
}

static void
test_sync_reply_goes_first_when_nothing_left(void **state)
{
    (void) state;
    OutQueue q = {0};
    GuestMsg ready;
    Stockade__Runner__Ready rd;

    assert_int_equal(push_output(&q, 1, 100), 0);
    reply_ready_init(&ready, &rd, 5);
    assert_int_equal(outq_push_sync_reply(&q, 5, &ready), 0);
    assert_int_equal(q.frames, 2);
    int p[2];
    static uint8_t wire[1024];
    assert_int_equal(pipe(p), 0);
    assert_true(outq_write(&q, p[1]) > 0);
    assert_true(outq_is_empty(&q));
    close(p[1]);
    size_t got = drain(p[0], wire, sizeof(wire)), n;
    close(p[0]);
    assert_int_equal(frame_peek(wire, got, &n), FRAME_SYNC); /* before the unsent output */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_soft_and_hard_bounds),
        cmocka_unit_test(test_refuses_what_the_host_would_reject),
        cmocka_unit_test(test_partial_writes_and_sync_position),
        cmocka_unit_test(test_sync_reply_goes_first_when_nothing_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
