/* Fuzz target: a guest's file records after proto/'s checks, as the host uses them
 * (hostd/sessions/guest_replies.c): FileChanged through the live mirror's step, FileData
 * through a fetched file's reassembly and a finalize's chunk check, FsResult as the file
 * calls copy and list it.
 *
 * Input: 4 bytes of caps (the mirror's budget, its largest file, how many files, a fetch's
 * cap and a finalize's listed size, small so they are reached), then frames as the channel
 * carries them (u32 BE length, a GuestMsg); a frame that fails msg_decode_guest() or
 * msg_check_guest() is dropped, as the channel would end the guest. The mirror is modelled
 * in memory (what mirror.c would write to disk).
 * Invariants, not just "no crash":
 *  - the mirror stores a chunk only in sequence: at offset 0 of a file it begins, or at
 *    exactly the bytes received of the file being received, with the same path and size;
 *    what it stored never exceeds the budget, no stored file's announced size exceeds the
 *    largest file, never more files than the cap are stored, and a file being received never
 *    holds more than its announced size; a file's "over_budget" event comes only for its
 *    first record;
 *  - a stored file holds exactly the chunks the mirror wrote for it, in order;
 *  - a fetched file never grows past its cap (its buffer neither), holds exactly the
 *    accepted chunks in order, and a refused chunk changes nothing;
 *  - a finalize's fetch accepts only chunks that keep it within the listed size, and an end
 *    only at exactly that size;
 *  - an FsResult the checks let through has at most LIST_MAX_ENTRIES entries, each with a
 *    name that stays beneath the folder it is joined to (relative, no "." or ".."
 *    component), permission bits only, and a symlink target exactly when it is a symlink. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "guest_replies.h"
#include "runner_limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FRAME_INPUT_MAX_BYTES (1u << 20)
#define MODEL_FILES_MAX 64

typedef struct {
    char *path;
    uint8_t *data;
    size_t len;
} ModelFile;

typedef struct {
    MirrorView v;
    char *path; /* the file being received */
    uint8_t *data;
    bool receiving;
    ModelFile stored[MODEL_FILES_MAX];
    size_t n_stored;
} Model;

static void
model_drop_current(Model *m)
{
    free(m->path);
    free(m->data);
    m->path = NULL;
    m->data = NULL;
    m->receiving = false;
    m->v.received = 0;
}

static void
model_store(Model *m)
{
    if (m->n_stored == MODEL_FILES_MAX) {
        model_drop_current(m);
        return;
    }
    m->stored[m->n_stored++] = (ModelFile){m->path, m->data, m->v.received};
    m->path = NULL;
    m->data = NULL;
    m->receiving = false;
    m->v.received = 0;
}

static void
mirror_record(Model *m, const Stockade__Runner__FileChanged *c)
{
    m->v.receiving = m->receiving;
    m->v.path = m->path;
    MirrorStep st = mirror_plan(&m->v, c);
    CHECK((st.action == MIRROR_REMOVE) == c->removed);
    if (st.action == MIRROR_OVER_BUDGET) {
        CHECK(c->offset == 0);
        return;
    }
    if (st.action != MIRROR_WRITE) {
        CHECK(!st.begin && !st.finish);
        return;
    }
    CHECK(!c->removed && !c->over_budget);
    CHECK(m->v.mirror_bytes + c->data.len <= m->v.budget_bytes);
    CHECK(c->size <= m->v.max_file_bytes);
    if (st.begin) {
        CHECK(c->offset == 0 && m->v.files < m->v.max_files);
        model_drop_current(m);
        m->path = strdup(c->path);
        m->data = malloc(c->size + 1);
        m->receiving = true;
        m->v.size = c->size;
    } else {
        CHECK(m->receiving && strcmp(m->path, c->path) == 0);
        CHECK(c->offset == m->v.received && c->size == m->v.size);
    }
    CHECK(m->v.received + c->data.len <= m->v.size); /* proto/ bounds a chunk by its size */
    if (c->data.len)
        memcpy(m->data + m->v.received, c->data.data, c->data.len);
    m->v.received += c->data.len;
    m->v.mirror_bytes += c->data.len;
    if (st.finish) {
        CHECK(c->last);
        model_store(m);
        m->v.files++;
    }
    CHECK(m->v.mirror_bytes <= m->v.budget_bytes && m->v.files <= m->v.max_files);
}

typedef struct {
    uint8_t *buf, *want;
    size_t alloc, got, cap;
    uint64_t fin_got, fin_size;
    bool fin_done;
} Fetch;

static void
fetch_chunk(Fetch *f, const Stockade__Runner__FileData *d)
{
    size_t got = f->got, alloc = f->alloc;
    FileGetStep st = file_get_take(&f->buf, &f->alloc, &f->got, f->cap, d);
    if (st == FILE_GET_OUT_OF_SEQUENCE || st == FILE_GET_TOO_LARGE || st == FILE_GET_NO_MEMORY) {
        CHECK(f->got == got && f->alloc == alloc);
        CHECK(st != FILE_GET_OUT_OF_SEQUENCE || d->offset != got);
        CHECK(st != FILE_GET_TOO_LARGE || got + d->data.len > f->cap);
        f->got = f->alloc = 0; /* the operation fails: a new one starts from nothing */
        free(f->buf);
        f->buf = NULL;
    } else {
        CHECK(d->offset == got && f->got == got + d->data.len);
        CHECK(f->got <= f->cap && f->alloc <= f->cap && f->got <= f->alloc);
        if (d->data.len)
            memcpy(f->want + got, d->data.data, d->data.len);
        CHECK(f->got == 0 || memcmp(f->buf, f->want, f->got) == 0);
        if (st != FILE_GET_MORE) { /* done, or an empty chunk failed it */
            CHECK((st == FILE_GET_DONE) == d->eof);
            free(f->buf);
            f->buf = NULL;
            f->got = f->alloc = 0;
        }
    }

    if (f->fin_done)
        return;
    bool fits = finalize_chunk_fits(f->fin_got, f->fin_size, d);
    if (!fits) {
        f->fin_done = true; /* the finalize fails and salvages */
        return;
    }
    CHECK(d->offset == f->fin_got && f->fin_got + d->data.len <= f->fin_size);
    CHECK(d->data.len > 0 || d->eof);
    f->fin_got += d->data.len;
    if (d->eof) {
        CHECK(f->fin_got == f->fin_size);
        f->fin_done = true;
    }
}

/* A name the file calls may join to a folder's path: relative, no empty, "." or ".."
 * component, within PATH_MAX_BYTES ("" is STAT's answer for the workspace itself). */
static bool
name_stays_beneath(const char *name)
{
    size_t n = strlen(name);
    if (n > PATH_MAX_BYTES || name[0] == '/')
        return false;
    for (const char *p = name; n > 0;) {
        size_t k = strcspn(p, "/");
        if (k == 0 || (k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (!p[k])
            break;
        p += k + 1;
    }
    return true;
}

static void
fs_result(const Stockade__Runner__FsResult *r)
{
    CHECK(r->n_entries <= LIST_MAX_ENTRIES);
    for (size_t i = 0; i < r->n_entries; i++) {
        const Stockade__Runner__FsEntry *e = r->entries[i];
        bool link = e->type == STOCKADE__RUNNER__FS_ENTRY__TYPE__SYMLINK;
        CHECK(e->name && name_stays_beneath(e->name) && (e->mode & ~07777u) == 0);
        CHECK(e->symlink_target && (e->symlink_target[0] != '\0') == link);
    }
}

static void
model_check_and_free(Model *m)
{
    for (size_t i = 0; i < m->n_stored; i++) {
        CHECK(m->stored[i].len <= m->v.max_file_bytes);
        free(m->stored[i].path);
        free(m->stored[i].data);
    }
    model_drop_current(m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    Model m = {.v = {.budget_bytes = (uint64_t) data[0] * 16,
                     .max_file_bytes = (uint64_t) data[1] * 8,
                     .max_files = data[2] % 8}};
    Fetch f = {.cap = (size_t) data[3] * 8, .fin_size = (uint64_t) data[3] * 4};
    f.want = malloc(f.cap + 1);
    char err[256];

    for (size_t off = 4; size - off >= 4;) {
        uint32_t len = (uint32_t) data[off] << 24 | (uint32_t) data[off + 1] << 16 |
                       (uint32_t) data[off + 2] << 8 | data[off + 3];
        off += 4;
        if (len > size - off || len > FRAME_INPUT_MAX_BYTES)
            break;
        GuestMsg *g = msg_decode_guest(data + off, len, err, sizeof(err));
        off += len;
        if (!g)
            continue;
        if (msg_check_guest(g, err, sizeof(err)) == 0) {
            if (g->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_CHANGED)
                mirror_record(&m, g->file_changed);
            else if (g->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_DATA)
                fetch_chunk(&f, g->file_data);
            else if (g->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT)
                fs_result(g->fs_result);
        }
        msg_free_guest(g);
    }
    model_check_and_free(&m);
    free(f.buf);
    free(f.want);
    return 0;
}
