/* A count per caller: what the HTTP layer's per-caller bounds add up (bytes of bodies a
 * caller holds in the budget, connections a caller holds on a server). A caller is the
 * opaque key a guard names (http_request_set_caller()), or the peer's address. Pure; not
 * thread-safe: its owner's lock guards it. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "http_config.h" /* HTTP_CALLER_MAX_BYTES */

typedef struct HttpTally HttpTally;

/* NULL on OOM. */
HttpTally *http_tally_new(void);
void http_tally_free(HttpTally *t);
/* What key holds (0: nothing). */
size_t http_tally_get(const HttpTally *t, const char *key);
/* Adds n to key's count; -1 (nothing added) on OOM, or for a key that is "" or not shorter
 * than HTTP_CALLER_MAX_BYTES. */
int http_tally_add(HttpTally *t, const char *key, size_t n);
/* Takes n off key's count (never below zero); the entry goes at zero. */
void http_tally_sub(HttpTally *t, const char *key, size_t n);
/* Callers holding something now (entries). */
size_t http_tally_callers(const HttpTally *t);
