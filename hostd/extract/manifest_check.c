/* Manifest checks and the fetch plan: see manifest_check.h. */
#include "manifest_check.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "path.h"

#define MANIFEST_INITIAL_CAP 64

static const char *const verdict_names[] = {
    [MANIFEST_OK] = "ok",
    [MANIFEST_BAD_PATH] = "bad_path",
    [MANIFEST_OVER_CAPS] = "over_caps",
    [MANIFEST_BAD_TYPE] = "bad_type",
    [MANIFEST_TOO_MANY] = "too_many",
    [MANIFEST_OVER_DISK] = "over_disk",
    [MANIFEST_DUPLICATE] = "duplicate",
    [MANIFEST_ORPHAN] = "orphan",
    [MANIFEST_TOTALS] = "totals",
    [MANIFEST_NO_MEMORY] = "no_memory",
};

const char *
manifest_verdict_name(ManifestVerdict v)
{
    return (size_t) v < ELEMENTSOF(verdict_names) ? verdict_names[v] : "unknown";
}

/* The path must come back from normalisation unchanged, within the caps. */
static ManifestVerdict
manifest_check_path(const ManifestCaps *caps, const char *path, size_t *ret_len)
{
    size_t len = strnlen(path, (size_t) caps->max_path_bytes + 1);
    size_t out_len;
    uint32_t depth;

    if (len == 0)
        return MANIFEST_BAD_PATH;
    if (len > caps->max_path_bytes)
        return MANIFEST_OVER_CAPS;
    _cleanup_free_ char *out = malloc(len + 1);
    if (!out)
        return MANIFEST_NO_MEMORY;
    PathVerdict v = extract_path_normalize(path, len, caps->max_path_bytes, caps->max_depth, out,
                                           &out_len, &depth);
    if (extract_path_verdict_is_cap(v))
        return MANIFEST_OVER_CAPS;
    if (v != PATH_OK || out_len != len || memcmp(out, path, len) != 0)
        return MANIFEST_BAD_PATH;
    *ret_len = len;
    return MANIFEST_OK;
}

static int
manifest_grow(Manifest *m)
{
    if (m->n < m->cap)
        return 0;
    size_t cap = m->cap ? m->cap * 2 : MANIFEST_INITIAL_CAP;
    ManifestEntry *v = reallocarray(m->v, cap, sizeof(*v));
    if (!v)
        return -1;
    m->v = v;
    m->cap = cap;
    return 0;
}

ManifestVerdict
manifest_add(Manifest *m, const ManifestCaps *caps, const char *path, int type, uint64_t size,
             uint64_t mtime_ns, uint32_t mode)
{
    size_t len = 0;

    if (m->n >= caps->max_entries)
        return MANIFEST_TOO_MANY;
    ManifestVerdict v = manifest_check_path(caps, path, &len);
    if (v != MANIFEST_OK)
        return v;
    if ((type != MANIFEST_FILE && type != MANIFEST_DIR) || (type == MANIFEST_DIR && size != 0) ||
        (mode & ~0777u) != 0)
        return MANIFEST_BAD_TYPE;
    if (len > caps->max_path_bytes_total - MIN(m->path_bytes, caps->max_path_bytes_total))
        return MANIFEST_TOO_MANY;
    if (size > caps->disk_bytes || m->file_bytes > caps->disk_bytes - size)
        return MANIFEST_OVER_DISK;
    if (manifest_grow(m) < 0)
        return MANIFEST_NO_MEMORY;
    char *copy = strndup(path, len);
    if (!copy)
        return MANIFEST_NO_MEMORY;
    m->v[m->n++] = (ManifestEntry){.path = copy, .type = (ManifestType) type, .size = size,
                                   .mtime_ns = mtime_ns, .mode = mode};
    m->path_bytes += len;
    m->file_bytes += size;
    m->sorted = false;
    return MANIFEST_OK;
}

static int
manifest_cmp(const void *a, const void *b)
{
    return strcmp(((const ManifestEntry *) a)->path, ((const ManifestEntry *) b)->path);
}

/* The entry named path[0..len), or NULL (entries sorted). */
static const ManifestEntry *
manifest_find(const Manifest *m, const char *path, size_t len)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *p = m->v[mid].path;
        int c = strncmp(p, path, len);
        if (c == 0 && p[len] != '\0')
            c = 1; /* p is longer: it sorts after path */
        if (c == 0)
            return &m->v[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

ManifestVerdict
manifest_finish(Manifest *m, uint64_t total_entries, uint64_t total_file_bytes)
{
    if (total_entries != m->n || total_file_bytes != m->file_bytes)
        return MANIFEST_TOTALS;
    if (m->n > 1)
        qsort(m->v, m->n, sizeof(*m->v), manifest_cmp);
    m->sorted = true;
    for (size_t i = 0; i < m->n; i++) {
        if (i > 0 && strcmp(m->v[i - 1].path, m->v[i].path) == 0)
            return MANIFEST_DUPLICATE;
        const char *slash = strrchr(m->v[i].path, '/');
        if (!slash)
            continue;
        const ManifestEntry *parent = manifest_find(m, m->v[i].path, (size_t) (slash - m->v[i].path));
        if (!parent || parent->type != MANIFEST_DIR)
            return MANIFEST_ORPHAN;
    }
    return MANIFEST_OK;
}

void
manifest_clear(Manifest *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    *m = (Manifest){0};
}

void
manifest_plan(Manifest *m, const ExtractLimits *lim, ManifestHeldFn held, void *userdata,
              ManifestPlan *ret)
{
    ManifestPlan p = {0};

    for (size_t i = 0; i < m->n; i++) {
        ManifestEntry *e = &m->v[i];
        e->fetch = e->stale = false;
        if (e->type != MANIFEST_FILE)
            continue;
        int h = held(userdata, e);
        uint64_t budget = lim->max_total_bytes - MIN(lim->max_total_bytes, p.held_bytes + p.fetch_bytes);
        if (e->size > lim->max_file_bytes || e->size > budget) {
            p.skipped++; /* the salvage would leave it out too */
            p.truncated = true;
            if (e->size <= lim->max_file_bytes)
                p.stop = EXTRACT_STOP_BYTES;
            continue;
        }
        if (h > 0) {
            p.held_files++;
            p.held_bytes += e->size;
            continue;
        }
        e->fetch = true;
        e->stale = h < 0;
        p.fetch_files++;
        p.fetch_bytes += e->size;
    }
    *ret = p;
}
