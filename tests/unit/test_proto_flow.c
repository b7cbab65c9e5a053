/* Unit tests of proto/flow.c, the credit arithmetic both ends of a tunnel stream share: the
 * receiver's invariant (granted + buffered + ungranted == window) under every operation, the
 * refusals that mean "the peer broke the protocol", batching of grants, and a simulated
 * transfer in odd-sized pieces that never stalls and never overruns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "flow.h"
#include "macro.h"

static void
assert_invariant(const FlowRecv *r)
{
    assert_int_equal((uint64_t) r->granted + r->buffered + r->ungranted, TUNNEL_WINDOW_BYTES);
}

static void
test_send_side(void **state)
{
    (void) state;
    FlowSend s;
    flow_send_init(&s);
    assert_int_equal(s.credit, TUNNEL_WINDOW_BYTES);
    assert_int_equal(flow_send_allowance(&s, 1u << 30), TUNNEL_DATA_MAX_BYTES);
    assert_int_equal(flow_send_allowance(&s, 10), 10);
    assert_int_equal(flow_send_spend(&s, TUNNEL_WINDOW_BYTES - 5), 0);
    assert_int_equal(flow_send_allowance(&s, 100), 5);
    assert_int_equal(flow_send_spend(&s, 6), -1); /* more than the credit: nothing changes */
    assert_int_equal(s.credit, 5);
    assert_int_equal(flow_send_spend(&s, 5), 0);
    assert_int_equal(flow_send_allowance(&s, 100), 0);
    assert_int_equal(flow_send_on_credit(&s, 0), -1); /* a zero grant is malformed */
    assert_int_equal(flow_send_on_credit(&s, TUNNEL_WINDOW_BYTES), 0);
    assert_int_equal(flow_send_on_credit(&s, 1), -1); /* over the window */
    assert_int_equal(s.credit, TUNNEL_WINDOW_BYTES);
    assert_int_equal(flow_send_spend(&s, 1), 0);
    assert_int_equal(flow_send_on_credit(&s, UINT32_MAX), -1); /* no wrap-around */
    assert_int_equal(s.credit, TUNNEL_WINDOW_BYTES - 1);
}

static void
test_recv_side(void **state)
{
    (void) state;
    FlowRecv r;
    flow_recv_init(&r);
    assert_invariant(&r);
    assert_int_equal(flow_recv_on_data(&r, TUNNEL_WINDOW_BYTES + 1), -1);
    assert_int_equal(flow_recv_on_data(&r, 1000), 0);
    assert_invariant(&r);
    assert_int_equal(flow_recv_consumed(&r, 1001), -1); /* more than buffered */
    assert_int_equal(flow_recv_consumed(&r, 1000), 0);
    assert_invariant(&r);
    assert_int_equal(flow_recv_take_grant(&r), 0); /* below FLOW_GRANT_MIN_BYTES: batched */
    assert_int_equal(flow_recv_on_data(&r, FLOW_GRANT_MIN_BYTES), 0);
    assert_int_equal(flow_recv_consumed(&r, FLOW_GRANT_MIN_BYTES), 0);
    uint32_t g = flow_recv_take_grant(&r);
    assert_int_equal(g, FLOW_GRANT_MIN_BYTES + 1000);
    assert_invariant(&r);
    flow_recv_ungrant(&r, g); /* the credit could not be queued */
    assert_invariant(&r);
    assert_int_equal(flow_recv_take_grant(&r), g);
    flow_recv_ungrant(&r, UINT32_MAX); /* never below zero */
    assert_invariant(&r);
    assert_int_equal(r.granted, 0);
}

/* A whole transfer: the sender sends whatever it may, the receiver consumes in odd pieces,
 * grants travel back; the receiver never holds more than a window, nothing stalls. */
static void
test_transfer(void **state)
{
    (void) state;
    FlowSend s;
    FlowRecv r;
    uint64_t total = 50ull * TUNNEL_WINDOW_BYTES + 12345, sent = 0, consumed = 0;
    uint32_t seed = 12345;

    flow_send_init(&s);
    flow_recv_init(&r);
    for (unsigned rounds = 0; consumed < total; rounds++) {
        assert_true(rounds < 1000000);
        seed = seed * 1103515245u + 12345u;
        size_t n = flow_send_allowance(&s, MIN(total - sent, (uint64_t) (seed % 70000 + 1)));
        assert_int_equal(flow_send_spend(&s, n), 0);
        assert_int_equal(flow_recv_on_data(&r, n), 0);
        sent += n;
        size_t c = MIN(r.buffered, (seed >> 8) % 50000 + 1);
        assert_int_equal(flow_recv_consumed(&r, c), 0);
        consumed += c;
        uint32_t g = flow_recv_take_grant(&r);
        if (g)
            assert_int_equal(flow_send_on_credit(&s, g), 0);
        assert_invariant(&r);
        assert_true(r.buffered <= TUNNEL_WINDOW_BYTES);
        assert_true(s.credit <= TUNNEL_WINDOW_BYTES);
        /* no deadlock: either the sender may send, or there is something to consume */
        assert_true(s.credit > 0 || r.buffered > 0 || r.ungranted >= FLOW_GRANT_MIN_BYTES ||
                    sent == total);
    }
    assert_int_equal(sent, total);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_send_side),
        cmocka_unit_test(test_recv_side),
        cmocka_unit_test(test_transfer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
