/* A layer blob as a verified, bounded, decompressed byte stream: see oci_stream.h. */
#include "oci_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sha256.h"
#include "timeutil.h"

#define OCI_DRAIN_BYTES (64u * 1024u)
#define OCI_GZIP_WINDOW_BITS (16 + MAX_WBITS) /* gzip wrapper only */

/* Records why the stream failed (first reason wins) for the tar reader's caller. */
static int
stream_fail(OciStream *s, int err, ErrorCategory cat, const char *what, const char *detail)
{
    if (!s->err)
        error_set(&s->err, cat, 0, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
    errno = err;
    return -1;
}

int
oci_stream_open(OciStream *s, int fd, const OciDescriptor *d, uint64_t *budget_bytes,
                uint64_t deadline_usec, Error **errp)
{
    *s = (OciStream){.fd = fd,
                     .compression = d->compression,
                     .want_size = d->size,
                     .budget_bytes = budget_bytes,
                     .deadline_usec = deadline_usec};
    if (gnutls_hash_init(&s->in_hash, GNUTLS_DIG_SHA256) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "sha256");
    if (gnutls_hash_init(&s->out_hash, GNUTLS_DIG_SHA256) < 0) {
        gnutls_hash_deinit(s->in_hash, NULL);
        s->in_hash = NULL;
        return error_set(errp, E_INTERNAL, ENOMEM, "sha256");
    }
    if (!(s->in = malloc(OCI_STREAM_IN_BYTES))) {
        oci_stream_close(s);
        return error_set(errp, E_INTERNAL, ENOMEM, "layer buffer");
    }
    if (d->compression == OCI_COMPRESSION_GZIP) {
        if (inflateInit2(&s->z, OCI_GZIP_WINDOW_BITS) != Z_OK) {
            oci_stream_close(s);
            return error_set(errp, E_INTERNAL, ENOMEM, "zlib");
        }
        s->z_live = true;
    } else if (d->compression == OCI_COMPRESSION_ZSTD) {
        if (!(s->zstd = ZSTD_createDStream()) || ZSTD_isError(ZSTD_initDStream(s->zstd))) {
            oci_stream_close(s);
            return error_set(errp, E_INTERNAL, ENOMEM, "zstd");
        }
    }
    return 0;
}

void
oci_stream_close(OciStream *s)
{
    if (s->in_hash)
        gnutls_hash_deinit(s->in_hash, NULL);
    if (s->out_hash)
        gnutls_hash_deinit(s->out_hash, NULL);
    s->in_hash = s->out_hash = NULL;
    if (s->z_live)
        inflateEnd(&s->z);
    if (s->zstd)
        ZSTD_freeDStream(s->zstd);
    free(s->in);
    error_free(s->err);
    s->z_live = false;
    s->zstd = NULL;
    s->in = NULL;
    s->err = NULL;
}

/* Refills s->in from the file when it is used up. 0, or -1 (errno, s->err). */
static int
stream_fill(OciStream *s)
{
    if (s->in_pos < s->in_len || s->in_eof)
        return 0;
    ssize_t n;
    do
        n = read(s->fd, s->in, OCI_STREAM_IN_BYTES);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return stream_fail(s, errno, E_IO, "read", strerror(errno));
    if (s->in_bytes + (uint64_t) n > s->want_size)
        return stream_fail(s, EFBIG, E_INVALID,
                           "the blob is longer than the manifest's size for it", NULL);
    gnutls_hash(s->in_hash, s->in, (size_t) n);
    s->in_bytes += (uint64_t) n;
    s->in_pos = 0;
    s->in_len = (size_t) n;
    s->in_eof = n == 0;
    return 0;
}

/* Accounts n decompressed bytes at out: hash and budget. */
static int
stream_out(OciStream *s, const void *out, size_t n)
{
    if ((uint64_t) n > *s->budget_bytes)
        return stream_fail(s, EFBIG, E_TOO_LARGE,
                           "it expands past the import's byte budget (a decompression bomb, or "
                           "raise --max-bytes)",
                           NULL);
    *s->budget_bytes -= n;
    s->out_bytes += n;
    gnutls_hash(s->out_hash, out, n);
    return 0;
}

static int
stream_gzip(OciStream *s, void *buf, size_t len, size_t *ret_got)
{
    if (s->z_end && s->in_pos < s->in_len) { /* another gzip member follows */
        if (inflateReset(&s->z) != Z_OK)
            return stream_fail(s, EIO, E_INVALID, "gzip reset failed", NULL);
        s->z_end = false;
    }
    if (s->z_end) {
        *ret_got = 0;
        return 0;
    }
    s->z.next_in = s->in + s->in_pos;
    s->z.avail_in = (uInt) (s->in_len - s->in_pos);
    s->z.next_out = buf;
    s->z.avail_out = (uInt) MIN(len, (size_t) UINT32_MAX);
    int zr = inflate(&s->z, Z_NO_FLUSH);
    s->in_pos = s->in_len - s->z.avail_in;
    if (zr == Z_STREAM_END)
        s->z_end = true;
    else if (zr != Z_OK && zr != Z_BUF_ERROR)
        return stream_fail(s, EIO, E_INVALID, "corrupt gzip data", s->z.msg ? s->z.msg : "?");
    *ret_got = len - s->z.avail_out;
    return 0;
}

static int
stream_zstd(OciStream *s, void *buf, size_t len, size_t *ret_got)
{
    ZSTD_inBuffer in = {s->in, s->in_len, s->in_pos};
    ZSTD_outBuffer out = {buf, len, 0};
    size_t zr = ZSTD_decompressStream(s->zstd, &out, &in);
    s->in_pos = in.pos;
    if (ZSTD_isError(zr))
        return stream_fail(s, EIO, E_INVALID, "corrupt zstd data", ZSTD_getErrorName(zr));
    s->z_end = zr == 0; /* a frame is complete and nothing is buffered */
    *ret_got = out.pos;
    return 0;
}

int
oci_stream_read(void *ctx, void *buf, size_t len, size_t *ret_got)
{
    OciStream *s = ctx;
    if (len == 0) {
        *ret_got = 0;
        return 0;
    }
    if (now_usec() >= s->deadline_usec)
        return stream_fail(s, ETIMEDOUT, E_TIMEOUT, "the import's time ran out", NULL);
    for (;;) {
        size_t got = 0;
        if (stream_fill(s) < 0)
            return -1;
        if (s->in_eof && s->in_pos >= s->in_len) {
            if (s->compression != OCI_COMPRESSION_NONE && !s->z_end)
                return stream_fail(s, EIO, E_INVALID, "the compressed stream is cut short", NULL);
            *ret_got = 0;
            return 0;
        }
        if (s->compression == OCI_COMPRESSION_NONE) {
            got = MIN(len, s->in_len - s->in_pos);
            memcpy(buf, s->in + s->in_pos, got);
            s->in_pos += got;
        } else if ((s->compression == OCI_COMPRESSION_GZIP ? stream_gzip(s, buf, len, &got)
                                                           : stream_zstd(s, buf, len, &got)) < 0) {
            return -1;
        }
        if (got > 0) {
            if (stream_out(s, buf, got) < 0)
                return -1;
            *ret_got = got;
            return 0;
        }
        /* nothing came out: the decoder needs more input (or a member ended) */
    }
}

/* Ends the hash (it cannot be fed again) and compares it with digest ("sha256:<hex>"). */
static int
stream_hash_matches(gnutls_hash_hd_t *h, const char *digest)
{
    uint8_t raw[SHA256_BYTES];
    char hex[SHA256_HEX_BYTES + 1];
    gnutls_hash_deinit(*h, raw);
    *h = NULL;
    hex_encode(raw, sizeof(raw), hex);
    return strcmp(hex, digest + 7) == 0;
}

int
oci_stream_finish(OciStream *s, const OciDescriptor *d, const char *diff_id, Error **errp)
{
    _cleanup_free_ uint8_t *scratch = malloc(OCI_DRAIN_BYTES);
    size_t got;

    if (!scratch)
        return error_set(errp, E_INTERNAL, ENOMEM, "drain");
    do {
        if (oci_stream_read(s, scratch, OCI_DRAIN_BYTES, &got) < 0) {
            error_set(errp, s->err ? s->err->category : E_IO, 0, "%s",
                      s->err ? s->err->message : "read failed");
            return -1;
        }
    } while (got > 0);
    if (s->in_bytes != s->want_size)
        return error_set(errp, E_INVALID, 0, "the blob has %llu bytes, the manifest says %llu",
                         (unsigned long long) s->in_bytes, (unsigned long long) s->want_size);
    if (!stream_hash_matches(&s->in_hash, d->digest))
        return error_set(errp, E_INVALID, 0, "the blob's sha256 is not its digest %s", d->digest);
    if (diff_id && !stream_hash_matches(&s->out_hash, diff_id))
        return error_set(errp, E_INVALID, 0,
                         "the uncompressed layer's sha256 is not the config's diff_id %s", diff_id);
    return 0;
}
