/* Unit tests of the finalize manifest checks and fetch plan (hostd/extract/manifest.h): what a
 * lying runner can claim at a clean end, as a table, plus the plan against a fake mirror. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "manifest_check.h"

#define DISK (128ull << 20)

static const ManifestCaps caps = {.max_entries = 8, .max_path_bytes = 64, .max_depth = 4,
                                  .max_path_bytes_total = 256, .disk_bytes = DISK};

typedef struct Row {
    const char *path;
    int type;
    uint64_t size;
} Row;

typedef struct Case {
    const char *what;
    Row rows[12];
    ManifestVerdict add;    /* verdict of the first refused entry, or OK */
    ManifestVerdict finish; /* when every add passed */
    int64_t total_delta;    /* added to the true entry count in the totals */
} Case;

#define F(p, n) {p, MANIFEST_FILE, n}
#define D(p) {p, MANIFEST_DIR, 0}

static const Case cases[] = {
    {"honest", {D("a"), F("a/x", 5), F("b", 0), D("a/e")}, MANIFEST_OK, MANIFEST_OK, 0},
    {"dotdot", {F("../etc/passwd", 1)}, MANIFEST_BAD_PATH, 0, 0},
    {"inner dotdot", {D("a"), F("a/../../x", 1)}, MANIFEST_BAD_PATH, 0, 0},
    {"absolute", {F("/etc/passwd", 1)}, MANIFEST_BAD_PATH, 0, 0},
    {"not normalised", {F("a//b", 1)}, MANIFEST_BAD_PATH, 0, 0},
    {"dot", {F("./b", 1)}, MANIFEST_BAD_PATH, 0, 0},
    {"trailing slash", {F("b/", 1)}, MANIFEST_BAD_PATH, 0, 0},
    {"empty", {F("", 1)}, MANIFEST_BAD_PATH, 0, 0},
    {"over path bytes",
     {F("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1)},
     MANIFEST_OVER_CAPS, 0, 0},
    {"over depth", {D("a"), D("a/b"), D("a/b/c"), D("a/b/c/d"), F("a/b/c/d/e", 1)},
     MANIFEST_OVER_CAPS, 0, 0},
    {"symlink type", {{"l", 3, 0}}, MANIFEST_BAD_TYPE, 0, 0},
    {"dir with a size", {{"d", MANIFEST_DIR, 7}}, MANIFEST_BAD_TYPE, 0, 0},
    {"larger than the disk", {F("big", DISK + 1)}, MANIFEST_OVER_DISK, 0, 0},
    {"sum larger than the disk", {F("a", DISK / 2 + 1), F("b", DISK / 2)}, MANIFEST_OVER_DISK,
     0, 0},
    {"too many",
     {F("a", 1), F("b", 1), F("c", 1), F("d", 1), F("e", 1), F("f", 1), F("g", 1), F("h", 1),
      F("i", 1)},
     MANIFEST_TOO_MANY, 0, 0},
    {"duplicate", {F("a", 1), F("a", 2)}, MANIFEST_OK, MANIFEST_DUPLICATE, 0},
    {"file then dir", {F("a", 1), D("a")}, MANIFEST_OK, MANIFEST_DUPLICATE, 0},
    {"under a file", {F("a", 1), F("a/b", 1)}, MANIFEST_OK, MANIFEST_ORPHAN, 0},
    {"parent missing", {F("x/y", 1)}, MANIFEST_OK, MANIFEST_ORPHAN, 0},
    {"totals lie", {F("a", 1)}, MANIFEST_OK, MANIFEST_TOTALS, 1},
};

static void
test_manifest_table(void **state)
{
    (void) state;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const Case *k = &cases[c];
        Manifest m = {0};
        ManifestVerdict v = MANIFEST_OK;
        uint64_t bytes = 0;
        size_t n = 0;
        for (; n < 12 && k->rows[n].path && v == MANIFEST_OK; n++) {
            v = manifest_add(&m, &caps, k->rows[n].path, k->rows[n].type, k->rows[n].size, 1, 0644);
            bytes += k->rows[n].size;
        }
        if (v != k->add)
            fail_msg("%s: add gave %s, want %s", k->what, manifest_verdict_name(v),
                     manifest_verdict_name(k->add));
        if (v == MANIFEST_OK) {
            v = manifest_finish(&m, (uint64_t) ((int64_t) m.n + k->total_delta), bytes);
            if (v != k->finish)
                fail_msg("%s: finish gave %s, want %s", k->what, manifest_verdict_name(v),
                         manifest_verdict_name(k->finish));
        }
        manifest_clear(&m);
    }
}

/* A path with a NUL inside reaches the host as its prefix: two such entries are duplicates. */
static void
test_manifest_nul_prefix(void **state)
{
    (void) state;
    Manifest m = {0};
    assert_int_equal(manifest_add(&m, &caps, "a\0../x" + 0, MANIFEST_FILE, 1, 1, 0644), MANIFEST_OK);
    assert_int_equal(manifest_add(&m, &caps, "a", MANIFEST_FILE, 1, 1, 0644), MANIFEST_OK);
    assert_int_equal(manifest_finish(&m, 2, 2), MANIFEST_DUPLICATE);
    manifest_clear(&m);
}

/* The mirror holds "held" as listed and "stale" older; the rest must be fetched, within caps. */
static int
fake_held(void *userdata, const ManifestEntry *e)
{
    (void) userdata;
    return strcmp(e->path, "held") == 0 ? 1 : strcmp(e->path, "stale") == 0 ? -1 : 0;
}

static void
test_manifest_plan(void **state)
{
    (void) state;
    Manifest m = {0};
    ExtractLimits lim = {.max_total_bytes = 70, .max_file_bytes = 50, .max_files = 10};
    const Row rows[] = {F("held", 30), F("stale", 20), F("new", 10), F("huge", 60),
                        F("over", 45), D("d")};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        assert_int_equal(manifest_add(&m, &caps, rows[i].path, rows[i].type, rows[i].size, 1, 0644),
                         MANIFEST_OK);
    assert_int_equal(manifest_finish(&m, 6, 165), MANIFEST_OK);
    ManifestPlan p;
    manifest_plan(&m, &lim, fake_held, NULL, &p);
    /* sorted: d held huge new over stale */
    assert_int_equal(p.held_files, 1);
    assert_int_equal(p.fetch_files, 2); /* new, stale */
    assert_int_equal(p.fetch_bytes, 30);
    assert_int_equal(p.skipped, 2);     /* huge over the file cap; over past the total */
    assert_true(p.truncated);
    assert_int_equal(p.stop, EXTRACT_STOP_BYTES);
    for (size_t i = 0; i < m.n; i++) {
        bool want = strcmp(m.v[i].path, "new") == 0 || strcmp(m.v[i].path, "stale") == 0;
        assert_int_equal(m.v[i].fetch, want);
        assert_int_equal(m.v[i].stale, strcmp(m.v[i].path, "stale") == 0);
    }
    manifest_clear(&m);
}

/* A million entries stop at the cap without holding more than it. */
static void
test_manifest_million(void **state)
{
    (void) state;
    Manifest m = {0};
    ManifestCaps big = caps;
    big.max_entries = 1000;
    big.max_path_bytes_total = 1u << 20;
    char name[32];
    ManifestVerdict v = MANIFEST_OK;
    size_t i = 0;
    for (; i < 1000000 && v == MANIFEST_OK; i++) {
        snprintf(name, sizeof(name), "f%zu", i);
        v = manifest_add(&m, &big, name, MANIFEST_FILE, 1, 1, 0644);
    }
    assert_int_equal(v, MANIFEST_TOO_MANY);
    assert_int_equal(m.n, 1000);
    assert_int_equal(i, 1001);
    manifest_clear(&m);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_table),
        cmocka_unit_test(test_manifest_nul_prefix),
        cmocka_unit_test(test_manifest_plan),
        cmocka_unit_test(test_manifest_million),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
