/* Unit tests of the runner's path and error decisions: Exec.cwd mapping, parent/name split,
 * joins (guest/wspath.c), the openat2 confinement against symlinks and ".." in a scratch
 * directory, errno -> Error code mapping, req_id peeking and error text sanitizing
 * (guest/reply.c), and the virtio port lookup over a fake sysfs (guest/port.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "port.h"
#include "reply.h"
#include "testlib.h"
#include "wspath.h"

static void
test_cwd_relative(void **state)
{
    (void) state;
    static const struct {
        const char *cwd, *rel; /* rel NULL: refused */
    } cases[] = {
        {"", ""},
        {"/workspace", ""},
        {"/workspace/", ""},
        {"/workspace/a/b", "a/b"},
        {"/workspace/a/../../etc", NULL},
        {"/workspace/./a", NULL},
        {"/workspace//a", NULL},
        {"/workspace/a/", NULL},
        {"/workspacex", NULL},
        {"/workspacex/a", NULL},
        {"/etc", NULL},
        {"/", NULL},
        {"workspace/a", NULL},
        /* E2B's home: the workspace bind-mounted (issue 28) */
        {"/home/user", ""},
        {"/home/user/", ""},
        {"/home/user/a/b", "a/b"},
        {"/home/user/../../etc", NULL},
        {"/home/userx", NULL},
        {"/home/use", NULL},
        {"/home", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *rel = NULL;
        bool ok = wspath_cwd_relative(cases[i].cwd, &rel);
        if (ok != (cases[i].rel != NULL) || (ok && strcmp(rel, cases[i].rel) != 0))
            fail_msg("cwd '%s': ok %d rel '%s'", cases[i].cwd, ok, ok ? rel : "");
    }
}

static void
test_split_join(void **state)
{
    (void) state;
    char parent[64], out[32];
    const char *name;

    wspath_split("a", parent, &name);
    assert_string_equal(parent, "");
    assert_string_equal(name, "a");
    wspath_split("a/b/c.txt", parent, &name);
    assert_string_equal(parent, "a/b");
    assert_string_equal(name, "c.txt");
    assert_true(wspath_join("", "x", out, sizeof(out)));
    assert_string_equal(out, "x");
    assert_true(wspath_join("a/b", "x", out, sizeof(out)));
    assert_string_equal(out, "a/b/x");
    assert_false(wspath_join("a", "..", out, sizeof(out)));
    assert_false(wspath_join("a", "0123456789012345678901234567890123456789", out, sizeof(out)));
}

/* A scratch workspace with a link to the outside, opened the way the runner does. */
static void
test_openat_confinement(void **state)
{
    (void) state;
    char *root = test_mkdtemp("guest-paths"), path[512];

    assert_non_null(root);
    snprintf(path, sizeof(path), "%s/ws", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/ws/dir", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/outside", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/ws/link", root);
    assert_int_equal(symlink("../outside", path), 0);
    snprintf(path, sizeof(path), "%s/ws", root);
    int ws = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(ws >= 0);

    int fd = wspath_openat(ws, "dir", O_PATH | O_DIRECTORY, 0);
    assert_true(fd >= 0);
    close(fd);
    fd = wspath_openat(ws, "", O_RDONLY | O_DIRECTORY, 0);
    assert_true(fd >= 0);
    close(fd);
    errno = 0;
    assert_int_equal(wspath_openat(ws, "link", O_PATH | O_DIRECTORY, 0), -1);
    assert_int_equal(reply_category_from_errno(errno), E_INVALID);
    assert_int_equal(wspath_openat(ws, "link/x", O_RDONLY, 0), -1);
    assert_int_equal(errno, ELOOP);
    assert_int_equal(wspath_openat(ws, "link/new", O_WRONLY | O_CREAT, 0644), -1);
    assert_int_equal(wspath_openat(ws, "link", O_WRONLY | O_CREAT | O_EXCL, 0644), -1);
    assert_int_equal(wspath_openat(ws, "../outside", O_PATH | O_DIRECTORY, 0), -1);
    assert_int_equal(errno, EXDEV); /* RESOLVE_BENEATH, even if a ".." slipped through */
    snprintf(path, sizeof(path), "%s/outside/new", root);
    assert_int_equal(access(path, F_OK), -1);

    const char *name;
    _cleanup_error_ Error *err = NULL;
    fd = wspath_open_parent(ws, "dir/file", &name, &err);
    assert_true(fd >= 0);
    assert_string_equal(name, "file");
    close(fd);
    assert_int_equal(wspath_open_parent(ws, "link/file", &name, &err), -1);
    assert_int_equal(reply_code_from_category(err->category), ERRC(INVALID_PATH));
    close(ws);
    test_rm_rf(root);
    free(root);
}

static void
test_error_mapping(void **state)
{
    (void) state;
    static const struct {
        int err;
        ErrCode code;
    } cases[] = {
        {ENOENT, ERRC(NOT_FOUND)},
        {EEXIST, ERRC(EXISTS)},
        {ENOTEMPTY, ERRC(EXISTS)},
        {ELOOP, ERRC(INVALID_PATH)},
        {EXDEV, ERRC(INVALID_PATH)},
        {ENOTDIR, ERRC(INVALID_PATH)},
        {EISDIR, ERRC(INVALID_PATH)},
        {ENXIO, ERRC(INVALID_PATH)},
        {EFBIG, ERRC(TOO_LARGE)},
        {E2BIG, ERRC(TOO_LARGE)},
        {ENOSPC, ERRC(IO)},
        {EIO, ERRC(IO)},
        {EROFS, ERRC(IO)},
        {EAGAIN, ERRC(BUSY)},
        {ENOMEM, ERRC(BUSY)},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (reply_code_from_category(reply_category_from_errno(cases[i].err)) != cases[i].code)
            fail_msg("errno %d: code %d, want %d", cases[i].err,
                     reply_code_from_category(reply_category_from_errno(cases[i].err)),
                     cases[i].code);
    assert_int_equal(reply_code_from_category(E_INTERNAL), ERRC(INTERNAL));
    assert_int_equal(reply_code_from_category(E_UNAVAILABLE), ERRC(BUSY));
}

static void
test_peek_req_id(void **state)
{
    (void) state;
    static const struct {
        uint8_t bytes[16];
        size_t len;
        uint32_t want;
    } cases[] = {
        {{0x08, 0x2a}, 2, 42},
        {{0x08, 0xac, 0x02}, 3, 300},
        {{0x12, 0x02, 0xff, 0xff, 0x08, 0x07}, 6, 7},        /* after a bytes field */
        {{0x15, 1, 2, 3, 4, 0x08, 0x05}, 7, 5},              /* after a fixed32 */
        {{0x09, 1, 2, 3, 4, 5, 6, 7, 8, 0x08, 0x09}, 11, 9}, /* after a fixed64 */
        {{0x08}, 1, 0},                                      /* cut short */
        {{0x12, 0x7f, 0x08, 0x05}, 4, 0},                    /* length past the end */
        {{0x0b, 0x08, 0x05}, 3, 0},                          /* group: not walked */
        {{0xff, 0xff, 0xff}, 3, 0},
        {{0x08, 0xff, 0xff, 0xff, 0xff, 0x1f}, 6, 0}, /* over 32 bits */
        {{0}, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (reply_peek_req_id(cases[i].bytes, cases[i].len) != cases[i].want)
            fail_msg("case %zu: got %u, want %u", i,
                     reply_peek_req_id(cases[i].bytes, cases[i].len), cases[i].want);
}

static void
test_sanitize(void **state)
{
    (void) state;
    char out[ERROR_MESSAGE_MAX_BYTES + 1], big[1000];

    reply_sanitize(out, sizeof(out), "bad \x01 byte \xff\n");
    assert_string_equal(out, "bad ? byte ??");
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    reply_sanitize(out, sizeof(out), big);
    assert_int_equal(strlen(out), ERROR_MESSAGE_MAX_BYTES);
}

static void
write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void
test_port_find(void **state)
{
    (void) state;
    char *root = test_mkdtemp("guest-port"), path[512], dev[64];

    assert_non_null(root);
    snprintf(path, sizeof(path), "%s/vport0p1", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/vport0p1/name", root);
    write_text(path, "org.qemu.guest_agent.0\n");
    snprintf(path, sizeof(path), "%s/vport1p2", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/vport1p2/name", root);
    write_text(path, "org.stockade.runner.0\n");

    assert_int_equal(port_find(root, "org.stockade.runner.0", dev, sizeof(dev)), 0);
    assert_string_equal(dev, "/dev/vport1p2");
    assert_int_equal(port_find(root, "org.stockade.runner", dev, sizeof(dev)), -1);
    assert_int_equal(errno, ENOENT);
    test_rm_rf(root);
    free(root);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cwd_relative),       cmocka_unit_test(test_split_join),
        cmocka_unit_test(test_openat_confinement), cmocka_unit_test(test_error_mapping),
        cmocka_unit_test(test_peek_req_id),        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_port_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
