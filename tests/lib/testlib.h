/* Shared test helpers. The one place that decides what a skip means: exit 77 (ctest SKIPPED)
 * normally, a failure when STOCKADE_MUST_WORK=1 (set by CI) so nothing silently skips there. */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define TEST_EXIT_SKIP 77

/* Prints why, then exits 77, or 1 under STOCKADE_MUST_WORK=1. */
__attribute__((noreturn, format(printf, 1, 2))) void test_skip(const char *fmt, ...);
bool test_must_work(void);
/* A fresh private directory under $TMPDIR (or /tmp); the caller frees the string. */
char *test_mkdtemp(const char *prefix);
/* Fails the test with a message (file:line, the condition, a printf-style reason) and runs
 * cleanup() first if the test defines one via TEST_CLEANUP before including this. For
 * scenario programs; cmocka tests use its own asserts. */
#ifndef TEST_CLEANUP
#define TEST_CLEANUP() ((void) 0)
#endif
#define TEST_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                       \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            TEST_CLEANUP();                                                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A store test's scratch: a fresh directory and the path of a database file in it, made by
 * test_db_setup() and removed by test_db_teardown() (cmocka setup/teardown signatures). */
extern char test_db[512];
int test_db_setup(void **state);
int test_db_teardown(void **state);
/* rm -rf of a test's own scratch directory. */
int test_rm_rf(const char *path);
/* mkdir -p of the first len bytes of rel beneath dirfd, one component at a time through
 * directory fds (so rel may be longer than PATH_MAX); returns the last directory's fd, or
 * -1 with errno. Symlinks are not followed. */
int test_mkdirs_at(int dirfd, const char *rel, size_t len);
/* Creates (or truncates) the file rel beneath dirfd with data, making its parents as
 * test_mkdirs_at() does. 0, or -1 with errno. */
int test_write_at(int dirfd, const char *rel, const void *data, size_t len);
/* Sets or clears FS_IMMUTABLE_FL on name beneath dirfd (a removal that must fail: even root
 * cannot unlink it). 0, or -1 with errno (not root, or a filesystem without the flag). */
int test_set_immutable(int dirfd, const char *name, bool on);
