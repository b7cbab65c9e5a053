/* What the pool reports about itself (pool_status()), as plain types: the API, E2B and the
 * cluster's hosts table read it through a PoolStatusFn the daemon hands them, and never hold
 * the Pool itself. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "domxml.h"
#include "histogram.h"
#include "pool_config.h"

typedef struct PoolShapeStatus {
    const char *name;
    const char *image;        /* the image's name (its folder in the image directory) */
    const char *content_hash; /* the image's, as loaded at start */
    unsigned vcpus, memory_mib; /* the shape: what tenant quotas are checked against */
    unsigned warm, slots;
    unsigned idle, busy, starting, draining, snapshots_ready;
    bool template_ready;        /* guest_memory = template: a valid template exists */
    /* "off" (not configured), "on" (saves hold a pre-started kernel) or "failed" (it did not
     * come up once: saves go without it; the log says why) */
    const char *code_kernel;
} PoolShapeStatus;

typedef struct PoolStatus {
    Accel accel;
    bool accel_decided;
    bool disks_ready;                 /* every slot's workspace disk exists (the appliance's) */
    const char *accel_reason;         /* human text: why this accel */
    PoolGuestMemory guest_memory;     /* in effect: copy after a fallback */
    const char *guest_memory_reason;  /* human text: why this mode, where the templates are */
    const char *template_dir;         /* "" in copy mode */
    size_t n_shapes;
    PoolShapeStatus shapes[POOL_SHAPES_MAX];
    /* The pool's own guests only: the accel=auto probe is never one of these. */
    uint64_t restores, restore_failures, boots, destroys, wedged, broken;
    uint64_t prepare_failures; /* restored, synced, then Prepare failed or went unanswered */
    /* The accel=auto KVM probe: boots tried this run, and those that failed (so chose TCG).
     * A probe that fails says what KVM does on this host, not that the pool is unhealthy. */
    uint64_t accel_probes, accel_probe_failures;
    Histogram boot_to_ready;     /* cold boot (domain create) to the runner's Ready */
    Histogram restore_to_ready;  /* restore requested to Ready (disk reset included) */
    Histogram destroy_to_gone;   /* destroy requested to QEMU's process gone */
} PoolStatus;

/* Fills *ret with a snapshot of the pool. Loop thread. */
typedef void (*PoolStatusFn)(void *userdata, PoolStatus *ret);

/* The shape (image pool) named name in st, or NULL when the pool has none. */
static inline const PoolShapeStatus *
pool_status_shape(const PoolStatus *st, const char *name)
{
    for (size_t i = 0; i < st->n_shapes; i++)
        if (strcmp(st->shapes[i].name, name) == 0)
            return &st->shapes[i];
    return NULL;
}
