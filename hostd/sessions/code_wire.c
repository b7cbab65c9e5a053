/* The code kernel's line protocol, host end: see code_wire.h. */
#include <stdlib.h>
#include <string.h>

#include "code_wire.h"
#include "jsonscan.h"
#include "macro.h"

static const char *const CODE_MIMES[] = {
    "text/plain",    "text/html",  "text/markdown",    "text/latex",      "image/png",
    "image/svg+xml", "image/jpeg", "application/json", "application/pdf",
};

static bool
mime_is_known(const char *k)
{
    for (size_t i = 0; i < ELEMENTSOF(CODE_MIMES); i++)
        if (strcmp(k, CODE_MIMES[i]) == 0)
            return true;
    return false;
}

static const char *
string_field(json_t *o, const char *key, size_t max)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v) || json_string_length(v) > max)
        return NULL;
    return json_string_value(v);
}

/* True for an application/json value that dumps within CODE_JSON_MAX_BYTES (its nesting was
 * bounded with the line's). */
static bool
json_value_fits(const json_t *v)
{
    size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
    return n > 0 && n <= CODE_JSON_MAX_BYTES;
}

/* {main, data}: known formats only; a string each within CODE_FIELD_MAX_BYTES, but
 * application/json may be any value that fits (json_value_fits()); others are dropped. */
static json_t *
result_attrs(json_t *root, Error **errp)
{
    json_t *data = json_object_get(root, "data"), *main = json_object_get(root, "main");
    const char *k;
    json_t *v;

    if (!json_is_object(data) || (main && !json_is_boolean(main)))
        return error_set(errp, E_INVALID, 0, "result: data must be an object"), NULL;
    json_t *kept = json_object();
    json_object_foreach(data, k, v)
    {
        bool is_json = strcmp(k, "application/json") == 0;
        if (!mime_is_known(k))
            continue;
        if (is_json ? !json_value_fits(v)
                    : !json_is_string(v) || json_string_length(v) > CODE_FIELD_MAX_BYTES)
            continue;
        json_object_set(kept, k, v);
    }
    return json_pack("{s:b,s:o}", "main", main && json_is_true(main), "data", kept);
}

static json_t *
error_attrs(json_t *root, Error **errp)
{
    const char *name = string_field(root, "name", CODE_NAME_MAX_BYTES);
    const char *value = string_field(root, "value", CODE_FIELD_MAX_BYTES);
    const char *tb = string_field(root, "traceback", CODE_FIELD_MAX_BYTES);
    if (!name || !*name || !value || !tb)
        return error_set(errp, E_INVALID, 0, "error: name, value, traceback must be strings"), NULL;
    return json_pack("{s:s,s:s,s:s}", "name", name, "value", value, "traceback", tb);
}

static int
msg_type(const char *t, CodeMsgType *ret)
{
    static const struct {
        const char *name;
        CodeMsgType type;
    } types[] = {{"ready", CODE_MSG_READY},   {"stdout", CODE_MSG_STDOUT},
                 {"stderr", CODE_MSG_STDERR}, {"result", CODE_MSG_RESULT},
                 {"error", CODE_MSG_ERROR},   {"done", CODE_MSG_DONE}};
    for (size_t i = 0; t && i < ELEMENTSOF(types); i++)
        if (strcmp(t, types[i].name) == 0) {
            *ret = types[i].type;
            return 0;
        }
    return -1;
}

static int
msg_body(json_t *root, CodeMsg *m, Error **errp)
{
    switch (m->type) {
    case CODE_MSG_READY:
        return 0;
    case CODE_MSG_STDOUT:
    case CODE_MSG_STDERR: {
        json_t *t = json_object_get(root, "text");
        if (!json_is_string(t))
            return error_set(errp, E_INVALID, 0, "stream text must be a string");
        m->text_len = json_string_length(t);
        if (!(m->text = malloc(m->text_len + 1)))
            return error_set(errp, E_INTERNAL, ENOMEM, "code line");
        memcpy(m->text, json_string_value(t), m->text_len + 1);
        return 0;
    }
    case CODE_MSG_RESULT:
        return (m->attrs = result_attrs(root, errp)) ? 0 : -1;
    case CODE_MSG_ERROR:
        return (m->attrs = error_attrs(root, errp)) ? 0 : -1;
    case CODE_MSG_DONE: {
        json_t *n = json_object_get(root, "execution_count");
        if (!json_is_integer(n) || json_integer_value(n) < 0)
            return error_set(errp, E_INVALID, 0, "done: execution_count must be a count");
        m->attrs = json_pack("{s:I}", "execution_count", json_integer_value(n));
        return 0;
    }
    }
    return error_set(errp, E_INVALID, 0, "unknown line type");
}

int
code_msg_parse(const char *line, size_t len, CodeMsg *ret, Error **errp)
{
    CodeMsg m = {0};
    json_error_t jerr;

    if (len > CODE_LINE_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "kernel line over %u bytes", CODE_LINE_MAX_BYTES);
    if (!jsonscan_depth_within(line, len, CODE_LINE_MAX_DEPTH))
        return error_set(errp, E_INVALID, 0,
                         "kernel line nests deeper than %u levels (application/json: %u)",
                         CODE_LINE_MAX_DEPTH, CODE_JSON_MAX_DEPTH);
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(root)) {
        json_decref(root);
        return error_set(errp, E_INVALID, 0, "kernel line is not a JSON object");
    }
    json_t *run = json_object_get(root, "run");
    if (msg_type(json_string_value(json_object_get(root, "type")), &m.type) < 0 ||
        (m.type != CODE_MSG_READY && (!json_is_integer(run) || json_integer_value(run) < 1 ||
                                      json_integer_value(run) > UINT32_MAX))) {
        json_decref(root);
        return error_set(errp, E_INVALID, 0, "kernel line without a known type and run");
    }
    m.run = m.type == CODE_MSG_READY ? 0 : (uint32_t) json_integer_value(run);
    int r = msg_body(root, &m, errp);
    json_decref(root);
    if (r < 0) {
        code_msg_clear(&m);
        return -1;
    }
    *ret = m;
    return 0;
}

void
code_msg_clear(CodeMsg *m)
{
    free(m->text);
    json_decref(m->attrs);
    *m = (CodeMsg){0};
}

char *
code_request_line(uint32_t run, const char *code, size_t code_len, uint64_t timeout_ms, json_t *env,
                  size_t *ret_len)
{
    json_t *req = json_pack("{s:I,s:s%,s:I}", "run", (json_int_t) run, "code", code, code_len,
                            "timeout_ms", (json_int_t) timeout_ms);
    if (req && env)
        json_object_set(req, "env", env);
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return NULL;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    *ret_len = n + 1;
    return line;
}

static const char *const language_names[CODE_LANG_COUNT] = {[CODE_LANG_PYTHON] = "python",
                                                            [CODE_LANG_JAVASCRIPT] = "javascript",
                                                            [CODE_LANG_BASH] = "bash"};

const char *
code_language_name(CodeLanguage l)
{
    return l < CODE_LANG_COUNT ? language_names[l] : "?";
}

static bool
is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int
code_language_parse(const char *s, size_t len, CodeLanguage *ret, Error **errp)
{
    char low[16];
    bool printable = true;
    while (len > 0 && is_blank(s[0]))
        s++, len--;
    while (len > 0 && is_blank(s[len - 1]))
        len--;
    for (size_t i = 0; i < len; i++) {
        printable = printable && s[i] >= 0x20 && s[i] < 0x7f;
        if (i < sizeof(low))
            low[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char) (s[i] - 'A' + 'a') : s[i];
    }
    if (printable && len < sizeof(low)) {
        low[len] = '\0';
        if (strcmp(low, "js") == 0)
            return *ret = CODE_LANG_JAVASCRIPT, 0;
        for (size_t i = 0; i < CODE_LANG_COUNT; i++)
            if (strcmp(low, language_names[i]) == 0)
                return *ret = (CodeLanguage) i, 0;
    }
    /* the name is echoed only when it is short printable ASCII (never a cut UTF-8 sequence) */
    if (!printable || len > 32)
        return error_set(errp, E_INVALID, 0, "language: code contexts here run %s",
                         CODE_LANGUAGES_SERVED);
    return error_set(errp, E_INVALID, 0, "language: code contexts here run %s (got '%.*s')",
                     CODE_LANGUAGES_SERVED, (int) len, s);
}
