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
/* template (issue 15): an idle guest holds only what it wrote since the template (45 MiB PSS
 * at 16 guests here, 129 in copy mode). It became the default once every daemon suite had
 * passed on templated clones (STOCKADE_TEST_GUEST_MEMORY=template, 22 suites) and 66 runs of
 * the clones scenario, which checks each clone's clock offset and rate, found no skew (one run
 * of 7 had once found clocks 2-3 minutes ahead, unexplained: the rate check says at once if
 * a template's clock runs fast). Where template fails before it ever worked the pool falls
 * back to copy and says why; `guest_memory = copy` keeps a private save image per slot. */
#define POOL_GUEST_MEMORY_DEFAULT POOL_MEMORY_TEMPLATE
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
    /* Start the code kernel (POOL_CODE_KERNEL_ARGV) in each guest before it is saved, so a
     * session's first code context adopts a kernel with its imports done (issue 18). */
    bool code_kernel;
} PoolShapeConfig;

/* The stateful code kernel of the data image (images/data/overlay/usr/lib/stockade/kernel.py);
 * sessions start it as an exec with Exec.adopt, the pool pre-starts it (runner.proto Prestart). */
#define POOL_CODE_KERNEL_PATH "/usr/lib/stockade/kernel.py"
#define POOL_CODE_KERNEL_ARGV "python3", POOL_CODE_KERNEL_PATH

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
     * with room to spare, else <state_dir>/templates/memory (the choice is logged). It must be
     * the daemon's own folder (owndir.h): pool_template.c. */
    const char *template_dir;
    const PoolShapeConfig *shapes;
    size_t n_shapes;
} PoolConfig;

/* Defaults for everything but state_dir and shapes. */
void pool_config_defaults(PoolConfig *c);
const char *pool_guest_memory_to_string(PoolGuestMemory m);
