/* Name resolution on worker threads: see resolver.h. The worker touches only its lookup's
 * name, result and error; everything else happens on the loop thread. */
#include "resolver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "host.h"
#include "workq.h"

struct EgressLookup {
    EgressResolver *r;
    char name[EGRESS_NAME_MAX_BYTES + 1];
    EgressResolvedFn fn;
    void *userdata;
    bool cancelled;
    int gai_err;               /* written by the worker */
    struct addrinfo *res;      /* written by the worker */
    EgressLookup *prev, *next; /* the resolver's list of unfinished lookups */
};

struct EgressResolver {
    WorkQueue *q;
    EgressLookup *lookups;
};

int
egress_resolver_new(Loop *l, EgressResolver **ret, Error **errp)
{
    EgressResolver *r = calloc(1, sizeof(*r));
    if (!r)
        return error_set(errp, E_INTERNAL, ENOMEM, "resolver");
    if (workq_new(l, EGRESS_RESOLVER_THREADS, &r->q, errp) < 0) {
        free(r);
        return -1;
    }
    *ret = r;
    return 0;
}

static void
lookup_unlink_free(EgressLookup *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else
        k->r->lookups = k->next;
    if (k->next)
        k->next->prev = k->prev;
    if (k->res)
        freeaddrinfo(k->res);
    free(k);
}

void
egress_resolver_free(EgressResolver *r)
{
    if (!r)
        return;
    workq_free(r->q); /* running lookups finish; queued ones are dropped uncalled */
    while (r->lookups)
        lookup_unlink_free(r->lookups);
    free(r);
}

static void
lookup_work(void *userdata)
{
    EgressLookup *k = userdata;
    /* No AI_ADDRCONFIG: every address of the name is vetted, IPv6 ones on an IPv4-only host
     * too; the connect simply moves past those it cannot reach. */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    k->gai_err = getaddrinfo(k->name, NULL, &hints, &k->res);
    if (k->gai_err != 0)
        k->res = NULL;
}

static void
lookup_done(void *userdata)
{
    EgressLookup *k = userdata;
    if (!k->cancelled) {
        k->fn(k->userdata, k->gai_err, k->res);
        k->res = NULL; /* the callee owns it now */
    }
    lookup_unlink_free(k);
}

EgressLookup *
egress_resolve(EgressResolver *r, const char *name, EgressResolvedFn fn, void *userdata,
               Error **errp)
{
    EgressLookup *k = calloc(1, sizeof(*k));
    if (!k) {
        error_set(errp, E_INTERNAL, ENOMEM, "lookup");
        return NULL;
    }
    *k = (EgressLookup){.r = r, .fn = fn, .userdata = userdata, .next = r->lookups};
    snprintf(k->name, sizeof(k->name), "%s", name);
    if (workq_submit(r->q, lookup_work, lookup_done, k) < 0) {
        free(k);
        error_set(errp, E_INTERNAL, ENOMEM, "lookup");
        return NULL;
    }
    if (r->lookups)
        r->lookups->prev = k;
    r->lookups = k;
    return k;
}

void
egress_lookup_cancel(EgressLookup *k)
{
    if (k)
        k->cancelled = true;
}
