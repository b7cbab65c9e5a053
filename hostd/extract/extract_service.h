/* The warm extraction appliance as a service on the daemon's loop (issue 17): the sessions
 * ask it for salvages and hear back on the loop; it owns the appliance's life cycle.
 *
 *   waiting -> starting -> up           (launched once every workspace disk exists, in
 *                       -> failed       parallel with the pool's accel decision)
 *   up -> waiting       the appliance died in a salvage, or it runs under TCG and the host
 *                       has since proven KVM and no salvage uses it: it is freed and
 *                       launched again
 *   failed -> waiting   after EXTRACT_SERVICE_RETRY_USEC
 *
 * The first launch runs under TCG while the accel is undecided (TCG works on every host).
 * A salvage asked while a launch is coming waits for it rather than launch cold; one asked
 * while none is coming (a failed launch) launches a cold appliance for its one disk. What
 * the service knows of the host's guests (their workspace disks, the accel decision) comes
 * through ExtractHost, so extract/ uses no pool code. Loop thread only, unless noted. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "extract.h"
#include "loop.h"
#include "workq.h"

#define EXTRACT_SERVICE_POLL_USEC (100ull * 1000)        /* waiting for the disks or the accel */
#define EXTRACT_SERVICE_RETRY_USEC (30ull * 1000 * 1000) /* after a failed launch */
#define EXTRACT_SERVICE_MEMSIZE_MIB 512
#define EXTRACT_SERVICE_SMP 2

typedef struct ExtractHostState {
    bool disks_ready;   /* every disk disks() lists exists (the appliance attaches them all) */
    bool accel_decided; /* whether guests run under KVM or TCG is known */
    bool kvm;           /* ... and it is KVM */
} ExtractHostState;

typedef struct ExtractHost {
    void (*state)(void *userdata, ExtractHostState *ret); /* loop thread */
    /* The workspace disks by index (a salvage names one by its index). Any thread: the list
     * is fixed for the host's lifetime. */
    size_t (*disks)(void *userdata, const char *const **ret);
    void *userdata;
} ExtractHost;

typedef struct ExtractRequest {
    size_t disk_index;
    const char *dest_dir; /* copied; created 0700 if missing; files go beneath it */
    ExtractLimits limits;
    /* Worker thread, after the salvage whatever its result (files read before a failure
     * stay): e.g. merging them elsewhere. *errp is NULL unless the salvage failed. May be
     * NULL. */
    void (*after_work)(void *userdata, ExtractStats *stats, Error **errp);
    /* Loop thread: the result (err NULL on success; both borrowed). Always called once,
     * unless the service is freed first. */
    void (*done)(void *userdata, const ExtractStats *stats, const Error *err);
    void *userdata;
} ExtractRequest;

typedef struct ExtractServiceStatus {
    const char *state; /* "waiting", "starting", "up", "failed" */
    bool force_tcg;    /* of the appliance that is up or starting */
    unsigned running;  /* salvages on the warm appliance now */
    unsigned waiting;  /* salvages waiting for a launch */
    uint64_t launches, launch_failures;
    uint64_t launch_usec; /* the last launch that came up */
} ExtractServiceStatus;

typedef struct ExtractService ExtractService;

/* Salvages and launches run on q (keep it apart from the pool's, so a salvage never waits
 * behind guest restores); state_dir is copied (libguestfs's overlays go there). */
int extract_service_new(Loop *l, WorkQueue *q, const ExtractHost *host, const char *state_dir,
                        ExtractService **ret, Error **errp);
/* Launches as soon as the host's disks exist. Salvages asked before this wait for it. */
void extract_service_start(ExtractService *x);
/* Queues one salvage; r is copied. Never fails: an error reaches r->done. */
void extract_service_salvage(ExtractService *x, const ExtractRequest *r);
/* No launch from now on (one in flight still comes up and serves what waits for it); later
 * salvages run on the warm appliance, or cold. For the start of the daemon's stop, while the
 * sessions still end and salvage. */
void extract_service_wind_down(ExtractService *x);
/* Winds down (as above), and once no launch is in flight: with no salvage running, the appliance is
 * shut down on a worker, then done(userdata); with salvages still running (a stop that
 * gave up waiting for them), done at once and the appliance is left to
 * extract_service_free(). Further calls are ignored. */
void extract_service_stop(ExtractService *x, void (*done)(void *userdata), void *userdata);
void extract_service_status(const ExtractService *x, ExtractServiceStatus *ret);
/* After the work queue is freed (no job may complete into it): shuts down what is left
 * (blocking) and drops waiting requests without calling them. NULL is fine. */
void extract_service_free(ExtractService *x);
