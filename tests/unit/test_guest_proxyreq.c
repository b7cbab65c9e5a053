/* Unit tests of guest/proxyreq.c, the egress proxy's request parser: CONNECT, absolute-form
 * plain HTTP and its rewrite to origin form, hosts passed on exactly as written, and every
 * refusal with its status (header count and size caps, framing, targets, ports). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxyreq.h"

static uint8_t out[PROXY_REWRITE_MAX_BYTES];

static ProxyReqStatus
parse(const char *text, ProxyRequest *r)
{
    return proxyreq_parse((const uint8_t *) text, strlen(text), out, sizeof(out), r);
}

static void
test_connect(void **state)
{
    (void) state;
    static const struct {
        const char *req, *host;
        unsigned port;
    } ok[] = {
        {"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", "pypi.org", 443},
        {"CONNECT 10.213.0.2:8080 HTTP/1.0\r\n\r\n", "10.213.0.2", 8080},
        {"CONNECT 2852039166:80 HTTP/1.1\r\n\r\n", "2852039166", 80},
        {"CONNECT 0x7f.1:80 HTTP/1.1\r\n\r\n", "0x7f.1", 80},
        {"CONNECT 0251.0376.0251.0376:80 HTTP/1.1\r\n\r\n", "0251.0376.0251.0376", 80},
        {"CONNECT [::ffff:169.254.169.254]:443 HTTP/1.1\r\n\r\n", "[::ffff:169.254.169.254]", 443},
        {"CONNECT [fe80::1%eth0]:443 HTTP/1.1\r\n\r\n", "[fe80::1%eth0]", 443},
        {"CONNECT localhost:65535 HTTP/1.1\r\nProxy-Authorization: x\r\n\r\n", "localhost", 65535},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ProxyRequest r;
        if (parse(ok[i].req, &r) != PROXYREQ_OK)
            fail_msg("'%s' refused: %d %s", ok[i].req, r.status, r.why);
        assert_true(r.is_connect);
        assert_string_equal(r.host, ok[i].host);
        assert_int_equal(r.port, ok[i].port);
        assert_int_equal(r.head_len, strlen(ok[i].req));
        assert_int_equal(r.out_len, 0);
    }
}

static void
test_plain_rewrite(void **state)
{
    (void) state;
    ProxyRequest r;
    const char *req = "GET http://10.213.0.2:8080/file.bin?x=1 HTTP/1.1\r\n"
                      "Host: 10.213.0.2:8080\r\nUser-Agent: t\r\nConnection: keep-alive\r\n"
                      "Proxy-Connection: keep-alive\r\nAccept:  */* \r\n\r\nBODY";
    assert_int_equal(parse(req, &r), PROXYREQ_OK);
    assert_false(r.is_connect);
    assert_string_equal(r.host, "10.213.0.2");
    assert_int_equal(r.port, 8080);
    assert_int_equal(r.head_len, strlen(req) - 4);
    const char *want = "GET /file.bin?x=1 HTTP/1.1\r\nHost: 10.213.0.2:8080\r\nUser-Agent: t\r\n"
                       "Accept: */*\r\nConnection: close\r\n\r\n";
    assert_int_equal(r.out_len, strlen(want));
    assert_memory_equal(out, want, strlen(want));

    assert_int_equal(parse("HEAD HTTP://Example.com HTTP/1.0\r\n\r\n", &r), PROXYREQ_OK);
    assert_string_equal(r.host, "Example.com");
    assert_int_equal(r.port, 80);
    want = "HEAD / HTTP/1.0\r\nHost: Example.com\r\nConnection: close\r\n\r\n";
    assert_memory_equal(out, want, strlen(want));
    assert_int_equal(parse("GET http://h?q HTTP/1.1\r\n\r\n", &r), PROXYREQ_OK);
    want = "GET /?q HTTP/1.1\r\nHost: h\r\n";
    assert_memory_equal(out, want, strlen(want));
    assert_int_equal(parse("POST http://[::1]:81/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", &r),
                     PROXYREQ_OK);
    assert_string_equal(r.host, "[::1]");
    assert_int_equal(r.port, 81);
    assert_int_equal(parse("GET http://h:/ HTTP/1.1\r\n\r\n", &r), PROXYREQ_OK);
    assert_int_equal(r.port, 80);
}

static void
test_need_more(void **state)
{
    (void) state;
    ProxyRequest r;
    const char *full = "CONNECT a.b:1 HTTP/1.1\r\nX: y\r\n\r\n";
    for (size_t n = 0; n < strlen(full); n++)
        assert_int_equal(proxyreq_parse((const uint8_t *) full, n, out, sizeof(out), &r),
                         PROXYREQ_NEED_MORE);
    assert_int_equal(proxyreq_parse((const uint8_t *) full, strlen(full), out, sizeof(out), &r),
                     PROXYREQ_OK);
}

static void
test_refusals(void **state)
{
    (void) state;
    static const struct {
        const char *req;
        int status;
    } bad[] = {
        {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400}, /* origin form */
        {"GET https://x/ HTTP/1.1\r\n\r\n", 400},   /* https absolute form */
        {"GET ftp://x/ HTTP/1.1\r\n\r\n", 400},
        {"GET http://user@x/ HTTP/1.1\r\n\r\n", 400}, /* userinfo */
        {"GET http://x/#frag HTTP/1.1\r\n\r\n", 400},
        {"GET http:/// HTTP/1.1\r\n\r\n", 400}, /* no host */
        {"GET http://x:0/ HTTP/1.1\r\n\r\n", 400},
        {"GET http://x:65536/ HTTP/1.1\r\n\r\n", 400},
        {"GET http://x:8a/ HTTP/1.1\r\n\r\n", 400},
        {"GET http://x%41/ HTTP/1.1\r\n\r\n", 400},
        {"GET http://[::1/ HTTP/1.1\r\n\r\n", 400},
        {"GET http://[]/ HTTP/1.1\r\n\r\n", 400},
        {"CONNECT pypi.org HTTP/1.1\r\n\r\n", 400}, /* no port */
        {"CONNECT pypi.org: HTTP/1.1\r\n\r\n", 400},
        {"CONNECT ::1:443 HTTP/1.1\r\n\r\n", 400}, /* v6 without brackets */
        {"CONNECT http://x:1 HTTP/1.1\r\n\r\n", 400},
        {"CONNECT a:1 HTTP/2.0\r\n\r\n", 400},
        {"CONNECT a:1\r\n\r\n", 400},
        {"CONNECT  a:1 HTTP/1.1\r\n\r\n", 400},
        {"C@NNECT a:1 HTTP/1.1\r\n\r\n", 400},
        {"VERYLONGMETHODNAMEXX http://a/ HTTP/1.1\r\n\r\n", 400},
        {"CONNECT a:1 HTTP/1.1\r\n folded\r\n\r\n", 400},
        {"CONNECT a:1 HTTP/1.1\r\nNoColon\r\n\r\n", 400},
        {"CONNECT a:1 HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
        {"CONNECT a:1 HTTP/1.1\r\n: x\r\n\r\n", 400},
        {"CONNECT a:1 HTTP/1.1\nX: y\n\n", 400}, /* bare LF */
        {"CONNECT a:1 HTTP/1.1\r\nX: a\x01z\r\n\r\n", 400},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ProxyRequest r;
        if (parse(bad[i].req, &r) != PROXYREQ_BAD || r.status != bad[i].status)
            fail_msg("'%s': not refused with %d (status %d)", bad[i].req, bad[i].status, r.status);
        assert_non_null(r.why);
    }
    ProxyRequest r;
    uint8_t nul[] = "CONNECT a:1 HTTP/1.1\r\nX: \0\r\n\r\n";
    assert_int_equal(proxyreq_parse(nul, sizeof(nul) - 1, out, sizeof(out), &r), PROXYREQ_BAD);
}

static void
test_caps(void **state)
{
    (void) state;
    static char big[PROXY_HEAD_MAX_BYTES * 2];
    ProxyRequest r;
    size_t n = (size_t) snprintf(big, sizeof(big), "CONNECT a:1 HTTP/1.1\r\n");

    for (int i = 0; i < PROXY_HEADERS_MAX; i++)
        n += (size_t) snprintf(big + n, sizeof(big) - n, "X-%d: v\r\n", i);
    snprintf(big + n, sizeof(big) - n, "\r\n");
    assert_int_equal(parse(big, &r), PROXYREQ_OK); /* exactly the most headers */
    snprintf(big + n, sizeof(big) - n, "X-last: v\r\n\r\n");
    assert_int_equal(parse(big, &r), PROXYREQ_BAD);
    assert_int_equal(r.status, 431);
    /* a head that never ends within PROXY_HEAD_MAX_BYTES */
    n = (size_t) snprintf(big, sizeof(big), "CONNECT a:1 HTTP/1.1\r\nX: ");
    memset(big + n, 'v', sizeof(big) - n - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(
        proxyreq_parse((uint8_t *) big, PROXY_HEAD_MAX_BYTES - 1, out, sizeof(out), &r),
        PROXYREQ_NEED_MORE);
    assert_int_equal(proxyreq_parse((uint8_t *) big, PROXY_HEAD_MAX_BYTES, out, sizeof(out), &r),
                     PROXYREQ_BAD);
    assert_int_equal(r.status, 431);
    /* the longest host is passed on; one byte more is refused */
    char host[TUNNEL_HOST_MAX_BYTES + 2];
    memset(host, 'h', sizeof(host) - 1);
    host[TUNNEL_HOST_MAX_BYTES] = '\0';
    snprintf(big, sizeof(big), "CONNECT %s:1 HTTP/1.1\r\n\r\n", host);
    assert_int_equal(parse(big, &r), PROXYREQ_OK);
    memset(host, 'h', sizeof(host) - 1);
    host[TUNNEL_HOST_MAX_BYTES + 1] = '\0';
    snprintf(big, sizeof(big), "CONNECT %s:1 HTTP/1.1\r\n\r\n", host);
    assert_int_equal(parse(big, &r), PROXYREQ_BAD);
    /* the rewrite never overflows its buffer, even for the largest head */
    n = (size_t) snprintf(big, sizeof(big), "GET http://a/ HTTP/1.1\r\nX: ");
    memset(big + n, 'v', PROXY_HEAD_MAX_BYTES - n - 4);
    memcpy(big + PROXY_HEAD_MAX_BYTES - 4, "\r\n\r\n", 5);
    assert_int_equal(parse(big, &r), PROXYREQ_OK);
    assert_true(r.out_len <= sizeof(out));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect),   cmocka_unit_test(test_plain_rewrite),
        cmocka_unit_test(test_need_more), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
