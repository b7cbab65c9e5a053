/* Unit tests of rm_rf_at() (hostd/base/rmtree.c) on a scratch directory: paths longer than
 * PATH_MAX, a tree deeper than any recursion should go, symlinks left unfollowed, the depth
 * cap, and a failure that stops the walk and is reported (an immutable file; root only). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdutil.h"
#include "macro.h"
#include "testlib.h"

/* A relative path of exactly len bytes: 200-byte components, then a shorter last one. */
static char *
long_rel(size_t len, char fill)
{
    char *p = malloc(len + 1);
    assert_non_null(p);
    memset(p, fill, len);
    for (size_t i = 200; i < len - 1; i += 201)
        p[i] = '/';
    p[len] = '\0';
    return p;
}

/* "d/d/.../d": levels directories nested. */
static char *
chain_rel(size_t levels)
{
    char *p = malloc(2 * levels);
    assert_non_null(p);
    for (size_t i = 0; i < levels; i++) {
        p[2 * i] = 'd';
        p[2 * i + 1] = '/';
    }
    p[2 * levels - 1] = '\0';
    return p;
}

static bool
exists_at(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void
test_rm_long_path(void **state)
{
    (void) state;
    _cleanup_free_ char *root = test_mkdtemp("stockade-rmtree");
    _cleanup_free_ char *rel = long_rel(4076, 'a');
    char top[PATH_MAX];
    snprintf(top, sizeof(top), "%s/ses", root);
    _cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(rfd >= 0);
    _cleanup_free_ char *in_ses = NULL;
    assert_true(asprintf(&in_ses, "ses/files/%s", rel) > 0);
    assert_int_equal(test_write_at(rfd, in_ses, "x", 1), 0);
    assert_true(strlen(top) + 1 + strlen(in_ses) > PATH_MAX); /* remove() on it would fail */
    assert_int_equal(rm_rf(top), 0);
    assert_false(exists_at(rfd, "ses"));
    assert_int_equal(rm_rf(top), 0); /* already gone: fine */
    assert_int_equal(rm_rf(root), 0);
}

static void
test_rm_deep_tree(void **state)
{
    (void) state;
    _cleanup_free_ char *root = test_mkdtemp("stockade-rmtree");
    _cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *rel = chain_rel(3000); /* "d/d/d/...": 6000 bytes */
    int leaf = test_mkdirs_at(rfd, rel, strlen(rel));
    assert_true(leaf >= 0);
    assert_int_equal(test_write_at(leaf, "f", "y", 1), 0);
    close(leaf);
    /* siblings: the walk climbs back and enters another subdirectory of the same parent */
    assert_int_equal(test_write_at(rfd, "d/d/e1/f", "1", 1), 0);
    assert_int_equal(test_write_at(rfd, "d/d/e2/g/f", "2", 1), 0);
    assert_int_equal(test_write_at(rfd, "d/e3/f", "3", 1), 0);
    assert_int_equal(rm_rf_at(rfd, "d"), 0);
    assert_false(exists_at(rfd, "d"));
    assert_int_equal(rm_rf(root), 0);
}

static void
test_rm_depth_cap(void **state)
{
    (void) state;
    _cleanup_free_ char *root = test_mkdtemp("stockade-rmtree");
    _cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *rel = chain_rel(RM_RF_MAX_DEPTH + 2);
    int leaf = test_mkdirs_at(rfd, rel, strlen(rel));
    assert_true(leaf >= 0);
    close(leaf);
    errno = 0;
    assert_int_equal(rm_rf_at(rfd, "d"), -1);
    assert_int_equal(errno, ELOOP);
    assert_true(exists_at(rfd, "d"));
    int mid = test_mkdirs_at(rfd, rel, 2 * 100 - 1); /* cut the tree below the cap */
    assert_true(mid >= 0);
    assert_int_equal(rm_rf_at(mid, "d"), 0);
    close(mid);
    assert_int_equal(rm_rf(root), 0);
}

static void
test_rm_symlinks_not_followed(void **state)
{
    (void) state;
    _cleanup_free_ char *root = test_mkdtemp("stockade-rmtree");
    _cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char abs_out[PATH_MAX];
    snprintf(abs_out, sizeof(abs_out), "%s/outside", root);
    assert_int_equal(test_write_at(rfd, "outside/keep.txt", "k", 1), 0);
    assert_int_equal(test_write_at(rfd, "tree/sub/f", "f", 1), 0);
    assert_int_equal(symlinkat("../outside", rfd, "tree/rel"), 0);
    assert_int_equal(symlinkat(abs_out, rfd, "tree/sub/abs"), 0);
    assert_int_equal(symlinkat("../outside/keep.txt", rfd, "tree/file"), 0);
    assert_int_equal(rm_rf_at(rfd, "tree"), 0);
    assert_false(exists_at(rfd, "tree"));
    assert_true(exists_at(rfd, "outside/keep.txt"));
    /* a symlink given as the top is removed itself, its target kept */
    assert_int_equal(symlinkat("outside", rfd, "top"), 0);
    assert_int_equal(rm_rf_at(rfd, "top"), 0);
    assert_false(exists_at(rfd, "top"));
    assert_true(exists_at(rfd, "outside/keep.txt"));
    assert_int_equal(rm_rf(root), 0);
}

/* Last: skips the whole binary where the immutable flag cannot be set (not root). */
static void
test_rm_failure_reported(void **state)
{
    (void) state;
    _cleanup_free_ char *root = test_mkdtemp("stockade-rmtree");
    _cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *rel = long_rel(4076, 'b');
    _cleanup_free_ char *in_tree = NULL;
    assert_true(asprintf(&in_tree, "tree/%s", rel) > 0);
    assert_int_equal(test_write_at(rfd, in_tree, "x", 1), 0);
    assert_int_equal(test_write_at(rfd, "tree/stuck", "s", 1), 0);
    if (test_set_immutable(rfd, "tree/stuck", true) < 0) {
        test_rm_rf(root);
        test_skip("cannot set FS_IMMUTABLE_FL on %s: %m", root);
    }
    errno = 0;
    int r = rm_rf_at(rfd, "tree");
    int e = errno;
    assert_int_equal(test_set_immutable(rfd, "tree/stuck", false), 0);
    assert_int_equal(r, -1);
    assert_int_equal(e, EPERM);
    assert_true(exists_at(rfd, "tree/stuck"));
    assert_int_equal(rm_rf_at(rfd, "tree"), 0);
    assert_int_equal(rm_rf(root), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rm_long_path),
        cmocka_unit_test(test_rm_deep_tree),
        cmocka_unit_test(test_rm_depth_cap),
        cmocka_unit_test(test_rm_symlinks_not_followed),
        cmocka_unit_test(test_rm_failure_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
