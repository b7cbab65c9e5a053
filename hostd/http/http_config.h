/* The HTTP layer's configuration (HttpConfig, its defaults) and the types it names: what the
 * config parser needs of the layer, without libmicrohttpd. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_DEFAULT_TCP_ADDRESS "127.0.0.1"
#define HTTP_DEFAULT_TCP_PORT 8787
#define HTTP_DEFAULT_UNIX_MODE 0660
#define HTTP_DEFAULT_MAX_BODY_BYTES ((size_t) 64 << 20)
#define HTTP_DEFAULT_MAX_HEADER_BYTES ((size_t) 32 << 10)
#define HTTP_DEFAULT_IDLE_TIMEOUT_S 30
#define HTTP_DEFAULT_REQUEST_TIMEOUT_S 60
#define HTTP_DEFAULT_MAX_CONNECTIONS 512
#define HTTP_DEFAULT_MAX_PER_IP 64
#define HTTP_DEFAULT_HEAD_TIMEOUT_S 10
#define HTTP_DEFAULT_MAX_PENDING 16384
#define HTTP_DEFAULT_BODY_BUDGET_BYTES ((size_t) 256 << 20)
#define HTTP_DEFAULT_SPOOL_MIN_BYTES ((size_t) 1 << 20) /* smaller bodies stay in memory */
/* A body in flight must grow by at least this rate in every window of this length. 4 KiB/s
 * is 32 kbit/s: a largest body must arrive within request_timeout_s anyway, at 268 times
 * that; a body that is in within one window is never judged (README.md). */
#define HTTP_DEFAULT_BODY_MIN_BYTES_PER_S ((size_t) 4 << 10)
#define HTTP_DEFAULT_BODY_RATE_WINDOW_S 10

/* Longest caller key (http_request_set_caller()), with its NUL. */
#define HTTP_CALLER_MAX_BYTES 96

/* Ceilings http_server_start() enforces on a config (a typo must not disable a limit). */
#define HTTP_MAX_BODY_BYTES_CEILING ((size_t) 1 << 30)
#define HTTP_MAX_HEADER_BYTES_FLOOR ((size_t) 1 << 10)
#define HTTP_MAX_HEADER_BYTES_CEILING ((size_t) 1 << 20)
#define HTTP_MAX_CONNECTIONS_CEILING 4096u
#define HTTP_MAX_PENDING_CEILING 262144u
#define HTTP_BODY_BUDGET_BYTES_CEILING ((size_t) 16 << 30)
#define HTTP_BODY_MIN_BYTES_PER_S_CEILING ((size_t) 1 << 30)
#define HTTP_TIMEOUT_S_CEILING 86400u

/* One request. Valid from the handler call until the handler's http_respond_*() call;
 * neither the handler nor anyone it hands req to may touch it after that. Its accessors
 * may be called from any thread, one at a time. */
typedef struct HttpRequest HttpRequest;

/* Called on the connection's thread once the request head is in and passed the layer's
 * checks, before a single body byte is read (http_body() is empty here). Returns true to go
 * on: the body is read and the handler called. Or it answers with exactly one
 * http_respond_*() call before returning (not a stream) and returns false: the answer goes
 * out at once, the body is never read and the connection is closed. This is where
 * authentication belongs, so a caller without credentials cannot make the server read,
 * let alone buffer, a body. It may leave state for the handler (http_request_set_context()). */
typedef bool (*HttpGuard)(HttpRequest *req, void *userdata);

/* Who a credential names: a tenant, and whether it is an operator's. */
#define HTTP_TENANT_MAX_BYTES 64
typedef struct HttpIdentity {
    char tenant[HTTP_TENANT_MAX_BYTES];
    bool admin;
} HttpIdentity;

/* The one token -> identity lookup both faces use (http_authenticate(); the daemon gives
 * every server the same one). token is as presented (NULL: none). Any thread. 0 with *ret;
 * or -1 with E_UNAUTHORIZED for a token that names nobody (missing, malformed, unknown,
 * revoked alike: the faces answer each one 401 with one message), or another category when
 * the lookup itself failed (not the caller's fault). */
typedef struct Error Error;
typedef int (*HttpAuthenticateFn)(void *userdata, const char *token, HttpIdentity *ret,
                                  Error **errp);

/* Request counts (http_server_requests()): each answered request is counted under the class
 * its face gives it and its status's hundred. A class is an index below
 * HTTP_ROUTE_CLASSES_MAX (the face names them); segments are the decoded path's (n 0 for a
 * head that never parsed). Pure; any connection thread. */
#define HTTP_ROUTE_CLASSES_MAX 16
#define HTTP_STATUS_CLASSES 6 /* index status / 100: 1..5; 0 for any other */
typedef unsigned (*HttpRouteClassFn)(const char *const *segments, size_t n);

/* Bytes of request bodies held in memory at once, shared by every server given it (the
 * daemon's API and E2B listeners), in all and per caller (the key a guard names with
 * http_request_set_caller(), else the peer's address): a body is admitted only if its
 * Content-Length (a chunked body: each growth of its buffer) fits both, else 503 (a chunked
 * body: the connection closes). It also carries the minimum rate at which an admitted body
 * must arrive, so every listener that shares the bytes shares the rule. Thread-safe. */
typedef struct HttpBudget HttpBudget;

typedef struct HttpConfig {
    const char *tcp_address;    /* numeric IPv4/IPv6 address; NULL = no TCP listener */
    uint16_t tcp_port;          /* 0 = any (tests; see http_server_tcp_port()) */
    const char *unix_path;      /* NULL = none; a stale socket there is replaced */
    mode_t unix_mode;           /* of the socket file */
    size_t max_body_bytes;      /* over it: 413 (or close, for chunked bodies) */
    size_t max_header_bytes;    /* request line + header lines */
    unsigned idle_timeout_s;    /* no byte in either direction for this long: close */
    unsigned request_timeout_s; /* absolute, from accept (or the previous response) until
                                 * the request head and body are in */
    unsigned max_connections;   /* both listeners together */
    unsigned max_per_ip;        /* TCP only: connections of one address waiting for their
                                 * head, and (separately) connections MHD serves */
    unsigned head_timeout_s;    /* TCP: from accept until the request head is complete (no
                                 * longer than the two timeouts above) */
    unsigned max_pending;       /* TCP connections waiting for their head; when full, the
                                 * oldest is closed for a new one */
    unsigned max_per_caller;    /* connections one caller (http_request_set_caller()) holds on
                                 * this server, counted from its request's guard until the
                                 * connection closes; 0: half of max_connections */
    /* The body budget (http_budget_new() takes these four, and the server when body_budget is
     * NULL): bytes of bodies held at once; one caller's share of them (0: half the budget,
     * but at least max_body_bytes); and the minimum rate: a body still coming in must have
     * grown by body_min_bytes_per_s * body_rate_window_s bytes in each window of
     * body_rate_window_s since its head, else its connection is closed (0: no minimum). */
    size_t body_budget_bytes;
    size_t body_share_bytes;
    size_t body_min_bytes_per_s;
    unsigned body_rate_window_s;
    HttpBudget *body_budget; /* shared; not owned; NULL: the server's own, from the above */
    const char *spool_dir;   /* a body of spool_min_bytes or more (its Content-Length, or a
                              * chunked one) is written, as it arrives, to an unlinked file
                              * here (O_TMPFILE) and mapped read-only for the handler: it
                              * sits in the page cache, not the heap. NULL: memory only.
                              * The budget above counts it the same either way. */
    size_t spool_min_bytes;
    HttpGuard guard;            /* NULL: every head passes */
    HttpRouteClassFn route_class; /* NULL: every request is class 0 */
    const char *tls_cert_file;  /* TCP: HTTPS with this PEM certificate (chain) and key, read */
    const char *tls_key_file;   /* and checked at start; NULL: plain HTTP. Unix: never TLS */
    bool peer_listener;         /* the cluster's host-to-host listener: its guard admits only
                                 * other hosts; handlers read it (http_request_from_peer())
                                 * and never pass such a request on again */
    /* http_authenticate()'s lookup; NULL: no token names anyone. */
    HttpAuthenticateFn authenticate;
    void *authenticate_userdata;
} HttpConfig;

/* The defaults above; unix_path NULL. */
void http_config_defaults(HttpConfig *c);
