/* See guest_replies.h. */
#include "guest_replies.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"

/* Over the session's budget or the file caps: nothing of c is stored. */
static bool
mirror_over_caps(const MirrorView *v, const Stockade__Runner__FileChanged *c)
{
    return c->over_budget || v->mirror_bytes + c->data.len > v->budget_bytes ||
           c->size > v->max_file_bytes || (c->offset == 0 && v->files >= v->max_files);
}

MirrorStep
mirror_plan(const MirrorView *v, const Stockade__Runner__FileChanged *c)
{
    if (c->removed)
        return (MirrorStep){.action = MIRROR_REMOVE};
    if (mirror_over_caps(v, c)) /* one event per file, not per chunk */
        return (MirrorStep){.action = c->offset == 0 ? MIRROR_OVER_BUDGET : MIRROR_SKIP};
    if (c->offset == 0) /* a new file: its own sequence starts here */
        return (MirrorStep){.action = MIRROR_WRITE, .begin = true, .finish = c->last};
    if (!v->receiving || !v->path || strcmp(v->path, c->path) != 0 || c->offset != v->received ||
        c->size != v->size)
        return (MirrorStep){.action = MIRROR_SKIP}; /* out of sequence */
    return (MirrorStep){.action = MIRROR_WRITE, .finish = c->last};
}

FileGetStep
file_get_take(uint8_t **buf, size_t *alloc, size_t *got, size_t cap,
              const Stockade__Runner__FileData *d)
{
    if (d->offset != *got)
        return FILE_GET_OUT_OF_SEQUENCE;
    if (*got + d->data.len > cap)
        return FILE_GET_TOO_LARGE;
    if (*got + d->data.len > *alloc) { /* grow geometrically up to cap */
        size_t want = MAX(*got + d->data.len, MIN(cap, MAX(*alloc * 2, (size_t) 65536)));
        uint8_t *nd = realloc(*buf, want);
        if (!nd)
            return FILE_GET_NO_MEMORY;
        *buf = nd;
        *alloc = want;
    }
    if (d->data.len)
        memcpy(*buf + *got, d->data.data, d->data.len);
    *got += d->data.len;
    if (d->eof)
        return FILE_GET_DONE;
    return d->data.len == 0 ? FILE_GET_EMPTY_CHUNK : FILE_GET_MORE;
}

bool
finalize_chunk_fits(uint64_t got, uint64_t listed_size, const Stockade__Runner__FileData *d)
{
    return d->offset == got && d->size == listed_size && got <= listed_size &&
           d->data.len <= listed_size - got && (d->data.len > 0 || d->eof) &&
           (!d->eof || got + d->data.len == listed_size);
}
