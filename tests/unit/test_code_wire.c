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
        cmocka_unit_test(test_good_lines),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_request_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
