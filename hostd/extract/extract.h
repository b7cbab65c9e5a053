/* Workspace extraction: pull the files out of a dead guest's workspace disk.
 *
 * Every byte of that disk was written by a hostile program. What reaches the host is only
 * regular files and directories under the caller's destination directory: no symlink is
 * followed or created, no hard link, device node, FIFO or socket is made, no setuid/setgid/
 * sticky bit survives, and bytes, entries, depth, path length and time are capped while
 * streaming. Files written before a cap or a failure stay on disk, whole: a file cut short
 * is removed again.
 *
 * Two layers:
 *  - extract_untar(): a pure tar-stream extractor (GNU/ustar/pax as GNU tar writes them).
 *  - ExtractAppliance: one libguestfs appliance launched ahead of need with every pool slot's
 *    workspace disk attached read-only (format raw). A salvage mounts a device-mapper snapshot
 *    of the slot's disk whose copy-on-write space is a RAM disk, so journal replay never
 *    writes into libguestfs's overlay, streams tar_out through extract_untar(), then unmounts
 *    and removes the snapshot. The pool must reset a slot's disk in place (same inode).
 *
 * Nothing here logs. Names quoted in error messages are escaped (log_escape). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct ExtractLimits {
    uint64_t max_total_bytes; /* data bytes streamed (written or discarded) before stopping */
    uint64_t max_file_bytes;  /* a larger file is skipped (and excluded before streaming) */
    uint32_t max_files;       /* tar entries of any kind (files, dirs, skipped) before stopping */
    uint32_t max_depth;       /* path components; deeper entries are skipped */
    uint32_t max_name_bytes;  /* bytes of a whole relative path; longer ones are skipped */
    uint64_t max_usec;        /* wall time for the whole call, then stop (salvage: see below) */
} ExtractLimits;

/* Defaults: 256 MiB total, 64 MiB per file, 10 000 entries, depth 32, paths of 1024 bytes,
 * 60 s. Measured under TCG (README): a warm salvage costs ~1.8 s fixed, 21 MB in 8 files
 * ~3 s, 2000 small files ~5.5 s, so the 5 s target holds up to ~25 MB or ~1500 files; the
 * caps bound the worst case, not the common one. */
void extract_limits_default(ExtractLimits *ret);

typedef enum ExtractStop {
    EXTRACT_STOP_NONE = 0,  /* the stream was read to its end */
    EXTRACT_STOP_BYTES,     /* max_total_bytes */
    EXTRACT_STOP_FILES,     /* max_files */
    EXTRACT_STOP_TIME,      /* max_usec */
    EXTRACT_STOP_MALFORMED, /* the stream broke the tar format or ended early */
    EXTRACT_STOP_ERROR,     /* a host-side failure (see errp) */
} ExtractStop;

typedef struct ExtractStats {
    uint64_t bytes;          /* data bytes written to files */
    uint64_t streamed_bytes; /* data bytes read from the stream (written + discarded) */
    uint32_t files, dirs, skipped;
    bool truncated;   /* a cap was hit: something was left out */
    ExtractStop stop; /* why the stream stopped early, if it did */
    /* Salvage phases, for metrics (zero from extract_untar): snapshot + mount, pre-scan,
     * tar_out streaming (with cancel and drain), unmount + snapshot removal. */
    uint64_t mount_usec, scan_usec, stream_usec, cleanup_usec;
} ExtractStats;

/* Stable lower-case name of a stop reason ("none", "bytes", ...). */
const char *extract_stop_name(ExtractStop stop);

/* Reads a tar stream from tar_fd (blocking; polled against lim->max_usec) and writes only
 * regular files and directories beneath dest_dirfd (openat2 RESOLVE_BENEATH|NO_SYMLINKS,
 * O_CREAT|O_EXCL|O_NOFOLLOW; an existing entry is never replaced or followed). Modes: dirs
 * (mode & 0755) | 0700, files mode & 0744; owner is the caller; mtime of files kept.
 * Symlinks, hard links, devices, FIFOs, unknown types, absolute or `..` names and entries over
 * the depth/name/file-size caps are skipped and counted. Bytes/entries/time caps stop early.
 * Hostile stream content never fails the call: it stops with stats->stop = MALFORMED.
 * Returns -1 (E_IO / E_INTERNAL) only for host-side failures (dest unwritable, disk full,
 * read error on tar_fd). *stats is filled in on success and on failure alike, since files
 * written before a failure stay. Does not close tar_fd; it stops reading at the end-of-
 * archive marker or at the stop, so the caller drains or closes the rest. */
int extract_untar(int tar_fd, int dest_dirfd, const ExtractLimits *lim, ExtractStats *stats,
                  Error **errp);

typedef struct ExtractConfig {
    bool force_tcg;        /* from the daemon's accel decision; sets backend "direct" */
    unsigned memsize_mib;  /* appliance RAM; 0 = 512 */
    unsigned smp;          /* appliance vCPUs; 0 = 2 */
    const char *state_dir; /* libguestfs temp dir (overlays); must exist; NULL = its default */
    const char *cache_dir; /* supermin appliance cache; NULL = libguestfs's default. Its
                            * kernel, initrd and root must be world-readable (the default) */
    /* The stockade-appliance-qemu wrapper qemu is started through (unprivileged, seccomp);
     * NULL = the one beside the running program (stockaded's install and build layout). There
     * is no fallback to a privileged qemu: without it the start fails (E_UNAVAILABLE). */
    const char *qemu_wrapper;
    /* Launch + setup deadline; past it qemu is killed and the start fails with E_TIMEOUT.
     * 0 = EXTRACT_LAUNCH_TCG_USEC under TCG, EXTRACT_LAUNCH_KVM_USEC with KVM. */
    uint64_t launch_timeout_usec;
    /* Set from any thread, the launch gives up within EXTRACT_CANCEL_POLL_USEC: qemu is
     * killed and the start fails with E_UNAVAILABLE "cancelled". NULL: only the deadline. */
    const atomic_bool *cancel;
} ExtractConfig;

#define EXTRACT_CANCEL_POLL_USEC (500ull * 1000ull)

/* Measured here under TCG: 17-25 s typical, 112 s the slowest of 71 launches in test runs;
 * one hung past 300 s in CI, which is what the deadline is for. */
#define EXTRACT_LAUNCH_TCG_USEC (180ull * 1000000ull)
#define EXTRACT_LAUNCH_KVM_USEC (60ull * 1000000ull)

typedef struct ExtractAppliance ExtractAppliance;

/* Blocking (~20-30 s under TCG; at most cfg->launch_timeout_usec). Launches one appliance with
 * disk_paths[0..n_disks) attached read-only, format raw, in that order (index = position), sets
 * each disk read-only inside the appliance and loads dm-snapshot. The disks must keep their
 * size and inode for the appliance's lifetime (reset them in place). Environment variables do
 * not steer it; cfg does. Sockets go to libguestfs's socket dir (/tmp for root: not
 * configurable in 1.48). On failure nothing is left running. */
int extract_appliance_start(const char *const *disk_paths, size_t n_disks, const ExtractConfig *cfg,
                            ExtractAppliance **ret, Error **errp);

/* Blocking; thread-safe (salvages on one appliance run one at a time). Salvages disk #index
 * into dest_dirfd: snapshot + mount (ext4 only, ro, nosuid, nodev, noexec), checks that the
 * mounted root is a directory, pre-scans for files over max_file_bytes and excludes them
 * (with lost+found) so tar_out never densifies a sparse monster, streams tar_out through
 * extract_untar(), cancels the transfer when a cap stops it, then unmounts and removes the
 * snapshot even on failure. max_usec bounds the whole salvage: at the deadline the transfer
 * is cancelled; if the appliance is still busy EXTRACT_KILL_GRACE_USEC later it is killed.
 * Returns 0 when the disk was read (caps and hostile content included: see *stats), -1
 * when it could not be (E_UNAVAILABLE: appliance dead; E_GUEST: the disk does not mount or
 * reads fail; E_IO: host side). *stats is filled in either way. After any failure at the
 * appliance level extract_appliance_alive() turns false: its owner frees and relaunches. */
int extract_salvage(ExtractAppliance *a, size_t index, int dest_dirfd, const ExtractLimits *lim,
                    ExtractStats *stats, Error **errp);

/* Never blocks. False once the appliance is known unusable: a call failed at the appliance
 * level, a deadline killed it, or cleanup after a salvage failed. */
bool extract_appliance_alive(ExtractAppliance *a);

/* Shuts the appliance down (blocking; measured 0.05 s) and frees it. NULL is fine. */
void extract_appliance_free(ExtractAppliance *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(ExtractAppliance, extract_appliance_free)
#define _cleanup_extract_appliance_ _cleanup_(extract_appliance_freep)

/* Slow fallback when no warm appliance covers the disk: launches one with just this disk,
 * salvages it and shuts it down (~20-30 s under TCG). Same contract as extract_salvage();
 * lim->max_usec bounds the salvage, not the launch. */
int extract_salvage_cold(const char *disk_path, const ExtractConfig *cfg, int dest_dirfd,
                         const ExtractLimits *lim, ExtractStats *stats, Error **errp);
