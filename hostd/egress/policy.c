/* Allow-lists and decisions: see policy.h. */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "classify.h"
#include "runner_limits.h"
#include "timeutil.h"

#define EGRESS_DEFAULT_MAX_STREAMS 32
#define EGRESS_DEFAULT_MAX_STREAMS_TOTAL 1024
#define EGRESS_DEFAULT_MAX_BYTES_IN (1024ull << 20)
#define EGRESS_DEFAULT_MAX_BYTES_OUT (256ull << 20)
#define EGRESS_DEFAULT_CONNECT_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define EGRESS_DEFAULT_MAX_DENIED_EVENTS 1000
#define EGRESS_DEFAULT_FIRST_FLIGHT_TIMEOUT_USEC (10 * USEC_PER_SEC)

/* What no CIDR may cover, even an operator's: loopback, unspecified, multicast, broadcast,
 * IPv4-mapped space (addresses are unmapped before matching) and the metadata services. */
static const struct {
    const char *addr;
    unsigned bits;
} never_cidr[] = {
    {"127.0.0.0", 8},        {"0.0.0.0", 8},         {"224.0.0.0", 4}, {"255.255.255.255", 32},
    {"169.254.169.254", 32}, {"::1", 128},           {"::", 128},      {"ff00::", 8},
    {"::ffff:0:0", 96},      {"fd00:ec2::254", 128},
};

void
egress_config_defaults(EgressConfig *c)
{
    memset(c, 0, sizeof(*c));
    c->limits = (EgressLimits){
        .max_streams = EGRESS_DEFAULT_MAX_STREAMS,
        .max_streams_total = EGRESS_DEFAULT_MAX_STREAMS_TOTAL,
        .max_bytes_in = EGRESS_DEFAULT_MAX_BYTES_IN,
        .max_bytes_out = EGRESS_DEFAULT_MAX_BYTES_OUT,
        .connect_timeout_usec = EGRESS_DEFAULT_CONNECT_TIMEOUT_USEC,
        .max_denied_events = EGRESS_DEFAULT_MAX_DENIED_EVENTS,
        .first_flight_timeout_usec = EGRESS_DEFAULT_FIRST_FLIGHT_TIMEOUT_USEC,
    };
}

bool
egress_policy_is_empty(const EgressPolicy *p)
{
    return p->n_patterns == 0 && p->n_cidrs == 0;
}

/* "N" (1..65535, decimal) or "*" after an entry's last ':'. */
static int
ports_parse(const char *text, const char *entry, uint32_t *ret, Error **errp)
{
    char *end;

    if (strcmp(text, "*") == 0) {
        *ret = EGRESS_PORTS_ANY;
        return 0;
    }
    unsigned long v = strtoul(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end || v == 0 || v > TUNNEL_PORT_MAX || strlen(text) > 5)
        return error_set(errp, E_INVALID, 0, "'%.64s': a port is 1..65535 or *", entry);
    *ret = (uint32_t) v;
    return 0;
}

/* Splits "head:ports" at the last ':' (text is modified); no ':' leaves 80 and 443. */
static int
split_ports(char *text, const char *entry, uint32_t *ret, Error **errp)
{
    char *colon = strrchr(text, ':');

    *ret = EGRESS_PORTS_WEB;
    if (!colon)
        return 0;
    *colon = '\0';
    return ports_parse(colon + 1, entry, ret, errp);
}

static int
cidr_parse(const char *entry, EgressCidr *ret, Error **errp)
{
    char text[EGRESS_ENTRY_MAX_BYTES + 1];
    snprintf(text, sizeof(text), "%s", entry);
    char *slash = strchr(text, '/');
    EgressCidr c = {0};
    if (slash)
        *slash = '\0';
    if ((slash && split_ports(slash + 1, entry, &c.ports, errp) < 0) ||
        (!slash && egress_addr_parse_strict(text, &c.addr) < 0 &&
         split_ports(text, entry, &c.ports, errp) < 0))
        return -1;
    if (egress_addr_parse_strict(text, &c.addr) < 0 ||
        (!slash && c.ports && c.addr.family != AF_INET))
        return error_set(errp, E_INVALID, 0, "'%.64s' is not an address or CIDR", entry);
    unsigned max = c.addr.family == AF_INET ? 32 : 128;
    c.bits = max;
    if (slash) {
        char *end;
        unsigned long b = strtoul(slash + 1, &end, 10);
        if (slash[1] < '0' || slash[1] > '9' || *end || b > max)
            return error_set(errp, E_INVALID, 0, "'%.64s': prefix length 0..%u", entry, max);
        c.bits = (unsigned) b;
    }
    for (unsigned bit = c.bits; bit < max; bit++)
        if (c.addr.bytes[bit / 8] & (0x80 >> (bit % 8)))
            return error_set(errp, E_INVALID, 0, "'%.64s' has host bits set", entry);
    *ret = c;
    return 0;
}

static int
cidr_check_safe(const EgressCidr *c, const char *entry, Error **errp)
{
    for (size_t i = 0; i < sizeof(never_cidr) / sizeof(never_cidr[0]); i++) {
        EgressAddr f;
        (void) egress_addr_parse_strict(never_cidr[i].addr, &f);
        unsigned bits = c->bits < never_cidr[i].bits ? c->bits : never_cidr[i].bits;
        if (egress_addr_prefix_equal(&c->addr, &f, bits))
            return error_set(errp, E_INVALID, 0,
                             "'%.64s' covers %s/%u (loopback, unspecified, multicast, broadcast, "
                             "mapped or metadata addresses are never allowed)",
                             entry, never_cidr[i].addr, never_cidr[i].bits);
    }
    return 0;
}

static int
pattern_normalize(const char *entry, EgressPattern *out, Error **errp)
{
    char text[EGRESS_ENTRY_MAX_BYTES + 1], name[EGRESS_NAME_MAX_BYTES + 1];
    EgressAddr a;
    const char *why = NULL;

    snprintf(text, sizeof(text), "%s", entry);
    if (split_ports(text, entry, &out->ports, errp) < 0)
        return -1;
    bool wild = strncmp(text, "*.", 2) == 0;
    if (strcmp(text, "*") == 0) {
        snprintf(out->name, sizeof(out->name), "*");
        return 0;
    }
    HostKind k = egress_host_parse(text + (wild ? 2 : 0), &a, name, &why);
    if (k == HOST_NUMERIC)
        return error_set(errp, E_INVALID, 0, "'%.64s' is an address: give it as a CIDR", entry);
    if (k == HOST_BAD)
        return error_set(errp, E_INVALID, 0, "'%.64s' is not a host pattern: %s", entry, why);
    snprintf(out->name, sizeof(out->name), "%s%s", wild ? "*." : "", name);
    return 0;
}

/* A CIDR: it holds '/', or is an address, or is a dotted quad with a port. Names never hold
 * '/', and a name with a port has a last label that is not numeric. */
static bool
entry_is_cidr(const char *entry)
{
    char text[EGRESS_ENTRY_MAX_BYTES + 1];
    EgressAddr a;

    if (strchr(entry, '/') || egress_addr_parse_strict(entry, &a) == 0)
        return true;
    snprintf(text, sizeof(text), "%s", entry);
    char *colon = strrchr(text, ':');
    if (colon)
        *colon = '\0';
    return strchr(text, ':') || egress_addr_parse_strict(text, &a) == 0;
}

static int
policy_add(EgressPolicy *p, const char *entry, int want_cidr, Error **errp)
{
    bool cidr = entry_is_cidr(entry);

    if (strlen(entry) > EGRESS_ENTRY_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "an entry is over %d bytes", EGRESS_ENTRY_MAX_BYTES);
    if (want_cidr >= 0 && cidr != (bool) want_cidr)
        return error_set(errp, E_INVALID, 0, "'%.64s' is %s", entry,
                         cidr ? "an address: it belongs in allow_cidrs" : "not a CIDR");
    if (cidr) {
        if (p->n_cidrs == EGRESS_CIDRS_MAX)
            return error_set(errp, E_INVALID, 0, "at most %d CIDRs", EGRESS_CIDRS_MAX);
        if (cidr_parse(entry, &p->cidrs[p->n_cidrs], errp) < 0 ||
            cidr_check_safe(&p->cidrs[p->n_cidrs], entry, errp) < 0)
            return -1;
        p->n_cidrs++;
        return 0;
    }
    if (p->n_patterns == EGRESS_PATTERNS_MAX)
        return error_set(errp, E_INVALID, 0, "at most %d host patterns", EGRESS_PATTERNS_MAX);
    if (pattern_normalize(entry, &p->patterns[p->n_patterns], errp) < 0)
        return -1;
    p->n_patterns++;
    return 0;
}

int
egress_policy_add(EgressPolicy *p, const char *entry, Error **errp)
{
    return policy_add(p, entry, -1, errp);
}

int
egress_policy_add_list(EgressPolicy *p, const char *list, bool as_cidrs, Error **errp)
{
    char entry[EGRESS_ENTRY_MAX_BYTES + 1];

    for (const char *s = list; *s;) {
        size_t n = strcspn(s, ",");
        const char *b = s, *e = s + n;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e == b || (size_t) (e - b) > EGRESS_ENTRY_MAX_BYTES)
            return error_set(errp, E_INVALID, 0, "empty or over-long entry in '%.64s'", list);
        memcpy(entry, b, (size_t) (e - b));
        entry[e - b] = '\0';
        if (policy_add(p, entry, as_cidrs, errp) < 0)
            return -1;
        s += n + (s[n] == ',');
    }
    return 0;
}

bool
egress_pattern_matches(const char *pattern, const char *name)
{
    if (strcmp(pattern, "*") == 0)
        return true;
    if (strncmp(pattern, "*.", 2) != 0)
        return strcmp(pattern, name) == 0;
    size_t pn = strlen(pattern) - 1, nn = strlen(name); /* pn: ".suffix" */
    return nn > pn && strcmp(name + nn - pn, pattern + 1) == 0;
}

bool
egress_ports_allow(uint32_t ports, uint16_t port)
{
    if (ports == EGRESS_PORTS_ANY)
        return true;
    if (ports == EGRESS_PORTS_WEB)
        return port == 80 || port == 443;
    return ports == port;
}

const char *
egress_ports_format(uint32_t ports, char buf[EGRESS_PORT_TEXT_BYTES])
{
    if (ports == EGRESS_PORTS_WEB)
        buf[0] = '\0';
    else if (ports == EGRESS_PORTS_ANY)
        snprintf(buf, EGRESS_PORT_TEXT_BYTES, ":*");
    else
        snprintf(buf, EGRESS_PORT_TEXT_BYTES, ":%u", (unsigned) ports);
    return buf;
}

bool
egress_policy_matches_name(const EgressPolicy *p, const char *name, uint16_t port)
{
    for (size_t i = 0; i < p->n_patterns; i++)
        if (egress_ports_allow(p->patterns[i].ports, port) &&
            egress_pattern_matches(p->patterns[i].name, name))
            return true;
    return false;
}

bool
egress_policy_holds_addr(const EgressPolicy *p, const EgressAddr *a, uint16_t port)
{
    EgressAddr u = *a;
    egress_addr_unmap(&u);
    for (size_t i = 0; i < p->n_cidrs; i++)
        if (egress_ports_allow(p->cidrs[i].ports, port) &&
            egress_addr_prefix_equal(&u, &p->cidrs[i].addr, p->cidrs[i].bits))
            return true;
    return false;
}

/* Every port sub allows, op allows. */
static bool
ports_cover(uint32_t op, uint32_t sub)
{
    if (op == EGRESS_PORTS_ANY)
        return true;
    if (sub == EGRESS_PORTS_ANY)
        return false;
    if (sub == EGRESS_PORTS_WEB)
        return op == EGRESS_PORTS_WEB;
    return egress_ports_allow(op, (uint16_t) sub);
}

/* Pattern sub allows nothing that op does not. */
static bool
pattern_covers(const char *op, const char *sub)
{
    if (strcmp(op, "*") == 0)
        return true;
    if (strcmp(sub, "*") == 0)
        return false;
    if (strncmp(sub, "*.", 2) != 0)
        return egress_pattern_matches(op, sub);
    if (strncmp(op, "*.", 2) != 0)
        return false;
    return strcmp(op, sub) == 0 || egress_pattern_matches(op, sub + 2);
}

static bool
cidr_covers(const EgressCidr *op, const EgressCidr *sub)
{
    return op->addr.family == sub->addr.family && op->bits <= sub->bits &&
           egress_addr_prefix_equal(&sub->addr, &op->addr, op->bits) &&
           ports_cover(op->ports, sub->ports);
}

int
egress_policy_check_subset(const EgressPolicy *op, const EgressPolicy *sub, Error **errp)
{
    char text[EGRESS_ADDR_TEXT_BYTES], ports[EGRESS_PORT_TEXT_BYTES];

    for (size_t i = 0; i < sub->n_patterns; i++) {
        const EgressPattern *s = &sub->patterns[i];
        bool ok = false;
        for (size_t k = 0; k < op->n_patterns && !ok; k++)
            ok = pattern_covers(op->patterns[k].name, s->name) &&
                 ports_cover(op->patterns[k].ports, s->ports);
        if (!ok)
            return error_set(errp, E_INVALID, 0,
                             "egress '%s%s' is not within the hosts and ports this server allows",
                             s->name, egress_ports_format(s->ports, ports));
    }
    for (size_t i = 0; i < sub->n_cidrs; i++) {
        bool ok = false;
        for (size_t k = 0; k < op->n_cidrs && !ok; k++)
            ok = cidr_covers(&op->cidrs[k], &sub->cidrs[i]);
        if (!ok)
            return error_set(errp, E_INVALID, 0,
                             "egress %s/%u%s is not within the CIDRs and ports this server allows",
                             egress_addr_format(&sub->cidrs[i].addr, text, sizeof(text)),
                             sub->cidrs[i].bits, egress_ports_format(sub->cidrs[i].ports, ports));
    }
    return 0;
}

bool
egress_policy_addr_ok(const EgressPolicy *p, const EgressAddr *a, uint16_t port, char *why,
                      size_t cap)
{
    EgressVerdict v;

    if (egress_policy_holds_addr(p, a, port))
        return true;
    egress_classify(a, &v); /* a mapped address is judged by the IPv4 it maps */
    if (v.allowed)
        return true;
    egress_verdict_describe(a, &v, why, cap);
    return false;
}
