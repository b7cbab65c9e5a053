/* The envd face: what E2B runs inside each VM, served on the host for every sandbox on one
 * listener. A request names its sandbox with E2b-Sandbox-Id (the JS SDK sends it on every
 * call), else with a Host "<port>-<id>.<domain>" (wildcard DNS; the Python SDK's connect);
 * X-Access-Token (or, for /files, a v1 signed URL) must be the sandbox's envdAccessToken.
 * Unknown, killed and timed-out sandboxes answer 502 (the SDKs read it as "not running";
 * a 404 would read as an unimplemented method). Connect-RPC with JSON: unary calls here,
 * server-streaming ones in e2b_stream.c, files in e2b_files.c.
 *
 * Processes: a process's pid is its exec id (1, 2, 3... in its sandbox, never reused), not
 * the guest kernel's pid; List shows the ones still running. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "e2b_internal.h"
#include "timeutil.h"

/* ------------------------------------------------------------------ answers */

void
e2b_rpc_reply(HttpRequest *req, json_t *msg)
{
    http_respond_json(req, 200, msg ? msg : json_object());
}

void
e2b_rpc_errorf(HttpRequest *req, ConnectCode code, const char *message)
{
    http_respond_json(req, connect_code_http_status(code), e2b_render_rpc_error(code, message));
}

void
e2b_rpc_error(HttpRequest *req, const Error *err)
{
    ConnectCode code = connect_code_for(err->category);
    unsigned status = err->category == E_GUEST ? 502 : connect_code_http_status(code);
    http_respond_json(req, status, e2b_render_rpc_error(code, err->message));
}

void
e2b_files_error(HttpRequest *req, const Error *err)
{
    unsigned st = http_status_for_category(err->category);
    http_respond_json(req, st, e2b_render_api_error(st, err->message));
}

/* ------------------------------------------------------------------ who is asking */

void
e2b_envd_auth_clear(E2bEnvdAuth *a)
{
    explicit_bzero(a->token, sizeof(a->token));
    free(a->sig_prefix);
    free(a->sig_suffix);
    a->sig_prefix = a->sig_suffix = NULL;
}

E2bSandbox *
e2b_envd_sandbox(E2b *e, const E2bEnvdAuth *auth, Error **errp)
{
    _cleanup_error_ Error *err = NULL;
    E2bSandbox *sb = e2b_sandbox_running(e, auth->id, NULL, &err);
    if (!sb) {
        error_set(errp, E_GUEST, 0, "sandbox %s is not running (unknown, killed or timed out)",
                  auth->id[0] ? auth->id : "(none named)");
        return NULL;
    }
    return e2b_envd_token_check(auth, sb->token, errp) < 0 ? NULL : sb;
}

int
e2b_envd_token_check(const E2bEnvdAuth *auth, const char *token, Error **errp)
{
    bool token_ok = strlen(auth->token) == strlen(token) &&
                    memcmp_constant_time(auth->token, token, strlen(token)) == 0;
    if (token_ok)
        return 0;
    if (!e2b_signature_matches(auth->signature, auth->sig_prefix, auth->sig_suffix, token))
        return error_set(errp, E_UNAUTHORIZED, 0,
                         "X-Access-Token is not this sandbox's "
                         "envdAccessToken");
    /* envd checks the signature, then its expiration, and says so (401: e2b-dev/infra
     * packages/envd/internal/api/auth.go, validateSigning(); download.go, upload.go) */
    if (auth->sig_expired)
        return error_set(errp, E_UNAUTHORIZED, 0, "signature is already expired");
    return 0;
}

/* The sandbox a request is routed to: E2b-Sandbox-Id, else the Host; and the port it is for:
 * E2b-Sandbox-Port 49999 (or a Host 49999-<id>) is the code interpreter, anything else envd.
 * -1 if neither names one (or the Host names another port: Stockade does not proxy a
 * sandbox's own ports). */
static int
envd_route(E2b *e, HttpRequest *req, E2bEnvdAuth *a, const char **ret_why)
{
    const char *id = http_header(req, E2B_SANDBOX_ID_HEADER), *host = http_header(req, "Host");
    const char *port_h = http_header(req, E2B_SANDBOX_PORT_HEADER);
    unsigned port;

    if (id && e2b_sandbox_id_is_valid(id)) {
        snprintf(a->id, sizeof(a->id), "%s", id);
        a->code = port_h && strcmp(port_h, "49999") == 0;
        return 0;
    }
    if (!id && host && e2b_host_route(host, e->cfg.domain, &port, a->id) == 0) {
        a->code = port == E2B_CODE_PORT;
        if (port == E2B_DEFAULT_ENVD_PORT || a->code)
            return 0;
        *ret_why = "Stockade serves only envd (port 49983) and the code interpreter (49999) of "
                   "a sandbox, not its other ports";
        return -1;
    }
    *ret_why = "no sandbox named: send E2b-Sandbox-Id, or a Host <port>-<sandbox id>.<domain>";
    return -1;
}

/* Signed /files URLs (sandbox.uploadUrl(), downloadUrl()): what is hashed besides the token. */
static void
envd_signature(HttpRequest *req, E2bEnvdAuth *a)
{
    const char *sig = http_query(req, "signature"), *exp = http_query(req, "signature_expiration");
    const char *path = http_query(req, "path"), *user = http_query(req, "username");
    bool write = strcmp(http_method(req), "POST") == 0;

    if (e2b_signed_url_parts(sig, exp, path, user, write, (int64_t) (wall_usec() / USEC_PER_SEC),
                             &a->sig_prefix, &a->sig_suffix) < 0) {
        /* expired (it is whole otherwise): kept, so that a matching one is told it expired,
         * as envd tells it; it opens nothing (e2b_envd_token_check()) */
        if (e2b_signed_url_parts(sig, exp, path, user, write, INT64_MIN, &a->sig_prefix,
                                 &a->sig_suffix) < 0)
            return; /* none or malformed: only the token can open it */
        a->sig_expired = true;
    }
    snprintf(a->signature, sizeof(a->signature), "%s", sig);
}

/* ------------------------------------------------------------------ unary process calls */

typedef enum { PROC_LIST, PROC_SIGNAL, PROC_INPUT, PROC_CLOSE_STDIN, PROC_UPDATE } ProcOp;

typedef struct ProcCall {
    E2bCall c;
    E2bEnvdAuth auth;
    ProcOp op;
    E2bSelector sel;
    char tag[E2B_TAG_MAX_BYTES + 1];
    int signo;
    uint32_t cols, rows; /* PROC_UPDATE: the terminal's new size */
    uint8_t *data;
    size_t len;
    json_t *answer;
} ProcCall;

static void
proc_call_free(E2bCall *c)
{
    ProcCall *pc = (ProcCall *) c;
    e2b_envd_auth_clear(&pc->auth);
    free(pc->data);
    json_decref(pc->answer);
}

static json_t *
proc_list(E2b *e, E2bSandbox *sb)
{
    json_t *arr = json_array();
    for (E2bProc *p = sb->procs; p; p = p->next) {
        SessionsExecState st;
        if (sessions_exec_state(e->d.sessions, NULL, sb->session_id, p->pid, &st, NULL) == 0 &&
            st != SESSIONS_EXEC_DONE)
            json_array_append_new(arr, e2b_process_info(p->pid, p->tag, p->config));
    }
    return json_pack("{s:o}", "processes", arr);
}

/* A running process of sb by pid or tag: its pid, or 0 with E_NOT_FOUND. */
static uint32_t
proc_running(E2b *e, E2bSandbox *sb, const E2bSelector *sel, Error **errp)
{
    SessionsExecState st;
    E2bProc *p = e2b_proc_find(sb, sel);
    if (!p || sessions_exec_state(e->d.sessions, NULL, sb->session_id, p->pid, &st, NULL) < 0 ||
        st == SESSIONS_EXEC_DONE) {
        error_set(errp, E_NOT_FOUND, 0, "no running process %s%.64s", sel->tag ? "tagged " : "",
                  sel->tag ? sel->tag : "with that pid");
        return 0;
    }
    return p->pid;
}

static int
proc_input(E2b *e, E2bSandbox *sb, uint32_t pid, const ProcCall *pc, Error **errp)
{
    size_t off = 0;
    do {
        size_t n = MIN(pc->len - off, (size_t) STDIN_CHUNK_MAX_BYTES);
        bool eof = pc->op == PROC_CLOSE_STDIN;
        if (sessions_stdin(e->d.sessions, NULL, sb->session_id, pid,
                           pc->data ? pc->data + off : NULL, n, eof, errp) < 0)
            return -1;
        off += n;
    } while (off < pc->len);
    return 0;
}

static void
proc_on_loop(E2bCall *c)
{
    ProcCall *pc = (ProcCall *) c;
    _cleanup_error_ Error *err = NULL;
    E2bSandbox *sb = e2b_envd_sandbox(c->e, &pc->auth, &err);
    uint32_t pid = 0;

    if (sb && pc->op == PROC_LIST)
        pc->answer = proc_list(c->e, sb);
    else if (sb && (pid = proc_running(c->e, sb, &pc->sel, &err)) != 0 && pc->op == PROC_SIGNAL)
        (void) sessions_signal(c->e->d.sessions, NULL, sb->session_id, pid, pc->signo, &err);
    else if (pid != 0 && pc->op == PROC_UPDATE)
        (void) sessions_resize(c->e->d.sessions, NULL, sb->session_id, pid, pc->cols, pc->rows,
                               &err);
    else if (pid != 0)
        (void) proc_input(c->e, sb, pid, pc, &err);
    e2b_call_done(c, err);
}

static int
proc_parse(ProcCall *pc, json_t *msg, Error **errp)
{
    if (pc->op == PROC_LIST)
        return 0;
    if (e2b_parse_selector(msg, &pc->sel, errp) < 0)
        return -1;
    if (pc->sel.tag) {
        snprintf(pc->tag, sizeof(pc->tag), "%s", pc->sel.tag);
        pc->sel.tag = pc->tag; /* msg goes away with the handler; the call may outlive it */
    }
    if (pc->op == PROC_SIGNAL)
        return e2b_parse_signal(msg, &pc->signo, errp);
    if (pc->op == PROC_INPUT)
        return e2b_parse_input(msg, &pc->data, &pc->len, errp);
    if (pc->op != PROC_UPDATE)
        return 0;
    if (e2b_parse_pty(msg, &pc->cols, &pc->rows, errp) < 0)
        return -1;
    return pc->cols ? 0 : error_set(errp, E_INVALID, 0, "update: pty.size is required");
}

static void
proc_reply(E2bCall *c, HttpRequest *req, const Error *err)
{
    if (err)
        e2b_rpc_error(req, err);
    else
        e2b_rpc_reply(req, TAKE_PTR(((ProcCall *) c)->answer));
}

static void
proc_rpc(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg, ProcOp op)
{
    _cleanup_error_ Error *err = NULL;
    ProcCall *pc = e2b_call_new(sizeof(*pc), proc_call_free);

    if (!pc) {
        e2b_rpc_errorf(req, CONNECT_INTERNAL, "out of memory");
        return;
    }
    pc->op = op;
    pc->auth = *auth;
    *auth = (E2bEnvdAuth){0}; /* the call owns the strings now */
    if (proc_parse(pc, msg, &err) < 0) {
        e2b_rpc_error(req, err);
        e2b_call_unref(&pc->c);
        return;
    }
    e2b_post(e, req, &pc->c, proc_on_loop, proc_reply, E2B_CALL_TIMEOUT_USEC);
}

static void
rpc_list(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    proc_rpc(e, req, auth, msg, PROC_LIST);
}

static void
rpc_send_signal(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    proc_rpc(e, req, auth, msg, PROC_SIGNAL);
}

static void
rpc_send_input(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    proc_rpc(e, req, auth, msg, PROC_INPUT);
}

/* Update: a terminal's new size (the only field envd's Update has besides the selector). */
static void
rpc_update(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    proc_rpc(e, req, auth, msg, PROC_UPDATE);
}

static void
rpc_close_stdin(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    proc_rpc(e, req, auth, msg, PROC_CLOSE_STDIN);
}

/* ------------------------------------------------------------------ health */

typedef struct HealthCall {
    E2bCall c;
    E2bEnvdAuth auth;
} HealthCall;

static void
health_call_free(E2bCall *c)
{
    e2b_envd_auth_clear(&((HealthCall *) c)->auth);
}

static void
health_on_loop(E2bCall *c)
{
    HealthCall *hc = (HealthCall *) c;
    _cleanup_error_ Error *err = NULL;
    if (!e2b_sandbox_running(c->e, hc->auth.id, NULL, &err)) {
        error_free(err);
        err = NULL;
        error_set(&err, E_GUEST, 0, "sandbox %s is not running", hc->auth.id);
    }
    e2b_call_done(c, err);
}

static void
health_reply(E2bCall *c, HttpRequest *req, const Error *err)
{
    (void) c;
    if (err)
        e2b_files_error(req, err);
    else
        http_respond_bytes(req, 204, NULL, NULL, 0);
}

static void
envd_health(E2b *e, HttpRequest *req, E2bEnvdAuth *auth)
{
    HealthCall *hc = e2b_call_new(sizeof(*hc), health_call_free);
    if (!hc) {
        http_respond_bytes(req, 500, NULL, NULL, 0);
        return;
    }
    hc->auth = *auth;
    *auth = (E2bEnvdAuth){0};
    e2b_post(e, req, &hc->c, health_on_loop, health_reply, E2B_CALL_TIMEOUT_USEC);
}

/* ------------------------------------------------------------------ heads with a body */

typedef struct CheckCall {
    E2bCall c;
    E2bEnvdAuth auth;
    char tenant[sizeof(((E2bRemote *) 0)->tenant)]; /* out: the sandbox's tenant, once its
                                                     * token passed */
} CheckCall;

static void
check_call_free(E2bCall *c)
{
    e2b_envd_auth_clear(&((CheckCall *) c)->auth);
}

static void
check_on_loop(E2bCall *c)
{
    CheckCall *cc = (CheckCall *) c;
    _cleanup_error_ Error *err = NULL;
    E2bSandbox *sb = e2b_envd_sandbox(c->e, &cc->auth, &err);
    if (sb)
        snprintf(cc->tenant, sizeof(cc->tenant), "%s", sb->tenant);
    e2b_call_done(c, err);
}

/* X-Access-Token, and for /files a signed URL's parts. The code interpreter's context calls
 * send the same token only as E2B-Traffic-Access-Token (create hands it out as both). */
static void
envd_credentials(HttpRequest *req, E2bEnvdAuth *auth)
{
    const char *token = http_header(req, E2B_ACCESS_TOKEN_HEADER);
    if (!token && auth->code)
        token = http_header(req, E2B_TRAFFIC_TOKEN_HEADER);

    if (token && strlen(token) < sizeof(auth->token))
        snprintf(auth->token, sizeof(auth->token), "%s", token);
    bool files = strcmp(http_path(req), "/files") == 0;
    if (files && !auth->code)
        envd_signature(req, auth);
    auth->root = e2b_user_is_root(http_header(req, "Authorization"),
                                  files ? http_query(req, "username") : NULL);
}

/* An /execute body over its bound is refused from its Content-Length, before it is read. */
static bool
code_body_fits(HttpRequest *req)
{
    const char *cl = http_header(req, "Content-Length");
    char *end = NULL;
    unsigned long long n = cl ? strtoull(cl, &end, 10) : 0;
    if (!cl || !*cl || *end)
        return true; /* chunked: the layer's bound, then code_body()'s */
    return n <= E2B_CODE_MAX_BODY_BYTES;
}

/* Another host's sandbox (cluster mode): the handler forwards the request once it is in. */
static bool
envd_forward_later(HttpRequest *req, const E2bRemote *remote)
{
    E2bRemote *r = malloc(sizeof(*r));
    if (!r) {
        http_respond_bytes(req, 500, NULL, NULL, 0);
        return false;
    }
    *r = *remote;
    http_request_set_context(req, r, free);
    return true;
}

/* The sandbox's tenant, once the request's token was checked: the layer's per-caller shares
 * count it for that tenant (E2B's control plane and the native API name it the same). */
static void
envd_name_caller(HttpRequest *req, const char *tenant)
{
    char key[HTTP_CALLER_MAX_BYTES];

    if (tenant[0] &&
        snprintf(key, sizeof(key), ADMIT_TENANT_CALLER_FMT, tenant) < (int) sizeof(key))
        (void) http_request_set_caller(req, key);
}

/* Cluster mode, on the connection thread. Every sandbox's token is the cluster's derived one
 * (e2b_envd_token_for() under the current envd key; either key of a rotation is accepted:
 * e2b_envd_token_derived_check()), so the credentials are checked first, before the loop or
 * the database is asked anything: a request without the sandbox's token costs neither (issue
 * 25, finding 7). /health alone needs no token for a sandbox of this host (the handler
 * answers it); for any other it does. With the token, a sandbox this host's store does not
 * hold is looked up (off the loop) and goes to its owner. 1: forward to *ret; 0: answered
 * here; -1: refused (*errp). */
static int
envd_cluster_check(E2b *e, HttpRequest *req, const E2bEnvdAuth *auth, E2bRemote *ret, Error **errp)
{
    _cleanup_error_ Error *err = NULL;
    char sid[E2B_SESSION_ID_BYTES];

    if (e2b_envd_token_derived_check(e, auth, &err) == 0)
        return e2b_elsewhere(e, req, auth->id, NULL, true, ret, errp);
    bool health = strcmp(http_path(req), "/health") == 0 && !auth->code;
    e2b_session_id_from_sandbox(auth->id, sid);
    if (health && !http_request_from_peer(req) && sessions_id_is_valid(sid)) {
        SessionRecord rec;
        Store *s = store_reader_acquire(e->d.readers);
        int here = store_session_get(s, sid, &rec, NULL);
        store_reader_release(e->d.readers, s);
        if (here == 0) {
            session_record_clear(&rec);
            return 0;
        }
    }
    return error_set(errp, E_UNAUTHORIZED, 0, "%s", err->message);
}

/* A request with a body has its credentials checked before a body byte is read: without the
 * sandbox's token it is answered at once and its body never read. A request without one is
 * checked by its handler (its head is all there is). On a single host the check runs on the
 * loop (the tokens are the loop's). In cluster mode it runs here first (envd_cluster_check(),
 * also without a body), and a request for another host's sandbox is read (within the local
 * limits) and forwarded whole; the owner checks the credentials again. Once the token passed,
 * the request counts for the sandbox's tenant in the layer's shares. */
bool
e2b_envd_guard(HttpRequest *req, void *userdata)
{
    E2b *e = userdata;
    _cleanup_error_ Error *err = NULL;
    const char *why = NULL;
    bool body = http_request_has_body(req);
    E2bRemote remote;
    int where = 0;

    if (!body && !e->d.owner)
        return true;
    CheckCall *cc = e2b_call_new(sizeof(*cc), check_call_free);
    if (!cc) {
        http_respond_bytes(req, 500, NULL, NULL, 0);
        return false;
    }
    if (envd_route(e, req, &cc->auth, &why) < 0) {
        e2b_call_unref(&cc->c);
        http_respond_json(req, 502, e2b_render_api_error(502, why));
        return false;
    }
    envd_credentials(req, &cc->auth);
    bool code = cc->auth.code;
    int r = e->d.owner ? (where = envd_cluster_check(e, req, &cc->auth, &remote, &err)) : 0;
    if (r >= 0 && body && where == 0)
        r = e2b_call(e, &cc->c, check_on_loop, E2B_CALL_TIMEOUT_USEC, &err);
    if (r >= 0)
        envd_name_caller(req, where > 0 ? remote.tenant : cc->tenant);
    e2b_call_unref(&cc->c);
    if (r >= 0 && code && !code_body_fits(req)) {
        error_set(&err, E_TOO_LARGE, 0, "the body is over %zu bytes", E2B_CODE_MAX_BODY_BYTES);
        r = -1;
    }
    if (r >= 0)
        return where > 0 ? envd_forward_later(req, &remote) : true;
    if (strcmp(http_path(req), "/files") == 0 || code)
        e2b_files_error(req, err);
    else
        e2b_rpc_error(req, err);
    return false;
}

/* ------------------------------------------------------------------ dispatch */

typedef struct {
    const char *path;
    bool stream;
    E2bRpcFn fn;
} Rpc;

static const Rpc rpcs[] = {
    {"/process.Process/Start", true, e2b_rpc_start},
    {"/process.Process/Connect", true, e2b_rpc_connect},
    {"/process.Process/List", false, rpc_list},
    {"/process.Process/SendSignal", false, rpc_send_signal},
    {"/process.Process/SendInput", false, rpc_send_input},
    {"/process.Process/CloseStdin", false, rpc_close_stdin},
    {"/process.Process/Update", false, rpc_update},
    {"/filesystem.Filesystem/Stat", false, e2b_fs_stat},
    {"/filesystem.Filesystem/MakeDir", false, e2b_fs_make_dir},
    {"/filesystem.Filesystem/Move", false, e2b_fs_move},
    {"/filesystem.Filesystem/ListDir", false, e2b_fs_list_dir},
    {"/filesystem.Filesystem/Remove", false, e2b_fs_remove},
    {"/filesystem.Filesystem/WatchDir", true, e2b_rpc_watch_dir},
};

/* The request's single message: a JSON object (unary: the body; streaming: one envelope). */
static json_t *
rpc_message(HttpRequest *req, bool stream, Error **errp)
{
    const char *ctype = http_header(req, "Content-Type"), *why = NULL;
    const char *want = stream ? "application/connect+json" : "application/json";
    size_t len;
    const uint8_t *body = http_body(req, &len), *payload = body;

    if (!ctype || strncmp(ctype, want, strlen(want)) != 0 ||
        (ctype[strlen(want)] != '\0' && ctype[strlen(want)] != ';')) {
        error_set(errp, E_INVALID, 0, "Content-Type must be %s (Connect with JSON)", want);
        return NULL;
    }
    if (stream && connect_stream_request(body, len, &payload, &len, &why) < 0) {
        error_set(errp, E_INVALID, 0, "%s", why);
        return NULL;
    }
    /* A unary body has its own bound; a stream's one message, the listener's. */
    return http_json_object(payload, len, stream ? 0 : E2B_RPC_MAX_BODY_BYTES, "the message", errp);
}

static void
envd_rpc(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, const char *path)
{
    _cleanup_error_ Error *err = NULL;
    const Rpc *rpc = NULL;

    for (size_t i = 0; i < ELEMENTSOF(rpcs); i++)
        if (strcmp(rpcs[i].path, path) == 0)
            rpc = &rpcs[i];
    if (!rpc || strcmp(http_method(req), "POST") != 0) {
        e2b_rpc_errorf(req, CONNECT_UNIMPLEMENTED,
                       "Stockade's envd does not implement this "
                       "call (no StreamInput, no polling watchers)");
        return;
    }
    json_t *msg = rpc_message(req, rpc->stream, &err);
    if (!msg) {
        e2b_rpc_error(req, err);
        return;
    }
    rpc->fn(e, req, auth, msg);
    json_decref(msg);
}

void
e2b_envd_handle(HttpRequest *req, void *userdata)
{
    E2b *e = userdata;
    E2bEnvdAuth auth = {0};
    const char *path = http_path(req), *method = http_method(req), *why = NULL;
    E2bRemote *remote = http_request_take_context(req); /* the guard's: another host's */

    if (remote) {
        e2b_forward(e, req, remote);
        free(remote);
        return;
    }
    if (envd_route(e, req, &auth, &why) < 0) {
        http_respond_json(req, 502, e2b_render_api_error(502, why));
        return;
    }
    envd_credentials(req, &auth);
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if (auth.code) {
        e2b_code_handle(e, req, &auth);
    } else if (strcmp(path, "/health") == 0 && get) {
        envd_health(e, req, &auth);
    } else if (strcmp(path, "/files") == 0 && (get || strcmp(method, "POST") == 0)) {
        if (get)
            e2b_files_get(e, req, &auth);
        else
            e2b_files_post(e, req, &auth);
    } else if (strncmp(path, "/process.Process/", 17) == 0 ||
               strncmp(path, "/filesystem.Filesystem/", 23) == 0) {
        envd_rpc(e, req, &auth, path);
    } else {
        http_respond_json(req, 404, e2b_render_api_error(404, "no such envd endpoint"));
    }
    e2b_envd_auth_clear(&auth);
}
