/* See e2b_json.h. */
#include "e2b_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ascii.h"
#include "base64.h"
#include "e2b_config.h"
#include "macro.h"
#include "runner_limits.h"

/* ------------------------------------------------------------------ helpers */

static bool
is_plain_string(json_t *v, size_t min, size_t max)
{
    size_t n = json_string_length(v);
    return json_is_string(v) && n >= min && n <= max && strlen(json_string_value(v)) == n;
}

/* An object of at most max strings, keys 1..key_max bytes, values up to val_max. */
static int
string_map(json_t *v, const char *field, size_t max, size_t key_max, size_t val_max, Error **errp)
{
    const char *k;
    json_t *x;
    if (!json_is_object(v) || json_object_size(v) > max)
        return error_set(errp, E_INVALID, 0, "%s must be an object of at most %zu strings", field,
                         max);
    json_object_foreach(v, k, x)
    {
        if (strlen(k) == 0 || strlen(k) > key_max || !is_plain_string(x, 0, val_max))
            return error_set(errp, E_INVALID, 0,
                             "%s: keys of 1..%zu bytes, string values of at "
                             "most %zu bytes",
                             field, key_max, val_max);
    }
    return 0;
}

/* An array of at most max strings of up to val_max bytes each (no NUL inside). */
static int
string_list(json_t *v, const char *field, size_t max, size_t val_max, Error **errp)
{
    size_t i;
    json_t *x;
    if (!json_is_array(v) || json_array_size(v) > max)
        return error_set(errp, E_INVALID, 0, "%s must be an array of at most %zu strings", field,
                         max);
    json_array_foreach(v, i, x)
    {
        if (!is_plain_string(x, 0, val_max))
            return error_set(errp, E_INVALID, 0, "%s[%zu] must be a string of at most %zu bytes",
                             field, i, val_max);
    }
    return 0;
}

static json_t *
optional_field(json_t *obj, const char *name)
{
    json_t *v = json_object_get(obj, name);
    return json_is_null(v) ? NULL : v;
}

/* ------------------------------------------------------------------ control plane */

static int
refuse_unsupported(json_t *body, Error **errp)
{
    json_t *resume = optional_field(body, "autoResume");
    json_t *mounts = optional_field(body, "volumeMounts");
    if (json_is_true(optional_field(body, "autoPause")))
        return error_set(errp, E_INVALID, 0,
                         "autoPause: Stockade does not pause sandboxes (a "
                         "guest is used once); use lifecycle onTimeout 'kill'");
    if (resume && json_is_true(json_object_get(resume, "enabled")))
        return error_set(errp, E_INVALID, 0, "autoResume: Stockade does not pause sandboxes");
    if (mounts && (!json_is_array(mounts) || json_array_size(mounts) > 0))
        return error_set(errp, E_INVALID, 0, "volumeMounts are not supported by Stockade");
    if (optional_field(body, "mcp"))
        return error_set(errp, E_INVALID, 0,
                         "mcp: the MCP gateway is not part of Stockade's "
                         "images");
    return 0;
}

int
e2b_parse_new_sandbox(json_t *body, bool v2, E2bNewSandbox *ret, Error **errp)
{
    E2bNewSandbox n = {.timeout_s = v2 ? E2B_DEFAULT_TIMEOUT_S : E2B_V1_DEFAULT_TIMEOUT_S};
    json_t *tpl = json_object_get(body, "templateID");
    json_t *meta = optional_field(body, "metadata");
    json_t *env = optional_field(body, "envVars") ?: optional_field(body, "envs");

    if (!json_is_object(body))
        return error_set(errp, E_INVALID, 0, "the body must be a JSON object");
    if (!is_plain_string(tpl, 1, E2B_TEMPLATE_NAME_MAX_BYTES))
        return error_set(errp, E_INVALID, 0, "templateID must name a template (1..%d bytes)",
                         E2B_TEMPLATE_NAME_MAX_BYTES);
    n.template_id = json_string_value(tpl);
    if (e2b_parse_timeout(body, false, &n.timeout_s, errp) < 0 ||
        refuse_unsupported(body, errp) < 0)
        return -1;
    if (meta && string_map(meta, "metadata", E2B_METADATA_MAX, E2B_METADATA_KEY_MAX_BYTES,
                           E2B_METADATA_VALUE_MAX_BYTES, errp) < 0)
        return -1;
    if (env &&
        string_map(env, "envVars", E2B_ENV_MAX, ENV_NAME_MAX_BYTES, ENV_VALUE_MAX_BYTES, errp) < 0)
        return -1;
    n.metadata = meta;
    n.env = env;
    *ret = n;
    return 0;
}

int
e2b_parse_timeout(json_t *body, bool required, uint64_t *ret_s, Error **errp)
{
    json_t *t = json_is_object(body) ? optional_field(body, "timeout") : NULL;
    if (!t && !required)
        return 0;
    if (!json_is_integer(t) || json_integer_value(t) < 0 ||
        json_integer_value(t) > E2B_LIFETIME_MAX_S)
        return error_set(errp, E_INVALID, 0, "timeout must be a number of seconds in 0..%d",
                         E2B_LIFETIME_MAX_S);
    *ret_s = (uint64_t) json_integer_value(t);
    return 0;
}

json_t *
e2b_render_sandbox(const E2bSandboxView *v)
{
    /* trafficAccessToken is the same token: the code interpreter SDK sends it (as
     * E2B-Traffic-Access-Token) on its context calls, which carry no X-Access-Token. */
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "sandboxID", v->id, "templateID",
                     v->template_id, "alias", v->template_id, "clientID", E2B_CLIENT_ID,
                     "envdVersion", E2B_ENVD_VERSION, "envdAccessToken", v->token,
                     "trafficAccessToken", v->token, "domain", v->domain);
}

json_t *
e2b_render_detail(const E2bSandboxView *v, bool listed)
{
    char started[E2B_TIME_BYTES], end[E2B_TIME_BYTES];
    e2b_time_format(v->started_usec, started);
    e2b_time_format(v->end_usec, end);
    /* copies: the result may go to another thread while the table keeps its own */
    json_t *meta = v->metadata ? json_deep_copy(v->metadata) : json_object();
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:s,s:s,s:s,s:o,s:[]}", "sandboxID", v->id,
                  "templateID", v->template_id, "alias", v->template_id, "clientID", E2B_CLIENT_ID,
                  "envdVersion", E2B_ENVD_VERSION, "cpuCount", (json_int_t) v->vcpus, "memoryMB",
                  (json_int_t) v->memory_mib, "diskSizeMB", (json_int_t) v->disk_mib, "startedAt",
                  started, "endAt", end, "state", "running", "metadata", meta, "volumeMounts");
    if (o && !listed) {
        json_object_set_new(o, "envdAccessToken", json_string(v->token));
        json_object_set_new(o, "domain", json_string(v->domain));
        json_object_set_new(o, "allowInternetAccess", json_false());
        json_object_set_new(o, "lifecycle",
                            json_pack("{s:s,s:b}", "onTimeout", "kill", "autoResume", 0));
    }
    return o;
}

json_t *
e2b_render_api_error(unsigned status, const char *message)
{
    return json_pack("{s:I,s:s}", "code", (json_int_t) status, "message", message);
}

/* ------------------------------------------------------------------ envd: process */

int
e2b_parse_start(json_t *req, E2bStart *ret, Error **errp)
{
    json_t *p = optional_field(req, "process"), *tag = optional_field(req, "tag");
    json_t *in = optional_field(req, "stdin"), *cwd = p ? optional_field(p, "cwd") : NULL;
    E2bStart s = {0};

    if (!json_is_object(p) || !is_plain_string(json_object_get(p, "cmd"), 1, ARG_MAX_BYTES))
        return error_set(errp, E_INVALID, 0, "process.cmd is required");
    s.cmd = json_string_value(json_object_get(p, "cmd"));
    s.args = optional_field(p, "args");
    s.envs = optional_field(p, "envs");
    if (s.args && string_list(s.args, "process.args", ARGV_MAX_COUNT - 1, ARG_MAX_BYTES, errp) < 0)
        return -1;
    if (s.envs && string_map(s.envs, "process.envs", E2B_ENV_MAX, ENV_NAME_MAX_BYTES,
                             ENV_VALUE_MAX_BYTES, errp) < 0)
        return -1;
    if ((cwd && !is_plain_string(cwd, 0, PATH_MAX_BYTES)) ||
        (tag && !is_plain_string(tag, 1, E2B_TAG_MAX_BYTES)) || (in && !json_is_boolean(in)))
        return error_set(errp, E_INVALID, 0,
                         "process.cwd, tag (1..%d bytes) or stdin (a "
                         "boolean) is malformed",
                         E2B_TAG_MAX_BYTES);
    s.cwd = cwd ? json_string_value(cwd) : NULL;
    s.tag = tag ? json_string_value(tag) : NULL;
    s.stdin_open = json_is_true(in);
    *ret = s;
    return 0;
}

int
e2b_parse_selector(json_t *req, E2bSelector *ret, Error **errp)
{
    json_t *p = optional_field(req, "process");
    json_t *pid = p ? optional_field(p, "pid") : NULL, *tag = p ? optional_field(p, "tag") : NULL;
    json_int_t n = 0;

    if (json_is_string(pid) &&
        strspn(json_string_value(pid), "0123456789") == json_string_length(pid) &&
        json_string_length(pid) <= 10)
        n = (json_int_t) strtoll(json_string_value(pid), NULL, 10);
    else if (json_is_integer(pid))
        n = json_integer_value(pid);
    if (pid && !tag && n >= 1 && n <= UINT32_MAX) {
        *ret = (E2bSelector){.pid = (uint32_t) n};
        return 0;
    }
    if (!pid && is_plain_string(tag, 1, E2B_TAG_MAX_BYTES)) {
        *ret = (E2bSelector){.tag = json_string_value(tag)};
        return 0;
    }
    return error_set(errp, E_INVALID, 0, "process must select a pid or a tag");
}

int
e2b_parse_signal(json_t *req, int *ret_signo, Error **errp)
{
    json_t *s = json_object_get(req, "signal");
    const char *name = json_string_value(s);
    json_int_t n = json_is_integer(s) ? json_integer_value(s) : -1;
    if ((name && strcmp(name, "SIGNAL_SIGKILL") == 0) || n == 9)
        *ret_signo = 9;
    else if ((name && strcmp(name, "SIGNAL_SIGTERM") == 0) || n == 15)
        *ret_signo = 15;
    else
        return error_set(errp, E_INVALID, 0, "signal must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
    return 0;
}

int
e2b_parse_input(json_t *req, uint8_t **ret, size_t *ret_len, Error **errp)
{
    json_t *in = optional_field(req, "input");
    json_t *data = in ? optional_field(in, "stdin") : NULL;
    json_t *pty = in ? optional_field(in, "pty") : NULL;
    if ((data && pty) || !(data = data ? data : pty) || !json_is_string(data) ||
        base64_decode(json_string_value(data), json_string_length(data), ret, ret_len) < 0)
        return error_set(errp, E_INVALID, 0, "input.stdin or input.pty (one) must be base64");
    return 0;
}

int
e2b_parse_pty(json_t *req, uint32_t *ret_cols, uint32_t *ret_rows, Error **errp)
{
    json_t *pty = optional_field(req, "pty");
    json_t *size = pty ? json_object_get(pty, "size") : NULL;
    json_t *cols = json_object_get(size, "cols"), *rows = json_object_get(size, "rows");

    *ret_cols = *ret_rows = 0;
    if (!pty)
        return 0;
    if (!json_is_object(pty) || !json_is_object(size) || !json_is_integer(cols) ||
        !json_is_integer(rows) || json_integer_value(cols) < 1 ||
        json_integer_value(cols) > PTY_COLS_MAX || json_integer_value(rows) < 1 ||
        json_integer_value(rows) > PTY_ROWS_MAX)
        return error_set(errp, E_INVALID, 0, "pty.size must be {cols: 1..%d, rows: 1..%d}",
                         PTY_COLS_MAX, PTY_ROWS_MAX);
    *ret_cols = (uint32_t) json_integer_value(cols);
    *ret_rows = (uint32_t) json_integer_value(rows);
    return 0;
}

static json_t *
wrap_event(const char *kind, json_t *value)
{
    return json_pack("{s:{s:o}}", "event", kind, value);
}

json_t *
e2b_event_start(uint32_t pid)
{
    return wrap_event("start", json_pack("{s:I}", "pid", (json_int_t) pid));
}

json_t *
e2b_event_data(bool is_stderr, const uint8_t *data, size_t len)
{
    _cleanup_free_ char *b64 = base64_encode(data, len);
    if (!b64)
        return NULL;
    return wrap_event("data", json_pack("{s:s}", is_stderr ? "stderr" : "stdout", b64));
}

json_t *
e2b_event_pty(const uint8_t *data, size_t len)
{
    _cleanup_free_ char *b64 = base64_encode(data, len);
    if (!b64)
        return NULL;
    return wrap_event("data", json_pack("{s:s}", "pty", b64));
}

static const char *
signal_text(int signo)
{
    static const char *const names[] = {
        [1] = "hangup",       [2] = "interrupt",    [3] = "quit",
        [6] = "aborted",      [9] = "killed",       [11] = "segmentation fault",
        [13] = "broken pipe", [14] = "alarm clock", [15] = "terminated"};
    return signo > 0 && (size_t) signo < ELEMENTSOF(names) ? names[signo] : NULL;
}

json_t *
e2b_event_end(int exit_code, int signo, const char *error)
{
    char status[64];
    if (exit_code >= 0)
        snprintf(status, sizeof(status), "exit status %d", exit_code);
    else if (signal_text(signo))
        snprintf(status, sizeof(status), "signal: %s", signal_text(signo));
    else
        snprintf(status, sizeof(status), "signal %d", signo);
    json_t *end = json_pack("{s:i,s:b,s:s}", "exitCode", exit_code >= 0 ? exit_code : -1, "exited",
                            exit_code >= 0, "status", error ? "error" : status);
    if (end && error)
        json_object_set_new(end, "error", e2b_json_string_lossy(error, strlen(error)));
    return wrap_event("end", end);
}

json_t *
e2b_event_keepalive(bool process)
{
    return process ? wrap_event("keepalive", json_object()) : json_pack("{s:{}}", "keepalive");
}

json_t *
e2b_start_config(const E2bStart *st)
{
    json_t *args = st->args ? json_deep_copy(st->args) : json_array();
    json_t *envs = st->envs ? json_deep_copy(st->envs) : json_object();
    json_t *o = json_pack("{s:s,s:o,s:o}", "cmd", st->cmd, "args", args, "envs", envs);
    if (o && st->cwd && json_object_set_new(o, "cwd", json_string(st->cwd)) < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *
e2b_process_info(uint32_t pid, const char *tag, json_t *config)
{
    json_t *o = json_pack("{s:o,s:I}", "config", json_deep_copy(config), "pid", (json_int_t) pid);
    if (o && tag)
        json_object_set_new(o, "tag", json_string(tag));
    return o;
}

json_t *
e2b_end_stream(bool ok, ConnectCode code, const char *message)
{
    if (ok)
        return json_object();
    return json_pack("{s:o}", "error", e2b_render_rpc_error(code, message));
}

json_t *
e2b_render_rpc_error(ConnectCode code, const char *message)
{
    return json_pack("{s:s,s:o}", "code", connect_code_name(code), "message",
                     e2b_json_string_lossy(message, strlen(message)));
}

/* ------------------------------------------------------------------ envd: filesystem */

static void
permissions_text(const E2bEntry *en, char out[11])
{
    static const char rwx[] = "rwxrwxrwx";
    E2bFileType type = en->type;
    uint32_t mode = en->link ? en->link_mode : en->mode;
    out[0] = en->link ? 'L' : type == E2B_FILE_DIR ? 'd' : type == E2B_FILE_SYMLINK ? 'l' : '-';
    for (int i = 0; i < 9; i++)
        out[1 + i] = mode & (0400u >> i) ? rwx[i] : '-';
    out[10] = '\0';
}

json_t *
e2b_render_entry(const E2bEntry *en, const char *path)
{
    static const char *const types[] = {[E2B_FILE_OTHER] = "FILE_TYPE_UNSPECIFIED",
                                        [E2B_FILE_FILE] = "FILE_TYPE_FILE",
                                        [E2B_FILE_DIR] = "FILE_TYPE_DIRECTORY",
                                        [E2B_FILE_SYMLINK] = "FILE_TYPE_SYMLINK"};
    char size[24], perms[11], mtime[E2B_TIME_BYTES];
    snprintf(size, sizeof(size), "%" PRIu64, en->size);
    permissions_text(en, perms);
    e2b_time_format((int64_t) MIN(en->mtime_ns / 1000, (uint64_t) INT64_MAX), mtime);
    json_t *o = json_pack("{s:o,s:s,s:o,s:s,s:I,s:s,s:s,s:s,s:s}", "name",
                          e2b_json_string_lossy(en->name, strlen(en->name)), "type",
                          types[en->type <= E2B_FILE_SYMLINK ? en->type : E2B_FILE_OTHER], "path",
                          e2b_json_string_lossy(path, strlen(path)), "size", size, "mode",
                          (json_int_t) (en->mode & 07777), "permissions", perms, "owner", "user",
                          "group", "user", "modifiedTime", mtime);
    if (o && (en->link || en->type == E2B_FILE_SYMLINK) && en->symlink_target)
        json_object_set_new(o, "symlinkTarget",
                            e2b_json_string_lossy(en->symlink_target, strlen(en->symlink_target)));
    return o;
}

json_t *
e2b_render_fs_event(const char *name, bool removed, json_t *entry)
{
    json_t *ev = json_pack("{s:o,s:s}", "name", e2b_json_string_lossy(name, strlen(name)), "type",
                           removed ? "EVENT_TYPE_REMOVE" : "EVENT_TYPE_WRITE");
    if (ev && entry)
        json_object_set_new(ev, "entry", entry);
    else
        json_decref(entry);
    return json_pack("{s:o}", "filesystem", ev);
}

json_t *
e2b_render_write_info(const char *name, const char *path)
{
    return json_pack("{s:o,s:s,s:o}", "name", e2b_json_string_lossy(name, strlen(name)), "type",
                     "file", "path", e2b_json_string_lossy(path, strlen(path)));
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if the bytes there are not one. */
static size_t
utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || n > avail || (n == 2 && c < 0xc2))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0)))
        return 0; /* overlong, or a UTF-16 surrogate */
    if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || c > 0xf4 || (c == 0xf4 && s[1] >= 0x90)))
        return 0;
    return n;
}

json_t *
e2b_json_string_lossy(const char *s, size_t len)
{
    json_t *ok = json_stringn(s, len);
    if (ok)
        return ok;
    _cleanup_free_ char *out = malloc(len * 3 + 1);
    size_t o = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq((const unsigned char *) s + i, len - i);
        if (n == 0 || (n == 1 && s[i] == '\0')) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
            continue;
        }
        memcpy(out + o, s + i, n);
        o += n;
        i += n;
    }
    return json_stringn(out, o);
}

/* ------------------------------------------------------------------ code interpreter */

int
e2b_code_context_parse(const char *s, uint32_t *ret)
{
    size_t n = s ? strlen(s) : 0;
    return n > 0 && n <= E2B_CODE_CONTEXT_ID_MAX_BYTES && s[0] != '0' && ascii_parse_u32(s, n, ret)
               ? 0
               : -1;
}

/* Only the keys in allowed[] (the SDK's), so a typo or a newer SDK's field is a clear 400
 * rather than silently ignored. */
static int
only_keys(json_t *body, const char *const *allowed, size_t n, Error **errp)
{
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v)
    {
        size_t i = 0;
        while (i < n && strcmp(k, allowed[i]) != 0)
            i++;
        if (i == n)
            return error_set(errp, E_INVALID, 0, "unknown field '%.64s'", k);
    }
    return 0;
}

/* E2B's server reads an absent or empty language (and null) as python. */
static int
code_language(json_t *body, CodeLanguage *ret, Error **errp)
{
    json_t *lang = optional_field(body, "language");
    if (!lang || (json_is_string(lang) && json_string_length(lang) == 0))
        return *ret = CODE_LANG_PYTHON, 0;
    if (!json_is_string(lang))
        return error_set(errp, E_INVALID, 0, "language must be a string: one of %s",
                         CODE_LANGUAGES_SERVED);
    return code_language_parse(json_string_value(lang), json_string_length(lang), ret, errp);
}

int
e2b_code_parse_execute(json_t *body, size_t code_max, E2bExecute *ret, Error **errp)
{
    static const char *const keys[] = {"code", "context_id", "language", "env_vars"};
    E2bExecute x = {0};
    json_t *code = json_object_get(body, "code"), *ctx = optional_field(body, "context_id");
    json_t *env = optional_field(body, "env_vars");

    if (!json_is_object(body))
        return error_set(errp, E_INVALID, 0, "the body must be a JSON object");
    if (only_keys(body, keys, ELEMENTSOF(keys), errp) < 0 || code_language(body, &x.lang, errp) < 0)
        return -1;
    if (!is_plain_string(code, 0, code_max))
        return error_set(errp, E_INVALID, 0, "code must be a string of at most %zu bytes",
                         code_max);
    if (ctx && optional_field(body, "language"))
        return error_set(errp, E_INVALID, 0, "give context_id or language, not both");
    if (ctx &&
        (!json_is_string(ctx) || e2b_code_context_parse(json_string_value(ctx), &x.context) < 0))
        return error_set(errp, E_INVALID, 0, "context_id must be a context's id");
    if (env &&
        string_map(env, "env_vars", E2B_ENV_MAX, ENV_NAME_MAX_BYTES, ENV_VALUE_MAX_BYTES, errp) < 0)
        return -1;
    x.code = json_string_value(code);
    x.code_len = json_string_length(code);
    x.env = env;
    *ret = x;
    return 0;
}

int
e2b_code_parse_context_new(json_t *body, CodeLanguage *ret_lang, const char **ret_cwd, Error **errp)
{
    static const char *const keys[] = {"language", "cwd"};
    json_t *cwd = json_is_object(body) ? optional_field(body, "cwd") : NULL;
    CodeLanguage lang;

    if (!json_is_object(body))
        return error_set(errp, E_INVALID, 0, "the body must be a JSON object");
    if (only_keys(body, keys, ELEMENTSOF(keys), errp) < 0 || code_language(body, &lang, errp) < 0)
        return -1;
    if (cwd && !is_plain_string(cwd, 1, PATH_MAX_BYTES))
        return error_set(errp, E_INVALID, 0, "cwd must be a path of 1..%d bytes", PATH_MAX_BYTES);
    *ret_lang = lang;
    *ret_cwd = cwd ? json_string_value(cwd) : NULL;
    return 0;
}

json_t *
e2b_code_render_context(uint32_t id, CodeLanguage lang, const char *cwd)
{
    char s[16];
    snprintf(s, sizeof(s), "%" PRIu32, id);
    return json_pack("{s:s,s:s,s:s}", "id", s, "language", code_language_name(lang), "cwd",
                     cwd ? cwd : E2B_HOME_ALIAS);
}

/* A result's formats by the names the SDK reads (Result in @e2b/code-interpreter); formats
 * without a name there pass under their MIME type and land in the SDK's `extra`. */
static const struct {
    const char *mime, *name;
} result_formats[] = {
    {"text/plain", "text"},        {"text/html", "html"},
    {"text/markdown", "markdown"}, {"text/latex", "latex"},
    {"image/png", "png"},          {"image/svg+xml", "svg"},
    {"image/jpeg", "jpeg"},        {"application/json", "json"},
    {"application/pdf", "pdf"},    {"application/javascript", "javascript"},
};

/* E2B's server gives a string result's text without its quotes ('abc' or "abc" -> abc), as
 * its Result model does (template/server/api/models/result.py): the same rule, byte for
 * byte, so the SDK's tests read what they read from E2B. The native API keeps repr(). */
static json_t *
text_as_e2b(json_t *v)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (!s || n == 0 || !((s[0] == '\'' && s[n - 1] == '\'') || (s[0] == '"' && s[n - 1] == '"')))
        return json_incref(v);
    return n < 2 ? json_string("") : json_stringn(s + 1, n - 2);
}

static json_t *
code_result(json_t *attrs)
{
    json_t *data = json_object_get(attrs, "data"), *v;
    json_t *o = json_pack("{s:s,s:b}", "type", "result", "is_main_result",
                          json_is_true(json_object_get(attrs, "main")));
    const char *mime;

    json_object_foreach(data, mime, v)
    {
        const char *name = mime;
        for (size_t i = 0; i < ELEMENTSOF(result_formats); i++)
            if (strcmp(mime, result_formats[i].mime) == 0)
                name = result_formats[i].name;
        /* opaque: PNG and HTML are never looked into */
        json_object_set_new(o, name,
                            strcmp(mime, "text/plain") == 0 ? text_as_e2b(v) : json_incref(v));
    }
    return o;
}

/* ts_usec in nanoseconds, within what an int64 holds (a stored time is never negative). */
static json_int_t
code_timestamp_nsec(int64_t ts_usec)
{
    if (ts_usec < 0)
        return 0;
    return ts_usec > INT64_MAX / 1000 ? INT64_MAX / 1000 * 1000 : (json_int_t) ts_usec * 1000;
}

json_t *
e2b_code_event_message(const char *type, const char *data, size_t len, json_t *attrs,
                       int64_t ts_usec, bool *ret_last)
{
    *ret_last = false;
    if (strcmp(type, "code.stdout") == 0 || strcmp(type, "code.stderr") == 0)
        return json_pack("{s:s,s:o,s:I}", "type", type + 5, "text",
                         e2b_json_string_lossy(data ? data : "", data ? len : 0), "timestamp",
                         code_timestamp_nsec(ts_usec));
    if (strcmp(type, "code.result") == 0)
        return code_result(attrs);
    if (strcmp(type, "code.error") == 0) {
        const char *name = json_string_value(json_object_get(attrs, "name"));
        const char *value = json_string_value(json_object_get(attrs, "value"));
        const char *tb = json_string_value(json_object_get(attrs, "traceback"));
        return json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", name ? name : "Error",
                         "value", value ? value : "", "traceback", tb ? tb : "");
    }
    if (strcmp(type, "code.done") == 0) {
        json_t *n = json_object_get(attrs, "execution_count");
        *ret_last = true;
        return json_is_integer(n) ? json_pack("{s:s,s:I}", "type", "number_of_executions",
                                              "execution_count", json_integer_value(n))
                                  : json_pack("{s:s}", "type", "end_of_execution");
    }
    return NULL;
}
