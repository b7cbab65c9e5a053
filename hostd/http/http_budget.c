/* The body budget (http.h): one atomic counter of bytes reserved, compared with a limit.
 * Reservations are all or nothing, so the counter never passes the limit. */
#include <stdlib.h>

#include "http_internal.h"

struct HttpBudget {
    size_t limit;
    atomic_size_t used;
};

HttpBudget *
http_budget_new(size_t limit_bytes)
{
    HttpBudget *b = calloc(1, sizeof(*b));
    if (b)
        b->limit = limit_bytes;
    return b;
}

void
http_budget_free(HttpBudget *b)
{
    free(b);
}

size_t
http_budget_limit(const HttpBudget *b)
{
    return b->limit;
}

size_t
http_budget_used(const HttpBudget *b)
{
    return atomic_load(&((HttpBudget *) b)->used);
}

bool
http_budget_reserve(HttpBudget *b, size_t n)
{
    size_t cur = atomic_load(&b->used);
    do {
        if (n > b->limit - cur)
            return false;
    } while (!atomic_compare_exchange_weak(&b->used, &cur, cur + n));
    return true;
}

void
http_budget_release(HttpBudget *b, size_t n)
{
    atomic_fetch_sub(&b->used, n);
}
