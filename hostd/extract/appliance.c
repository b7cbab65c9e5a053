/* The warm libguestfs appliance: launch with every workspace disk attached read-only (raw),
 * one-time setup inside it, liveness, shutdown. Configured only through the API
 * (GUESTFS_CREATE_NO_ENVIRONMENT): LIBGUESTFS_* variables cannot steer it. Errors from
 * libguestfs are captured, escaped and returned; its own printing is switched off. */
#include "appliance.h"

#include <ctype.h>
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "appliance_qemu.h"
#include "log.h"
#include "procfs.h"
#include "watchdog.h"

#define APPLIANCE_DEFAULT_MEMSIZE_MIB 512u
#define APPLIANCE_DEFAULT_SMP 2u
#define APPLIANCE_MAX_DISKS 26u     /* one virtio-scsi letter each; the pool is far smaller */
#define APPLIANCE_LABEL_PREFIX "ws" /* disk labels: [a-zA-Z] only, per libguestfs */
#define APPLIANCE_LABEL_DIR "/dev/disk/guestfs/"
#define APPLIANCE_SCRIPT_BYTES 1024u /* fits APPLIANCE_MAX_DISKS device paths */
#define APPLIANCE_TOKEN_KEY "stockade.launch="
#define APPLIANCE_CONSOLE_LOG_BYTES 600u       /* of the console tail, escaped, in the log */

int
appliance_error(guestfs_h *g, Error **errp, ErrorCategory category, const char *what)
{
    const char *msg = guestfs_last_error(g);
    char esc[EXTRACT_GUESTFS_ERR_BYTES];
    log_escape(esc, sizeof(esc), msg ? msg : "unknown error", strlen(msg ? msg : "unknown error"));
    return error_set(errp, category, 0, "%s: %s", what, esc);
}

bool
appliance_recheck(ExtractAppliance *a)
{
    if (atomic_load(&a->dead))
        return false;
    if (guestfs_is_ready(a->g) != 1 || (a->qemu_pid > 0 && kill(a->qemu_pid, 0) < 0))
        atomic_store(&a->dead, true);
    return !atomic_load(&a->dead);
}

int
appliance_sh(ExtractAppliance *a, const char *script, char **ret_out, Error **errp)
{
    char *argv[] = {(char *) script, NULL};
    char *out = guestfs_debug(a->g, "sh", argv);
    if (!out) {
        appliance_recheck(a);
        return appliance_error(a->g, errp, E_INTERNAL, "appliance shell");
    }
    if (ret_out)
        *ret_out = out;
    else
        free(out);
    return 0;
}

/* The hypervisor wrapper: cfg's, or APPLIANCE_QEMU_NAME beside /proc/self/exe. */
static int
appliance_qemu_path(const ExtractConfig *cfg, char *buf, size_t cap, Error **errp)
{
    char self[PATH_MAX];
    int n;

    if (cfg->qemu_wrapper) {
        n = snprintf(buf, cap, "%s", cfg->qemu_wrapper);
    } else {
        ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (len < 0)
            return error_set(errp, E_UNAVAILABLE, errno, "find the running program");
        self[len] = '\0';
        n = snprintf(buf, cap, "%s/%s", dirname(self), APPLIANCE_QEMU_NAME);
    }
    if (n < 0 || (size_t) n >= cap)
        return error_set(errp, E_INVALID, ENAMETOOLONG, "appliance qemu wrapper path");
    if (access(buf, X_OK) < 0) /* fail closed: never a privileged qemu instead */
        return error_set(errp, E_UNAVAILABLE, errno, "appliance qemu wrapper %s", buf);
    return 0;
}

static int
appliance_configure(guestfs_h *g, const ExtractConfig *cfg, Error **errp)
{
    char hv[PATH_MAX];
    if (appliance_qemu_path(cfg, hv, sizeof(hv), errp) < 0)
        return -1;
    char *tcg[] = {(char *) "force_tcg", NULL};
    unsigned mem = cfg->memsize_mib ? cfg->memsize_mib : APPLIANCE_DEFAULT_MEMSIZE_MIB;
    unsigned smp = cfg->smp ? cfg->smp : APPLIANCE_DEFAULT_SMP;

    guestfs_set_error_handler(g, NULL, NULL);
    /* qemu runs through the wrapper: unprivileged, seccomp, disks as read-only fds. */
    if (guestfs_set_backend(g, "direct") < 0 || guestfs_set_hv(g, hv) < 0 ||
        (cfg->force_tcg && guestfs_set_backend_settings(g, tcg) < 0) ||
        guestfs_set_memsize(g, (int) mem) < 0 || guestfs_set_smp(g, (int) smp) < 0 ||
        guestfs_set_autosync(g, 0) < 0 || guestfs_set_pgroup(g, 1) < 0 ||
        guestfs_set_network(g, 0) < 0 ||
        (cfg->state_dir && guestfs_set_tmpdir(g, cfg->state_dir) < 0) ||
        (cfg->cache_dir && guestfs_set_cachedir(g, cfg->cache_dir) < 0))
        return appliance_error(g, errp, E_INVALID, "configure appliance");
    return 0;
}

/* The daemon translates API device names (/dev/sdb = second disk added), but the appliance's
 * shell sees kernel names, whose order SCSI probing decides (measured: with three disks,
 * salvaging index 1 through the shell name /dev/sdb returned index 2's files). So each disk
 * gets a label and shell scripts use the udev link /dev/disk/guestfs/<label>, which follows
 * the disk itself. */
static void
appliance_label(size_t index, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%c", APPLIANCE_LABEL_PREFIX, (char) ('a' + index));
}

static int
appliance_prepare(ExtractAppliance *a, Error **errp)
{
    char **devs = guestfs_list_devices(a->g);
    size_t n = 0, o = 0;
    if (!devs)
        return appliance_error(a->g, errp, E_INTERNAL, "list devices");
    while (devs[n])
        free(devs[n++]);
    free(devs);
    if (n != a->n_disks)
        return error_set(errp, E_INTERNAL, 0, "appliance shows %zu disks, %zu attached", n,
                         a->n_disks);
    a->devices = calloc(n + 1, sizeof(char *));
    _cleanup_free_ char *script = malloc(APPLIANCE_SCRIPT_BYTES);
    if (!a->devices || !script)
        return error_set(errp, E_INTERNAL, ENOMEM, "appliance");
    /* Nothing in the appliance may write to the disks themselves: journal replay goes to a
     * dm-snapshot (salvage.c), and a direct mount of a dirty journal now fails. */
    o = (size_t) snprintf(script, APPLIANCE_SCRIPT_BYTES,
                          "set -e; modprobe dm-snapshot; "
                          "blockdev --setro");
    for (size_t i = 0; i < n; i++) {
        char label[8];
        appliance_label(i, label, sizeof(label));
        if (asprintf(&a->devices[i], "%s%s", APPLIANCE_LABEL_DIR, label) < 0) {
            a->devices[i] = NULL;
            return error_set(errp, E_INTERNAL, ENOMEM, "appliance");
        }
        o += (size_t) snprintf(script + o, APPLIANCE_SCRIPT_BYTES - o, " %s", a->devices[i]);
    }
    if (appliance_sh(a, script, NULL, errp) < 0)
        return error_prefix(errp, "prepare disks");
    a->qemu_pid = guestfs_get_pid(a->g);
    return a->qemu_pid > 0 ? 0 : appliance_error(a->g, errp, E_INTERNAL, "appliance pid");
}

/* ---------------------------------------------------------------- launch watchdog */

/* Watchdog, every EXTRACT_CANCEL_POLL_USEC: once the launch is cancelled or past its deadline,
 * SIGKILL our child whose argv carries this launch's token (qemu, which has the token in
 * -append); guestfs_launch then fails at once with the connection closed. */
static void
launch_kill(void *arg)
{
    ExtractAppliance *a = arg;
    pid_t self = getpid();
    bool cancelled = a->launch_cancel && atomic_load(a->launch_cancel);
    if (!cancelled && now_usec() < a->launch_deadline_usec)
        return;
    a->launch_gave_up = true;
    a->launch_cancelled |= cancelled;
    DIR *d = opendir("/proc");
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char) e->d_name[0]))
            continue;
        pid_t pid = (pid_t) strtol(e->d_name, NULL, 10);
        ProcStat st;
        if (pid > 1 && proc_stat_read(pid, &st) == 0 && st.ppid == self &&
            proc_cmdline_contains(pid, a->launch_token)) {
            log_warn("extraction appliance: launch %s; killing qemu %d",
                     cancelled ? "cancelled" : "past its deadline", (int) pid);
            if (kill(pid, SIGKILL) == 0)
                a->launch_kills++;
        }
    }
    closedir(d);
}

static int
launch_token_make(ExtractAppliance *a, Error **errp)
{
    uint64_t r;
    if (getrandom(&r, sizeof(r), 0) != (ssize_t) sizeof(r))
        return error_set(errp, E_INTERNAL, errno, "getrandom");
    snprintf(a->launch_token, sizeof(a->launch_token), APPLIANCE_TOKEN_KEY "%016" PRIx64, r);
    return 0;
}

/* ---------------------------------------------------------------- console tail */

static void
console_event(guestfs_h *g, void *opaque, uint64_t event, int event_handle, int flags,
              const char *buf, size_t buf_len, const uint64_t *array, size_t array_len)
{
    ExtractAppliance *a = opaque;
    (void) g, (void) event, (void) event_handle, (void) flags, (void) array, (void) array_len;
    for (size_t i = 0; i < buf_len; i++)
        a->console[a->console_total++ % APPLIANCE_CONSOLE_BYTES] = buf[i];
}

/* Logs the last bytes the appliance printed (escaped: a disk's content may reach it). */
static void
console_log_tail(const ExtractAppliance *a)
{
    size_t n = MIN(a->console_total, (size_t) APPLIANCE_CONSOLE_LOG_BYTES);
    char raw[APPLIANCE_CONSOLE_LOG_BYTES] = {0}, esc[APPLIANCE_CONSOLE_LOG_BYTES * 4 + 1];
    for (size_t i = 0; i < n; i++)
        raw[i] = a->console[(a->console_total - n + i) % APPLIANCE_CONSOLE_BYTES];
    log_escape(esc, sizeof(esc), raw, n);
    log_warn("extraction appliance console, last %zu of %zu bytes: %s", n, a->console_total,
             n ? esc : "(nothing printed)");
}

/* ---------------------------------------------------------------- start */

static int
appliance_add_disks(guestfs_h *g, const char *const *disk_paths, size_t n_disks, Error **errp)
{
    for (size_t i = 0; i < n_disks; i++) {
        char label[8];
        appliance_label(i, label, sizeof(label));
        if (guestfs_add_drive_opts(g, disk_paths[i], GUESTFS_ADD_DRIVE_OPTS_READONLY, 1,
                                   GUESTFS_ADD_DRIVE_OPTS_FORMAT, "raw",
                                   GUESTFS_ADD_DRIVE_OPTS_LABEL, label, -1) < 0)
            return appliance_error(g, errp, E_INVALID, "add disk");
    }
    return 0;
}

int
extract_appliance_start(const char *const *disk_paths, size_t n_disks, const ExtractConfig *cfg,
                        ExtractAppliance **ret, Error **errp)
{
    if (n_disks == 0 || n_disks > APPLIANCE_MAX_DISKS)
        return error_set(errp, E_INVALID, 0, "appliance needs 1..%u disks, got %zu",
                         APPLIANCE_MAX_DISKS, n_disks);
    _cleanup_extract_appliance_ ExtractAppliance *a = calloc(1, sizeof(*a));
    if (!a)
        return error_set(errp, E_INTERNAL, ENOMEM, "appliance");
    pthread_mutex_init(&a->lock, NULL);
    a->n_disks = n_disks;
    a->g = guestfs_create_flags(GUESTFS_CREATE_NO_ENVIRONMENT);
    if (!a->g)
        return error_set(errp, E_INTERNAL, errno, "guestfs_create");
    if (appliance_configure(a->g, cfg, errp) < 0 ||
        appliance_add_disks(a->g, disk_paths, n_disks, errp) < 0 || launch_token_make(a, errp) < 0)
        return -1;
    if (guestfs_set_append(a->g, a->launch_token) < 0 ||
        guestfs_set_event_callback(a->g, console_event, GUESTFS_EVENT_APPLIANCE, 0, a) < 0)
        return appliance_error(a->g, errp, E_INTERNAL, "configure appliance");

    uint64_t timeout = cfg->launch_timeout_usec ? cfg->launch_timeout_usec
                       : cfg->force_tcg         ? EXTRACT_LAUNCH_TCG_USEC
                                                : EXTRACT_LAUNCH_KVM_USEC;
    Watchdog w;
    a->launch_deadline_usec = now_usec() + timeout;
    a->launch_cancel = cfg->cancel;
    uint64_t first = cfg->cancel ? now_usec() + EXTRACT_CANCEL_POLL_USEC : a->launch_deadline_usec;
    int r = watchdog_start(&w, first, EXTRACT_CANCEL_POLL_USEC, launch_kill, a);
    if (r < 0)
        return error_set(errp, E_INTERNAL, -r, "launch watchdog thread");
    if (guestfs_launch(a->g) < 0)
        r = appliance_error(a->g, errp, E_UNAVAILABLE, "launch appliance");
    else
        r = appliance_prepare(a, errp);
    (void) watchdog_stop(&w);
    if (a->launch_gave_up) {
        if (errp) { /* the library's "connection closed" says less than this */
            error_free(*errp);
            *errp = NULL;
        }
        const char *killed = a->launch_kills ? "qemu killed" : "its qemu was not found";
        r = a->launch_cancelled
                ? error_set(errp, E_UNAVAILABLE, 0, "appliance launch cancelled; %s", killed)
                : error_set(errp, E_TIMEOUT, 0,
                            "appliance launch did not finish within %" PRIu64 " s; %s",
                            timeout / USEC_PER_SEC, killed);
    }
    if (r < 0) {
        if (!a->launch_cancelled)
            console_log_tail(a);
        return -1;
    }
    *ret = TAKE_PTR(a);
    return 0;
}

bool
extract_appliance_alive(ExtractAppliance *a)
{
    return a && !atomic_load(&a->dead);
}

void
extract_appliance_free(ExtractAppliance *a)
{
    if (!a)
        return;
    if (a->g) {
        guestfs_set_error_handler(a->g, NULL, NULL); /* per thread: this one's too */
        if (!atomic_load(&a->dead))
            (void) guestfs_shutdown(a->g);
        guestfs_close(a->g);
    }
    if (a->devices) {
        for (char **p = a->devices; *p; p++)
            free(*p);
        free(a->devices);
    }
    pthread_mutex_destroy(&a->lock);
    free(a);
}
