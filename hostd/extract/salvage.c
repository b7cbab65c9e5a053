/* One salvage on a warm appliance, and the cold one-shot variant.
 *
 * Steps (serialised per appliance by a->lock):
 *  1. setup:    brd RAM disk + dm-snapshot of the slot's (read-only) disk. Journal replay on
 *               mount writes only into the RAM disk, never into libguestfs's qcow2 overlay:
 *               an overlay write would hide every later reset of that slot.
 *  2. mount:    ext4 only, ro,nosuid,nodev,noexec at the appliance's /sysroot.
 *  3. guard:    the tar root is the mounted filesystem's root: lstat must say directory
 *               (tar_out follows its top-level path if that is a symlink).
 *  4. pre-scan: find files over max_file_bytes (apparent size) and exclude them, so a sparse
 *               monster is never densified through the stream. lost+found is excluded too.
 *  5. stream:   tar_out into a pipe on a helper thread; extract_untar() reads it here. When a
 *               cap stops the reader, guestfs_user_cancel() is repeated while the pipe is
 *               drained (the library resets the flag when the transfer starts, and the pipe's
 *               read end must stay open: a write into a closed pipe would raise SIGPIPE in
 *               the daemon). The daemon then kills its tar; the handle stays usable.
 *  6. teardown: unmount, remove the snapshot, unload brd (frees its RAM). Always runs; if it
 *               fails the appliance is marked dead (a stale mount would serve old content).
 * A watchdog kills qemu EXTRACT_KILL_GRACE_USEC after the deadline if a call hangs. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "appliance.h"
#include "log.h"
#include "prescan.h"
#include "watchdog.h"

#define SALVAGE_DM_NAME "stk_salvage"
#define SALVAGE_DM_DEV "/dev/mapper/" SALVAGE_DM_NAME
#define SALVAGE_COW_KIB (128u * 1024u) /* RAM for journal replay; overflow fails the mount */
#define SALVAGE_SCRIPT_BYTES 640u
#define SALVAGE_PIPE_BYTES (1024 * 1024)
#define SALVAGE_DRAIN_BYTES (16u * 1024u)
#define SALVAGE_SCAN_SHARE 4u        /* the pre-scan gets 1/4 of the time left ... */
#define SALVAGE_SCAN_MIN_MSEC 1000u  /* ... but at least this */
#define SALVAGE_ERR_SAMPLE_BYTES 96u /* of unexpected appliance output, escaped */
#define SALVAGE_MOUNT_OPTS "ro,nosuid,nodev,noexec"

static const char *const salvage_fixed_excludes[] = {"./lost+found"};

/* ---------------------------------------------------------------- watchdog */

static void
salvage_kill(void *arg)
{
    ExtractAppliance *a = arg;
    atomic_store(&a->dead, true);
    (void) kill(a->qemu_pid, SIGKILL); /* every pending call then fails */
}

/* ---------------------------------------------------------------- steps 1-4 */

static int
salvage_setup(ExtractAppliance *a, const char *dev, Error **errp)
{
    char script[SALVAGE_SCRIPT_BYTES];
    snprintf(script, sizeof(script),
             "set -e; modprobe brd rd_nr=1 rd_size=%u; blockdev --flushbufs %s; "
             "echo 0 $(blockdev --getsz %s) snapshot %s /dev/ram0 N 8 | dmsetup create %s",
             SALVAGE_COW_KIB, dev, dev, dev, SALVAGE_DM_NAME);
    return appliance_sh(a, script, NULL, errp) < 0 ? error_prefix(errp, "snapshot") : 0;
}

static int
salvage_teardown(ExtractAppliance *a, Error **errp)
{
    static const char script[] =
        "dmsetup remove --retry " SALVAGE_DM_NAME " >/dev/null 2>&1; rmmod brd 2>/dev/null; "
        "! dmsetup info " SALVAGE_DM_NAME " >/dev/null 2>&1 && ! test -e /sys/module/brd";
    if (guestfs_umount_all(a->g) < 0) {
        appliance_error(a->g, errp, E_UNAVAILABLE, "unmount");
        atomic_store(&a->dead, true);
        return -1;
    }
    if (appliance_sh(a, script, NULL, errp) < 0) {
        atomic_store(&a->dead, true);
        return error_prefix(errp, "remove snapshot");
    }
    return 0;
}

static int
salvage_mount(ExtractAppliance *a, Error **errp)
{
    if (guestfs_mount_vfs(a->g, SALVAGE_MOUNT_OPTS, "ext4", SALVAGE_DM_DEV, "/") < 0) {
        ErrorCategory c = appliance_recheck(a) ? E_GUEST : E_UNAVAILABLE;
        return appliance_error(a->g, errp, c, "mount workspace");
    }
    struct guestfs_statns *st = guestfs_lstatns(a->g, "/");
    if (!st) {
        appliance_recheck(a);
        return appliance_error(a->g, errp, E_GUEST, "lstat workspace root");
    }
    bool dir = S_ISDIR((mode_t) st->st_mode);
    guestfs_free_statns(st);
    return dir ? 0 : error_set(errp, E_GUEST, 0, "workspace root is not a directory");
}

static char **
salvage_prescan(ExtractAppliance *a, const ExtractLimits *lim, uint64_t time_left_usec,
                size_t *ret_n, bool *ret_capped, Error **errp)
{
    char script[SALVAGE_SCRIPT_BYTES];
    _cleanup_free_ char *out = NULL;
    /* One record per entry, in tar's order (both walk depth-first in readdir order): "x" for
     * most, "B<name>" for a file over the cap. head stops the walk after max_files records,
     * as the stream stops there too, so a 100 000-file tree is not stat'ed in full; timeout
     * keeps it to a share of the time budget (the subshell's stderr is dropped: the shell
     * reports the killed find as "Killed"). The scan is best effort: whatever it missed
     * is still bounded by the stream's byte, entry and time caps. */
    uint64_t budget_ms = MAX(SALVAGE_SCAN_MIN_MSEC, time_left_usec / SALVAGE_SCAN_SHARE / 1000);
    snprintf(script, sizeof(script),
             "export LC_ALL=C; cd /sysroot && ( { timeout -s KILL %" PRIu64 ".%03us "
             "find . -xdev -path ./lost+found -prune -o "
             "\\( -type f -size +%" PRIu64 "c -printf 'B%%p\\0' \\) -o -printf 'x\\0' "
             "2>/dev/null; } | head -z -n %u | grep -a -z '^B' | cut -z -b2- | head -c %u | "
             "od -An -v -tx1 ) 2>/dev/null",
             budget_ms / 1000, (unsigned) (budget_ms % 1000), lim->max_file_bytes, lim->max_files,
             PRESCAN_OUTPUT_MAX_BYTES);
    if (appliance_sh(a, script, &out, errp) < 0) {
        error_prefix(errp, "pre-scan");
        return NULL;
    }
    char **list = prescan_excludes(out, salvage_fixed_excludes, ELEMENTSOF(salvage_fixed_excludes),
                                   ret_n, ret_capped);
    if (!list) {
        char esc[SALVAGE_ERR_SAMPLE_BYTES];
        log_escape(esc, sizeof(esc), out, strlen(out));
        error_set(errp, E_INTERNAL, 0, "pre-scan output not understood: \"%s\"", esc);
    }
    return list;
}

/* ---------------------------------------------------------------- step 5 */

typedef struct TarOutJob {
    guestfs_h *g;
    int wfd;
    char **excludes;
    int r, err;
    char msg[EXTRACT_GUESTFS_ERR_BYTES];
} TarOutJob;

static void *
tar_out_main(void *p)
{
    TarOutJob *j = p;
    char path[32];
    guestfs_set_error_handler(j->g, NULL, NULL); /* the handler is per thread too */
    snprintf(path, sizeof(path), "/dev/fd/%d", j->wfd);
    j->r = guestfs_tar_out_opts(j->g, "/", path, GUESTFS_TAR_OUT_OPTS_NUMERICOWNER, 1,
                                GUESTFS_TAR_OUT_OPTS_EXCLUDES, j->excludes, -1);
    if (j->r < 0) { /* the last error is per thread: read it here */
        const char *m = guestfs_last_error(j->g);
        j->err = guestfs_last_errno(j->g);
        log_escape(j->msg, sizeof(j->msg), m ? m : "?", strlen(m ? m : "?"));
    }
    j->wfd = safe_close(j->wfd); /* the reader sees EOF once the library closed its copy */
    return NULL;
}

/* Reads the pipe to EOF. With cancel, asks libguestfs to cancel on every turn: a cancel
 * issued before the transfer started would be forgotten. */
static void
salvage_drain(guestfs_h *g, int rfd, bool cancel)
{
    char buf[SALVAGE_DRAIN_BYTES];
    for (;;) {
        if (cancel)
            (void) guestfs_user_cancel(g);
        ssize_t n = read(rfd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EINTR))
            return;
    }
}

static int
salvage_stream(ExtractAppliance *a, char **excludes, int dest_fd, const ExtractLimits *lim,
               ExtractStats *stats, Error **errp)
{
    int p[2];
    pthread_t t;
    if (pipe2(p, O_CLOEXEC) < 0)
        return error_set(errp, E_IO, errno, "pipe");
    (void) fcntl(p[0], F_SETPIPE_SZ, SALVAGE_PIPE_BYTES);
    _cleanup_close_ int rfd = p[0];
    TarOutJob job = {.g = a->g, .wfd = p[1], .excludes = excludes};
    if (pthread_create(&t, NULL, tar_out_main, &job) != 0) {
        safe_close(p[1]);
        return error_set(errp, E_INTERNAL, 0, "thread");
    }
    int r = extract_untar(rfd, dest_fd, lim, stats, errp);
    salvage_drain(a->g, rfd, r < 0 || stats->stop != EXTRACT_STOP_NONE);
    pthread_join(t, NULL);
    if (r < 0 || job.r == 0)
        return r;
    if (r == 0 && stats->stop != EXTRACT_STOP_NONE && stats->stop != EXTRACT_STOP_MALFORMED)
        return 0; /* we cancelled it */
    if (!appliance_recheck(a))
        return error_set(errp, E_UNAVAILABLE, job.err, "tar-out: %s", job.msg);
    stats->truncated = true; /* tar reported an error (e.g. unreadable file): kept the rest */
    return 0;
}

/* ---------------------------------------------------------------- entry points */

static int
salvage_locked(ExtractAppliance *a, const char *dev, int dest_fd, const ExtractLimits *lim,
               uint64_t deadline_usec, ExtractStats *stats, Error **errp)
{
    size_t n_ex = 0;
    bool capped = false;
    uint64_t t0 = now_usec();
    if (salvage_setup(a, dev, errp) < 0 || salvage_mount(a, errp) < 0)
        return -1;
    uint64_t t1 = now_usec();
    stats->mount_usec = t1 - t0;
    char **excludes =
        salvage_prescan(a, lim, deadline_usec > t1 ? deadline_usec - t1 : 0, &n_ex, &capped, errp);
    if (!excludes)
        return -1;
    ExtractLimits left = *lim;
    uint64_t t2 = now_usec();
    left.max_usec = deadline_usec > t2 ? deadline_usec - t2 : 0;
    int r = salvage_stream(a, excludes, dest_fd, &left, stats, errp);
    prescan_free(excludes);
    stats->mount_usec = t1 - t0; /* extract_untar() reset the stats */
    stats->scan_usec = t2 - t1;
    stats->stream_usec = now_usec() - t2;
    stats->skipped += (uint32_t) (n_ex - ELEMENTSOF(salvage_fixed_excludes));
    if (capped || n_ex > ELEMENTSOF(salvage_fixed_excludes))
        stats->truncated = true;
    return r;
}

int
extract_salvage(ExtractAppliance *a, size_t index, int dest_dirfd, const ExtractLimits *lim,
                ExtractStats *stats, Error **errp)
{
    uint64_t start = now_usec();
    uint64_t deadline = start + MIN(lim->max_usec, UINT64_MAX / 4);
    Watchdog w;

    *stats = (ExtractStats){0};
    if (index >= a->n_disks)
        return error_set(errp, E_INVALID, 0, "no disk #%zu in this appliance", index);
    pthread_mutex_lock(&a->lock);
    if (atomic_load(&a->dead)) {
        pthread_mutex_unlock(&a->lock);
        return error_set(errp, E_UNAVAILABLE, 0, "extraction appliance is dead");
    }
    guestfs_set_error_handler(a->g, NULL, NULL); /* per thread: silence this caller's too */
    if (watchdog_start(&w, deadline + EXTRACT_KILL_GRACE_USEC, 0, salvage_kill, a) < 0) {
        pthread_mutex_unlock(&a->lock);
        return error_set(errp, E_INTERNAL, 0, "watchdog thread");
    }
    int r = salvage_locked(a, a->devices[index], dest_dirfd, lim, deadline, stats, errp);
    uint64_t t_clean = now_usec();
    (void) salvage_teardown(a, NULL); /* a failure marks the appliance dead, nothing more */
    stats->cleanup_usec = now_usec() - t_clean;
    if (watchdog_stop(&w))
        r = error_set(errp, E_TIMEOUT, 0, "salvage hung past its deadline; appliance killed");
    if (r < 0 && stats->stop == EXTRACT_STOP_NONE)
        stats->stop = EXTRACT_STOP_ERROR;
    pthread_mutex_unlock(&a->lock);
    return r;
}

int
extract_salvage_cold(const char *disk_path, const ExtractConfig *cfg, int dest_dirfd,
                     const ExtractLimits *lim, ExtractStats *stats, Error **errp)
{
    _cleanup_extract_appliance_ ExtractAppliance *a = NULL;
    const char *disks[] = {disk_path};
    *stats = (ExtractStats){0};
    if (extract_appliance_start(disks, 1, cfg, &a, errp) < 0)
        return -1;
    return extract_salvage(a, 0, dest_dirfd, lim, stats, errp);
}
