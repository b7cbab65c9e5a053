/* Unit tests of the faces' router (hostd/http/http_route.c): literal, "*" and "{name}"
 * segments, "**", HEAD answered by a GET route, 404 (no route has the path) vs 405 (routes
 * have it, none the method), table order, and paths longer than a pattern can be.
 *
 * No fuzz target: the router reads no bytes a client sent. It compares NUL-terminated
 * segments that http_path_segments() already decoded and bounded (fuzzed with the
 * request-target parser: fuzz_http_url), against a constant table, with no arithmetic on
 * their contents; its only input-dependent bound is the segment count, covered here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "http_route.h"
#include "macro.h"

/* As a face keeps it: an HttpRoute first, the face's own fields after. */
typedef struct {
    HttpRoute r;
    int tag;
} Route;

static const Route routes[] = {
    {{"GET", {"v1", "health"}}, 0},
    {{"GET", {"v1", "sessions", "{id}"}}, 1},
    {{"DELETE", {"v1", "sessions", "{id}"}}, 2},
    {{"POST", {"v1", "sessions", "{id}", "execs", "*", "signal"}}, 3},
    {{"PUT", {"v1", "sessions", "{id}", "files", "**"}}, 4},
    {{"GET", {"v1", "sessions", "{id}", "files", "**"}}, 5},
    {{"GET", {"a", "b", "c", "d", "e", "f"}}, 6}, /* every pattern slot used */
    {{"POST", {"v1", "sessions", "{id}", "cancel"}}, 7},
    {{"POST", {"v1", "sessions", "{id}", "cancel"}}, 8}, /* shadowed: the first wins */
};

typedef struct {
    const char *method;
    const char *path; /* segments joined by '/', as decoded ("" = none) */
    HttpRouteMatch match;
    ssize_t index;
} Case;

static const Case cases[] = {
    /* literal */
    {"GET", "v1/health", HTTP_ROUTE_FOUND, 0},
    {"GET", "v1/Health", HTTP_ROUTE_NONE, -1}, /* exact bytes, no case folding */
    {"GET", "v1", HTTP_ROUTE_NONE, -1},        /* a prefix of a route */
    {"GET", "v1/health/x", HTTP_ROUTE_NONE, -1},
    {"GET", "", HTTP_ROUTE_NONE, -1},
    {"GET", "*/health", HTTP_ROUTE_NONE, -1}, /* a "*" in the path is a literal segment */
    /* HEAD is answered by the GET route, and by no other */
    {"HEAD", "v1/health", HTTP_ROUTE_FOUND, 0},
    {"HEAD", "v1/sessions/s1/files/x", HTTP_ROUTE_FOUND, 5},
    {"HEAD", "v1/sessions/s1/cancel", HTTP_ROUTE_PATH, 7},
    /* 405: the path is known, the method is not (the first route with the path) */
    {"POST", "v1/health", HTTP_ROUTE_PATH, 0},
    {"PUT", "v1/sessions/s1", HTTP_ROUTE_PATH, 1},
    {"GET", "v1/sessions/s1/cancel", HTTP_ROUTE_PATH, 7},
    {"POST", "v1/sessions/s1/files/a/b", HTTP_ROUTE_PATH, 4},
    /* "{id}" and "*": any one segment, never none or two */
    {"DELETE", "v1/sessions/s1", HTTP_ROUTE_FOUND, 2},
    {"DELETE", "v1/sessions/{id}", HTTP_ROUTE_FOUND, 2},
    {"POST", "v1/sessions/s1/execs/e1/signal", HTTP_ROUTE_FOUND, 3},
    {"POST", "v1/sessions/s1/execs/e1/stdin", HTTP_ROUTE_NONE, -1},
    {"POST", "v1/sessions/s1/execs/signal", HTTP_ROUTE_NONE, -1},
    {"POST", "v1/sessions/s1/execs/e1/e2/signal", HTTP_ROUTE_NONE, -1},
    /* table order */
    {"POST", "v1/sessions/s1/cancel", HTTP_ROUTE_FOUND, 7},
    /* "**": one or more segments, as many as the path has */
    {"GET", "v1/sessions/s1/files", HTTP_ROUTE_NONE, -1},
    {"GET", "v1/sessions/s1/files/a", HTTP_ROUTE_FOUND, 5},
    {"PUT", "v1/sessions/s1/files/a", HTTP_ROUTE_FOUND, 4},
    {"PUT", "v1/sessions/s1/files/a/b/c/d/e/f/g/h/i", HTTP_ROUTE_FOUND, 4},
    {"GET", "v1/sessions/s1/files/a/b/c/d/e/f/g/h/i", HTTP_ROUTE_FOUND, 5},
    /* every slot used; more segments than HTTP_ROUTE_MAX_SEGMENTS */
    {"GET", "a/b/c/d/e/f", HTTP_ROUTE_FOUND, 6},
    {"GET", "a/b/c/d/e", HTTP_ROUTE_NONE, -1},
    {"GET", "a/b/c/d/e/f/g", HTTP_ROUTE_NONE, -1},
    {"GET", "v1/health/a/b/c/d/e/f/g/h", HTTP_ROUTE_NONE, -1},
};

#define MAX_TEST_SEGMENTS 64

/* path split at '/' into buf's copies; the count. */
static size_t
split(const char *path, char buf[512], char *seg[MAX_TEST_SEGMENTS])
{
    size_t n = 0;
    snprintf(buf, 512, "%s", path);
    for (char *s = buf, *save = NULL; (s = strtok_r(s, "/", &save)); s = NULL)
        seg[n++] = s;
    return n;
}

static void
test_cases(void **state)
{
    (void) state;
    for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
        const Case *c = &cases[i];
        char buf[512], *seg[MAX_TEST_SEGMENTS];
        size_t n = split(c->path, buf, seg);
        HttpRouteMatch m = (HttpRouteMatch) -1;
        ssize_t got = HTTP_ROUTE_FIND(routes, c->method, seg, n, &m);

        if (got != c->index || m != c->match)
            fail_msg("%s /%s: index %zd match %d, want %zd %d", c->method, c->path, got, (int) m,
                     c->index, (int) c->match);
        if (got >= 0 && routes[got].tag != (int) got)
            fail_msg("%s /%s: the stride found the wrong entry", c->method, c->path);
    }
}

/* A path of many segments (the request-target parser bounds them by the target's length,
 * not by count) is refused without reading past the pattern or the path. */
static void
test_many_segments(void **state)
{
    static char one[] = "a";
    char *seg[MAX_TEST_SEGMENTS];
    HttpRouteMatch m;

    (void) state;
    for (size_t i = 0; i < ELEMENTSOF(seg); i++)
        seg[i] = one;
    for (size_t n = 0; n <= ELEMENTSOF(seg); n++) {
        ssize_t got = HTTP_ROUTE_FIND(routes, "GET", seg, n, &m);
        assert_int_equal(got, -1);
        assert_int_equal(m, HTTP_ROUTE_NONE);
    }
}

/* An empty table: every path is a 404. */
static void
test_empty_table(void **state)
{
    char one[] = "v1", *seg[] = {one};
    HttpRouteMatch m = HTTP_ROUTE_FOUND;

    (void) state;
    assert_int_equal(http_route_find(routes, 0, sizeof(routes[0]), "GET", seg, 1, &m), -1);
    assert_int_equal(m, HTTP_ROUTE_NONE);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_many_segments),
        cmocka_unit_test(test_empty_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
