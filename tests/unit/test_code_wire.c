/* hostd/sessions/code_wire.c: the kernel's lines are hostile. Table-driven: what is kept,
 * what is refused, what is dropped, and the request line's shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "code_wire.h"
#include "macro.h"

static int
parse(const char *line, CodeMsg *m)
{
    Error *err = NULL;
    int r = code_msg_parse(line, strlen(line), m, &err);
    error_free(err);
    return r;
}

static void
test_good_lines(void **state)
{
    CodeMsg m;
    (void) state;
    assert_int_equal(parse("{\"type\":\"ready\",\"pid\":7}", &m), 0);
    assert_int_equal(m.type, CODE_MSG_READY);
    code_msg_clear(&m);
    assert_int_equal(parse("{\"run\":3,\"type\":\"stdout\",\"text\":\"a\\n\"}", &m), 0);
    assert_int_equal(m.run, 3);
    assert_int_equal(m.text_len, 2);
    assert_memory_equal(m.text, "a\n", 2);
    code_msg_clear(&m);
    assert_int_equal(parse("{\"run\":1,\"type\":\"result\",\"main\":true,\"data\":{\"text/plain\":"
                           "\"42\",\"image/png\":\"iVBO\",\"x-evil/type\":\"dropped\","
                           "\"text/html\":7,\"application/json\":{\"a\":[1]}}}",
                           &m),
                     0);
    json_t *data = json_object_get(m.attrs, "data");
    assert_true(json_is_true(json_object_get(m.attrs, "main")));
    assert_string_equal(json_string_value(json_object_get(data, "text/plain")), "42");
    assert_non_null(json_object_get(data, "image/png"));
    assert_non_null(json_object_get(data, "application/json"));
    assert_null(json_object_get(data, "x-evil/type")); /* unknown MIME: dropped */
    assert_null(json_object_get(data, "text/html"));   /* not a string: dropped */
    code_msg_clear(&m);
    assert_int_equal(parse("{\"run\":2,\"type\":\"error\",\"name\":\"ZeroDivisionError\","
                           "\"value\":\"division by zero\",\"traceback\":\"tb\"}",
                           &m),
                     0);
    assert_string_equal(json_string_value(json_object_get(m.attrs, "name")), "ZeroDivisionError");
    code_msg_clear(&m);
    assert_int_equal(parse("{\"run\":2,\"type\":\"done\",\"execution_count\":5}", &m), 0);
    assert_int_equal(json_integer_value(json_object_get(m.attrs, "execution_count")), 5);
    code_msg_clear(&m);
}

static void
test_bad_lines(void **state)
{
    static const char *const bad[] = {
        "", "not json", "[1,2]", "{\"type\":\"stdout\",\"text\":\"no run\"}",
        "{\"run\":0,\"type\":\"stdout\",\"text\":\"x\"}",
        "{\"run\":4294967296,\"type\":\"stdout\",\"text\":\"x\"}",
        "{\"run\":1,\"type\":\"nope\"}", "{\"run\":1,\"type\":\"stdout\",\"text\":5}",
        "{\"run\":1,\"type\":\"result\",\"data\":\"x\"}",
        "{\"run\":1,\"type\":\"result\",\"main\":1,\"data\":{}}",
        "{\"run\":1,\"type\":\"error\",\"name\":\"\",\"value\":\"\",\"traceback\":\"\"}",
        "{\"run\":1,\"type\":\"done\",\"execution_count\":-1}",
        "{\"run\":1,\"run\":2,\"type\":\"done\",\"execution_count\":1}",
    };
    (void) state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CodeMsg m = {.run = 99};
        assert_int_equal(parse(bad[i], &m), -1);
        assert_int_equal(m.run, 99); /* untouched on failure */
    }
    /* over the line cap: refused before parsing */
    size_t n = CODE_LINE_MAX_BYTES + 1;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, ' ', n);
    CodeMsg m;
    Error *err = NULL;
    assert_int_equal(code_msg_parse(big, n, &m, &err), -1);
    error_free(err);
    free(big);
}

/* "[[...0...]]" nested depth deep (0 for a scalar), malloc'd. */
static char *
nested(unsigned depth)
{
    char *v = malloc(2 * depth + 2);
    assert_non_null(v);
    memset(v, '[', depth);
    v[depth] = '0';
    memset(v + depth + 1, ']', depth);
    v[2 * depth + 1] = '\0';
    return v;
}

/* A result line whose application/json is value (text). */
static int
parse_json_result(const char *value, CodeMsg *m, Error **errp)
{
    static const char head[] = "{\"run\":1,\"type\":\"result\",\"main\":true,\"data\":{"
                               "\"text/plain\":\"v\",\"application/json\":";
    size_t n = strlen(head) + strlen(value) + 3;
    char *line = malloc(n);
    assert_non_null(line);
    snprintf(line, n, "%s%s}}", head, value);
    int r = code_msg_parse(line, strlen(line), m, errp);
    free(line);
    return r;
}

static unsigned
value_depth(const json_t *v)
{
    unsigned deepest = 0;
    size_t i;
    const char *k;
    json_t *x;
    if (!json_is_array(v) && !json_is_object(v))
        return 0;
    json_array_foreach(v, i, x)
    {
        unsigned d = value_depth(x);
        deepest = MAX(deepest, d);
    }
    json_object_foreach((json_t *) v, k, x)
    {
        unsigned d = value_depth(x);
        deepest = MAX(deepest, d);
    }
    return deepest + 1;
}

/* application/json nests at most CODE_JSON_MAX_DEPTH: a line past it (2 040 deep took the
 * daemon down when its event was rendered on a 512 KiB connection thread) is refused before
 * jansson parses it, whichever key holds the depth; brackets in strings do not count. */
static void
test_json_depth_bound(void **state)
{
    CodeMsg m;
    Error *err = NULL;
    (void) state;
    char *v = nested(CODE_JSON_MAX_DEPTH);
    assert_int_equal(parse_json_result(v, &m, NULL), 0);
    json_t *kept = json_object_get(json_object_get(m.attrs, "data"), "application/json");
    assert_int_equal(value_depth(kept), CODE_JSON_MAX_DEPTH);
    assert_int_equal(value_depth(m.attrs), CODE_LINE_MAX_DEPTH);
    code_msg_clear(&m);
    free(v);
    static const unsigned too_deep[] = {CODE_JSON_MAX_DEPTH + 1, 2040};
    for (size_t i = 0; i < ELEMENTSOF(too_deep); i++) {
        v = nested(too_deep[i]);
        m = (CodeMsg){.run = 99};
        assert_int_equal(parse_json_result(v, &m, &err), -1);
        assert_int_equal(m.run, 99);
        assert_non_null(strstr(err->message, "nests deeper than"));
        error_free(err);
        err = NULL;
        free(v);
    }
    /* an ignored key nesting deep: refused all the same (jansson would recurse into it) */
    v = nested(CODE_LINE_MAX_DEPTH);
    char line[512];
    snprintf(line, sizeof(line), "{\"run\":1,\"type\":\"stdout\",\"text\":\"x\",\"k\":%s}", v);
    assert_int_equal(parse(line, &m), -1);
    /* brackets inside a string are text */
    snprintf(line, sizeof(line), "{\"run\":1,\"type\":\"stdout\",\"text\":\"%s\"}", v);
    assert_int_equal(parse(line, &m), 0);
    assert_int_equal(m.text_len, 2 * CODE_LINE_MAX_DEPTH + 1);
    code_msg_clear(&m);
    free(v);
}

/* "[1e-7,...]" of count reals, malloc'd: 5 bytes each as text, 22 each when dumped. */
static char *
reals(size_t count)
{
    char *v = malloc(5 * count + 2), *p = v;
    assert_non_null(v);
    *p++ = '[';
    for (size_t i = 0; i < count; i++) {
        if (i)
            *p++ = ',';
        memcpy(p, "1e-7", 4);
        p += 4;
    }
    *p++ = ']';
    *p = '\0';
    return v;
}

/* application/json is kept when it dumps within CODE_JSON_MAX_BYTES, like every other format
 * within its cap: a line of reals grows 4.4 times when dumped, so a line under
 * CODE_LINE_MAX_BYTES could store an event of ~35 MiB. The rest of the result is kept. */
static void
test_json_dumped_size(void **state)
{
    CodeMsg m;
    (void) state;
    size_t small = CODE_JSON_MAX_BYTES / 23 - 1, big = 2 * CODE_JSON_MAX_BYTES / 23;
    char *v = reals(small);
    assert_int_equal(parse_json_result(v, &m, NULL), 0);
    json_t *data = json_object_get(m.attrs, "data");
    assert_int_equal(json_array_size(json_object_get(data, "application/json")), small);
    code_msg_clear(&m);
    free(v);
    v = reals(big);
    assert_true(strlen(v) < CODE_JSON_MAX_BYTES); /* under the cap as text, twice it dumped */
    assert_int_equal(parse_json_result(v, &m, NULL), 0);
    data = json_object_get(m.attrs, "data");
    assert_null(json_object_get(data, "application/json"));
    assert_string_equal(json_string_value(json_object_get(data, "text/plain")), "v");
    code_msg_clear(&m);
    free(v);
}

static void
test_request_line(void **state)
{
    size_t n;
    json_t *env = json_pack("{s:s}", "A", "b");
    (void) state;
    char *line = code_request_line(7, "print('\\n')\nx", 13, 250, env, &n);
    assert_non_null(line);
    assert_int_equal(line[n - 1], '\n');
    assert_null(memchr(line, '\n', n - 1)); /* one line whatever the code holds */
    json_t *o = json_loadb(line, n - 1, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(o, "run")), 7);
    assert_int_equal(json_integer_value(json_object_get(o, "timeout_ms")), 250);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "env"), "A")), "b");
    json_decref(o);
    json_decref(env);
    free(line);
    assert_null(code_request_line(1, "\xff\xfe", 2, 0, NULL, &n)); /* not UTF-8 */
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_lines),       cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_json_depth_bound), cmocka_unit_test(test_json_dumped_size),
        cmocka_unit_test(test_request_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
