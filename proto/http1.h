/* HTTP/1 request heads as both ends of the egress tunnel read them: the guest's proxy parses
 * what a workload sends, and the daemon checks the first bytes of every stream to a name
 * (hostd/egress/inspect.c), so both must agree on where a head ends, what a line is and what
 * a header is. Pure: no I/O, no allocation; every function is bounded by the lengths given. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Http1Span {
    const uint8_t *p;
    size_t n;
} Http1Span;

/* A token character (RFC 9110 5.6.2). */
bool http1_is_tchar(uint8_t c);
/* s equals lower_lit, ASCII letters of s compared without case. */
bool http1_span_ieq(Http1Span s, const char *lower_lit);
/* The end of the head (just past CRLFCRLF) in *ret_end, looking at no more than max bytes:
 * 1 found, 0 need more, -1 a NUL, a bare LF, or (strict_cr) a CR not followed by LF. */
int http1_head_end(const uint8_t *buf, size_t len, size_t max, bool strict_cr, size_t *ret_end);
/* The CRLF-terminated line of a complete head (end from http1_head_end) at *pos; *pos moves
 * past its CRLF. */
Http1Span http1_line(const uint8_t *buf, size_t end, size_t *pos);
/* "name: value": a token name, the value without surrounding blanks and with no control byte
 * but tab. NULL, or why not; a folded line (one that starts with a blank) is refused. On
 * failure the out-params are undefined. */
const char *http1_header(Http1Span line, Http1Span *ret_name, Http1Span *ret_value);
