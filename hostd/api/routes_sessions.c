/* Session and task routes: create, list, get, close, cancel, exec, signal, stdin. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "render.h"
#include "runner_limits.h"

/* ------------------------------------------------------------------ create */

static void
create_on_loop(ApiCtx *c)
{
    SessionSpec *sp = c->extra;
    char id[SESSION_ID_BYTES];
    _cleanup_error_ Error *err = NULL;

    AdmitRefusal refusal;

    if (api_forward_place(c, sp->pool)) { /* [cluster]: another host has an idle guest */
        api_spec_free(sp);
        return;
    }
    sp->tenant_id = c->tenant;
    if (sessions_create(c->api->d.sessions, sp, id, &refusal, &err) < 0) {
        api_spec_free(sp);
        if (err->category == E_QUOTA) /* 429 with the limit; no guest was touched */
            api_reply_error_extra(c, err, api_refusal_json(&refusal));
        else
            api_reply_error(c, err);
        return;
    }
    char events[128];
    snprintf(events, sizeof(events), "/v1/%s/%s/events", sp->is_task ? "tasks" : "sessions", id);
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", id, "kind", sp->is_task ? "task" : "session",
                  "pool", sp->pool, "state", session_state_name(ST_PENDING), "events", events);
    api_spec_free(sp);
    api_reply_json(c, 201, o);
}

static void
route_create(ApiCtx *c, bool task)
{
    _cleanup_error_ Error *err = NULL;
    SessionSpec *sp = calloc(1, sizeof(*sp));

    if (!sp || api_parse_body(c, &err) < 0 || api_json_spec(c->body, task, sp, &err) < 0) {
        if (sp)
            api_spec_free(sp);
        if (!err)
            error_set(&err, E_INTERNAL, ENOMEM, "request");
        api_reply_error(c, err);
        return;
    }
    c->extra = sp;
    api_on_loop(c, create_on_loop);
}

void
route_session_create(ApiCtx *c)
{
    route_create(c, false);
}

void
route_task_create(ApiCtx *c)
{
    route_create(c, true);
}

/* ------------------------------------------------------------------ read */

void
route_session_get(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    SessionRecord r;
    const char *id = api_session_id(c, 2);

    if (!id)
        return;
    if (api_load_session(c, id, &r, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    json_t *o = render_session(&r);
    session_record_clear(&r);
    api_reply_json(c, 200, o);
}

void
route_session_list(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    const char *state = http_query(c->req, "state"), *limit_s = http_query(c->req, "limit");
    const char *before_s = http_query(c->req, "before");
    uint64_t limit = 100, before = 0;
    SessionRecord *v = NULL;
    size_t n = 0;
    SessionState want;

    if ((limit_s && api_query_number(limit_s, 10, API_LIST_MAX, &limit) < 0) || limit < 1 ||
        (before_s && api_query_number(before_s, 10, INT64_MAX, &before) < 0) ||
        (state && strlen(state) > 15)) {
        api_reply_errorf(c, E_INVALID,
                         "limit must be 1..%d; before a cursor from a previous "
                         "page",
                         API_LIST_MAX);
        return;
    }
    /* a name no session is recorded with matches none: an empty page */
    bool none = state && !session_state_from_name(state, &want);
    Store *s = store_reader_acquire(c->api->d.readers);
    int r = none ? 0
                 : store_session_list(s, c->admin && !c->acting ? NULL : c->tenant,
                                      state ? &want : NULL, (size_t) limit, (int64_t) before, &v,
                                      &n, &err);
    store_reader_release(c->api->d.readers, s);
    if (r < 0) {
        api_reply_error(c, err);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, render_session(&v[i]));
    json_t *o = json_pack("{s:o}", "sessions", arr);
    if (n == (size_t) limit)
        json_object_set_new(o, "next", json_sprintf("%lld", (long long) v[n - 1].created_usec));
    else
        json_object_set_new(o, "next", json_null());
    session_records_free(v, n);
    api_reply_json(c, 200, o);
}

/* ------------------------------------------------------------------ close, cancel */

static void
end_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    const char *id = c->seg[2];
    bool cancel = c->extra != NULL;
    int r = cancel ? sessions_cancel(c->api->d.sessions, c->admin ? NULL : c->tenant, id, &err)
                   : sessions_close(c->api->d.sessions, c->admin ? NULL : c->tenant, id, &err);
    if (r < 0 && err->category == E_NOT_FOUND) {
        /* not live: an ended session of this tenant is fine (idempotent), others are 404 */
        SessionRecord rec;
        error_free(err);
        err = NULL;
        if (api_load_session(c, id, &rec, &err) < 0) {
            api_reply_error(c, err);
            return;
        }
        session_record_clear(&rec);
        api_reply_json(c, 200,
                       json_pack("{s:s,s:s}", "id", id, "state", session_state_name(ST_ENDED)));
        return;
    }
    if (r < 0) {
        api_reply_error(c, err);
        return;
    }
    api_reply_json(c, 202,
                   json_pack("{s:s,s:s}", "id", id, "state", session_state_name(ST_STOPPING)));
}

void
route_session_close(ApiCtx *c)
{
    if (api_session_id(c, 2))
        api_on_loop(c, end_on_loop);
}

void
route_session_cancel(ApiCtx *c)
{
    if (!api_session_id(c, 2))
        return;
    c->extra = (void *) 1; /* cancel, not close */
    api_on_loop(c, end_on_loop);
}

/* ------------------------------------------------------------------ exec */

static void
exec_on_loop(ApiCtx *c)
{
    ExecSpec *sp = c->extra;
    _cleanup_error_ Error *err = NULL;
    uint32_t exec_id;
    int r = sessions_exec(c->api->d.sessions, c->admin ? NULL : c->tenant, c->seg[2], sp, &exec_id,
                          &err);
    api_exec_free(sp);
    if (r < 0)
        api_reply_error(c, err);
    else
        api_reply_json(c, 202, json_pack("{s:i}", "exec_id", (int) exec_id));
}

void
route_exec(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    ExecSpec *sp = calloc(1, sizeof(*sp));

    if (!api_session_id(c, 2)) {
        free(sp);
        return;
    }
    if (!sp || api_parse_body(c, &err) < 0 || api_json_exec(c->body, sp, &err) < 0) {
        api_exec_free(sp);
        if (!err)
            error_set(&err, E_INTERNAL, ENOMEM, "request");
        api_reply_error(c, err);
        return;
    }
    c->extra = sp;
    api_on_loop(c, exec_on_loop);
}

typedef struct {
    uint32_t exec_id;
    int signo;
} SignalReq;

static void
signal_on_loop(ApiCtx *c)
{
    SignalReq *sr = c->extra;
    _cleanup_error_ Error *err = NULL;
    int r = sessions_signal(c->api->d.sessions, c->admin ? NULL : c->tenant, c->seg[2], sr->exec_id,
                            sr->signo, &err);
    free(sr);
    if (r < 0)
        api_reply_error(c, err);
    else
        api_reply_json(c, 202, json_pack("{s:b}", "sent", 1));
}

void
route_exec_signal(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    SignalReq *sr = calloc(1, sizeof(*sr));
    if (!api_session_id(c, 2)) {
        free(sr);
        return;
    }
    if (!sr || api_parse_body(c, &err) < 0 || api_id_u32(c->seg[4], &sr->exec_id) < 0 ||
        api_json_signal(json_object_get(c->body, "signal"), &sr->signo) < 0) {
        free(sr);
        if (!err)
            error_set(&err, E_INVALID, 0,
                      "need an exec id and signal (a number or a name "
                      "such as \"KILL\")");
        api_reply_error(c, err);
        return;
    }
    c->extra = sr;
    api_on_loop(c, signal_on_loop);
}

typedef struct {
    uint32_t exec_id;
    bool eof;
} StdinReq;

static void
stdin_on_loop(ApiCtx *c)
{
    StdinReq *sr = c->extra;
    _cleanup_error_ Error *err = NULL;
    size_t len;
    const uint8_t *data = http_body(c->req, &len);
    int r = sessions_stdin(c->api->d.sessions, c->admin ? NULL : c->tenant, c->seg[2], sr->exec_id,
                           data, len, sr->eof, &err);
    free(sr);
    if (r < 0)
        api_reply_error(c, err);
    else
        api_reply_json(c, 202, json_pack("{s:I}", "bytes", (json_int_t) len));
}

void
route_exec_stdin(ApiCtx *c)
{
    StdinReq *sr = calloc(1, sizeof(*sr));
    size_t len;
    const char *eof = http_query(c->req, "eof");

    if (!api_session_id(c, 2)) {
        free(sr);
        return;
    }
    (void) http_body(c->req, &len);
    if (!sr || api_id_u32(c->seg[4], &sr->exec_id) < 0 || len > STDIN_CHUNK_MAX_BYTES) {
        free(sr);
        api_reply_errorf(c, E_INVALID, "need an exec id and at most %u bytes of stdin",
                         STDIN_CHUNK_MAX_BYTES);
        return;
    }
    sr->eof = eof && (strcmp(eof, "1") == 0 || strcmp(eof, "true") == 0);
    c->extra = sr;
    api_on_loop(c, stdin_on_loop);
}

typedef struct {
    uint32_t exec_id, cols, rows;
} ResizeReq;

static void
resize_on_loop(ApiCtx *c)
{
    ResizeReq *rr = c->extra;
    _cleanup_error_ Error *err = NULL;
    int r = sessions_resize(c->api->d.sessions, c->admin ? NULL : c->tenant, c->seg[2], rr->exec_id,
                            rr->cols, rr->rows, &err);
    free(rr);
    if (r < 0)
        api_reply_error(c, err);
    else
        api_reply_json(c, 202, json_pack("{s:b}", "sent", 1));
}

void
route_exec_resize(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    ResizeReq *rr = calloc(1, sizeof(*rr));

    if (!api_session_id(c, 2)) {
        free(rr);
        return;
    }
    if (!rr || api_parse_body(c, &err) < 0 || api_id_u32(c->seg[4], &rr->exec_id) < 0 ||
        api_json_pty_size(c->body, &rr->cols, &rr->rows, &err) < 0) {
        free(rr);
        if (!err)
            error_set(&err, E_INVALID, 0, "need an exec id");
        api_reply_error(c, err);
        return;
    }
    c->extra = rr;
    api_on_loop(c, resize_on_loop);
}
