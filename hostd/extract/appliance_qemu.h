/* What appliance.c and the stockade-appliance-qemu wrapper (appliance_qemu.c) agree on, and
 * the pure argv rewriting the wrapper does (appliance_qemu_args.c, unit-tested). Internal to
 * hostd/extract. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* File name of the wrapper, installed beside stockaded (libguestfs's hypervisor, set_hv). */
#define APPLIANCE_QEMU_NAME "stockade-appliance-qemu"

/* QEMU's own seccomp filter, as libvirt's guests have it (their QEMU sets it the same way). */
#define APPLIANCE_QEMU_SANDBOX                                                                     \
    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"

/* Address space beyond the guest RAM (-m): the TCG translation buffer (up to 1 GiB), glibc
 * arenas of the vCPU and I/O threads, libraries. Measured VmPeak of the 512 MiB, 2-vCPU
 * appliance under TCG: docs/hardening.md. A launch over it fails, loudly, on the console. */
#define APPLIANCE_QEMU_AS_EXTRA_MIB 3072u
#define APPLIANCE_QEMU_DEFAULT_MEM_MIB 128u /* QEMU's own default, for libguestfs's probes */
#define APPLIANCE_QEMU_MAX_ARGS 512u        /* libguestfs passes ~60 */
#define APPLIANCE_QEMU_MAX_FDS 64u          /* two per overlay, one per disk, one per socket */

/* Where a rewritten argument takes its descriptors from. Implemented by the wrapper (real
 * opens, as root) and by the unit test (fake numbers). Each returns an fd or -1 (errno). */
typedef struct QemuFdOps {
    int (*open_file)(void *ctx, const char *path, int flags);
    int (*connect_unix)(void *ctx, const char *path);
    /* Backing file named in a qcow2 header read from fd: 1 with an absolute path in buf,
     * 0 for none, -1 when unreadable, malformed or not absolute. */
    int (*qcow2_backing)(void *ctx, int fd, char *buf, size_t cap);
    void *ctx;
} QemuFdOps;

typedef struct QemuArgs {
    char *argv[APPLIANCE_QEMU_MAX_ARGS + 4 * APPLIANCE_QEMU_MAX_FDS + 4];
    size_t argc;
    unsigned next_set; /* -add-fd set ids */
    unsigned n_fds;
    uint64_t mem_mib; /* from -m, for the address-space limit */
    char err[256];    /* why the rewrite failed */
} QemuArgs;

/* Rewrites libguestfs's qemu argv (argv[0] excluded; not changed) so that qemu, started
 * without any privilege, opens no file or socket by path that it could not open itself:
 *  - "-drive file.file.filename=OVERLAY,...": the overlay comes as two fds (read-write and
 *    read-only, qemu asks for both), and its backing disk (named in the qcow2 header) as one
 *    read-only fd only, through "-add-fd" and /dev/fdset/N: the appliance has no way to
 *    write a workspace disk even if its kernel and qemu fall;
 *  - "-chardev socket,path=SOCK,...": connected here, passed as fd=N;
 *  - "-m N" is noted for the address-space limit;
 * and appends "-sandbox APPLIANCE_QEMU_SANDBOX". ret->argv is NULL-ended and owns its
 * strings (qemu_args_free). Returns 0, or -1 with ret->err set (nothing to run then). */
int qemu_args_rewrite(int argc, char *const *argv, const QemuFdOps *ops, QemuArgs *ret);
void qemu_args_free(QemuArgs *a);

/* Finds option KEY in a QEMU option string ("a=1,key=v,,x,b=2"): [*ret_begin, *ret_end) is
 * the whole "key=..." option, escaped (",," stands for a comma). False if absent. */
bool qemu_opt_find(const char *s, const char *key, size_t *ret_begin, size_t *ret_end);
