/* Fuzz target: a paused clone's stored state (hostd/pool/pausefile.c, issue 27), both ways.
 *
 * Input: one byte that says which way, then the rest.
 *  - even: the rest is a stored file as read back from disk (hostile: anyone who could
 *    change the file). Invariants: pausefile_check accepts it only when its checksum holds,
 *    and an accepted body inflates to exactly its header's raw bytes or fails, never more
 *    than raw_max_bytes.
 *  - odd: the rest is a QEMU migration stream, fed to the writer in pieces whose sizes come
 *    from the input's own bytes. Invariants: the result does not depend on the split (the
 *    same stream in one piece gives the same file); a finished file passes the check with
 *    its template id and inflates to what the writer said it kept; the same file with any
 *    one byte flipped is refused; with another template id it is E_CONFLICT. The template
 *    here: every page filled with the page's index (so some pages of a seed match). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "pausefile.h"

#define FUZZ_RAW_MAX_BYTES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t tmpl_id[PAUSEFILE_TEMPLATE_ID_BYTES] = {1, 2, 3};

static int
tmpl_page(uint64_t offset, uint8_t page[PAUSEFILE_PAGE_BYTES], void *userdata)
{
    (void) userdata;
    if (offset >= (1u << 20))
        return -1;
    memset(page, (int) (offset / PAUSEFILE_PAGE_BYTES) & 0xff, PAUSEFILE_PAGE_BYTES);
    return 0;
}

typedef struct {
    uint8_t *buf;
    size_t len, cap;
} Sink;

static int
sink_put(const void *buf, size_t len, void *userdata, Error **errp)
{
    (void) errp;
    Sink *s = userdata;
    CHECK(s->len + len <= s->cap);
    memcpy(s->buf + s->len, buf, len);
    s->len += len;
    return 0;
}

/* Checks and inflates; returns true when both worked. */
static bool
read_back(const uint8_t *file, size_t len, const uint8_t *id, Sink *out, Error **err)
{
    PauseBody b = {0};
    if (pausefile_check(file, len, id, FUZZ_RAW_MAX_BYTES, &b, err) < 0)
        return false;
    CHECK(b.raw_bytes <= FUZZ_RAW_MAX_BYTES);
    out->len = 0;
    if (pausefile_inflate(&b, sink_put, out, err) < 0)
        return false;
    CHECK(out->len == b.raw_bytes);
    return true;
}

/* Writes the stream into a memfd, in pieces cut by split (NULL: one piece). */
static bool
write_stream(const uint8_t *s, size_t n, const uint8_t *split, uint8_t **ret_file, size_t *ret_len,
             PauseStats *st)
{
    int fd = memfd_create("pausefile", MFD_CLOEXEC);
    CHECK(fd >= 0);
    Error *err = NULL;
    PauseWriter *w = NULL;
    bool ok = pause_writer_new(fd, tmpl_id, "stockade-ram", FUZZ_RAW_MAX_BYTES, tmpl_page, NULL, &w,
                               &err) == 0;
    CHECK(ok);
    size_t off = 0, k = 0;
    while (ok && off < n) {
        size_t piece = split ? 1 + (size_t) split[k++ % n] % 97 : n;
        piece = piece > n - off ? n - off : piece;
        ok = pause_writer_feed(w, s + off, piece, &err) == 0;
        off += piece;
    }
    ok = ok && pause_writer_finish(w, st, &err) == 0;
    pause_writer_free(w);
    error_free(err);
    *ret_file = NULL;
    if (ok) {
        off_t len = lseek(fd, 0, SEEK_END);
        CHECK(len >= PAUSEFILE_HEADER_BYTES);
        *ret_file = malloc((size_t) len);
        CHECK(*ret_file && pread(fd, *ret_file, (size_t) len, 0) == len);
        *ret_len = (size_t) len;
    }
    close(fd);
    return ok;
}

static void
fuzz_stream(const uint8_t *s, size_t n)
{
    uint8_t *split_file = NULL, *whole_file = NULL;
    size_t split_len = 0, whole_len = 0;
    PauseStats st1, st2;
    bool a = write_stream(s, n, s, &split_file, &split_len, &st1);
    bool b = write_stream(s, n, NULL, &whole_file, &whole_len, &st2);
    CHECK(a == b);
    if (a) {
        CHECK(split_len == whole_len && memcmp(split_file, whole_file, split_len) == 0);
        Sink out = {malloc(FUZZ_RAW_MAX_BYTES), 0, FUZZ_RAW_MAX_BYTES};
        Error *err = NULL;
        CHECK(out.buf && read_back(whole_file, whole_len, tmpl_id, &out, &err));
        CHECK(out.len == st2.raw_bytes && st2.raw_bytes <= st2.stream_bytes);
        uint8_t other[PAUSEFILE_TEMPLATE_ID_BYTES] = {9};
        CHECK(!read_back(whole_file, whole_len, other, &out, &err) && err->category == E_CONFLICT);
        error_free(err);
        err = NULL;
        size_t at = n ? s[0] * 131u % whole_len : 0;
        whole_file[at] ^= 0x40;
        CHECK(!read_back(whole_file, whole_len, tmpl_id, &out, &err));
        error_free(err);
        err = NULL;
        whole_file[at] ^= 0x40; /* and the checksum's own bytes: only the checksum sees them */
        whole_file[64 + (n ? s[0] % 32 : 0)] ^= 0x01;
        CHECK(!read_back(whole_file, whole_len, tmpl_id, &out, &err));
        error_free(err);
        free(out.buf);
    }
    free(split_file);
    free(whole_file);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1) {
        fuzz_stream(data + 1, size - 1);
        return 0;
    }
    Sink out = {malloc(FUZZ_RAW_MAX_BYTES), 0, FUZZ_RAW_MAX_BYTES};
    Error *err = NULL;
    CHECK(out.buf);
    (void) read_back(data + 1, size - 1, tmpl_id, &out, &err);
    error_free(err);
    free(out.buf);
    return 0;
}
