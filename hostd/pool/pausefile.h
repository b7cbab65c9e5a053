/* A paused clone's stored state (issue 27, notes/pause-2026-12.md): QEMU's migration stream of
 * a clone, with every RAM page that equals its memory template's page at the same offset
 * dropped, compressed with zstd, behind a fixed header. Pure: no libvirt, no I/O but the fd it
 * is given (fuzzed by fuzz_pausefile).
 *
 * File: PAUSEFILE_HEADER_BYTES of header, then the body (zstd frames).
 *   0  "STKPAUSE"      8  u32 LE format version (1)   12 u32 LE compression (1: zstd)
 *   16 u64 LE body bytes (exactly what follows the header)
 *   24 u64 LE raw bytes (the filtered stream, what the body inflates to)
 *   32 template id (32 bytes: which template's exact bytes the delta is against)
 *   64 SHA-256 over the body, then header bytes 0..63     96 32 zero bytes
 * Reading it back, every byte is hostile: the size must match the header exactly, each
 * length is bounded by the caller's raw_max_bytes, the checksum is verified over the whole
 * file before anything is inflated, and inflation stops at the header's raw bytes.
 *
 * The filter understands the part of QEMU's stream (7.2, precopy, x-ignore-shared, no
 * compression, xbzrle, postcopy or multifd) it must: the header, the configuration section
 * and its known subsections, the "ram" section's setup and page records; the first
 * non-iterative device section after RAM's end and everything after it pass through as they
 * are. Anything else (an unknown subsection, flag, block, another iterative section) is an
 * error: the pause fails and the guest goes on running. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PAUSEFILE_HEADER_BYTES 128
#define PAUSEFILE_VERSION 1
#define PAUSEFILE_TEMPLATE_ID_BYTES 32
#define PAUSEFILE_PAGE_BYTES 4096
#define PAUSEFILE_BLOCKS_MAX 64 /* RAM blocks of one guest (pc: ~10) */

/* The template's page at offset (a multiple of PAUSEFILE_PAGE_BYTES) of its RAM file; -1 when
 * there is none (beyond the file): the page is then kept. */
typedef int (*PauseTemplatePageFn)(uint64_t offset, uint8_t page[PAUSEFILE_PAGE_BYTES],
                                   void *userdata);

typedef struct PauseWriter PauseWriter;

typedef struct PauseStats {
    uint64_t stream_bytes;  /* QEMU's stream as it came */
    uint64_t raw_bytes;     /* after the filter */
    uint64_t body_bytes;    /* after zstd: what the file holds past its header */
    uint64_t pages_seen;    /* RAM page records of the template's block */
    uint64_t pages_dropped; /* equal to the template's */
    /* where a pause's time went (pool_pause_domain; 0 from the writer alone) */
    uint64_t keep_usec;    /* keeping the template (the first pause against it only) */
    uint64_t stream_usec;  /* suspend, QEMU's stream through the filter */
    uint64_t finish_usec;  /* the header, fsync, rename, the folder's fsync */
    uint64_t destroy_usec; /* the domain's destroy */
} PauseStats;

/* Writes to out_fd (a new, empty file, positioned at 0). template_block is the RAM block
 * the template backs (its QEMU id). The stream may be at most stream_max_bytes. */
int pause_writer_new(int out_fd, const uint8_t template_id[PAUSEFILE_TEMPLATE_ID_BYTES],
                     const char *template_block, uint64_t stream_max_bytes,
                     PauseTemplatePageFn page_fn, void *userdata, PauseWriter **ret, Error **errp);
/* Feeds the next bytes of QEMU's stream (any split). */
int pause_writer_feed(PauseWriter *w, const void *buf, size_t len, Error **errp);
/* The stream is complete: checks it ended where a stream may end, flushes, writes the header
 * and fsyncs the file. The caller renames it into place and fsyncs the folder. */
int pause_writer_finish(PauseWriter *w, PauseStats *ret_stats, Error **errp);
void pause_writer_free(PauseWriter *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(PauseWriter, pause_writer_free)

/* A stored state checked against its checksum and template id, body in memory. */
typedef struct PauseBody {
    uint8_t *owned; /* the whole file (pausefile_load), or NULL (pausefile_check) */
    const uint8_t *body;
    size_t body_bytes;
    uint64_t raw_bytes;
} PauseBody;

/* Reads and checks the whole file at fd: E_INVALID for a short, long, altered or unknown
 * file (the message says which), E_CONFLICT for a state made against another template.
 * raw_max_bytes bounds what the body may inflate to (the guest's RAM and some). */
int pausefile_load(int fd, const uint8_t want_template_id[PAUSEFILE_TEMPLATE_ID_BYTES],
                   uint64_t raw_max_bytes, PauseBody *ret, Error **errp);
/* Same checks on a file already in memory (for the fuzzer and unit tests); body points into
 * data. */
int pausefile_check(const uint8_t *data, size_t len,
                    const uint8_t want_template_id[PAUSEFILE_TEMPLATE_ID_BYTES],
                    uint64_t raw_max_bytes, PauseBody *ret, Error **errp);
void pause_body_clear(PauseBody *b);

/* Inflates a checked body into sink, in pieces; exactly raw_bytes or an error. */
typedef int (*PauseSinkFn)(const void *buf, size_t len, void *userdata, Error **errp);
int pausefile_inflate(const PauseBody *b, PauseSinkFn sink, void *userdata, Error **errp);
