/* Request-target parsing: see http_url.h for what is refused. Pure: allocation only. Every
 * output string is at most as long as its input, and inputs are capped before any
 * allocation, so a hostile target cannot force more than a few times HTTP_PATH_MAX_BYTES +
 * HTTP_QUERY_MAX_BYTES of memory. */
#include "http_url.h"

#include "ascii.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void
strv_freep(char ***v)
{
    http_strv_free(*v);
}
#define _cleanup_strv_ _cleanup_(strv_freep)

void
http_strv_free(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

char **
http_strv_copy(char *const *v, size_t n)
{
    _cleanup_strv_ char **copy = calloc(n + 1, sizeof(char *));
    if (!copy)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!(copy[i] = strdup(v[i])))
            return NULL;
    return TAKE_PTR(copy);
}

/* RFC 3986 pchar, with '%' admitted here and its escape checked while decoding. */
static bool
is_pchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != '\0' && strchr("-._~!$&'()*+,;=:@%", c) != NULL;
}

int
http_percent_decode(const char *src, size_t len, bool plus_is_space, char **ret, size_t *ret_len,
                    Error **errp)
{
    _cleanup_free_ char *out = malloc(len + 1);
    size_t n = 0;

    if (!out)
        return error_set(errp, E_INTERNAL, ENOMEM, "decode");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) src[i];
        if (c == '%') {
            int hi = i + 1 < len ? ascii_hex_value((unsigned char) src[i + 1]) : -1;
            int lo = i + 2 < len ? ascii_hex_value((unsigned char) src[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return error_set(errp, E_INVALID, 0, "malformed percent escape");
            c = (unsigned char) (hi << 4 | lo);
            if (c == '\0')
                return error_set(errp, E_INVALID, 0, "escaped NUL byte");
            i += 2;
        } else if (c == '\0') {
            return error_set(errp, E_INVALID, 0, "NUL byte");
        } else if (c == '+' && plus_is_space) {
            c = ' ';
        }
        out[n++] = (char) c;
    }
    out[n] = '\0';
    *ret = TAKE_PTR(out);
    if (ret_len)
        *ret_len = n;
    return 0;
}

static int
check_chars(const char *s, size_t len, const char *extra, const char *what, Error **errp)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) s[i];
        if (!is_pchar(c) && (c == '\0' || !strchr(extra, c)))
            return error_set(errp, E_INVALID, 0, "%s holds a byte that is not allowed (0x%02x)",
                             what, c);
    }
    return 0;
}

/* Decodes one segment and refuses what could name something other than one directory
 * entry: "", ".", "..", or a decoded '/'. */
static int
segment_decode(const char *s, size_t len, char **ret, Error **errp)
{
    _cleanup_free_ char *seg = NULL;
    size_t n;

    if (len == 0)
        return error_set(errp, E_INVALID, 0, "request path has an empty segment");
    if (http_percent_decode(s, len, false, &seg, &n, errp) < 0)
        return error_prefix(errp, "request path");
    if (strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0)
        return error_set(errp, E_INVALID, 0, "request path has a '.' or '..' segment");
    if (memchr(seg, '/', n))
        return error_set(errp, E_INVALID, 0, "request path has an encoded '/'");
    *ret = TAKE_PTR(seg);
    return 0;
}

int
http_path_split(const char *path, size_t len, char ***ret_segments, size_t *ret_n, Error **errp)
{
    if (len == 0 || path[0] != '/')
        return error_set(errp, E_INVALID, 0, "request path must start with '/'");
    if (len > HTTP_PATH_MAX_BYTES)
        return error_set(errp, E_TOO_LARGE, 0, "request path is longer than %d bytes",
                         HTTP_PATH_MAX_BYTES);
    if (check_chars(path, len, "/", "request path", errp) < 0)
        return -1;

    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += path[i] == '/';
    if (len == 1)
        n = 0; /* the root has no segment */
    if (n > HTTP_PATH_MAX_SEGMENTS)
        return error_set(errp, E_INVALID, 0, "request path has more than %d segments",
                         HTTP_PATH_MAX_SEGMENTS);

    _cleanup_strv_ char **segs = calloc(n + 1, sizeof(char *));
    if (!segs)
        return error_set(errp, E_INTERNAL, ENOMEM, "split path");
    const char *p = path + 1, *end = path + len;
    for (size_t i = 0; i < n; i++) {
        const char *slash = memchr(p, '/', (size_t) (end - p));
        const char *seg_end = slash ? slash : end;
        if (segment_decode(p, (size_t) (seg_end - p), &segs[i], errp) < 0)
            return -1;
        p = seg_end + 1;
    }
    *ret_segments = TAKE_PTR(segs);
    *ret_n = n;
    return 0;
}

static int
query_param_decode(const char *s, size_t len, char **ret_key, char **ret_value, Error **errp)
{
    const char *eq = memchr(s, '=', len);
    size_t klen = eq ? (size_t) (eq - s) : len;
    _cleanup_free_ char *key = NULL, *value = NULL;

    if (http_percent_decode(s, klen, true, &key, NULL, errp) < 0)
        return error_prefix(errp, "query");
    if (key[0] == '\0')
        return error_set(errp, E_INVALID, 0, "query has an empty parameter name");
    if (eq) {
        if (http_percent_decode(eq + 1, len - klen - 1, true, &value, NULL, errp) < 0)
            return error_prefix(errp, "query");
    } else if (!(value = strdup(""))) {
        return error_set(errp, E_INTERNAL, ENOMEM, "query");
    }
    *ret_key = TAKE_PTR(key);
    *ret_value = TAKE_PTR(value);
    return 0;
}

/* Parses "k=v&k2&k3=..." into t->query_*; empty pieces ("a=1&&b=2") are skipped. */
static int
query_parse(const char *q, size_t len, HttpTarget *t, Error **errp)
{
    if (len > HTTP_QUERY_MAX_BYTES)
        return error_set(errp, E_TOO_LARGE, 0, "query is longer than %d bytes",
                         HTTP_QUERY_MAX_BYTES);
    if (check_chars(q, len, "/?", "query", errp) < 0)
        return -1;
    t->query_keys = calloc(HTTP_QUERY_MAX_PARAMS + 1, sizeof(char *));
    t->query_values = calloc(HTTP_QUERY_MAX_PARAMS + 1, sizeof(char *));
    if (!t->query_keys || !t->query_values)
        return error_set(errp, E_INTERNAL, ENOMEM, "query");

    const char *p = q, *end = q + len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t) (end - p));
        const char *piece_end = amp ? amp : end;
        if (piece_end > p) {
            if (t->n_query == HTTP_QUERY_MAX_PARAMS)
                return error_set(errp, E_INVALID, 0, "query has more than %d parameters",
                                 HTTP_QUERY_MAX_PARAMS);
            if (query_param_decode(p, (size_t) (piece_end - p), &t->query_keys[t->n_query],
                                   &t->query_values[t->n_query], errp) < 0)
                return -1;
            t->n_query++;
        }
        p = piece_end + 1;
    }
    return 0;
}

void
http_target_clear(HttpTarget *t)
{
    free(t->path);
    http_strv_free(t->segments);
    http_strv_free(t->query_keys);
    http_strv_free(t->query_values);
    *t = (HttpTarget){0};
}

static void
target_clearp(HttpTarget *t)
{
    http_target_clear(t);
}

int
http_target_parse(const char *raw, size_t len, HttpTarget *ret, Error **errp)
{
    _cleanup_(target_clearp) HttpTarget t = {0};
    const char *q = memchr(raw, '?', len);
    size_t path_len = q ? (size_t) (q - raw) : len;

    if (memchr(raw, '\0', len))
        return error_set(errp, E_INVALID, 0, "request target holds a NUL byte");
    if (http_path_split(raw, path_len, &t.segments, &t.n_segments, errp) < 0)
        return -1;
    if (!(t.path = strndup(raw, path_len)))
        return error_set(errp, E_INTERNAL, ENOMEM, "path");
    if (q && query_parse(q + 1, len - path_len - 1, &t, errp) < 0)
        return -1;
    *ret = t;
    t = (HttpTarget){0};
    return 0;
}
