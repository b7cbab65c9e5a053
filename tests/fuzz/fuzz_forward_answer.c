/* Fuzz target: the owner's answer to a forwarded request, as the forwarding host reads it
 * (hostd/api/api_forward_rules.c): each response header line libcurl hands over, and whether
 * the answer is streamed through or buffered. The owner is another host: hostile.
 *
 * Input: 3 bytes (flags: 1 chunked, 2 passing, 4 the request body is all sent, 8 a length;
 * then the status's low byte: 1 means 401, else 200; then the length in KiB), then header
 * lines, each with its '\n' as libcurl hands them.
 * Invariants, not just "no crash":
 *  - a line is split exactly when it is at most API_FORWARD_HEADER_LINE_MAX_BYTES, has a name
 *    of 1..API_FORWARD_HEADER_NAME_MAX_BYTES token bytes before its first ':' (a NUL in it
 *    would make it read as a shorter name) and a value of text
 *    (checked here independently); the name is the line up to that ':', the value a span of
 *    the line after it with no leading blank and no trailing CR, LF or space;
 *  - whatever the hop repeats to its client (Content-Type, a kept header) holds no CR, LF,
 *    NUL or other control byte but HTAB, so it can never end a header or start another;
 *  - the answer is streamed exactly when it is not sized within the buffer, the body has
 *    gone up, and it is not an owner's 401 to a hop that carries this host's identity. */
#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "api_forward.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BUFFER_BYTES (256u * 1024)

static bool
is_text(const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (((unsigned char) v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f)
            return false;
    return true;
}

/* The line's verdict by a reading of the test's own. */
static bool
want_split(const char *line, size_t len)
{
    const char *colon = memchr(line, ':', len);
    if (!colon || len > API_FORWARD_HEADER_LINE_MAX_BYTES || colon == line ||
        (size_t) (colon - line) > API_FORWARD_HEADER_NAME_MAX_BYTES)
        return false;
    for (const char *c = line; c < colon; c++)
        if (!isalnum((unsigned char) *c) && !(*c && strchr("!#$%&'*+-.^_`|~", *c)))
            return false;
    size_t b = (size_t) (colon - line) + 1, e = len;
    while (b < e && (line[b] == ' ' || line[b] == '\t'))
        b++;
    while (e > b && strchr("\r\n ", line[e - 1]) && line[e - 1] != '\0')
        e--;
    return is_text(line + b, e - b);
}

static void
check_line(const char *line, size_t len)
{
    char name[API_FORWARD_HEADER_NAME_MAX_BYTES + 1];
    const char *v = NULL;
    size_t vlen = 0;
    int r = api_forward_header_split(line, len, name, &v, &vlen);
    CHECK((r == 0) == want_split(line, len));
    if (r < 0)
        return;
    size_t nlen = strlen(name);
    CHECK(nlen > 0 && nlen <= API_FORWARD_HEADER_NAME_MAX_BYTES && !strchr(name, ':'));
    CHECK(memcmp(name, line, nlen) == 0 && line[nlen] == ':');
    CHECK(v > line + nlen && v + vlen <= line + len);
    CHECK(vlen == 0 || (v[0] != ' ' && v[0] != '\t' && !strchr("\r\n ", v[vlen - 1])));
    CHECK(is_text(v, vlen)); /* what Content-Type or a kept header repeats */
    if (api_forward_response_header_kept(name))
        CHECK(!memchr(v, '\r', vlen) && !memchr(v, '\n', vlen));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    bool chunked = data[0] & 1, refused = data[0] & 2, body_sent = data[0] & 4;
    int64_t length = data[0] & 8 ? (int64_t) data[2] * 1024 * 8 : -1;
    bool streams = api_forward_streams(chunked, length, BUFFER_BYTES, refused, body_sent);
    bool sized = !chunked && length >= 0 && (uint64_t) length <= BUFFER_BYTES;
    CHECK(streams == (!sized && body_sent && !refused));

    const char *p = (const char *) data + 3, *end = (const char *) data + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        size_t len = nl ? (size_t) (nl - p) + 1 : (size_t) (end - p);
        check_line(p, len);
        p += len;
    }
    return 0;
}
