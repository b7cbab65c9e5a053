/* Fuzz target: a log record whose message carries hostile bytes (a guest's or a client's text
 * that reached a log line), in every form hostd/base/log.c writes. Input: the message (cut at
 * the first NUL and at the 2047 bytes log_emit() keeps, as vsnprintf would). Invariants:
 *  - every form is one line within LOG_LINE_MAX_BYTES, ending in its only '\n';
 *  - the JSON form has no byte below 0x20 but that newline, parses (jansson, strict UTF-8) as
 *    one object whose message is a string; when it was not cut and the input is UTF-8, that
 *    string is the input exactly (control bytes included: they are escaped, not dropped);
 *  - the journal form starts with the level's priority. */
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_check.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* True when msg is UTF-8 (jansson's check): then the JSON form must decode back to it. */
static bool
is_utf8(const char *msg)
{
    json_t *s = json_string(msg); /* NULL when not UTF-8 */
    json_decref(s);
    return s != NULL;
}

static void
check_json(const char *line, size_t n, const char *msg)
{
    json_error_t e;
    for (size_t i = 0; i + 1 < n; i++)
        CHECK((unsigned char) line[i] >= 0x20);
    json_t *o = json_loadb(line, n, 0, &e);
    CHECK(json_is_object(o));
    const char *got = json_string_value(json_object_get(o, "message"));
    CHECK(got != NULL);
    bool cut = n >= 6 && memcmp(line + n - 6, "...\"}\n", 6) == 0;
    if (!cut && is_utf8(msg))
        CHECK(strcmp(got, msg) == 0);
    json_decref(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct timespec ts = {.tv_sec = 1796292000, .tv_nsec = 5000000};
    char msg[2048], line[LOG_LINE_MAX_BYTES + 1];
    size_t len = size < sizeof(msg) - 1 ? size : sizeof(msg) - 1;

    memcpy(msg, data, len);
    msg[len] = '\0';
    for (LogStyle style = LOG_STYLE_TEXT; style <= LOG_STYLE_JSON; style++) {
        size_t n =
            log_format_line(line, sizeof(line), style, LOG_LEVEL_WARN, &ts, "stockaded", 4242, msg);
        CHECK(n > 0 && n <= LOG_LINE_MAX_BYTES && n == strlen(line));
        CHECK(line[n - 1] == '\n');
        if (style == LOG_STYLE_JOURNAL)
            CHECK(memcmp(line, "<4>warn: ", 9) == 0);
        if (style == LOG_STYLE_JSON) {
            CHECK(memchr(line, '\n', n) == line + n - 1);
            check_json(line, n, msg);
        }
    }
    return 0;
}
