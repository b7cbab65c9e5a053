/* Unit tests of hostd/egress/classify.c: every row of the IANA special-purpose registries,
 * probed just inside (first and last address) and just outside, v4 and v6; the forms that
 * embed an IPv4 address (mapped, NAT64, local-use NAT64, 6to4, Teredo). The literal table is
 * written independently of classify.c's own; the sweep then walks classify.c's table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "classify.h"

typedef struct {
    const char *addr;
    bool allowed;
} AddrCase;

static const AddrCase v4_cases[] = {
    {"0.0.0.0", false},         {"0.255.255.255", false},   {"1.0.0.0", true},
    {"9.255.255.255", true},    {"10.0.0.0", false},        {"10.255.255.255", false},
    {"11.0.0.0", true},         {"100.63.255.255", true},   {"100.64.0.0", false},
    {"100.127.255.255", false}, {"100.128.0.0", true},      {"126.255.255.255", true},
    {"127.0.0.0", false},       {"127.0.0.1", false},       {"127.255.255.255", false},
    {"128.0.0.0", true},        {"169.253.255.255", true},  {"169.254.0.0", false},
    {"169.254.169.254", false}, {"169.254.255.255", false}, {"169.255.0.0", true},
    {"172.15.255.255", true},   {"172.16.0.0", false},      {"172.31.255.255", false},
    {"172.32.0.0", true},       {"191.255.255.255", true},  {"192.0.0.0", false},
    {"192.0.0.7", false},       {"192.0.0.8", false},       {"192.0.0.9", false},
    {"192.0.0.10", false},      {"192.0.0.170", false},     {"192.0.0.171", false},
    {"192.0.0.255", false},     {"192.0.1.0", true},        {"192.0.1.255", true},
    {"192.0.2.0", false},       {"192.0.2.255", false},     {"192.0.3.0", true},
    {"192.31.195.255", true},   {"192.31.196.0", false},    {"192.31.196.255", false},
    {"192.31.197.0", true},     {"192.52.192.255", true},   {"192.52.193.0", false},
    {"192.52.193.255", false},  {"192.52.194.0", true},     {"192.88.98.255", true},
    {"192.88.99.0", false},     {"192.88.99.255", false},   {"192.88.100.0", true},
    {"192.167.255.255", true},  {"192.168.0.0", false},     {"192.168.255.255", false},
    {"192.169.0.0", true},      {"192.175.47.255", true},   {"192.175.48.0", false},
    {"192.175.48.255", false},  {"192.175.49.0", true},     {"198.17.255.255", true},
    {"198.18.0.0", false},      {"198.19.255.255", false},  {"198.20.0.0", true},
    {"198.51.99.255", true},    {"198.51.100.0", false},    {"198.51.100.255", false},
    {"198.51.101.0", true},     {"203.0.112.255", true},    {"203.0.113.0", false},
    {"203.0.113.255", false},   {"203.0.114.0", true},      {"223.255.255.255", true},
    {"224.0.0.0", false},       {"239.255.255.255", false}, {"240.0.0.0", false},
    {"255.255.255.254", false}, {"255.255.255.255", false}, {"8.8.8.8", true},
    {"1.1.1.1", true},          {"93.184.215.14", true},
};

static const AddrCase v6_cases[] = {
    /* unspecified, loopback, and what lies around them (outside 2000::/3) */
    {"::", false},
    {"::1", false},
    {"::2", false},
    {"::1:0:0:0", false},
    /* IPv4-mapped: judged by the mapped address */
    {"::ffff:8.8.8.8", true},
    {"::ffff:127.0.0.1", false},
    {"::ffff:169.254.169.254", false},
    {"::ffff:10.213.0.2", false},
    {"::ffff:0.0.0.0", false},
    {"::fffe:ffff:ffff", false},
    {"::1:ffff:808:808", false},
    /* NAT64 well-known prefix */
    {"64:ff9b::8.8.8.8", true},
    {"64:ff9b::a9fe:a9fe", false},
    {"64:ff9b::a00:1", false},
    {"64:ff9b::1:808:808", false},
    {"64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", false},
    /* local-use NAT64: every RFC 6052 layout must decode to a public address */
    {"64:ff9b:1:808:8:808:808:808", true},
    {"64:ff9b:1:808:8:808:a9fe:a9fe", false},
    {"64:ff9b:1::808:808", false},
    {"64:ff9b:1:a9fe:a9:fe00::", false},
    /* discard-only and dummy prefixes */
    {"100::", false},
    {"100::ffff:ffff:ffff:ffff", false},
    {"100:0:0:1::1", false},
    {"100:0:0:2::", false},
    /* 2001::/23 IETF protocol assignments and what sits inside it */
    {"2001::", false}, /* Teredo with client 255.255.255.255 and server 0.0.0.0 */
    {"2001:0:4136:e378:8000:63bf:f7f7:f7f7", true},  /* Teredo: client 8.8.8.8 */
    {"2001:0:4136:e378:8000:63bf:3fff:fdd2", false}, /* RFC 4380's example: client 192.0.2.45 */
    {"2001:0:4136:e378:8000:63bf:5601:5601", false}, /* client 169.254.169.254 */
    {"2001:0:a00:1:8000:63bf:f7f7:f7f7", false},     /* server 10.0.0.1 */
    {"2001:1::1", false},
    {"2001:1::2", false},
    {"2001:1::3", false},
    {"2001:1::4", false},
    {"2001:2::", false},
    {"2001:2:0:ffff:ffff:ffff:ffff:ffff", false},
    {"2001:3::1", false},
    {"2001:4:112::1", false},
    {"2001:10::1", false},
    {"2001:1f:ffff::", false},
    {"2001:20::1", false},
    {"2001:30::1", false},
    {"2001:db8::1", false},
    {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"2001:200::", true},
    {"2000::1", true},
    {"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    /* 6to4: judged by bits 16..47 */
    {"2002:808:808::1", true},
    {"2002:a9fe:a9fe::1", false},
    {"2002:7f00:1::", false},
    {"2002::", false},
    {"2003::1", true},
    {"2001:ffff::", true},
    /* AS112 direct delegation, documentation, SRv6 */
    {"2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", true},
    {"2620:4f:8000::1", false},
    {"2620:4f:8001::", true},
    {"3fff::", false},
    {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"3fff:1000::", true},
    {"5f00::1", false},
    {"5f00:ffff::", false},
    /* ULA, link-local, site-local, multicast, and the rest outside 2000::/3 */
    {"fc00::1", false},
    {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"fd00:ec2::254", false},
    {"fe80::1", false},
    {"febf:ffff::", false},
    {"fec0::1", false},
    {"ff02::1", false},
    {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"4000::", false},
    {"e000::", false},
    {"2606:4700::1111", true},
    {"2a00:1450:4001:80b::200e", true},
};

static void
check_cases(const AddrCase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        EgressAddr a;
        EgressVerdict v;
        char why[256];
        if (egress_addr_parse_strict(cases[i].addr, &a) < 0)
            fail_msg("bad test address %s", cases[i].addr);
        egress_classify(&a, &v);
        egress_verdict_describe(&a, &v, why, sizeof(why));
        if (v.allowed != cases[i].allowed)
            fail_msg("%s: allowed=%d, want %d (%s)", cases[i].addr, v.allowed, cases[i].allowed,
                     why);
        if (!v.allowed && (!v.what || !v.ref))
            fail_msg("%s: refused without naming the row", cases[i].addr);
    }
}

static void
test_v4_table(void **state)
{
    (void) state;
    check_cases(v4_cases, sizeof(v4_cases) / sizeof(v4_cases[0]));
}

static void
test_v6_table(void **state)
{
    (void) state;
    check_cases(v6_cases, sizeof(v6_cases) / sizeof(v6_cases[0]));
}

/* a + delta (+1 / -1) over the whole address; false on wrap-around. */
static bool
addr_step(EgressAddr *a, int delta)
{
    size_t len = a->family == AF_INET ? 4 : 16;
    for (size_t i = len; i-- > 0;) {
        if (delta > 0 && a->bytes[i]++ != 0xff)
            return true;
        if (delta < 0 && a->bytes[i]-- != 0)
            return true;
    }
    return false;
}

static EgressAddr
row_last(const EgressRow *r)
{
    EgressAddr a = r->prefix;
    unsigned max = a.family == AF_INET ? 32 : 128;
    for (unsigned bit = r->bits; bit < max; bit++)
        a.bytes[bit / 8] |= (uint8_t) (0x80 >> (bit % 8));
    return a;
}

/* The most specific row holding a, scanning naively (no shared code with classify.c). */
static const EgressRow *
naive_row(const EgressRow *rows, size_t n, const EgressAddr *a)
{
    const EgressRow *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (egress_addr_prefix_equal(a, &rows[i].prefix, rows[i].bits) &&
            (!best || rows[i].bits > best->bits))
            best = &rows[i];
    return best;
}

static void
probe(const EgressRow *rows, size_t n, const EgressAddr *a, const char *what)
{
    const EgressRow *row = naive_row(rows, n, a);
    EgressVerdict v;
    char text[EGRESS_ADDR_TEXT_BYTES];
    egress_classify(a, &v);
    egress_addr_format(a, text, sizeof(text));
    if (row && row->action == ROW_REFUSE && v.allowed)
        fail_msg("%s %s (in %s) was allowed", what, text, row->name);
    if (row && row->action == ROW_REFUSE && strcmp(v.what, row->name) != 0)
        fail_msg("%s %s: refused as %s, want %s", what, text, v.what, row->name);
    if (!row && a->family == AF_INET && !v.allowed)
        fail_msg("%s %s is in no row but was refused as %s", what, text, v.what);
}

/* Every row: first and last address inside, one before and one after outside. */
static void
test_sweep_rows(void **state)
{
    (void) state;
    int families[] = {AF_INET, AF_INET6};
    for (size_t f = 0; f < 2; f++) {
        size_t n;
        const EgressRow *rows = egress_rows(families[f], &n);
        assert_true(n > 20);
        for (size_t i = 0; i < n; i++) {
            EgressAddr first = rows[i].prefix, last = row_last(&rows[i]);
            EgressAddr before = first, after = last;
            probe(rows, n, &first, "first");
            probe(rows, n, &last, "last");
            if (addr_step(&before, -1))
                probe(rows, n, &before, "before");
            if (addr_step(&after, +1))
                probe(rows, n, &after, "after");
        }
    }
}

static void
test_describe(void **state)
{
    (void) state;
    EgressAddr a;
    EgressVerdict v;
    char why[256];

    assert_int_equal(egress_addr_parse_strict("::ffff:169.254.169.254", &a), 0);
    egress_classify(&a, &v);
    egress_verdict_describe(&a, &v, why, sizeof(why));
    assert_non_null(strstr(why, "169.254.169.254"));
    assert_non_null(strstr(why, "IPv4-mapped"));
    assert_non_null(strstr(why, "Link Local"));
    assert_non_null(strstr(why, "RFC 3927"));
    assert_int_equal(egress_addr_parse_strict("8.8.8.8", &a), 0);
    egress_classify(&a, &v);
    egress_verdict_describe(&a, &v, why, sizeof(why));
    assert_string_equal(why, "8.8.8.8 is a public address");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v4_table),
        cmocka_unit_test(test_v6_table),
        cmocka_unit_test(test_sweep_rows),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
