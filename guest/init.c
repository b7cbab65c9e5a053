/* PID 1 boot: see init.h. Logs (it is the edge of the boot) only through log.h. */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/module.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "fdutil.h"
#include "guest_limits.h"
#include "log.h"
#include "port.h"
#include "timeutil.h"

#ifndef MODULE_INIT_COMPRESSED_FILE
#define MODULE_INIT_COMPRESSED_FILE 4
#endif
#define CGROUP2_MAGIC 0x63677270
#define INIT_NEWROOT "/newroot"
#define INIT_MODULES_DIR "/lib/modules"
#define INIT_MODULES_LIST "/etc/stockade/modules"
#define INIT_ACPI_DIR "/sys/firmware/acpi" /* exists when the kernel can power off */

typedef struct MountSpec {
    const char *src, *dst, *type;
    unsigned long flags;
    const char *data;
} MountSpec;

#define MNT_SAFE (MS_NOSUID | MS_NODEV | MS_NOEXEC)
static const MountSpec early_mounts[] = {
    {"devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, "mode=755"},
    {"proc", "/proc", "proc", MNT_SAFE, NULL},
    {"sysfs", "/sys", "sysfs", MNT_SAFE, NULL},
};
static const MountSpec late_mounts[] = {
    {"tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, TMPFS_SHM_OPTIONS},
    {"tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, TMPFS_TMP_OPTIONS},
    {"tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, TMPFS_RUN_OPTIONS},
    /* Exec.pty: /dev/ptmx of devtmpfs opens terminals of this instance. */
    {"devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, DEVPTS_OPTIONS},
};
/* favordynmods (Linux 6.0+): moving a process into a cgroup no longer waits for an RCU grace
 * period. Every exec moves its first process into the exec's own cgroup; under TCG that wait
 * was 10-12 ms of a ~24 ms exec (timestamps around the child's write to cgroup.procs). A
 * kernel without the option refuses the mount, so it is retried without. */
static const MountSpec cgroup_mount = {"cgroup2", INIT_CGROUP_ROOT, "cgroup2", MNT_SAFE,
                                       "favordynmods"};
static const MountSpec cgroup_mount_plain = {"cgroup2", INIT_CGROUP_ROOT, "cgroup2", MNT_SAFE,
                                             NULL};

static int
init_mount(const MountSpec *m, Error **errp)
{
    (void) mkdir(m->dst, 0755); /* exists already on a read-only root */
    if (mount(m->src, m->dst, m->type, m->flags, m->data) < 0)
        return error_set(errp, E_INTERNAL, errno, "mount %s on %s", m->type, m->dst);
    return 0;
}

static int
init_mount_all(const MountSpec *specs, size_t n, Error **errp)
{
    for (size_t i = 0; i < n; i++)
        if (init_mount(&specs[i], errp) < 0)
            return -1;
    return 0;
}

/* fds 0-2 on the console, so logs reach it and no later fd can land on 0-2. */
static void
init_console(void)
{
    int fd = open("/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    for (int i = 0; i < 3; i++)
        (void) dup2(fd, i);
    if (fd > 2)
        safe_close(fd);
}

int
init_early(BootConfig *ret_cfg, Error **errp)
{
    _cleanup_free_ char *cmdline = NULL;
    size_t len;

    int r = init_mount_all(early_mounts, ELEMENTSOF(early_mounts), errp);
    init_console();
    if (r < 0)
        return -1;
    if (read_file_bounded("/proc/cmdline", CMDLINE_MAX_BYTES, &cmdline, &len) < 0)
        return error_set(errp, E_INTERNAL, errno, "read /proc/cmdline");
    if (bootcfg_parse_cmdline(cmdline, ret_cfg) > 0)
        log_warn("ignored a malformed stockade.* value on the kernel command line");
    return 0;
}

static int
init_load_module(const char *name)
{
    char path[sizeof(INIT_MODULES_DIR) + NAME_MAX_BYTES + 2];
    size_t n = strlen(name);
    bool compressed = (n > 3 && strcmp(name + n - 3, ".xz") == 0) ||
                      (n > 4 && strcmp(name + n - 4, ".zst") == 0) ||
                      (n > 3 && strcmp(name + n - 3, ".gz") == 0);

    snprintf(path, sizeof(path), "%s/%s", INIT_MODULES_DIR, name);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (syscall(SYS_finit_module, fd, "", compressed ? MODULE_INIT_COMPRESSED_FILE : 0) < 0 &&
        errno != EEXIST)
        return -1;
    return 0;
}

/* Loads the listed modules in order; a failure is logged, the rest still load. */
static void
init_load_modules(void)
{
    _cleanup_free_ char *list = NULL;
    char name[NAME_MAX_BYTES + 1];
    size_t len, cursor = 0;
    ModLine kind;

    if (read_file_bounded(INIT_MODULES_LIST, MODULES_LIST_MAX_BYTES, &list, &len) < 0) {
        log_warn("no module list %s: %m", INIT_MODULES_LIST);
        return;
    }
    while ((kind = bootcfg_next_module(list, &cursor, name, sizeof(name))) != MODLINE_END) {
        char shown[64];
        if (kind == MODLINE_BAD)
            log_error("module list: refusing \"%s\"",
                      log_escape(shown, sizeof(shown), name, strlen(name)));
        else if (init_load_module(name) < 0)
            log_error("load module %s: %m", name);
        else
            log_debug("loaded module %s", name);
    }
}

static int
init_wait_path(const char *path, unsigned timeout_msec, mode_t type)
{
    uint64_t deadline = now_usec() + timeout_msec * USEC_PER_MSEC;
    struct timespec step = {0, BOOT_POLL_STEP_MSEC * 1000000L};
    struct stat st;

    while (stat(path, &st) < 0 || (st.st_mode & S_IFMT) != type) {
        if (now_usec() >= deadline) {
            errno = ETIMEDOUT;
            return -1;
        }
        nanosleep(&step, NULL);
    }
    return 0;
}

static int
init_switch_root(const BootConfig *cfg, Error **errp)
{
    if (init_wait_path(cfg->root, ROOT_WAIT_MSEC, S_IFBLK) < 0)
        return error_set(errp, E_INTERNAL, errno, "root device %s", cfg->root);
    (void) mkdir(INIT_NEWROOT, 0755);
    if (mount(cfg->root, INIT_NEWROOT, "ext4", MS_RDONLY, NULL) < 0)
        return error_set(errp, E_INTERNAL, errno, "mount %s on %s", cfg->root, INIT_NEWROOT);
    for (size_t i = ELEMENTSOF(early_mounts); i-- > 0;)
        (void) umount2(early_mounts[i].dst, MNT_DETACH); /* fds 0-2 keep the console open */
    if (switchroot_to(INIT_NEWROOT, errp) < 0)
        return -1;
    if (init_mount_all(early_mounts, ELEMENTSOF(early_mounts), errp) < 0)
        return -1;
    init_console(); /* reopen from the new /dev; the detached old one is released */
    return 0;
}

static bool
init_cgroups(void)
{
    struct statfs sfs;
    _cleanup_error_ Error *err = NULL;

    if (init_mount(&cgroup_mount, &err) < 0) {
        error_free(TAKE_PTR(err));
        if (init_mount(&cgroup_mount_plain, &err) < 0) {
            log_warn("%s; exec trees fall back to process groups", err->message);
            return false;
        }
    }
    return statfs(INIT_CGROUP_ROOT, &sfs) == 0 && sfs.f_type == CGROUP2_MAGIC;
}

/* The loopback interface up, so the egress proxy (and programs talking to themselves) can use
 * 127.0.0.1. It is the guest's only interface: there is no NIC and no resolver
 * configuration, so nothing else is reachable and no name resolves. */
static void
init_loopback_up(void)
{
    struct ifreq ifr = {0};
    _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
        goto fail_log;
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
        goto fail_log;
    return;

fail_log:
    log_warn("loopback interface: %m; the egress proxy will not be reachable");
}

static void
init_protect_self(void)
{
    char adj[16];
    _cleanup_close_ int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0 ||
        write_all(fd, adj, (size_t) snprintf(adj, sizeof(adj), "%d", RUNNER_OOM_SCORE_ADJ)) < 0)
        log_warn("oom_score_adj: %m");
}

int
init_boot(const BootConfig *cfg, InitResult *ret, Error **errp)
{
    init_load_modules();
    if (cfg->root[0] && init_switch_root(cfg, errp) < 0)
        return -1;
    if (init_mount_all(late_mounts, ELEMENTSOF(late_mounts), errp) < 0)
        return -1;
    (void) mkdir(INIT_WORKSPACE, 0755); /* the initramfs case; the root image has it */
    bool cgroups = init_cgroups();
    init_loopback_up();
    init_protect_self();
    int fd = port_open_wait(cfg->port, PORT_WAIT_MSEC, errp);
    if (fd < 0)
        return -1;
    *ret = (InitResult){.port_fd = fd, .cgroups = cgroups};
    return 0;
}

_Noreturn void
init_power_off(void)
{
    sync();
    /* Without ACPI (the fast template has none) the kernel turns a power-off into a halt:
     * the VM would sit there "running". Reboot instead; the host runs guests with
     * on_reboot=destroy (QEMU -no-reboot), so either way the domain ends. */
    if (access(INIT_ACPI_DIR, F_OK) == 0)
        (void) reboot(RB_POWER_OFF);
    (void) reboot(RB_AUTOBOOT);
    for (;;) /* not reached */
        pause();
}
