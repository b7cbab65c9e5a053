/* Unit tests of the frame codec and the message checks (proto/). Table-driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"
#include "message.h"

/* ------------------------------------------------------------------ frame_peek */

static void
test_peek_table(void **state)
{
    (void) state;
    static const struct {
        const char *name;
        uint8_t bytes[24];
        size_t avail;
        FrameStatus want;
        size_t want_len;
    } cases[] = {
        {"empty", {0}, 0, FRAME_NEED_MORE, 0},
        {"short header", {0, 0, 1}, 3, FRAME_NEED_MORE, 0},
        {"len 1, no payload yet", {0, 0, 0, 1}, 4, FRAME_NEED_MORE, 0},
        {"len 1, whole", {0, 0, 0, 1, 0x42}, 5, FRAME_OK, 5},
        {"len 2, extra bytes", {0, 0, 0, 2, 1, 2, 3}, 7, FRAME_OK, 6},
        {"zero len, not a marker", {0, 0, 0, 0, 'X'}, 5, FRAME_BAD, 0},
        {"zero len, marker prefix", {0, 0, 0, 0, 'S', 'T'}, 6, FRAME_NEED_MORE, 0},
        {"marker", {0, 0, 0, 0, 'S', 'T', 'K', 'S', 1, 2, 3, 4, 5, 6, 7, 8}, 16, FRAME_SYNC, 16},
        {"over cap", {0, 0x08, 0, 1}, 4, FRAME_BAD, 0},
        {"huge", {0xff, 0xff, 0xff, 0xff}, 4, FRAME_BAD, 0},
        {"at cap, incomplete", {0, 0x08, 0, 0}, 4, FRAME_NEED_MORE, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = 0;
        FrameStatus st = frame_peek(cases[i].bytes, cases[i].avail, &len);
        if (st != cases[i].want)
            fail_msg("case '%s': status %d, want %d", cases[i].name, st, cases[i].want);
        if (st == FRAME_OK || st == FRAME_SYNC)
            assert_int_equal(len, cases[i].want_len);
    }
}

/* ------------------------------------------------------------------ reader */

static FrameReader reader; /* ~512 KiB: keep it off the stack */

static size_t
build_stream(uint8_t *out)
{
    size_t o = 0;
    /* frame "a", marker(7), frame "bc" */
    frame_put_header(out + o, 1);
    o += 4;
    out[o++] = 'a';
    frame_put_sync(out + o, 7);
    o += FRAME_SYNC_BYTES;
    frame_put_header(out + o, 2);
    o += 4;
    out[o++] = 'b';
    out[o++] = 'c';
    return o;
}

static void
test_reader_byte_by_byte(void **state)
{
    (void) state;
    uint8_t stream[64];
    size_t n = build_stream(stream);
    const uint8_t *payload;
    size_t plen;
    uint64_t nonce;
    char got[64];
    size_t ngot = 0;

    frame_reader_init(&reader);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(frame_reader_feed(&reader, stream + i, 1), 1);
        for (;;) {
            ReadResult r = frame_reader_next(&reader, &payload, &plen, &nonce);
            if (r == READ_NONE)
                break;
            assert_int_not_equal(r, READ_BAD);
            if (r == READ_SYNC) {
                assert_int_equal(nonce, 7);
                got[ngot++] = '#';
            } else {
                memcpy(got + ngot, payload, plen);
                ngot += plen;
            }
        }
    }
    got[ngot] = '\0';
    assert_string_equal(got, "a#bc");
}

static void
test_reader_bad_then_hunt(void **state)
{
    (void) state;
    uint8_t junk[] = {0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 0, 0, 0};
    uint8_t marker[FRAME_SYNC_BYTES];
    uint8_t frame[5] = {0, 0, 0, 1, 'z'};
    const uint8_t *payload;
    size_t plen;
    uint64_t nonce;

    frame_reader_init(&reader);
    frame_reader_feed(&reader, junk, sizeof(junk));
    assert_int_equal(frame_reader_next(&reader, &payload, &plen, &nonce), READ_BAD);
    assert_int_equal(frame_reader_next(&reader, &payload, &plen, &nonce), READ_BAD);
    frame_reader_hunt(&reader);
    /* The trailing zeros of the junk may start a marker; nothing completes yet. */
    assert_int_equal(frame_reader_next(&reader, &payload, &plen, &nonce), READ_NONE);
    frame_put_sync(marker, 0x1122334455667788ull);
    frame_reader_feed(&reader, marker, sizeof(marker));
    frame_reader_feed(&reader, frame, sizeof(frame));
    assert_int_equal(frame_reader_next(&reader, &payload, &plen, &nonce), READ_SYNC);
    assert_int_equal(nonce, 0x1122334455667788ull);
    assert_int_equal(frame_reader_next(&reader, &payload, &plen, &nonce), READ_FRAME);
    assert_int_equal(plen, 1);
    assert_int_equal(payload[0], 'z');
}

static void
test_reader_full_buffer_max_frame(void **state)
{
    (void) state;
    static uint8_t big[FRAME_HDR_BYTES + FRAME_MAX_BYTES + 8];
    const uint8_t *payload;
    size_t plen;
    uint64_t nonce;

    frame_put_header(big, FRAME_MAX_BYTES);
    memset(big + 4, 0xab, FRAME_MAX_BYTES);
    frame_put_header(big + 4 + FRAME_MAX_BYTES, 1);
    frame_reader_init(&reader);
    size_t took = frame_reader_feed(&reader, big, sizeof(big) - 3);
    assert_int_equal(took, FRAME_HDR_BYTES + FRAME_MAX_BYTES); /* exactly full */
    assert_int_equal(frame_reader_next(&reader, &payload, &plen, &nonce), READ_FRAME);
    assert_int_equal(plen, FRAME_MAX_BYTES);
    took += frame_reader_feed(&reader, big + took, sizeof(big) - took);
    assert_int_equal(took, sizeof(big));
    /* The second frame (1 byte) is whole; the 3 zero bytes after it are an unfinished header. */
    assert_int_equal(frame_reader_next(&reader, &payload, &plen, &nonce), READ_FRAME);
    assert_int_equal(plen, 1);
    assert_int_equal(frame_reader_next(&reader, &payload, &plen, &nonce), READ_NONE);
}

/* ------------------------------------------------------------------ messages */

static uint8_t entropy[HELLO_ENTROPY_BYTES];

typedef struct {
    HostMsg msg;
    Stockade__Runner__Hello hello;
    Stockade__Runner__SessionConfig config;
} HelloFixture;

static void
hello_fixture(HelloFixture *f)
{
    stockade__runner__host_msg__init(&f->msg);
    stockade__runner__hello__init(&f->hello);
    stockade__runner__session_config__init(&f->config);
    f->msg.req_id = 1;
    f->msg.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_HELLO;
    f->msg.hello = &f->hello;
    f->hello.wall_time_ns = 1;
    f->hello.entropy.data = entropy;
    f->hello.entropy.len = sizeof(entropy);
    f->hello.config = &f->config;
    f->config.session_id = "s-1";
    f->config.uid = 1000;
    f->config.gid = 1000;
    f->config.workspace_device = "/dev/vdb";
}

static HostMsg *
roundtrip_host(const HostMsg *m, char *err, size_t errcap)
{
    static uint8_t buf[FRAME_HDR_BYTES + FRAME_MAX_BYTES];
    size_t n;
    if (msg_encode_host(m, buf, sizeof(buf), &n) < 0) {
        snprintf(err, errcap, "encode failed");
        return NULL;
    }
    return msg_decode_host(buf + FRAME_HDR_BYTES, n - FRAME_HDR_BYTES, err, errcap);
}

static void
test_hello_mutations(void **state)
{
    (void) state;
    static const struct {
        const char *name;
        int field;
        bool ok;
    } cases[] = {
        {"valid", 0, true},         {"no wall time", 1, false}, {"short entropy", 2, false},
        {"bad session id", 3, false}, {"uid 0", 4, false},      {"bad device", 5, false},
        {"req_id 0", 6, false},     {"bad hostname", 7, false}, {"mirror over budget", 8, false},
    };
    Stockade__Runner__MirrorConfig mirror = STOCKADE__RUNNER__MIRROR_CONFIG__INIT;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        HelloFixture f;
        char err[256] = "";
        hello_fixture(&f);
        switch (cases[i].field) {
        case 1: f.hello.wall_time_ns = 0; break;
        case 2: f.hello.entropy.len = 63; break;
        case 3: f.config.session_id = "a/b"; break;
        case 4: f.config.uid = 0; break;
        case 5: f.config.workspace_device = "/dev/sda"; break;
        case 6: f.msg.req_id = 0; break;
        case 7: f.config.hostname = "bad_host"; break;
        case 8:
            mirror.budget_bytes = 10;
            mirror.max_file_bytes = 11;
            f.config.mirror = &mirror;
            break;
        }
        HostMsg *got = roundtrip_host(&f.msg, err, sizeof(err));
        if ((got != NULL) != cases[i].ok)
            fail_msg("case '%s': decoded=%d (%s)", cases[i].name, got != NULL, err);
        if (!got)
            assert_true(strlen(err) > 0);
        msg_free_host(got);
    }
}

static void
test_exec_limits(void **state)
{
    (void) state;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Exec e = STOCKADE__RUNNER__EXEC__INIT;
    char *argv[ARGV_MAX_COUNT + 1];
    char err[256];

    for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
        argv[i] = "x";
    m.req_id = 5;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &e;
    e.exec_id = 1;
    e.argv = argv;
    e.n_argv = ARGV_MAX_COUNT;
    HostMsg *ok = roundtrip_host(&m, err, sizeof(err));
    assert_non_null(ok);
    assert_int_equal(ok->exec->n_argv, ARGV_MAX_COUNT);
    msg_free_host(ok);

    e.n_argv = ARGV_MAX_COUNT + 1;
    assert_null(roundtrip_host(&m, err, sizeof(err)));
    e.n_argv = 0;
    assert_null(roundtrip_host(&m, err, sizeof(err)));
    e.n_argv = 1;
    e.cwd = "relative";
    assert_null(roundtrip_host(&m, err, sizeof(err)));
}

static void
test_prepare_limits(void **state)
{
    (void) state;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Prepare p = STOCKADE__RUNNER__PREPARE__INIT;
    char *argv[WARMUP_ARGV_MAX_COUNT + 1];
    char long_arg[WARMUP_ARG_MAX_BYTES + 2];
    char err[256];

    for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
        argv[i] = "true";
    m.req_id = 9;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PREPARE;
    m.prepare = &p;
    p.workspace_device = "/dev/vdb";
    p.warmup_argv = argv;
    p.n_warmup_argv = 1;
    p.wall_time_ns = 1;
    p.entropy.data = entropy;
    p.entropy.len = sizeof(entropy);
    HostMsg *ok = roundtrip_host(&m, err, sizeof(err));
    assert_non_null(ok);
    msg_free_host(ok);
    p.n_warmup_argv = 0; /* no warm-up: just the mount */
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), 0);
    p.entropy.len = 32;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    p.entropy.len = sizeof(entropy);
    p.n_warmup_argv = WARMUP_ARGV_MAX_COUNT + 1;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    memset(long_arg, 'a', sizeof(long_arg) - 1);
    long_arg[sizeof(long_arg) - 1] = '\0';
    argv[0] = long_arg;
    p.n_warmup_argv = 1;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    argv[0] = "true";
    p.workspace_device = "/dev/vda"; /* the root disk is never the workspace */
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);

    /* the warm-up's and the parked process's exec ids are reserved: a session's Exec may
     * not use them */
    Stockade__Runner__Exec e = STOCKADE__RUNNER__EXEC__INIT;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &e;
    e.exec_id = EXEC_ID_WARMUP;
    e.argv = argv;
    e.n_argv = 1;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    e.exec_id = EXEC_ID_PARKED;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    e.exec_id = EXEC_ID_PARKED - 1;
    e.adopt = true;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), 0);
}

static void
test_prestart_checks(void **state)
{
    (void) state;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Prestart p = STOCKADE__RUNNER__PRESTART__INIT;
    char err[256], long_arg[WARMUP_ARG_MAX_BYTES + 2];
    char *argv[WARMUP_ARGV_MAX_COUNT + 1] = {"python3", "/usr/lib/stockade/kernel.py"};

    m.req_id = 1;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PRESTART;
    m.prestart = &p;
    p.argv = argv;
    p.n_argv = 2;
    p.uid = p.gid = 1000;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), 0);
    p.uid = 0; /* never as root */
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    p.uid = 1000;
    p.gid = 0;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    p.gid = 1000;
    p.n_argv = 0;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    for (size_t i = 0; i < (sizeof(argv) / sizeof(argv[0])); i++)
        argv[i] = argv[i] ? argv[i] : "x";
    p.n_argv = (sizeof(argv) / sizeof(argv[0])); /* one over the count */
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    p.n_argv = 2;
    memset(long_arg, 'a', sizeof(long_arg) - 1);
    long_arg[sizeof(long_arg) - 1] = '\0';
    argv[1] = long_arg;
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    argv[1] = "";
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
    m.req_id = 0; /* answered: needs a req_id */
    argv[1] = "k.py";
    assert_int_equal(msg_check_host(&m, err, sizeof(err)), -1);
}

static void
test_guest_checks(void **state)
{
    (void) state;
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__ExecExit x = STOCKADE__RUNNER__EXEC_EXIT__INIT;
    Stockade__Runner__Output o = STOCKADE__RUNNER__OUTPUT__INIT;
    char err[256];

    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT;
    m.exec_exit = &x;
    x.exec_id = 3;
    x.exit_code = 0;
    assert_int_equal(msg_check_guest(&m, err, sizeof(err)), 0);
    x.exit_code = -1; /* killed without a signal: inconsistent */
    assert_int_equal(msg_check_guest(&m, err, sizeof(err)), -1);
    x.signal = 9;
    assert_int_equal(msg_check_guest(&m, err, sizeof(err)), 0);
    m.req_id = 4; /* exits are unsolicited */
    assert_int_equal(msg_check_guest(&m, err, sizeof(err)), -1);

    m.req_id = 0;
    m.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT;
    m.output = &o;
    o.exec_id = 3;
    o.stream = STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT;
    o.data.len = 0;
    assert_int_equal(msg_check_guest(&m, err, sizeof(err)), -1); /* empty chunk */
    o.data.data = (uint8_t *) "hi";
    o.data.len = 2;
    assert_int_equal(msg_check_guest(&m, err, sizeof(err)), 0);
    o.stream = 7;
    assert_int_equal(msg_check_guest(&m, err, sizeof(err)), -1);
}

/* Tunnel messages (protocol 3): req_id 0 both ways, every size and range named in
 * runner.proto, and the egress config of Hello. */
static void
test_tunnel_checks(void **state)
{
    (void) state;
    GuestMsg g = STOCKADE__RUNNER__GUEST_MSG__INIT;
    HostMsg h = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__TunnelOpen o = STOCKADE__RUNNER__TUNNEL_OPEN__INIT;
    Stockade__Runner__TunnelData d = STOCKADE__RUNNER__TUNNEL_DATA__INIT;
    Stockade__Runner__TunnelCredit c = STOCKADE__RUNNER__TUNNEL_CREDIT__INIT;
    Stockade__Runner__TunnelOpenResult r = STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__INIT;
    static uint8_t big[TUNNEL_DATA_MAX_BYTES + 1];
    char host[TUNNEL_HOST_MAX_BYTES + 2], err[256];

    g.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_OPEN;
    g.tunnel_open = &o;
    o.stream_id = 1;
    o.host = "0x7f.1";
    o.port = 80;
    assert_int_equal(msg_check_guest(&g, err, sizeof(err)), 0);
    g.req_id = 3; /* tunnel messages are unsolicited */
    assert_int_equal(msg_check_guest(&g, err, sizeof(err)), -1);
    g.req_id = 0;
    static const struct {
        const char *host;
        uint32_t port, id;
        bool ok;
    } opens[] = {
        {"[::ffff:169.254.169.254]", 443, 1, true},
        {"a b", 80, 1, false},
        {"", 80, 1, false},
        {"a\x7f", 80, 1, false},
        {"x", 0, 1, false},
        {"x", 65536, 1, false},
        {"x", 1, 0, false},
    };
    for (size_t i = 0; i < sizeof(opens) / sizeof(opens[0]); i++) {
        o.host = (char *) opens[i].host;
        o.port = opens[i].port;
        o.stream_id = opens[i].id;
        if ((msg_check_guest(&g, err, sizeof(err)) == 0) != opens[i].ok)
            fail_msg("open '%s':%u id %u", opens[i].host, opens[i].port, opens[i].id);
    }
    memset(host, 'h', sizeof(host) - 1);
    host[TUNNEL_HOST_MAX_BYTES] = '\0';
    o.host = host;
    o.port = 1;
    o.stream_id = 1;
    assert_int_equal(msg_check_guest(&g, err, sizeof(err)), 0);
    host[TUNNEL_HOST_MAX_BYTES] = 'h';
    host[TUNNEL_HOST_MAX_BYTES + 1] = '\0';
    assert_int_equal(msg_check_guest(&g, err, sizeof(err)), -1);

    g.body_case = STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_DATA;
    g.tunnel_data = &d;
    d.stream_id = 1;
    assert_int_equal(msg_check_guest(&g, err, sizeof(err)), -1); /* empty without eof */
    d.eof = true;
    assert_int_equal(msg_check_guest(&g, err, sizeof(err)), 0);
    d.data.data = big;
    d.data.len = TUNNEL_DATA_MAX_BYTES;
    assert_int_equal(msg_check_guest(&g, err, sizeof(err)), 0);
    d.data.len = TUNNEL_DATA_MAX_BYTES + 1;
    assert_int_equal(msg_check_guest(&g, err, sizeof(err)), -1);

    h.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_CREDIT;
    h.tunnel_credit = &c;
    c.stream_id = 1;
    c.bytes = TUNNEL_WINDOW_BYTES;
    assert_int_equal(msg_check_host(&h, err, sizeof(err)), 0);
    h.req_id = 7; /* no req_id host -> guest either */
    assert_int_equal(msg_check_host(&h, err, sizeof(err)), -1);
    h.req_id = 0;
    c.bytes = TUNNEL_WINDOW_BYTES + 1;
    assert_int_equal(msg_check_host(&h, err, sizeof(err)), -1);
    c.bytes = 0;
    assert_int_equal(msg_check_host(&h, err, sizeof(err)), -1);

    h.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_OPEN_RESULT;
    h.tunnel_open_result = &r;
    r.stream_id = 1;
    r.code = STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__CODE__DENIED;
    r.message = "169.254.169.254 is Link Local (RFC 3927)";
    assert_int_equal(msg_check_host(&h, err, sizeof(err)), 0);
    r.code = 0;
    assert_int_equal(msg_check_host(&h, err, sizeof(err)), -1);
    r.code = STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__CODE__TIMEOUT + 1;
    assert_int_equal(msg_check_host(&h, err, sizeof(err)), -1);

    HelloFixture f;
    Stockade__Runner__EgressConfig ec = STOCKADE__RUNNER__EGRESS_CONFIG__INIT;
    hello_fixture(&f);
    f.config.egress = &ec;
    ec.max_streams = TUNNEL_STREAMS_MAX;
    assert_int_equal(msg_check_host(&f.msg, err, sizeof(err)), 0);
    ec.max_streams = TUNNEL_STREAMS_MAX + 1;
    assert_int_equal(msg_check_host(&f.msg, err, sizeof(err)), -1);
    ec.max_streams = 0;
    assert_int_equal(msg_check_host(&f.msg, err, sizeof(err)), -1);
    assert_false(msg_host_needs_req_id(STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_DATA));
    assert_true(msg_host_needs_req_id(STOCKADE__RUNNER__HOST_MSG__BODY_PING));
}

static void
test_decode_garbage(void **state)
{
    (void) state;
    uint8_t junk[64];
    char err[256];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (uint8_t) (i * 37 + 11);
    assert_null(msg_decode_guest(junk, sizeof(junk), err, sizeof(err)));
    assert_null(msg_decode_host(junk, 0, err, sizeof(err)));
    /* An unknown field (number 99, varint) on an otherwise empty message is refused. */
    uint8_t unknown[] = {0x98, 0x06, 0x01};
    assert_null(msg_decode_host(unknown, sizeof(unknown), err, sizeof(err)));
}

static void
test_paths(void **state)
{
    (void) state;
    static const struct {
        const char *path;
        bool ok;
    } cases[] = {
        {"a", true},       {"a/b/c.txt", true}, {".hidden", true}, {"a..b", true},
        {"", false},       {"/etc", false},     {"..", false},     {"a/../b", false},
        {"./a", false},    {"a//b", false},     {"a/", false},     {"a/.", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (msg_path_is_valid(cases[i].path, false) != cases[i].ok)
            fail_msg("path '%s': want %d", cases[i].path, cases[i].ok);
    assert_true(msg_path_is_valid("", true));

    char deep[PATH_MAX_DEPTH * 2 + 4];
    size_t o = 0;
    for (int i = 0; i <= PATH_MAX_DEPTH; i++) {
        deep[o++] = 'd';
        deep[o++] = '/';
    }
    deep[o - 1] = '\0';
    assert_false(msg_path_is_valid(deep, false)); /* PATH_MAX_DEPTH + 1 components */
    char longname[NAME_MAX_BYTES + 2];
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_false(msg_path_is_valid(longname, false));
    longname[NAME_MAX_BYTES] = '\0';
    assert_true(msg_path_is_valid(longname, false));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peek_table),
        cmocka_unit_test(test_reader_byte_by_byte),
        cmocka_unit_test(test_reader_bad_then_hunt),
        cmocka_unit_test(test_reader_full_buffer_max_frame),
        cmocka_unit_test(test_hello_mutations),
        cmocka_unit_test(test_exec_limits),
        cmocka_unit_test(test_prepare_limits),
        cmocka_unit_test(test_prestart_checks),
        cmocka_unit_test(test_guest_checks),
        cmocka_unit_test(test_tunnel_checks),
        cmocka_unit_test(test_decode_garbage),
        cmocka_unit_test(test_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
