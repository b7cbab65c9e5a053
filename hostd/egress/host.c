/* Hosts and addresses: see host.h. Every loop is bounded by the input's length, which is
 * bounded by TUNNEL_HOST_MAX_BYTES before it gets here; arithmetic is overflow-checked. */
#include "host.h"

#include "ascii.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define IPV4_PARTS_MAX 4
#define HOST_TEXT_MAX_BYTES 255

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* One inet_aton part: 0x-hex, 0-octal or decimal, at most UINT32_MAX. */
static int
ipv4_part(const char *s, size_t n, uint64_t *ret)
{
    unsigned base = 10;
    uint64_t v = 0;

    if (n == 0)
        return -1;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16, s += 2, n -= 2;
        if (n == 0)
            return -1; /* inet_aton reads "0x" as 0; nothing honest writes it */
    } else if (n >= 2 && s[0] == '0') {
        base = 8, s += 1, n -= 1;
    }
    for (size_t i = 0; i < n; i++) {
        int d = ascii_hex_value(s[i]);
        if (d < 0 || (unsigned) d >= base)
            return -1;
        v = v * base + (unsigned) d;
        if (v > UINT32_MAX)
            return -1;
    }
    *ret = v;
    return 0;
}

int
egress_ipv4_parse(const char *s, size_t n, uint32_t *ret)
{
    uint64_t part[IPV4_PARTS_MAX];
    size_t parts = 0, start = 0;

    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        if (parts == IPV4_PARTS_MAX || ipv4_part(s + start, i - start, &part[parts]) < 0)
            return -1;
        parts++;
        start = i + 1;
    }
    uint64_t v = 0;
    for (size_t i = 0; i + 1 < parts; i++) {
        if (part[i] > 255)
            return -1;
        v |= part[i] << (8 * (3 - i));
    }
    uint64_t last_max = parts == 1 ? UINT32_MAX : (1ull << (8 * (5 - parts))) - 1;
    if (part[parts - 1] > last_max)
        return -1;
    *ret = (uint32_t) (v | part[parts - 1]);
    return 0;
}

/* The last label (ignoring one trailing dot) is all digits or 0x + hex digits. */
static bool
ends_in_number(const char *s, size_t n)
{
    if (n > 0 && s[n - 1] == '.')
        n--;
    size_t start = n;
    while (start > 0 && s[start - 1] != '.')
        start--;
    const char *l = s + start;
    size_t len = n - start;
    if (len == 0)
        return false;
    if (len >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X')) {
        for (size_t i = 2; i < len; i++)
            if (ascii_hex_value(l[i]) < 0)
                return false;
        return true;
    }
    for (size_t i = 0; i < len; i++)
        if (!is_digit(l[i]))
            return false;
    return true;
}

static HostKind
host_bad(const char **ret_why, const char *why)
{
    *ret_why = why;
    return HOST_BAD;
}

static HostKind
host_v6(const char *host, size_t n, EgressAddr *ret_addr, const char **ret_why)
{
    char inner[HOST_TEXT_MAX_BYTES + 1];

    if (n < 3 || host[n - 1] != ']')
        return host_bad(ret_why, "an IPv6 address must be in brackets, alone");
    memcpy(inner, host + 1, n - 2);
    inner[n - 2] = '\0';
    if (strchr(inner, '%'))
        return host_bad(ret_why, "IPv6 zone ids are refused");
    if (strspn(inner, "0123456789abcdefABCDEF:.") != n - 2)
        return host_bad(ret_why, "not an IPv6 address");
    EgressAddr a = {.family = AF_INET6};
    if (inet_pton(AF_INET6, inner, a.bytes) != 1)
        return host_bad(ret_why, "not an IPv6 address");
    *ret_addr = a;
    return HOST_NUMERIC;
}

/* Labels of [A-Za-z0-9_-], 1..63 bytes, not starting or ending with '-' (RFC 1123),
 * lowercased into out; one trailing dot dropped. */
static HostKind
host_name(const char *host, size_t n, char *out, const char **ret_why)
{
    size_t label = 0;

    if (n > 0 && host[n - 1] == '.')
        n--;
    if (n == 0 || n > EGRESS_NAME_MAX_BYTES)
        return host_bad(ret_why, "a name must be 1..253 bytes");
    for (size_t i = 0; i < n; i++) {
        char c = host[i];
        if ((c == '-' && (label == 0 || i + 1 == n || host[i + 1] == '.')))
            return host_bad(ret_why, "a label may not start or end with '-'");
        if (c == '.') {
            if (label == 0)
                return host_bad(ret_why, "empty label in the name");
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_') {
            label++;
        } else if (c >= 'A' && c <= 'Z') {
            c = (char) (c - 'A' + 'a');
            label++;
        } else {
            return host_bad(ret_why, "a name may hold only [A-Za-z0-9._-]");
        }
        if (label > EGRESS_LABEL_MAX_BYTES)
            return host_bad(ret_why, "a label is over 63 bytes");
        out[i] = c;
    }
    if (label == 0)
        return host_bad(ret_why, "empty label in the name");
    out[n] = '\0';
    return HOST_NAME;
}

HostKind
egress_host_parse(const char *host, EgressAddr *ret_addr, char ret_name[EGRESS_NAME_MAX_BYTES + 1],
                  const char **ret_why)
{
    size_t n = strnlen(host, HOST_TEXT_MAX_BYTES + 1);
    uint32_t v4;

    if (n == 0 || n > HOST_TEXT_MAX_BYTES)
        return host_bad(ret_why, "empty or over-long host");
    if (host[0] == '[')
        return host_v6(host, n, ret_addr, ret_why);
    if (memchr(host, ':', n))
        return host_bad(ret_why, "an IPv6 address must be in brackets");
    if (!ends_in_number(host, n))
        return host_name(host, n, ret_name, ret_why);
    if (egress_ipv4_parse(host, n, &v4) < 0)
        return host_bad(ret_why, "looks numeric but is no IPv4 address");
    *ret_addr = egress_addr_v4(v4);
    return HOST_NUMERIC;
}

int
egress_addr_parse_strict(const char *s, EgressAddr *ret)
{
    EgressAddr a = {0};

    if (inet_pton(AF_INET, s, a.bytes) == 1)
        a.family = AF_INET;
    else if (inet_pton(AF_INET6, s, a.bytes) == 1)
        a.family = AF_INET6;
    else
        return -1;
    *ret = a;
    return 0;
}

EgressAddr
egress_addr_v4(uint32_t v)
{
    EgressAddr a = {.family = AF_INET};
    a.bytes[0] = (uint8_t) (v >> 24);
    a.bytes[1] = (uint8_t) (v >> 16);
    a.bytes[2] = (uint8_t) (v >> 8);
    a.bytes[3] = (uint8_t) v;
    return a;
}

uint32_t
egress_addr_v4_value(const EgressAddr *a)
{
    return (uint32_t) a->bytes[0] << 24 | (uint32_t) a->bytes[1] << 16 |
           (uint32_t) a->bytes[2] << 8 | a->bytes[3];
}

void
egress_addr_unmap(EgressAddr *a)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (a->family != AF_INET6 || memcmp(a->bytes, mapped, sizeof(mapped)) != 0)
        return;
    EgressAddr v4 = {.family = AF_INET};
    memcpy(v4.bytes, a->bytes + 12, 4);
    *a = v4;
}

bool
egress_addr_equal(const EgressAddr *a, const EgressAddr *b)
{
    return a->family == b->family && memcmp(a->bytes, b->bytes, sizeof(a->bytes)) == 0;
}

bool
egress_addr_prefix_equal(const EgressAddr *a, const EgressAddr *b, unsigned bits)
{
    unsigned max = a->family == AF_INET ? 32 : 128;
    if (a->family != b->family || bits > max)
        return false;
    size_t whole = bits / 8;
    if (memcmp(a->bytes, b->bytes, whole) != 0)
        return false;
    unsigned rest = bits % 8;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t) (0xff << (8 - rest));
    return (a->bytes[whole] & mask) == (b->bytes[whole] & mask);
}

const char *
egress_addr_format(const EgressAddr *a, char *buf, size_t cap)
{
    if (!inet_ntop(a->family, a->bytes, buf, (socklen_t) cap))
        snprintf(buf, cap, "?");
    return buf;
}
