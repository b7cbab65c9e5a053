/* The pool's configuration ([pool] and [pool.<shape>] in stockaded.conf): plain types, no
 * libvirt, so the config parser and its fuzzer use them without linking the pool. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define POOL_SHAPES_MAX 16
#define POOL_SLOTS_MAX 256
#define POOL_SHAPE_NAME_MAX_BYTES 32
#define POOL_PREFIX_MAX_BYTES 24
#define POOL_PROBE_APPEND_MAX_BYTES 256

typedef enum { ACCEL_MODE_AUTO, ACCEL_MODE_KVM, ACCEL_MODE_TCG } AccelMode;
typedef enum { POOL_MEMORY_COPY, POOL_MEMORY_TEMPLATE } PoolGuestMemory;
/* copy: template passed every pool scenario here, but the clones scenario once found both
 * clones' clocks 2-3 minutes ahead of the host (1 run of 7, under a compile's load; see the
 * issue 15 report). Every clone inherits the template's one boot, its timekeeping included.
 * Since then (2026-12-01): 66 runs of the clones scenario in template mode, which now also
 * checks the guest's clock rate, and 16 daemon suites with STOCKADE_TEST_GUEST_MEMORY=template
 * passed; the skew did not come back. The default changes once the whole suite has passed
 * in template mode in CI. */
#define POOL_GUEST_MEMORY_DEFAULT POOL_MEMORY_COPY
#define POOL_TEMPLATE_DIR_MAX_BYTES 512
/* QEMU's user (libvirt's qemu.conf default on Debian): it alone may open template files. */
#define POOL_QEMU_USER "libvirt-qemu"

typedef struct PoolShapeConfig {
    const char *name;      /* [a-z0-9-], unique; part of the domain names */
    const char *image_dir; /* a built image (images/README.md) */
    unsigned vcpus;
    unsigned memory_mib;
    unsigned warm;         /* idle guests to keep ready */
    unsigned slots;        /* guests alive at most (idle + busy + being reset); >= warm */
} PoolShapeConfig;

typedef struct PoolConfig {
    const char *state_dir;
    const char *libvirt_uri;
    const char *domain_prefix;        /* e.g. "stockade-"; leftovers with it are destroyed */
    AccelMode accel;
    unsigned workspace_mib;
    uid_t exec_uid;                   /* owner of the workspace root */
    gid_t exec_gid;
    unsigned refill_concurrency;      /* boots/restores in flight at once */
    unsigned refill_holdoff_ms;       /* a take's refill starts this much later */
    unsigned tb_cache_mib;
    unsigned memory_overhead_mib;     /* QEMU's own memory on top of the guest's */
    unsigned cpu_quota_percent;
    uint64_t disk_bytes_per_sec;
    uint64_t disk_iops;
    unsigned rng_bytes_per_sec;
    uint64_t boot_timeout_usec;       /* cold boot to Ready */
    uint64_t kvm_probe_timeout_usec;  /* accel=auto: a KVM boot must be Ready within this */
    /* accel=auto: kernel arguments appended to the probe's command line only (diagnosis of a
     * KVM host, and tests that make the probe fail on purpose); NULL or "" for none. It is
     * part of the cached verdict's key. */
    const char *kvm_probe_append;
    /* Tests only (no config key): the probe's domain runs under TCG, so that a fault injected
     * through kvm_probe_append fails it the same way on every host, whatever its KVM does. */
    bool kvm_probe_under_tcg;
    uint64_t sync_timeout_usec;       /* restore to Ready */
    uint64_t health_interval_usec;    /* ping period */
    uint64_t ping_timeout_usec;       /* unanswered ping = wedged */
    PoolGuestMemory guest_memory;
    /* Where memory templates live; NULL or "": /dev/shm when every template fits there twice
     * with room to spare, else <state_dir>/templates/memory (the choice is logged). */
    const char *template_dir;
    const PoolShapeConfig *shapes;
    size_t n_shapes;
} PoolConfig;

/* Defaults for everything but state_dir and shapes. */
void pool_config_defaults(PoolConfig *c);
const char *pool_guest_memory_to_string(PoolGuestMemory m);
