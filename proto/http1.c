/* HTTP/1 request heads, read the same way on both ends of the egress tunnel. See http1.h. */
#include "http1.h"

#include <string.h>

bool
http1_is_tchar(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

bool
http1_span_ieq(Http1Span s, const char *lower_lit)
{
    size_t n = strlen(lower_lit);
    if (s.n != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s.p[i];
        if ((c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c) != (uint8_t) lower_lit[i])
            return false;
    }
    return true;
}

int
http1_head_end(const uint8_t *buf, size_t len, size_t max, bool strict_cr, size_t *ret_end)
{
    size_t lim = len < max ? len : max;
    for (size_t i = 0; i < lim; i++) {
        bool bare_cr = buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n';
        if (buf[i] == '\0' || (strict_cr && bare_cr) ||
            (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')))
            return -1;
        if (i >= 3 && memcmp(buf + i - 3, "\r\n\r\n", 4) == 0) {
            *ret_end = i + 1;
            return 1;
        }
    }
    return 0;
}

Http1Span
http1_line(const uint8_t *buf, size_t end, size_t *pos)
{
    size_t start = *pos, i = start;
    while (i + 1 < end && !(buf[i] == '\r' && buf[i + 1] == '\n'))
        i++;
    *pos = i + 2;
    return (Http1Span){buf + start, i - start};
}

const char *
http1_header(Http1Span line, Http1Span *ret_name, Http1Span *ret_value)
{
    if (line.n > 0 && (line.p[0] == ' ' || line.p[0] == '\t'))
        return "a folded header line";
    const uint8_t *colon = memchr(line.p, ':', line.n);
    if (!colon || colon == line.p)
        return "a header line without a name";
    Http1Span name = {line.p, (size_t) (colon - line.p)};
    Http1Span value = {colon + 1, line.n - name.n - 1};
    for (size_t i = 0; i < name.n; i++)
        if (!http1_is_tchar(name.p[i]))
            return "a bad header name";
    while (value.n && (value.p[0] == ' ' || value.p[0] == '\t'))
        value.p++, value.n--;
    while (value.n && (value.p[value.n - 1] == ' ' || value.p[value.n - 1] == '\t'))
        value.n--;
    for (size_t i = 0; i < value.n; i++)
        if ((value.p[i] < 0x20 && value.p[i] != '\t') || value.p[i] == 0x7f)
            return "a control byte in a header value";
    *ret_name = name;
    *ret_value = value;
    return NULL;
}
