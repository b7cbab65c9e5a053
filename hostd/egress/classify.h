/* Which destination addresses the egress proxy may connect to. Pure and table-driven: the
 * tables in classify.c are the IANA IPv4 and IPv6 Special-Purpose Address Registries, row by
 * row (plus multicast, IPv6 site-local, and "outside 2000::/3"), each with its reference.
 *
 * Every address in a registry row is refused, whatever the row's "Globally Reachable" column
 * says (the column is quoted beside each row): no egress use needs PCP or TURN anycast, AS112
 * or AMT, and an operator who does adds a CIDR (see policy.h). Rows that embed an IPv4
 * address are judged by that address instead: IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96
 * and 64:ff9b:1::/48 (the local-use prefix may be cut at /48, /56, /64 or /96: the address
 * decoded by every RFC 6052 layout must be fine), 6to4 2002::/16 (bits 16..47) and Teredo
 * 2001::/32 (the
 * server in bits 32..63 and the client, the bitwise NOT of the last 32 bits: both must be
 * fine). The most specific row wins (2001::/32 Teredo inside 2001::/23). An IPv6 address in
 * no row must still lie in 2000::/3, the only global unicast space IANA allocates. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "host.h"

typedef struct EgressVerdict {
    bool allowed;
    const char *what;  /* the refusing row's name ("Loopback"), NULL when allowed */
    const char *ref;   /* its reference ("RFC 1122") */
    const char *form;  /* embedding row ("IPv4-mapped"), NULL when the address was judged as is */
    EgressAddr judged; /* the address the verdict is about (the embedded one for a form) */
} EgressVerdict;

void egress_classify(const EgressAddr *a, EgressVerdict *ret);
/* "169.254.169.254 is Link Local (RFC 3927)", "::ffff:a9fe:a9fe embeds 169.254.169.254
 * (IPv4-mapped) which is Link Local (RFC 3927)", or "... is a public address". */
void egress_verdict_describe(const EgressAddr *a, const EgressVerdict *v, char *buf, size_t cap);

/* For tests and the documentation: the tables themselves. */
typedef enum { ROW_REFUSE, ROW_MAPPED, ROW_NAT64, ROW_NAT64_LOCAL, ROW_6TO4, ROW_TEREDO } RowAction;
typedef struct EgressRow {
    EgressAddr prefix;
    unsigned bits;
    const char *name;
    const char *ref;
    const char *global; /* the registry's "Globally Reachable" column, or "n/a" */
    RowAction action;
} EgressRow;
const EgressRow *egress_rows(int family, size_t *ret_n);
