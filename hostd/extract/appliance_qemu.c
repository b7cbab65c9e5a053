/* stockade-appliance-qemu: the hypervisor libguestfs starts for the extraction appliance
 * (guestfs_set_hv), the one QEMU on the host that parses filesystems hostile guests wrote.
 * libguestfs's direct backend runs it as root with qemu's argv. While still root it opens
 * what that argv names (overlays, their backing disks read-only, the daemon socket) and hands
 * them to qemu as inherited descriptors (appliance_qemu_args.c); then it drops to
 * STOCKADE_APPLIANCE_UID/GID with no supplementary groups, an empty capability bounding set,
 * no_new_privs, an address-space limit of guest RAM + APPLIANCE_QEMU_AS_EXTRA_MIB and no core
 * dumps, and execs the real qemu with its seccomp sandbox on. The pid and argv stay
 * qemu's (exec, not fork): the launch watchdog still finds it by the token in -append.
 * Any failure: a message on stderr (the appliance console, logged by the daemon), exit 1,
 * and qemu never runs with privileges. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "appliance_qemu.h"

#ifndef STOCKADE_APPLIANCE_UID
#error "STOCKADE_APPLIANCE_UID must be defined (CMake)"
#endif
#define QEMU_REAL_PATH "/usr/bin/qemu-system-x86_64" /* libguestfs's own default hv */
/* qemu puts the snapshot=on layer of the appliance root here: writable by anyone, sticky. */
#define QEMU_TMPDIR "/var/tmp"
#define QCOW2_MAGIC 0x514649fbu
#define QCOW2_HEADER_BYTES 20u /* magic, version, backing_file_offset, backing_file_size */
#define CAP_SCAN_MAX 64        /* PR_CAPBSET_DROP fails with EINVAL past the last cap */

static _Noreturn void
die(const char *what, const char *detail)
{
    fprintf(stderr, APPLIANCE_QEMU_NAME ": %s: %s\n", what, detail);
    exit(1);
}

static _Noreturn void
die_errno(const char *what)
{
    die(what, strerror(errno));
}

/* ---------------------------------------------------------------- descriptors, as root */

static int
fd_open_file(void *ctx, const char *path, int flags)
{
    (void) ctx;
    return open(path, flags | O_NOCTTY); /* no O_CLOEXEC: qemu inherits it */
}

static int
fd_connect_unix(void *ctx, const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    (void) ctx;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static uint64_t
be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* libguestfs wrote this header a moment ago (qemu-img, as root, in its private 0700
 * directory); checked anyway: an absolute path of bounded length, no NUL. */
static int
fd_qcow2_backing(void *ctx, int fd, char *buf, size_t cap)
{
    unsigned char h[QCOW2_HEADER_BYTES];
    (void) ctx;
    if (pread(fd, h, sizeof(h), 0) != (ssize_t) sizeof(h) || be(h, 4) != QCOW2_MAGIC)
        return -1;
    uint64_t off = be(h + 8, 8), len = be(h + 16, 4);
    if (off == 0)
        return 0;
    if (len == 0 || len >= cap || pread(fd, buf, len, (off_t) off) != (ssize_t) len)
        return -1;
    buf[len] = '\0';
    return buf[0] == '/' && strlen(buf) == len ? 1 : -1;
}

/* ---------------------------------------------------------------- privileges */

static void
limits_set(uint64_t mem_mib)
{
    uint64_t as = (mem_mib + APPLIANCE_QEMU_AS_EXTRA_MIB) << 20;
    struct rlimit rl_as = {.rlim_cur = as, .rlim_max = as}, rl_core = {0, 0};
#ifdef __SANITIZE_ADDRESS__
    /* An ASan build of this wrapper cannot map its shadow memory under the cap before the
     * exec ("Failed to mmap"): sanitizer builds (tests only) run qemu without it. */
    rl_as.rlim_cur = rl_as.rlim_max = RLIM_INFINITY;
#endif
    if (setrlimit(RLIMIT_AS, &rl_as) < 0 || setrlimit(RLIMIT_CORE, &rl_core) < 0)
        die_errno("setrlimit");
}

static void
caps_check_empty(void)
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) < 0)
        die_errno("capget");
    for (int i = 0; i < 2; i++)
        if (d[i].effective || d[i].permitted || d[i].inheritable) {
            die("capabilities", "left after the uid change");
        }
}

static void
privileges_drop(uid_t uid, gid_t gid)
{
    if (geteuid() != 0) {
        die("not root", "must be started by the daemon's libguestfs, as root");
    }
    for (int cap = 0; cap < CAP_SCAN_MAX; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            die_errno("drop capability bounding set");
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        die_errno("clear ambient capabilities");
    if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
        die_errno("drop to the appliance uid/gid");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die_errno("no_new_privs");
    caps_check_empty();
    if (getuid() == 0 || geteuid() == 0 || getgid() == 0 || getegid() == 0) {
        die("still root", "after the uid change");
    }
}

int
main(int argc, char **argv)
{
    static QemuArgs args; /* large: not on the stack */
    QemuFdOps ops = {.open_file = fd_open_file,
                     .connect_unix = fd_connect_unix,
                     .qcow2_backing = fd_qcow2_backing};

    _Static_assert(STOCKADE_APPLIANCE_UID != 0 && STOCKADE_APPLIANCE_GID != 0,
                   "the appliance must not run as root");
    /* Only stdio is meant for qemu (libguestfs's console); nothing else the daemon had open. */
    if (close_range(3, ~0u, 0) < 0)
        die_errno("close_range");
    if (qemu_args_rewrite(argc, argv, &ops, &args) < 0)
        die("arguments", args.err);
    limits_set(args.mem_mib);
    privileges_drop(STOCKADE_APPLIANCE_UID, STOCKADE_APPLIANCE_GID);
    if (setenv("TMPDIR", QEMU_TMPDIR, 1) < 0)
        die_errno("setenv");
    execv(QEMU_REAL_PATH, args.argv);
    die_errno("exec " QEMU_REAL_PATH);
}
