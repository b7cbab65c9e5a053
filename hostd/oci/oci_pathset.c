/* Open-addressing string set (FNV-1a, linear probing, grown at half full): see oci_pathset.h. */
#include "oci_pathset.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PATHSET_MIN_CAP 1024u

static size_t
pathset_hash(const char *p, size_t len)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t) p[i]) * UINT64_C(1099511628211);
    return (size_t) h;
}

/* The slot holding path, or the empty slot where it would go. */
static size_t
pathset_find(char *const *slots, size_t cap, const char *path, size_t len)
{
    size_t i = pathset_hash(path, len) & (cap - 1);
    while (slots[i] && (strlen(slots[i]) != len || memcmp(slots[i], path, len) != 0))
        i = (i + 1) & (cap - 1);
    return i;
}

static int
pathset_grow(OciPathSet *s)
{
    size_t cap = s->cap ? s->cap * 2 : PATHSET_MIN_CAP;
    char **slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i])
            slots[pathset_find(slots, cap, s->slots[i], strlen(s->slots[i]))] = s->slots[i];
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

int
oci_pathset_add(OciPathSet *s, const char *path, size_t len)
{
    if ((s->n + 1) * 2 > s->cap && pathset_grow(s) < 0)
        return -1;
    size_t i = pathset_find(s->slots, s->cap, path, len);
    if (s->slots[i])
        return 0;
    if (!(s->slots[i] = strndup(path, len))) {
        errno = ENOMEM;
        return -1;
    }
    s->n++;
    return 0;
}

bool
oci_pathset_has(const OciPathSet *s, const char *path, size_t len)
{
    return s->cap && s->slots[pathset_find(s->slots, s->cap, path, len)] != NULL;
}

void
oci_pathset_clear(OciPathSet *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slots[i]);
    free(s->slots);
    *s = (OciPathSet){0};
}
