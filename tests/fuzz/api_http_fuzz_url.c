/* Fuzz target: the HTTP layer's request-target parsing (hostd/http/http_url.c), the code that
 * stands between a hostile request line and every route. Input: a raw request-target.
 * Invariants checked, not just "no crash":
 *  - accepted: the path starts with '/', is at most HTTP_PATH_MAX_BYTES and is the input up
 *    to '?'; every segment is non-empty, not "." or "..", holds no '/' or NUL; splitting the
 *    path again gives the same segments; re-encoding every segment and parsing that gives
 *    them back (decode is the inverse of a full encode); query keys are non-empty and at
 *    most HTTP_QUERY_MAX_PARAMS; no output is longer than the input;
 *  - refused: the category is E_INVALID or E_TOO_LARGE;
 *  - http_percent_decode() of the same bytes never grows them and never yields NUL;
 *  - the TLS front door's http_tls_hello_state() on the same bytes as a connection's first
 *    ones: a verdict on a prefix (not TLS, or a whole first record) is the verdict on all of
 *    them, and a whole record is there: 5 + its length bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "http_hello.h"
#include "http_url.h"

static void
check_segments_roundtrip(char *const *segs, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t cap = 1;
    for (size_t i = 0; i < n; i++)
        cap += 1 + 3 * strlen(segs[i]);
    char *path = malloc(cap), *p = path;
    if (n == 0)
        *p++ = '/';
    for (size_t i = 0; i < n; i++) {
        *p++ = '/';
        for (const unsigned char *c = (const unsigned char *) segs[i]; *c; c++) {
            *p++ = '%';
            *p++ = hex[*c >> 4];
            *p++ = hex[*c & 15];
        }
    }
    char **again;
    size_t n_again;
    Error *e = NULL;
    size_t len = (size_t) (p - path);
    /* The encoded form may exceed the byte cap (3x); only compare when it fits. */
    if (len <= HTTP_PATH_MAX_BYTES) {
        CHECK(http_path_split(path, len, &again, &n_again, &e) == 0);
        CHECK(n_again == n);
        for (size_t i = 0; i < n; i++)
            CHECK(strcmp(again[i], segs[i]) == 0);
        http_strv_free(again);
    }
    error_free(e);
    free(path);
}

static void
check_accepted(const HttpTarget *t, const uint8_t *data, size_t size)
{
    size_t plen = strlen(t->path);
    const uint8_t *q = memchr(data, '?', size);

    CHECK(plen >= 1 && t->path[0] == '/' && plen <= HTTP_PATH_MAX_BYTES);
    CHECK(plen == (q ? (size_t) (q - data) : size) && memcmp(t->path, data, plen) == 0);
    CHECK(t->segments[t->n_segments] == NULL);
    CHECK(t->n_segments <= HTTP_PATH_MAX_SEGMENTS);
    for (size_t i = 0; i < t->n_segments; i++) {
        const char *s = t->segments[i];
        CHECK(s[0] != '\0' && strcmp(s, ".") != 0 && strcmp(s, "..") != 0);
        CHECK(strchr(s, '/') == NULL && strlen(s) <= plen);
    }
    char **again;
    size_t n;
    CHECK(http_path_split(t->path, plen, &again, &n, NULL) == 0 && n == t->n_segments);
    for (size_t i = 0; i < n; i++)
        CHECK(strcmp(again[i], t->segments[i]) == 0);
    http_strv_free(again);
    check_segments_roundtrip(t->segments, t->n_segments);
    CHECK(t->n_query <= HTTP_QUERY_MAX_PARAMS);
    for (size_t i = 0; i < t->n_query; i++)
        CHECK(t->query_keys[i][0] != '\0' && strlen(t->query_values[i]) <= size);
}

static void
check_hello(const uint8_t *data, size_t size)
{
    HttpHelloState all = http_tls_hello_state(data, size);
    if (all == HTTP_HELLO_COMPLETE)
        CHECK(size >= HTTP_TLS_RECORD_HEADER_BYTES &&
              size >= HTTP_TLS_RECORD_HEADER_BYTES + ((size_t) data[3] << 8 | data[4]));
    for (size_t k = 0; k < size; k += 1 + k / 2) {
        HttpHelloState part = http_tls_hello_state(data, k);
        if (part != HTTP_HELLO_MORE)
            CHECK(part == all);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    HttpTarget t;
    Error *e = NULL;

    if (http_target_parse((const char *) data, size, &t, &e) == 0) {
        check_accepted(&t, data, size);
        http_target_clear(&t);
    } else {
        CHECK(e && (e->category == E_INVALID || e->category == E_TOO_LARGE));
        error_free(e);
        e = NULL;
    }

    check_hello(data, size);
    char *out;
    size_t len;
    if (http_percent_decode((const char *) data, size, size & 1, &out, &len, &e) == 0) {
        CHECK(len <= size && strlen(out) == len);
        free(out);
    } else {
        CHECK(e && e->category == E_INVALID);
    }
    error_free(e);
    return 0;
}
