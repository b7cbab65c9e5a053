/* See http_route.h. */
#include "http_route.h"

#include <stdbool.h>
#include <string.h>

static bool
segment_is_any(const char *p)
{
    return strcmp(p, "*") == 0 || p[0] == '{';
}

static bool
method_matches(const HttpRoute *r, const char *method)
{
    return strcmp(r->method, method) == 0 ||
           (strcmp(r->method, "GET") == 0 && strcmp(method, "HEAD") == 0);
}

/* Whether r's pattern matches the whole path. */
static bool
path_matches(const HttpRoute *r, char *const *seg, size_t n_seg)
{
    size_t i = 0;
    for (; i < HTTP_ROUTE_MAX_SEGMENTS && r->pattern[i]; i++) {
        const char *p = r->pattern[i];
        if (strcmp(p, "**") == 0)
            return n_seg > i;
        if (i >= n_seg || (!segment_is_any(p) && strcmp(p, seg[i]) != 0))
            return false;
    }
    return i == n_seg;
}

ssize_t
http_route_find(const void *table, size_t n, size_t stride, const char *method, char *const *seg,
                size_t n_seg, HttpRouteMatch *ret)
{
    ssize_t path_only = -1;

    for (size_t i = 0; i < n; i++) {
        const HttpRoute *r = (const HttpRoute *) ((const char *) table + i * stride);
        if (!path_matches(r, seg, n_seg))
            continue;
        if (method_matches(r, method)) {
            *ret = HTTP_ROUTE_FOUND;
            return (ssize_t) i;
        }
        if (path_only < 0)
            path_only = (ssize_t) i;
    }
    *ret = path_only < 0 ? HTTP_ROUTE_NONE : HTTP_ROUTE_PATH;
    return path_only;
}
