/* Unit tests of hostd/egress/sni.c (the ClientHello's server name) and inspect.c (the first
 * flight of a stream to a name: TLS names the host, HTTP's Host names it, nothing else
 * passes). Hellos come from tests/lib/tlshello.c; hostile ones are edited by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "inspect.h"
#include "sni.h"
#include "tlshello.h"

static uint8_t hello[TLSHELLO_MAX_BYTES];

static size_t
build(TlsHelloSpec s)
{
    return tlshello_build(&s, hello, sizeof(hello));
}

static const char *
status_name(SniStatus s)
{
    static const char *const names[] = {"NEED_MORE", "FOUND", "ABSENT", "BAD", "TOO_LARGE"};
    return names[s];
}

/* Every strict prefix of a good hello asks for more; the whole gives want. */
static void
check_prefixes(size_t n, SniStatus want, const char *name)
{
    SniResult r;
    for (size_t k = 0; k < n; k++)
        if (egress_sni_parse(hello, k, &r) != SNI_NEED_MORE)
            fail_msg("prefix %zu of %zu: %s (%s)", k, n,
                     status_name(egress_sni_parse(hello, k, &r)), r.why ? r.why : "");
    assert_int_equal(egress_sni_parse(hello, n, &r), want);
    if (name)
        assert_string_equal(r.name, name);
}

static void
test_good_and_fragmented(void **state)
{
    (void) state;
    SniResult r;
    check_prefixes(build((TlsHelloSpec){.names = {"pypi.org"}}), SNI_FOUND, "pypi.org");
    check_prefixes(build((TlsHelloSpec){.names = {"PyPI.Org."}}), SNI_FOUND, "pypi.org");
    /* record layer fragmentation: 1-byte, 7-byte and 100-byte records */
    check_prefixes(build((TlsHelloSpec){.names = {"pypi.org"}, .record_bytes = 1}), SNI_FOUND,
                   "pypi.org");
    check_prefixes(build((TlsHelloSpec){.names = {"a.example"}, .record_bytes = 7}), SNI_FOUND,
                   "a.example");
    size_t n = build((TlsHelloSpec){.names = {"a.example"}, .record_bytes = 100, .padding = 900});
    assert_int_equal(egress_sni_parse(hello, n, &r), SNI_FOUND);
    assert_false(r.ech);
    n = build((TlsHelloSpec){.names = {"a.example"}, .ech = true});
    assert_int_equal(egress_sni_parse(hello, n, &r), SNI_FOUND);
    assert_true(r.ech);
    check_prefixes(build((TlsHelloSpec){0}), SNI_ABSENT, NULL); /* no SNI */
}

/* Bytes after the ClientHello (a client's early data) do not matter. */
static void
test_trailing_bytes(void **state)
{
    (void) state;
    SniResult r;
    size_t n = build((TlsHelloSpec){.names = {"pypi.org"}});
    memcpy(hello + n, "\x17\x03\x03\x00\x01x", 6);
    assert_int_equal(egress_sni_parse(hello, n + 6, &r), SNI_FOUND);
}

/* Offsets in a single-record hello built with names = {"pypi.org"} and no padding. */
#define REC 5
#define HS (REC + 4)                            /* the ClientHello body */
#define EXTS (HS + 2 + 32 + 1 + 32 + 2 + 6 + 2) /* the extensions block's length */
#define SNI (EXTS + 2)                          /* the server_name extension's type */

static void
test_bad(void **state)
{
    (void) state;
    static const struct {
        const char *what;
        size_t at; /* offset to patch; SIZE_MAX: the name's first byte */
        uint8_t value;
        size_t cut; /* 0: keep the length */
    } cases[] = {
        {"record type alert", 0, 21, 0},
        {"record version 2", 1, 2, 0},
        {"record length 0", 4, 0, 0},
        {"record length over 2^14", 3, 0x40, 0},
        {"handshake type ServerHello", REC, 2, 0},
        {"hello length 0xff....", REC + 1, 0xff, 0},
        {"session id over its container", HS + 34, 0xff, 0},
        {"cipher suites odd length over", HS + 35 + 32, 0xff, 0},
        {"extensions length short", EXTS + 1, 1, 0},
        {"extension length over the block", SNI + 2, 0x7f, 0},
        {"name list length 0", SNI + 5, 0, 0},
        {"name list longer than the extension", SNI + 5, 0xff, 0},
        {"name type 1", SNI + 6, 1, 0},
        {"name length 0", SNI + 8, 0, 0},
        {"name length over the list", SNI + 8, 0xf0, 0},
        {"NUL in the name", SNI + 9, 0, 0},
        {"space in the name", SNI + 9, ' ', 0},
        {"non-ASCII in the name", SNI + 9, 0xc3, 0},
    };
    SniResult r;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = build((TlsHelloSpec){.names = {"pypi.org"}});
        hello[cases[i].at] = cases[i].value;
        SniStatus s = egress_sni_parse(hello, n, &r);
        if ((s != SNI_BAD && s != SNI_TOO_LARGE) || !r.why || r.name[0])
            fail_msg("%s: %s", cases[i].what, status_name(s));
    }
    static const TlsHelloSpec specs[] = {
        {.names = {"a.example", "b.example"}},
        {.names = {"a.example"}, .two_sni_exts = true},
        {.names = {"10.0.0.1"}},
        {.names = {"a..example"}},
        {.names = {"-a.example"}},
    };
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        size_t n = build(specs[i]);
        if (egress_sni_parse(hello, n, &r) != SNI_BAD)
            fail_msg("spec %zu: %s", i, status_name(egress_sni_parse(hello, n, &r)));
    }
    static const struct {
        const char *p;
        size_t n;
    } garbage[] = {{"GET / HTTP/1.1\r\n", 16},
                   {"SSH-2.0-x\r\n", 11},
                   {"\x16\x02\x00\x00\x01", 5},
                   {"\x16\x03\x01\x00\x01\x02", 6}};
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++)
        assert_int_equal(egress_sni_parse((const uint8_t *) garbage[i].p, garbage[i].n, &r),
                         SNI_BAD);
    /* a hello that claims 16 KiB or more is refused at once, not waited for */
    memcpy(hello, "\x16\x03\x01\x40\x00\x01\x00\x40\x00", 9);
    assert_int_equal(egress_sni_parse(hello, 9, &r), SNI_TOO_LARGE);
    memcpy(hello, "\x16\x03\x01\x40\x00\x01\x00\x3f\xfb", 9); /* just under: wait */
    assert_int_equal(egress_sni_parse(hello, 9, &r), SNI_NEED_MORE);
}

static InspectStatus
inspect(const char *text, bool eof, InspectVerdict *v)
{
    return egress_inspect_first((const uint8_t *) text, strlen(text), eof, "pypi.org", 80, v);
}

static void
test_inspect_tls(void **state)
{
    (void) state;
    InspectVerdict v;
    static const struct {
        TlsHelloSpec spec;
        InspectStatus want;
        const char *reason;
    } cases[] = {
        {{.names = {"pypi.org"}}, INSPECT_PASS, NULL},
        {{.names = {"PYPI.org."}, .record_bytes = 3}, INSPECT_PASS, NULL},
        {{.names = {"files.pythonhosted.org"}}, INSPECT_REFUSE, "sni_mismatch"},
        {{.names = {"evil.pypi.org"}}, INSPECT_REFUSE, "sni_mismatch"},
        {{.padding = 0}, INSPECT_REFUSE, "sni_mismatch"},
        {{.names = {"pypi.org"}, .ech = true}, INSPECT_REFUSE, "sni_mismatch"},
        {{.names = {"pypi.org", "evil.example"}}, INSPECT_REFUSE, "unknown_protocol"},
        {{.names = {"pypi.org"}, .padding = 16300}, INSPECT_REFUSE, "inspect_limit"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = build(cases[i].spec);
        size_t have = n < EGRESS_FIRST_FLIGHT_MAX_BYTES ? n : EGRESS_FIRST_FLIGHT_MAX_BYTES;
        InspectStatus s = egress_inspect_first(hello, have, false, "pypi.org", 443, &v);
        if (s != cases[i].want || (cases[i].reason && strcmp(v.reason, cases[i].reason) != 0))
            fail_msg("case %zu: %d %s %s", i, s, v.reason ? v.reason : "", v.detail);
    }
    size_t n = build((TlsHelloSpec){.names = {"pypi.org"}});
    assert_int_equal(egress_inspect_first(hello, n - 1, false, "pypi.org", 443, &v),
                     INSPECT_NEED_MORE);
    assert_int_equal(egress_inspect_first(hello, n - 1, true, "pypi.org", 443, &v),
                     INSPECT_REFUSE); /* truncated, then the end */
    assert_string_equal(v.reason, "unknown_protocol");
}

static void
test_inspect_http(void **state)
{
    (void) state;
    static const struct {
        const char *text;
        InspectStatus want;
        const char *reason;
    } cases[] = {
        {"GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\nConnection: close\r\n\r\n", INSPECT_PASS,
         NULL},
        {"GET / HTTP/1.0\r\nhost: PyPI.org.:80\r\nconnection: Close\r\n\r\nbody", INSPECT_PASS,
         NULL},
        {"OPTIONS * HTTP/1.1\r\nHost: pypi.org\r\nConnection: close\r\n\r\n", INSPECT_PASS, NULL},
        {"GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", INSPECT_REFUSE,
         "host_mismatch"},
        {"GET / HTTP/1.1\r\nHost: pypi.org:8080\r\nConnection: close\r\n\r\n", INSPECT_REFUSE,
         "host_mismatch"},
        {"GET / HTTP/1.1\r\nHost: pypi.org:x\r\nConnection: close\r\n\r\n", INSPECT_REFUSE,
         "host_mismatch"},
        {"GET / HTTP/1.1\r\nHost: 10.0.0.1\r\nConnection: close\r\n\r\n", INSPECT_REFUSE,
         "host_mismatch"},
        {"GET / HTTP/1.1\r\nHost: pypi.org\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
         INSPECT_REFUSE, "host_mismatch"},
        {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", INSPECT_REFUSE, "host_mismatch"},
        {"GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n", INSPECT_REFUSE, "host_mismatch"},
        {"GET / HTTP/1.1\r\nHost: pypi.org\r\nConnection: keep-alive\r\n\r\n", INSPECT_REFUSE,
         "host_mismatch"},
        {"GET http://evil.example/ HTTP/1.1\r\nHost: pypi.org\r\nConnection: close\r\n\r\n",
         INSPECT_REFUSE, "host_mismatch"},
        {"GET / HTTP/1.1\r\nHost: pypi.org\r\nX: a\nHost: evil.example\r\nConnection: "
         "close\r\n\r\n",
         INSPECT_REFUSE, "unknown_protocol"},
        {"GET / HTTP/1.1\r\nHost: pypi.org\r\n Host: evil\r\nConnection: close\r\n\r\n",
         INSPECT_REFUSE, "unknown_protocol"},
        {"GET / HTTP/1.1\r\nHost : evil\r\nConnection: close\r\n\r\n", INSPECT_REFUSE,
         "unknown_protocol"},
        {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", INSPECT_REFUSE, "unknown_protocol"},
        {"SSH-2.0-OpenSSH_9.2\r\n", INSPECT_REFUSE, "unknown_protocol"},
        {"GET / HTTP/1.1\r\nHost: pypi.org\r\n", INSPECT_NEED_MORE, NULL},
        {"GE", INSPECT_NEED_MORE, NULL},
        {"", INSPECT_NEED_MORE, NULL},
    };
    InspectVerdict v;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        InspectStatus s = egress_inspect_first((const uint8_t *) cases[i].text,
                                               strlen(cases[i].text), false, "pypi.org", 80, &v);
        if (s != cases[i].want || (cases[i].reason && strcmp(v.reason, cases[i].reason) != 0))
            fail_msg("case %zu: %d %s %s", i, s, v.reason ? v.reason : "", v.detail);
    }
    assert_int_equal(inspect("GET / HTTP/1.1\r\nHost: pypi.org\r\n", true, &v), INSPECT_REFUSE);
    assert_int_equal(inspect("", true, &v), INSPECT_REFUSE);
    assert_int_equal(egress_inspect_first((const uint8_t *) "\0\1", 2, false, "pypi.org", 80, &v),
                     INSPECT_REFUSE);
    static char big[EGRESS_FIRST_FLIGHT_MAX_BYTES + 1];
    int n = snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX: ");
    memset(big + n, 'a', sizeof(big) - 1 - (size_t) n);
    assert_int_equal(inspect(big, false, &v), INSPECT_REFUSE);
    assert_string_equal(v.reason, "inspect_limit");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_and_fragmented),
        cmocka_unit_test(test_trailing_bytes),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_inspect_tls),
        cmocka_unit_test(test_inspect_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
