/* Route tables, for both faces: which entry of a face's table a request's method and decoded
 * path segments (http_path_segments()) name. Pure (no I/O, no allocation, no MHD). A face
 * keeps its own entry type, an HttpRoute first and what it runs and who may call it after:
 *
 *     typedef struct { HttpRoute r; RouteFn fn; RouteAuth auth; } Route;
 *     static const Route routes[] = {{{"GET", {"v1", "health"}}, route_health, AUTH_NONE}, ...};
 *     ssize_t i = HTTP_ROUTE_FIND(routes, http_method(req), seg, n_seg, &match);
 *
 * A pattern segment is literal, or "*" (or a name in braces, "{id}", which says what the face
 * checks there itself) for any one segment, or "**" (the last) for one or more. A route for
 * GET answers HEAD too. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "macro.h"

#define HTTP_ROUTE_MAX_SEGMENTS 6

typedef struct HttpRoute {
    const char *method;
    const char *pattern[HTTP_ROUTE_MAX_SEGMENTS]; /* unused entries NULL */
} HttpRoute;

typedef enum {
    HTTP_ROUTE_NONE,  /* no route has this path: 404 */
    HTTP_ROUTE_PATH,  /* routes have this path, none this method: 405 */
    HTTP_ROUTE_FOUND, /* the path and the method */
} HttpRouteMatch;

/* The index in table (n entries, stride bytes apart, each beginning with an HttpRoute) of the
 * first route matching method and seg[0..n_seg): *ret HTTP_ROUTE_FOUND. Else the first whose
 * path alone matches (*ret HTTP_ROUTE_PATH), else -1 (*ret HTTP_ROUTE_NONE). */
ssize_t http_route_find(const void *table, size_t n, size_t stride, const char *method,
                        char *const *seg, size_t n_seg, HttpRouteMatch *ret);
#define HTTP_ROUTE_FIND(table, method, seg, n_seg, ret)                                            \
    http_route_find((table), ELEMENTSOF(table), sizeof((table)[0]), (method), (seg), (n_seg), (ret))
