/* Unit tests of artifact retention (hostd/sessions/artifacts.c): its choice of what to delete,
 * a pure function, against a table (age, total size, their bounds, sessions still in
 * memory); and its removal job on a real SQLite file: a session folder holding a 4076-byte
 * relative path goes with its records, and a folder that cannot be removed keeps them so the
 * next pass retries (root: the failure is an immutable file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdutil.h"
#include "session_internal.h"
#include "store.h"
#include "testlib.h"

#define ID "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"

typedef struct Fixture {
    char *dir;
    char artifacts[512];
    int artifacts_fd;
    Store *store;
} Fixture;

static int
setup(void **state)
{
    Fixture *f = calloc(1, sizeof(*f));
    char db[600];
    SessionRecord r = {0};
    f->dir = test_mkdtemp("stockade-artifacts");
    snprintf(db, sizeof(db), "%s/stockade.db", f->dir);
    snprintf(f->artifacts, sizeof(f->artifacts), "%s/artifacts", f->dir);
    if (mkdir(f->artifacts, 0700) < 0 || store_open(db, &f->store, NULL) < 0)
        return -1;
    f->artifacts_fd = open(f->artifacts, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snprintf(r.id, sizeof(r.id), "%s", ID);
    snprintf(r.tenant_id, sizeof(r.tenant_id), "t1");
    snprintf(r.kind, sizeof(r.kind), "task");
    snprintf(r.pool, sizeof(r.pool), "python");
    r.state = ST_ENDED;
    r.created_usec = 1;
    r.timeout_usec = 60000000;
    if (store_session_insert(f->store, &r, NULL) < 0)
        return -1;
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    Fixture *f = *state;
    store_close(f->store);
    close(f->artifacts_fd);
    test_rm_rf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* <id>/files/... holding one file at a relative path of exactly 4076 bytes under <id>. */
static void
make_long_folder(Fixture *f)
{
    char rel[sizeof(ID) + 4076 + 1]; /* "<id>/" + 4076 bytes + NUL */
    int n = snprintf(rel, sizeof(rel), "%s/files/", ID);
    memset(rel + n, 'm', sizeof(rel) - 1 - (size_t) n);
    for (size_t i = (size_t) n + 200; i < sizeof(rel) - 2; i += 201)
        rel[i] = '/';
    rel[sizeof(rel) - 1] = '\0';
    assert_int_equal(strlen(rel) - strlen(ID) - 1, 4076);
    assert_int_equal(test_write_at(f->artifacts_fd, rel, "payload", 7), 0);
}

static void
run_removal(Fixture *f)
{
    ArtifactsRemoval *j = calloc(1, sizeof(*j));
    j->store = f->store;
    j->artifacts_dir = f->artifacts;
    snprintf(j->id, sizeof(j->id), "%s", ID);
    artifacts_removal_work(j);
    artifacts_removal_done(j);
}

static bool
record_exists(Fixture *f)
{
    SessionRecord got;
    return store_session_get(f->store, ID, &got, NULL) == 0;
}

static bool
folder_exists(Fixture *f)
{
    struct stat st;
    return fstatat(f->artifacts_fd, ID, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void
test_removal_long_path(void **state)
{
    Fixture *f = *state;
    make_long_folder(f);
    run_removal(f);
    assert_false(folder_exists(f)); /* every byte gone, none orphaned */
    assert_false(record_exists(f));
}

static void
test_removal_failure_keeps_record(void **state)
{
    Fixture *f = *state;
    make_long_folder(f);
    assert_int_equal(test_write_at(f->artifacts_fd, ID "/files/stuck", "s", 1), 0);
    if (test_set_immutable(f->artifacts_fd, ID "/files/stuck", true) < 0)
        test_skip("cannot set FS_IMMUTABLE_FL under %s: %m", f->dir);
    run_removal(f);
    bool kept = record_exists(f), left = folder_exists(f);
    assert_int_equal(test_set_immutable(f->artifacts_fd, ID "/files/stuck", false), 0);
    assert_true(left);
    assert_true(kept); /* the bytes are still there: so is the record that counts them */
    run_removal(f);    /* the next pass */
    assert_false(folder_exists(f));
    assert_false(record_exists(f));
}

/* ------------------------------------------------------------------ the choice */

#define H (3600ull * 1000000)          /* an hour in µs */
#define NOW ((uint64_t) 1000000 * H) /* any wall clock far from 0 */
#define PICK_MAX 4

typedef struct PickRow {
    int64_t ended_ago_usec; /* before NOW; negative: after it (the clock stepped back) */
    uint64_t bytes;
    bool live;
} PickRow;

typedef struct PickCase {
    const char *name;
    uint64_t max_age_usec, max_total_bytes, total_bytes;
    size_t n;
    PickRow rows[PICK_MAX]; /* oldest end first, as the store lists them */
    const char *want;       /* one char per row: 'x' removed, '.' kept */
} PickCase;

static const PickCase pick_cases[] = {
    {"all young, total under the cap: nothing", 2 * H, 100, 30, 3,
     {{H, 10, false}, {H / 2, 10, false}, {1, 10, false}}, "..."},
    {"ended exactly max_age ago is kept, a µs more is removed", 2 * H, 100, 20, 2,
     {{2 * H + 1, 10, false}, {2 * H, 10, false}}, "x."},
    {"the old ones go, the walk stops at the first young one", 2 * H, 100, 40, 4,
     {{9 * H, 10, false}, {3 * H, 10, false}, {H, 10, false}, {1, 10, false}}, "xx.."},
    {"over the total: oldest first until it fits", 100 * H, 6, 10, 3,
     {{3 * H, 3, false}, {2 * H, 3, false}, {H, 4, false}}, "xx."},
    {"a total exactly at the cap fits", 100 * H, 10, 10, 2, {{3 * H, 5, false}, {H, 5, false}},
     ".."},
    {"age and size together: old by age, then young by size", 2 * H, 6, 11, 3,
     {{5 * H, 1, false}, {H, 5, false}, {1, 5, false}}, "xx."},
    {"one still in memory is kept and its bytes still count", 100 * H, 6, 10, 3,
     {{3 * H, 4, true}, {2 * H, 3, false}, {H, 3, false}}, ".xx"},
    {"a record claiming more than the total clamps it to 0", 100 * H, 6, 10, 2,
     {{3 * H, 50, false}, {H, 5, false}}, "x."},
    {"ended after now (clock stepped back): not old", 2 * H, 100, 10, 1, {{-(int64_t) H, 10, false}},
     "."},
    {"the longest age the type can hold never wraps around to 'old'", UINT64_MAX, 100, 10, 1,
     {{9 * H, 10, false}}, "."},
    {"nothing listed", 2 * H, 0, 0, 0, {{0, 0, false}}, ""},
};

static void
test_retention_pick_table(void **state)
{
    (void) state;
    for (size_t k = 0; k < ELEMENTSOF(pick_cases); k++) {
        const PickCase *pc = &pick_cases[k];
        SessionsConfig c = {.artifact_max_age_usec = pc->max_age_usec,
                            .artifact_max_total_bytes = pc->max_total_bytes};
        SessionRecord v[PICK_MAX] = {0};
        bool live[PICK_MAX], remove[PICK_MAX];
        char got[PICK_MAX + 1] = "";
        size_t want_n = 0;
        for (size_t i = 0; i < pc->n; i++) {
            v[i].ended_usec = (int64_t) NOW - pc->rows[i].ended_ago_usec;
            v[i].artifact_bytes = pc->rows[i].bytes;
            live[i] = pc->rows[i].live;
            remove[i] = !live[i]; /* garbage the function must overwrite */
        }
        size_t picked = artifacts_retention_pick(&c, NOW, pc->total_bytes, v, live, pc->n, remove);
        for (size_t i = 0; i < pc->n; i++) {
            got[i] = remove[i] ? 'x' : '.';
            want_n += pc->want[i] == 'x';
        }
        got[pc->n] = '\0';
        if (strcmp(got, pc->want) != 0 || picked != want_n)
            fail_msg("%s: removed \"%s\" (%zu), want \"%s\"", pc->name, got, picked, pc->want);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retention_pick_table),
        cmocka_unit_test_setup_teardown(test_removal_long_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removal_failure_keeps_record, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
