/* The first flight of a stream to a name: see inspect.h. The HTTP side reads only the request
 * head, strictly (CRLF line ends, no NUL or bare CR/LF, no folding), so that every server that
 * accepts the head reads the same Host as this code did. */
#include "inspect.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "http1.h"
#include "sni.h"

#define HTTP_PORT_MAX_DIGITS 5

typedef Http1Span Line;

__attribute__((format(printf, 3, 4))) static InspectStatus
inspect_refuse(InspectVerdict *v, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    v->reason = reason;
    vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
    va_end(ap);
    return INSPECT_REFUSE;
}

/* No verdict yet: wait, unless the limit is reached or the client is done. */
static InspectStatus
inspect_more(size_t len, bool eof, InspectVerdict *v, const char *what)
{
    if (len >= EGRESS_FIRST_FLIGHT_MAX_BYTES)
        return inspect_refuse(v, "inspect_limit", "no complete %s in the first %u bytes", what,
                              EGRESS_FIRST_FLIGHT_MAX_BYTES);
    if (eof)
        return inspect_refuse(v, "unknown_protocol", "the stream ended inside its %s", what);
    return INSPECT_NEED_MORE;
}

static InspectStatus
inspect_tls(const uint8_t *buf, size_t len, bool eof, const char *name, InspectVerdict *v)
{
    SniResult s;

    switch (egress_sni_parse(buf, len, &s)) {
    case SNI_NEED_MORE:
        return inspect_more(len, eof, v, "ClientHello");
    case SNI_BAD:
        return inspect_refuse(v, "unknown_protocol", "a malformed ClientHello: %s", s.why);
    case SNI_TOO_LARGE:
        return inspect_refuse(v, "inspect_limit", "%s", s.why);
    case SNI_ABSENT:
        return inspect_refuse(v, "sni_mismatch", "a ClientHello without server_name for %s", name);
    case SNI_FOUND:
        break;
    }
    if (s.ech)
        return inspect_refuse(v, "sni_mismatch",
                              "a ClientHello with encrypted_client_hello (it hides the name)");
    if (strcmp(s.name, name) != 0)
        return inspect_refuse(v, "sni_mismatch", "TLS server name %s on a stream to %s", s.name,
                              name);
    return INSPECT_PASS;
}

/* 1: a method token and a space start buf; -1: they cannot; 0: not enough bytes to tell. */
static int
looks_like_http(const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len && i <= EGRESS_HTTP_METHOD_MAX_BYTES; i++) {
        if (buf[i] == ' ')
            return i > 0 ? 1 : -1;
        if (!http1_is_tchar(buf[i]))
            return -1;
    }
    return len > EGRESS_HTTP_METHOD_MAX_BYTES ? -1 : 0;
}

/* METHOD SP origin-form SP HTTP/1.x; NULL or why not (and the reason to give). */
static const char *
http_request_line(Line l, const char **ret_reason)
{
    const uint8_t *sp1 = memchr(l.p, ' ', l.n);
    const uint8_t *sp2 = sp1 ? memchr(sp1 + 1, ' ', l.n - (size_t) (sp1 + 1 - l.p)) : NULL;

    if (!sp2)
        return "a malformed request line";
    Line target = {sp1 + 1, (size_t) (sp2 - sp1 - 1)};
    Line version = {sp2 + 1, l.n - (size_t) (sp2 + 1 - l.p)};
    if (!http1_span_ieq(version, "http/1.1") && !http1_span_ieq(version, "http/1.0"))
        return "not HTTP/1.0 or HTTP/1.1";
    if (target.n == 0 || (target.p[0] != '/' && !http1_span_ieq(target, "*"))) {
        *ret_reason = "host_mismatch"; /* absolute form: servers take its host, not Host's */
        return "a request target not in origin form (the proxy always sends /path)";
    }
    for (size_t i = 0; i < target.n; i++)
        if (target.p[i] <= 0x20 || target.p[i] >= 0x7f)
            return "a bad byte in the request target";
    return NULL;
}

/* Host: name[:port], naming the stream's host and port. */
static InspectStatus
http_host(Line value, const char *name, uint16_t port, InspectVerdict *v)
{
    char text[EGRESS_NAME_MAX_BYTES + 2], got[EGRESS_NAME_MAX_BYTES + 1];
    const uint8_t *colon = memchr(value.p, ':', value.n);
    size_t hn = colon ? (size_t) (colon - value.p) : value.n;
    const char *why;
    EgressAddr a;

    if (hn == 0 || hn >= sizeof(text))
        return inspect_refuse(v, "host_mismatch", "a Host header that is no host name");
    memcpy(text, value.p, hn);
    text[hn] = '\0';
    if (egress_host_parse(text, &a, got, &why) != HOST_NAME || strcmp(got, name) != 0)
        return inspect_refuse(v, "host_mismatch", "the Host header does not name %s", name);
    if (colon) {
        Line p = {colon + 1, value.n - hn - 1};
        bool digits = p.n > 0 && p.n <= HTTP_PORT_MAX_DIGITS;
        unsigned n = 0;
        for (size_t i = 0; digits && i < p.n; i++) {
            digits = p.p[i] >= '0' && p.p[i] <= '9';
            n = n * 10 + (unsigned) (p.p[i] - '0');
        }
        if (!digits || n != port)
            return inspect_refuse(v, "host_mismatch", "the Host header's port is not %u", port);
    }
    return INSPECT_PASS;
}

static InspectStatus
inspect_http_head(const uint8_t *buf, size_t end, const char *name, uint16_t port,
                  InspectVerdict *v)
{
    size_t pos = 0;
    unsigned hosts = 0;
    bool close = false;
    Line host = {0}, hname, hvalue;
    const char *reason = "unknown_protocol";
    const char *why = http_request_line(http1_line(buf, end, &pos), &reason);

    if (why)
        return inspect_refuse(v, reason, "HTTP: %s", why);
    for (Line l; (l = http1_line(buf, end, &pos)).n > 0;) {
        if ((why = http1_header(l, &hname, &hvalue)))
            return inspect_refuse(v, "unknown_protocol", "HTTP: %s", why);
        if (http1_span_ieq(hname, "host")) {
            hosts++;
            host = hvalue;
        } else if (http1_span_ieq(hname, "connection")) {
            close = http1_span_ieq(hvalue, "close");
            if (!close)
                return inspect_refuse(v, "host_mismatch",
                                      "HTTP: Connection must be exactly 'close' (one request)");
        }
    }
    if (hosts != 1)
        return inspect_refuse(v, "host_mismatch", "HTTP: %u Host headers, not one", hosts);
    if (!close)
        return inspect_refuse(v, "host_mismatch", "HTTP: no 'Connection: close' (one request)");
    return http_host(host, name, port, v);
}

static InspectStatus
inspect_http(const uint8_t *buf, size_t len, bool eof, const char *name, uint16_t port,
             InspectVerdict *v)
{
    size_t lim = len < EGRESS_FIRST_FLIGHT_MAX_BYTES ? len : EGRESS_FIRST_FLIGHT_MAX_BYTES, end;

    switch (http1_head_end(buf, lim, lim, true, &end)) {
    case -1:
        return inspect_refuse(v, "unknown_protocol",
                              "HTTP: a NUL, bare CR or bare LF in the request head");
    case 0:
        return inspect_more(len, eof, v, "request head");
    default:
        return inspect_http_head(buf, end, name, port, v);
    }
}

InspectStatus
egress_inspect_first(const uint8_t *buf, size_t len, bool eof, const char *name, uint16_t port,
                     InspectVerdict *ret)
{
    ret->reason = NULL;
    ret->detail[0] = '\0';
    if (len == 0)
        return eof ? inspect_refuse(ret, "unknown_protocol", "the stream ended before a byte")
                   : INSPECT_NEED_MORE;
    if (buf[0] == TLS_CONTENT_HANDSHAKE)
        return inspect_tls(buf, len, eof, name, ret);
    switch (looks_like_http(buf, len)) {
    case 1:
        return inspect_http(buf, len, eof, name, port, ret);
    case 0:
        return inspect_more(len, eof, ret, "request line");
    default:
        return inspect_refuse(ret, "unknown_protocol",
                              "neither a TLS ClientHello nor an HTTP/1 request");
    }
}
