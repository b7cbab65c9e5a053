/* Domain XML for one guest, built by a pure function (golden-tested in tests/golden/).
 *
 * Every guest: machine `pc`, the image's vmlinux booted directly (PVH), the shared root image
 * read-only and never relabelled, its own raw workspace disk, no NIC, a virtio-rng, one
 * virtio-serial port for the runner, a console that goes to a file through virtlogd (which
 * rotates it: bounded), and every exit (poweroff, reboot, crash) destroying the domain.
 * Limits: CPU quota, disk byte/IOPS caps, TCG code cache. QEMU's memory hard limit is NOT in
 * the XML: there libvirt would also raise QEMU's RLIMIT_MEMLOCK to it, which needs
 * CAP_SYS_RESOURCE; the pool applies it live right after each restore (virt.h).
 *
 * Guest memory (DomainMemory): libvirt's own RAM (each guest saves and restores all of it), or
 * a copy-on-write template (notes/templating-2026-12.md): the template guest's RAM is a file
 * mapped shared, which it fills by booting once; each clone maps that file privately and
 * waits (-incoming defer) for the template's device state. libvirt has no XML for either, so
 * both go through <qemu:commandline>; libvirt neither relabels nor checks that file (the pool
 * owns it for QEMU's user). Both carry <genid/>: libvirt makes a fresh VM generation id at
 * every start, the guest kernel reseeds its RNG when it changes, so clones never share
 * randomness; the template needs the device too, for the clones' device state to match. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define DOMXML_RUNNER_PORT_NAME "org.stockade.runner.0"
#define DOMXML_NAME_MAX_BYTES 64

typedef enum { ACCEL_TCG, ACCEL_KVM } Accel;

typedef enum {
    DOMXML_MEMORY_PRIVATE,  /* libvirt's own RAM (guest_memory = copy) */
    DOMXML_MEMORY_TEMPLATE, /* RAM is memory_path, shared: its writes land in the file */
    DOMXML_MEMORY_CLONE,    /* RAM maps memory_path privately; started with -incoming defer */
} DomainMemory;

/* The memory backend's QEMU id (one per domain; QEMU ids are per process). */
#define DOMXML_MEMORY_BACKEND_ID "stockade-ram"

typedef struct DomainSpec {
    const char *name;                /* [a-z0-9-], <= DOMXML_NAME_MAX_BYTES */
    const char *uuid;                /* canonical 36-character form */
    Accel accel;
    unsigned vcpus;                  /* 1..64 */
    unsigned memory_mib;             /* 64..65536 */
    const char *kernel_path;
    const char *initrd_path;
    const char *cmdline;
    const char *root_disk_path;      /* raw, shared, read-only */
    const char *workspace_disk_path; /* raw, this guest's own */
    const char *channel_socket_path;
    const char *console_log_path;
    unsigned tb_cache_mib;           /* TCG translation cache; 0 = QEMU's default (1 GiB) */
    unsigned cpu_quota_percent;      /* of one host CPU per vCPU, 1..100; 0 = no quota */
    uint64_t disk_bytes_per_sec;     /* per disk; 0 = uncapped */
    uint64_t disk_iops;              /* per disk; 0 = uncapped */
    unsigned rng_bytes_per_sec;      /* virtio-rng rate cap; 0 = uncapped */
    DomainMemory memory;
    const char *memory_path;         /* TEMPLATE, CLONE: absolute, no ',' (QEMU's separator) */
    bool memory_readonly;            /* CLONE on QEMU >= 8.2: readonly=on,rom=off */
} DomainSpec;

/* Checks the spec and renders it. *ret_xml is malloc'd. E_INVALID for a bad spec. */
int domxml_build(const DomainSpec *spec, char **ret_xml, Error **errp);
const char *accel_to_string(Accel a);
