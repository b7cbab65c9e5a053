/* PID 1 boot, from the kernel to an open virtio-serial port.
 *
 * 1. mount devtmpfs, proc, sysfs in the initramfs; fds 0-2 on /dev/console;
 * 2. read /proc/cmdline (bootcfg.h);
 * 3. load every module of /etc/stockade/modules from /lib/modules with finit_module(), in
 *    order (EEXIST is fine; a failure is logged and the boot goes on: a missing disk or port
 *    driver shows up as a timeout below);
 * 4. with stockade.root: wait (ROOT_WAIT_MSEC) for the device, mount it read-only (ext4) on
 *    /newroot, detach the initramfs's /dev /proc /sys, delete the initramfs contents (to free
 *    its memory; never crossing a mount), move /newroot onto / and chroot, staying PID 1;
 *    without stockade.root the runner stays in the initramfs (tests);
 * 5. mount proc, sysfs, devtmpfs, tmpfs on /dev/shm, /tmp and /run (size-capped), cgroup2
 *    on /sys/fs/cgroup (its failure only disables cgroups: exec trees fall back to pgroups);
 * 6. oom_score_adj RUNNER_OOM_SCORE_ADJ for the runner;
 * 7. find and open the port.
 * Nothing here reads randomness or touches the workspace device (see session.c). */
#pragma once

#include <stdbool.h>

#include "bootcfg.h"
#include "error.h"

#define INIT_CGROUP_ROOT "/sys/fs/cgroup"
#define INIT_WORKSPACE "/workspace"

typedef struct InitResult {
    int port_fd;
    bool cgroups; /* INIT_CGROUP_ROOT is a usable cgroup v2 hierarchy */
} InitResult;

/* Mounts the early filesystems and puts fds 0-2 on the console; then reads the boot
 * configuration. Called first, before anything can log. */
int init_early(BootConfig *ret_cfg, Error **errp);
/* Steps 3-7. */
int init_boot(const BootConfig *cfg, InitResult *ret, Error **errp);
/* Syncs and powers off (with ACPI) or reboots (without: a power-off would only halt);
 * the host treats both as the end of the guest. PID 1 never returns from here. */
_Noreturn void init_power_off(void);

/* switchroot.c: moves newroot onto / like busybox switch_root (step 4). */
int switchroot_to(const char *newroot, Error **errp);
