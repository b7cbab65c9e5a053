/* Choosing between KVM and TCG. accel=kvm|tcg is taken as configured; accel=auto proves KVM
 * by cold-booting the first shape's image under KVM and waiting for the runner's Ready within
 * kvm_probe_timeout (a stock kernel hangs on some nested KVMs, so /dev/kvm existing proves
 * nothing). The verdict is cached in <state>/accel (keyed by the host's boot id, the image
 * hash and kvm_probe_append) so a restart does not pay for the probe again.
 *
 * However the probe fails (QEMU dies, the kernel hangs or panics, the runner never syncs), it
 * is a verdict on this host's KVM and counts only in accel_probe_failures, never in the
 * pool's failure counters (broken, wedged, restore_failures) nor in its destroys: how KVM
 * fails differs between machines of one kind, and a pool health check must not see it.
 * Loop thread only. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "pool_internal.h"

#define ACCEL_CACHE_MAX_BYTES 1024
#define ACCEL_CACHE_KEY_MAX_BYTES (128 + POOL_PROBE_APPEND_MAX_BYTES)

void accel_probe_finished(Guest *g, bool ready, const char *why);

static void
accel_set(Pool *p, Accel a, const char *reason)
{
    p->accel = a;
    p->accel_decided = true;
    snprintf(p->accel_reason, sizeof(p->accel_reason), "%s", reason);
    if (a == ACCEL_TCG && p->cfg.accel == ACCEL_MODE_AUTO)
        log_warn("accel=auto chose TCG (software emulation, slow): %s", reason);
    else
        log_info("accel: %s (%s)", accel_to_string(a), reason);
}

static char *
accel_cache_path(Pool *p)
{
    char *path;
    return asprintf(&path, "%s/accel", p->cfg.state_dir) < 0 ? NULL : path;
}

/* The cache key: host boot id (a reboot may change KVM), the probe image's hash, and what
 * the probe's command line had appended (a probe made to fail on purpose decides nothing
 * for a probe without it). */
static int
accel_cache_key(Pool *p, char *out, size_t cap)
{
    _cleanup_free_ char *boot_id = NULL;
    size_t len;
    if (read_file_bounded("/proc/sys/kernel/random/boot_id", 64, &boot_id, &len) < 0)
        return -1;
    boot_id[strcspn(boot_id, "\n")] = '\0';
    snprintf(out, cap, "%s %s [%s]", boot_id, p->shapes[0].image->content_hash,
             p->cfg.kvm_probe_append);
    return 0;
}

static bool
accel_cache_read(Pool *p)
{
    _cleanup_free_ char *path = accel_cache_path(p), *text = NULL;
    char key[ACCEL_CACHE_KEY_MAX_BYTES], want[ACCEL_CACHE_KEY_MAX_BYTES + 16], why[400];
    size_t len;

    if (!path || accel_cache_key(p, key, sizeof(key)) < 0 ||
        read_file_bounded(path, ACCEL_CACHE_MAX_BYTES, &text, &len) < 0)
        return false;
    for (int a = ACCEL_TCG; a <= ACCEL_KVM; a++) {
        snprintf(want, sizeof(want), "%s %s\n", key, accel_to_string((Accel) a));
        if (strcmp(text, want) == 0) {
            snprintf(why, sizeof(why),
                     "cached verdict of an earlier KVM probe on this boot, no probe run "
                     "(remove %.300s to probe again)",
                     path);
            accel_set(p, (Accel) a, why);
            return true;
        }
    }
    log_info("accel=auto: the cached verdict in %s is for another boot, image or probe; "
             "probing again", path);
    return false;
}

static void
accel_cache_write(Pool *p)
{
    _cleanup_free_ char *path = accel_cache_path(p);
    char key[ACCEL_CACHE_KEY_MAX_BYTES], line[ACCEL_CACHE_KEY_MAX_BYTES + 16];
    if (!path || accel_cache_key(p, key, sizeof(key)) < 0)
        return;
    snprintf(line, sizeof(line), "%s %s\n", key, accel_to_string(p->accel));
    _cleanup_close_ int fd =
        open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || write_all(fd, line, strlen(line)) < 0)
        log_warn("cannot cache the accel verdict in %s: %s", path, strerror(errno));
}

static void
accel_probe_free(Guest *g)
{
    guest_free_fields(g);
    free(g);
}

static int
accel_probe_new(Pool *p, Guest **ret, Error **errp)
{
    const char *append = p->cfg.kvm_probe_append;
    Guest *g = calloc(1, sizeof(*g));
    if (!g)
        return error_set(errp, E_INTERNAL, ENOMEM, "probe");
    g->pool = p;
    g->shape = &p->shapes[0];
    g->probe = true;
    g->qemu_pid = -1;
    snprintf(g->name, sizeof(g->name), "%sprobe", p->cfg.domain_prefix);
    slot_uuid(p->cfg.state_dir, g->name, g->uuid); /* daemons on one host never collide */
    if ((append[0] && asprintf(&g->cmdline, "%s %s", g->shape->image->cmdline, append) < 0) ||
        guest_init_paths(g, p->cfg.state_dir) < 0 || slot_prepare_xml(g, errp) < 0) {
        accel_probe_free(g);
        return errp && *errp ? -1 : error_set(errp, E_INTERNAL, ENOMEM, "probe");
    }
    *ret = g;
    return 0;
}

void
accel_probe_finished(Guest *g, bool ready, const char *why)
{
    Pool *p = g->pool;
    if (!p->accel_decided && (ready || why)) {
        char reason[256];
        if (ready)
            snprintf(reason, sizeof(reason), "a KVM guest booted to Ready");
        else
            snprintf(reason, sizeof(reason), "KVM probe failed: %s", why);
        p->stats.accel_probe_failures += !ready;
        accel_set(p, ready ? ACCEL_KVM : ACCEL_TCG, reason);
        accel_cache_write(p);
        if (ready)
            slot_destroy(g, false);
        p->on_accel_decided(p);
        return;
    }
    if (!ready && !why && g->destroy_done && g->pid_gone) { /* the probe domain is gone */
        p->probe = NULL;
        accel_probe_free(g);
        pool_check_stopped(p);
        pool_fill(p);
    }
}

void
pool_decide_accel(Pool *p, void (*decided)(Pool *p))
{
    _cleanup_error_ Error *err = NULL;

    p->on_accel_decided = decided;
    if (p->cfg.accel == ACCEL_MODE_TCG || p->cfg.accel == ACCEL_MODE_KVM) {
        accel_set(p, p->cfg.accel == ACCEL_MODE_KVM ? ACCEL_KVM : ACCEL_TCG, "configured");
        decided(p);
        return;
    }
    /* A probe made to fail on purpose under TCG (tests) runs whatever this host's KVM is. */
    if (!p->cfg.kvm_probe_under_tcg && access("/dev/kvm", R_OK | W_OK) < 0) {
        accel_set(p, ACCEL_TCG, "no usable /dev/kvm");
        decided(p);
        return;
    }
    if (accel_cache_read(p)) {
        decided(p);
        return;
    }
    if (accel_probe_new(p, &p->probe, &err) < 0) {
        accel_set(p, ACCEL_TCG, err->message);
        decided(p);
        return;
    }
    p->stats.accel_probes++;
    log_info("accel=auto: probing KVM with %s (up to %llu s%s%s)", p->probe->name,
             (unsigned long long) (p->cfg.kvm_probe_timeout_usec / 1000000),
             p->cfg.kvm_probe_append[0] ? "; appended to its command line: " : "",
             p->cfg.kvm_probe_append);
    slot_start_boot(p->probe);
}
