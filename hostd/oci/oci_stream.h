/* One layer blob as a tar stream: read from its file, counted and hashed (the descriptor's
 * digest and size), decompressed (gzip or zstd, by media type), counted and hashed again (the
 * config's diff_id). The tar reader pulls through oci_stream_read (a TarReadFn).
 *
 * Bounds: compressed bytes past the descriptor's size fail at once ("the manifest lies about
 * the size"); decompressed bytes past *budget_bytes (what is left of the import's byte budget)
 * fail at once ("expands past ...": a decompression bomb stops there, not at the end of the
 * disk); every read checks the deadline. oci_stream_finish() reads what the tar reader left
 * (zero padding after the end marker, still counted against the budget) and only then
 * compares size, digest and diff_id: nothing of a layer counts as verified before. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <gnutls/crypto.h>
#include <stdint.h>
#include <zlib.h>
#include <zstd.h>

#include "error.h"
#include "oci_json.h"

#define OCI_STREAM_IN_BYTES (128u * 1024u)

typedef struct OciStream {
    int fd; /* borrowed */
    OciCompression compression;
    uint64_t want_size;     /* the descriptor's size */
    uint64_t in_bytes;      /* compressed bytes read */
    uint64_t out_bytes;     /* decompressed bytes delivered */
    uint64_t *budget_bytes; /* decremented by out_bytes; shared across layers */
    uint64_t deadline_usec; /* CLOCK_MONOTONIC */
    /* GnuTLS's SHA-256 (SHA-NI where the CPU has it): base's hand-written one (kept for the
     * static runner) hashes ~43 MiB/s here, GnuTLS ~510 MiB/s, and every byte is hashed
     * twice (stored and uncompressed). */
    gnutls_hash_hd_t in_hash, out_hash;
    z_stream z;
    bool z_live, z_end, in_eof;
    ZSTD_DStream *zstd;
    uint8_t *in; /* OCI_STREAM_IN_BYTES */
    size_t in_pos, in_len;
    Error *err; /* why a read failed (the tar reader only sees -1) */
} OciStream;

/* fd: the blob, opened by the caller; d: its descriptor. On failure nothing is held. */
int oci_stream_open(OciStream *s, int fd, const OciDescriptor *d, uint64_t *budget_bytes,
                    uint64_t deadline_usec, Error **errp);
/* TarReadFn: ctx is the OciStream. -1 with errno (EIO, EFBIG, ETIMEDOUT) and s->err set. */
int oci_stream_read(void *ctx, void *buf, size_t len, size_t *ret_got);
/* Drains the rest, then checks size, digest and (diff_id non-NULL) the diff_id. */
int oci_stream_finish(OciStream *s, const OciDescriptor *d, const char *diff_id, Error **errp);
void oci_stream_close(OciStream *s);
