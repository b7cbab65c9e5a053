/* Fuzz target: the host's side of a finalize's manifest, as a lying runner would send it.
 * Input: frames (u32 BE length + a GuestMsg payload); each is decoded and checked by proto/
 * (msg_decode_guest), and the entries of a Manifest go to hostd/extract/manifest.h exactly as
 * session_finalize.c feeds them; the last frame finishes and plans (the "mirror" holds a file
 * when its path hashes even). Invariants, not just "no crash":
 *  - a manifest judged OK holds at most max_entries entries, sorted, unique, each a relative
 *    normalised path (no "..", no leading '/', no empty component) within the caps, whose
 *    parent is listed as a directory, with file sizes summing to no more than the disk;
 *  - the plan fetches only files, each within max_file_bytes, and held + fetched bytes stay
 *    within max_total_bytes. */
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "manifest_check.h"
#include "message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ManifestCaps caps = {.max_entries = 64, .max_path_bytes = 96, .max_depth = 6,
                                  .max_path_bytes_total = 2048, .disk_bytes = 1u << 20};
static const ExtractLimits lim = {.max_total_bytes = 1u << 19, .max_file_bytes = 1u << 18,
                                  .max_files = 64, .max_depth = 6, .max_name_bytes = 96};

static int
held(void *userdata, const ManifestEntry *e)
{
    (void) userdata;
    unsigned h = 0;
    for (const char *p = e->path; *p; p++)
        h = h * 31u + (unsigned char) *p;
    return (h % 3) == 0 ? 1 : (h % 3) == 1 ? 0 : -1;
}

static void
check_ok(Manifest *m)
{
    uint64_t sum = 0, fetch = 0, kept = 0;
    ManifestPlan p;

    CHECK(m->n <= caps.max_entries);
    for (size_t i = 0; i < m->n; i++) {
        const char *s = m->v[i].path;
        size_t len = strlen(s);
        CHECK(len > 0 && len <= caps.max_path_bytes && s[0] != '/' && s[len - 1] != '/');
        CHECK(!strstr(s, "//") && strcmp(s, "..") != 0 && strncmp(s, "../", 3) != 0);
        CHECK(!strstr(s, "/../") && !(len >= 3 && strcmp(s + len - 3, "/..") == 0));
        CHECK(i == 0 || strcmp(m->v[i - 1].path, s) < 0);
        sum += m->v[i].size;
    }
    CHECK(sum <= caps.disk_bytes);
    manifest_plan(m, &lim, held, NULL, &p);
    for (size_t i = 0; i < m->n; i++) {
        if (!m->v[i].fetch)
            continue;
        CHECK(m->v[i].type == MANIFEST_FILE && m->v[i].size <= lim.max_file_bytes);
        fetch += m->v[i].size;
    }
    kept = p.held_bytes;
    CHECK(fetch == p.fetch_bytes && fetch + kept <= lim.max_total_bytes);
}

/* Feeds one manifest frame; returns false once the manifest is judged (or refused). */
static bool
feed(Manifest *m, const Stockade__Runner__Manifest *mf)
{
    for (size_t i = 0; i < mf->n_entries; i++) {
        const Stockade__Runner__ManifestEntry *e = mf->entries[i];
        if (manifest_add(m, &caps, e->path, (int) e->type, e->size, e->mtime_ns, e->mode) !=
            MANIFEST_OK)
            return false;
    }
    if (!mf->last)
        return true;
    if (manifest_finish(m, mf->total_entries, mf->total_file_bytes) == MANIFEST_OK)
        check_ok(m);
    return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[160];
    Manifest m = {0};
    bool going = true;

    while (going && size >= 4) {
        uint32_t len = (uint32_t) data[0] << 24 | (uint32_t) data[1] << 16 |
                       (uint32_t) data[2] << 8 | data[3];
        data += 4;
        size -= 4;
        if (len > size || len > FRAME_MAX_BYTES)
            break;
        GuestMsg *g = msg_decode_guest(data, len, why, sizeof(why));
        data += len;
        size -= len;
        if (!g)
            continue; /* the daemon drops the guest here; go on to exercise more */
        if (g->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_MANIFEST)
            going = feed(&m, g->manifest);
        msg_free_guest(g);
    }
    manifest_clear(&m);
    return 0;
}
