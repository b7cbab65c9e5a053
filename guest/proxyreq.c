/* The egress proxy's request parser: see proxyreq.h. Works on raw bytes (the input may hold
 * anything, NUL included); every index is checked against the span it walks. */
#include "proxyreq.h"

#include <string.h>

#include "http1.h"

typedef Http1Span Span;

typedef struct Out {
    uint8_t *p;
    size_t cap, len;
    bool overflow;
} Out;

#define HTTP_SCHEME "http://"

/* Hop-by-hop headers (RFC 9110 7.6.1) and Host: never passed on; the proxy writes its own. */
static const char *const dropped_headers[] = {
    "host", "connection", "proxy-connection", "keep-alive", "proxy-authorization", "te", "upgrade",
};

static ProxyReqStatus
proxyreq_bad(ProxyRequest *r, int status, const char *why)
{
    r->status = status;
    r->why = why;
    return PROXYREQ_BAD;
}

static bool
span_all(Span s, bool (*ok)(uint8_t))
{
    for (size_t i = 0; i < s.n; i++)
        if (!ok(s.p[i]))
            return false;
    return true;
}

static void
out_put(Out *o, const void *data, size_t n)
{
    if (o->overflow || n > o->cap - o->len) {
        o->overflow = true;
        return;
    }
    memcpy(o->p + o->len, data, n);
    o->len += n;
}

static void
out_span(Out *o, Span s)
{
    out_put(o, s.p, s.n);
}

static void
out_str(Out *o, const char *s)
{
    out_put(o, s, strlen(s));
}

static bool
host_char(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

static bool
bracket_char(uint8_t c)
{
    return host_char(c) || c == ':' || c == '%';
}

static bool
digit_char(uint8_t c)
{
    return c >= '0' && c <= '9';
}

/* "1".."65535", decimal digits only. */
static bool
proxyreq_port(Span s, uint16_t *ret)
{
    unsigned v = 0;
    if (s.n == 0 || s.n > 5 || !span_all(s, digit_char))
        return false;
    for (size_t i = 0; i < s.n; i++)
        v = v * 10 + (unsigned) (s.p[i] - '0');
    if (v == 0 || v > TUNNEL_PORT_MAX)
        return false;
    *ret = (uint16_t) v;
    return true;
}

/* host[:port] or [v6]:port into r->host and r->port. */
static const char *
proxyreq_authority(Span a, bool port_required, ProxyRequest *r)
{
    Span host = a, port = {NULL, 0};
    bool has_port = false;

    if (a.n == 0 || memchr(a.p, '@', a.n))
        return "no host, or userinfo in the authority";
    const uint8_t *colon = a.p[0] == '[' ? memchr(a.p, ']', a.n) : a.p;
    if (!colon)
        return "unclosed '[' in the host";
    colon = memchr(colon, ':', a.n - (size_t) (colon - a.p));
    if (colon) {
        host.n = (size_t) (colon - a.p);
        port = (Span){colon + 1, a.n - host.n - 1};
        has_port = true;
    }
    bool bracketed = host.n >= 2 && host.p[0] == '[' && host.p[host.n - 1] == ']';
    Span inner = bracketed ? (Span){host.p + 1, host.n - 2} : host;
    if (inner.n == 0 || host.n > TUNNEL_HOST_MAX_BYTES ||
        !span_all(inner, bracketed ? bracket_char : host_char))
        return "the host has characters outside [A-Za-z0-9._-] (IPv6: in brackets)";
    if (port_required && !has_port)
        return "CONNECT needs host:port";
    r->port = 80;
    if (has_port && !(port.n == 0 && !port_required) && !proxyreq_port(port, &r->port))
        return "the port must be 1..65535";
    memcpy(r->host, host.p, host.n);
    r->host[host.n] = '\0';
    return NULL;
}

/* Request line: METHOD SP target SP HTTP/1.x */
static const char *
proxyreq_request_line(Span line, Span *method, Span *target, Span *version)
{
    const uint8_t *sp1 = memchr(line.p, ' ', line.n);
    if (!sp1)
        return "malformed request line";
    *method = (Span){line.p, (size_t) (sp1 - line.p)};
    Span rest = {sp1 + 1, line.n - method->n - 1};
    const uint8_t *sp2 = memchr(rest.p, ' ', rest.n);
    if (!sp2)
        return "malformed request line";
    *target = (Span){rest.p, (size_t) (sp2 - rest.p)};
    *version = (Span){sp2 + 1, rest.n - target->n - 1};
    if (method->n == 0 || method->n > PROXY_METHOD_MAX_BYTES || !span_all(*method, http1_is_tchar))
        return "bad method";
    for (size_t i = 0; i < target->n; i++)
        if (target->p[i] <= 0x20 || target->p[i] >= 0x7f)
            return "bad request target";
    if (target->n == 0 ||
        !(http1_span_ieq(*version, "http/1.1") || http1_span_ieq(*version, "http/1.0")))
        return "only HTTP/1.0 and HTTP/1.1";
    return NULL;
}

static bool
header_is_dropped(Span name)
{
    for (size_t i = 0; i < sizeof(dropped_headers) / sizeof(dropped_headers[0]); i++)
        if (http1_span_ieq(name, dropped_headers[i]))
            return true;
    return false;
}

/* Walks the headers; copies the ones passed on to o when o is not NULL. */
static ProxyReqStatus
proxyreq_headers(const uint8_t *buf, size_t end, size_t pos, Out *o, ProxyRequest *r)
{
    unsigned count = 0;

    for (;;) {
        Span line = http1_line(buf, end, &pos), name, value;
        if (line.n == 0)
            return PROXYREQ_OK;
        if (++count > PROXY_HEADERS_MAX)
            return proxyreq_bad(r, 431, "too many header lines");
        const char *why = http1_header(line, &name, &value);
        if (why)
            return proxyreq_bad(r, 400, why);
        if (o && !header_is_dropped(name)) {
            out_span(o, name);
            out_str(o, ": ");
            out_span(o, value);
            out_str(o, "\r\n");
        }
    }
}

/* http://authority[/path][?query] -> authority and the origin-form target. */
static const char *
proxyreq_absolute(Span target, Span *authority, Span *path)
{
    size_t skip = strlen(HTTP_SCHEME);
    if (target.n < skip || !http1_span_ieq((Span){target.p, skip}, HTTP_SCHEME))
        return "only absolute http:// URLs (use CONNECT for anything else)";
    Span rest = {target.p + skip, target.n - skip};
    size_t a = 0;
    while (a < rest.n && rest.p[a] != '/' && rest.p[a] != '?' && rest.p[a] != '#')
        a++;
    *authority = (Span){rest.p, a};
    *path = (Span){rest.p + a, rest.n - a};
    if (memchr(path->p, '#', path->n))
        return "a fragment has no place in a request";
    return NULL;
}

static ProxyReqStatus
proxyreq_plain(const uint8_t *buf, size_t end, size_t pos, Span method, Span target, Span version,
               uint8_t *out, size_t outcap, ProxyRequest *r)
{
    Span authority, path;
    Out o = {out, outcap, 0, false};
    const char *why = proxyreq_absolute(target, &authority, &path);

    if (!why)
        why = proxyreq_authority(authority, false, r);
    if (why)
        return proxyreq_bad(r, 400, why);
    out_span(&o, method);
    out_str(&o, path.n == 0 || path.p[0] == '?' ? " /" : " ");
    out_span(&o, path);
    out_str(&o, " ");
    out_span(&o, version);
    out_str(&o, "\r\nHost: ");
    out_span(&o, authority);
    out_str(&o, "\r\n");
    ProxyReqStatus st = proxyreq_headers(buf, end, pos, &o, r);
    if (st != PROXYREQ_OK)
        return st;
    out_str(&o, "Connection: close\r\n\r\n");
    if (o.overflow)
        return proxyreq_bad(r, 431, "request head too large");
    r->out_len = o.len;
    return PROXYREQ_OK;
}

ProxyReqStatus
proxyreq_parse(const uint8_t *buf, size_t len, uint8_t *out, size_t outcap, ProxyRequest *r)
{
    size_t end = 0, pos = 0;
    Span method, target, version;

    *r = (ProxyRequest){0};
    int found = http1_head_end(buf, len, PROXY_HEAD_MAX_BYTES, false, &end);
    if (found < 0)
        return proxyreq_bad(r, 400, "lines must end with CRLF; no NUL bytes");
    if (found == 0)
        return len >= PROXY_HEAD_MAX_BYTES ? proxyreq_bad(r, 431, "request head too large")
                                           : PROXYREQ_NEED_MORE;
    r->head_len = end;
    const char *why = proxyreq_request_line(http1_line(buf, end, &pos), &method, &target, &version);
    if (why)
        return proxyreq_bad(r, 400, why);
    if (!http1_span_ieq(method, "connect"))
        return proxyreq_plain(buf, end, pos, method, target, version, out, outcap, r);
    r->is_connect = true;
    if ((why = proxyreq_authority(target, true, r)))
        return proxyreq_bad(r, 400, why);
    return proxyreq_headers(buf, end, pos, NULL, r);
}
