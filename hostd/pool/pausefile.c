/* A paused clone's stored state: the filter over QEMU's migration stream, the file's header,
 * its checks and its inflation. See pausefile.h for the format and what the filter accepts.
 * The stream's constants are QEMU 7.2's (migration/savevm.c, migration/ram.c). */
#include "pausefile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "fdutil.h"
#include "macro.h"
#include "sha256.h"

#define PF_MAGIC "STKPAUSE"
#define PF_COMPRESSION_ZSTD 1u
#define PF_ZSTD_LEVEL 1 /* notes: zstd -1 took idle 4.4 MB to 1.3 MB at little cost */
#define PF_PENDING_MAX_BYTES (64 * 1024) /* the largest item: the configuration or RAM setup */
#define PF_CAPS_MAX 64

#define QEVM_MAGIC 0x5145564du
#define QEVM_VERSION 3u
#define QEVM_EOF 0x00
#define QEVM_SECTION_START 0x01
#define QEVM_SECTION_PART 0x02
#define QEVM_SECTION_END 0x03
#define QEVM_SECTION_FULL 0x04
#define QEVM_SUBSECTION 0x05
#define QEVM_CONFIGURATION 0x07
#define QEVM_SECTION_FOOTER 0x7e

#define RAM_FLAG_ZERO 0x02u
#define RAM_FLAG_MEM_SIZE 0x04u
#define RAM_FLAG_PAGE 0x08u
#define RAM_FLAG_EOS 0x10u
#define RAM_FLAG_CONTINUE 0x20u

typedef enum { PF_HEADER, PF_TOP, PF_RAM, PF_PASS } PfState;

typedef struct {
    char name[256];
    uint64_t used_bytes;
} RamBlock;

struct PauseWriter {
    int fd;
    uint8_t template_id[PAUSEFILE_TEMPLATE_ID_BYTES];
    char template_block[256];
    PauseTemplatePageFn page_fn;
    void *userdata;
    uint64_t stream_max_bytes;
    PfState state;
    uint32_t ram_section_id;
    bool ram_started, ram_ended;
    RamBlock blocks[PAUSEFILE_BLOCKS_MAX];
    size_t n_blocks;
    int in_block, out_block; /* the stream's current block; the one the output last named */
    uint8_t *pending;        /* bytes of an item not complete yet */
    size_t pending_len;
    ZSTD_CCtx *zc;
    uint8_t *zout;
    size_t zout_cap;
    Sha256 sum;
    PauseStats stats;
    uint8_t tmpl_page[PAUSEFILE_PAGE_BYTES];
};

/* ------------------------------------------------------------------ reading the stream */

typedef struct {
    const uint8_t *p;
    size_t len, pos;
    bool short_; /* ran past the bytes at hand: the item is not complete yet */
} Cur;

static const uint8_t *
cur_take(Cur *c, size_t n)
{
    if (c->short_ || c->len - c->pos < n) {
        c->short_ = true;
        return NULL;
    }
    const uint8_t *r = c->p + c->pos;
    c->pos += n;
    return r;
}

static uint8_t
cur_u8(Cur *c)
{
    const uint8_t *b = cur_take(c, 1);
    return b ? b[0] : 0;
}

static uint32_t
cur_be32(Cur *c)
{
    const uint8_t *b = cur_take(c, 4);
    return b ? (uint32_t) b[0] << 24 | (uint32_t) b[1] << 16 | (uint32_t) b[2] << 8 | b[3] : 0;
}

static uint64_t
cur_be64(Cur *c)
{
    uint64_t hi = cur_be32(c);
    return hi << 32 | cur_be32(c);
}

/* A u8-length name; "" (and short) when not all here. */
static void
cur_name(Cur *c, char out[256])
{
    uint8_t n = cur_u8(c);
    const uint8_t *b = cur_take(c, n);
    if (!b) {
        out[0] = '\0';
        return;
    }
    memcpy(out, b, n);
    out[n] = '\0';
}

/* ------------------------------------------------------------------ writing the body */

static int
pf_write_out(PauseWriter *w, const uint8_t *buf, size_t len, Error **errp)
{
    if (len == 0)
        return 0;
    sha256_update(&w->sum, buf, len);
    w->stats.body_bytes += len;
    if (write_all(w->fd, buf, len) < 0)
        return error_set(errp, E_IO, errno, "write the paused state");
    return 0;
}

static int
pf_compress(PauseWriter *w, const void *buf, size_t len, ZSTD_EndDirective how, Error **errp)
{
    ZSTD_inBuffer in = {buf, len, 0};
    for (;;) {
        ZSTD_outBuffer out = {w->zout, w->zout_cap, 0};
        size_t left = ZSTD_compressStream2(w->zc, &out, &in, how);
        if (ZSTD_isError(left))
            return error_set(errp, E_INTERNAL, 0, "zstd: %s", ZSTD_getErrorName(left));
        if (pf_write_out(w, w->zout, out.pos, errp) < 0)
            return -1;
        bool done = how == ZSTD_e_end ? left == 0 : in.pos == in.size;
        if (done)
            return 0;
    }
}

static int
pf_emit(PauseWriter *w, const void *buf, size_t len, Error **errp)
{
    w->stats.raw_bytes += len;
    return pf_compress(w, buf, len, ZSTD_e_continue, errp);
}

static void
put_be64(uint8_t *b, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        b[i] = (uint8_t) v;
}

/* ------------------------------------------------------------------ the stream's items */

typedef enum { ITEM_MORE = 0, ITEM_DONE = 1 } ItemStatus;

static int
pf_fail(Error **errp, const char *what)
{
    return error_set(errp, E_INVALID, 0, "QEMU's migration stream: %s", what);
}

static int
item_config(Cur *c, Error **errp)
{
    uint32_t len = cur_be32(c);
    if (!c->short_ && (len == 0 || len > 255))
        return pf_fail(errp, "a machine name of unexpected length");
    cur_take(c, len);
    for (;;) {
        if (c->short_ || c->len - c->pos < 1) {
            c->short_ = true; /* the item ends at the first byte that is no subsection */
            return 0;
        }
        if (c->p[c->pos] != QEVM_SUBSECTION)
            return 0;
        char name[256];
        c->pos++;
        cur_name(c, name);
        (void) cur_be32(c);
        if (c->short_)
            return 0;
        if (strcmp(name, "configuration/target-page-bits") == 0) {
            (void) cur_be32(c);
        } else if (strcmp(name, "configuration/uuid") == 0) {
            cur_take(c, 16);
        } else if (strcmp(name, "configuration/capabilities") == 0) {
            uint32_t n = cur_be32(c);
            if (!c->short_ && n > PF_CAPS_MAX)
                return pf_fail(errp, "too many capabilities");
            for (uint32_t i = 0; i < n && !c->short_; i++)
                cur_name(c, name);
        } else {
            return pf_fail(errp, "an unknown configuration subsection");
        }
    }
}

static int
item_ram_setup(PauseWriter *w, Cur *c, uint64_t total, Error **errp)
{
    RamBlock blocks[PAUSEFILE_BLOCKS_MAX];
    size_t n = 0;
    while (total > 0) {
        if (n == PAUSEFILE_BLOCKS_MAX)
            return pf_fail(errp, "too many RAM blocks");
        cur_name(c, blocks[n].name);
        blocks[n].used_bytes = cur_be64(c);
        (void) cur_be64(c); /* x-ignore-shared: the block's guest address */
        if (c->short_)
            return 0;
        if (!blocks[n].name[0] || blocks[n].used_bytes == 0 || blocks[n].used_bytes > total)
            return pf_fail(errp, "RAM block sizes that do not add up");
        total -= blocks[n].used_bytes;
        n++;
    }
    memcpy(w->blocks, blocks, n * sizeof(blocks[0]));
    w->n_blocks = n;
    return 0;
}

static int
find_block(const PauseWriter *w, const char *name)
{
    for (size_t i = 0; i < w->n_blocks; i++)
        if (strcmp(w->blocks[i].name, name) == 0)
            return (int) i;
    return -1;
}

/* True when the page (or zero page, page == NULL) equals the template's at addr. */
static bool
page_matches_template(PauseWriter *w, int block, uint64_t addr, const uint8_t *page, uint8_t fill)
{
    if (strcmp(w->blocks[block].name, w->template_block) != 0)
        return false;
    if (w->page_fn(addr, w->tmpl_page, w->userdata) < 0)
        return false;
    if (page)
        return memcmp(page, w->tmpl_page, PAUSEFILE_PAGE_BYTES) == 0;
    for (size_t i = 0; i < PAUSEFILE_PAGE_BYTES; i++)
        if (w->tmpl_page[i] != fill)
            return false;
    return true;
}

/* A page record, re-encoded: the first record of a section, or after a dropped one of another
 * block, names its block (the loader's current block is whatever the last record named). */
static int
emit_page(PauseWriter *w, int block, uint64_t addr, unsigned kind, const uint8_t *data,
          size_t data_len, Error **errp)
{
    uint8_t hdr[8 + 1 + 255];
    size_t n = 8;
    unsigned flags = kind;
    if (w->out_block == block) {
        flags |= RAM_FLAG_CONTINUE;
    } else {
        size_t name_len = strlen(w->blocks[block].name);
        hdr[8] = (uint8_t) name_len;
        memcpy(hdr + 9, w->blocks[block].name, name_len);
        n += 1 + name_len;
        w->out_block = block;
    }
    put_be64(hdr, addr | flags);
    if (pf_emit(w, hdr, n, errp) < 0)
        return -1;
    return pf_emit(w, data, data_len, errp);
}

static int
item_ram_record(PauseWriter *w, Cur *c, Error **errp)
{
    uint64_t hdr = cur_be64(c);
    if (c->short_)
        return 0;
    unsigned flags = (unsigned) (hdr & (PAUSEFILE_PAGE_BYTES - 1));
    uint64_t addr = hdr & ~(uint64_t) (PAUSEFILE_PAGE_BYTES - 1);
    if (flags == RAM_FLAG_EOS) {
        w->state = PF_TOP;
        return pf_emit(w, c->p, c->pos, errp);
    }
    if (flags == RAM_FLAG_MEM_SIZE) {
        if (w->n_blocks > 0 || addr == 0)
            return pf_fail(errp, "a second or empty RAM size record");
        if (item_ram_setup(w, c, addr, errp) < 0 || c->short_)
            return c->short_ ? 0 : -1;
        if (find_block(w, w->template_block) < 0)
            return pf_fail(errp, "the template's RAM block is not in it");
        return pf_emit(w, c->p, c->pos, errp);
    }
    unsigned kind = flags & ~RAM_FLAG_CONTINUE;
    if (kind != RAM_FLAG_ZERO && kind != RAM_FLAG_PAGE)
        return pf_fail(errp, "an unsupported RAM record (compressed, xbzrle or unknown)");
    int block = w->in_block;
    if (!(flags & RAM_FLAG_CONTINUE)) {
        char name[256];
        cur_name(c, name);
        if (c->short_)
            return 0;
        block = find_block(w, name);
    }
    if (block < 0)
        return pf_fail(errp, "a page of an unknown RAM block");
    if (addr >= w->blocks[block].used_bytes)
        return pf_fail(errp, "a page beyond its RAM block");
    const uint8_t *data = cur_take(c, kind == RAM_FLAG_PAGE ? PAUSEFILE_PAGE_BYTES : 1);
    if (!data)
        return 0;
    w->in_block = block;
    bool is_tmpl = strcmp(w->blocks[block].name, w->template_block) == 0;
    w->stats.pages_seen += is_tmpl;
    if (page_matches_template(w, block, addr, kind == RAM_FLAG_PAGE ? data : NULL, data[0])) {
        w->stats.pages_dropped++;
        return 0;
    }
    return emit_page(w, block, addr, kind, data, kind == RAM_FLAG_PAGE ? PAUSEFILE_PAGE_BYTES : 1,
                     errp);
}

static int
item_section(PauseWriter *w, Cur *c, uint8_t type, Error **errp)
{
    uint32_t id = cur_be32(c);
    if (type == QEVM_SECTION_PART || type == QEVM_SECTION_END) {
        if (c->short_)
            return 0;
        if (!w->ram_started || w->ram_ended || id != w->ram_section_id)
            return pf_fail(errp, "a section part that is not RAM's");
        w->ram_ended = type == QEVM_SECTION_END;
        w->state = PF_RAM;
        w->out_block = -1;
        return pf_emit(w, c->p, c->pos, errp);
    }
    char idstr[256];
    cur_name(c, idstr);
    (void) cur_be32(c); /* instance */
    (void) cur_be32(c); /* version */
    if (c->short_)
        return 0;
    bool ram = strcmp(idstr, "ram") == 0;
    if (type == QEVM_SECTION_START && ram && !w->ram_started) {
        w->ram_started = true;
        w->ram_section_id = id;
        w->state = PF_RAM;
        w->out_block = -1;
    } else if (type == QEVM_SECTION_FULL && !ram && w->ram_ended) {
        w->state = PF_PASS; /* device state: no lengths to parse by, and nothing to drop */
    } else {
        return pf_fail(errp, "an unexpected section (another iterative one, or devices before "
                             "RAM's end)");
    }
    return pf_emit(w, c->p, c->pos, errp);
}

static int
item_top(PauseWriter *w, Cur *c, Error **errp)
{
    uint8_t type = cur_u8(c);
    if (c->short_)
        return 0;
    switch (type) {
    case QEVM_CONFIGURATION:
        if (w->ram_started)
            return pf_fail(errp, "a late configuration section");
        if (item_config(c, errp) < 0)
            return -1;
        return c->short_ ? 0 : pf_emit(w, c->p, c->pos, errp);
    case QEVM_SECTION_FOOTER:
        (void) cur_be32(c);
        return c->short_ ? 0 : pf_emit(w, c->p, c->pos, errp);
    case QEVM_EOF:
        if (!w->ram_ended)
            return pf_fail(errp, "its end before RAM's");
        w->state = PF_PASS;
        return pf_emit(w, c->p, c->pos, errp);
    case QEVM_SECTION_START:
    case QEVM_SECTION_PART:
    case QEVM_SECTION_END:
    case QEVM_SECTION_FULL:
        return item_section(w, c, type, errp);
    default:
        return pf_fail(errp, "an unknown section type");
    }
}

/* Parses one complete item at p (emitting what stays); *ret_used 0 when it is not complete. */
static int
pf_item(PauseWriter *w, const uint8_t *p, size_t len, size_t *ret_used, Error **errp)
{
    Cur c = {p, len, 0, false};
    int r;
    if (w->state == PF_HEADER) {
        uint32_t magic = cur_be32(&c), version = cur_be32(&c);
        if (!c.short_ && (magic != QEVM_MAGIC || version != QEVM_VERSION))
            return pf_fail(errp, "not a QEMU stream of version 3");
        r = c.short_ ? 0 : pf_emit(w, p, c.pos, errp);
        if (!c.short_)
            w->state = PF_TOP;
    } else if (w->state == PF_TOP) {
        r = item_top(w, &c, errp);
    } else {
        r = item_ram_record(w, &c, errp);
    }
    if (r < 0)
        return -1;
    *ret_used = c.short_ ? 0 : c.pos;
    return 0;
}

int
pause_writer_feed(PauseWriter *w, const void *buf, size_t len, Error **errp)
{
    w->stats.stream_bytes += len;
    if (w->stats.stream_bytes > w->stream_max_bytes)
        return error_set(errp, E_TOO_LARGE, 0, "QEMU's migration stream is over %llu bytes",
                         (unsigned long long) w->stream_max_bytes);
    const uint8_t *in = buf;
    while (len > 0) {
        if (w->state == PF_PASS)
            return pf_emit(w, in, len, errp);
        size_t take = MIN(len, PF_PENDING_MAX_BYTES - w->pending_len);
        memcpy(w->pending + w->pending_len, in, take);
        w->pending_len += take;
        in += take;
        len -= take;
        size_t off = 0, used = 1;
        while (off < w->pending_len && w->state != PF_PASS && used > 0) {
            if (pf_item(w, w->pending + off, w->pending_len - off, &used, errp) < 0)
                return -1;
            off += used;
        }
        if (w->state == PF_PASS && pf_emit(w, w->pending + off, w->pending_len - off, errp) < 0)
            return -1;
        if (w->state == PF_PASS)
            off = w->pending_len;
        memmove(w->pending, w->pending + off, w->pending_len - off);
        w->pending_len -= off;
        if (w->pending_len == PF_PENDING_MAX_BYTES)
            return pf_fail(errp, "an item larger than any it may hold");
    }
    return 0;
}

int
pause_writer_new(int out_fd, const uint8_t template_id[PAUSEFILE_TEMPLATE_ID_BYTES],
                 const char *template_block, uint64_t stream_max_bytes, PauseTemplatePageFn page_fn,
                 void *userdata, PauseWriter **ret, Error **errp)
{
    _cleanup_(pause_writer_freep) PauseWriter *w = calloc(1, sizeof(*w));
    if (!w || strlen(template_block) >= sizeof(w->template_block))
        return error_set(errp, E_INTERNAL, ENOMEM, "pause writer");
    w->fd = out_fd;
    memcpy(w->template_id, template_id, PAUSEFILE_TEMPLATE_ID_BYTES);
    snprintf(w->template_block, sizeof(w->template_block), "%s", template_block);
    w->page_fn = page_fn;
    w->userdata = userdata;
    w->stream_max_bytes = stream_max_bytes;
    w->in_block = w->out_block = -1;
    w->zout_cap = ZSTD_CStreamOutSize();
    w->pending = malloc(PF_PENDING_MAX_BYTES);
    w->zout = malloc(w->zout_cap);
    w->zc = ZSTD_createCCtx();
    if (!w->pending || !w->zout || !w->zc ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, PF_ZSTD_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1)))
        return error_set(errp, E_INTERNAL, ENOMEM, "pause writer");
    sha256_init(&w->sum);
    /* the header's place; written last, once the body's size and checksum are known */
    uint8_t zero[PAUSEFILE_HEADER_BYTES] = {0};
    if (write_all(out_fd, zero, sizeof(zero)) < 0)
        return error_set(errp, E_IO, errno, "write the paused state");
    *ret = TAKE_PTR(w);
    return 0;
}

static void
put_le32(uint8_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++, v >>= 8)
        b[i] = (uint8_t) v;
}

static void
put_le64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        b[i] = (uint8_t) v;
}

int
pause_writer_finish(PauseWriter *w, PauseStats *ret_stats, Error **errp)
{
    if (w->state != PF_PASS || w->pending_len > 0)
        return pf_fail(errp, "it ended early");
    if (pf_compress(w, NULL, 0, ZSTD_e_end, errp) < 0)
        return -1;
    uint8_t hdr[PAUSEFILE_HEADER_BYTES] = {0};
    memcpy(hdr, PF_MAGIC, 8);
    put_le32(hdr + 8, PAUSEFILE_VERSION);
    put_le32(hdr + 12, PF_COMPRESSION_ZSTD);
    put_le64(hdr + 16, w->stats.body_bytes);
    put_le64(hdr + 24, w->stats.raw_bytes);
    memcpy(hdr + 32, w->template_id, PAUSEFILE_TEMPLATE_ID_BYTES);
    sha256_update(&w->sum, hdr, 64);
    sha256_final(&w->sum, hdr + 64);
    if (pwrite(w->fd, hdr, sizeof(hdr), 0) != (ssize_t) sizeof(hdr))
        return error_set(errp, E_IO, errno ? errno : EIO, "write the paused state's header");
    if (fsync(w->fd) < 0)
        return error_set(errp, E_IO, errno, "fsync the paused state");
    if (ret_stats)
        *ret_stats = w->stats;
    return 0;
}

void
pause_writer_free(PauseWriter *w)
{
    if (!w)
        return;
    ZSTD_freeCCtx(w->zc);
    free(w->zout);
    free(w->pending);
    free(w);
}

/* ------------------------------------------------------------------ reading a stored state */

static uint32_t
get_le32(const uint8_t *b)
{
    return (uint32_t) b[0] | (uint32_t) b[1] << 8 | (uint32_t) b[2] << 16 | (uint32_t) b[3] << 24;
}

static uint64_t
get_le64(const uint8_t *b)
{
    return (uint64_t) get_le32(b) | (uint64_t) get_le32(b + 4) << 32;
}

static uint64_t
pf_body_max_bytes(uint64_t raw_max_bytes)
{
    return raw_max_bytes + raw_max_bytes / 64 + 65536; /* above zstd's bound for any input */
}

static int
pf_check_header(const uint8_t *h, size_t len, uint64_t raw_max_bytes, Error **errp)
{
    if (len < PAUSEFILE_HEADER_BYTES)
        return error_set(errp, E_INVALID, 0,
                         "paused state truncated: %zu bytes, its header "
                         "alone is %d",
                         len, PAUSEFILE_HEADER_BYTES);
    if (memcmp(h, PF_MAGIC, 8) != 0)
        return error_set(errp, E_INVALID, 0, "not a paused state file");
    if (get_le32(h + 8) != PAUSEFILE_VERSION)
        return error_set(errp, E_INVALID, 0,
                         "paused state of format version %u; this daemon "
                         "reads %d",
                         get_le32(h + 8), PAUSEFILE_VERSION);
    if (get_le32(h + 12) != PF_COMPRESSION_ZSTD)
        return error_set(errp, E_INVALID, 0, "paused state with unknown compression %u",
                         get_le32(h + 12));
    for (size_t i = 96; i < PAUSEFILE_HEADER_BYTES; i++)
        if (h[i])
            return error_set(errp, E_INVALID, 0, "paused state header altered (reserved bytes)");
    uint64_t body = get_le64(h + 16), raw = get_le64(h + 24);
    if (raw > raw_max_bytes || body > pf_body_max_bytes(raw_max_bytes))
        return error_set(errp, E_INVALID, 0,
                         "paused state header claims %llu bytes (%llu "
                         "inflated): more than this guest's could be",
                         (unsigned long long) body, (unsigned long long) raw);
    if (body != len - PAUSEFILE_HEADER_BYTES)
        return error_set(errp, E_INVALID, 0,
                         "paused state truncated or extended: %zu body "
                         "bytes, its header says %llu",
                         len - PAUSEFILE_HEADER_BYTES, (unsigned long long) body);
    return 0;
}

int
pausefile_check(const uint8_t *data, size_t len,
                const uint8_t want_template_id[PAUSEFILE_TEMPLATE_ID_BYTES], uint64_t raw_max_bytes,
                PauseBody *ret, Error **errp)
{
    if (pf_check_header(data, len, raw_max_bytes, errp) < 0)
        return -1;
    Sha256 s;
    uint8_t sum[SHA256_BYTES];
    sha256_init(&s);
    sha256_update(&s, data + PAUSEFILE_HEADER_BYTES, len - PAUSEFILE_HEADER_BYTES);
    sha256_update(&s, data, 64);
    sha256_final(&s, sum);
    if (memcmp_constant_time(sum, data + 64, SHA256_BYTES) != 0)
        return error_set(errp, E_INVALID, 0,
                         "paused state fails its checksum: altered or "
                         "damaged");
    if (memcmp(data + 32, want_template_id, PAUSEFILE_TEMPLATE_ID_BYTES) != 0) {
        char have[17], want[17];
        hex_encode(data + 32, 8, have);
        hex_encode(want_template_id, 8, want);
        return error_set(errp, E_CONFLICT, 0,
                         "paused state made against template %s, not the one at "
                         "hand (%s): it cannot be resumed on it",
                         have, want);
    }
    ret->owned = NULL;
    ret->body = data + PAUSEFILE_HEADER_BYTES;
    ret->body_bytes = len - PAUSEFILE_HEADER_BYTES;
    ret->raw_bytes = get_le64(data + 24);
    return 0;
}

int
pausefile_load(int fd, const uint8_t want_template_id[PAUSEFILE_TEMPLATE_ID_BYTES],
               uint64_t raw_max_bytes, PauseBody *ret, Error **errp)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return error_set(errp, E_IO, errno, "stat the paused state");
    if (!S_ISREG(st.st_mode))
        return error_set(errp, E_INVALID, 0, "paused state is not a regular file");
    if ((uint64_t) st.st_size > PAUSEFILE_HEADER_BYTES + pf_body_max_bytes(raw_max_bytes))
        return error_set(errp, E_INVALID, 0,
                         "paused state of %lld bytes is larger than this "
                         "guest's could be",
                         (long long) st.st_size);
    size_t len = (size_t) st.st_size, got = 0;
    _cleanup_free_ uint8_t *data = malloc(len ? len : 1);
    if (!data)
        return error_set(errp, E_INTERNAL, ENOMEM, "paused state");
    if (lseek(fd, 0, SEEK_SET) < 0 || read_full(fd, data, len, &got) < 0)
        return error_set(errp, E_IO, errno, "read the paused state");
    if (pausefile_check(data, got, want_template_id, raw_max_bytes, ret, errp) < 0)
        return -1;
    ret->owned = TAKE_PTR(data);
    return 0;
}

void
pause_body_clear(PauseBody *b)
{
    free(b->owned);
    *b = (PauseBody){0};
}

int
pausefile_inflate(const PauseBody *b, PauseSinkFn sink, void *userdata, Error **errp)
{
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    size_t cap = ZSTD_DStreamOutSize();
    _cleanup_free_ uint8_t *out = malloc(cap);
    int r = -1;
    if (!dc || !out) {
        error_set(errp, E_INTERNAL, ENOMEM, "inflate the paused state");
        goto done;
    }
    ZSTD_inBuffer in = {b->body, b->body_bytes, 0};
    uint64_t total = 0;
    size_t left = 1;
    while (in.pos < in.size || left != 0) {
        ZSTD_outBuffer o = {out, cap, 0};
        size_t in_before = in.pos;
        left = ZSTD_decompressStream(dc, &o, &in);
        if (ZSTD_isError(left)) {
            error_set(errp, E_INVALID, 0, "paused state: zstd: %s", ZSTD_getErrorName(left));
            goto done;
        }
        total += o.pos;
        if (total > b->raw_bytes) {
            error_set(errp, E_INVALID, 0, "paused state inflates past its header's size");
            goto done;
        }
        if (o.pos > 0 && sink(out, o.pos, userdata, errp) < 0)
            goto done;
        if (o.pos == 0 && in.pos == in_before && in.pos == in.size && left != 0) {
            error_set(errp, E_INVALID, 0, "paused state: its last zstd frame is cut short");
            goto done;
        }
    }
    if (total != b->raw_bytes) {
        error_set(errp, E_INVALID, 0, "paused state inflates to %llu bytes, its header says %llu",
                  (unsigned long long) total, (unsigned long long) b->raw_bytes);
        goto done;
    }
    r = 0;
done:
    ZSTD_freeDCtx(dc);
    return r;
}
