/* A count per caller (http_tally.h): a small chained hash of the callers that hold
 * something now. An entry lives while its count is above zero, so the table holds at most
 * as many entries as there are holders (requests, connections), each a few dozen bytes. */
#include <stdlib.h>
#include <string.h>

#include "http_tally.h"
#include "macro.h"

#define TALLY_BUCKETS 256 /* power of two */

typedef struct Entry {
    struct Entry *next;
    size_t count;
    char key[]; /* NUL-terminated, < HTTP_CALLER_MAX_BYTES */
} Entry;

struct HttpTally {
    Entry *buckets[TALLY_BUCKETS];
};

HttpTally *
http_tally_new(void)
{
    return calloc(1, sizeof(HttpTally));
}

void
http_tally_free(HttpTally *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < TALLY_BUCKETS; i++)
        while (t->buckets[i]) {
            Entry *e = t->buckets[i];
            t->buckets[i] = e->next;
            free(e);
        }
    free(t);
}

static Entry **
tally_slot(const HttpTally *t, const char *key)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *p = key; *p; p++)
        h = (h ^ (uint8_t) *p) * 16777619u;
    Entry **pp = (Entry **) &t->buckets[h & (TALLY_BUCKETS - 1)];
    while (*pp && strcmp((*pp)->key, key) != 0)
        pp = &(*pp)->next;
    return pp;
}

size_t
http_tally_get(const HttpTally *t, const char *key)
{
    Entry *e = *tally_slot(t, key);
    return e ? e->count : 0;
}

int
http_tally_add(HttpTally *t, const char *key, size_t n)
{
    Entry **pp = tally_slot(t, key);

    if (n == 0)
        return 0;
    if (!*pp) {
        size_t len = strnlen(key, HTTP_CALLER_MAX_BYTES);
        if (len == 0 || len >= HTTP_CALLER_MAX_BYTES || !(*pp = calloc(1, sizeof(Entry) + len + 1)))
            return -1;
        memcpy((*pp)->key, key, len);
    }
    (*pp)->count += n;
    return 0;
}

void
http_tally_sub(HttpTally *t, const char *key, size_t n)
{
    Entry **pp = tally_slot(t, key), *e = *pp;

    if (!e)
        return;
    e->count -= MIN(n, e->count);
    if (e->count > 0)
        return;
    *pp = e->next;
    free(e);
}

size_t
http_tally_callers(const HttpTally *t)
{
    size_t n = 0;
    for (size_t i = 0; i < TALLY_BUCKETS; i++)
        for (const Entry *e = t->buckets[i]; e; e = e->next)
            n++;
    return n;
}
