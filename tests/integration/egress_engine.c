/* The daemon's egress engine (hostd/egress/egress.c, egress_stream.c) on a real loop with real
 * sockets, the test playing the guest (it feeds GuestMsg tunnel messages and records what the
 * engine sends back) and the upstream (a listening socket on 127.0.0.1). Runs as any user; in
 * the sanitizer build it is where ASan/UBSan see the stream engine.
 *
 * The session policy is built by hand with 127.0.0.0/8 as a CIDR (no operator could configure
 * that: policy.c refuses it) so loopback can stand in for the network. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "egress.h"
#include "fdutil.h"
#include "inspect.h"
#include "timeutil.h"
#include "tlshello.h"

#define EE_WAIT_USEC (5 * USEC_PER_SEC)
#define EE_SENT_MAX 256
#define GB(x) STOCKADE__RUNNER__GUEST_MSG__BODY_##x
#define HB(x) STOCKADE__RUNNER__HOST_MSG__BODY_##x
#define OC(x) STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__CODE__##x

typedef struct Sent { /* what the engine sent to the "guest" */
    int body;
    uint32_t id;
    int code;
    bool eof, reset;
    uint32_t credit;
    size_t len;
    uint8_t *data;
} Sent;

static struct {
    Loop *loop;
    EgressResolver *resolver;
    EgressSession *e;
    EgressPolicy policy;
    EgressLimits lim;
    Sent sent[EE_SENT_MAX];
    size_t n_sent;
    char events[EE_SENT_MAX][512];
    size_t n_events;
    int listen_fd;
    uint16_t port;
    bool free_on_send; /* simulates a channel that breaks while the engine sends */
} ee;

/* ------------------------------------------------------------------ the "guest" side */

static int
ee_send(void *userdata, HostMsg *m, Error **errp)
{
    (void) userdata;
    Sent *s = &ee.sent[ee.n_sent < EE_SENT_MAX ? ee.n_sent++ : EE_SENT_MAX - 1];
    char why[128];
    assert_int_equal(msg_check_host(m, why, sizeof(why)), 0); /* the runner would accept it */
    *s = (Sent){.body = m->body_case};
    switch (m->body_case) {
    case HB(TUNNEL_OPEN_RESULT):
        s->id = m->tunnel_open_result->stream_id;
        s->code = m->tunnel_open_result->code;
        break;
    case HB(TUNNEL_DATA):
        s->id = m->tunnel_data->stream_id;
        s->eof = m->tunnel_data->eof;
        s->len = m->tunnel_data->data.len;
        s->data = malloc(s->len + 1);
        memcpy(s->data, m->tunnel_data->data.data, s->len);
        break;
    case HB(TUNNEL_CREDIT):
        s->id = m->tunnel_credit->stream_id;
        s->credit = m->tunnel_credit->bytes;
        break;
    case HB(TUNNEL_CLOSE):
        s->id = m->tunnel_close->stream_id;
        s->reset = m->tunnel_close->reset;
        break;
    default:
        fail_msg("unexpected body %d", m->body_case);
    }
    if (ee.free_on_send) {
        ee.free_on_send = false;
        egress_session_free(ee.e); /* deferred by the engine: it is on the stack */
        ee.e = NULL;
        return error_set(errp, E_IO, EPIPE, "channel broke");
    }
    return 0;
}

static size_t
ee_backlog(void *userdata)
{
    (void) userdata;
    return 0;
}

static void
ee_event(void *userdata, const char *type, json_t *attrs)
{
    (void) userdata;
    char *text = attrs ? json_dumps(attrs, JSON_COMPACT) : NULL;
    if (ee.n_events < EE_SENT_MAX)
        snprintf(ee.events[ee.n_events++], sizeof(ee.events[0]), "%s %s", type, text ? text : "{}");
    free(text);
    json_decref(attrs);
}

static const EgressOps ee_ops = {ee_send, ee_backlog, ee_event};

static void
ee_clear(void)
{
    for (size_t i = 0; i < ee.n_sent; i++)
        free(ee.sent[i].data);
    ee.n_sent = 0;
    ee.n_events = 0;
}

static int
ee_msg(GuestMsg *m)
{
    _cleanup_error_ Error *err = NULL;
    char why[128];
    assert_int_equal(msg_check_guest(m, why, sizeof(why)), 0);
    int r = egress_session_on_message(ee.e, m, &err);
    if (r < 0)
        assert_int_equal(err->category, E_GUEST);
    return r;
}

static int
ee_open(uint32_t id, const char *host, uint16_t port)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__TunnelOpen o = STOCKADE__RUNNER__TUNNEL_OPEN__INIT;
    o.stream_id = id;
    o.host = (char *) host;
    o.port = port;
    m.body_case = GB(TUNNEL_OPEN);
    m.tunnel_open = &o;
    return ee_msg(&m);
}

static int
ee_data(uint32_t id, const void *data, size_t len, bool eof)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__TunnelData d = STOCKADE__RUNNER__TUNNEL_DATA__INIT;
    d.stream_id = id;
    d.data = (ProtobufCBinaryData){len, (uint8_t *) data};
    d.eof = eof;
    m.body_case = GB(TUNNEL_DATA);
    m.tunnel_data = &d;
    return ee_msg(&m);
}

static int
ee_credit(uint32_t id, uint32_t bytes)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__TunnelCredit c = STOCKADE__RUNNER__TUNNEL_CREDIT__INIT;
    c.stream_id = id;
    c.bytes = bytes;
    m.body_case = GB(TUNNEL_CREDIT);
    m.tunnel_credit = &c;
    return ee_msg(&m);
}

static int
ee_close(uint32_t id)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__TunnelClose c = STOCKADE__RUNNER__TUNNEL_CLOSE__INIT;
    c.stream_id = id;
    c.reset = true;
    m.body_case = GB(TUNNEL_CLOSE);
    m.tunnel_close = &c;
    return ee_msg(&m);
}

/* ------------------------------------------------------------------ loop helpers */

static void
ee_quit(Loop *l, void *userdata)
{
    (void) userdata;
    loop_quit(l, 0);
}

static void
ee_spin_msec(unsigned ms)
{
    loop_add_timer(ee.loop, now_usec() + ms * USEC_PER_MSEC, ee_quit, NULL);
    loop_run(ee.loop);
}

/* Runs the loop until the engine sent a message of that body for id (its index), or fails. */
static size_t
ee_wait_sent(int body, uint32_t id)
{
    uint64_t deadline = now_usec() + EE_WAIT_USEC;
    for (;;) {
        for (size_t i = 0; i < ee.n_sent; i++)
            if (ee.sent[i].body == body && ee.sent[i].id == id)
                return i;
        if (now_usec() > deadline)
            fail_msg("no message %d for stream %u", body, id);
        ee_spin_msec(5);
    }
}

static bool
ee_has_event(const char *prefix)
{
    for (size_t i = 0; i < ee.n_events; i++)
        if (strncmp(ee.events[i], prefix, strlen(prefix)) == 0)
            return true;
    return false;
}

static int
ee_accept(void)
{
    uint64_t deadline = now_usec() + EE_WAIT_USEC;
    for (;;) {
        int fd = accept4(ee.listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (now_usec() > deadline)
            fail_msg("the engine never connected");
        ee_spin_msec(5);
    }
}

/* ------------------------------------------------------------------ fixture */

static int
ee_setup(void **state)
{
    (void) state;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);

    assert_int_equal(loop_new(&ee.loop, NULL), 0);
    assert_int_equal(egress_resolver_new(ee.loop, &ee.resolver, NULL), 0);
    ee.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_int_equal(bind(ee.listen_fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
    assert_int_equal(listen(ee.listen_fd, 64), 0);
    assert_int_equal(getsockname(ee.listen_fd, (struct sockaddr *) &sa, &len), 0);
    ee.port = ntohs(sa.sin_port);
    return 0;
}

static int
ee_teardown(void **state)
{
    (void) state;
    ee_clear();
    safe_close(ee.listen_fd);
    egress_resolver_free(ee.resolver);
    loop_free(ee.loop);
    return 0;
}

/* A fresh engine per test: loopback as "the network", small limits. */
static int
ee_new(void **state)
{
    (void) state;
    EgressConfig c;
    egress_config_defaults(&c);
    ee.lim = c.limits;
    ee.lim.max_streams = 4;
    ee.lim.max_streams_total = 8;
    ee.lim.max_bytes_out = 1u << 20;
    ee.lim.max_denied_events = 3;
    ee.lim.connect_timeout_usec = 2 * USEC_PER_SEC;
    ee.lim.first_flight_timeout_usec = 2 * USEC_PER_SEC;
    memset(&ee.policy, 0, sizeof(ee.policy));
    snprintf(ee.policy.patterns[0].name, sizeof(ee.policy.patterns[0].name), "localhost");
    ee.policy.patterns[0].ports = EGRESS_PORTS_ANY;
    ee.policy.n_patterns = 1;
    assert_int_equal(egress_addr_parse_strict("127.0.0.0", &ee.policy.cidrs[0].addr), 0);
    ee.policy.cidrs[0].bits = 8;
    ee.policy.cidrs[0].ports = EGRESS_PORTS_ANY;
    ee.policy.n_cidrs = 1;
    ee_clear();
    return egress_session_new(ee.loop, ee.resolver, &ee.policy, &ee.lim, &ee_ops, NULL, &ee.e,
                              NULL);
}

static int
ee_end(void **state)
{
    (void) state;
    egress_session_free(ee.e);
    ee.e = NULL;
    ee_spin_msec(1);
    return 0;
}

/* ------------------------------------------------------------------ tests */

static void
ee_read_exact(int fd, void *buf, size_t len)
{
    size_t got;
    if (read_full(fd, buf, len, &got) < 0 || got != len)
        fail_msg("upstream read %zu of %zu: %m", got, len);
}

/* Open (in an odd spelling), bytes both ways, half closes, a clean close with events. */
static void
test_stream_life(void **state)
{
    (void) state;
    char buf[16];

    assert_int_equal(ee_open(1, "0x7f.1", ee.port), 0);
    int up = ee_accept();
    size_t i = ee_wait_sent(HB(TUNNEL_OPEN_RESULT), 1);
    assert_int_equal(ee.sent[i].code, OC(OK));
    assert_true(ee_has_event("egress.allowed {\"stream\":1,\"host\":\"0x7f.1\""));
    assert_int_equal(ee_data(1, "hello", 5, false), 0);
    ee_read_exact(up, buf, 5);
    assert_memory_equal(buf, "hello", 5);
    assert_int_equal(write(up, "world", 5), 5);
    shutdown(up, SHUT_WR);
    size_t d = ee_wait_sent(HB(TUNNEL_DATA), 1);
    assert_int_equal(ee.sent[d].len, 5);
    assert_memory_equal(ee.sent[d].data, "world", 5);
    size_t eof = ee_wait_sent(HB(TUNNEL_DATA), 1);
    for (eof = d + 1; eof < ee.n_sent && !ee.sent[eof].eof; eof++)
        ;
    if (eof == ee.n_sent) { /* the eof may come in its own message, later */
        ee_spin_msec(50);
        for (eof = d + 1; eof < ee.n_sent && !ee.sent[eof].eof; eof++)
            ;
    }
    assert_true(eof < ee.n_sent);
    assert_int_equal(ee_data(1, NULL, 0, true), 0); /* the guest's eof: both ways done */
    size_t c = ee_wait_sent(HB(TUNNEL_CLOSE), 1);
    assert_false(ee.sent[c].reset);
    assert_true(ee_has_event("egress.closed"));
    assert_int_equal(read(up, buf, sizeof(buf)), 0); /* the upstream saw our eof */
    close(up);
    assert_int_equal(ee_data(1, "late", 4, false), 0); /* stale: dropped */
}

/* Refusals never touch the network: forbidden, not allowed, malformed; every one an event
 * until max_denied_events, then one egress.suppressed. */
static void
test_refusals(void **state)
{
    (void) state;
    static const struct {
        const char *host, *reason;
        int code;
    } cases[] = {
        {"10.0.0.1", "forbidden_address", OC(DENIED)},
        {"2852039166", "forbidden_address", OC(DENIED)},
        {"[::ffff:169.254.169.254]", "forbidden_address", OC(DENIED)},
        {"8.8.8.8", "not_allowed", OC(DENIED)},
        {"evil.example", "not_allowed", OC(DENIED)},
        {"1.2.3.256", "bad_host", OC(DENIED)},
    };
    for (uint32_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char want[128];
        assert_int_equal(ee_open(k + 1, cases[k].host, 80), 0);
        size_t i = ee_wait_sent(HB(TUNNEL_OPEN_RESULT), k + 1);
        assert_int_equal(ee.sent[i].code, cases[k].code);
        snprintf(want, sizeof(want), "egress.denied {\"stream\":%u", k + 1);
        if (k < ee.lim.max_denied_events && !ee_has_event(want))
            fail_msg("no event for %s", cases[k].host);
        if (k < ee.lim.max_denied_events && !strstr(ee.events[ee.n_events - 1], cases[k].reason))
            fail_msg("%s: %s", cases[k].host, ee.events[ee.n_events - 1]);
    }
    assert_true(ee_has_event("egress.suppressed {\"after\":3}"));
    ee_spin_msec(20);
    int fd = accept4(ee.listen_fd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(fd < 0); /* nothing connected */
}

/* A name is resolved off the loop; localhost resolves to loopback, inside the CIDR here. */
static void
test_name_resolves(void **state)
{
    (void) state;
    assert_int_equal(ee_open(1, "LocalHost.", ee.port), 0);
    size_t i = ee_wait_sent(HB(TUNNEL_OPEN_RESULT), 1);
    assert_int_equal(ee.sent[i].code, OC(OK));
    close(ee_accept());
}

/* Protocol violations: each is E_GUEST (the owner destroys the guest). */
static void
test_violations(void **state)
{
    (void) state;
    static uint8_t big[TUNNEL_DATA_MAX_BYTES];

    egress_session_free(ee.e); /* a byte limit above what the kernel's buffers take */
    ee.lim.max_bytes_out = 256u << 20;
    assert_int_equal(
        egress_session_new(ee.loop, ee.resolver, &ee.policy, &ee.lim, &ee_ops, NULL, &ee.e, NULL),
        0);
    assert_int_equal(ee_open(5, "127.0.0.1", ee.port), 0);
    assert_int_equal(ee_open(5, "127.0.0.1", ee.port), -1); /* id not above the last */
    assert_int_equal(ee_open(4, "127.0.0.1", ee.port), -1);
    assert_int_equal(ee_data(9, "x", 1, false), -1); /* never opened */
    assert_int_equal(ee_credit(9, 1), -1);
    assert_int_equal(ee_close(9), -1);
    assert_int_equal(ee_data(3, "x", 1, false), 0); /* below the last id: stale, dropped */
    size_t i = ee_wait_sent(HB(TUNNEL_OPEN_RESULT), 5);
    assert_int_equal(ee.sent[i].code, OC(OK));
    int up = ee_accept();
    assert_int_equal(ee_credit(5, 1), -1); /* the engine spent nothing: any credit overflows */
    /* Spend the credit exactly (the engine returns credit synchronously as it writes to the
     * upstream, until the upstream's socket buffers fill), then one byte more. */
    uint64_t sent = 0, granted = 0;
    for (size_t seen = 0;;) {
        for (; seen < ee.n_sent; seen++)
            if (ee.sent[seen].body == HB(TUNNEL_CREDIT) && ee.sent[seen].id == 5)
                granted += ee.sent[seen].credit;
        uint64_t left = TUNNEL_WINDOW_BYTES + granted - sent;
        if (left == 0)
            break;
        size_t n = left < sizeof(big) ? (size_t) left : sizeof(big);
        assert_int_equal(ee_data(5, big, n, false), 0);
        sent += n;
        if (ee.n_sent > EE_SENT_MAX - 8) {
            for (; seen < ee.n_sent; seen++)
                if (ee.sent[seen].body == HB(TUNNEL_CREDIT) && ee.sent[seen].id == 5)
                    granted += ee.sent[seen].credit;
            ee_clear(); /* counted: make room */
            seen = 0;
        }
    }
    assert_int_equal(ee_data(5, big, 1, false), -1); /* one byte over the credit */
    close(up);
    assert_int_equal(ee_open(6, "127.0.0.1", ee.port), 0);
    assert_int_equal(ee_data(6, "x", 1, false), -1); /* data before the open result */
    assert_int_equal(ee_data(6 + 0, NULL, 0, true), -1);
}

/* Limits: streams at once, streams in all, bytes out; the daemon goes on for the rest. */
static void
test_limits(void **state)
{
    (void) state;
    static uint8_t chunk[TUNNEL_DATA_MAX_BYTES];
    int ups[4];

    for (uint32_t id = 1; id <= 4; id++)
        assert_int_equal(ee_open(id, "127.0.0.1", ee.port), 0);
    assert_int_equal(ee_open(5, "127.0.0.1", ee.port), 0);
    assert_int_equal(ee.sent[ee_wait_sent(HB(TUNNEL_OPEN_RESULT), 5)].code, OC(LIMIT));
    assert_true(ee_has_event("egress.denied {\"stream\":5") &&
                strstr(ee.events[ee.n_events - 1], "limit_streams"));
    for (int k = 0; k < 4; k++) {
        ups[k] = ee_accept();
        assert_int_equal(ee.sent[ee_wait_sent(HB(TUNNEL_OPEN_RESULT), (uint32_t) k + 1)].code,
                         OC(OK));
    }
    assert_int_equal(ee_close(4), 0); /* the guest resets one: a slot frees */
    close(ups[3]);
    for (uint32_t id = 6; id <= 9; id++) /* 4 already opened: 4 more make max_streams_total */
        assert_int_equal(ee_open(id, "10.1.2.3", 80), 0); /* denied, yet counted as opened */
    assert_int_equal(ee_open(10, "127.0.0.1", ee.port), 0);
    assert_int_equal(ee.sent[ee_wait_sent(HB(TUNNEL_OPEN_RESULT), 10)].code, OC(LIMIT));
    /* bytes out: past the session's limit the stream that crosses it is reset */
    uint64_t sent = 0;
    char sink[1 << 16];
    while (sent <= ee.lim.max_bytes_out) {
        int r = ee_data(1, chunk, sizeof(chunk), false);
        assert_int_equal(r, 0);
        sent += sizeof(chunk);
        while (recv(ups[0], sink, sizeof(sink), MSG_DONTWAIT) > 0)
            ;
        ee_spin_msec(1);
        uint64_t granted = 0;
        for (size_t k = 0; k < ee.n_sent; k++)
            if (ee.sent[k].body == HB(TUNNEL_CREDIT) && ee.sent[k].id == 1)
                granted += ee.sent[k].credit;
        if (ee_has_event("egress.closed {\"stream\":1"))
            break;
        assert_true(sent - granted <= TUNNEL_WINDOW_BYTES); /* stay within the credit */
        if (sent - granted + sizeof(chunk) > TUNNEL_WINDOW_BYTES)
            ee_spin_msec(20);
    }
    size_t c = ee_wait_sent(HB(TUNNEL_CLOSE), 1);
    assert_true(ee.sent[c].reset);
    for (int k = 0; k < 3; k++)
        close(ups[k]);
}

/* The connect goes to exactly the vetted address; a refused one is reported, not retried
 * elsewhere. */
static void
test_connect_refused(void **state)
{
    (void) state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
    close(fd); /* a port nobody listens on */
    assert_int_equal(ee_open(1, "127.0.0.1", ntohs(sa.sin_port)), 0);
    assert_int_equal(ee.sent[ee_wait_sent(HB(TUNNEL_OPEN_RESULT), 1)].code, OC(UNREACHABLE));
    assert_true(ee_has_event("egress.closed {\"stream\":1"));
}

/* The session ends with streams open (one being resolved, one open): each is closed and
 * recorded, then the summary; nothing is sent to the guest any more. */
static void
test_session_end(void **state)
{
    (void) state;
    assert_int_equal(ee_open(1, "127.0.0.1", ee.port), 0);
    int up = ee_accept();
    ee_wait_sent(HB(TUNNEL_OPEN_RESULT), 1);
    assert_int_equal(ee_open(2, "localhost", ee.port), 0); /* may still be resolving */
    size_t sent = ee.n_sent;
    egress_session_free(ee.e);
    ee.e = NULL;
    assert_int_equal(ee.n_sent, sent);
    assert_true(ee_has_event("egress.closed {\"stream\":1"));
    assert_true(ee_has_event("egress.summary"));
    assert_int_equal(read(up, (char[1]){0}, 1), 0); /* the upstream connection closed */
    close(up);
    ee_spin_msec(100); /* a lookup finishing after the end is dropped */
    int late = accept4(ee.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (late >= 0)
        close(late);
}

/* The channel breaks while the engine sends (the owner frees it from inside a callback): the
 * free is deferred until the engine's frames are off the stack. */
static void
test_free_from_callback(void **state)
{
    (void) state;
    assert_int_equal(ee_open(1, "127.0.0.1", ee.port), 0);
    int up = ee_accept();
    ee_wait_sent(HB(TUNNEL_OPEN_RESULT), 1);
    assert_int_equal(write(up, "data", 4), 4);
    ee.free_on_send = true; /* the TunnelData of these bytes breaks the "channel" */
    uint64_t deadline = now_usec() + EE_WAIT_USEC;
    while (ee.e && now_usec() < deadline)
        ee_spin_msec(5);
    assert_null(ee.e);
    ee_spin_msec(10);
    assert_true(ee_has_event("egress.summary"));
    close(up);
}

/* ------------------------------------------------------------------ first flights (issue 14) */

/* Opens a stream to "localhost" (a name: its first bytes are judged) and takes the upstream. */
static int
ee_open_name(uint32_t id)
{
    assert_int_equal(ee_open(id, "localhost", ee.port), 0);
    int up = ee_accept();
    assert_int_equal(ee.sent[ee_wait_sent(HB(TUNNEL_OPEN_RESULT), id)].code, OC(OK));
    return up;
}

/* The stream was refused for reason: egress.denied, a reset to the guest, and the upstream
 * saw not one byte (an orderly close of an empty connection). */
static void
ee_expect_refused(uint32_t id, int up, const char *reason)
{
    char want[64], buf[64];
    size_t c = ee_wait_sent(HB(TUNNEL_CLOSE), id);
    assert_true(ee.sent[c].reset);
    snprintf(want, sizeof(want), "egress.denied {\"stream\":%u", id);
    bool found = false;
    for (size_t i = 0; i < ee.n_events; i++)
        if (strncmp(ee.events[i], want, strlen(want)) == 0) {
            found = true;
            if (!strstr(ee.events[i], reason))
                fail_msg("want %s: %s", reason, ee.events[i]);
        }
    assert_true(found);
    snprintf(want, sizeof(want), "egress.closed {\"stream\":%u", id);
    assert_true(ee_has_event(want));
    assert_int_equal(read(up, buf, sizeof(buf)), 0);
    close(up);
}

/* The upstream gets exactly these bytes. */
static void
ee_expect_relayed(int up, const uint8_t *data, size_t n)
{
    static uint8_t got[TLSHELLO_MAX_BYTES];
    ee_read_exact(up, got, n);
    assert_memory_equal(got, data, n);
    close(up);
}

/* CONNECT to an allowed name, then a ClientHello for another (domain fronting): refused with
 * sni_mismatch before a byte goes out; no SNI is refused too; the matching SNI passes, also
 * when the hello comes in 1-byte records and odd pieces. */
static void
test_sni(void **state)
{
    (void) state;
    static uint8_t hello[TLSHELLO_MAX_BYTES];
    size_t n = tlshello_build(&(TlsHelloSpec){.names = {"other.example"}}, hello, sizeof(hello));
    int up = ee_open_name(1);
    assert_int_equal(ee_data(1, hello, n, false), 0);
    ee_expect_refused(1, up, "\"reason\":\"sni_mismatch\"");

    n = tlshello_build(&(TlsHelloSpec){.record_bytes = 0}, hello, sizeof(hello));
    up = ee_open_name(2);
    assert_int_equal(ee_data(2, hello, n, false), 0);
    ee_expect_refused(2, up, "sni_mismatch");

    n = tlshello_build(&(TlsHelloSpec){.names = {"LOCALHOST"}, .record_bytes = 1}, hello,
                       sizeof(hello));
    up = ee_open_name(3);
    size_t cuts[] = {1, 6, 300, n};
    for (size_t i = 0, off = 0; i < 4; off = cuts[i++])
        assert_int_equal(ee_data(3, hello + off, cuts[i] - off, false), 0);
    ee_expect_relayed(up, hello, n);
    assert_false(ee_has_event("egress.denied {\"stream\":3"));
}

/* Plain HTTP to a name: its Host must name it, once, with Connection: close. */
static void
test_http_host(void **state)
{
    (void) state;
    static const char bad[] = "GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n";
    static const char good[] = "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    int up = ee_open_name(1);
    assert_int_equal(ee_data(1, bad, strlen(bad), false), 0);
    ee_expect_refused(1, up, "host_mismatch");
    up = ee_open_name(2);
    assert_int_equal(ee_data(2, good, strlen(good), false), 0);
    ee_expect_relayed(up, (const uint8_t *) good, strlen(good));
    up = ee_open_name(3);
    assert_int_equal(ee_data(3, "SSH-2.0-x\r\n", 11, false), 0);
    ee_expect_refused(3, up, "unknown_protocol");
}

/* A name's stream that never sends a complete first flight is refused at the deadline, and
 * one that sends too many pieces at once; numeric hosts are not inspected. */
static void
test_first_flight_limits(void **state)
{
    (void) state;
    egress_session_free(ee.e);
    ee.lim.first_flight_timeout_usec = 200 * USEC_PER_MSEC;
    assert_int_equal(
        egress_session_new(ee.loop, ee.resolver, &ee.policy, &ee.lim, &ee_ops, NULL, &ee.e, NULL),
        0);
    int up = ee_open_name(1);
    assert_int_equal(ee_data(1, "GET / HTT", 9, false), 0);
    ee_expect_refused(1, up, "inspect_limit");
    up = ee_open_name(2);
    assert_int_equal(ee_data(2, "GET /", 5, false), 0);
    for (unsigned i = 1; i < EGRESS_FIRST_FLIGHT_PIECES_MAX + 1; i++)
        assert_int_equal(ee_data(2, "a", 1, false), 0);
    ee_expect_refused(2, up, "inspect_limit");
    assert_int_equal(ee_open(3, "127.0.0.1", ee.port), 0);
    up = ee_accept();
    ee_wait_sent(HB(TUNNEL_OPEN_RESULT), 3);
    assert_int_equal(ee_data(3, "raw", 3, false), 0);
    ee_expect_relayed(up, (const uint8_t *) "raw", 3);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stream_life, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_refusals, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_name_resolves, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_violations, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_limits, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_connect_refused, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_session_end, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_free_from_callback, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_sni, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_http_host, ee_new, ee_end),
        cmocka_unit_test_setup_teardown(test_first_flight_limits, ee_new, ee_end),
    };
    return cmocka_run_group_tests(tests, ee_setup, ee_teardown);
}
