/* Tar pull parser: see tar.h. Limits: TAR_PATH_MAX_BYTES per name, TAR_PAX_MAX_BYTES per
 * pax header, TAR_SIZE_MAX_BYTES per entry. Every failure leaves the reader broken. */
#include "tar.h"

#include <string.h>

#define TAR_OFF_NAME 0
#define TAR_LEN_NAME 100
#define TAR_OFF_MODE 100
#define TAR_OFF_UID 108
#define TAR_OFF_GID 116
#define TAR_LEN_ID 8
#define TAR_OFF_SIZE 124
#define TAR_OFF_MTIME 136
#define TAR_OFF_CHKSUM 148
#define TAR_LEN_CHKSUM 8
#define TAR_OFF_TYPE 156
#define TAR_OFF_LINK 157
#define TAR_LEN_LINK 100
#define TAR_OFF_MAGIC 257
#define TAR_OFF_PREFIX 345
#define TAR_LEN_PREFIX 155
#define TAR_MODE_BITS 07777u
#define TAR_SKIP_CHUNK 4096u

static TarStatus
tar_fail(TarReader *r, const char *why)
{
    r->broken = true;
    r->why = why;
    return TAR_MALFORMED;
}

/* Reads exactly len bytes, or fails: a stream ending early is malformed. */
static TarStatus
tar_read_exact(TarReader *r, void *buf, size_t len)
{
    size_t have = 0;
    while (have < len) {
        size_t got = 0;
        if (r->read(r->ctx, (uint8_t *) buf + have, len - have, &got) < 0) {
            r->broken = true;
            return TAR_IO_ERROR;
        }
        if (got == 0)
            return tar_fail(r, "stream ended inside an entry");
        have += got;
        r->offset += got;
    }
    return TAR_ENTRY;
}

static TarStatus
tar_skip(TarReader *r, uint64_t n)
{
    uint8_t scratch[TAR_SKIP_CHUNK];
    while (n > 0) {
        size_t chunk = (size_t) MIN(n, (uint64_t) sizeof(scratch));
        TarStatus st = tar_read_exact(r, scratch, chunk);
        if (st != TAR_ENTRY)
            return st;
        n -= chunk;
    }
    return TAR_ENTRY;
}

bool
tar_parse_number(const uint8_t *field, size_t len, uint64_t *ret)
{
    uint64_t v = 0;
    size_t i = 0;

    if (len > 0 && (field[0] & 0x80)) { /* GNU base-256; 0xff first byte means negative */
        if (field[0] & 0x40)
            return false;
        v = field[0] & 0x3f;
        for (i = 1; i < len; i++) {
            if (v > (TAR_SIZE_MAX_BYTES >> 8))
                return false;
            v = (v << 8) | field[i];
        }
        *ret = v;
        return true;
    }
    while (i < len && (field[i] == ' ' || field[i] == '\0'))
        i++;
    if (i == len) { /* all blank: zero, as GNU tar reads it */
        *ret = 0;
        return true;
    }
    for (; i < len && field[i] >= '0' && field[i] <= '7'; i++) {
        if (v > (TAR_SIZE_MAX_BYTES >> 3))
            return false;
        v = (v << 3) | (uint64_t) (field[i] - '0');
    }
    for (; i < len; i++) /* only terminators may follow the digits */
        if (field[i] != ' ' && field[i] != '\0')
            return false;
    *ret = v;
    return true;
}

static bool
tar_checksum_ok(const uint8_t *b)
{
    uint64_t want;
    unsigned long usum = 0;
    long ssum = 0;

    if (!tar_parse_number(b + TAR_OFF_CHKSUM, TAR_LEN_CHKSUM, &want))
        return false;
    for (size_t i = 0; i < TAR_BLOCK_BYTES; i++) {
        bool in_field = i >= TAR_OFF_CHKSUM && i < TAR_OFF_CHKSUM + TAR_LEN_CHKSUM;
        uint8_t c = in_field ? ' ' : b[i];
        usum += c;
        ssum += (signed char) c;
    }
    return want == usum || (ssum >= 0 && want == (uint64_t) ssum);
}

static bool
tar_block_is_zero(const uint8_t *b)
{
    for (size_t i = 0; i < TAR_BLOCK_BYTES; i++)
        if (b[i])
            return false;
    return true;
}

static void
tar_pending_clear(TarReader *r)
{
    r->pend_path_set = r->pend_path_bad = r->pend_size_set = false;
    r->pend_mtime_set = r->pend_sparse = false;
    r->pend_link_set = r->pend_link_bad = r->pend_uid_set = r->pend_gid_set = false;
    r->pend_owner_bad = false;
    r->pend_path_len = r->pend_link_len = 0;
}

void
tar_reader_init(TarReader *r, TarReadFn read, void *ctx)
{
    r->read = read;
    r->ctx = ctx;
    r->data_left = 0;
    r->pad_left = 0;
    r->offset = 0;
    r->broken = false;
    r->why = NULL;
    tar_pending_clear(r);
}

static bool tar_parse_decimal(const char *s, size_t len, uint64_t *ret);

/* A long name or link target: kept if it fits and holds no NUL, else marked bad. */
static void
tar_set_long(char *dst, size_t *ret_len, bool *ret_bad, const char *p, size_t len)
{
    *ret_bad = len > TAR_PATH_MAX_BYTES || memchr(p, '\0', len) != NULL;
    *ret_len = *ret_bad ? 0 : len;
    if (!*ret_bad)
        memcpy(dst, p, len);
    dst[*ret_len] = '\0';
}

static void
tar_set_pending_path(TarReader *r, const char *p, size_t len)
{
    r->pend_path_set = true;
    tar_set_long(r->pend_path, &r->pend_path_len, &r->pend_path_bad, p, len);
}

static void
tar_set_pending_link(TarReader *r, const char *p, size_t len)
{
    r->pend_link_set = true;
    tar_set_long(r->pend_link, &r->pend_link_len, &r->pend_link_bad, p, len);
}

/* pax uid/gid: decimal; a value over UINT32_MAX (or not a number) marks the owner bad. */
static void
tar_pax_id(TarReader *r, const char *val, size_t vlen, bool *ret_set, uint32_t *ret_id)
{
    uint64_t n;
    *ret_set = true;
    if (!tar_parse_decimal(val, vlen, &n) || memchr(val, '.', vlen) || n > UINT32_MAX) {
        r->pend_owner_bad = true;
        *ret_id = 0;
        return;
    }
    *ret_id = (uint32_t) n;
}

/* Parses a decimal integer of at most 19 digits from s[0..len); pax fractions are cut. */
static bool
tar_parse_decimal(const char *s, size_t len, uint64_t *ret)
{
    uint64_t v = 0;
    size_t i = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (i >= 19)
            return false;
        v = v * 10 + (uint64_t) (s[i] - '0');
    }
    if (i == 0 || (i < len && s[i] != '.'))
        return false;
    *ret = v;
    return true;
}

static bool
tar_pax_record(TarReader *r, const char *key, size_t klen, const char *val, size_t vlen)
{
    uint64_t n;
    if (klen == 4 && memcmp(key, "path", 4) == 0) {
        tar_set_pending_path(r, val, vlen);
    } else if (klen == 8 && memcmp(key, "linkpath", 8) == 0) {
        tar_set_pending_link(r, val, vlen);
    } else if (klen == 3 && memcmp(key, "uid", 3) == 0) {
        tar_pax_id(r, val, vlen, &r->pend_uid_set, &r->pend_uid);
    } else if (klen == 3 && memcmp(key, "gid", 3) == 0) {
        tar_pax_id(r, val, vlen, &r->pend_gid_set, &r->pend_gid);
    } else if (klen == 4 && memcmp(key, "size", 4) == 0) {
        if (!tar_parse_decimal(val, vlen, &n) || memchr(val, '.', vlen) || n > TAR_SIZE_MAX_BYTES)
            return false;
        r->pend_size_set = true;
        r->pend_size = n;
    } else if (klen == 5 && memcmp(key, "mtime", 5) == 0) {
        if (tar_parse_decimal(val, vlen, &n) && n <= INT64_MAX) { /* bad mtime: ignored */
            r->pend_mtime_set = true;
            r->pend_mtime = (int64_t) n;
        }
    } else if (klen > 11 && memcmp(key, "GNU.sparse.", 11) == 0) {
        r->pend_sparse = true;
    }
    return true;
}

/* Records are "LEN KEY=VALUE\n" with LEN counting the whole record. */
static TarStatus
tar_parse_pax(TarReader *r, size_t len, bool global)
{
    size_t pos = 0;
    while (pos < len) {
        const char *rec = r->pax + pos;
        size_t avail = len - pos, i = 0, reclen = 0;
        for (; i < avail && i < 10 && rec[i] >= '0' && rec[i] <= '9'; i++)
            reclen = reclen * 10 + (size_t) (rec[i] - '0');
        if (i == 0 || i >= avail || rec[i] != ' ' || reclen <= i + 1 || reclen > avail ||
            rec[reclen - 1] != '\n')
            return tar_fail(r, "bad pax record");
        const char *key = rec + i + 1;
        const char *eq = memchr(key, '=', (size_t) (rec + reclen - 1 - key));
        if (!eq || eq == key)
            return tar_fail(r, "bad pax record");
        if (!global && !tar_pax_record(r, key, (size_t) (eq - key), eq + 1,
                                       (size_t) (rec + reclen - 1 - (eq + 1))))
            return tar_fail(r, "bad pax value");
        pos += reclen;
    }
    return TAR_ENTRY;
}

static uint32_t
tar_padding(uint64_t size)
{
    return (uint32_t) ((TAR_BLOCK_BYTES - size % TAR_BLOCK_BYTES) % TAR_BLOCK_BYTES);
}

/* Meta entries ('L', 'K', 'x', 'g'): consume their data, remember what applies next. */
static TarStatus
tar_meta(TarReader *r, char type, uint64_t size)
{
    uint64_t padded = size + tar_padding(size);
    if ((type == 'L' || type == 'K') && size > TAR_PATH_MAX_BYTES + 1) {
        if (type == 'L') /* marks it bad */
            tar_set_pending_path(r, "", TAR_PATH_MAX_BYTES + 1);
        else
            tar_set_pending_link(r, "", TAR_PATH_MAX_BYTES + 1);
        return tar_skip(r, padded);
    }
    if ((type == 'x' || type == 'g') && size > TAR_PAX_MAX_BYTES)
        return tar_fail(r, "pax header too large");
    TarStatus st = tar_read_exact(r, r->pax, (size_t) size);
    if (st != TAR_ENTRY)
        return st;
    st = tar_skip(r, tar_padding(size));
    if (st != TAR_ENTRY)
        return st;
    if (type == 'L' || type == 'K') {
        size_t n = (size_t) size;
        while (n > 0 && r->pax[n - 1] == '\0') /* GNU writes a trailing NUL */
            n--;
        if (type == 'L')
            tar_set_pending_path(r, r->pax, n);
        else
            tar_set_pending_link(r, r->pax, n);
        return TAR_ENTRY;
    }
    return tar_parse_pax(r, (size_t) size, type == 'g');
}

static TarType
tar_type_of(char t)
{
    switch (t) {
    case '0':
    case '\0':
    case '7':
        return TAR_TYPE_FILE;
    case '5':
        return TAR_TYPE_DIR;
    case '1':
        return TAR_TYPE_HARDLINK;
    case '2':
        return TAR_TYPE_SYMLINK;
    case '3':
        return TAR_TYPE_CHAR;
    case '4':
        return TAR_TYPE_BLOCK;
    case '6':
        return TAR_TYPE_FIFO;
    default:
        return TAR_TYPE_OTHER;
    }
}

/* The header's own name: ustar joins prefix "/" name; GNU and V7 use name only. */
static void
tar_header_name(const uint8_t *b, TarEntry *e)
{
    bool ustar = memcmp(b + TAR_OFF_MAGIC, "ustar\0", 6) == 0;
    size_t plen = ustar ? strnlen((const char *) b + TAR_OFF_PREFIX, TAR_LEN_PREFIX) : 0;
    size_t nlen = strnlen((const char *) b + TAR_OFF_NAME, TAR_LEN_NAME);
    size_t o = 0;

    if (plen > 0) {
        memcpy(e->path, b + TAR_OFF_PREFIX, plen);
        o = plen;
        e->path[o++] = '/';
    }
    memcpy(e->path + o, b + TAR_OFF_NAME, nlen);
    e->path_len = o + nlen;
    e->path[e->path_len] = '\0';
    e->path_bad = false;
}

/* Owner and link target: pending pax/GNU values first, else the header's fields. */
static void
tar_fill_owner_link(TarReader *r, const uint8_t *b, TarEntry *e)
{
    uint64_t uid = 0, gid = 0;
    bool ok = tar_parse_number(b + TAR_OFF_UID, TAR_LEN_ID, &uid) &&
              tar_parse_number(b + TAR_OFF_GID, TAR_LEN_ID, &gid);
    e->owner_bad = r->pend_owner_bad || (!r->pend_uid_set && (!ok || uid > UINT32_MAX)) ||
                   (!r->pend_gid_set && (!ok || gid > UINT32_MAX));
    e->uid = r->pend_uid_set ? r->pend_uid : (uint32_t) MIN(uid, (uint64_t) UINT32_MAX);
    e->gid = r->pend_gid_set ? r->pend_gid : (uint32_t) MIN(gid, (uint64_t) UINT32_MAX);
    if (r->pend_link_set) {
        memcpy(e->link, r->pend_link, r->pend_link_len + 1);
        e->link_len = r->pend_link_len;
        e->link_bad = r->pend_link_bad;
    } else {
        e->link_len = strnlen((const char *) b + TAR_OFF_LINK, TAR_LEN_LINK);
        memcpy(e->link, b + TAR_OFF_LINK, e->link_len);
        e->link[e->link_len] = '\0';
        e->link_bad = false;
    }
}

static TarStatus
tar_fill_entry(TarReader *r, const uint8_t *b, uint64_t size, uint64_t mode, uint64_t mtime,
               TarEntry *e)
{
    tar_fill_owner_link(r, b, e);
    e->typeflag = (char) b[TAR_OFF_TYPE];
    e->type = r->pend_sparse ? TAR_TYPE_OTHER : tar_type_of(e->typeflag);
    e->mode = (uint32_t) (mode & TAR_MODE_BITS);
    e->size = r->pend_size_set ? r->pend_size : size;
    e->mtime_sec = r->pend_mtime_set ? r->pend_mtime : (int64_t) MIN(mtime, (uint64_t) INT64_MAX);
    if (r->pend_path_set) {
        memcpy(e->path, r->pend_path, r->pend_path_len + 1);
        e->path_len = r->pend_path_len;
        e->path_bad = r->pend_path_bad;
    } else {
        tar_header_name(b, e);
    }
    tar_pending_clear(r);
    r->data_left = e->size;
    r->pad_left = tar_padding(e->size);
    return TAR_ENTRY;
}

TarStatus
tar_reader_next(TarReader *r, TarEntry *ret_entry)
{
    if (r->broken)
        return TAR_MALFORMED;
    TarStatus st = tar_skip(r, r->data_left + r->pad_left);
    if (st != TAR_ENTRY)
        return st;
    r->data_left = r->pad_left = 0;
    for (;;) {
        uint64_t size, mode, mtime;
        size_t got = 0;
        if (r->read(r->ctx, r->block, TAR_BLOCK_BYTES, &got) < 0) {
            r->broken = true;
            return TAR_IO_ERROR;
        }
        if (got == 0) /* EOF exactly at a header: the end marker is missing */
            return tar_fail(r, "stream ended without an end-of-archive marker");
        r->offset += got;
        if ((st = tar_read_exact(r, r->block + got, TAR_BLOCK_BYTES - got)) != TAR_ENTRY)
            return st;
        if (tar_block_is_zero(r->block))
            return TAR_END;
        if (!tar_checksum_ok(r->block))
            return tar_fail(r, "header checksum mismatch");
        if (!tar_parse_number(r->block + TAR_OFF_SIZE, 12, &size) || size > TAR_SIZE_MAX_BYTES ||
            !tar_parse_number(r->block + TAR_OFF_MODE, 8, &mode) ||
            !tar_parse_number(r->block + TAR_OFF_MTIME, 12, &mtime))
            return tar_fail(r, "bad number in header");
        char t = (char) r->block[TAR_OFF_TYPE];
        if (t == 'L' || t == 'K' || t == 'x' || t == 'g') {
            if ((st = tar_meta(r, t, size)) != TAR_ENTRY)
                return st;
            continue;
        }
        return tar_fill_entry(r, r->block, size, mode, mtime, ret_entry);
    }
}

TarStatus
tar_reader_read(TarReader *r, void *buf, size_t len, size_t *ret_got)
{
    if (r->broken)
        return TAR_MALFORMED;
    size_t want = (size_t) MIN((uint64_t) len, r->data_left);
    if (want == 0) {
        *ret_got = 0;
        return TAR_ENTRY;
    }
    size_t got = 0;
    if (r->read(r->ctx, buf, want, &got) < 0) {
        r->broken = true;
        return TAR_IO_ERROR;
    }
    if (got == 0)
        return tar_fail(r, "stream ended inside file data");
    r->offset += got;
    r->data_left -= got;
    *ret_got = got;
    return TAR_ENTRY;
}
