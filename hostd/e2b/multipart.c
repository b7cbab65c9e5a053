/* See multipart.h. A body is: optional preamble, then parts each opened by a delimiter line
 * "--boundary" (optional spaces) CRLF, a header block ending in an empty line, and content up
 * to the next CRLF "--boundary"; "--boundary--" closes. Header values are decoded the way
 * browsers and undici's FormData encode them (HTML's form-data algorithm: '"', CR and LF as
 * %22, %0D, %0A), with backslash escapes inside quotes and RFC 5987 filename* accepted. */
#include "multipart.h"

#include "ascii.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define BCHARS "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? "
#define PADDING_MAX_BYTES 64 /* spaces after a delimiter, before its CRLF */

int
multipart_boundary(const char *content_type, char out[MULTIPART_BOUNDARY_MAX_BYTES + 1])
{
    static const char type[] = "multipart/form-data";
    const char *p;
    size_t n = 0;

    if (!content_type || strncasecmp(content_type, type, sizeof(type) - 1) != 0)
        return -1;
    for (p = content_type + sizeof(type) - 1; (p = strchr(p, ';'));) {
        p++;
        p += strspn(p, " \t");
        if (strncasecmp(p, "boundary=", 9) == 0)
            break;
    }
    if (!p)
        return -1;
    p += 9;
    bool quoted = *p == '"';
    p += quoted;
    for (; *p && (quoted ? *p != '"' : (*p != ';' && *p != ' ' && *p != '\t')); p++) {
        if (n == MULTIPART_BOUNDARY_MAX_BYTES || !strchr(BCHARS, *p))
            return -1;
        out[n++] = *p;
    }
    if ((quoted && *p != '"') || n == 0 || out[n - 1] == ' ')
        return -1;
    out[n] = '\0';
    return 0;
}

void
multipart_reader_init(MultipartReader *r, const uint8_t *body, size_t len, const char *boundary)
{
    *r = (MultipartReader){.body = body, .len = len};
    r->delim_len = (size_t) snprintf(r->delim, sizeof(r->delim), "\r\n--%.*s",
                                     MULTIPART_BOUNDARY_MAX_BYTES, boundary);
}

static int
fail(MultipartReader *r, const char *why)
{
    r->why = why;
    r->done = true;
    return -1;
}

/* Positions r->pos after the first delimiter line's "--boundary". */
static int
find_first(MultipartReader *r)
{
    const uint8_t *d = (const uint8_t *) r->delim;
    if (r->len >= r->delim_len - 2 && memcmp(r->body, d + 2, r->delim_len - 2) == 0) {
        r->pos = r->delim_len - 2;
        return 0;
    }
    size_t window = r->len < MULTIPART_PREAMBLE_MAX_BYTES + r->delim_len
                        ? r->len
                        : MULTIPART_PREAMBLE_MAX_BYTES + r->delim_len;
    const uint8_t *at = memmem(r->body, window, d, r->delim_len);
    if (!at)
        return fail(r, "no multipart boundary near the start of the body");
    r->pos = (size_t) (at - r->body) + r->delim_len;
    return 0;
}

/* Copies a parameter value (quoted or a token) at *pp into out (cap incl. NUL), decoding
 * backslash escapes inside quotes and then %22 %0D %0A (or, for rfc5987, every %XX). */
static int
param_value(const char **pp, const char *end, char *out, size_t cap, bool rfc5987)
{
    const char *p = *pp;
    size_t n = 0;
    bool quoted = p < end && *p == '"';

    for (p += quoted; p < end && (quoted ? *p != '"' : *p != ';'); p++) {
        char ch = *p;
        if (quoted && ch == '\\' && p + 1 < end)
            ch = *++p;
        int hi, lo;
        if (ch == '%' && p + 2 < end && (hi = ascii_hex_value(p[1])) >= 0 &&
            (lo = ascii_hex_value(p[2])) >= 0) {
            char dec = (char) (hi << 4 | lo);
            if (rfc5987 || dec == '"' || dec == '\r' || dec == '\n') {
                ch = dec;
                p += 2;
            }
        }
        if (n + 1 >= cap || ch == '\0')
            return -1;
        out[n++] = ch;
    }
    if (quoted && (p >= end || *p != '"'))
        return -1;
    out[n] = '\0';
    *pp = p + quoted;
    return 0;
}

/* Content-Disposition: form-data; name="..."; filename="..." (value: [v, end)). */
static int
parse_disposition(const char *v, const char *end, MultipartPart *part)
{
    bool have_name = false;
    if ((size_t) (end - v) < 9 || strncasecmp(v, "form-data", 9) != 0)
        return -1;
    for (const char *p = v + 9; p < end;) {
        p += strspn(p, " \t");
        if (p < end && *p == ';') {
            p++;
            continue;
        }
        const char *eq = memchr(p, '=', (size_t) (end - p));
        if (!eq)
            return -1;
        size_t klen = (size_t) (eq - p);
        const char *val = eq + 1;
        if (klen == 4 && strncasecmp(p, "name", 4) == 0) {
            if (param_value(&val, end, part->name, sizeof(part->name), false) < 0)
                return -1;
            have_name = true;
        } else if (klen == 8 && strncasecmp(p, "filename", 8) == 0) {
            if (param_value(&val, end, part->filename, sizeof(part->filename), false) < 0)
                return -1;
            part->has_filename = true;
        } else if (klen == 9 && strncasecmp(p, "filename*", 9) == 0) {
            const char *q = memchr(val, '\'', (size_t) (end - val));
            const char *q2 = q ? memchr(q + 1, '\'', (size_t) (end - q - 1)) : NULL;
            bool utf8 = q && ((q - val == 5 && strncasecmp(val, "UTF-8", 5) == 0) || q == val);
            if (!q2 || !utf8)
                return -1;
            val = q2 + 1;
            if (param_value(&val, end, part->filename, sizeof(part->filename), true) < 0)
                return -1;
            part->has_filename = true;
        } else {
            char skip[MULTIPART_FILENAME_MAX_BYTES + 1];
            if (param_value(&val, end, skip, sizeof(skip), false) < 0)
                return -1;
        }
        p = val;
    }
    return have_name ? 0 : -1;
}

/* The header block [head, head + len): CRLF-separated lines; Content-Disposition is required. */
static int
parse_head(const char *head, size_t len, MultipartPart *part)
{
    bool disposition = false;
    for (const char *line = head, *end = head + len; line < end;) {
        const char *eol = memmem(line, (size_t) (end - line), "\r\n", 2);
        if (!eol)
            eol = end;
        const char *colon = memchr(line, ':', (size_t) (eol - line));
        if (!colon)
            return -1;
        size_t nlen = (size_t) (colon - line);
        if (nlen == 19 && strncasecmp(line, "Content-Disposition", 19) == 0) {
            const char *v = colon + 1 + strspn(colon + 1, " \t");
            if (disposition || v > eol || parse_disposition(v, eol, part) < 0)
                return -1;
            disposition = true;
        }
        line = eol + 2;
    }
    return disposition ? 0 : -1;
}

/* After a delimiter: "--" closes; else padding and CRLF. 1: a part follows, 0: closed. */
static int
after_delimiter(MultipartReader *r)
{
    if (r->len - r->pos >= 2 && memcmp(r->body + r->pos, "--", 2) == 0) {
        r->done = true;
        return 0;
    }
    size_t pad = 0;
    while (r->pos + pad < r->len && (r->body[r->pos + pad] == ' ' || r->body[r->pos + pad] == '\t'))
        if (++pad > PADDING_MAX_BYTES)
            return fail(r, "a delimiter line is too long");
    r->pos += pad;
    if (r->len - r->pos < 2 || memcmp(r->body + r->pos, "\r\n", 2) != 0)
        return fail(r, "a delimiter is not followed by CRLF");
    r->pos += 2;
    return 1;
}

int
multipart_next(MultipartReader *r, MultipartPart *ret)
{
    MultipartPart part = {0};
    int k;

    if (r->done)
        return r->why ? -1 : 0;
    if (!r->started && (r->started = true, find_first(r) < 0))
        return -1;
    if ((k = after_delimiter(r)) <= 0)
        return k;
    if (++r->parts > MULTIPART_PARTS_MAX)
        return fail(r, "too many parts");
    const uint8_t *head = r->body + r->pos, *data;
    size_t room = r->len - r->pos;
    if (room >= 2 && memcmp(head, "\r\n", 2) == 0) /* no headers, so no Content-Disposition */
        return fail(r, "a part without Content-Disposition");
    size_t window =
        room < MULTIPART_PART_HEAD_MAX_BYTES + 4 ? room : MULTIPART_PART_HEAD_MAX_BYTES + 4;
    const uint8_t *blank = memmem(head, window, "\r\n\r\n", 4);
    if (!blank)
        return fail(r, "a part's headers are missing their end, or over 8 KiB");
    if (memchr(head, '\0', (size_t) (blank - head)) ||
        parse_head((const char *) head, (size_t) (blank - head), &part) < 0)
        return fail(r, "a part's Content-Disposition is missing or malformed");
    data = blank + 4;
    const uint8_t *end = memmem(data, r->len - (size_t) (data - r->body), r->delim, r->delim_len);
    if (!end)
        return fail(r, "a part is not closed by a boundary");
    part.data = data;
    part.len = (size_t) (end - data);
    r->pos = (size_t) (end - r->body) + r->delim_len;
    *ret = part;
    return 1;
}
