/* The ClientHello's server name: see sni.h. A reader walks the handshake bytes across record
 * headers one byte at a time (at most EGRESS_FIRST_FLIGHT_MAX_BYTES of them); r->off counts
 * handshake bytes read, and every length is checked against the end offset of the span that
 * holds it before it is used, so no read goes past a container or past the buffer. */
#include "sni.h"

#include <string.h>

typedef struct Rd {
    const uint8_t *buf;
    size_t len, pos; /* the input, and the next byte of it */
    size_t rec_left; /* payload bytes left in the current record */
    size_t off;      /* handshake bytes read so far */
    SniStatus status;
    const char *why;
} Rd;

static bool
rd_fail(Rd *r, SniStatus s, const char *why)
{
    r->status = s;
    r->why = why;
    return false;
}

/* The next record header; a bad type or version is refused as soon as its byte is here. */
static bool
rd_next_record(Rd *r)
{
    const uint8_t *h = r->buf + r->pos;
    size_t have = r->len - r->pos;

    if (have >= 1 && h[0] != TLS_CONTENT_HANDSHAKE)
        return rd_fail(r, SNI_BAD, "a TLS record that is not a handshake");
    if (have >= 2 && h[1] != 3)
        return rd_fail(r, SNI_BAD, "a record that is not TLS (version 3.x)");
    if (have < TLS_RECORD_HEADER_BYTES)
        return rd_fail(r, SNI_NEED_MORE, NULL);
    size_t n = (size_t) h[3] << 8 | h[4];
    if (n == 0 || n > TLS_RECORD_MAX_BYTES)
        return rd_fail(r, SNI_BAD, "a TLS record of 0 or over 16384 bytes");
    r->pos += TLS_RECORD_HEADER_BYTES;
    r->rec_left = n;
    return true;
}

static bool
rd_u8(Rd *r, uint8_t *ret)
{
    if (r->rec_left == 0 && !rd_next_record(r))
        return false;
    if (r->pos == r->len)
        return rd_fail(r, SNI_NEED_MORE, NULL);
    *ret = r->buf[r->pos++];
    r->rec_left--;
    r->off++;
    return true;
}

/* n more handshake bytes lie within the span that ends at offset end. */
static bool
rd_within(Rd *r, size_t n, size_t end)
{
    if (n > end - r->off)
        return rd_fail(r, SNI_BAD, "a ClientHello length runs past what holds it");
    return true;
}

/* A big-endian integer of nbytes (1..3), within end. */
static bool
rd_uint(Rd *r, unsigned nbytes, size_t end, size_t *ret)
{
    uint8_t b;
    size_t v = 0;

    if (!rd_within(r, nbytes, end))
        return false;
    for (unsigned i = 0; i < nbytes; i++) {
        if (!rd_u8(r, &b))
            return false;
        v = v << 8 | b;
    }
    *ret = v;
    return true;
}

static bool
rd_skip(Rd *r, size_t n)
{
    uint8_t b;
    for (size_t i = 0; i < n; i++)
        if (!rd_u8(r, &b))
            return false;
    return true;
}

/* A vector with a length prefix of nbytes and at least min bytes, skipped. */
static bool
rd_skip_vector(Rd *r, unsigned nbytes, size_t min, size_t end)
{
    size_t n;
    if (!rd_uint(r, nbytes, end, &n) || !rd_within(r, n, end))
        return false;
    if (n < min)
        return rd_fail(r, SNI_BAD, "an empty cipher suite or compression list");
    return rd_skip(r, n);
}

/* One HostName of n bytes: printable ASCII, and a host name by host.h's rules. */
static bool
sni_name(Rd *r, size_t n, SniResult *ret)
{
    char raw[EGRESS_NAME_MAX_BYTES + 2], name[EGRESS_NAME_MAX_BYTES + 1];
    const char *why;
    EgressAddr a;
    uint8_t c;

    if (n == 0 || n > EGRESS_NAME_MAX_BYTES + 1) /* + 1: a trailing dot */
        return rd_fail(r, SNI_BAD, "a server name of 0 or over 254 bytes");
    for (size_t i = 0; i < n; i++) {
        if (!rd_u8(r, &c))
            return false;
        if (c <= 0x20 || c >= 0x7f)
            return rd_fail(r, SNI_BAD, "a server name with bytes outside printable ASCII");
        raw[i] = (char) c;
    }
    raw[n] = '\0';
    switch (egress_host_parse(raw, &a, name, &why)) {
    case HOST_NAME:
        memcpy(ret->name, name, sizeof(name));
        return true;
    case HOST_NUMERIC:
        return rd_fail(r, SNI_BAD, "an IP address as server name (RFC 6066 forbids it)");
    case HOST_BAD:
        break;
    }
    return rd_fail(r, SNI_BAD, "a server name that is not a host name");
}

/* ServerNameList: exactly one entry, of type host_name, filling the extension. */
static bool
sni_names(Rd *r, size_t end, SniResult *ret)
{
    size_t list, type, n;

    if (!rd_uint(r, 2, end, &list))
        return false;
    if (list == 0 || list != end - r->off)
        return rd_fail(r, SNI_BAD, "a server name list that is empty or not its extension");
    while (r->off < end) {
        if (!rd_uint(r, 1, end, &type) || !rd_uint(r, 2, end, &n) || !rd_within(r, n, end))
            return false;
        if (type != 0)
            return rd_fail(r, SNI_BAD, "a server name of a type other than host_name");
        if (ret->name[0])
            return rd_fail(r, SNI_BAD, "more than one server name");
        if (!sni_name(r, n, ret))
            return false;
    }
    return true;
}

static bool
sni_extension(Rd *r, size_t end, bool *seen, SniResult *ret)
{
    size_t type, n;

    if (!rd_uint(r, 2, end, &type) || !rd_uint(r, 2, end, &n) || !rd_within(r, n, end))
        return false;
    if (type == TLS_EXT_ECH)
        ret->ech = true;
    if (type != TLS_EXT_SERVER_NAME)
        return rd_skip(r, n);
    if (*seen)
        return rd_fail(r, SNI_BAD, "two server_name extensions");
    *seen = true;
    return sni_names(r, r->off + n, ret);
}

/* ClientHello: version, random, session id, cipher suites, compression methods, then the
 * extensions (absent in old clients), which end exactly where the message ends. */
static bool
sni_hello(Rd *r, SniResult *ret)
{
    size_t type, len, ext_len;
    bool seen = false;

    if (!rd_uint(r, 1, SIZE_MAX, &type))
        return false;
    if (type != TLS_HANDSHAKE_CLIENT_HELLO)
        return rd_fail(r, SNI_BAD, "the first handshake message is not a ClientHello");
    if (!rd_uint(r, 3, SIZE_MAX, &len))
        return false;
    if (len > EGRESS_HELLO_MAX_BYTES - 4)
        return rd_fail(r, SNI_TOO_LARGE, "a ClientHello over 16 KiB");
    size_t end = r->off + len;
    if (!rd_within(r, 2 + 32, end) || !rd_skip(r, 2 + 32) || /* legacy_version, random */
        !rd_skip_vector(r, 1, 0, end) ||                     /* legacy_session_id */
        !rd_skip_vector(r, 2, 2, end) ||                     /* cipher_suites */
        !rd_skip_vector(r, 1, 1, end))                       /* compression methods */
        return false;
    if (r->off == end)
        return true;
    if (!rd_uint(r, 2, end, &ext_len))
        return false;
    if (ext_len != end - r->off)
        return rd_fail(r, SNI_BAD, "the extensions do not end with the ClientHello");
    while (r->off < end)
        if (!sni_extension(r, end, &seen, ret))
            return false;
    return true;
}

SniStatus
egress_sni_parse(const uint8_t *buf, size_t len, SniResult *ret)
{
    Rd r = {.buf = buf, .len = len};

    memset(ret, 0, sizeof(*ret));
    if (!sni_hello(&r, ret)) {
        memset(ret->name, 0, sizeof(ret->name));
        ret->why = r.why;
        return r.status;
    }
    return ret->name[0] ? SNI_FOUND : SNI_ABSENT;
}
