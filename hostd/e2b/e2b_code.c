/* The code interpreter face (@e2b/code-interpreter): what E2B runs on port 49999 of its
 * code-interpreter sandboxes, served on the envd listener for requests that say
 * "E2b-Sandbox-Port: 49999" (or a Host 49999-<id>.<domain>), on top of the session's code
 * contexts (sessions_code_*):
 *   POST   /execute                {code, context_id?, language?, env_vars?} -> NDJSON lines
 *   POST   /contexts               {language?, cwd?} -> {id, language, cwd}
 *   GET    /contexts               -> [{id, language, cwd}], python's and javascript's default
 *                                      contexts made first (E2B's server starts both); E2B's
 *                                      default contexts run in /home/user, as E2B's do
 *   DELETE /contexts/{id}          -> 204
 *   POST   /contexts/{id}/restart  -> 204
 * Credentials as envd's (e2b_envd.c): the sandbox's token as X-Access-Token (runCode) or
 * E2B-Traffic-Access-Token (the context calls send only that one), checked before a body is
 * read. Bodies are parsed strictly here (e2b_json.c), on the connection thread; the work is
 * posted to the loop; /execute then streams its run's events (e2b_stream.c). Errors are
 * {"code": status, "message"}: the SDK turns 502 into TimeoutError ("sandbox timeout"), 404
 * into NotFoundError, anything else into SandboxError with the status. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "code_wire.h"
#include "e2b_internal.h"
#include "http_route.h"
#include "http_url.h"
#include "loop.h"

typedef enum {
    CODE_EXECUTE,
    CODE_CTX_NEW,
    CODE_CTX_LIST,
    CODE_CTX_DELETE,
    CODE_CTX_RESTART
} CodeOp;

typedef struct CodeCall {
    E2bCall c;
    E2bEnvdAuth auth;
    CodeOp op;
    json_t *body;      /* the parsed request (x and cwd_shown borrow from it) */
    E2bExecute x;      /* CODE_EXECUTE */
    uint32_t context;  /* CODE_CTX_DELETE, CODE_CTX_RESTART */
    CodeLanguage lang; /* CODE_CTX_NEW */
    const char *cwd_shown;
    char cwd[PATH_MAX_BYTES + 16]; /* CODE_CTX_NEW: the workspace path ("" for the default) */
    /* out */
    char session_id[E2B_SESSION_ID_BYTES];
    SessionsCodeRun run;
    unsigned ahead;
    json_t *answer;
} CodeCall;

static void
code_call_free(E2bCall *c)
{
    CodeCall *cc = (CodeCall *) c;
    e2b_envd_auth_clear(&cc->auth);
    json_decref(cc->body);
    json_decref(cc->answer);
}

/* ------------------------------------------------------------------ on the loop */

/* How many runs of context wait in it (its own included), from sessions_code_contexts(). */
static unsigned
context_queued(json_t *contexts, uint32_t context)
{
    size_t i;
    json_t *c;
    json_array_foreach(contexts, i, c)
    {
        if (json_integer_value(json_object_get(c, "context")) == (json_int_t) context)
            return (unsigned) json_integer_value(json_object_get(c, "queued"));
    }
    return 0;
}

/* The native cwd as E2B shows it: /workspace is /home/user there (README). */
static json_t *
render_contexts(json_t *native)
{
    json_t *out = json_array(), *c;
    size_t i, wl = strlen(E2B_WORKSPACE);
    char shown[PATH_MAX_BYTES + 16];

    json_array_foreach(native, i, c)
    {
        const char *cwd = json_string_value(json_object_get(c, "cwd"));
        if (cwd && strncmp(cwd, E2B_WORKSPACE, wl) == 0 && (cwd[wl] == '/' || !cwd[wl]))
            snprintf(shown, sizeof(shown), "%s%s", E2B_HOME_ALIAS, cwd + wl);
        else
            snprintf(shown, sizeof(shown), "%s", cwd ? cwd : E2B_HOME_ALIAS);
        CodeLanguage lang = CODE_LANG_PYTHON;
        json_t *name = json_object_get(c, "language");
        (void) code_language_parse(json_string_value(name), json_string_length(name), &lang,
                                   NULL); /* our own name of it */
        json_array_append_new(
            out, e2b_code_render_context(
                     (uint32_t) json_integer_value(json_object_get(c, "context")), lang, shown));
    }
    return out;
}

static int
execute_on_loop(CodeCall *cc, Sessions *m, const char *sid, Error **errp)
{
    json_t *contexts = NULL;
    /* a run by language: E2B's default context of it, made in E2B's home if it is not yet */
    if (cc->x.context == 0 &&
        sessions_code_default_contexts(m, NULL, sid, &cc->x.lang, 1, E2B_HOME_ALIAS, errp) < 0)
        return -1;
    if (sessions_code_run(m, NULL, sid, cc->x.context, cc->x.lang, cc->x.code, cc->x.code_len, 0,
                          cc->x.env, &cc->run, errp) < 0)
        return -1;
    /* the runs ahead of this one: it is the cell being run once they are done */
    if (sessions_code_contexts(m, NULL, sid, &contexts, NULL) == 0) {
        unsigned q = context_queued(contexts, cc->run.context);
        cc->ahead = q ? q - 1 : 0;
        json_decref(contexts);
    }
    return 0;
}

/* What E2B's server starts with a sandbox (template/server/main.py) and so lists first. */
static const CodeLanguage default_langs[] = {CODE_LANG_PYTHON, CODE_LANG_JAVASCRIPT};

static void
code_on_loop(E2bCall *c)
{
    CodeCall *cc = (CodeCall *) c;
    _cleanup_error_ Error *err = NULL;
    E2bSandbox *sb = e2b_envd_sandbox(c->e, &cc->auth, &err);
    Sessions *m = c->e->d.sessions;
    uint32_t id;
    json_t *native;

    if (!sb) {
        e2b_call_done(c, err);
        return;
    }
    memcpy(cc->session_id, sb->session_id, sizeof(cc->session_id));
    switch (cc->op) {
    case CODE_EXECUTE:
        (void) execute_on_loop(cc, m, sb->session_id, &err);
        break;
    case CODE_CTX_NEW:
        if (sessions_code_context_new(m, NULL, sb->session_id, cc->lang,
                                      cc->cwd[0] ? cc->cwd : NULL, NULL, 0, &id, &err) == 0)
            cc->answer = e2b_code_render_context(id, cc->lang, cc->cwd_shown);
        break;
    case CODE_CTX_LIST:
        if (sessions_code_default_contexts(m, NULL, sb->session_id, default_langs,
                                           ELEMENTSOF(default_langs), E2B_HOME_ALIAS, &err) == 0 &&
            sessions_code_contexts(m, NULL, sb->session_id, &native, &err) == 0) {
            cc->answer = render_contexts(native);
            json_decref(native);
        }
        break;
    case CODE_CTX_DELETE:
        (void) sessions_code_context_delete(m, NULL, sb->session_id, cc->context, &err);
        break;
    case CODE_CTX_RESTART:
        (void) sessions_code_context_restart(m, NULL, sb->session_id, cc->context, &err);
        break;
    }
    e2b_call_done(c, err);
}

static void
code_reply(E2bCall *c, HttpRequest *req, const Error *err)
{
    CodeCall *cc = (CodeCall *) c;
    if (err)
        e2b_files_error(req, err);
    else if (cc->op == CODE_EXECUTE)
        e2b_code_stream(c->e, req, cc->session_id, cc->run.context, cc->run.run, cc->run.after_seq,
                        cc->ahead);
    else if (cc->answer)
        http_respond_json(req, cc->op == CODE_CTX_NEW ? 201 : 200, TAKE_PTR(cc->answer));
    else
        http_respond_bytes(req, 204, NULL, NULL, 0);
}

typedef struct Interrupt {
    E2b *e;
    char session_id[E2B_SESSION_ID_BYTES];
    uint32_t context;
} Interrupt;

static void
interrupt_on_loop(void *userdata)
{
    Interrupt *in = userdata;
    _cleanup_error_ Error *err = NULL;
    /* a session that ended meanwhile has nothing left to interrupt */
    (void) sessions_code_interrupt(in->e->d.sessions, NULL, in->session_id, in->context, &err);
    free(in);
}

void
e2b_code_interrupt(E2b *e, const char *session_id, uint32_t context)
{
    Interrupt *in = calloc(1, sizeof(*in));
    if (!in)
        return;
    in->e = e;
    snprintf(in->session_id, sizeof(in->session_id), "%s", session_id);
    in->context = context;
    if (loop_post(e->d.loop, interrupt_on_loop, in) < 0)
        free(in);
}

/* ------------------------------------------------------------------ the requests */

/* The body as a JSON object (an empty body: {}), within E2B_CODE_MAX_BODY_BYTES. */
static json_t *
code_body(HttpRequest *req, Error **errp)
{
    size_t len;
    const uint8_t *body = http_body(req, &len);

    return http_json_object(body, len, E2B_CODE_MAX_BODY_BYTES, "the body", errp);
}

static int
code_parse(CodeCall *cc, HttpRequest *req, Error **errp)
{
    const char *why;

    if (cc->op != CODE_EXECUTE && cc->op != CODE_CTX_NEW)
        return 0;
    if (!(cc->body = code_body(req, errp)))
        return -1;
    if (cc->op == CODE_EXECUTE)
        return e2b_code_parse_execute(cc->body, CODE_SOURCE_MAX_BYTES, &cc->x, errp);
    if (e2b_code_parse_context_new(cc->body, &cc->lang, &cc->cwd_shown, errp) < 0)
        return -1;
    if (e2b_cwd_map(cc->cwd_shown, cc->cwd, sizeof(cc->cwd), &why) < 0)
        return error_set(errp, E_INVALID, 0, "cwd: %s", why);
    return 0;
}

/* The routes (http_route.h): "{id}" is a context id, checked by code_route(). */
typedef struct {
    HttpRoute r;
    CodeOp op;
} CodeRoute;

static const CodeRoute code_routes[] = {
    {{"POST", {"execute"}}, CODE_EXECUTE},
    {{"POST", {"contexts"}}, CODE_CTX_NEW},
    {{"GET", {"contexts"}}, CODE_CTX_LIST},
    {{"DELETE", {"contexts", "{id}"}}, CODE_CTX_DELETE},
    {{"POST", {"contexts", "{id}", "restart"}}, CODE_CTX_RESTART},
};

/* The operation a request names; "/contexts/{id}[/restart]" sets *ret_context. -1: no such
 * endpoint (a path without the method too: E2B has no 405), or no such context id. */
static int
code_route(HttpRequest *req, CodeOp *ret_op, uint32_t *ret_context)
{
    char **seg = NULL;
    size_t n_seg = 0;
    HttpRouteMatch m;
    int r = -1;

    if (http_path_segments(req, &seg, &n_seg, NULL) < 0)
        return -1;
    ssize_t i = HTTP_ROUTE_FIND(code_routes, http_method(req), seg, n_seg, &m);
    if (m == HTTP_ROUTE_FOUND && (n_seg < 2 || e2b_code_context_parse(seg[1], ret_context) == 0)) {
        *ret_op = code_routes[i].op;
        r = 0;
    }
    http_strv_free(seg);
    return r;
}

void
e2b_code_handle(E2b *e, HttpRequest *req, E2bEnvdAuth *auth)
{
    _cleanup_error_ Error *err = NULL;
    CodeCall *cc = e2b_call_new(sizeof(*cc), code_call_free);

    if (!cc) {
        http_respond_json(req, 500, e2b_render_api_error(500, "out of memory"));
        return;
    }
    if (code_route(req, &cc->op, &cc->context) < 0) {
        e2b_call_unref(&cc->c);
        http_respond_json(req, 404,
                          e2b_render_api_error(404, "no such code interpreter endpoint or "
                                                    "context (Stockade serves /execute and "
                                                    "/contexts)"));
        return;
    }
    if (code_parse(cc, req, &err) < 0) {
        e2b_call_unref(&cc->c);
        e2b_files_error(req, err);
        return;
    }
    cc->auth = *auth;
    *auth = (E2bEnvdAuth){0}; /* the call owns the strings now */
    e2b_post(e, req, &cc->c, code_on_loop, code_reply, E2B_CALL_TIMEOUT_USEC);
}
