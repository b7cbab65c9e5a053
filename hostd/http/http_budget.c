/* The body budget (http.h): bytes of request bodies held at once, in all and per caller,
 * under one lock, and the minimum rate at which a body that holds some must arrive.
 *
 * Why a share per caller: the budget is shared by every listener and every tenant, and a
 * body holds its bytes from the head (a Content-Length body reserves all of it before its
 * first byte, so its client gets a clean 503 rather than a cut mid-body) until the request
 * is freed. Without a share, one caller declaring four 64 MiB bodies and trickling them held
 * the whole default budget for request_timeout_s and every other caller's body got 503.
 * Reserving as bytes arrive instead would not stop it: a caller filled 8 MiB of chunked
 * bodies (which reserve as they arrive) over loopback in 0.06 to 0.19 s, then held them by
 * sending the minimum rate (README.md, "What one caller may hold of what every caller
 * shares"). Reservations are all or nothing, so neither count ever passes its bound. */
#include <pthread.h>
#include <stdlib.h>

#include "http_internal.h"
#include "http_tally.h"

struct HttpBudget {
    pthread_mutex_t lock;
    size_t limit;
    size_t share;
    size_t min_bytes_per_s;
    unsigned window_s;
    size_t used;            /* under lock */
    HttpTally *held;        /* under lock: bytes per caller */
    HttpBudgetStats counts; /* under lock: refusals and cuts (used is filled on reading) */
};

/* The share a config asks for: its own, or half the budget but at least one largest body. */
static size_t
share_of(const HttpConfig *c)
{
    if (c->body_share_bytes)
        return c->body_share_bytes;
    return MIN(c->body_budget_bytes, MAX(c->body_budget_bytes / 2, c->max_body_bytes));
}

int
http_budget_check(const HttpConfig *c, Error **errp)
{
    size_t share = share_of(c);

    if (c->body_budget_bytes < c->max_body_bytes ||
        c->body_budget_bytes > HTTP_BODY_BUDGET_BYTES_CEILING)
        return error_set(errp, E_INVALID, 0,
                         "http: the body budget (%zu bytes) must hold one largest body (%zu) "
                         "and be at most %zu",
                         c->body_budget_bytes, c->max_body_bytes, HTTP_BODY_BUDGET_BYTES_CEILING);
    if (share < c->max_body_bytes || share > c->body_budget_bytes)
        return error_set(errp, E_INVALID, 0,
                         "http: one caller's share of the body budget (%zu bytes) must hold one "
                         "largest body (%zu) and be at most the budget (%zu)",
                         share, c->max_body_bytes, c->body_budget_bytes);
    if (c->body_rate_window_s == 0 || c->body_rate_window_s > HTTP_TIMEOUT_S_CEILING ||
        c->body_min_bytes_per_s > HTTP_BODY_MIN_BYTES_PER_S_CEILING)
        return error_set(errp, E_INVALID, 0,
                         "http: the body rate window must be in [1, %u] s and the minimum rate "
                         "at most %zu bytes/s",
                         HTTP_TIMEOUT_S_CEILING, HTTP_BODY_MIN_BYTES_PER_S_CEILING);
    return 0;
}

int
http_budget_new(const HttpConfig *c, HttpBudget **ret, Error **errp)
{
    if (http_budget_check(c, errp) < 0)
        return -1;
    HttpBudget *b = calloc(1, sizeof(*b));
    if (!b || !(b->held = http_tally_new())) {
        free(b);
        return error_set(errp, E_INTERNAL, ENOMEM, "body budget");
    }
    pthread_mutex_init(&b->lock, NULL);
    b->limit = c->body_budget_bytes;
    b->share = share_of(c);
    b->min_bytes_per_s = c->body_min_bytes_per_s;
    b->window_s = c->body_rate_window_s;
    *ret = b;
    return 0;
}

void
http_budget_free(HttpBudget *b)
{
    if (!b)
        return;
    http_tally_free(b->held);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

size_t
http_budget_limit(const HttpBudget *b)
{
    return b->limit;
}

size_t
http_budget_share(const HttpBudget *b)
{
    return b->share;
}

void
http_budget_min_rate(const HttpBudget *b, size_t *ret_bytes_per_s, unsigned *ret_window_s)
{
    *ret_bytes_per_s = b->min_bytes_per_s;
    *ret_window_s = b->window_s;
}

void
http_budget_stats(const HttpBudget *b, HttpBudgetStats *ret)
{
    HttpBudget *m = (HttpBudget *) b; /* the lock, not the counts */
    pthread_mutex_lock(&m->lock);
    *ret = m->counts;
    ret->used_bytes = m->used;
    pthread_mutex_unlock(&m->lock);
}

void
http_budget_count_slow_cut(HttpBudget *b)
{
    pthread_mutex_lock(&b->lock);
    b->counts.slow_cut++;
    pthread_mutex_unlock(&b->lock);
}

size_t
http_budget_used(const HttpBudget *b)
{
    HttpBudget *m = (HttpBudget *) b; /* the lock, not the counts */
    pthread_mutex_lock(&m->lock);
    size_t used = m->used;
    pthread_mutex_unlock(&m->lock);
    return used;
}

size_t
http_budget_used_by(const HttpBudget *b, const char *caller)
{
    HttpBudget *m = (HttpBudget *) b;
    pthread_mutex_lock(&m->lock);
    size_t held = http_tally_get(m->held, caller);
    pthread_mutex_unlock(&m->lock);
    return held;
}

HttpBudgetVerdict
http_budget_reserve(HttpBudget *b, const char *caller, size_t n)
{
    HttpBudgetVerdict v = BUDGET_OK;

    if (n == 0)
        return BUDGET_OK;
    pthread_mutex_lock(&b->lock);
    if (n > b->limit - b->used)
        v = BUDGET_FULL;
    else if (n > b->share - MIN(b->share, http_tally_get(b->held, caller)))
        v = BUDGET_SHARE;
    else if (http_tally_add(b->held, caller, n) < 0)
        v = BUDGET_FULL; /* out of memory for the caller's entry: as if spent */
    else
        b->used += n;
    b->counts.refused_full += v == BUDGET_FULL;
    b->counts.refused_share += v == BUDGET_SHARE;
    pthread_mutex_unlock(&b->lock);
    return v;
}

void
http_budget_release(HttpBudget *b, const char *caller, size_t n)
{
    if (n == 0)
        return;
    pthread_mutex_lock(&b->lock);
    http_tally_sub(b->held, caller, n);
    b->used -= MIN(n, b->used);
    pthread_mutex_unlock(&b->lock);
}
