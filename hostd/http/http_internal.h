/* Internals shared by the files of the HTTP server layer (http*.c); nothing outside
 * hostd/http includes this. Who owns what and which lock guards it is written next to each
 * field; the lock order is HttpServer.lock before HttpRequest.lock, and
 * HttpServer.lock before the budget's (http_budget.c). */
#pragma once

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "http.h"
#include "http_tally.h"
#include "http_url.h"
#include "timeutil.h"

/* How long http_server_stop() lets a handler that has not answered yet do so before the
 * layer answers 503 itself. */
#define HTTP_STOP_GRACE_USEC (2 * USEC_PER_SEC)
/* And how much longer it lets answers already queued reach their clients before MHD closes
 * every socket. */
#define HTTP_STOP_DRAIN_USEC (500 * USEC_PER_MSEC)
/* Buffer MHD offers a producer per call (it may offer less when its pool is tight). */
#define HTTP_STREAM_BLOCK_BYTES ((size_t) 16 << 10)
/* Stack of each connection thread: handlers and producers run on it. */
#define HTTP_THREAD_STACK_BYTES ((size_t) 512 << 10)
/* Connections the kernel completes before accept(): bursts of clients (or of an attacker's
 * connections) must not make a legitimate client wait for a SYN retransmit. */
#define HTTP_LISTEN_BACKLOG 1024
/* Descriptors: two per connection MHD serves, one per connection waiting for its head,
 * plus this many for listeners, the eventfd, epoll and MHD's own inter-thread channels;
 * checked against RLIMIT_NOFILE at start. */
#define HTTP_FDS_PER_CONNECTION 2
#define HTTP_FD_RESERVE 64
/* MHD's per-connection pool must hold the head plus parsed header entries and the reply
 * head: we give it twice the head cap plus this, and check the head cap ourselves so the
 * client gets our JSON 431 rather than MHD's own page in all but extreme cases. */
#define HTTP_POOL_SLACK_BYTES ((size_t) 16 << 10)
/* Retry-After of a 503 for a spent body budget: uploads in flight end within seconds. */
#define HTTP_BUDGET_RETRY_AFTER_S "1"
/* A certificate chain or key file read at start. */
#define HTTP_TLS_FILE_MAX_BYTES ((size_t) 1 << 20)
/* GnuTLS priorities of the TLS listener: its defaults without TLS 1.0 and 1.1. */
#define HTTP_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

typedef struct HttpConn HttpConn;
typedef struct HttpAcceptor HttpAcceptor;

/* The TCP listener's certificate and key, PEM, NUL-terminated (http_tls.c). */
typedef struct HttpTls {
    char *cert_pem;
    size_t cert_len;
    char *key_pem; /* wiped when cleared */
    size_t key_len;
} HttpTls;

/* One MHD daemon: TCP or unix. */
typedef struct HttpListener {
    HttpServer *srv;
    bool is_unix;
    bool tls; /* serves HTTPS (the TCP listener with a certificate) */
    int fd;   /* listening socket; MHD owns it once the daemon started */
    struct MHD_Daemon *mhd;
} HttpListener;

struct HttpServer {
    HttpConfig cfg; /* strings point at the copies below */
    char *tcp_address;
    char *unix_path;
    dev_t unix_dev; /* identity of the socket file we bound, so stop removes only ours */
    ino_t unix_ino;
    uint16_t tcp_port;
    HttpHandler handler;
    void *userdata;
    HttpListener tcp;
    HttpListener unx;
    HttpAcceptor *acceptor; /* TCP connections until their head is in */
    HttpTls tls;            /* cfg.tls_cert_file/tls_key_file, read at start; empty: plain */
    HttpBudget *budget;     /* cfg.body_budget, or own_budget */
    HttpBudget *own_budget;
    unsigned max_per_caller; /* cfg.max_per_caller, or its default */
    int stop_fd;             /* eventfd, readable from the moment stop begins: wakes producers */
    atomic_bool stopping;
    atomic_uint in_handler; /* connection threads inside handler() */
    /* answered requests by route class (cfg.route_class) and status / 100 */
    atomic_uint_least64_t requests[HTTP_ROUTE_CLASSES_MAX][HTTP_STATUS_CLASSES];

    pthread_mutex_t lock;
    pthread_cond_t watchdog_cond; /* CLOCK_MONOTONIC; under lock */
    pthread_t watchdog;
    bool watchdog_running;
    bool watchdog_quit;          /* under lock */
    uint64_t watchdog_wake_usec; /* under lock: when it looks next; UINT64_MAX: asleep */
    HttpConn *conns;             /* under lock */
    unsigned n_conns;            /* under lock */
    HttpTally *conn_callers;     /* under lock: connections per caller (HttpConn.caller) */
    HttpRequest *waiting;        /* under lock: requests whose handler has not answered */
    unsigned n_active;           /* under lock: dispatched requests not completed yet */
    pthread_cond_t drain_cond;   /* CLOCK_MONOTONIC; under lock: n_active reached 0 */
};

/* One accepted socket, from MHD's STARTED to its CLOSED notification. */
struct HttpConn {
    HttpServer *srv;
    HttpConn *prev, *next; /* srv->conns, under srv->lock */
    int fd;                /* our dup of the socket: the watchdog's shutdown() target; a dup
                            * cannot be closed and reused behind our back */
    bool is_unix;
    bool has_uid;
    uid_t uid;
    char peer[HTTP_CALLER_MAX_BYTES];   /* the default caller: "addr:<IP>" or "uid:<uid>" */
    char caller[HTTP_CALLER_MAX_BYTES]; /* under srv->lock: the caller it counts for ("": none
                                         * yet), from its latest request's guard to its end */
    uint64_t deadline_usec;             /* under srv->lock; 0: none (request in, or streaming) */
    bool cut;                           /* under srv->lock: the watchdog shut it down */
    /* The minimum body rate: the connection thread adds what arrives; the watchdog looks at
     * each window's end whether it grew by enough since the last look. */
    atomic_size_t body_bytes;
    uint64_t rate_check_usec; /* under srv->lock; 0: no body being read */
    size_t rate_mark;         /* under srv->lock: body_bytes at the window's start */
    uint64_t started_usec;  /* MHD took it */
    bool head_first;        /* under srv->lock: TLS, and its first request head not in yet
                             * (the front door could not see it: the handshake and head get
                             * the head timeout on this thread) */
};

typedef enum { REPLY_NONE, REPLY_BUFFER, REPLY_FILE, REPLY_STREAM, REPLY_HEAD } HttpReplyKind;

/* What a handler answered; built into an MHD response on the connection thread. */
typedef struct HttpReply {
    HttpReplyKind kind;
    unsigned status;
    char *content_type;
    uint8_t *data; /* BUFFER */
    size_t len;
    int fd;                /* FILE */
    uint64_t size;         /* FILE; HEAD: the length announced (MHD_SIZE_UNKNOWN: none) */
    HttpProducer producer; /* STREAM */
    void *userdata;
    void (*free_userdata)(void *);
    char *hdr_names[HTTP_MAX_RESPONSE_HEADERS];
    char *hdr_values[HTTP_MAX_RESPONSE_HEADERS];
    size_t n_headers;
    bool close; /* Connection: close (the layer's; handlers cannot set Connection) */
} HttpReply;

typedef enum { PHASE_HEAD, PHASE_BODY, PHASE_HANDLING, PHASE_DONE } HttpRequestPhase;

struct HttpRequest {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* signalled when answered */
    unsigned refs;       /* under lock: the connection's, and the handler's until it answers */
    bool answered;       /* under lock */
    HttpRequest *wait_prev, *wait_next; /* srv->waiting, under srv->lock */

    /* Connection thread only (the handler never sees these). */
    HttpServer *srv;
    HttpConn *conn;
    HttpRequestPhase phase;
    bool active;             /* counted in srv->n_active */
    size_t body_cap;         /* Content-Length, or max_body_bytes for a chunked body */
    size_t body_alloc;       /* bytes allocated at body */
    size_t budget_held;      /* bytes of srv->budget this request holds (>= body_alloc) */
    int spool_fd;            /* a spooled body's unlinked file (cfg.spool_dir), else -1 */
    bool body_mapped;        /* body is spool_fd's read-only mapping of body_len bytes */
    HttpLoopCall *loop_call; /* under lock: the handler's http_loop_post(), until the wait ends */
    char caller[HTTP_CALLER_MAX_BYTES]; /* who is asking (http_request_set_caller()); the
                                         * budget counts budget_held under it */
    bool caller_named;                  /* the guard named it (else: the peer's) */
    void *ctx;                          /* the guard's state for the handler */
    void (*free_ctx)(void *);

    /* Filled on the connection thread before the handler runs; read-only afterwards. */
    char *raw_target;
    char method[8];
    HttpTarget target;
    char **hdr_names; /* copies, so the request outlives MHD's connection if it must */
    char **hdr_values;
    size_t n_headers;
    uint8_t *body;
    size_t body_len;
    bool is_unix;
    bool has_uid;
    uid_t uid;

    HttpReply reply; /* the handler's until it answers, then the connection thread's */
};

/* http_conn.c: connection tracking and the deadline watchdog. */
void http_conn_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
                      enum MHD_ConnectionNotificationCode code);
enum MHD_Result http_conn_accept_policy(void *cls, const struct sockaddr *addr, socklen_t len);
void http_conn_set_deadline(HttpConn *c, bool armed);
/* The connection now counts for caller (a request of it passed its guard); false when that
 * caller holds max_per_caller connections already (it then counts for nobody). */
bool http_conn_claim(HttpConn *c, const char *caller);
/* Whether the watchdog holds the body being read to the budget's minimum rate (on: from its
 * first byte on; off: the body is in, or was refused). */
void http_conn_watch_body(HttpConn *c, bool on);
/* The request head is in: a TLS connection's first head no longer has the head timeout,
 * only the request deadline from when it started. */
void http_conn_head_in(HttpConn *c);
/* The head window: head_timeout_s, no longer than the request and idle timeouts. */
uint64_t http_head_window_usec(const HttpConfig *c);
int http_watchdog_start(HttpServer *s, Error **errp);
void http_watchdog_stop(HttpServer *s);

/* http_request.c: the request object and the checks on its head and body. */
HttpRequest *http_request_new(HttpServer *s, HttpConn *c, const char *raw_target);
void http_request_unref(HttpRequest *r);
/* Returns 0 to go on reading the body, or -1 with the status and error to answer with. */
int http_request_check_head(HttpRequest *r, struct MHD_Connection *mc, const char *method,
                            unsigned *ret_status, Error **errp);
/* The request passed its guard: its connection counts for its caller, and its declared body
 * is reserved from the budget. E_UNAVAILABLE when the caller holds its share of connections
 * or of the budget, or the budget is spent. */
int http_request_admit(HttpRequest *r, Error **errp);
/* Appends a body chunk; -1 when it would exceed the cap or the budget (the connection is
 * then closed). */
int http_request_append_body(HttpRequest *r, const char *data, size_t len);
/* The whole body is in: a spooled one is mapped read-only for http_body(). -1: it cannot be
 * (the connection is then closed). */
int http_request_map_body(HttpRequest *r);

/* http_reply.c: answers and their MHD responses. */
void http_reply_clear(HttpReply *rp);
/* Sets r->reply to a JSON error answer (layer-made); for the connection thread. */
void http_reply_set_error(HttpReply *rp, unsigned status, const Error *e);
/* Builds rp into an MHD response (moving its body out) and queues it on mc, falling back
 * to a fixed 500; MHD_NO if even that failed (MHD then closes the connection). */
enum MHD_Result http_reply_queue(HttpServer *s, HttpReply *rp, struct MHD_Connection *mc);

/* http_tls.c: reads and checks the TCP listener's certificate and key (E_INVALID naming the
 * file that is unreadable or wrong, or both when they do not match). */
int http_tls_load(const char *cert_file, const char *key_file, HttpTls *ret, Error **errp);
void http_tls_clear(HttpTls *t);

/* http_accept.c: the TCP front door. Takes listen_fd (closed by stop, also on failure);
 * *ret is set even on failure, for http_acceptor_stop(). The thread leaves once
 * s->stop_fd is readable; stop joins it and closes what still waits. */
int http_acceptor_start(HttpServer *s, int listen_fd, struct MHD_Daemon *mhd, HttpAcceptor **ret,
                        Error **errp);
void http_acceptor_stop(HttpAcceptor *a);
unsigned http_acceptor_pending(const HttpAcceptor *a);

/* http_loop.c: what the connection thread's wait needs of a request's loop call. */
uint64_t http_loop_deadline(const HttpLoopCall *c); /* monotonic; 0: none */
bool http_loop_answers_stop(const HttpLoopCall *c);
/* Has the front door answer now (timeout, or stop), unless the loop claimed the request. */
void http_loop_expire(HttpLoopCall *c, bool stopping);
/* The wait is over: drops the connection thread's reference on r's call. */
void http_loop_detach(HttpRequest *r);

/* http_budget.c: reserve/release against a budget, in all and for a caller; reserve is all
 * or nothing. */
typedef enum { BUDGET_OK, BUDGET_FULL, BUDGET_SHARE } HttpBudgetVerdict;
int http_budget_check(const HttpConfig *c, Error **errp);
HttpBudgetVerdict http_budget_reserve(HttpBudget *b, const char *caller, size_t n);
void http_budget_release(HttpBudget *b, const char *caller, size_t n);
void http_budget_min_rate(const HttpBudget *b, size_t *ret_bytes_per_s, unsigned *ret_window_s);
void http_budget_count_slow_cut(HttpBudget *b);

/* http_listen.c: listening sockets. */
int http_listen_tcp(const char *address, uint16_t port, int *ret_fd, uint16_t *ret_port,
                    Error **errp);
int http_listen_unix(const char *path, mode_t mode, int *ret_fd, dev_t *ret_dev, ino_t *ret_ino,
                     Error **errp);
/* Removes path if it is still the socket file (dev, ino) we bound. */
void http_unlink_unix(const char *path, dev_t dev, ino_t ino);
