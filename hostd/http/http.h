/* The HTTP server layer of the daemon's API: listeners, limits, deadlines, request parsing
 * and response plumbing on libmicrohttpd (thread per connection). No routes live here: one
 * HttpHandler receives every request that passed the layer's checks.
 *
 * Threading: each connection has its own thread (capped by max_connections). The handler
 * runs on it once the whole request is in, and may answer at once or later from any
 * thread (e.g. the daemon's loop thread); the connection thread sleeps on a condition
 * variable meanwhile. A streaming producer runs on the connection thread too and blocks in
 * http_stream_wait() until it has data. Nothing polls or spins.
 *
 * Limits and deadlines (HttpConfig; README.md has the full table): request head size and
 * header count (431), body (413 from Content-Length before any body byte is read; a chunked
 * body that outgrows the cap has its connection closed), path and query (400/414),
 * methods (405), connections in total and per IP (refused at accept), an idle timeout and
 * an absolute deadline from accept (or from the previous response) until the request head
 * and body are in, enforced by a watchdog thread (slow-loris). A TCP connection costs no
 * thread until its head is complete (http_accept.c; head_timeout_s, max_pending). A guard
 * (authentication) sees every head before its body is read and names the caller; bodies in
 * memory are bounded by a budget shared across servers, in all and per caller (503 when
 * spent), and must arrive at its minimum rate; one caller holds at most max_per_caller of a
 * server's connections (503). A caller nobody named is not kept alive.
 *
 * Every response carries Cache-Control: no-store and X-Content-Type-Options: nosniff.
 * Errors raised by the layer itself use the same JSON shape as http_respond_error().
 * Nothing here logs. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#include "http_config.h"

/* Caps on untrusted input that are not configurable. */
#define HTTP_MAX_REQUEST_HEADERS 64  /* header lines in one request: more is 431 */
#define HTTP_MAX_RESPONSE_HEADERS 16 /* http_response_header() calls per response */

typedef struct HttpServer HttpServer;

/* From c's body_budget_bytes, body_share_bytes, body_min_bytes_per_s and body_rate_window_s
 * (checked against max_body_bytes: E_INVALID). E_INTERNAL on OOM. */
int http_budget_new(const HttpConfig *c, HttpBudget **ret, Error **errp);
/* After every server using it stopped. NULL is fine. */
void http_budget_free(HttpBudget *b);
size_t http_budget_limit(const HttpBudget *b);
size_t http_budget_share(const HttpBudget *b); /* one caller's, in bytes */
size_t http_budget_used(const HttpBudget *b);
size_t http_budget_used_by(const HttpBudget *b, const char *caller);
typedef struct HttpBudgetStats {
    size_t used_bytes;      /* held now */
    uint64_t refused_full;  /* bodies refused (503, or cut mid-body if chunked): budget spent */
    uint64_t refused_share; /* ... because their caller held its share */
    uint64_t slow_cut;      /* connections cut: their body came in below the minimum rate */
} HttpBudgetStats;
void http_budget_stats(const HttpBudget *b, HttpBudgetStats *ret);

/* Called on the connection's thread once the whole request (head + body, within the caps)
 * is in. It must answer with exactly one http_respond_*() call, now or later, from any
 * thread. During http_server_stop() an unanswered request gets HTTP_STOP_GRACE_USEC, then a
 * 503; the late answer is then dropped (still required: it frees the request). HEAD comes
 * as "HEAD"; answer it like GET, MHD sends no body. */
typedef void (*HttpHandler)(HttpRequest *req, void *userdata);

/* Opens the listeners and starts serving. cfg's strings are copied. E_INVALID for a bad
 * config, E_CONFLICT when the unix path is held by a live server or is not a socket, E_IO
 * when a socket cannot be bound. */
int http_server_start(const HttpConfig *cfg, HttpHandler handler, void *userdata, HttpServer **ret,
                      Error **errp);
/* Stops accepting and removes the unix socket, ends streams (producers see closed),
 * answers new requests on open connections with 503, gives handlers that have not answered
 * HTTP_STOP_GRACE_USEC (then 503), lets queued answers go out, closes every connection and
 * joins every thread. NULL is fine. Not from a handler or producer. */
void http_server_stop(HttpServer *s);
/* The bound TCP port (useful with tcp_port 0); 0 without a TCP listener. */
uint16_t http_server_tcp_port(const HttpServer *s);
/* Whether the TCP listener serves HTTPS (HttpConfig.tls_cert_file). */
bool http_server_tls(const HttpServer *s);
/* TCP connections accepted whose request head is not complete yet. */
unsigned http_server_pending_heads(const HttpServer *s);
/* Connection threads inside the handler right now: a handler that hands its work on and
 * returns is not counted while the work goes on; one that waits for it is. */
unsigned http_server_handlers_running(const HttpServer *s);
/* Connections MHD serves now (both listeners; not those waiting for their head). */
unsigned http_server_connections(const HttpServer *s);
/* The body budget this server counts against (its own or HttpConfig.body_budget). */
HttpBudget *http_server_budget(const HttpServer *s);
/* Requests answered so far with a status of status_class hundred (1..5; 0: any other) whose
 * route class (HttpConfig.route_class) is route_class; 0 for indexes out of range. Any
 * thread. */
uint64_t http_server_requests(HttpServer *s, unsigned route_class, unsigned status_class);
/* Connections one caller may hold on this server (HttpConfig.max_per_caller, resolved). */
unsigned http_server_max_per_caller(const HttpServer *s);

/* Who is asking, for the layer's per-caller bounds (a share of the body budget, a share of
 * the server's connections): an opaque key, 1 to HTTP_CALLER_MAX_BYTES - 1 bytes, that the
 * guard names once it has authenticated the caller (the faces name the tenant), so one
 * caller cannot use up what every caller shares. Only from the guard; -1 (nothing changes)
 * for a bad key or after it. Without it a request is its peer's: "addr:<IP>" over TCP,
 * "uid:<uid>" over the unix socket. */
int http_request_set_caller(HttpRequest *r, const char *key);
const char *http_request_caller(const HttpRequest *r);

/* The identity token names, by the server's HttpConfig.authenticate (the daemon's one lookup
 * of tokens, for both faces); see HttpAuthenticateFn. Any thread. */
int http_authenticate(const HttpRequest *r, const char *token, HttpIdentity *ret, Error **errp);

/* State a guard leaves for the handler: the request owns ctx until the handler takes it
 * back (http_request_take_context()); free_ctx(ctx) runs if the request ends first. */
void http_request_set_context(HttpRequest *r, void *ctx, void (*free_ctx)(void *));
void *http_request_take_context(HttpRequest *r);

const char *http_method(const HttpRequest *r); /* GET, HEAD, POST, PUT or DELETE */
/* Raw path without the query, already checked: starts with '/', only RFC 3986 path bytes,
 * no empty, ".", ".." (raw or encoded) or encoded-'/' segment, <= HTTP_PATH_MAX_BYTES. */
const char *http_path(const HttpRequest *r);
/* The raw query after '?' as the client sent it (checked like the path's bytes); "" when
 * there is none. For passing a request on unchanged (api_forward.c). */
const char *http_raw_query(const HttpRequest *r);
/* The decoded value of the first query parameter named key; "" for "?key"; NULL if absent. */
const char *http_query(const HttpRequest *r, const char *key);
/* Case-insensitive; the first header of that name; NULL if absent. */
const char *http_header(const HttpRequest *r, const char *name);
/* Whether the head declares a body (Content-Length over 0, or chunked); for guards. */
bool http_request_has_body(const HttpRequest *r);
/* The body (NULL and 0 when there was none). Owned by the request. */
const uint8_t *http_body(const HttpRequest *r, size_t *ret_len);
bool http_peer_is_unix(const HttpRequest *r);
/* Whether the request came in on a server started with HttpConfig.peer_listener (another
 * host's hop, for handlers that several servers share). */
bool http_request_from_peer(const HttpRequest *r);
/* SO_PEERCRED uid of a unix-socket peer; -1 for TCP peers (or if the kernel gave none). */
int http_peer_cred(const HttpRequest *r, uid_t *ret_uid);
/* The path's percent-decoded segments: a new NULL-terminated array of *ret_n strings
 * (free with http_strv_free(), http_url.h). "/" has none. A segment holds any bytes but
 * '/' and NUL (not necessarily UTF-8) and is never "", "." or "..". */
int http_path_segments(const HttpRequest *r, char ***ret_segments, size_t *ret_n, Error **errp);

/* Adds a response header; before the http_respond_*() call. Refused (-1, not added):
 * a name that is not an HTTP token, a value with CR, LF or NUL, more than
 * HTTP_MAX_RESPONSE_HEADERS, or a header the layer sets itself. */
int http_response_header(HttpRequest *r, const char *name, const char *value);

/* Each http_respond_*() ends the handler's hold on r (see HttpRequest). They never fail
 * towards the caller: if building the response fails the client gets a 500 or a closed
 * connection. */

/* Serialises body (stolen; NULL means an empty object) as application/json. */
void http_respond_json(HttpRequest *r, unsigned status, json_t *body);
/* Status from e's category (E_INVALID 400, E_UNAUTHORIZED 401, E_FORBIDDEN 403,
 * E_NOT_FOUND 404, E_CONFLICT 409, E_TOO_LARGE 413, E_QUOTA 429, E_UNAVAILABLE 503,
 * E_TIMEOUT 504, E_GUEST 502, E_INTERNAL/E_IO 500; NULL e: 500) and the body
 * {"error":{"code":"<error_category_name>","message":"...",<extra's fields>}}.
 * extra (stolen, may be NULL) must be an object; "code" and "message" in it are ignored.
 * An integer "retry_after" in extra also becomes a Retry-After header. */
void http_respond_error(HttpRequest *r, const Error *e, json_t *extra);
/* That status of a category (the one table; other faces map errors through it too). */
unsigned http_status_for_category(ErrorCategory c);
/* data[0..len) is copied. content_type NULL: no Content-Type (here and below). */
void http_respond_bytes(HttpRequest *r, unsigned status, const char *content_type, const void *data,
                        size_t len);
/* Sends bytes [0, size) of the regular file fd (sendfile where MHD can) with a
 * Content-Length; fd is stolen and closed when the response is done. fd < 0: 500. */
void http_respond_file(HttpRequest *r, unsigned status, const char *content_type, int fd,
                       uint64_t size);

/* The answer to a HEAD whose body this server does not have (a HEAD forwarded to another
 * host, which sent only its headers): status, content_type and the Content-Length the body
 * would have (content_length < 0: none, as for a stream), no body. Only for a HEAD: any
 * other method gets a 500, never a length it is not sent. */
void http_respond_head(HttpRequest *r, unsigned status, const char *content_type,
                       int64_t content_length);

/* Streaming (chunked) responses. The producer runs on the connection's thread, one call at a
 * time; it writes up to cap bytes into buf and returns how many (> 0), 0 when the stream is
 * finished, or -1 to abort it (the client sees a truncated chunked body). Each returned
 * block is sent (flushed) before the next call. A producer that has nothing to send waits
 * in http_stream_wait(); it must not block anywhere the layer cannot wake it. The stream
 * ends too when the client goes away or the server stops: http_stream_wait() then returns
 * -1 and http_stream_closed() is true, and the producer should return -1.
 * free_userdata(userdata) runs exactly once: when the stream ends for any reason, or when
 * the request is released if the answer came too late to be sent (server stop). */
typedef struct HttpStream HttpStream;
typedef ssize_t (*HttpProducer)(HttpStream *st, void *userdata, uint8_t *buf, size_t cap);
void http_respond_stream(HttpRequest *r, unsigned status, const char *content_type,
                         HttpProducer producer, void *userdata, void (*free_userdata)(void *));
/* Waits until fd is readable (fd < 0: no fd), the stream is closed, or the monotonic
 * deadline_usec passes (0: no deadline). Returns 1 (readable), 0 (deadline) or -1 (closed). */
int http_stream_wait(HttpStream *st, int fd, uint64_t deadline_usec);
/* True once the client hung up or the server is stopping. */
bool http_stream_closed(HttpStream *st);

/* Run on the loop, then reply (http_loop.c): a handler hands a request's work to the daemon's
 * loop thread and returns; the loop answers, at once or from a later completion on it. At
 * most one call per request. Exactly one party answers: the loop (it claims the request with
 * http_loop_claim()), or, when the loop has not claimed it first, fail() with E_TIMEOUT
 * (timeout_message) once timeout_usec has passed since the post, with E_UNAVAILABLE "the
 * daemon is stopping" at once when the server stops (stop_answers; otherwise the layer's 503
 * after HTTP_STOP_GRACE_USEC), or with E_UNAVAILABLE HTTP_LOOP_POST_FAILED when the post
 * fails. fail() runs on the connection thread (or the poster's), possibly while fn runs. A
 * call answered before the loop began it never runs. */
#define HTTP_LOOP_POST_FAILED "the daemon is stopping or overloaded"
typedef struct Loop Loop;
typedef struct HttpLoopCall HttpLoopCall;
/* On the loop thread, with the loop side's reference: it ends with http_loop_release(), now
 * or from a later callback, having answered the request if http_loop_claim() gave it. */
typedef void (*HttpLoopFn)(HttpLoopCall *call, void *ctx);
/* Answers req with err in the front door's own shape: exactly one http_respond_*(). */
typedef void (*HttpLoopFailFn)(HttpRequest *req, const Error *err, void *ctx);
typedef struct HttpLoopSpec {
    Loop *loop;
    HttpLoopFn fn;
    HttpLoopFailFn fail;         /* NULL: http_respond_error() */
    void *ctx;                   /* fn's and fail's */
    void (*free_ctx)(void *ctx); /* once nobody uses the call (also when the post fails) */
    uint64_t timeout_usec;       /* 0: none */
    const char *timeout_message; /* a static string */
    bool stop_answers;
} HttpLoopSpec;
/* From the handler, before it returns; never fails towards the caller (see above). */
void http_loop_post(HttpRequest *req, const HttpLoopSpec *spec);
/* The request to answer now, or NULL when it was answered already (timeout, stop): then
 * answer nothing. The request stays readable until http_loop_release() either way. Loop. */
HttpRequest *http_loop_claim(HttpLoopCall *call);
/* The loop side is done with the call (and with the request). */
void http_loop_release(HttpLoopCall *call);
