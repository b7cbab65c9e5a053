/* Fuzz target: the code kernel's lines as a hostile guest writes them (hostd/sessions/
 * code_wire.h), parsed as session_code.c parses them. Input: bytes cut at '\n' into lines.
 * Invariants, not just "no crash":
 *  - a line over CODE_LINE_MAX_BYTES is refused;
 *  - a parsed line has run 0 exactly when it is "ready"; stdout/stderr carry text and nothing
 *    else; a result is {main: bool, data: {...}} whose keys are MIME types and whose values
 *    are strings within CODE_FIELD_MAX_BYTES (application/json may be any JSON);
 *    an error's name is 1..CODE_NAME_MAX_BYTES; done's execution_count is >= 0;
 *  - the request line made from the same bytes as a cell's code is one line (no raw newline
 *    before its end) that parses back to exactly that code, or NULL for non-UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "code_wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_result(const json_t *a)
{
    const char *k;
    json_t *v;

    CHECK(json_object_size(a) == 2 && json_is_boolean(json_object_get(a, "main")));
    json_t *d = json_object_get(a, "data");
    CHECK(json_is_object(d));
    json_object_foreach(d, k, v) {
        CHECK(strncmp(k, "text/", 5) == 0 || strncmp(k, "image/", 6) == 0 ||
              strncmp(k, "application/", 12) == 0); /* known formats only */
        if (strcmp(k, "application/json") != 0)
            CHECK(json_is_string(v) && json_string_length(v) <= CODE_FIELD_MAX_BYTES);
    }
}

static void
check_msg(const CodeMsg *m, size_t len)
{
    CHECK((m->run == 0) == (m->type == CODE_MSG_READY));
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
        break;
    }
    case CODE_MSG_DONE:
        CHECK(json_integer_value(json_object_get(m->attrs, "execution_count")) >= 0);
        break;
    default:
        CHECK(!"an unknown message type was accepted");
    }
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
            check_msg(&m, len);
            code_msg_clear(&m);
        }
        p += len + (nl != NULL);
    }
    check_request(data, size);
    return 0;
}
