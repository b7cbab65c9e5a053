/* The JSON of both faces, parsed and rendered by pure functions (unit-tested, fuzzed):
 * control-plane bodies (NewSandbox, Sandbox, SandboxDetail, ListedSandbox, errors) from
 * e2b-dev/infra spec/openapi.yml, and the ProtoJSON of envd's process and filesystem
 * messages (lowerCamelCase names, int64 as strings, enums by name, bytes as base64).
 * Rendering emits only fields the schemas know: the Python SDK rejects unknown ones.
 * Parsed strings are borrowed from the json_t they came from. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "code_wire.h"
#include "connect.h"
#include "e2b_wire.h"
#include "error.h"

#define E2B_ENVD_VERSION "0.5.2" /* README.md: why this one */
#define E2B_CLIENT_ID "stockade"
#define E2B_DEFAULT_TIMEOUT_S 300 /* the v2 API's default sandbox timeout */
#define E2B_V1_DEFAULT_TIMEOUT_S 15
#define E2B_ENV_MAX 128 /* SESSION_ENV_MAX */
#define E2B_TAG_MAX_BYTES 256

/* ------------------------------------------------------------------ control plane */

typedef struct E2bNewSandbox {
    const char *template_id;
    uint64_t timeout_s;
    json_t *metadata; /* an object of strings, or NULL */
    json_t *env;      /* envVars (or envs): an object of strings, or NULL */
} E2bNewSandbox;

/* POST /v2/sandboxes (v2) or /sandboxes: E_INVALID naming the field, also for what Stockade
 * cannot do (autoPause, autoResume, volumeMounts, mcp). */
int e2b_parse_new_sandbox(json_t *body, bool v2, E2bNewSandbox *ret, Error **errp);
/* {"timeout": seconds} of set-timeout (required) and connect (optional: *ret untouched). */
int e2b_parse_timeout(json_t *body, bool required, uint64_t *ret_s, Error **errp);

/* What the renderers need of one sandbox. */
typedef struct E2bSandboxView {
    const char *id, *template_id, *token, *domain;
    json_t *metadata; /* borrowed; may be NULL */
    int64_t started_usec, end_usec;
    unsigned vcpus, memory_mib, disk_mib;
} E2bSandboxView;

json_t *e2b_render_sandbox(const E2bSandboxView *v);             /* create, connect */
json_t *e2b_render_detail(const E2bSandboxView *v, bool listed); /* get; list entries */
/* {"code": status, "message": text} */
json_t *e2b_render_api_error(unsigned status, const char *message);

/* ------------------------------------------------------------------ envd: process */

typedef struct E2bStart {
    const char *cmd;
    json_t *args, *envs; /* array, object; either may be NULL */
    const char *cwd;     /* may be NULL */
    const char *tag;     /* may be NULL */
    bool stdin_open;
} E2bStart;

/* StartRequest: process.cmd (required), args (at most ARGV_MAX_COUNT - 1 strings), envs,
 * cwd, and tag, stdin; E_INVALID naming the field. */
int e2b_parse_start(json_t *req, E2bStart *ret, Error **errp);
/* The ProcessConfig that List echoes: {cmd, args, envs, cwd?} built from the checked fields
 * of st alone, never the client's object: anything else it held (unknown keys, nested any
 * depth) is dropped, so what the daemon keeps and re-serialises later is flat and bounded.
 * NULL on ENOMEM. */
json_t *e2b_start_config(const E2bStart *st);

typedef struct E2bSelector {
    uint32_t pid; /* 0 when by tag */
    const char *tag;
} E2bSelector;

/* req's "process": {"pid": n} or {"tag": "..."}. */
int e2b_parse_selector(json_t *req, E2bSelector *ret, Error **errp);
/* "SIGNAL_SIGKILL" / "SIGNAL_SIGTERM" or 9 / 15. */
int e2b_parse_signal(json_t *req, int *ret_signo, Error **errp);
/* SendInput's input.stdin or input.pty (base64: bytes typed on the process's terminal) as a
 * new buffer. */
int e2b_parse_input(json_t *req, uint8_t **ret, size_t *ret_len, Error **errp);

/* ProcessEvent messages, each wrapped as {"event": ...} (StartResponse, ConnectResponse). */
json_t *e2b_event_start(uint32_t pid);
json_t *e2b_event_data(bool is_stderr, const uint8_t *data, size_t len);
/* {"event":{"data":{"pty": base64}}}: what a process on a terminal shows. */
json_t *e2b_event_pty(const uint8_t *data, size_t len);
/* Start's and Update's "pty": {"size": {"cols": 1..1000, "rows": 1..1000}}. Absent or null:
 * 0 with *ret_cols = *ret_rows = 0; anything else malformed: -1 (E_INVALID). */
int e2b_parse_pty(json_t *req, uint32_t *ret_cols, uint32_t *ret_rows, Error **errp);
/* exit_code >= 0: exited; otherwise killed by signo. error: NULL or why it did not run. */
json_t *e2b_event_end(int exit_code, int signo, const char *error);
json_t *e2b_event_keepalive(bool process); /* process: {"event":{"keepalive":{}}} */
/* A process listing entry; config (e2b_start_config()'s) is copied. */
json_t *e2b_process_info(uint32_t pid, const char *tag, json_t *config);

/* The payload of an end-stream envelope: {} or {"error":{"code","message"}}. */
json_t *e2b_end_stream(bool ok, ConnectCode code, const char *message);
/* {"code": "<connect code>", "message": text} of a unary error. */
json_t *e2b_render_rpc_error(ConnectCode code, const char *message);

/* ------------------------------------------------------------------ envd: filesystem */

typedef enum { E2B_FILE_OTHER, E2B_FILE_FILE, E2B_FILE_DIR, E2B_FILE_SYMLINK } E2bFileType;

typedef struct E2bEntry {
    const char *name; /* one component (bytes; shown lossily when not UTF-8) */
    E2bFileType type;
    uint64_t size;
    uint32_t mode; /* permission bits */
    uint64_t mtime_ns;
    const char *symlink_target; /* may be NULL */
    /* A symlink, reported as envd does (e2b-dev/infra packages/shared/pkg/filesystem/entry.go):
     * type and mode are its destination's, symlink_target the destination's absolute path,
     * and permissions the link's own (Go's FileMode.String(): "L" + link_mode's rwx). */
    bool link;
    uint32_t link_mode;
} E2bEntry;

/* EntryInfo; path is the absolute path shown to the client. */
json_t *e2b_render_entry(const E2bEntry *en, const char *path);
/* {"name","type":"EVENT_TYPE_*","entry"?} of WatchDir, wrapped as {"filesystem": ...}. */
json_t *e2b_render_fs_event(const char *name, bool removed, json_t *entry);
/* WriteInfo of POST /files: {"name","type":"file","path"}. */
json_t *e2b_render_write_info(const char *name, const char *path);
/* A JSON string of arbitrary bytes: as is when UTF-8, else each bad byte as U+FFFD. */
json_t *e2b_json_string_lossy(const char *s, size_t len);

/* ------------------------------------------------------------------ code interpreter */

/* @e2b/code-interpreter's face (port 49999): /execute, /contexts. An E2B context id is the
 * native context number in decimal: "1".."4294967295", no sign, no leading zero. */
#define E2B_CODE_PORT 49999
#define E2B_CODE_CONTEXT_ID_MAX_BYTES 10
int e2b_code_context_parse(const char *s, uint32_t *ret);

typedef struct E2bExecute {
    const char *code; /* UTF-8 without NUL, code_len bytes */
    size_t code_len;
    uint32_t context;  /* 0: the session's default context of lang */
    CodeLanguage lang; /* python when absent */
    json_t *env;       /* env_vars: an object of strings, or NULL */
} E2bExecute;

/* POST /execute {code, context_id?, language?, env_vars?}: exactly those keys, code of at
 * most code_max bytes, language one code_language_parse() takes (python when absent; not
 * with context_id), env as an exec's. E_INVALID naming the field; *ret untouched then. */
int e2b_code_parse_execute(json_t *body, size_t code_max, E2bExecute *ret, Error **errp);
/* POST /contexts {language?, cwd?}: *ret_cwd the caller's cwd (NULL: none). */
int e2b_code_parse_context_new(json_t *body, CodeLanguage *ret_lang, const char **ret_cwd,
                               Error **errp);
/* Context {id, language, cwd} (cwd NULL: /home/user). */
json_t *e2b_code_render_context(uint32_t id, CodeLanguage lang, const char *cwd);
/* One NDJSON message of /execute for a code.* event of the run (attrs: the event's; ts_usec:
 * when it was recorded, Unix epoch), or NULL for events that have none. stdout/stderr {type,
 * text, timestamp}: timestamp an integer, Unix epoch in nanoseconds (OutputMessage.timestamp
 * in both code-interpreter SDKs; the Python one reads it from every line and raises KeyError
 * without it); result {type, is_main_result, text,
 * html, png, ...} with every format passed through untouched; error {type, name, value,
 * traceback}; code.done {type: number_of_executions, execution_count}, which is the run's
 * last (*ret_last). */
json_t *e2b_code_event_message(const char *type, const char *data, size_t len, json_t *attrs,
                               int64_t ts_usec, bool *ret_last);
