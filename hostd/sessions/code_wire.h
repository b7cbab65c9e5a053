/* The code kernel's line protocol, host end (the kernel: images/data/overlay/usr/lib/
 * stockade/kernel.py, whose header documents the lines). Pure: no I/O, any thread, fuzzable.
 * Every line comes from the guest and is hostile: it is parsed only below CODE_LINE_MAX_BYTES,
 * and nesting no deeper than CODE_LINE_MAX_DEPTH (on its text, before jansson sees it); each
 * field is checked for type and size, result formats other than CODE_MIMES are dropped,
 * and PNG/HTML stay opaque strings (never decoded or interpreted here). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CODE_LINE_MAX_BYTES (8u << 20)   /* one kernel line: a result with its PNG, base64 */
#define CODE_SOURCE_MAX_BYTES (1u << 20) /* a cell's source, from the API */
#define CODE_FIELD_MAX_BYTES (4u << 20)  /* one format of a result, one traceback */
#define CODE_NAME_MAX_BYTES 256          /* an error's name */
/* A result's application/json is the one format that is a JSON value, not a string: kept
 * when it nests at most CODE_JSON_MAX_DEPTH levels (the value itself is 1) and dumps
 * compactly to at most CODE_JSON_MAX_BYTES. Its event is parsed and dumped again on a
 * 512 KiB connection thread (both faces), at ~300 bytes of stack a level: 64 levels cost
 * ~20 KiB there; E2B's own results (a DataFrame as columns, a chart) nest under 8. Dumping
 * can grow a value (a real "1e-7" dumps as 21 bytes), hence the dumped bound, the same as any
 * other format's. */
#define CODE_JSON_MAX_DEPTH 64
#define CODE_JSON_MAX_BYTES CODE_FIELD_MAX_BYTES
/* A whole line, checked on its text before it is parsed: a result's line, its data, then the
 * value. Every other line is flat. */
#define CODE_LINE_MAX_DEPTH (CODE_JSON_MAX_DEPTH + 2)
#define CODE_RESULTS_MAX 32              /* results of one run; later ones are dropped */
#define CODE_TIMEOUT_MAX_MS (24ull * 3600 * 1000)

/* What a code context runs: a kernel each in the data image (images/data/overlay/usr/lib/
 * stockade/: kernel.py, kernel.js, kernel_bash.py), all speaking the line protocol below. */
typedef enum {
    CODE_LANG_PYTHON,
    CODE_LANG_JAVASCRIPT,
    CODE_LANG_BASH,
    CODE_LANG_COUNT
} CodeLanguage;

#define CODE_LANGUAGES_SERVED "python, javascript (or js) and bash"

/* A language by the names E2B's code-interpreter server takes (its normalize_language(): case
 * and surrounding blanks ignored, "js" for javascript). Anything else, typescript, r and java
 * included, is E_INVALID naming the languages served. */
int code_language_parse(const char *s, size_t len, CodeLanguage *ret, Error **errp);
/* python, javascript, bash. */
const char *code_language_name(CodeLanguage l);

typedef enum {
    CODE_MSG_READY = 1,
    CODE_MSG_STDOUT,
    CODE_MSG_STDERR,
    CODE_MSG_RESULT,
    CODE_MSG_ERROR,
    CODE_MSG_DONE,
} CodeMsgType;

typedef struct CodeMsg {
    CodeMsgType type;
    uint32_t run;   /* 0 for ready */
    char *text;     /* stdout/stderr: owned, text_len bytes (UTF-8 from the kernel, unchecked) */
    size_t text_len;
    json_t *attrs;  /* owned: result {main, data{mime: value}}, error {name, value, traceback},
                       done {execution_count}; NULL for the rest */
} CodeMsg;

/* Parses one line (without its newline). E_INVALID with a reason for anything malformed;
 * *ret untouched then. */
int code_msg_parse(const char *line, size_t len, CodeMsg *ret, Error **errp);
void code_msg_clear(CodeMsg *m);

/* The request line for one cell, newline included (NULL on ENOMEM). env may be NULL. */
char *code_request_line(uint32_t run, const char *code, size_t code_len, uint64_t timeout_ms,
                        json_t *env /* borrowed: an object of strings, or NULL */,
                        size_t *ret_len);
