/* The request object and the checks on its head and body.
 *
 * A request is made when MHD has read the request line (its URI-log callback), checked
 * once the head is in (method, target, header count and size, Content-Length) and fed
 * its body in chunks, never beyond max_body_bytes: the buffer grows geometrically up to
 * the declared Content-Length (or the cap for a chunked body), so a client that declares
 * a large body but sends little costs little; a body of spool_min_bytes or more is written
 * to an unlinked file in spool_dir instead and mapped read-only once complete (page cache,
 * not heap: uploads of many MiB do not sit in the daemon's memory). Headers are copied out
 * of MHD so the request
 * stays valid for a handler that answers after MHD has let go of the connection (server
 * stop). Two references: the connection's (dropped when MHD completes the request) and the
 * handler's (dropped by its http_respond_*() call). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdutil.h"
#include "http_internal.h"

static const char *const allowed_methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE"};

HttpRequest *
http_request_new(HttpServer *s, HttpConn *c, const char *raw_target)
{
    HttpRequest *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    if (!(r->raw_target = strdup(raw_target))) {
        free(r);
        return NULL;
    }
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* the stop grace is monotonic */
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, &attr);
    pthread_condattr_destroy(&attr);
    r->refs = 1;
    r->srv = s;
    r->conn = c;
    r->is_unix = c->is_unix;
    r->has_uid = c->has_uid;
    r->uid = c->uid;
    memcpy(r->caller, c->peer, sizeof(r->caller));
    r->reply.fd = -1;
    r->spool_fd = -1;
    return r;
}

static void
request_free(HttpRequest *r)
{
    free(r->raw_target);
    http_target_clear(&r->target);
    for (size_t i = 0; i < r->n_headers; i++) {
        free(r->hdr_names[i]);
        free(r->hdr_values[i]);
    }
    free(r->hdr_names);
    free(r->hdr_values);
    if (r->body_mapped)
        (void) munmap(r->body, r->body_len);
    else
        free(r->body);
    if (r->spool_fd >= 0)
        (void) close(r->spool_fd);
    if (r->budget_held)
        http_budget_release(r->srv->budget, r->caller, r->budget_held);
    if (r->free_ctx)
        r->free_ctx(r->ctx);
    http_reply_clear(&r->reply);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void
http_request_unref(HttpRequest *r)
{
    unsigned left;

    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    left = --r->refs;
    pthread_mutex_unlock(&r->lock);
    if (left == 0)
        request_free(r);
}

static bool
method_allowed(const char *method)
{
    for (size_t i = 0; i < ELEMENTSOF(allowed_methods); i++)
        if (strcmp(method, allowed_methods[i]) == 0)
            return true;
    return false;
}

typedef struct {
    HttpRequest *r;
    bool oom;
} HeaderCopy;

static enum MHD_Result
header_copy_one(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    HeaderCopy *hc = cls;
    HttpRequest *r = hc->r;

    (void) kind;
    if (r->n_headers >= HTTP_MAX_REQUEST_HEADERS)
        return MHD_NO;
    char *k = strdup(key), *v = strdup(value ? value : "");
    if (!k || !v) {
        free(k);
        free(v);
        hc->oom = true;
        return MHD_NO;
    }
    r->hdr_names[r->n_headers] = k;
    r->hdr_values[r->n_headers++] = v;
    return MHD_YES;
}

static int
headers_copy(HttpRequest *r, struct MHD_Connection *mc, Error **errp)
{
    HeaderCopy hc = {.r = r};

    r->hdr_names = calloc(HTTP_MAX_REQUEST_HEADERS, sizeof(char *));
    r->hdr_values = calloc(HTTP_MAX_REQUEST_HEADERS, sizeof(char *));
    if (!r->hdr_names || !r->hdr_values)
        return error_set(errp, E_INTERNAL, ENOMEM, "copy headers");
    (void) MHD_get_connection_values(mc, MHD_HEADER_KIND, header_copy_one, &hc);
    return hc.oom ? error_set(errp, E_INTERNAL, ENOMEM, "copy headers") : 0;
}

/* The body's framing, from our copy of the headers. MHD 0.9.75 takes the first of two
 * Content-Length headers and waits for EOF on a Transfer-Encoding it does not know: both
 * are refused here, as is a request with both framings (request smuggling). Sets the body
 * cap: the Content-Length, or max_body_bytes for a chunked body. */
static int
framing_check(HttpRequest *r, unsigned *ret_status, Error **errp)
{
    const char *cl = NULL, *te = NULL;
    unsigned n_cl = 0, n_te = 0;
    size_t max = r->srv->cfg.max_body_bytes;
    uint64_t v = 0;

    for (size_t i = 0; i < r->n_headers; i++) {
        if (strcasecmp(r->hdr_names[i], MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
            cl = r->hdr_values[i], n_cl++;
        else if (strcasecmp(r->hdr_names[i], MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
            te = r->hdr_values[i], n_te++;
    }
    *ret_status = MHD_HTTP_BAD_REQUEST;
    if (n_cl > 1 || n_te > 1 || (cl && te))
        return error_set(errp, E_INVALID, 0, "ambiguous body framing");
    if (te && strcasecmp(te, "chunked") != 0)
        return error_set(errp, E_INVALID, 0, "unsupported Transfer-Encoding");
    r->body_cap = max;
    if (!cl)
        return 0;
    for (const char *p = cl; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
            return error_set(errp, E_INVALID, 0, "malformed Content-Length");
        v = v * 10 + (uint64_t) (*p - '0');
    }
    if (*cl == '\0')
        return error_set(errp, E_INVALID, 0, "malformed Content-Length");
    if (v > max) {
        *ret_status = MHD_HTTP_CONTENT_TOO_LARGE;
        return error_set(errp, E_TOO_LARGE, 0, "request body is larger than %zu bytes", max);
    }
    r->body_cap = (size_t) v;
    return 0;
}

static int
head_size_check(HttpRequest *r, struct MHD_Connection *mc, unsigned *ret_status, Error **errp)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    unsigned n = (unsigned) MHD_get_connection_values(mc, MHD_HEADER_KIND, NULL, NULL);

    *ret_status = MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE;
    if (n > HTTP_MAX_REQUEST_HEADERS)
        return error_set(errp, E_TOO_LARGE, 0, "request has more than %d header lines",
                         HTTP_MAX_REQUEST_HEADERS);
    if (info && info->header_size > r->srv->cfg.max_header_bytes)
        return error_set(errp, E_TOO_LARGE, 0, "request head is larger than %zu bytes",
                         r->srv->cfg.max_header_bytes);
    return 0;
}

int
http_request_check_head(HttpRequest *r, struct MHD_Connection *mc, const char *method,
                        unsigned *ret_status, Error **errp)
{
    if (!method_allowed(method)) {
        *ret_status = MHD_HTTP_METHOD_NOT_ALLOWED;
        return error_set(errp, E_INVALID, 0, "method not allowed");
    }
    strcpy(r->method, method); /* one of allowed_methods: fits */
    if (http_target_parse(r->raw_target, strlen(r->raw_target), &r->target, errp) < 0) {
        bool too_long = *errp && (*errp)->category == E_TOO_LARGE;
        *ret_status = too_long ? MHD_HTTP_URI_TOO_LONG : MHD_HTTP_BAD_REQUEST;
        return -1;
    }
    if (head_size_check(r, mc, ret_status, errp) < 0)
        return -1;
    if (headers_copy(r, mc, errp) < 0) {
        *ret_status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        return -1;
    }
    return framing_check(r, ret_status, errp);
}

/* A Content-Length body reserves all of it before it is read: refused, the client gets a 503
 * and the body is never read. A chunked one reserves as its buffer grows. */
static int
request_reserve_body(HttpRequest *r, Error **errp)
{
    const char *cl = http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    size_t n = cl ? r->body_cap : 0; /* framing_check() parsed it into body_cap */
    HttpBudget *b = r->srv->budget;

    switch (http_budget_reserve(b, r->caller, n)) {
    case BUDGET_OK:
        r->budget_held = n;
        return 0;
    case BUDGET_SHARE:
        return error_set(errp, E_UNAVAILABLE, 0,
                         "your requests hold as many request bodies as one caller may "
                         "(%zu bytes): retry later",
                         http_budget_share(b));
    default:
        return error_set(errp, E_UNAVAILABLE, 0,
                         "the server holds as many request bodies as it may (%zu bytes): "
                         "retry later",
                         http_budget_limit(b));
    }
}

int
http_request_admit(HttpRequest *r, Error **errp)
{
    if (!http_conn_claim(r->conn, r->caller))
        return error_set(errp, E_UNAVAILABLE, 0,
                         "your connections hold as many of this server's as one caller may "
                         "(%u): retry later",
                         r->srv->max_per_caller);
    return request_reserve_body(r, errp);
}

int
http_request_set_caller(HttpRequest *r, const char *key)
{
    size_t len = key ? strnlen(key, HTTP_CALLER_MAX_BYTES) : 0;

    if (r->phase != PHASE_HEAD || len == 0 || len >= HTTP_CALLER_MAX_BYTES)
        return -1;
    memcpy(r->caller, key, len + 1);
    r->caller_named = true;
    return 0;
}

const char *
http_request_caller(const HttpRequest *r)
{
    return r->caller;
}

/* Whether this body goes to an unlinked file in cfg.spool_dir: one of cfg.spool_min_bytes or
 * more, decided at its first chunk (a filesystem without O_TMPFILE keeps it in memory). */
static bool
request_spools(HttpRequest *r)
{
    const HttpConfig *c = &r->srv->cfg;

    if (r->spool_fd >= 0)
        return true;
    if (!c->spool_dir || r->body_cap < c->spool_min_bytes || r->body_len > 0)
        return false;
    r->spool_fd = open(c->spool_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    return r->spool_fd >= 0;
}

/* The request holds n bytes of the server's budget (reserving the difference): false when
 * the budget or its caller's share is spent. */
static bool
request_hold_budget(HttpRequest *r, size_t n)
{
    if (n <= r->budget_held)
        return true;
    if (http_budget_reserve(r->srv->budget, r->caller, n - r->budget_held) != BUDGET_OK)
        return false;
    r->budget_held = n;
    return true;
}

int
http_request_append_body(HttpRequest *r, const char *data, size_t len)
{
    if (len > r->body_cap - r->body_len)
        return -1;
    atomic_fetch_add(&r->conn->body_bytes, len); /* the minimum rate counts what arrived */
    if (request_spools(r)) {
        /* the budget counts it as if held (reserve_body() took a Content-Length's whole) */
        if (!request_hold_budget(r, r->body_len + len) || write_all(r->spool_fd, data, len) < 0)
            return -1;
        r->body_len += len;
        return 0;
    }
    if (r->body_len + len > r->body_alloc) {
        size_t want = MAX(r->body_len + len, MIN(r->body_cap, MAX(r->body_alloc * 2, 4096)));
        if (!request_hold_budget(r, want))
            return -1;
        uint8_t *b = realloc(r->body, want);
        if (!b)
            return -1;
        r->body = b;
        r->body_alloc = want;
    }
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
    return 0;
}

int
http_request_map_body(HttpRequest *r)
{
    if (r->spool_fd < 0 || r->body_len == 0)
        return 0;
    void *m = mmap(NULL, r->body_len, PROT_READ, MAP_PRIVATE, r->spool_fd, 0);
    if (m == MAP_FAILED)
        return -1;
    r->body = m;
    r->body_mapped = true;
    return 0;
}

const char *
http_method(const HttpRequest *r)
{
    return r->method;
}

const char *
http_path(const HttpRequest *r)
{
    return r->target.path;
}

const char *
http_raw_query(const HttpRequest *r)
{
    const char *q = strchr(r->raw_target, '?');
    return q ? q + 1 : "";
}

const char *
http_query(const HttpRequest *r, const char *key)
{
    for (size_t i = 0; i < r->target.n_query; i++)
        if (strcmp(r->target.query_keys[i], key) == 0)
            return r->target.query_values[i];
    return NULL;
}

const char *
http_header(const HttpRequest *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (strcasecmp(r->hdr_names[i], name) == 0)
            return r->hdr_values[i];
    return NULL;
}

bool
http_request_has_body(const HttpRequest *r)
{
    /* framing_check() set body_cap to the Content-Length, or to the cap without one */
    if (http_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH))
        return r->body_cap > 0;
    return http_header(r, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

const uint8_t *
http_body(const HttpRequest *r, size_t *ret_len)
{
    *ret_len = r->body_len;
    return r->body_len ? r->body : NULL;
}

bool
http_peer_is_unix(const HttpRequest *r)
{
    return r->is_unix;
}

int
http_authenticate(const HttpRequest *r, const char *token, HttpIdentity *ret, Error **errp)
{
    if (!r->srv->cfg.authenticate)
        return error_set(errp, E_UNAUTHORIZED, 0, "no such token");
    return r->srv->cfg.authenticate(r->srv->cfg.authenticate_userdata, token, ret, errp);
}

bool
http_request_from_peer(const HttpRequest *r)
{
    return r->srv->cfg.peer_listener; /* the server outlives its requests; cfg is fixed */
}

int
http_peer_cred(const HttpRequest *r, uid_t *ret_uid)
{
    if (!r->is_unix || !r->has_uid)
        return -1;
    *ret_uid = r->uid;
    return 0;
}

int
http_path_segments(const HttpRequest *r, char ***ret_segments, size_t *ret_n, Error **errp)
{
    char **copy = http_strv_copy(r->target.segments, r->target.n_segments);

    if (!copy)
        return error_set(errp, E_INTERNAL, ENOMEM, "path segments");
    *ret_segments = copy;
    *ret_n = r->target.n_segments;
    return 0;
}

void
http_request_set_context(HttpRequest *r, void *ctx, void (*free_ctx)(void *))
{
    if (r->free_ctx)
        r->free_ctx(r->ctx);
    r->ctx = ctx;
    r->free_ctx = free_ctx;
}

void *
http_request_take_context(HttpRequest *r)
{
    void *ctx = r->ctx;
    r->ctx = NULL;
    r->free_ctx = NULL;
    return ctx;
}
