/* Who may go where: the operator's allowed set ([egress] in the config), a session's
 * allow-list (a subset of it, asked for in POST /v1/sessions), and the decision for one
 * destination. Pure: no I/O, no allocation; unit tested.
 *
 * A policy is host patterns and CIDRs, each with the ports it allows:
 *  - a pattern is an exact name ("pypi.org") or "*." + a name ("*.pythonhosted.org": any name
 *    below it, not the name itself), or "*" (any name); case-insensitive, no IDNA;
 *  - a CIDR ("10.213.0.0/30", "fd12::/64", or one address) does two things: numeric hosts are
 *    allowed only inside one, and addresses inside one are exempt from the special-purpose
 *    refusal (classify.h), so an operator's mirror on a private address is reachable. A CIDR
 *    may not cover a loopback, unspecified, multicast or broadcast address, nor the
 *    cloud metadata addresses 169.254.169.254 and fd00:ec2::254;
 *  - ports: an entry without one allows 80 and 443 only; ":N" (1..65535) allows port N only,
 *    ":*" any port: "pypi.org:443", "*.example.invalid:8443", "10.213.0.0/30:8080",
 *    "10.213.0.2:*", "fd12::/64:3141" (an IPv6 CIDR names a port after its "/bits"; a single
 *    IPv6 address with a port is written "addr/128:N").
 * A name host on a port is allowed when a pattern with that port matches it and every address
 * it resolves to is public or inside a CIDR with that port (one bad address refuses the name);
 * a numeric host (any spelling) when its address is inside a CIDR with that port. IPv4-mapped
 * IPv6 addresses are judged as the IPv4 they map. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "host.h"

#define EGRESS_PATTERNS_MAX 64
#define EGRESS_PATTERN_MAX_BYTES (EGRESS_NAME_MAX_BYTES + 2) /* "*." + name */
#define EGRESS_CIDRS_MAX 64
#define EGRESS_ENTRY_MAX_BYTES 300 /* one list entry as written, before checks */
#define EGRESS_PORTS_WEB 0         /* no port named: 80 and 443 */
#define EGRESS_PORTS_ANY 0x10000u  /* ":*" */
#define EGRESS_PORT_TEXT_BYTES 16  /* ":65535", ":*" or "" (80 and 443), NUL included */

typedef struct EgressCidr {
    EgressAddr addr;
    unsigned bits;
    uint32_t ports; /* EGRESS_PORTS_WEB, one port 1..65535, or EGRESS_PORTS_ANY */
} EgressCidr;

typedef struct EgressPattern {
    char name[EGRESS_PATTERN_MAX_BYTES + 1];
    uint32_t ports; /* as in EgressCidr */
} EgressPattern;

typedef struct EgressPolicy {
    EgressPattern patterns[EGRESS_PATTERNS_MAX];
    size_t n_patterns;
    EgressCidr cidrs[EGRESS_CIDRS_MAX];
    size_t n_cidrs;
} EgressPolicy;

/* Per-session limits ([egress] in the config). */
typedef struct EgressLimits {
    unsigned max_streams;               /* open at once, <= TUNNEL_STREAMS_MAX */
    unsigned max_streams_total;         /* opened in the session's life */
    uint64_t max_bytes_in;              /* upstream -> guest, whole session */
    uint64_t max_bytes_out;             /* guest -> upstream, whole session */
    uint64_t connect_timeout_usec;      /* from TunnelOpen to connected (resolution included) */
    uint64_t first_flight_timeout_usec; /* connected to a name: until its first bytes are
                                           judged (inspect.h); not in the config file */
    unsigned max_denied_events;         /* egress.denied events recorded; later ones only counted */
} EgressLimits;

typedef struct EgressConfig {
    EgressPolicy allowed; /* the operator's allowed set; empty = egress off */
    EgressLimits limits;
} EgressConfig;

void egress_config_defaults(EgressConfig *c);
bool egress_policy_is_empty(const EgressPolicy *p);

/* Adds one entry: a CIDR when it holds '/', is an address, or is a dotted quad with a port;
 * else a host pattern (policy.h's top says how ports are written). E_INVALID with a reason
 * for a malformed entry or a full policy. */
int egress_policy_add(EgressPolicy *p, const char *entry, Error **errp);
/* Adds a comma-separated list (spaces around entries are ignored). as_cidrs: every entry
 * must be a CIDR; else every entry must be a host pattern. */
int egress_policy_add_list(EgressPolicy *p, const char *list, bool as_cidrs, Error **errp);
/* Every pattern and CIDR of sub lies within what op allows; else E_INVALID naming the
 * first entry that does not. */
int egress_policy_check_subset(const EgressPolicy *op, const EgressPolicy *sub, Error **errp);

bool egress_pattern_matches(const char *pattern, const char *name);
/* ports (EGRESS_PORTS_WEB, one port or EGRESS_PORTS_ANY) allows port. */
bool egress_ports_allow(uint32_t ports, uint16_t port);
/* The ports as written after an entry's host: "" for 80 and 443, ":N", ":*". */
const char *egress_ports_format(uint32_t ports, char buf[EGRESS_PORT_TEXT_BYTES]);
bool egress_policy_matches_name(const EgressPolicy *p, const char *name, uint16_t port);
bool egress_policy_holds_addr(const EgressPolicy *p, const EgressAddr *a, uint16_t port);

/* The verdict for one destination address and port of an allowed host: inside a CIDR with
 * that port, or public by classify.h. false with a description in why[0..cap) otherwise. */
bool egress_policy_addr_ok(const EgressPolicy *p, const EgressAddr *a, uint16_t port, char *why,
                           size_t cap);
