/* The address classifier: see classify.h. The tables are copied from
 *   https://www.iana.org/assignments/iana-ipv4-special-registry/
 *   https://www.iana.org/assignments/iana-ipv6-special-registry/
 * (Address Block, Name, RFC, Globally Reachable), with three additions marked "+": IPv4
 * multicast (IANA IPv4 Multicast Address Space Registry), IPv6 multicast and deprecated
 * site-local (IANA IPv6 Address Space). Update both when IANA adds a row; the unit test
 * (tests/unit/test_egress_classify.c) probes just inside and just outside every row. */
#include "classify.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define V4(a, b, c, d)                                                                             \
    {                                                                                              \
        .family = AF_INET, .bytes = { a, b, c, d }                                                 \
    }
#define W(x) (uint8_t)((x) >> 8), (uint8_t) (x)
#define V6(a, b, c, d, e, f, g, h)                                                                 \
    {                                                                                              \
        .family = AF_INET6, .bytes = { W(a), W(b), W(c), W(d), W(e), W(f), W(g), W(h) }            \
    }

/* Address Block          Name                                   RFC         Global */
static const EgressRow rows_v4[] = {
    {V4(0, 0, 0, 0), 8, "\"This network\"", "RFC 791", "False", ROW_REFUSE},
    {V4(0, 0, 0, 0), 32, "\"This host on this network\"", "RFC 1122", "False", ROW_REFUSE},
    {V4(10, 0, 0, 0), 8, "Private-Use", "RFC 1918", "False", ROW_REFUSE},
    {V4(100, 64, 0, 0), 10, "Shared Address Space (CGNAT)", "RFC 6598", "False", ROW_REFUSE},
    {V4(127, 0, 0, 0), 8, "Loopback", "RFC 1122", "False", ROW_REFUSE},
    {V4(169, 254, 0, 0), 16, "Link Local", "RFC 3927", "False", ROW_REFUSE},
    {V4(172, 16, 0, 0), 12, "Private-Use", "RFC 1918", "False", ROW_REFUSE},
    {V4(192, 0, 0, 0), 24, "IETF Protocol Assignments", "RFC 6890", "False", ROW_REFUSE},
    {V4(192, 0, 0, 0), 29, "IPv4 Service Continuity Prefix", "RFC 7335", "False", ROW_REFUSE},
    {V4(192, 0, 0, 8), 32, "IPv4 dummy address", "RFC 7600", "False", ROW_REFUSE},
    {V4(192, 0, 0, 9), 32, "Port Control Protocol Anycast", "RFC 7723", "True", ROW_REFUSE},
    {V4(192, 0, 0, 10), 32, "Traversal Using Relays around NAT Anycast", "RFC 8155", "True",
     ROW_REFUSE},
    {V4(192, 0, 0, 170), 32, "NAT64/DNS64 Discovery", "RFC 8880", "False", ROW_REFUSE},
    {V4(192, 0, 0, 171), 32, "NAT64/DNS64 Discovery", "RFC 8880", "False", ROW_REFUSE},
    {V4(192, 0, 2, 0), 24, "Documentation (TEST-NET-1)", "RFC 5737", "False", ROW_REFUSE},
    {V4(192, 31, 196, 0), 24, "AS112-v4", "RFC 7535", "True", ROW_REFUSE},
    {V4(192, 52, 193, 0), 24, "AMT", "RFC 7450", "True", ROW_REFUSE},
    {V4(192, 88, 99, 0), 24, "Deprecated (6to4 Relay Anycast)", "RFC 7526", "n/a", ROW_REFUSE},
    {V4(192, 168, 0, 0), 16, "Private-Use", "RFC 1918", "False", ROW_REFUSE},
    {V4(192, 175, 48, 0), 24, "Direct Delegation AS112 Service", "RFC 7534", "True", ROW_REFUSE},
    {V4(198, 18, 0, 0), 15, "Benchmarking", "RFC 2544", "False", ROW_REFUSE},
    {V4(198, 51, 100, 0), 24, "Documentation (TEST-NET-2)", "RFC 5737", "False", ROW_REFUSE},
    {V4(203, 0, 113, 0), 24, "Documentation (TEST-NET-3)", "RFC 5737", "False", ROW_REFUSE},
    {V4(224, 0, 0, 0), 4, "Multicast (+)", "RFC 5771", "n/a", ROW_REFUSE},
    {V4(240, 0, 0, 0), 4, "Reserved", "RFC 1112", "False", ROW_REFUSE},
    {V4(255, 255, 255, 255), 32, "Limited Broadcast", "RFC 8190", "False", ROW_REFUSE},
};

static const EgressRow rows_v6[] = {
    {V6(0, 0, 0, 0, 0, 0, 0, 1), 128, "Loopback Address", "RFC 4291", "False", ROW_REFUSE},
    {V6(0, 0, 0, 0, 0, 0, 0, 0), 128, "Unspecified Address", "RFC 4291", "False", ROW_REFUSE},
    {V6(0, 0, 0, 0, 0, 0xffff, 0, 0), 96, "IPv4-mapped Address", "RFC 4291", "False", ROW_MAPPED},
    {V6(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, "IPv4-IPv6 Translat. (NAT64)", "RFC 6052", "True",
     ROW_NAT64},
    {V6(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, "IPv4-IPv6 Translat. (local-use NAT64)", "RFC 8215",
     "False", ROW_NAT64_LOCAL},
    {V6(0x100, 0, 0, 0, 0, 0, 0, 0), 64, "Discard-Only Address Block", "RFC 6666", "False",
     ROW_REFUSE},
    {V6(0x100, 0, 0, 1, 0, 0, 0, 0), 64, "Dummy IPv6 Prefix", "RFC 9780", "False", ROW_REFUSE},
    {V6(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, "IETF Protocol Assignments", "RFC 2928", "False",
     ROW_REFUSE},
    {V6(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, "TEREDO", "RFC 4380", "n/a", ROW_TEREDO},
    {V6(0x2001, 1, 0, 0, 0, 0, 0, 1), 128, "Port Control Protocol Anycast", "RFC 7723", "True",
     ROW_REFUSE},
    {V6(0x2001, 1, 0, 0, 0, 0, 0, 2), 128, "Traversal Using Relays around NAT Anycast", "RFC 8155",
     "True", ROW_REFUSE},
    {V6(0x2001, 1, 0, 0, 0, 0, 0, 3), 128, "DNS-SD Service Registration Protocol Anycast",
     "RFC 9665", "True", ROW_REFUSE},
    {V6(0x2001, 2, 0, 0, 0, 0, 0, 0), 48, "Benchmarking", "RFC 5180", "False", ROW_REFUSE},
    {V6(0x2001, 3, 0, 0, 0, 0, 0, 0), 32, "AMT", "RFC 7450", "True", ROW_REFUSE},
    {V6(0x2001, 4, 0x112, 0, 0, 0, 0, 0), 48, "AS112-v6", "RFC 7535", "True", ROW_REFUSE},
    {V6(0x2001, 0x10, 0, 0, 0, 0, 0, 0), 28, "Deprecated (previously ORCHID)", "RFC 4843", "n/a",
     ROW_REFUSE},
    {V6(0x2001, 0x20, 0, 0, 0, 0, 0, 0), 28, "ORCHIDv2", "RFC 7343", "True", ROW_REFUSE},
    {V6(0x2001, 0x30, 0, 0, 0, 0, 0, 0), 28, "Drone Remote ID Protocol Entity Tags", "RFC 9374",
     "True", ROW_REFUSE},
    {V6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, "Documentation", "RFC 3849", "False", ROW_REFUSE},
    {V6(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, "6to4", "RFC 3056", "n/a", ROW_6TO4},
    {V6(0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0), 48, "Direct Delegation AS112 Service", "RFC 7534",
     "True", ROW_REFUSE},
    {V6(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, "Documentation", "RFC 9637", "False", ROW_REFUSE},
    {V6(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16, "Segment Routing (SRv6) SIDs", "RFC 9602", "False",
     ROW_REFUSE},
    {V6(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, "Unique-Local", "RFC 4193", "False", ROW_REFUSE},
    {V6(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, "Link-Local Unicast", "RFC 4291", "False", ROW_REFUSE},
    {V6(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, "Site-Local (deprecated) (+)", "RFC 3879", "n/a",
     ROW_REFUSE},
    {V6(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "Multicast (+)", "RFC 4291", "n/a", ROW_REFUSE},
};

static const EgressRow outside_global_unicast = {
    V6(0x2000, 0, 0, 0, 0, 0, 0, 0), 3,     "outside 2000::/3 Global Unicast",
    "IANA IPv6 Address Space",       "n/a", ROW_REFUSE,
};

const EgressRow *
egress_rows(int family, size_t *ret_n)
{
    *ret_n = family == AF_INET ? sizeof(rows_v4) / sizeof(rows_v4[0])
                               : sizeof(rows_v6) / sizeof(rows_v6[0]);
    return family == AF_INET ? rows_v4 : rows_v6;
}

/* The most specific row holding a, or NULL. */
static const EgressRow *
classify_row(const EgressAddr *a)
{
    size_t n;
    const EgressRow *rows = egress_rows(a->family, &n), *best = NULL;

    for (size_t i = 0; i < n; i++)
        if (egress_addr_prefix_equal(a, &rows[i].prefix, rows[i].bits) &&
            (!best || rows[i].bits > best->bits))
            best = &rows[i];
    return best;
}

static EgressAddr
v4_at(const uint8_t *b0, const uint8_t *b1, const uint8_t *b2, const uint8_t *b3, bool invert)
{
    uint8_t x = invert ? 0xff : 0;
    EgressAddr v = {
        .family = AF_INET,
        .bytes = {*b0 ^ x, (uint8_t) (*b1 ^ x), (uint8_t) (*b2 ^ x), (uint8_t) (*b3 ^ x)}};
    return v;
}

#define EMBEDDED_MAX 4

/* The IPv4 addresses a form embeds; every one must be fine. */
static size_t
classify_embedded(const EgressAddr *a, RowAction action, EgressAddr out[EMBEDDED_MAX])
{
    const uint8_t *b = a->bytes;
    switch (action) {
    case ROW_MAPPED:
    case ROW_NAT64:
        out[0] = v4_at(b + 12, b + 13, b + 14, b + 15, false);
        return 1;
    case ROW_NAT64_LOCAL: /* the operator may cut a /48, /56, /64 or /96 from it (RFC 6052
                           * 2.2; the u octet is byte 8): every layout must decode to a
                           * public address, since we cannot know which one translates */
        out[0] = v4_at(b + 6, b + 7, b + 9, b + 10, false);
        out[1] = v4_at(b + 7, b + 9, b + 10, b + 11, false);
        out[2] = v4_at(b + 9, b + 10, b + 11, b + 12, false);
        out[3] = v4_at(b + 12, b + 13, b + 14, b + 15, false);
        return 4;
    case ROW_6TO4:
        out[0] = v4_at(b + 2, b + 3, b + 4, b + 5, false);
        return 1;
    case ROW_TEREDO: /* client (obfuscated), then server */
        out[0] = v4_at(b + 12, b + 13, b + 14, b + 15, true);
        out[1] = v4_at(b + 4, b + 5, b + 6, b + 7, false);
        return 2;
    case ROW_REFUSE:
        break;
    }
    return 0;
}

static void
verdict_refuse(EgressVerdict *v, const EgressRow *row, const EgressAddr *judged)
{
    v->allowed = false;
    v->what = row->name;
    v->ref = row->ref;
    v->judged = *judged;
}

void
egress_classify(const EgressAddr *a, EgressVerdict *ret)
{
    EgressVerdict v = {.allowed = true, .judged = *a};
    const EgressRow *row = classify_row(a);
    EgressAddr embedded[EMBEDDED_MAX];

    if (!row && a->family == AF_INET6 &&
        !egress_addr_prefix_equal(a, &outside_global_unicast.prefix, outside_global_unicast.bits))
        row = &outside_global_unicast;
    size_t n = row ? classify_embedded(a, row->action, embedded) : 0;
    if (row && row->action == ROW_REFUSE) {
        verdict_refuse(&v, row, a);
    } else if (row) {
        v.form = row->name;
        v.judged = embedded[0];
        for (size_t i = 0; i < n && v.allowed; i++) {
            const EgressRow *inner = classify_row(&embedded[i]);
            if (inner)
                verdict_refuse(&v, inner, &embedded[i]);
        }
    }
    *ret = v;
}

void
egress_verdict_describe(const EgressAddr *a, const EgressVerdict *v, char *buf, size_t cap)
{
    char at[EGRESS_ADDR_TEXT_BYTES], inner[EGRESS_ADDR_TEXT_BYTES];

    egress_addr_format(a, at, sizeof(at));
    egress_addr_format(&v->judged, inner, sizeof(inner));
    if (v->allowed)
        snprintf(buf, cap, "%s is a public address", at);
    else if (v->form)
        snprintf(buf, cap, "%s embeds %s (%s) which is %s (%s)", at, inner, v->form, v->what,
                 v->ref);
    else
        snprintf(buf, cap, "%s is %s (%s)", at, v->what, v->ref);
}
