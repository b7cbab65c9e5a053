/* Unit tests of artifact retention's removal job (hostd/sessions/artifacts.c) on a real
 * SQLite file: a session folder holding a 4076-byte relative path goes with its records, and
 * a folder that cannot be removed keeps them so the next pass retries (root: the failure is
 * an immutable file). */
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
    snprintf(r.state, sizeof(r.state), "ended");
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_removal_long_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removal_failure_keeps_record, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
