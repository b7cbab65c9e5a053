/* Unit tests of hostd/base/owndir.c (issue 25): the trust verdicts (pure, table-driven), then
 * owndir_open() on a scratch tree: a folder it makes gets exactly its mode; a folder another
 * user made (root only: chown 65534), a symlink in the folder's place, another user's symlink
 * on the way, a folder on the way others can write (not sticky) and a file in the folder's
 * place are each refused, left as they were, and the refusal names the owner and mode. */
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
#include "macro.h"
#include "owndir.h"
#include "testlib.h"

#define NOBODY_UID 65534

static struct stat
st_of(mode_t mode, uid_t uid)
{
    return (struct stat){.st_mode = mode, .st_uid = uid};
}

static void
test_trust_verdicts(void **state)
{
    (void) state;
    static const struct {
        mode_t mode;
        uid_t uid, euid;
        DirTrust own, parent;
    } cases[] = {
        {S_IFDIR | 0711, 0, 0, DIR_TRUST_OK, DIR_TRUST_OK},
        {S_IFDIR | 0700, 1000, 1000, DIR_TRUST_OK, DIR_TRUST_OK},
        {S_IFDIR | 0755, 0, 1000, DIR_TRUST_FOREIGN, DIR_TRUST_OK}, /* root's, on the way */
        {S_IFDIR | 0711, NOBODY_UID, 0, DIR_TRUST_FOREIGN, DIR_TRUST_FOREIGN},
        {S_IFDIR | 0777, NOBODY_UID, 0, DIR_TRUST_FOREIGN, DIR_TRUST_FOREIGN},
        {S_IFDIR | 0775, 0, 0, DIR_TRUST_WRITABLE, DIR_TRUST_WRITABLE},
        {S_IFDIR | 0757, 0, 0, DIR_TRUST_WRITABLE, DIR_TRUST_WRITABLE},
        {S_IFDIR | 01777, 0, 0, DIR_TRUST_WRITABLE, DIR_TRUST_OK}, /* /tmp, /dev/shm */
        {S_IFLNK | 0777, 0, 0, DIR_TRUST_NOT_DIR, DIR_TRUST_NOT_DIR},
        {S_IFREG | 0600, 0, 0, DIR_TRUST_NOT_DIR, DIR_TRUST_NOT_DIR},
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        struct stat st = st_of(cases[i].mode, cases[i].uid);
        assert_int_equal(dir_trust_own(&st, cases[i].euid), cases[i].own);
        assert_int_equal(dir_trust_parent(&st, cases[i].euid), cases[i].parent);
    }
    struct stat link = st_of(S_IFLNK | 0777, NOBODY_UID);
    assert_int_equal(dir_trust_symlink(&link, 0), DIR_TRUST_FOREIGN);
    link.st_uid = 0;
    assert_int_equal(dir_trust_symlink(&link, 1000), DIR_TRUST_OK);
}

/* A scratch folder of ours, 0711, under /tmp (root's, sticky). */
static char *
scratch(void)
{
    char *root = test_mkdtemp("stockade-owndir");
    assert_non_null(root);
    assert_int_equal(chmod(root, 0711), 0);
    return root;
}

static char *
join(const char *a, const char *b)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", a, b) > 0);
    return p;
}

static mode_t
mode_of(const char *path, uid_t *ret_uid)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    if (ret_uid)
        *ret_uid = st.st_uid;
    return st.st_mode & 07777;
}

/* owndir_open() must refuse path (E_CONFLICT) with a message holding `want`. */
static void
assert_refused(const char *path, unsigned flags, const char *want)
{
    Error *err = NULL;
    int fd = -1;
    assert_int_equal(owndir_open(path, 0711, flags, &fd, &err), -1);
    assert_int_equal(fd, -1);
    assert_non_null(err);
    if (!strstr(err->message, want))
        fail_msg("refusal of %s says \"%s\", not \"%s\"", path, err->message, want);
    assert_int_equal(err->category, E_CONFLICT);
    error_free(err);
}

static void
test_makes_exact_mode(void **state)
{
    (void) state;
    _cleanup_free_ char *root = scratch(), *a = join(root, "a");
    Error *err = NULL;
    int fd = -1;
    mode_t old = umask(077); /* mkdir alone would make 0700 */
    assert_int_equal(owndir_open(a, 0711, OWNDIR_CREATE, &fd, &err), 0);
    umask(old);
    assert_null(err);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(mode_of(a, NULL), 0711);
    /* an existing one of ours: kept as it is, or set with OWNDIR_SET_MODE */
    assert_int_equal(chmod(a, 0700), 0);
    assert_int_equal(owndir_open(a, 0711, OWNDIR_CREATE, &fd, &err), 0);
    close(fd);
    assert_int_equal(mode_of(a, NULL), 0700);
    assert_int_equal(owndir_open(a, 0711, OWNDIR_CREATE | OWNDIR_SET_MODE, &fd, &err), 0);
    close(fd);
    assert_int_equal(mode_of(a, NULL), 0711);
    assert_int_equal(test_rm_rf(root), 0);
}

/* A symlink in the folder's place, even to a folder of ours: refused (a name others can
 * predict); an operator's own symlink is followed only with OWNDIR_FOLLOW_LAST. A file in its
 * place: refused. A folder of ours that group or others can write: refused, mode kept. */
static void
test_refuses_symlink_file_writable(void **state)
{
    (void) state;
    _cleanup_free_ char *root = scratch(), *a = join(root, "a"), *l = join(root, "l");
    _cleanup_free_ char *f = join(root, "f"), *w = join(root, "w");
    Error *err = NULL;
    int fd = -1;
    assert_int_equal(mkdir(a, 0711), 0);
    assert_int_equal(symlink(a, l), 0);
    assert_refused(l, OWNDIR_CREATE | OWNDIR_SET_MODE, "is a symlink (uid");
    assert_int_equal(owndir_open(l, 0711, OWNDIR_CREATE | OWNDIR_FOLLOW_LAST, &fd, &err), 0);
    close(fd);
    assert_int_equal(close(open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
    assert_refused(f, OWNDIR_CREATE, "is a file (uid");
    assert_int_equal(mkdir(w, 0700), 0);
    assert_int_equal(chmod(w, 0770), 0);
    assert_refused(w, OWNDIR_CREATE | OWNDIR_SET_MODE, "writable by other users");
    assert_int_equal(mode_of(w, NULL), 0770);
    assert_int_equal(test_rm_rf(root), 0);
}

/* A folder on the way that others can write: refused unless sticky. */
static void
test_refuses_writable_parent(void **state)
{
    (void) state;
    _cleanup_free_ char *root = scratch(), *open_dir = join(root, "open");
    _cleanup_free_ char *x = join(open_dir, "x");
    Error *err = NULL;
    int fd = -1;
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    assert_refused(x, OWNDIR_CREATE, "writable by other users");
    assert_int_equal(access(x, F_OK), -1); /* nothing made there */
    assert_int_equal(chmod(open_dir, 01777), 0);
    assert_int_equal(owndir_open(x, 0711, OWNDIR_CREATE, &fd, &err), 0);
    close(fd);
    assert_int_equal(test_rm_rf(root), 0);
}

/* Root only (chown): another user's folder in the name, another user's symlink on the way. */
static void
test_refuses_foreign(void **state)
{
    (void) state;
    if (geteuid() != 0)
        skip();
    _cleanup_free_ char *root = scratch(), *squat = join(root, "squat");
    _cleanup_free_ char *theirs = join(root, "theirs"), *via = join(root, "via");
    _cleanup_free_ char *via_x = join(via, "x"), *planted = join(squat, "python.state");
    uid_t uid;
    assert_int_equal(mkdir(squat, 0700), 0);
    assert_int_equal(chmod(squat, 0711), 0);
    assert_int_equal(close(open(planted, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
    assert_int_equal(chown(planted, NOBODY_UID, NOBODY_UID), 0);
    assert_int_equal(chown(squat, NOBODY_UID, NOBODY_UID), 0);
    assert_refused(squat, OWNDIR_CREATE | OWNDIR_SET_MODE | OWNDIR_FOLLOW_LAST,
                   "(a folder, mode 0711) is owned by uid 65534");
    assert_int_equal(mode_of(squat, &uid), 0711); /* neither chmod-ed nor chown-ed */
    assert_int_equal(uid, NOBODY_UID);
    assert_int_equal(access(planted, F_OK), 0);

    /* root's folder, reached through a symlink that user owns (they could repoint it) */
    assert_int_equal(mkdir(theirs, 0711), 0);
    assert_int_equal(symlink(theirs, via), 0);
    assert_int_equal(lchown(via, NOBODY_UID, NOBODY_UID), 0);
    assert_refused(via_x, OWNDIR_CREATE, "via (a symlink, mode 0777) is owned by uid 65534");
    assert_int_equal(access(via_x, F_OK), -1);
    assert_int_equal(test_rm_rf(root), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trust_verdicts),
        cmocka_unit_test(test_makes_exact_mode),
        cmocka_unit_test(test_refuses_symlink_file_writable),
        cmocka_unit_test(test_refuses_writable_parent),
        cmocka_unit_test(test_refuses_foreign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
