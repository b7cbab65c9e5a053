/* Internal to hostd/e2b.
 *   e2b.c         module life cycle, loop calls, the sandbox and process tables
 *   e2b_api.c     the control plane (connect, get, list, kill, timeout; routes)
 *   e2b_create.c  sandbox create: admitted on the loop, answered there once the guest runs;
 *                 template aliases (GET /templates/aliases/{alias})
 *   e2b_envd.c    the envd face: routing, access tokens, dispatch, unary process calls
 *   e2b_stream.c  server-streaming calls: process Start/Connect, filesystem WatchDir
 *   e2b_files.c   /files and the filesystem calls
 *   e2b_code.c    the code interpreter (port 49999): /execute, /contexts
 *   e2b_cluster.c cluster mode: another host's sandbox, looked up and proxied to its owner
 *   e2b_config.c, connect.c, multipart.c, e2b_wire.c, e2b_json.c: pure */
#pragma once

#include <pthread.h>

#include "e2b.h"
#include "e2b_json.h"
#include "e2b_signed_url.h"
#include "e2b_wire.h"
#include "http.h"
#include "http_json.h"
#include "sessions.h"
#include "store.h"
#include "timeutil.h"

#define E2B_SANDBOXES_MAX 4096 /* in the table at once (each is a live session) */
#define E2B_PROCS_MAX 256      /* processes a sandbox remembers for List, Connect and tags */
#define E2B_TOKEN_RANDOM_BYTES 32
#define E2B_TOKEN_BYTES (2 * E2B_TOKEN_RANDOM_BYTES + 1)
#define E2B_CALL_TIMEOUT_USEC (120 * USEC_PER_SEC) /* a loop call, with its guest round trips */
#define E2B_API_MAX_BODY_BYTES ((size_t) 1 << 20)
#define E2B_ENVD_MAX_BODY_BYTES ((size_t) 64 << 20) /* one /files upload */
#define E2B_FILE_GET_MAX_BYTES ((size_t) 64 << 20)
#define E2B_RPC_MAX_BODY_BYTES ((size_t) 4 << 20) /* a unary request (SendInput carries stdin) */
#define E2B_ENVD_MAX_PER_IP 256 /* the SDK keeps a connection per running command */
#define E2B_LIST_LIMIT_DEFAULT 100
#define E2B_LIST_LIMIT_MAX 100
#define E2B_API_KEY_HEADER "X-API-KEY"
#define E2B_ACCESS_TOKEN_HEADER "X-Access-Token"
#define E2B_SANDBOX_ID_HEADER "E2b-Sandbox-Id"
#define E2B_SANDBOX_PORT_HEADER "E2b-Sandbox-Port"
#define E2B_TRAFFIC_TOKEN_HEADER "E2B-Traffic-Access-Token"
/* An /execute body: code of CODE_SOURCE_MAX_BYTES JSON-escaped (up to 6 bytes a byte) and
 * env_vars; refused from its Content-Length before it is read. */
#define E2B_CODE_MAX_BODY_BYTES ((size_t) 12 << 20)

typedef struct E2bProc {
    uint32_t pid; /* the exec id: unique in its session, never reused */
    char *tag;
    json_t *config; /* e2b_start_config(): {cmd, args, envs, cwd?}, checked and flat */
    bool pty;       /* started with "pty": its output is data.pty (Start and Connect) */
    struct E2bProc *next;
} E2bProc;

typedef struct E2bSandbox {
    char id[E2B_SANDBOX_ID_BYTES];
    char session_id[E2B_SESSION_ID_BYTES];
    char tenant[STORE_ID_MAX_BYTES];
    char template_id[E2B_TEMPLATE_NAME_MAX_BYTES + 1];
    char token[E2B_TOKEN_BYTES];    /* envdAccessToken: in memory only (README: why) */
    json_t *metadata;               /* object of strings */
    bool active;                    /* its guest ran and create answered */
    int64_t started_usec, end_usec; /* wall clock: startedAt, endAt */
    unsigned vcpus, memory_mib;
    E2bProc *procs;
    size_t n_procs;
    struct E2bSandbox *next;
} E2bSandbox;

struct E2b {
    E2bDeps d;
    E2bConfig cfg;
    HttpServer *api, *envd;
    pthread_mutex_t lock; /* calls' completion, stopping */
    pthread_cond_t cond;
    bool stopping;
    /* loop thread only */
    E2bSandbox *sandboxes;
    size_t n_sandboxes;
};

/* Work handed to the loop thread. Operations embed it first in a struct of their own (inputs
 * and outputs) and set free_fn for their fields. Posted with e2b_post() (the handler returns;
 * reply answers from the loop), or, where the caller cannot go on without the result (the
 * envd guard: it decides before the body is read), run with e2b_call() (it waits). */
typedef struct E2bCall E2bCall;
typedef void (*E2bCallFn)(E2bCall *c);
/* Answers req: err (the call's, or the layer's E_TIMEOUT / E_UNAVAILABLE), else the call's
 * outputs. On the loop, or on the connection thread for the layer's errors (fn may then still
 * run: read only err). Exactly one http_respond_*(). */
typedef void (*E2bReplyFn)(E2bCall *c, HttpRequest *req, const Error *err);
struct E2bCall {
    E2b *e;
    E2bCallFn fn;
    void (*free_fn)(E2bCall *c); /* frees the operation's fields (not c); may be NULL */
    unsigned refs; /* under e->lock: the waiter's, the loop's, and the trampoline's while fn runs */
    bool started, running, cancelled, done; /* under e->lock */
    Error *err;
    E2bReplyFn reply; /* e2b_post() */
    HttpLoopCall *hl; /* e2b_post(): the loop side's, from fn until e2b_call_done() */
};

/* Runs fn(c) on the loop thread and waits (this thread only, bounded by timeout_usec and
 * e2b_stop()) until it calls e2b_call_done(). 0: done without error, and the outputs may be
 * read; -1: its error, or E_TIMEOUT / E_UNAVAILABLE when it did not finish in time. Either
 * way the caller ends with e2b_call_unref(c): a late completion then finds nothing. When it
 * returns, fn has either run (its synchronous part is over) or never will: inputs that fn
 * uses only synchronously (e.g. a request body it passes to sessions_file_put(), which
 * copies) may be borrowed from the request. */
int e2b_call(E2b *e, E2bCall *c, E2bCallFn fn, uint64_t timeout_usec, Error **errp);
/* Runs fn(c) on the loop thread for req and returns at once (the handler then returns too):
 * e2b_call_done() has c->reply answer from the loop; E_TIMEOUT "the sandbox did not answer in
 * time" after timeout_usec, E_UNAVAILABLE when the daemon stops or the post fails (reply runs
 * then on this or the connection thread, and a call not begun never runs). Takes c. */
void e2b_post(E2b *e, HttpRequest *req, E2bCall *c, E2bCallFn fn, E2bReplyFn reply,
              uint64_t timeout_usec);
/* Loop thread, exactly once per call, now or from a later callback. err may be NULL. */
void e2b_call_done(E2bCall *c, const Error *err);
void e2b_call_unref(E2bCall *c);
/* An E2bCall-headed struct of size bytes, zeroed, or NULL. */
void *e2b_call_new(size_t size, void (*free_fn)(E2bCall *c));

/* ------------------------------------------------------------------ cluster mode
 * (e2b_cluster.c) */

typedef struct E2bRemote {
    char host_id[64];
    char url[E2B_PEER_URL_MAX_BYTES + 1]; /* the owner's host-to-host listener */
    char tenant[64];                      /* the sandbox's: its share of hops */
    bool envd;                            /* for the owner's envd face, else its control plane */
} E2bRemote;

/* Whether sandbox id, which this host's store does not hold (for tenant, when given), is
 * another host's that req goes to (e2b_forward_target(): tenant for the control plane, NULL
 * for envd, whose caller's token was checked first): 1 and *ret; 0 when not (a single host,
 * a request that came as a hop, an id held here, not in the cluster's index, ended, this
 * host's, another tenant's, or its host runs no such face): the caller answers as for an
 * unknown sandbox, here; -1 when the database is away (E_UNAVAILABLE) or the scope's
 * lookups kept their share under way past the lookup's bound (E_QUOTA). The connection
 * thread: the lookup blocks it (bounded), never the loop. */
int e2b_elsewhere(E2b *e, HttpRequest *req, const char *id, const char *tenant, bool envd,
                  E2bRemote *ret, Error **errp);
/* Cluster mode: a sandbox's envdAccessToken, HMAC-SHA-256(key: the envd key the cluster
 * derives from its host credential, "stockade-e2b-envd-v1:" + its id) in hex, by GnuTLS. Any
 * host of the cluster can then check a request's credentials for any sandbox before anything
 * else (the owner checks them again), and only the cluster's hosts can make one. E_INTERNAL
 * if GnuTLS fails. */
int e2b_envd_token_for(const uint8_t key[E2B_ENVD_KEY_BYTES], const char *sandbox_id,
                       char token[E2B_TOKEN_BYTES], Error **errp);
/* Carries req to r's owner, which answers it (exactly once). Any thread. */
void e2b_forward(E2b *e, HttpRequest *req, const E2bRemote *r);

/* The sandbox table (loop thread). */
E2bSandbox *e2b_sandbox_find(E2b *e, const char *id);
/* A running sandbox of that tenant (NULL: any). E_NOT_FOUND otherwise; an entry whose
 * session ended is dropped on the way. */
E2bSandbox *e2b_sandbox_running(E2b *e, const char *id, const char *tenant, Error **errp);
int e2b_sandbox_add(E2b *e, const char *session_id, const char *tenant, const char *template_id,
                    json_t *metadata, E2bSandbox **ret, Error **errp);
void e2b_sandbox_remove(E2b *e, E2bSandbox *sb);
/* Drops every entry whose session is no longer live. */
void e2b_sandboxes_sweep(E2b *e);
void e2b_sandbox_view(E2b *e, const E2bSandbox *sb, E2bSandboxView *ret);

/* Processes of a sandbox (loop thread). config is stolen. */
int e2b_proc_add(E2b *e, E2bSandbox *sb, uint32_t pid, const char *tag, json_t *config,
                 Error **errp);
E2bProc *e2b_proc_find(E2bSandbox *sb, const E2bSelector *sel);

/* The two handlers (e2b_api.c, e2b_envd.c). */
void e2b_api_handle(HttpRequest *req, void *userdata);
void e2b_envd_handle(HttpRequest *req, void *userdata);
/* Their guards (HttpGuard): a request with a body is authenticated (X-API-KEY; the sandbox's
 * access token) before the body is read. */
bool e2b_api_guard(HttpRequest *req, void *userdata);
bool e2b_envd_guard(HttpRequest *req, void *userdata);

/* e2b_create.c: POST /v2/sandboxes (v2) and /sandboxes: posts the create to the loop, which
 * answers once the guest runs (or it cannot). body (borrowed) is the parsed request. */
void e2b_create(E2b *e, HttpRequest *req, const char *tenant, json_t *body, bool v2);
/* GET /templates/aliases/{alias}: 403 for a template create accepts, 404 otherwise (as E2B's
 * API answers a team for a template it does not own, and for none). */
void e2b_template_alias(E2b *e, HttpRequest *req, const char *alias);

/* e2b_api.c: the API key's tenant (connection thread; by the HTTP layer's authenticator,
 * the native API's lookup): "X-API-KEY: e2b_<64 hex>" (the form the SDKs check on the client; or
 * stk_<the same 64 hex>, the spelling tokens were issued in before). E_UNAUTHORIZED otherwise. */
int e2b_api_key_tenant(E2b *e, HttpRequest *req, char ret_tenant[STORE_ID_MAX_BYTES], Error **errp);

/* ------------------------------------------------------------------ the envd face */


/* Who an envd request says it is: the sandbox it is routed to and its credentials. */
typedef struct E2bEnvdAuth {
    char id[E2B_SANDBOX_ID_BYTES];
    char token[E2B_TOKEN_BYTES];                 /* X-Access-Token ("" when absent or too long) */
    char signature[E2B_SIGNATURE_MAX_BYTES + 1]; /* /files signed URLs: "v1_..." or "" */
    char *sig_prefix, *sig_suffix; /* "<path>:<op>:<user>:" and "" or ":<expiration>" */
    bool sig_expired; /* the URL's signature_expiration has passed: refused even if it matches */
    bool code;        /* for the code interpreter (port 49999), not envd */
    bool root;        /* the caller asks for root (e2b_user_is_root()), not the session user */
} E2bEnvdAuth;

void e2b_envd_auth_clear(E2bEnvdAuth *a);
/* Whether auth carries token (X-Access-Token, E2B-Traffic-Access-Token) or a signed URL made
 * with it: 0, else E_UNAUTHORIZED. Constant time in the token's bytes. */
int e2b_envd_token_check(const E2bEnvdAuth *auth, const char *token, Error **errp);
/* Cluster mode, any thread (the envd guard calls it on the connection thread, before any
 * lookup): whether auth's credentials (token or signed URL) are those of sandbox auth->id
 * under any of the cluster's envd keys (a rotation's two: e2b_cluster.c). E_UNAUTHORIZED
 * when not. */
int e2b_envd_token_derived_check(E2b *e, const E2bEnvdAuth *auth, Error **errp);
/* Loop thread: the running sandbox these credentials open. E_GUEST (answered 502: unknown,
 * killed, timed out) or E_UNAUTHORIZED. */
E2bSandbox *e2b_envd_sandbox(E2b *e, const E2bEnvdAuth *auth, Error **errp);

/* Unary answers: 200 application/json with msg (stolen), or a Connect error (502 for
 * E_GUEST: the sandbox is gone). Any thread. */
void e2b_rpc_reply(HttpRequest *req, json_t *msg);
void e2b_rpc_error(HttpRequest *req, const Error *err);
void e2b_rpc_errorf(HttpRequest *req, ConnectCode code, const char *message);
/* /files and /health answers: {"code": <status>, "message"} (502 for E_GUEST). */
void e2b_files_error(HttpRequest *req, const Error *err);

typedef void (*E2bRpcFn)(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg);

/* e2b_stream.c: server-streaming calls (msg: the request's single message). */
void e2b_rpc_start(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg);
void e2b_rpc_connect(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg);
void e2b_rpc_watch_dir(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg);
/* e2b_files.c */
void e2b_fs_stat(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg);
void e2b_fs_make_dir(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg);
void e2b_fs_move(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg);
void e2b_fs_list_dir(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg);
void e2b_fs_remove(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg);
void e2b_files_get(E2b *e, HttpRequest *req, E2bEnvdAuth *auth);
void e2b_files_post(E2b *e, HttpRequest *req, E2bEnvdAuth *auth);

/* e2b_code.c: the code interpreter face (auth: routed, credentials read, not yet checked). */
void e2b_code_handle(E2b *e, HttpRequest *req, E2bEnvdAuth *auth);
/* SIGINT to a context's kernel, from any thread (posted to the loop; not waited for). */
void e2b_code_interrupt(E2b *e, const char *session_id, uint32_t context);
/* e2b_stream.c: answers req (loop thread) with the NDJSON lines of one code run: its events
 * after `after` until its code.done. ahead: runs of the context queued before it. A client
 * that leaves while the run is the context's current cell has it interrupted. */
void e2b_code_stream(E2b *e, HttpRequest *req, const char *session_id, uint32_t context,
                     uint32_t run, uint64_t after, unsigned ahead);
