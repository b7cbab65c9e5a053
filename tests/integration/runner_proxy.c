/* The egress proxy of the real stockade-runner (issue 7), in host mode: the runner serves
 * --serve-fd on a socketpair with --proxy-port on 127.0.0.1; this test is the host end of the
 * channel (tests/lib/runner_client) and a plain TCP client of the proxy at once. It checks the
 * tunnel from the guest's side: CONNECT and plain HTTP heads becoming TunnelOpen with the host
 * exactly as written, refusals becoming HTTP answers, half closes both ways, a transfer much
 * larger than the window under credit (the runner never holds more than a window, never sends
 * beyond its credit), a host that overruns its credit getting the stream reset, the cap on
 * connections, and the exec environment. Needs root (execs switch user); skips otherwise. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdutil.h"
#include "flow.h"
#include "macro.h"
#include "runner_client.h"
#include "testlib.h"
#include "timeutil.h"

#define RP_TIMEOUT_MS 10000
#define RP_MAX_STREAMS 3
#define RP_BIG_BYTES (4u * 1024u * 1024u + 12345u)
#define GB(x) STOCKADE__RUNNER__GUEST_MSG__BODY_##x
#define HB(x) STOCKADE__RUNNER__HOST_MSG__BODY_##x
#define OC(x) STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__CODE__##x

static struct {
    const char *runner_path;
    pid_t pid;
    RunnerClient *c;
    char ws[64];
    uint16_t port;
} rp;

/* ------------------------------------------------------------------ helpers */

static uint16_t
rp_free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static int
rp_client(const char *head)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons(rp.port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {.tv_sec = RP_TIMEOUT_MS / 1000};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
        fail_msg("connect to the proxy: %m");
    if (head && write(fd, head, strlen(head)) != (ssize_t) strlen(head))
        fail_msg("write: %m");
    return fd;
}

/* Reads until EOF (or cap); returns the length. */
static size_t
rp_read_all(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0)
            fail_msg("read from the proxy: %m");
        if (r == 0 || (n += (size_t) r) == cap - 1)
            break;
    }
    buf[n] = '\0';
    return n;
}

static GuestMsg *
rp_wait(int body_case, uint32_t stream)
{
    GuestMsg *m;
    if (runner_client_wait_for(rp.c, body_case, stream, RP_TIMEOUT_MS, &m) < 0)
        fail_msg("waiting for body %d of stream %u: %s", body_case, stream,
                 runner_client_error(rp.c));
    return m;
}

static uint32_t
rp_expect_open(const char *host, unsigned port)
{
    GuestMsg *m = rp_wait(GB(TUNNEL_OPEN), 0);
    uint32_t id = m->tunnel_open->stream_id;
    assert_int_equal(m->req_id, 0);
    assert_string_equal(m->tunnel_open->host, host);
    assert_int_equal(m->tunnel_open->port, port);
    msg_free_guest(m);
    return id;
}

static void
rp_send(HostMsg *m)
{
    if (runner_client_send(rp.c, m, RP_TIMEOUT_MS, NULL) < 0)
        fail_msg("send: %s", runner_client_error(rp.c));
    assert_int_equal(m->req_id, 0);
}

static void
rp_result(uint32_t id, int code, const char *message)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__TunnelOpenResult r = STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__INIT;
    r.stream_id = id;
    r.code = code;
    r.message = (char *) message;
    m.body_case = HB(TUNNEL_OPEN_RESULT);
    m.tunnel_open_result = &r;
    rp_send(&m);
}

static void
rp_data(uint32_t id, const void *data, size_t len, bool eof)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__TunnelData d = STOCKADE__RUNNER__TUNNEL_DATA__INIT;
    d.stream_id = id;
    d.data = (ProtobufCBinaryData){len, (uint8_t *) data};
    d.eof = eof;
    m.body_case = HB(TUNNEL_DATA);
    m.tunnel_data = &d;
    rp_send(&m);
}

static void
rp_close(uint32_t id, bool reset)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__TunnelClose c = STOCKADE__RUNNER__TUNNEL_CLOSE__INIT;
    c.stream_id = id;
    c.reset = reset;
    m.body_case = HB(TUNNEL_CLOSE);
    m.tunnel_close = &c;
    rp_send(&m);
}

/* Guest -> host bytes of a stream until want bytes or eof; returns what arrived. */
static size_t
rp_collect(uint32_t id, char *buf, size_t cap, bool *ret_eof)
{
    size_t n = 0;
    *ret_eof = false;
    while (!*ret_eof && n < cap) {
        GuestMsg *m = rp_wait(GB(TUNNEL_DATA), id);
        size_t len = m->tunnel_data->data.len;
        assert_true(n + len <= cap);
        memcpy(buf + n, m->tunnel_data->data.data, len);
        n += len;
        *ret_eof = m->tunnel_data->eof;
        msg_free_guest(m);
    }
    return n;
}

/* ------------------------------------------------------------------ fixture */

static void
rp_hello(void)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Hello h = STOCKADE__RUNNER__HELLO__INIT;
    Stockade__Runner__SessionConfig cfg = STOCKADE__RUNNER__SESSION_CONFIG__INIT;
    Stockade__Runner__EgressConfig eg = STOCKADE__RUNNER__EGRESS_CONFIG__INIT;
    uint8_t entropy[HELLO_ENTROPY_BYTES] = {7};
    GuestMsg *reply;

    eg.max_streams = RP_MAX_STREAMS;
    cfg.session_id = "rp-session";
    cfg.uid = cfg.gid = 1000;
    cfg.workspace_device = "/dev/vdb";
    cfg.egress = &eg;
    h.wall_time_ns = 1;
    h.entropy = (ProtobufCBinaryData){sizeof(entropy), entropy};
    h.config = &cfg;
    m.body_case = HB(HELLO);
    m.hello = &h;
    if (runner_client_call(rp.c, &m, RP_TIMEOUT_MS, &reply) < 0)
        fail_msg("hello: %s", runner_client_error(rp.c));
    assert_int_equal(reply->body_case, GB(ACK));
    msg_free_guest(reply);
}

static int
rp_setup(void **state)
{
    (void) state;
    int sv[2];
    char port[16];
    GuestMsg *ready;

    if (geteuid() != 0)
        test_skip("the runner needs root to switch to the session user");
    snprintf(rp.ws, sizeof(rp.ws), "/tmp/stockade-rp.XXXXXX");
    assert_non_null(mkdtemp(rp.ws));
    rp.port = rp_free_port();
    snprintf(port, sizeof(port), "%u", rp.port);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    rp.pid = fork();
    if (rp.pid == 0) {
        dup2(sv[1], 3);
        execl(rp.runner_path, "stockade-runner", "--serve-fd", "3", "--workspace", rp.ws,
              "--proxy-port", port, getenv("STOCKADE_RUNNER_DEBUG") ? "--debug" : NULL,
              (char *) NULL);
        _exit(127);
    }
    close(sv[1]);
    assert_non_null(rp.c = runner_client_new(sv[0]));
    if (runner_client_sync(rp.c, 0x9e0001, RP_TIMEOUT_MS, &ready) < 0)
        fail_msg("sync: %s", runner_client_error(rp.c));
    msg_free_guest(ready);
    rp_hello();
    return 0;
}

static int
rp_teardown(void **state)
{
    (void) state;
    int status;
    runner_client_free(rp.c);
    if (rp.pid > 0 && waitpid(rp.pid, &status, WNOHANG) == 0) {
        kill(rp.pid, SIGKILL);
        waitpid(rp.pid, &status, 0);
    }
    test_rm_rf(rp.ws);
    return 0;
}

/* ------------------------------------------------------------------ tests */

#define ESTABLISHED "HTTP/1.1 200 Connection established\r\n\r\n"

static void
rp_read_exact(int fd, char *buf, size_t len)
{
    size_t got;
    if (read_full(fd, buf, len, &got) < 0 || got != len)
        fail_msg("short read from the proxy (%zu of %zu): %m", got, len);
}

static void
test_connect_both_ways(void **state)
{
    (void) state;
    char buf[256];
    bool eof;
    int fd = rp_client("CONNECT 0x7f.1:8080 HTTP/1.1\r\nHost: x\r\n\r\nEARLY");
    uint32_t id = rp_expect_open("0x7f.1", 8080);

    rp_result(id, OC(OK), "");
    rp_read_exact(fd, buf, strlen(ESTABLISHED));
    assert_memory_equal(buf, ESTABLISHED, strlen(ESTABLISHED));
    assert_int_equal(rp_collect(id, buf, 5, &eof), 5); /* bytes sent before the answer */
    assert_memory_equal(buf, "EARLY", 5);
    assert_int_equal(write(fd, "ping", 4), 4);
    assert_int_equal(rp_collect(id, buf, 4, &eof), 4);
    assert_memory_equal(buf, "ping", 4);
    rp_data(id, "pong", 4, true); /* the host's half close reaches the client as EOF */
    assert_int_equal(rp_read_all(fd, buf, sizeof(buf)), 4);
    assert_string_equal(buf, "pong");
    assert_int_equal(shutdown(fd, SHUT_WR), 0); /* and the client's reaches the host */
    assert_int_equal(rp_collect(id, buf, sizeof(buf), &eof), 0);
    assert_true(eof);
    rp_close(id, false);
    close(fd);
}

static void
test_plain_http_rewritten(void **state)
{
    (void) state;
    static const char head[] = "GET /x?y HTTP/1.1\r\nHost: Example.test:81\r\nUser-Agent: t\r\n"
                               "Connection: close\r\n\r\n";
    static const char redirect[] = "HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\n"
                                   "Content-Length: 0\r\n\r\n";
    char buf[512];
    bool eof;
    int fd = rp_client("GET http://Example.test:81/x?y HTTP/1.1\r\nHost: other\r\n"
                       "Proxy-Connection: keep-alive\r\nUser-Agent: t\r\n\r\n");
    uint32_t id = rp_expect_open("Example.test", 81);

    rp_result(id, OC(OK), "");
    assert_int_equal(rp_collect(id, buf, strlen(head), &eof), strlen(head));
    assert_memory_equal(buf, head, strlen(head));
    rp_data(id, redirect, strlen(redirect), true); /* passed back as is: never followed */
    assert_int_equal(rp_read_all(fd, buf, sizeof(buf)), strlen(redirect));
    assert_string_equal(buf, redirect);
    close(fd);
    assert_int_equal(rp_collect(id, buf, sizeof(buf), &eof), 0);
    assert_true(eof);
    rp_close(id, false);
}

static void
test_refusals_become_http(void **state)
{
    (void) state;
    static const struct {
        int code;
        const char *status;
    } cases[] = {
        {OC(DENIED), "HTTP/1.1 403 "},
        {OC(LIMIT), "HTTP/1.1 429 "},
        {OC(UNREACHABLE), "HTTP/1.1 502 "},
        {OC(TIMEOUT), "HTTP/1.1 504 "},
    };
    char buf[1024];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int fd = rp_client("GET http://2852039166/latest HTTP/1.1\r\n\r\n");
        uint32_t id = rp_expect_open("2852039166", 80);
        rp_result(id, cases[i].code, "because the test said so");
        rp_read_all(fd, buf, sizeof(buf));
        if (strncmp(buf, cases[i].status, strlen(cases[i].status)) != 0 ||
            !strstr(buf, "because the test said so"))
            fail_msg("code %d answered: %s", cases[i].code, buf);
        close(fd);
    }
    int fd = rp_client("GET / HTTP/1.1\r\nHost: x\r\n\r\n"); /* refused locally */
    rp_read_all(fd, buf, sizeof(buf));
    assert_memory_equal(buf, "HTTP/1.1 400 ", 13);
    close(fd);
}

#define RP_PATTERN_PERIOD 251

/* Host -> client: the runner returns credit as the client reads and never lets the host be
 * more than a window ahead; every byte arrives, in order. */
static void
test_large_download_under_credit(void **state)
{
    (void) state;
    static uint8_t pattern[TUNNEL_DATA_MAX_BYTES + RP_PATTERN_PERIOD], buf[TUNNEL_DATA_MAX_BYTES];
    uint64_t sent = 0, received = 0, credit = TUNNEL_WINDOW_BYTES, credits_seen = 0;
    int fd = rp_client("CONNECT big.test:1 HTTP/1.1\r\n\r\n");
    uint32_t id = rp_expect_open("big.test", 1);
    GuestMsg *m;

    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (uint8_t) (i % RP_PATTERN_PERIOD);
    rp_result(id, OC(OK), "");
    rp_read_exact(fd, (char *) buf, strlen(ESTABLISHED));
    uint64_t t0 = now_usec();
    while (received < RP_BIG_BYTES) {
        while (sent < RP_BIG_BYTES && credit > 0) {
            size_t n = MIN(MIN((uint64_t) TUNNEL_DATA_MAX_BYTES, credit), RP_BIG_BYTES - sent);
            rp_data(id, pattern + sent % RP_PATTERN_PERIOD, n, sent + n == RP_BIG_BYTES);
            sent += n;
            credit -= n;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 20) > 0) {
            ssize_t r = read(fd, buf, sizeof(buf));
            assert_true(r > 0);
            for (ssize_t i = 0; i < r; i++)
                if (buf[i] != (uint8_t) ((received + (uint64_t) i) % RP_PATTERN_PERIOD))
                    fail_msg("byte %llu differs", (unsigned long long) (received + (uint64_t) i));
            received += (uint64_t) r;
        }
        while (runner_client_wait_for(rp.c, GB(TUNNEL_CREDIT), id, 1, &m) == 0) {
            credit += m->tunnel_credit->bytes;
            credits_seen++;
            assert_true(credit <= TUNNEL_WINDOW_BYTES);
            msg_free_guest(m);
        }
    }
    double secs = (double) (now_usec() - t0) / 1e6;
    print_message("download through the runner: %.1f MiB in %.3f s (%.0f MiB/s), %llu credits\n",
                  RP_BIG_BYTES / 1048576.0, secs, RP_BIG_BYTES / 1048576.0 / secs,
                  (unsigned long long) credits_seen);
    assert_true(credits_seen >= RP_BIG_BYTES / TUNNEL_WINDOW_BYTES);
    assert_int_equal(rp_read_all(fd, (char *) buf, sizeof(buf)), 0); /* the host's eof */
    rp_close(id, true);                                              /* a reset drops the stream */
    close(fd);
}

/* Client -> host: the runner never sends beyond the credit it was given and waits for more. */
static void
test_large_upload_under_credit(void **state)
{
    (void) state;
    static uint8_t out[RP_BIG_BYTES / 4];
    static char got[TUNNEL_DATA_MAX_BYTES];
    uint64_t written = 0, received = 0, runner_credit = TUNNEL_WINDOW_BYTES, ungranted = 0;
    int fd = rp_client("CONNECT up.test:2 HTTP/1.1\r\n\r\n");
    uint32_t id = rp_expect_open("up.test", 2);
    GuestMsg *m;

    for (size_t i = 0; i < sizeof(out); i++)
        out[i] = (uint8_t) (i % RP_PATTERN_PERIOD);
    rp_result(id, OC(OK), "");
    rp_read_exact(fd, got, strlen(ESTABLISHED));
    fd_set_nonblock(fd, true);
    while (received < sizeof(out)) {
        ssize_t w = written < sizeof(out) ? write(fd, out + written, sizeof(out) - written) : 0;
        if (w > 0)
            written += (uint64_t) w;
        if (written == sizeof(out))
            shutdown(fd, SHUT_WR);
        if (runner_client_wait_for(rp.c, GB(TUNNEL_DATA), id, 20, &m) < 0)
            continue;
        size_t len = m->tunnel_data->data.len;
        assert_true(len <= runner_credit); /* never beyond the credit */
        runner_credit -= len;
        for (size_t i = 0; i < len; i++)
            assert_int_equal(m->tunnel_data->data.data[i], (received + i) % RP_PATTERN_PERIOD);
        received += len;
        ungranted += len;
        msg_free_guest(m);
        if (ungranted >= FLOW_GRANT_MIN_BYTES) {
            HostMsg h = STOCKADE__RUNNER__HOST_MSG__INIT;
            Stockade__Runner__TunnelCredit c = STOCKADE__RUNNER__TUNNEL_CREDIT__INIT;
            c.stream_id = id;
            c.bytes = (uint32_t) ungranted;
            h.body_case = HB(TUNNEL_CREDIT);
            h.tunnel_credit = &c;
            rp_send(&h);
            runner_credit += ungranted;
            ungranted = 0;
        }
    }
    assert_int_equal(received, sizeof(out));
    rp_close(id, true);
    close(fd);
}

/* A host that breaks a stream's rules gets it reset and an Error: credit over the window (the
 * runner has spent nothing yet, so any credit is too much), data after its eof. Running over
 * the runner's own credit is the same check (flow_recv_on_data; see unit_proto_flow). */
static void
test_host_violations_reset(void **state)
{
    (void) state;
    char buf[256];

    for (int kind = 0; kind < 2; kind++) {
        int fd = rp_client("CONNECT over.test:3 HTTP/1.1\r\n\r\n");
        uint32_t id = rp_expect_open("over.test", 3);
        GuestMsg *m;

        rp_result(id, OC(OK), "");
        if (kind == 0) {
            HostMsg h = STOCKADE__RUNNER__HOST_MSG__INIT;
            Stockade__Runner__TunnelCredit c = STOCKADE__RUNNER__TUNNEL_CREDIT__INIT;
            c.stream_id = id;
            c.bytes = 1;
            h.body_case = HB(TUNNEL_CREDIT);
            h.tunnel_credit = &c;
            rp_send(&h);
        } else {
            rp_data(id, "end", 3, true);
            rp_data(id, "more", 4, false);
        }
        m = rp_wait(GB(TUNNEL_CLOSE), id);
        assert_true(m->tunnel_close->reset);
        msg_free_guest(m);
        m = rp_wait(GB(ERROR), 0);
        assert_non_null(strstr(m->error->message, kind == 0 ? "credit" : "after eof"));
        msg_free_guest(m);
        rp_read_all(fd, buf, sizeof(buf)); /* the connection is gone */
        close(fd);
    }
}

/* A client that resets its connection resets its stream. */
static void
test_client_reset(void **state)
{
    (void) state;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    char buf[64];
    int fd = rp_client("CONNECT rst.test:4 HTTP/1.1\r\n\r\n");
    uint32_t id = rp_expect_open("rst.test", 4);

    rp_result(id, OC(OK), "");
    rp_read_exact(fd, buf, strlen(ESTABLISHED));
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd); /* RST */
    GuestMsg *m = rp_wait(GB(TUNNEL_CLOSE), id);
    assert_true(m->tunnel_close->reset);
    msg_free_guest(m);
}

/* At most max_streams clients at once; the next gets 503 without a stream. */
static void
test_connection_cap(void **state)
{
    (void) state;
    int fds[RP_MAX_STREAMS];
    uint32_t ids[RP_MAX_STREAMS];
    char buf[512];

    for (int i = 0; i < RP_MAX_STREAMS; i++) {
        fds[i] = rp_client("CONNECT hold.test:5 HTTP/1.1\r\n\r\n");
        ids[i] = rp_expect_open("hold.test", 5);
    }
    int extra = rp_client(NULL); /* refused at once, before it could send anything */
    rp_read_all(extra, buf, sizeof(buf));
    assert_memory_equal(buf, "HTTP/1.1 503 ", 13);
    close(extra);
    for (int i = 0; i < RP_MAX_STREAMS; i++) {
        rp_result(ids[i], OC(LIMIT), "done");
        rp_read_all(fds[i], buf, sizeof(buf));
        assert_memory_equal(buf, "HTTP/1.1 429 ", 13);
        close(fds[i]);
    }
}

/* Stream ids start at 1 and only grow; a message for a stream that is gone is dropped. */
static void
test_stale_messages_dropped(void **state)
{
    (void) state;
    char buf[256];
    rp_data(1, "late", 4, false); /* stream 1 ended long ago */
    rp_close(2, true);
    int fd = rp_client("CONNECT after.test:6 HTTP/1.1\r\n\r\n");
    uint32_t id = rp_expect_open("after.test", 6);
    assert_true(id > RP_MAX_STREAMS);
    rp_result(id, OC(DENIED), "no");
    rp_read_all(fd, buf, sizeof(buf));
    assert_memory_equal(buf, "HTTP/1.1 403 ", 13);
    close(fd);
}

static void
test_exec_environment(void **state)
{
    (void) state;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Exec x = STOCKADE__RUNNER__EXEC__INIT;
    char *argv[] = {"/bin/sh", "-c", "env", NULL}, want[64], out[8192] = "";
    size_t n = 0;
    GuestMsg *g;

    x.exec_id = 1;
    x.argv = argv;
    x.n_argv = 3;
    x.cwd = "";
    m.body_case = HB(EXEC);
    m.exec = &x;
    if (runner_client_call(rp.c, &m, RP_TIMEOUT_MS, &g) < 0)
        fail_msg("exec: %s", runner_client_error(rp.c));
    assert_int_equal(g->body_case, GB(EXEC_STARTED));
    msg_free_guest(g);
    for (;;) {
        g = rp_wait(GB(OUTPUT), 1);
        size_t len = MIN(g->output->data.len, sizeof(out) - n - 1);
        memcpy(out + n, g->output->data.data, len);
        n += len;
        msg_free_guest(g);
        if (strstr(out, "no_proxy="))
            break;
    }
    g = rp_wait(GB(EXEC_EXIT), 1);
    msg_free_guest(g);
    snprintf(want, sizeof(want), "HTTP_PROXY=http://127.0.0.1:%u\n", rp.port);
    assert_non_null(strstr(out, want));
    snprintf(want, sizeof(want), "https_proxy=http://127.0.0.1:%u\n", rp.port);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "NO_PROXY=localhost,127.0.0.1,::1\n"));
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect_both_ways),
        cmocka_unit_test(test_plain_http_rewritten),
        cmocka_unit_test(test_refusals_become_http),
        cmocka_unit_test(test_large_download_under_credit),
        cmocka_unit_test(test_large_upload_under_credit),
        cmocka_unit_test(test_host_violations_reset),
        cmocka_unit_test(test_client_reset),
        cmocka_unit_test(test_connection_cap),
        cmocka_unit_test(test_stale_messages_dropped),
        cmocka_unit_test(test_exec_environment),
    };
    if (argc != 2) {
        fprintf(stderr, "usage: %s RUNNER\n", argv[0]);
        return 2;
    }
    rp.runner_path = argv[1];
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, rp_setup, rp_teardown);
}
