/* One request from the host: decode and check (proto/), gate on Hello, run, reply.
 * This is a loop callback, so it is where request failures are logged (debug level). */
#include <string.h>

#include "files.h"
#include "log.h"
#include "reply.h"
#include "serve_internal.h"

#define DISPATCH_WHY_BYTES 160

static void
dispatch_queue_failed(uint32_t req_id)
{
    /* Over the hard bound or a message our own checks refuse: a runner bug. */
    log_error("request %u: reply not queued: %m", req_id);
}

static void
dispatch_reply_error(Server *s, uint32_t req_id, const Error *e)
{
    log_debug("request %u failed: %s", req_id, e->message);
    if (reply_from_error(&s->q, req_id, e) < 0)
        dispatch_queue_failed(req_id);
}

static void
dispatch_ping(Server *s, const HostMsg *m)
{
    GuestMsg g = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Pong pong = STOCKADE__RUNNER__PONG__INIT;

    /* A guest waiting in the pool answers only while its workspace is still writable, so
     * the pool replaces it rather than hand it out. A session's guest always answers. */
    if (s->session.mounted && !s->session.ready) {
        _cleanup_error_ Error *err = NULL;
        if (session_workspace_check(s->cfg->workspace, false, &err) < 0) {
            dispatch_reply_error(s, m->req_id, err);
            return;
        }
    }
    pong.nonce = m->ping->nonce;
    g.req_id = m->req_id;
    g.body_case = GBODY(PONG);
    g.pong = &pong;
    if (outq_push_msg(&s->q, &g) < 0)
        dispatch_queue_failed(m->req_id);
}

static void
dispatch_file_get(Server *s, const HostMsg *m, const WsCtx *ws)
{
    GuestMsg g = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__FileData data;
    _cleanup_error_ Error *err = NULL;

    if (files_get(ws, m->file_get, s->file_buf, &data, &err) < 0) {
        dispatch_reply_error(s, m->req_id, err);
        return;
    }
    g.req_id = m->req_id;
    g.body_case = GBODY(FILE_DATA);
    g.file_data = &data;
    if (outq_push_msg(&s->q, &g) < 0)
        dispatch_queue_failed(m->req_id);
}

static void
dispatch_fs_op(Server *s, const HostMsg *m, const WsCtx *ws)
{
    GuestMsg g = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__FsResult res;
    _cleanup_error_ Error *err = NULL;

    if (fsops_run(ws, m->fs_op, &res, &err) < 0) {
        dispatch_reply_error(s, m->req_id, err);
        return;
    }
    g.req_id = m->req_id;
    g.body_case = GBODY(FS_RESULT);
    g.fs_result = &res;
    if (outq_push_msg(&s->q, &g) < 0)
        dispatch_queue_failed(m->req_id);
    fsops_result_free(&res);
}

/* Requests that answer Ack or Error. Returns 0 on success (Ack), -1 with err set. */
static int
dispatch_simple(Server *s, const HostMsg *m, const WsCtx *ws, Error **err)
{
    switch (m->body_case) {
    case HBODY(HELLO):
        return session_hello(s, m->hello, err);
    case HBODY(SIGNAL):
        return exec_signal(s->execs, m->signal->exec_id, m->signal->signo, err);
    case HBODY(RESIZE):
        return exec_resize(s->execs, m->resize->exec_id, m->resize->size->cols,
                           m->resize->size->rows, err);
    case HBODY(FILE_PUT):
        return files_put(ws, m->file_put, err);
    default:
        return error_set(err, E_INTERNAL, 0, "unexpected request");
    }
}

static bool
dispatch_is_tunnel(int body_case)
{
    return body_case == HBODY(TUNNEL_OPEN_RESULT) || body_case == HBODY(TUNNEL_DATA) ||
           body_case == HBODY(TUNNEL_CREDIT) || body_case == HBODY(TUNNEL_CLOSE);
}

/* Tunnel messages have no reply; what goes wrong is reported as an Error with req_id 0. */
static void
dispatch_tunnel(Server *s, const HostMsg *m)
{
    _cleanup_error_ Error *err = NULL;

    if (!s->proxy)
        error_set(&err, E_INVALID, 0, "tunnel message in a session without egress");
    else if (proxy_on_host_msg(s->proxy, m, &err) == 0)
        return;
    dispatch_reply_error(s, 0, err);
}

/* True if the request asks to run as root rather than as the session's user (issue 28: the
 * VM is the isolation boundary, and inside it root is the caller's to use when asked). */
static bool
dispatch_as_root(const HostMsg *m)
{
    switch (m->body_case) {
    case HBODY(EXEC):
        return m->exec->as_root;
    case HBODY(FILE_PUT):
        return m->file_put->as_root;
    case HBODY(FILE_GET):
        return m->file_get->as_root;
    case HBODY(FS_OP):
        return m->fs_op->as_root;
    default:
        return false;
    }
}

static void
dispatch_ready(Server *s, const HostMsg *m)
{
    Session *ss = &s->session;
    bool root = dispatch_as_root(m);
    WsCtx ws = {.ws_fd = ss->ws_fd, .uid = root ? 0 : ss->uid, .gid = root ? 0 : ss->gid};
    ExecContext ctx = {.ws_fd = ss->ws_fd,
                       .home = s->cfg->workspace, /* /workspace in a guest */
                       .uid = ws.uid,
                       .gid = ws.gid,
                       .session_env = &ss->env,
                       .home_mounted = ss->home_mounted,
                       .default_cwd = s->cfg->image && s->cfg->image->cwd[0]
                                          ? s->cfg->image->cwd
                                          : NULL};
    _cleanup_error_ Error *err = NULL;

    if (dispatch_is_tunnel(m->body_case)) {
        dispatch_tunnel(s, m);
        return;
    }
    switch (m->body_case) {
    case HBODY(EXEC):
        if (exec_start(s->execs, &ctx, m->exec, m->req_id, &err) < 0)
            dispatch_reply_error(s, m->req_id, err); /* success answers later: ExecStarted */
        return;
    case HBODY(STDIN):
        if (exec_stdin(s->execs, m->stdin->exec_id, m->stdin->data.data, m->stdin->data.len,
                       m->stdin->eof, &err) < 0)
            dispatch_reply_error(s, 0, err);
        return;
    case HBODY(FILE_GET):
        dispatch_file_get(s, m, &ws);
        return;
    case HBODY(FS_OP):
        dispatch_fs_op(s, m, &ws);
        return;
    default:
        break;
    }
    if (dispatch_simple(s, m, &ws, &err) < 0)
        dispatch_reply_error(s, m->req_id, err);
    else if (reply_ack(&s->q, m->req_id) < 0)
        dispatch_queue_failed(m->req_id);
}

static void
dispatch_prepare(Server *s, const HostMsg *m)
{
    _cleanup_error_ Error *err = NULL;
    bool started;

    if (s->session.ready || s->session.prepared) {
        if (reply_error(&s->q, m->req_id, ERRC(NOT_READY), "prepare: only once, before hello") < 0)
            dispatch_queue_failed(m->req_id);
        return;
    }
    if (session_prepare(s, m->prepare, m->req_id, &started, &err) < 0)
        dispatch_reply_error(s, m->req_id, err);
    else if (!started && reply_ack(&s->q, m->req_id) < 0)
        dispatch_queue_failed(m->req_id);
}

static void
dispatch_prestart(Server *s, const HostMsg *m)
{
    _cleanup_error_ Error *err = NULL;

    if (s->session.ready || s->session.prepared || s->session.prestarted) {
        if (reply_error(&s->q, m->req_id, ERRC(NOT_READY),
                        "prestart: only once, before prepare and hello") < 0)
            dispatch_queue_failed(m->req_id);
        return;
    }
    s->session.prestarted = true;
    if (session_prestart(s, m->prestart, m->req_id, &err) < 0) /* else Ack once it is ready */
        dispatch_reply_error(s, m->req_id, err);
}

/* Finalize once; afterwards the host may only read files (FileGet), ping or shut down. */
static bool
dispatch_finalize_gate(Server *s, const HostMsg *m)
{
    _cleanup_error_ Error *err = NULL;

    if (m->body_case == HBODY(FINALIZE) && !s->finalizing && s->session.ready) {
        if (session_finalize(s, m->finalize, m->req_id, &err) < 0)
            dispatch_reply_error(s, m->req_id, err);
        return true;
    }
    if (m->body_case == HBODY(FINALIZE) || (s->finalizing && m->body_case != HBODY(FILE_GET))) {
        if (reply_error(&s->q, m->req_id, ERRC(NOT_READY), "%s",
                        s->finalizing ? "the session is finalized" : "hello first") < 0)
            dispatch_queue_failed(m->req_id);
        return true;
    }
    return false;
}

static void
dispatch_msg(Server *s, const HostMsg *m)
{
    bool hello = m->body_case == HBODY(HELLO);

    switch (m->body_case) {
    case HBODY(PING):
        dispatch_ping(s, m);
        return;
    case HBODY(SHUTDOWN):
        s->shutdown_requested = true; /* the loop finishes what is queued, then shuts down */
        s->shutdown_req_id = m->req_id;
        return;
    case HBODY(PREPARE):
        dispatch_prepare(s, m);
        return;
    case HBODY(PRESTART):
        dispatch_prestart(s, m);
        return;
    default:
        break;
    }
    if (dispatch_finalize_gate(s, m))
        return;
    if (s->session.ready == hello) {
        if (reply_error(&s->q, m->req_id, ERRC(NOT_READY),
                        hello ? "hello was already received" : "hello first") < 0)
            dispatch_queue_failed(m->req_id);
        return;
    }
    dispatch_ready(s, m);
}

void
dispatch_frame(Server *s, const uint8_t *payload, size_t len)
{
    char why[DISPATCH_WHY_BYTES];

    HostMsg *m = msg_decode_host(payload, len, why, sizeof(why));
    if (!m) {
        uint32_t req_id = reply_peek_req_id(payload, len);
        log_debug("request %u: bad message: %s", req_id, why);
        if (reply_error(&s->q, req_id, ERRC(BAD_MESSAGE), "%s", why) < 0)
            dispatch_queue_failed(req_id);
        return;
    }
    dispatch_msg(s, m);
    msg_free_host(m);
}
