/* Internal: the appliance object shared by appliance.c (launch, health, teardown) and
 * salvage.c (one salvage). Not part of the module's API. */
#pragma once

#include <guestfs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "extract.h"
#include "timeutil.h"

#define EXTRACT_KILL_GRACE_USEC (15 * USEC_PER_SEC) /* after max_usec, then SIGKILL qemu */
#define EXTRACT_GUESTFS_ERR_BYTES 300u              /* escaped libguestfs error text kept */
#define APPLIANCE_CONSOLE_BYTES 2048u               /* tail of its console, for a failed launch */
#define APPLIANCE_TOKEN_BYTES 40u                   /* "stockade.launch=" + 16 hex digits + NUL */

struct ExtractAppliance {
    pthread_mutex_t lock; /* one salvage at a time */
    guestfs_h *g;
    size_t n_disks;
    char **devices; /* shell path of each disk index (/dev/disk/guestfs/wsX), NULL-ended */
    atomic_bool dead;
    pid_t qemu_pid;
    /* Appended to the appliance kernel's command line, so it is in qemu's argv: how the launch
     * watchdog finds a qemu that libguestfs has not told us about yet. */
    char launch_token[APPLIANCE_TOKEN_BYTES];
    unsigned launch_kills; /* by the watchdog thread; read after it is joined */
    /* the launch's deadline (monotonic) and its cancel flag (ExtractConfig.cancel) */
    uint64_t launch_deadline_usec;
    const atomic_bool *launch_cancel;
    bool launch_gave_up, launch_cancelled; /* by the watchdog thread, as launch_kills */
    char console[APPLIANCE_CONSOLE_BYTES]; /* ring; written in the thread calling libguestfs */
    size_t console_total;
};

/* Fills *errp from the handle's last error (escaped: it may quote guest-chosen names). */
int appliance_error(guestfs_h *g, Error **errp, ErrorCategory category, const char *what);

/* After a failed call: marks the appliance dead if qemu or its daemon is gone. Returns the
 * new liveness. Caller holds a->lock. */
bool appliance_recheck(ExtractAppliance *a);

/* Runs a shell script in the appliance (guestfs_debug "sh"); stdout+stderr come back in
 * *ret_out if non-NULL. Fails when the script exits non-zero. */
int appliance_sh(ExtractAppliance *a, const char *script, char **ret_out, Error **errp);
