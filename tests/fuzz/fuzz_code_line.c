/* Fuzz target: the code kernel's lines as a hostile guest writes them (hostd/sessions/
 * code_wire.h), parsed as session_code.c parses them. Input: bytes cut at '\n' into lines.
 * Invariants, not just "no crash":
 *  - a line over CODE_LINE_MAX_BYTES is refused, and so is one nesting deeper than
 *    CODE_LINE_MAX_DEPTH (counted here on the parsed value, independently of the scan);
 *  - a parsed line has run 0 exactly when it is "ready"; stdout/stderr carry text and nothing
 *    else; a result is {main: bool, data: {...}} whose keys are MIME types and whose values
 *    are strings within CODE_FIELD_MAX_BYTES, but application/json, which may be any JSON
 *    nesting at most CODE_JSON_MAX_DEPTH and dumping to at most CODE_JSON_MAX_BYTES;
 *    an error's name is 1..CODE_NAME_MAX_BYTES, its value and traceback strings within
 *    CODE_FIELD_MAX_BYTES; done's execution_count is an integer >= 0;
 *  - the request line made from the same bytes as a cell's code is one line (no raw newline
 *    before its end) that parses back to exactly that code, or NULL for non-UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "code_wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Levels of arrays/objects in v (a scalar is 0). Recursive: fine on the fuzzer's own stack,
 * which holds what jansson parses (2 048 levels). */
static unsigned
value_depth(json_t *v)
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
        deepest = d > deepest ? d : deepest;
    }
    json_object_foreach(v, k, x)
    {
        unsigned d = value_depth(x);
        deepest = d > deepest ? d : deepest;
    }
    return deepest + 1;
}

static void
check_result(json_t *a)
{
    const char *k;
    json_t *v;

    CHECK(json_object_size(a) == 2 && json_is_boolean(json_object_get(a, "main")));
    json_t *d = json_object_get(a, "data");
    CHECK(json_is_object(d));
    json_object_foreach(d, k, v) {
        CHECK(strncmp(k, "text/", 5) == 0 || strncmp(k, "image/", 6) == 0 ||
              strncmp(k, "application/", 12) == 0); /* known formats only */
        if (strcmp(k, "application/json") != 0) {
            CHECK(json_is_string(v) && json_string_length(v) <= CODE_FIELD_MAX_BYTES);
            continue;
        }
        CHECK(value_depth(v) <= CODE_JSON_MAX_DEPTH);
        size_t dumped = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
        CHECK(dumped > 0 && dumped <= CODE_JSON_MAX_BYTES);
    }
}

static bool
string_within(json_t *o, const char *key, size_t max)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) && json_string_length(v) <= max;
}

static void
check_msg(const CodeMsg *m, size_t len)
{
    CHECK((m->run == 0) == (m->type == CODE_MSG_READY));
    /* what becomes the event's attrs (with context and run beside) is what readers accept */
    CHECK(value_depth(m->attrs) <= CODE_LINE_MAX_DEPTH);
    switch (m->type) {
    case CODE_MSG_READY:
        CHECK(!m->text && !m->attrs);
        break;
    case CODE_MSG_STDOUT:
    case CODE_MSG_STDERR:
        CHECK(m->text && m->text_len <= len && !m->attrs);
        break;
    case CODE_MSG_RESULT:
        CHECK(!m->text && m->attrs);
        check_result(m->attrs);
        break;
    case CODE_MSG_ERROR: {
        const char *name = json_string_value(json_object_get(m->attrs, "name"));
        CHECK(name && name[0] && strlen(name) <= CODE_NAME_MAX_BYTES);
        CHECK(string_within(m->attrs, "value", CODE_FIELD_MAX_BYTES) &&
              string_within(m->attrs, "traceback", CODE_FIELD_MAX_BYTES));
        break;
    }
    case CODE_MSG_DONE: {
        json_t *n = json_object_get(m->attrs, "execution_count"); /* NULL would read as 0 */
        CHECK(json_is_integer(n) && json_integer_value(n) >= 0);
        break;
    }
    default:
        CHECK(!"an unknown message type was accepted");
    }
}

/* An accepted line parses (as JSON, without the checks) to a value within
 * CODE_LINE_MAX_DEPTH: the bound holds for keys code_wire.c ignores too. */
static void
check_line_depth(const char *line, size_t len)
{
    json_t *all = json_loadb(line, len, 0, NULL);
    CHECK(all && value_depth(all) <= CODE_LINE_MAX_DEPTH);
    json_decref(all);
}

static void
check_request(const uint8_t *data, size_t size)
{
    size_t n;
    char *line = code_request_line(7, (const char *) data, size, 100, NULL, &n);
    if (!line)
        return; /* not UTF-8 (or out of memory): the API answers 400 */
    CHECK(n > 0 && line[n - 1] == '\n' && memchr(line, '\n', n - 1) == NULL);
    json_t *req = json_loadb(line, n - 1, JSON_ALLOW_NUL, NULL); /* code may hold NUL */
    CHECK(req);
    json_t *code = json_object_get(req, "code");
    CHECK(json_is_string(code) && json_string_length(code) == size &&
          memcmp(json_string_value(code), data, size) == 0);
    json_decref(req);
    free(line);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *) data, *end = p + size;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        size_t len = nl ? (size_t) (nl - p) : (size_t) (end - p);
        CodeMsg m;
        if (code_msg_parse(p, len, &m, NULL) == 0) {
            CHECK(len <= CODE_LINE_MAX_BYTES);
            check_line_depth(p, len);
            check_msg(&m, len);
            code_msg_clear(&m);
        }
        p += len + (nl != NULL);
    }
    check_request(data, size);
    return 0;
}
