/* Unit tests of the CLI's file handling (tools/download.c, tools/upload.c): the workspace tar
 * from the daemon is hostile, so download_untar_fd() gets archives with symlinks, hard links,
 * devices, FIFOs, absolute and `..` names, setuid modes and a symlink-then-file trick, and
 * each test asserts what is on disk afterwards. Uploads: folders walked with relative paths,
 * symlinks never followed, caps refused with a clear message. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "download.h"
#include "tarbuild.h"
#include "testlib.h"
#include "upload.h"

/* Extracts t into a fresh directory; returns the directory (caller frees) and the result. */
static char *
extract(TarBuf *t, DownloadResult *res, int *ret_r)
{
    char *dir = test_mkdtemp("cli-untar");
    char path[4096];
    int fd = tb_memfd(t);
    assert_true(fd >= 0);
    snprintf(path, sizeof(path), "%s/out", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    Error *err = NULL;
    *ret_r = download_untar_fd(fd, dfd, res, &err);
    error_free(err);
    close(dfd);
    close(fd);
    tb_free(t);
    return dir;
}

static bool
exists(const char *dir, const char *rel)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof(p), "%s/out/%s", dir, rel);
    return lstat(p, &st) == 0;
}

static mode_t
mode_of(const char *dir, const char *rel)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof(p), "%s/out/%s", dir, rel);
    assert_int_equal(lstat(p, &st), 0);
    return st.st_mode;
}

static void
test_untar_regular(void **state)
{
    (void) state;
    TarBuf t = {0};
    DownloadResult res;
    int r;
    tb_header(&t, "d/", '5', 0755, 0, NULL, false);
    tb_text(&t, "d/a.txt", 0644, "hello\n");
    tb_text(&t, "b.sh", 0755, "#!/bin/sh\n");
    tb_end(&t);
    char *dir = extract(&t, &res, &r);
    assert_int_equal(r, 0);
    assert_int_equal(res.files, 2);
    assert_int_equal(res.skipped, 0);
    assert_false(res.truncated);
    assert_true(S_ISREG(mode_of(dir, "d/a.txt")));
    assert_int_equal(mode_of(dir, "b.sh") & 07777, 0744); /* group/other x dropped */
    test_rm_rf(dir);
    free(dir);
}

static void
test_untar_hostile(void **state)
{
    (void) state;
    TarBuf t = {0};
    DownloadResult res;
    int r;
    tb_header(&t, "link", '2', 0777, 0, "/etc/passwd", false); /* symlink */
    tb_header(&t, "hard", '1', 0644, 0, "/etc/shadow", false); /* hard link */
    tb_header(&t, "dev", '3', 0666, 0, NULL, false);           /* char device */
    tb_header(&t, "fifo", '6', 0666, 0, NULL, false);          /* FIFO */
    tb_text(&t, "/abs.txt", 0644, "abs\n");             /* absolute */
    tb_text(&t, "../up.txt", 0644, "up\n");             /* .. */
    tb_text(&t, "a/../../up2.txt", 0644, "up\n");       /* .. inside */
    tb_text(&t, "suid", 04755, "x");                    /* setuid */
    tb_header(&t, "ln", '2', 0777, 0, "/tmp", false);          /* symlink to a directory, */
    tb_text(&t, "ln/escaped.txt", 0644, "escaped\n");   /* then a file "through" it */
    tb_text(&t, "ok.txt", 0644, "ok\n");
    tb_end(&t);
    char *dir = extract(&t, &res, &r);
    assert_int_equal(r, 0);
    assert_false(exists(dir, "link"));
    assert_false(exists(dir, "hard"));
    assert_false(exists(dir, "dev"));
    assert_false(exists(dir, "fifo"));
    assert_false(exists(dir, "abs.txt"));
    assert_false(exists(dir, "../up.txt"));
    assert_false(exists(dir, "../up2.txt"));
    assert_true(S_ISDIR(mode_of(dir, "ln"))); /* made as a plain directory, not the link */
    assert_true(exists(dir, "ln/escaped.txt"));
    assert_false(access("/tmp/escaped.txt", F_OK) == 0);
    assert_true(exists(dir, "ok.txt"));
    assert_int_equal(mode_of(dir, "suid") & 07000, 0);
    assert_true(res.skipped >= 7);
    test_rm_rf(dir);
    free(dir);
}

static void
test_untar_malformed(void **state)
{
    (void) state;
    TarBuf t = {0};
    DownloadResult res;
    int r;
    tb_text(&t, "whole.txt", 0644, "whole\n");
    tb_header(&t, "cut.txt", '0', 0644, 100000, NULL, false); /* announces more than comes */
    tb_put(&t, "short", 5);
    char *dir = extract(&t, &res, &r);
    assert_int_equal(r, 0); /* hostile content never fails the call */
    assert_true(res.truncated);
    assert_string_equal(res.stop, "malformed");
    assert_true(exists(dir, "whole.txt"));
    assert_false(exists(dir, "cut.txt")); /* a file cut short is removed */
    test_rm_rf(dir);
    free(dir);
}

static void
test_dir_check(void **state)
{
    (void) state;
    char *dir = test_mkdtemp("cli-dir");
    char p[4096], q[4096];
    Error *err = NULL;
    snprintf(p, sizeof(p), "%s/new", dir);
    assert_int_equal(download_dir_check(p, &err), 0); /* absent: fine */
    mkdir(p, 0755);
    assert_int_equal(download_dir_check(p, &err), 0); /* empty: fine */
    snprintf(q, sizeof(q), "%s/new/x", dir);
    close(open(q, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    assert_int_equal(download_dir_check(p, &err), -1);
    assert_non_null(strstr(err->message, "not empty"));
    error_free(err);
    err = NULL;
    snprintf(q, sizeof(q), "%s/sym", dir);
    assert_int_equal(symlink("/tmp", q), 0);
    assert_int_equal(download_dir_check(q, &err), -1);
    assert_non_null(strstr(err->message, "symlink"));
    error_free(err);
    test_rm_rf(dir);
    free(dir);
}

/* ------------------------------------------------------------------ uploads */

static void
write_file(const char *dir, const char *rel, size_t size)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t) size), 0);
    close(fd);
}

static void
test_upload_tree(void **state)
{
    (void) state;
    char *dir = test_mkdtemp("cli-up");
    char p[4096];
    UploadList u;
    Error *err = NULL;
    snprintf(p, sizeof(p), "%s/sub", dir);
    mkdir(p, 0755);
    write_file(dir, "b.txt", 3);
    write_file(dir, "a.txt", 2);
    write_file(dir, "sub/c.bin", 5);
    snprintf(p, sizeof(p), "%s/evil", dir);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    upload_list_init(&u, 100, 1000);
    assert_int_equal(upload_list_add(&u, dir, "", &err), 0);
    assert_int_equal(u.n, 3);
    assert_string_equal(u.v[0].remote, "a.txt"); /* sorted, relative */
    assert_string_equal(u.v[1].remote, "b.txt");
    assert_string_equal(u.v[2].remote, "sub/c.bin");
    assert_int_equal(u.skipped, 1);
    assert_int_equal(u.total_bytes, 10);
    json_t *files = NULL;
    assert_int_equal(upload_files_json(&u, &files, &err), 0);
    json_t *c = json_array_get(files, 2);
    assert_string_equal(json_string_value(json_object_get(c, "path")), "sub/c.bin");
    assert_non_null(json_object_get(c, "content_b64")); /* NUL bytes: base64 */
    json_decref(files);
    upload_list_free(&u);
    /* a file under a prefix; the same name twice is refused */
    upload_list_init(&u, 100, 1000);
    snprintf(p, sizeof(p), "%s/a.txt", dir);
    assert_int_equal(upload_list_add(&u, p, "in", &err), 0);
    assert_string_equal(u.v[0].remote, "in/a.txt");
    assert_int_equal(upload_list_add(&u, p, "in", &err), -1);
    assert_non_null(strstr(err->message, "two files"));
    error_free(err);
    upload_list_free(&u);
    test_rm_rf(dir);
    free(dir);
}

static void
test_upload_caps(void **state)
{
    (void) state;
    char *dir = test_mkdtemp("cli-cap");
    char p[4096];
    UploadList u;
    Error *err = NULL;
    write_file(dir, "big.bin", 200);
    write_file(dir, "mid.bin", 80);
    snprintf(p, sizeof(p), "%s/big.bin", dir);
    upload_list_init(&u, 100, 150);
    assert_int_equal(upload_list_add(&u, p, "", &err), -1);
    assert_non_null(strstr(err->message, "per file"));
    error_free(err);
    err = NULL;
    snprintf(p, sizeof(p), "%s/mid.bin", dir);
    assert_int_equal(upload_list_add(&u, p, "", &err), 0);
    assert_int_equal(upload_list_add_file(&u, p, "again.bin", &err), -1);
    assert_non_null(strstr(err->message, "in all"));
    error_free(err);
    err = NULL;
    assert_int_equal(upload_list_add(&u, "/nonexistent/x", "", &err), -1);
    assert_int_equal(err->category, E_INVALID);
    error_free(err);
    upload_list_free(&u);
    test_rm_rf(dir);
    free(dir);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_untar_regular),   cmocka_unit_test(test_untar_hostile),
        cmocka_unit_test(test_untar_malformed), cmocka_unit_test(test_dir_check),
        cmocka_unit_test(test_upload_tree),     cmocka_unit_test(test_upload_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
