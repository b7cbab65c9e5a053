/* Request-target parsing for the HTTP layer: pure (no I/O, no MHD), and fuzzed
 * (tests/fuzz/api_http_fuzz_url.c).
 *
 * A raw request-target ("/v1/sessions/s1/files/a%20b?after=3") is split into a validated raw
 * path, its percent-decoded segments and the decoded query parameters. What is refused
 * (E_INVALID; E_TOO_LARGE for the two byte-length caps), never repaired:
 *  - a path that does not start with '/', or holds a byte outside RFC 3986 pchar / "/";
 *  - an empty segment ("//", a trailing '/'; the root "/" alone is allowed and has none);
 *  - a segment that decodes to ".", ".." or to anything holding '/' or NUL ("%2F", "%00");
 *  - a malformed escape ("%", "%4", "%zz") in the path or the query;
 *  - a query key that is empty or a key/value that decodes to hold NUL;
 *  - more than HTTP_PATH_MAX_BYTES of path, HTTP_PATH_MAX_SEGMENTS segments,
 *    HTTP_QUERY_MAX_BYTES of query or HTTP_QUERY_MAX_PARAMS parameters.
 * Decoding never yields more bytes than its input, so no output exceeds the input caps. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define HTTP_PATH_MAX_BYTES 4096
#define HTTP_PATH_MAX_SEGMENTS 256
#define HTTP_QUERY_MAX_BYTES 4096
#define HTTP_QUERY_MAX_PARAMS 32

typedef struct HttpTarget {
    char *path;      /* raw path (no query), validated as above */
    char **segments; /* decoded, NULL-terminated; n_segments entries */
    size_t n_segments;
    char **query_keys; /* decoded; parallel to query_values; in request order */
    char **query_values;
    size_t n_query;
} HttpTarget;

/* Parses raw[0..len) (a request-target, no NUL inside). On success fills *ret (the caller
 * clears it with http_target_clear()); on failure *ret is untouched. A '#' fragment is
 * refused: clients never send one. */
int http_target_parse(const char *raw, size_t len, HttpTarget *ret, Error **errp);
void http_target_clear(HttpTarget *t);

/* Splits a raw path into decoded segments (NULL-terminated array of n strings; free with
 * http_strv_free()). The same checks as http_target_parse() apply to the path. */
int http_path_split(const char *path, size_t len, char ***ret_segments, size_t *ret_n,
                    Error **errp);

/* Percent-decodes src[0..len) into a new NUL-terminated string of *ret_len bytes
 * (plus_is_space: '+' means ' ', as in a query). Refuses malformed escapes and a decoded
 * NUL. */
int http_percent_decode(const char *src, size_t len, bool plus_is_space, char **ret,
                        size_t *ret_len, Error **errp);

/* Frees a NULL-terminated array of strings and the array. NULL is fine. */
void http_strv_free(char **v);
/* Deep copy of a NULL-terminated array; NULL on OOM. */
char **http_strv_copy(char *const *v, size_t n);
