/* Hosts as a guest writes them (TunnelOpen.host), and the addresses they stand for.
 * Pure: no I/O, no allocation; fuzzed (tests/fuzz/fuzz_egress_host.c).
 *
 * A host is one of:
 *  - an IPv6 address in brackets, "[2001:db8::1]", "[::ffff:169.254.169.254]" (embedded
 *    dotted IPv4 allowed); a zone id ("%eth0", "%25eth0") is refused;
 *  - an IPv4 address in any spelling inet_aton(3) takes: 1 to 4 parts, each decimal, octal
 *    (leading 0) or hex (0x), the last part filling the remaining bytes ("127.1",
 *    "0x7f.1", "2852039166", "017700000001", "0251.0376.0251.0376");
 *  - a name: labels of [A-Za-z0-9_-], 1..63 bytes each, not starting or ending with '-',
 *    1..253 in all, one trailing dot allowed (dropped); returned lowercased.
 * A host whose last label looks numeric (all digits, or 0x + hex digits: the WHATWG URL
 * rule) is an IPv4 address or nothing: "1.2.3.256", "0x", "1..2", "127.0.0.1." (a trailing
 * dot), a part over its range, more than 4 parts, signs or whitespace are refused, never
 * handed to a resolver that might read them differently. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_NAME_MAX_BYTES 253
#define EGRESS_LABEL_MAX_BYTES 63
#define EGRESS_ADDR_TEXT_BYTES 48 /* INET6_ADDRSTRLEN, rounded up */

typedef struct EgressAddr {
    int family;        /* AF_INET or AF_INET6 */
    uint8_t bytes[16]; /* network order; AF_INET uses bytes[0..3] */
} EgressAddr;

typedef enum { HOST_NAME, HOST_NUMERIC, HOST_BAD } HostKind;

/* HOST_NUMERIC fills *ret_addr; HOST_NAME writes the normalised name to
 * ret_name[0..EGRESS_NAME_MAX_BYTES]; HOST_BAD sets *ret_why (static text). */
HostKind egress_host_parse(const char *host, EgressAddr *ret_addr,
                           char ret_name[EGRESS_NAME_MAX_BYTES + 1], const char **ret_why);
/* The inet_aton spellings of an IPv4 address, strictly: s[0..n) must be all of it.
 * -1 for anything else. */
int egress_ipv4_parse(const char *s, size_t n, uint32_t *ret);
/* Strict text forms for configuration: dotted quad (inet_pton) or IPv6 without brackets. */
int egress_addr_parse_strict(const char *s, EgressAddr *ret);

EgressAddr egress_addr_v4(uint32_t host_order);
uint32_t egress_addr_v4_value(const EgressAddr *a);
/* An IPv4-mapped IPv6 address (::ffff:a.b.c.d) becomes a.b.c.d; others are unchanged. */
void egress_addr_unmap(EgressAddr *a);
bool egress_addr_equal(const EgressAddr *a, const EgressAddr *b);
/* The first `bits` bits of a and b are equal (same family). */
bool egress_addr_prefix_equal(const EgressAddr *a, const EgressAddr *b, unsigned bits);
/* Text form (inet_ntop) into buf[0..cap); returns buf. */
const char *egress_addr_format(const EgressAddr *a, char *buf, size_t cap);
