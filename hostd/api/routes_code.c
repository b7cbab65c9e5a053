/* Stateful code routes (issue 18): code runs and their contexts on a running session.
 *   POST   /v1/sessions/{id}/code                {code, context? | language?, timeout_ms?, env?}
 *   GET    /v1/sessions/{id}/contexts
 *   POST   /v1/sessions/{id}/contexts                    {language?, cwd?, env?}
 *   DELETE /v1/sessions/{id}/contexts/{ctx}
 *   POST   /v1/sessions/{id}/contexts/{ctx}/restart | interrupt
 * Results arrive as code.* events in the session's stream (sessions.h); a run answers at once
 * with its ids and the seq to follow from. Bodies are checked here, on the connection thread;
 * the work happens on the loop. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "code_wire.h"

typedef enum { CTX_DELETE, CTX_RESTART, CTX_INTERRUPT } CtxAction;

typedef struct CodeReq {
    uint32_t context;
    CodeLanguage lang;
    CtxAction action;
    EnvPair *env;
    size_t n_env;
} CodeReq;

static void
code_req_free(CodeReq *r)
{
    if (r) {
        api_free_env(r->env, r->n_env);
        free(r);
    }
}

static void
run_on_loop(ApiCtx *c)
{
    CodeReq *r = c->extra;
    _cleanup_error_ Error *err = NULL;
    json_t *code = json_object_get(c->body, "code"), *t = json_object_get(c->body, "timeout_ms");
    SessionsCodeRun run;
    int rc = sessions_code_run(c->api->d.sessions, c->admin ? NULL : c->tenant, c->seg[2],
                               r->context, r->lang, json_string_value(code),
                               json_string_length(code), t ? (uint64_t) json_integer_value(t) : 0,
                               json_object_get(c->body, "env"), &run, &err);
    code_req_free(r);
    if (rc < 0)
        api_reply_error(c, err);
    else
        api_reply_json(c, 202,
                       json_pack("{s:I,s:I,s:I,s:I}", "context", (json_int_t) run.context, "run",
                                 (json_int_t) run.run, "exec_id", (json_int_t) run.exec_id, "after",
                                 (json_int_t) run.after_seq));
}

/* context (optional, a number) or language, env (as an exec's), the rest checked by
 * sessions. */
static int
parse_code_body(ApiCtx *c, CodeReq *r, Error **errp)
{
    return api_json_code(c->body, &r->context, &r->lang, &r->env, &r->n_env, errp);
}

/* The session id, the body and parse(): then on_loop has c->extra (a CodeReq); else the error
 * answers. */
static void
code_route(ApiCtx *c, int (*parse)(ApiCtx *, CodeReq *, Error **), void (*on_loop)(ApiCtx *))
{
    _cleanup_error_ Error *err = NULL;
    CodeReq *r = calloc(1, sizeof(*r));

    if (!api_session_id(c, 2)) {
        free(r);
        return;
    }
    if (!r || api_parse_body(c, &err) < 0 || parse(c, r, &err) < 0) {
        code_req_free(r);
        if (!err)
            error_set(&err, E_INTERNAL, ENOMEM, "request");
        api_reply_error(c, err);
        return;
    }
    c->extra = r;
    api_on_loop(c, on_loop);
}

void
route_code_run(ApiCtx *c)
{
    code_route(c, parse_code_body, run_on_loop);
}

static void
context_new_on_loop(ApiCtx *c)
{
    CodeReq *r = c->extra;
    _cleanup_error_ Error *err = NULL;
    json_t *cwd = json_object_get(c->body, "cwd");
    uint32_t id;
    int rc =
        sessions_code_context_new(c->api->d.sessions, c->admin ? NULL : c->tenant, c->seg[2],
                                  r->lang, json_string_value(cwd), r->env, r->n_env, &id, &err);
    code_req_free(r);
    if (rc < 0)
        api_reply_error(c, err);
    else
        api_reply_json(c, 201, json_pack("{s:I}", "context", (json_int_t) id));
}

static int
parse_context_body(ApiCtx *c, CodeReq *r, Error **errp)
{
    json_t *cwd = json_object_get(c->body, "cwd");
    if (api_json_env(json_object_get(c->body, "env"), &r->env, &r->n_env, errp) < 0)
        return -1;
    if (cwd && !json_is_string(cwd))
        return error_set(errp, E_INVALID, 0, "cwd must be a string");
    return api_json_language(json_object_get(c->body, "language"), &r->lang, errp);
}

void
route_context_create(ApiCtx *c)
{
    code_route(c, parse_context_body, context_new_on_loop);
}

static void
context_list_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    json_t *a;
    if (sessions_code_contexts(c->api->d.sessions, c->admin ? NULL : c->tenant, c->seg[2], &a,
                               &err) < 0)
        api_reply_error(c, err);
    else
        api_reply_json(c, 200, json_pack("{s:o}", "contexts", a));
}

void
route_context_list(ApiCtx *c)
{
    if (api_session_id(c, 2))
        api_on_loop(c, context_list_on_loop);
}

static void
context_action_on_loop(ApiCtx *c)
{
    CodeReq *r = c->extra;
    _cleanup_error_ Error *err = NULL;
    Sessions *s = c->api->d.sessions;
    const char *tenant = c->admin ? NULL : c->tenant;
    int rc = r->action == CTX_DELETE
                 ? sessions_code_context_delete(s, tenant, c->seg[2], r->context, &err)
             : r->action == CTX_RESTART
                 ? sessions_code_context_restart(s, tenant, c->seg[2], r->context, &err)
                 : sessions_code_interrupt(s, tenant, c->seg[2], r->context, &err);
    uint32_t id = r->context;
    code_req_free(r);
    if (rc < 0)
        api_reply_error(c, err);
    else
        api_reply_json(c, 200, json_pack("{s:I}", "context", (json_int_t) id));
}

static void
context_action(ApiCtx *c, CtxAction action)
{
    CodeReq *r;
    if (!api_session_id(c, 2))
        return;
    if (!(r = calloc(1, sizeof(*r))) || api_id_u32(c->seg[4], &r->context) < 0) {
        free(r);
        api_reply_errorf(c, E_NOT_FOUND, "no such code context");
        return;
    }
    r->action = action;
    c->extra = r;
    api_on_loop(c, context_action_on_loop);
}

void
route_context_delete(ApiCtx *c)
{
    context_action(c, CTX_DELETE);
}

void
route_context_restart(ApiCtx *c)
{
    context_action(c, CTX_RESTART);
}

void
route_context_interrupt(ApiCtx *c)
{
    context_action(c, CTX_INTERRUPT);
}
