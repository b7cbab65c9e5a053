/* Who may go where: the operator's allowed set ([egress] in the config), a session's
 * allow-list (a subset of it, asked for in POST /v1/sessions), and the decision for one
 * destination. Pure: no I/O, no allocation; unit tested.
 *
 * A policy is host patterns and CIDRs:
 *  - a pattern is an exact name ("pypi.org") or "*." + a name ("*.pythonhosted.org": any name
 *    below it, not the name itself), or "*" (any name); case-insensitive, no IDNA;
 *  - a CIDR ("10.213.0.0/30", "fd12::/64", or one address) does two things: numeric hosts are
 *    allowed only inside one, and addresses inside one are exempt from the special-purpose
 *    refusal (classify.h), so an operator's mirror on a private address is reachable. A CIDR
 *    may not cover a loopback, unspecified, multicast or broadcast address, nor the
 *    cloud metadata addresses 169.254.169.254 and fd00:ec2::254.
 * A name host is allowed when a pattern matches it and every address it resolves to is public
 * or inside a CIDR (one bad address refuses the name); a numeric host (any spelling) when its
 * address is inside a CIDR. IPv4-mapped IPv6 addresses are judged as the IPv4 they map. */
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

typedef struct EgressCidr {
    EgressAddr addr;
    unsigned bits;
} EgressCidr;

typedef struct EgressPolicy {
    char patterns[EGRESS_PATTERNS_MAX][EGRESS_PATTERN_MAX_BYTES + 1];
    size_t n_patterns;
    EgressCidr cidrs[EGRESS_CIDRS_MAX];
    size_t n_cidrs;
} EgressPolicy;

/* Per-session limits ([egress] in the config). */
typedef struct EgressLimits {
    unsigned max_streams;          /* open at once, <= TUNNEL_STREAMS_MAX */
    unsigned max_streams_total;    /* opened in the session's life */
    uint64_t max_bytes_in;         /* upstream -> guest, whole session */
    uint64_t max_bytes_out;        /* guest -> upstream, whole session */
    uint64_t connect_timeout_usec; /* from TunnelOpen to connected (resolution included) */
    unsigned max_denied_events;    /* egress.denied events recorded; later ones only counted */
} EgressLimits;

typedef struct EgressConfig {
    EgressPolicy allowed; /* the operator's allowed set; empty = egress off */
    EgressLimits limits;
} EgressConfig;

void egress_config_defaults(EgressConfig *c);
bool egress_policy_is_empty(const EgressPolicy *p);

/* Adds one entry: a CIDR when it holds '/' or ':' or is a dotted-quad address, else a host
 * pattern. E_INVALID with a reason for a malformed entry or a full policy. */
int egress_policy_add(EgressPolicy *p, const char *entry, Error **errp);
/* Adds a comma-separated list (spaces around entries are ignored). as_cidrs: every entry
 * must be a CIDR; else every entry must be a host pattern. */
int egress_policy_add_list(EgressPolicy *p, const char *list, bool as_cidrs, Error **errp);
/* Every pattern and CIDR of sub lies within what op allows; else E_INVALID naming the
 * first entry that does not. */
int egress_policy_check_subset(const EgressPolicy *op, const EgressPolicy *sub, Error **errp);

bool egress_pattern_matches(const char *pattern, const char *name);
bool egress_policy_matches_name(const EgressPolicy *p, const char *name);
bool egress_policy_holds_addr(const EgressPolicy *p, const EgressAddr *a);

/* The verdict for one destination address of an allowed host: inside a CIDR, or public by
 * classify.h. false with a description in why[0..cap) otherwise. */
bool egress_policy_addr_ok(const EgressPolicy *p, const EgressAddr *a, char *why, size_t cap);
