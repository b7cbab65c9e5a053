/* Unit tests of hostd/egress/host.c: every inet_aton spelling of an IPv4 address, bracketed
 * IPv6 (embedded IPv4, zone ids), names, and the forms that must be refused outright. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "host.h"

typedef struct {
    const char *host;
    HostKind kind;
    const char *want; /* NUMERIC: the address in text; NAME: the normalised name */
} HostCase;

static const HostCase cases[] = {
    /* IPv4 in every inet_aton spelling */
    {"127.0.0.1", HOST_NUMERIC, "127.0.0.1"},
    {"127.1", HOST_NUMERIC, "127.0.0.1"},
    {"127.0.1", HOST_NUMERIC, "127.0.0.1"},
    {"0x7f.1", HOST_NUMERIC, "127.0.0.1"},
    {"0X7F.0.0.1", HOST_NUMERIC, "127.0.0.1"},
    {"0x7f000001", HOST_NUMERIC, "127.0.0.1"},
    {"2130706433", HOST_NUMERIC, "127.0.0.1"},
    {"017700000001", HOST_NUMERIC, "127.0.0.1"},
    {"0177.0.0.1", HOST_NUMERIC, "127.0.0.1"},
    {"0177.0.0.01", HOST_NUMERIC, "127.0.0.1"},
    {"00000177.0.0.1", HOST_NUMERIC, "127.0.0.1"},
    {"2852039166", HOST_NUMERIC, "169.254.169.254"},
    {"0251.0376.0251.0376", HOST_NUMERIC, "169.254.169.254"},
    {"0xa9.0xfe.0xa9.0xfe", HOST_NUMERIC, "169.254.169.254"},
    {"0xa9fea9fe", HOST_NUMERIC, "169.254.169.254"},
    {"169.16689662", HOST_NUMERIC, "169.254.169.254"},
    {"169.254.43518", HOST_NUMERIC, "169.254.169.254"},
    {"0", HOST_NUMERIC, "0.0.0.0"},
    {"0x0", HOST_NUMERIC, "0.0.0.0"},
    {"00", HOST_NUMERIC, "0.0.0.0"},
    {"4294967295", HOST_NUMERIC, "255.255.255.255"},
    {"0xffffffff", HOST_NUMERIC, "255.255.255.255"},
    {"037777777777", HOST_NUMERIC, "255.255.255.255"},
    {"10.213.0.2", HOST_NUMERIC, "10.213.0.2"},
    {"181731330", HOST_NUMERIC, "10.213.0.2"},
    {"1.2.65535", HOST_NUMERIC, "1.2.255.255"},
    {"1.16777215", HOST_NUMERIC, "1.255.255.255"},
    /* IPv6 in brackets */
    {"[::1]", HOST_NUMERIC, "::1"},
    {"[::]", HOST_NUMERIC, "::"},
    {"[::ffff:169.254.169.254]", HOST_NUMERIC, "::ffff:169.254.169.254"},
    {"[::FFFF:A9FE:A9FE]", HOST_NUMERIC, "::ffff:169.254.169.254"},
    {"[64:ff9b::a9fe:a9fe]", HOST_NUMERIC, "64:ff9b::a9fe:a9fe"},
    {"[2606:4700::1111]", HOST_NUMERIC, "2606:4700::1111"},
    {"[0:0:0:0:0:0:0:1]", HOST_NUMERIC, "::1"},
    /* names */
    {"example.com", HOST_NAME, "example.com"},
    {"Example.COM", HOST_NAME, "example.com"},
    {"pypi.org.", HOST_NAME, "pypi.org"},
    {"localhost", HOST_NAME, "localhost"},
    {"a_b-c.d", HOST_NAME, "a_b-c.d"},
    {"1.2.3.4a", HOST_NAME, "1.2.3.4a"},
    {"0x7f.example", HOST_NAME, "0x7f.example"},
    {"1e3", HOST_NAME, "1e3"},
    {"0xg", HOST_NAME, "0xg"},
    /* refused: numeric-looking but not an address */
    {"127.0.0.1.", HOST_BAD, NULL}, /* trailing dot */
    {"127.0.0.1..", HOST_BAD, NULL},
    {"1.2.3.256", HOST_BAD, NULL}, /* overflow of the last part */
    {"256.1.1.1", HOST_BAD, NULL}, /* overflow of a leading part */
    {"1.2.3.4.5", HOST_BAD, NULL}, /* five parts */
    {"1..2", HOST_BAD, NULL},      /* empty part */
    {".1.2.3", HOST_BAD, NULL},
    {"4294967296", HOST_BAD, NULL}, /* 2^32 */
    {"99999999999999999999999", HOST_BAD, NULL},
    {"0x100000000", HOST_BAD, NULL},
    {"040000000000", HOST_BAD, NULL}, /* 2^32 in octal */
    {"1.16777216", HOST_BAD, NULL},
    {"1.2.65536", HOST_BAD, NULL},
    {"08", HOST_BAD, NULL}, /* not octal */
    {"0x", HOST_BAD, NULL},
    {"1.0x", HOST_BAD, NULL},
    {"1.2.3.-4", HOST_BAD, NULL},
    {"+1.2.3.4", HOST_BAD, NULL},
    /* refused: whitespace, junk, IPv6 without brackets or with a zone */
    {" 127.0.0.1", HOST_BAD, NULL},
    {"127.0.0.1 ", HOST_BAD, NULL},
    {"127.0.0.1\t", HOST_BAD, NULL},
    {"127.0.0.1 x", HOST_BAD, NULL},
    {"", HOST_BAD, NULL},
    {".", HOST_BAD, NULL},
    {"a..b", HOST_BAD, NULL},
    {"-a.com", HOST_BAD, NULL},
    {"a-.com", HOST_BAD, NULL},
    {"exa mple.com", HOST_BAD, NULL},
    {"exa%41mple.com", HOST_BAD, NULL},
    {"::1", HOST_BAD, NULL},
    {"[::1", HOST_BAD, NULL},
    {"[::1]x", HOST_BAD, NULL},
    {"[fe80::1%eth0]", HOST_BAD, NULL},
    {"[fe80::1%25eth0]", HOST_BAD, NULL},
    {"[127.0.0.1]", HOST_BAD, NULL},
    {"[]", HOST_BAD, NULL},
    {"[::ffff:0251.0376.0251.0376]", HOST_BAD, NULL},
    {"[1:2:3:4:5:6:7:8:9]", HOST_BAD, NULL},
};

static void
test_host_table(void **state)
{
    (void) state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const HostCase *c = &cases[i];
        EgressAddr a;
        char name[EGRESS_NAME_MAX_BYTES + 1], text[EGRESS_ADDR_TEXT_BYTES];
        const char *why = NULL;
        HostKind k = egress_host_parse(c->host, &a, name, &why);
        if (k != c->kind)
            fail_msg("'%s': kind %d, want %d (%s)", c->host, k, c->kind, why ? why : "");
        if (k == HOST_NUMERIC && strcmp(egress_addr_format(&a, text, sizeof(text)), c->want) != 0)
            fail_msg("'%s': %s, want %s", c->host, text, c->want);
        if (k == HOST_NAME && strcmp(name, c->want) != 0)
            fail_msg("'%s': name %s, want %s", c->host, name, c->want);
        if (k == HOST_BAD && (!why || !why[0]))
            fail_msg("'%s': refused without a reason", c->host);
    }
}

static void
test_name_limits(void **state)
{
    (void) state;
    char host[300], name[EGRESS_NAME_MAX_BYTES + 1];
    EgressAddr a;
    const char *why;

    memset(host, 'a', 63);
    strcpy(host + 63, ".com");
    assert_int_equal(egress_host_parse(host, &a, name, &why), HOST_NAME);
    memset(host, 'a', 64); /* a 64-byte label */
    strcpy(host + 64, ".com");
    assert_int_equal(egress_host_parse(host, &a, name, &why), HOST_BAD);
    /* 253 bytes in all is the most; 254 is refused (a trailing dot does not count) */
    for (size_t i = 0; i < 253; i++)
        host[i] = (i % 2) ? '.' : 'a';
    host[253] = '\0';
    assert_int_equal(egress_host_parse(host, &a, name, &why), HOST_NAME);
    strcpy(host + 253, ".");
    assert_int_equal(egress_host_parse(host, &a, name, &why), HOST_NAME);
    strcpy(host + 253, "ab");
    assert_int_equal(egress_host_parse(host, &a, name, &why), HOST_BAD);
    memset(host, '1', 299);
    host[299] = '\0';
    assert_int_equal(egress_host_parse(host, &a, name, &why), HOST_BAD);
}

static void
test_unmap_and_prefix(void **state)
{
    (void) state;
    EgressAddr a, b;
    char text[EGRESS_ADDR_TEXT_BYTES];

    assert_int_equal(egress_addr_parse_strict("::ffff:10.0.0.1", &a), 0);
    egress_addr_unmap(&a);
    assert_int_equal(a.family, AF_INET);
    assert_string_equal(egress_addr_format(&a, text, sizeof(text)), "10.0.0.1");
    assert_int_equal(egress_addr_parse_strict("64:ff9b::10.0.0.1", &a), 0);
    egress_addr_unmap(&a); /* NAT64 is not a mapping: unchanged */
    assert_int_equal(a.family, AF_INET6);
    assert_int_equal(egress_addr_parse_strict("0177.0.0.1", &a), -1); /* strict: dotted quad */
    assert_int_equal(egress_addr_parse_strict("10.213.0.0", &a), 0);
    assert_int_equal(egress_addr_parse_strict("10.213.0.3", &b), 0);
    assert_true(egress_addr_prefix_equal(&a, &b, 30));
    assert_false(egress_addr_prefix_equal(&a, &b, 31));
    assert_true(egress_addr_prefix_equal(&a, &b, 0));
    assert_false(egress_addr_prefix_equal(&a, &b, 33));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_table),
        cmocka_unit_test(test_name_limits),
        cmocka_unit_test(test_unmap_and_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
