/* Fuzz target: the envd face's Connect envelope decoder (hostd/e2b/connect.c) and the JSON
 * mapping behind it (e2b_json.c), on arbitrary bytes as a streaming request body. Invariants:
 * the decoder never points outside the input or past its caps, feeding the same bytes in
 * odd-sized pieces gives the same answer once they are all in (NEED_MORE before), a decoded
 * message's JSON is parsed by every request parser without crashing, and whatever they accept
 * stays within its limits (the code interpreter's bodies included). */
#include <stdlib.h>
#include <strings.h>
#include <string.h>

#include "connect.h"
#include "e2b_json.h"
#include "e2b_wire.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_peek_in_pieces(const uint8_t *data, size_t size)
{
    ConnectEnvelope whole, part;
    ConnectStatus st = connect_envelope_peek(data, size, CONNECT_REQUEST_MAX_BYTES, &whole);
    if (st == CONNECT_OK) {
        CHECK(whole.payload == data + CONNECT_ENVELOPE_HDR_BYTES);
        CHECK(whole.len <= CONNECT_REQUEST_MAX_BYTES && whole.consumed <= size);
        CHECK(whole.consumed == CONNECT_ENVELOPE_HDR_BYTES + (size_t) whole.len);
    }
    size_t step = size ? (size_t) data[0] % 7 + 1 : 1;
    for (size_t avail = 0; avail < size; avail += step) {
        ConnectStatus p = connect_envelope_peek(data, avail, CONNECT_REQUEST_MAX_BYTES, &part);
        if (st == CONNECT_OK)
            CHECK(avail >= whole.consumed ? p == CONNECT_OK && part.len == whole.len
                                          : p == CONNECT_NEED_MORE);
        if (st == CONNECT_BAD)
            CHECK(p == (avail >= CONNECT_ENVELOPE_HDR_BYTES ? CONNECT_BAD : CONNECT_NEED_MORE));
    }
    if (st == CONNECT_OK) { /* the header round-trips */
        uint8_t hdr[CONNECT_ENVELOPE_HDR_BYTES];
        connect_envelope_header(whole.flags, whole.len, hdr);
        CHECK(memcmp(hdr, data, sizeof(hdr)) == 0);
    }
}

/* The code interpreter's bodies (port 49999) and the NDJSON message of an event with these
 * attrs: whatever is accepted stays within its caps, a message is always a typed object. */
static void
check_code_parsers(json_t *msg)
{
    E2bExecute x;
    const char *cwd;
    CodeLanguage lang = CODE_LANG_COUNT;
    uint32_t id;
    bool last;
    static const char *const types[] = {"code.stdout", "code.result", "code.error", "code.done"};

    if (e2b_code_parse_execute(msg, 4096, &x, NULL) == 0) {
        CHECK(x.code && x.code_len <= 4096 && strlen(x.code) == x.code_len);
        CHECK(x.lang < CODE_LANG_COUNT);
        CHECK(!x.env || json_object_size(x.env) <= E2B_ENV_MAX);
    }
    if (e2b_code_parse_context_new(msg, &lang, &cwd, NULL) == 0)
        CHECK((!cwd || (cwd[0] && strlen(cwd) <= PATH_MAX_BYTES)) && lang < CODE_LANG_COUNT);
    json_t *ctx = json_object_get(msg, "context_id");
    if (json_is_string(ctx) && e2b_code_context_parse(json_string_value(ctx), &id) == 0)
        CHECK(id > 0 && json_string_length(ctx) <= E2B_CODE_CONTEXT_ID_MAX_BYTES);
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        json_t *m = e2b_code_event_message(types[i], "t", 1, msg, INT64_MAX - 1, &last);
        CHECK(json_is_string(json_object_get(m, "type")));
        CHECK(last == (i == 3));
        json_decref(m);
    }
}

static void
check_parsers(json_t *msg)
{
    Error *e = NULL;
    E2bStart st;
    E2bSelector sel;
    E2bNewSandbox n;
    uint64_t t;
    int signo;
    uint8_t *in = NULL;
    size_t len;

    if (e2b_parse_start(msg, &st, &e) == 0) {
        char **argv;
        size_t argc;
        CHECK(st.cmd && st.cmd[0]);
        if (e2b_command_argv(st.cmd, st.args, &argv, &argc, NULL) == 0) {
            CHECK(argc >= 1 && argc <= ARGV_MAX_COUNT && argv[argc] == NULL);
            e2b_argv_free(argv, argc);
        }
        CHECK(!st.envs || json_object_size(st.envs) <= E2B_ENV_MAX);
    }
    if (e2b_parse_selector(msg, &sel, NULL) == 0)
        CHECK(sel.tag ? sel.pid == 0 && strlen(sel.tag) <= E2B_TAG_MAX_BYTES : sel.pid > 0);
    if (e2b_parse_signal(msg, &signo, NULL) == 0)
        CHECK(signo == 9 || signo == 15);
    if (e2b_parse_input(msg, &in, &len, NULL) == 0)
        free(in);
    if (e2b_parse_new_sandbox(msg, true, &n, NULL) == 0)
        CHECK(n.template_id[0] && n.timeout_s <= 86400);
    if (e2b_parse_timeout(msg, true, &t, NULL) == 0)
        CHECK(t <= 86400);
    check_code_parsers(msg);
    json_t *path = json_object_get(msg, "path");
    E2bPath p;
    const char *why;
    if (json_is_string(path) && e2b_path_map(json_string_value(path), true, &p, &why) == 0)
        CHECK(strlen(p.rel) <= PATH_MAX_BYTES && !strstr(p.rel, "//") && p.rel[0] != '/');
    char cwd[PATH_MAX_BYTES + 16];
    if (json_is_string(path) &&
        e2b_process_cwd_map(json_string_value(path), cwd, sizeof(cwd), &why) == 0)
        CHECK(strncmp(cwd, E2B_HOME_ALIAS, strlen(E2B_HOME_ALIAS)) == 0 && !strstr(cwd, "/../"));
    /* an Authorization value: root only for a Basic credential naming exactly root */
    json_t *auth = json_object_get(msg, "authorization");
    if (json_is_string(auth) && e2b_user_is_root(json_string_value(auth), NULL))
        CHECK(json_string_length(auth) <= E2B_BASIC_AUTH_MAX_BYTES &&
              strncasecmp(json_string_value(auth), "Basic ", 6) == 0);
    error_free(e);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *payload;
    size_t len;
    const char *why = NULL;

    check_peek_in_pieces(data, size);
    if (connect_stream_request(data, size, &payload, &len, &why) < 0) {
        CHECK(why && why[0]);
        return 0;
    }
    CHECK(payload == data + CONNECT_ENVELOPE_HDR_BYTES && len <= size - CONNECT_ENVELOPE_HDR_BYTES);
    json_t *msg = json_loadb((const char *) payload, len, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(msg))
        check_parsers(msg);
    json_decref(msg);
    return 0;
}
