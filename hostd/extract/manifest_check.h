/* The manifest a runner sends at a clean end (runner.proto "Finalize"), checked as the
 * hostile input it is, and the plan of what to fetch. Pure: no I/O; the caller says which
 * files its live mirror already holds (a callback), so a table test and a fuzzer drive it.
 *
 * Every entry must be a normalised relative path (extract_path_normalize gives it back
 * unchanged: no "..", not absolute, no empty or "." component) within the caps the host asked
 * for (path bytes, depth), a file no larger than the workspace disk, listed once, under a
 * parent listed as a directory; the whole manifest holds at most max_entries entries, at most
 * max_path_bytes_total path bytes, file sizes that sum to no more than the disk, and
 * totals that match what came. The first broken rule is the verdict: the runner lied, and the
 * host salvages the disk instead. Memory: at most max_entries entries and
 * max_path_bytes_total path bytes (manifest_add refuses past them). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "extract.h"

typedef enum { MANIFEST_FILE = 1, MANIFEST_DIR = 2 } ManifestType;

typedef struct ManifestEntry {
    char *path;
    ManifestType type;
    uint64_t size; /* FILE only */
    uint64_t mtime_ns;
    uint32_t mode; /* & 0777 */
    bool fetch;    /* plan: fetch it over the channel */
    bool stale;    /* plan: the mirror holds an older copy (replace it) */
} ManifestEntry;

typedef struct ManifestCaps {
    uint32_t max_entries;    /* <= FINALIZE_MAX_ENTRIES */
    uint32_t max_path_bytes; /* per path */
    uint32_t max_depth;
    uint64_t max_path_bytes_total; /* all paths together (FINALIZE_MAX_PATH_BYTES_TOTAL) */
    uint64_t disk_bytes; /* the workspace disk's size: no file, and no sum, is larger */
} ManifestCaps;

typedef struct Manifest {
    ManifestEntry *v;
    size_t n, cap;
    uint64_t path_bytes, file_bytes;
    bool sorted;
} Manifest;

typedef enum ManifestVerdict {
    MANIFEST_OK = 0,
    MANIFEST_BAD_PATH,   /* absolute, "..", not normalised, NUL, empty */
    MANIFEST_OVER_CAPS,  /* a path over the path-byte or depth caps asked for */
    MANIFEST_BAD_TYPE,   /* neither file nor directory, or a directory with a size */
    MANIFEST_TOO_MANY,   /* over max_entries, or over FINALIZE_MAX_PATH_BYTES_TOTAL */
    MANIFEST_OVER_DISK,  /* a file, or all files together, larger than the disk */
    MANIFEST_DUPLICATE,  /* a path listed twice */
    MANIFEST_ORPHAN,     /* an entry whose parent is not listed as a directory */
    MANIFEST_TOTALS,     /* the last frame's totals disagree with the entries */
    MANIFEST_NO_MEMORY,
} ManifestVerdict;

const char *manifest_verdict_name(ManifestVerdict v);

/* Checks one entry and keeps a copy. path is the C string as decoded. */
ManifestVerdict manifest_add(Manifest *m, const ManifestCaps *caps, const char *path, int type,
                             uint64_t size, uint64_t mtime_ns, uint32_t mode);
/* After the last frame: totals, duplicates, parents. Sorts the entries by path. */
ManifestVerdict manifest_finish(Manifest *m, uint64_t total_entries, uint64_t total_file_bytes);
void manifest_clear(Manifest *m);

/* Does the live mirror already hold this file as listed? 1: yes; 0: no such file; -1: it
 * holds an older or different copy (stale). */
typedef int (*ManifestHeldFn)(void *userdata, const ManifestEntry *e);

typedef struct ManifestPlan {
    uint32_t fetch_files, held_files, skipped; /* skipped: over max_file_bytes or total bytes */
    uint64_t fetch_bytes, held_bytes;
    bool truncated;
    ExtractStop stop; /* NONE, or BYTES when max_total_bytes left files out */
} ManifestPlan;

/* Marks e->fetch / e->stale for the files to fetch, within the salvage's caps: a file over
 * lim->max_file_bytes is skipped, and files stop being added once held + fetched bytes would
 * pass lim->max_total_bytes (the salvage's rules; then truncated). */
void manifest_plan(Manifest *m, const ExtractLimits *lim, ManifestHeldFn held, void *userdata,
                   ManifestPlan *ret);
