/* Unit tests of the extraction appliance's qemu argv rewrite (hostd/extract/
 * appliance_qemu_args.c) with fake descriptors: what qemu would be told to open by path, and
 * that a missing backing path or an unreadable file stops the launch instead of letting qemu
 * open it itself. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "appliance_qemu.h"

typedef struct Fake {
    int next_fd;
    int backing;        /* what qcow2_backing answers: 1, 0 or -1 */
    const char *refuse; /* open/connect of this path fails */
    char opened[8][128];
    int n_opened;
} Fake;

static int
fake_open(void *ctx, const char *path, int flags)
{
    Fake *f = ctx;
    if (f->refuse && strcmp(path, f->refuse) == 0) {
        errno = EACCES;
        return -1;
    }
    snprintf(f->opened[f->n_opened++ % 8], sizeof(f->opened[0]), "%s:%s", path,
             (flags & 3) == 0 ? "ro" : "rw");
    return f->next_fd++;
}

static int
fake_connect(void *ctx, const char *path)
{
    return fake_open(ctx, path, 2);
}

static int
fake_backing(void *ctx, int fd, char *buf, size_t cap)
{
    Fake *f = ctx;
    (void) fd;
    snprintf(buf, cap, "/state/guests/g1/workspace.raw");
    return f->backing;
}

static int
run(Fake *f, char **argv, int argc, QemuArgs *a)
{
    QemuFdOps ops = {fake_open, fake_connect, fake_backing, f};
    return qemu_args_rewrite(argc, argv, &ops, a);
}

static const char *
joined(const QemuArgs *a)
{
    static char buf[4096];
    size_t o = 0;
    for (size_t i = 0; i < a->argc && o < sizeof(buf); i++)
        o += (size_t) snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? " " : "", a->argv[i]);
    return buf;
}

static void
test_libguestfs_argv(void **state)
{
    (void) state;
    char *argv[] = {"qemu",
                    "-nodefaults",
                    "-m",
                    "512",
                    "-drive",
                    "file.file.filename=/st/libguestfsX/overlay1.qcow2,file.driver=qcow2,"
                    "file.backing.file.locking=off,cache=unsafe,id=hd0,if=none",
                    "-drive",
                    "file=/var/tmp/.guestfs-0/appliance.d/root,snapshot=on,id=appliance",
                    "-chardev",
                    "socket,path=/tmp/libguestfsY/guestfsd.sock,id=channel0",
                    "-append",
                    "panic=1 stockade.launch=abc"};
    Fake f = {.next_fd = 3, .backing = 1};
    QemuArgs a;
    assert_int_equal(run(&f, argv, 12, &a), 0);
    assert_string_equal(
        joined(&a),
        "qemu -add-fd fd=4,set=1 -add-fd fd=3,set=1 -add-fd fd=5,set=2 -nodefaults -m 512 "
        "-drive file.file.filename=/dev/fdset/1,file.driver=qcow2,file.backing.file.locking=off,"
        "cache=unsafe,id=hd0,if=none,file.backing.file.filename=/dev/fdset/2 "
        "-drive file=/var/tmp/.guestfs-0/appliance.d/root,snapshot=on,id=appliance "
        "-chardev socket,fd=6,id=channel0 -append panic=1 stockade.launch=abc "
        "-sandbox " APPLIANCE_QEMU_SANDBOX);
    assert_int_equal(a.mem_mib, 512);
    /* the workspace disk is only ever opened read-only */
    assert_string_equal(f.opened[2], "/state/guests/g1/workspace.raw:ro");
    qemu_args_free(&a);
}

static void
test_probe_argv(void **state)
{
    (void) state;
    char *argv[] = {"qemu", "-display", "none", "-help"};
    Fake f = {.next_fd = 3};
    QemuArgs a;
    assert_int_equal(run(&f, argv, 4, &a), 0);
    assert_string_equal(joined(&a), "qemu -display none -help -sandbox " APPLIANCE_QEMU_SANDBOX);
    assert_int_equal(a.mem_mib, APPLIANCE_QEMU_DEFAULT_MEM_MIB);
    assert_int_equal(f.n_opened, 0);
    qemu_args_free(&a);
}

static void
test_escaped_comma_path(void **state)
{
    (void) state;
    char *argv[] = {"qemu", "-drive", "id=x,file.file.filename=/a,,b/ov.qcow2,if=none"};
    Fake f = {.next_fd = 3, .backing = 0};
    QemuArgs a;
    assert_int_equal(run(&f, argv, 3, &a), 0);
    assert_string_equal(f.opened[0], "/a,b/ov.qcow2:ro");
    assert_string_equal(a.argv[6], "id=x,file.file.filename=/dev/fdset/1,if=none");
    qemu_args_free(&a);
}

static void
test_refusals(void **state)
{
    (void) state;
    char *drive[] = {"qemu", "-drive", "file.file.filename=/o.qcow2,id=hd0"};
    char *sock[] = {"qemu", "-chardev", "socket,path=/s.sock,id=c"};
    char *mem[] = {"qemu", "-m", "512G"};
    QemuArgs a;
    Fake relative = {.next_fd = 3, .backing = -1}; /* no absolute backing path */
    assert_int_equal(run(&relative, drive, 3, &a), -1);
    assert_non_null(strstr(a.err, "backing"));
    Fake denied = {.next_fd = 3, .backing = 1, .refuse = "/state/guests/g1/workspace.raw"};
    assert_int_equal(run(&denied, drive, 3, &a), -1);
    assert_non_null(strstr(a.err, "workspace.raw"));
    Fake nosock = {.next_fd = 3, .refuse = "/s.sock"};
    assert_int_equal(run(&nosock, sock, 3, &a), -1);
    Fake any = {.next_fd = 3};
    assert_int_equal(run(&any, mem, 3, &a), -1);
    assert_int_equal(run(&any, mem, 0, &a), -1);
}

static void
test_opt_find(void **state)
{
    (void) state;
    size_t b, e;
    assert_true(qemu_opt_find("a=1,path=x,,y,b=2", "path", &b, &e));
    assert_int_equal(b, 4);
    assert_int_equal(e, 13);
    assert_false(qemu_opt_find("a=1,xpath=2,path", "path", &b, &e));
    assert_false(qemu_opt_find("a=1,,path=2", "path", &b, &e)); /* inside a's value */
    assert_true(qemu_opt_find("path=,,", "path", &b, &e));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_libguestfs_argv),    cmocka_unit_test(test_probe_argv),
        cmocka_unit_test(test_escaped_comma_path), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_opt_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
