/* Unit tests of the workspace extractor's pure parts (hostd/extract): extract_untar() on
 * hand-built tar streams, the name checks and the pre-scan decoder. Every hostile case
 * asserts what lands on disk, not just the return code. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "extract.h"
#include "path.h"
#include "prescan.h"
#include "tar.h"
#include "tarbuild.h"
#include "testlib.h"
#include "timeutil.h"

/* ------------------------------------------------------------------ fixture */

typedef struct Fix {
    char *root;
    int root_fd, dest_fd;
    ExtractLimits lim;
    ExtractStats st;
    Error *err;
} Fix;

static int
fix_setup(void **state)
{
    Fix *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->root = test_mkdtemp("extract-unit");
    assert_non_null(f->root);
    f->root_fd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(f->root_fd >= 0);
    assert_int_equal(mkdirat(f->root_fd, "dest", 0700), 0);
    assert_int_equal(mkdirat(f->root_fd, "outside", 0700), 0);
    f->dest_fd = openat(f->root_fd, "dest", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(f->dest_fd >= 0);
    extract_limits_default(&f->lim);
    *state = f;
    return 0;
}

static int
fix_teardown(void **state)
{
    Fix *f = *state;
    close(f->dest_fd);
    close(f->root_fd);
    test_rm_rf(f->root);
    free(f->root);
    error_free(f->err);
    free(f);
    return 0;
}

static int
run_tar(Fix *f, TarBuf *t)
{
    int fd = tb_memfd(t);
    assert_true(fd >= 0);
    error_free(f->err);
    f->err = NULL;
    int r = extract_untar(fd, f->dest_fd, &f->lim, &f->st, &f->err);
    close(fd);
    tb_free(t);
    return r;
}

static bool
exists(int dirfd, const char *path)
{
    struct stat st;
    return fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static mode_t
mode_of(int dirfd, const char *path)
{
    struct stat st;
    assert_int_equal(fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW), 0);
    return st.st_mode;
}

static void
assert_content(int dirfd, const char *path, const char *want)
{
    char buf[256] = {0};
    int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    assert_int_equal(n, (ssize_t) strlen(want));
    assert_string_equal(buf, want);
}

/* Number of entries in a directory (without . and ..). */
static int
count_entries(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    DIR *d = fdopendir(fd);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* ------------------------------------------------------------------ extract_untar */

static void
test_files_and_dirs_land(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    tb_entry(&t, "./", '5', 0755);
    tb_entry(&t, "./d/", '5', 0750);
    tb_file(&t, "./d/a.txt", 0644, "hello", 5);
    tb_file(&t, "./top.sh", 0755, "#!/bin/sh\n", 10);
    tb_file(&t, "./private", 0600, "p", 1);
    tb_file(&t, "./implicit/dir/f", 0644, "x", 1); /* parents not listed first */
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.files, 4);
    assert_int_equal(f->st.dirs, 3);
    assert_int_equal(f->st.skipped, 0);
    assert_int_equal(f->st.bytes, 17);
    assert_false(f->st.truncated);
    assert_int_equal(f->st.stop, EXTRACT_STOP_NONE);
    assert_content(f->dest_fd, "d/a.txt", "hello");
    assert_content(f->dest_fd, "implicit/dir/f", "x");
    assert_int_equal(mode_of(f->dest_fd, "d") & 07777, 0750);
    assert_int_equal(mode_of(f->dest_fd, "d/a.txt") & 07777, 0644);
    assert_int_equal(mode_of(f->dest_fd, "top.sh") & 07777, 0744);
    assert_int_equal(mode_of(f->dest_fd, "private") & 07777, 0600);
    struct stat st;
    assert_int_equal(fstatat(f->dest_fd, "d/a.txt", &st, 0), 0);
    assert_int_equal(st.st_mtime, 1700000000);
}

static void
test_special_entries_skipped(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    static const char types[] = {'2', '1', '3', '4', '6', 'Z', 'V'};
    for (size_t i = 0; i < sizeof(types); i++) {
        char name[16];
        snprintf(name, sizeof(name), "./e%zu", i);
        tb_entry(&t, name, types[i], 0644);
    }
    tb_file(&t, "./after", 0644, "ok", 2);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.skipped, sizeof(types));
    assert_int_equal(f->st.files, 1);
    assert_int_equal(count_entries(f->dest_fd, "."), 1);
    assert_content(f->dest_fd, "after", "ok");
}

static void
test_escaping_names_refused(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    static const char *const bad[] = {"../up",    "/abs", "a/../../x", "./../y",
                                      "a/b/../c", "..",   "/"};
    for (size_t i = 0; i < ELEMENTSOF(bad); i++)
        tb_file(&t, bad[i], 0644, "bad", 3);
    tb_entry(&t, "../updir/", '5', 0755);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.skipped, ELEMENTSOF(bad) + 1);
    assert_int_equal(f->st.files, 0);
    assert_int_equal(count_entries(f->dest_fd, "."), 0);
    assert_int_equal(count_entries(f->root_fd, "."), 2); /* dest and outside only */
    assert_int_equal(count_entries(f->root_fd, "outside"), 0);
}

static void
test_setuid_stripped(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    tb_file(&t, "./suid", 06755, "x", 1);
    tb_file(&t, "./sticky", 01777, "x", 1);
    tb_entry(&t, "./sgid-dir/", '5', 07777);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(mode_of(f->dest_fd, "suid") & 07777, 0744);
    assert_int_equal(mode_of(f->dest_fd, "sticky") & 07777, 0744);
    assert_int_equal(mode_of(f->dest_fd, "sgid-dir") & 07777, 0755);
}

static void
test_gnu_long_name_and_pax(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    char longname[400];
    memset(longname, 'a', sizeof(longname));
    memcpy(longname, "./long/", 7);
    longname[200] = '/';
    longname[sizeof(longname) - 1] = '\0'; /* ./long/<193 a>/<198 a> */
    tb_longname(&t, longname, strlen(longname));
    tb_header(&t, "truncated-name-ignored", '0', 0644, 4, NULL, true);
    tb_put(&t, "long", 4);
    tb_put(&t, (char[508]){0}, 508);
    tb_pax(&t, "path", "./pax dir/p\xc3\xa9.txt", 17);
    tb_file(&t, "ignored-too", 0644, "pax", 3);
    tb_pax(&t, "size", "5", 1); /* overrides the header's size field */
    tb_header(&t, "./sized", '0', 0644, 0, NULL, false);
    tb_put(&t, "sized", 5);
    tb_put(&t, (char[507]){0}, 507);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.files, 3);
    assert_content(f->dest_fd, longname + 2, "long");
    assert_content(f->dest_fd, "pax dir/p\xc3\xa9.txt", "pax");
    assert_content(f->dest_fd, "sized", "sized");
    assert_false(exists(f->dest_fd, "ignored-too"));
}

static void
test_cap_total_bytes_stops(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    f->lim.max_total_bytes = 10;
    tb_file(&t, "./a", 0644, "123456", 6);
    tb_file(&t, "./b", 0644, "123456", 6);
    tb_file(&t, "./c", 0644, "1", 1);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.stop, EXTRACT_STOP_BYTES);
    assert_true(f->st.truncated);
    assert_int_equal(f->st.files, 1);
    assert_true(exists(f->dest_fd, "a"));
    assert_false(exists(f->dest_fd, "b"));
}

static void
test_cap_files_stops(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    f->lim.max_files = 2;
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "./%d", i);
        tb_file(&t, name, 0644, "x", 1);
    }
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.stop, EXTRACT_STOP_FILES);
    assert_true(f->st.truncated);
    assert_int_equal(f->st.files, 2);
    assert_int_equal(count_entries(f->dest_fd, "."), 2);
}

static void
test_cap_depth_and_name_skip(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    f->lim.max_depth = 3;
    f->lim.max_name_bytes = 20;
    tb_file(&t, "./a/b/c/d/deep", 0644, "x", 1);
    tb_file(&t, "./a/b/ok", 0644, "ok", 2);
    tb_file(&t, "./name-that-is-longer-than-twenty", 0644, "x", 1);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.stop, EXTRACT_STOP_NONE);
    assert_true(f->st.truncated);
    assert_int_equal(f->st.skipped, 2);
    assert_content(f->dest_fd, "a/b/ok", "ok");
    assert_false(exists(f->dest_fd, "a/b/c"));
}

static void
test_cap_file_size_skips_and_continues(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    f->lim.max_file_bytes = 4;
    tb_file(&t, "./big", 0644, "0123456789", 10);
    tb_file(&t, "./small", 0644, "sm", 2);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_true(f->st.truncated);
    assert_int_equal(f->st.stop, EXTRACT_STOP_NONE);
    assert_int_equal(f->st.skipped, 1);
    assert_int_equal(f->st.streamed_bytes, 12);
    assert_false(exists(f->dest_fd, "big"));
    assert_content(f->dest_fd, "small", "sm");
}

static void
test_planted_symlink_not_followed(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    char target[4096];
    snprintf(target, sizeof(target), "%s/outside", f->root);
    assert_int_equal(symlinkat(target, f->dest_fd, "evil"), 0);
    assert_int_equal(symlinkat("../outside", f->dest_fd, "rel"), 0);
    tb_file(&t, "./evil/pwn", 0644, "x", 1);
    tb_file(&t, "./evil", 0644, "x", 1);
    tb_file(&t, "./rel/pwn", 0644, "x", 1);
    tb_file(&t, "./rel/sub/pwn", 0644, "x", 1);
    tb_entry(&t, "./evil/", '5', 0755);
    tb_entry(&t, "./rel/newdir/", '5', 0755);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.skipped, 6);
    assert_int_equal(f->st.files + f->st.dirs, 0);
    assert_int_equal(count_entries(f->root_fd, "outside"), 0);
    assert_true(S_ISLNK(mode_of(f->dest_fd, "evil")));
    assert_true(S_ISLNK(mode_of(f->dest_fd, "rel")));
}

static void
test_duplicate_entry_keeps_first(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    tb_file(&t, "./x", 0644, "first", 5);
    tb_file(&t, "./x", 0644, "second", 6);
    tb_entry(&t, "./x/", '5', 0755);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.skipped, 2);
    assert_content(f->dest_fd, "x", "first");
}

static bool
has_raw_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char) *s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

/* Names are written byte for byte; a host failure quoting one escapes it. RLIMIT_FSIZE
 * makes the write fail (EFBIG) so the error path runs without special filesystems. */
static void
test_hostile_names_written_and_escaped(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    static const char nl[] = "new\nline", esc[] = "esc\x1b[31mred\x1b[0m";
    tb_file(&t, nl, 0644, "1", 1);
    tb_file(&t, esc, 0644, "2", 1);
    tb_end(&t);
    assert_int_equal(run_tar(f, &t), 0);
    assert_content(f->dest_fd, nl, "1");
    assert_content(f->dest_fd, esc, "2");

    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = (struct rlimit){.rlim_cur = 4, .rlim_max = old.rlim_max};
    signal(SIGXFSZ, SIG_IGN);
    tb_file(&t, "bad\n\x1b[2Jname", 0644, "0123456789", 10);
    tb_end(&t);
    int fd = memfd_create("tar", MFD_CLOEXEC);
    assert_int_equal(write(fd, t.buf, t.len), (ssize_t) t.len);
    lseek(fd, 0, SEEK_SET);
    tb_free(&t);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int r = extract_untar(fd, f->dest_fd, &f->lim, &f->st, &f->err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    close(fd);
    assert_int_equal(r, -1);
    assert_non_null(f->err);
    assert_int_equal(f->err->category, E_IO);
    assert_int_equal(f->st.stop, EXTRACT_STOP_ERROR);
    assert_false(has_raw_control(f->err->message));
    assert_non_null(strstr(f->err->message, "bad\\x0a\\x1b[2Jname"));
    assert_false(exists(f->dest_fd, "bad\n\x1b[2Jname")); /* the cut file is removed */
}

static void
test_early_eof_removes_partial_file(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    char data[100] = {0};
    tb_file(&t, "./whole", 0644, "w", 1);
    tb_header(&t, "./cut", '0', 0644, 1000, NULL, false);
    tb_put(&t, data, sizeof(data));
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.stop, EXTRACT_STOP_MALFORMED);
    assert_true(f->st.truncated);
    assert_true(exists(f->dest_fd, "whole"));
    assert_false(exists(f->dest_fd, "cut"));
    assert_int_equal(f->st.bytes, 1); /* the removed file's bytes are not counted */
    assert_int_equal(f->st.files, 1);
}

static void
test_bad_checksum_and_numbers_stop(void **state)
{
    Fix *f = *state;
    TarBuf t = {0};
    tb_file(&t, "./ok", 0644, "x", 1);
    tb_file(&t, "./corrupt", 0644, "x", 1);
    t.buf[1024 + 5] ^= 1; /* second header's name */
    assert_int_equal(run_tar(f, &t), 0);
    assert_int_equal(f->st.stop, EXTRACT_STOP_MALFORMED);
    assert_int_equal(f->st.files, 1);

    uint8_t field[12];
    uint64_t v;
    memcpy(field, "0000000017 \0", 12);
    assert_true(tar_parse_number(field, 12, &v) && v == 15);
    memcpy(field, "00000000x7 \0", 12);
    assert_false(tar_parse_number(field, 12, &v));
    memset(field, 0, 12);
    field[0] = 0x80;
    field[11] = 0x42;
    assert_true(tar_parse_number(field, 12, &v) && v == 0x42);
    field[0] = 0xff; /* negative */
    assert_false(tar_parse_number(field, 12, &v));
    memset(field, 0x7f, 12);
    field[0] = 0xbf; /* positive but over TAR_SIZE_MAX_BYTES */
    assert_false(tar_parse_number(field, 12, &v));
}

static void
test_time_cap_stops_a_stalled_stream(void **state)
{
    Fix *f = *state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    f->lim.max_usec = 200 * USEC_PER_MSEC;
    uint64_t t0 = now_usec();
    int r = extract_untar(p[0], f->dest_fd, &f->lim, &f->st, &f->err);
    uint64_t took = now_usec() - t0;
    close(p[0]);
    close(p[1]);
    assert_int_equal(r, 0);
    assert_int_equal(f->st.stop, EXTRACT_STOP_TIME);
    assert_true(took >= 150 * USEC_PER_MSEC && took < 5 * USEC_PER_SEC);
}

/* ------------------------------------------------------------------ pure helpers */

static void
test_path_normalize_table(void **state)
{
    (void) state;
    static const struct {
        const char *in, *out;
        PathVerdict want;
    } cases[] = {
        {"./a/b/", "a/b", PATH_OK},
        {"a//b/./c", "a/b/c", PATH_OK},
        {"./", "", PATH_ROOT},
        {".", "", PATH_ROOT},
        {"/etc", NULL, PATH_ABSOLUTE},
        {"a/../b", NULL, PATH_DOTDOT},
        {"...", "...", PATH_OK},
        {"a/b/c/d", NULL, PATH_TOO_DEEP},
        {"0123456789abcdefXYZ", NULL, PATH_TOO_LONG},
    };
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        char out[64];
        size_t len = 0;
        uint32_t depth = 0;
        PathVerdict v =
            extract_path_normalize(cases[i].in, strlen(cases[i].in), 16, 3, out, &len, &depth);
        if (v != cases[i].want)
            fail_msg("case '%s': verdict %d, want %d", cases[i].in, v, cases[i].want);
        if (v == PATH_OK)
            assert_string_equal(out, cases[i].out);
    }
    char comp[300];
    memset(comp, 'c', sizeof(comp));
    size_t len;
    uint32_t depth;
    char out[301];
    assert_int_equal(extract_path_normalize(comp, sizeof(comp), 1024, 8, out, &len, &depth),
                     PATH_COMPONENT_LONG);
}

static void
test_prescan_excludes(void **state)
{
    (void) state;
    /* "./a\n" NUL "./b*[?\\" NUL "./cut" (no NUL: cut by head -c) */
    static const char od[] = " 2e 2f 61 0a 00 2e 2f 62 2a 5b 3f 5c 00\n 2e 2f 63 75 74\n";
    static const char *const fixed[] = {"./lost+found"};
    size_t n = 0;
    bool capped = false;
    char **list = prescan_excludes(od, fixed, 1, &n, &capped);
    assert_non_null(list);
    assert_int_equal(n, 3);
    assert_true(capped);
    assert_string_equal(list[0], "./lost+found");
    assert_string_equal(list[1], "./a?");
    assert_string_equal(list[2], "./b????");
    assert_null(list[3]);
    prescan_free(list);
    assert_null(prescan_excludes(" 2e zz\n", fixed, 1, &n, &capped));
    list = prescan_excludes("", fixed, 1, &n, &capped);
    assert_non_null(list);
    assert_int_equal(n, 1);
    assert_false(capped);
    prescan_free(list);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fix_setup, fix_teardown)
    const struct CMUnitTest tests[] = {
        T(test_files_and_dirs_land),
        T(test_special_entries_skipped),
        T(test_escaping_names_refused),
        T(test_setuid_stripped),
        T(test_gnu_long_name_and_pax),
        T(test_cap_total_bytes_stops),
        T(test_cap_files_stops),
        T(test_cap_depth_and_name_skip),
        T(test_cap_file_size_skips_and_continues),
        T(test_planted_symlink_not_followed),
        T(test_duplicate_entry_keeps_first),
        T(test_hostile_names_written_and_escaped),
        T(test_early_eof_removes_partial_file),
        T(test_bad_checksum_and_numbers_stop),
        T(test_time_cap_stops_a_stalled_stream),
        cmocka_unit_test(test_path_normalize_table),
        cmocka_unit_test(test_prescan_excludes),
    };
#undef T
    return cmocka_run_group_tests_name("extract", tests, NULL, NULL);
}
