/* Name resolution off the loop thread: getaddrinfo(3) on a small pool of worker threads of
 * its own (a slow DNS server never delays salvages or the pool's libvirt calls, and never the
 * loop). Loop thread only, except the workers.
 * A lookup's callback runs once on the loop thread, unless it was cancelled first; a cancelled
 * lookup is freed when its worker finishes (getaddrinfo itself cannot be interrupted).
 * egress_resolver_free() waits for running lookups and frees every one still known. */
#pragma once

#include <netdb.h>

#include "error.h"
#include "loop.h"

#define EGRESS_RESOLVER_THREADS 4

typedef struct EgressResolver EgressResolver;
typedef struct EgressLookup EgressLookup;

/* gai_err is getaddrinfo's result; res (owned by the callee: freeaddrinfo) is set when 0. */
typedef void (*EgressResolvedFn)(void *userdata, int gai_err, struct addrinfo *res);

int egress_resolver_new(Loop *l, EgressResolver **ret, Error **errp);
void egress_resolver_free(EgressResolver *r);
/* Looks up name (A and AAAA, TCP) for fn. NULL with errp on allocation failure. */
EgressLookup *egress_resolve(EgressResolver *r, const char *name, EgressResolvedFn fn,
                             void *userdata, Error **errp);
void egress_lookup_cancel(EgressLookup *l);
