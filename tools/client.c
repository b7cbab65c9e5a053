/* See client.h. One libcurl easy handle per Client, reset before each request (keeps its
 * connection cache, so a follow loop reconnects cheaply). */
#include "client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"

struct Client {
    CURL *curl;
    char *base;        /* "http://localhost" for the socket, else the URL without a final '/' */
    char *socket_path; /* NULL for TCP */
    char *auth_header; /* "Authorization: Bearer ..." or NULL */
    char *cacert;      /* CA file for https, or NULL: the system's store */
    char where[CLIENT_URL_MAX_BYTES + 8];
    ClientInterruptFn interrupted;
    void *interrupted_ud;
    ClientProgressFn progress;
    void *progress_ud;
    long last_status;   /* of the last request's answer; 0: none came */
    bool nobody_listens; /* the last request found no socket, or a refusal: not up (yet) */
};

typedef struct Xfer {
    Client *c;
    long status; /* 0 until the first body byte or the end */
    uint8_t *buf;
    size_t len, cap, max; /* 2xx body kept in memory (no sink) */
    bool over;
    char ebuf[CLIENT_ERROR_BODY_MAX_BYTES + 1];
    size_t elen;
    ClientSinkFn sink;
    void *sink_ud;
    Error *sink_err;
    bool interrupted;
    char workspace_header[CLIENT_WORKSPACE_HEADER_BYTES];
} Xfer;

static void
xfer_clear(Xfer *x)
{
    free(x->buf);
    error_free(x->sink_err);
}

int
client_new(const ClientOptions *o, Client **ret, Error **errp)
{
    static bool global_done;
    _cleanup_(client_freep) Client *c = calloc(1, sizeof(*c));

    if (!c)
        return error_set(errp, E_INTERNAL, ENOMEM, "client");
    if (!global_done && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return error_set(errp, E_INTERNAL, 0, "libcurl failed to initialise");
    global_done = true;
    if (o->url && o->url[0]) {
        size_t n = strlen(o->url);
        if (n > CLIENT_URL_MAX_BYTES / 2 ||
            (strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0))
            return error_set(errp, E_INVALID, 0,
                             "--url must be http://HOST:PORT or https://... (got '%.100s')",
                             o->url);
        while (n > 0 && o->url[n - 1] == '/')
            n--;
        c->base = strndup(o->url, n);
        snprintf(c->where, sizeof(c->where), "%s", c->base ? c->base : "");
    } else {
        const char *p = o->socket_path;
        if (!p || p[0] == '\0' || strlen(p) > 107)
            return error_set(errp, E_INVALID, 0,
                             "--socket must be a unix socket path of 1..107 bytes");
        c->socket_path = strdup(p);
        c->base = strdup("http://localhost");
        snprintf(c->where, sizeof(c->where), "unix:%s", p);
    }
    if (o->token && o->token[0]) {
        if (strlen(o->token) > CLIENT_TOKEN_MAX_BYTES || strpbrk(o->token, "\r\n"))
            return error_set(errp, E_INVALID, 0, "the token must be one line of at most %u bytes",
                             CLIENT_TOKEN_MAX_BYTES);
        if (asprintf(&c->auth_header, "Authorization: Bearer %s", o->token) < 0)
            c->auth_header = NULL;
        if (!c->auth_header)
            return error_set(errp, E_INTERNAL, ENOMEM, "client");
    }
    if (o->cacert && o->cacert[0] && access(o->cacert, R_OK) < 0)
        return error_set(errp, E_INVALID, errno, "--cacert %.300s", o->cacert);
    if (o->cacert && o->cacert[0] && !(c->cacert = strdup(o->cacert)))
        return error_set(errp, E_INTERNAL, ENOMEM, "client");
    if (!c->base || (o->socket_path && !o->url && !c->socket_path) || !(c->curl = curl_easy_init()))
        return error_set(errp, E_INTERNAL, ENOMEM, "client");
    *ret = TAKE_PTR(c);
    return 0;
}

void
client_free(Client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->base);
    free(c->socket_path);
    free(c->auth_header);
    free(c->cacert);
    free(c);
}

const char *
client_where(const Client *c)
{
    return c->where;
}

bool
client_nobody_listens(const Client *c)
{
    return c && c->nobody_listens;
}

long
client_last_status(const Client *c)
{
    return c ? c->last_status : 0;
}

void
client_set_interrupt(Client *c, ClientInterruptFn fn, void *userdata)
{
    c->interrupted = fn;
    c->interrupted_ud = userdata;
}

void
client_set_progress(Client *c, ClientProgressFn fn, void *userdata)
{
    c->progress = fn;
    c->progress_ud = userdata;
}

/* ------------------------------------------------------------------ callbacks */

static bool
status_ok(long status)
{
    return status >= 200 && status < 300;
}

static int
keep_body(Xfer *x, const char *p, size_t n)
{
    if (n > x->max - x->len) {
        x->over = true;
        return -1;
    }
    if (x->len + n + 1 > x->cap) {
        size_t cap = MAX(x->cap * 2, x->len + n + 1);
        cap = MIN(cap, x->max + 1);
        uint8_t *b = realloc(x->buf, cap);
        if (!b)
            return -1;
        x->buf = b;
        x->cap = cap;
    }
    memcpy(x->buf + x->len, p, n);
    x->len += n;
    x->buf[x->len] = '\0';
    return 0;
}

static size_t
on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    Xfer *x = ud;
    size_t n = size * nmemb;

    if (x->status == 0)
        curl_easy_getinfo(x->c->curl, CURLINFO_RESPONSE_CODE, &x->status);
    if (!status_ok(x->status)) {
        size_t room = CLIENT_ERROR_BODY_MAX_BYTES - x->elen;
        memcpy(x->ebuf + x->elen, p, MIN(room, n));
        x->elen += MIN(room, n);
        x->ebuf[x->elen] = '\0';
        return n > room ? 0 : n; /* enough of an error body: stop reading */
    }
    if (x->sink)
        return x->sink(x->sink_ud, (const uint8_t *) p, n, &x->sink_err) < 0 ? 0 : n;
    return keep_body(x, p, n) < 0 ? 0 : n;
}

void
client_workspace_header(const char *line, size_t n, char ret[CLIENT_WORKSPACE_HEADER_BYTES])
{
    static const char name[] = "X-Stockade-Workspace:";

    if (n > sizeof(name) && strncasecmp(line, name, sizeof(name) - 1) == 0) {
        const char *v = line + sizeof(name) - 1;
        size_t vn = n - (sizeof(name) - 1);
        while (vn > 0 && (*v == ' ' || *v == '\t'))
            v++, vn--;
        while (vn > 0 && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' '))
            vn--;
        bool plain = vn < CLIENT_WORKSPACE_HEADER_BYTES;
        for (size_t i = 0; plain && i < vn; i++)
            plain = v[i] >= 'a' && v[i] <= 'z';
        if (plain) {
            memcpy(ret, v, vn);
            ret[vn] = '\0';
        }
    }
}

static size_t
on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    Xfer *x = ud;
    size_t n = size * nmemb;
    client_workspace_header(p, n, x->workspace_header);
    return n;
}

static int
on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    Xfer *x = ud;
    Client *c = x->c;

    if (c->progress)
        c->progress(c->progress_ud, (uint64_t) dlnow, (uint64_t) dltotal, (uint64_t) ulnow,
                    (uint64_t) ultotal);
    if (c->interrupted && c->interrupted(c->interrupted_ud)) {
        x->interrupted = true;
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ one transfer */

typedef struct Request {
    const char *method, *path;
    const void *body; /* NULL: no body */
    size_t body_len;
    const char *content_type;
    bool stream; /* no total time limit */
} Request;

static int
setup(Client *c, const Request *rq, Xfer *x, struct curl_slist **headers, char *errbuf,
      Error **errp)
{
    CURL *h = c->curl;
    char url[CLIENT_URL_MAX_BYTES * 2];

    if (snprintf(url, sizeof(url), "%s%s", c->base, rq->path) >= (int) sizeof(url))
        return error_set(errp, E_INVALID, 0, "request path too long");
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (c->socket_path)
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket_path);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c->cacert) { /* that CA alone, not the system's store besides */
        curl_easy_setopt(h, CURLOPT_CAINFO, c->cacert);
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
    }
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long) CLIENT_CONNECT_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long) CLIENT_STALL_TIMEOUT_S);
    if (!rq->stream)
        curl_easy_setopt(h, CURLOPT_TIMEOUT, (long) CLIENT_REQUEST_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "stockade/" STOCKADE_VERSION);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    if (c->auth_header)
        *headers = curl_slist_append(*headers, c->auth_header);
    if (rq->body && rq->content_type) {
        char ct[96];
        snprintf(ct, sizeof(ct), "Content-Type: %s", rq->content_type);
        *headers = curl_slist_append(*headers, ct);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
    if (rq->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) rq->body_len);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body);
    }
    if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "POST") != 0)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    return 0;
}

/* Why a connection could not be made, with the fix. */
static int
connect_error(Client *c, CURLcode rc, const char *errbuf, Error **errp)
{
    long os_errno = 0;
    curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &os_errno);
    c->nobody_listens = os_errno == ECONNREFUSED || (c->socket_path && os_errno == ENOENT);
    if (c->socket_path && os_errno == ENOENT)
        return error_set(errp, E_UNAVAILABLE, 0,
                         "cannot reach the daemon: no socket at %s; is stockaded running? "
                         "(start it: systemctl start stockaded; or point --socket or "
                         "STOCKADE_SOCKET at its <state_dir>/api.sock, or use --url)",
                         c->socket_path);
    if (c->socket_path && os_errno == EACCES)
        return error_set(errp, E_UNAVAILABLE, 0,
                         "cannot reach the daemon: permission denied on %s (the API socket is "
                         "for root and its group): run as root, or use --url",
                         c->socket_path);
    if (c->socket_path && os_errno == ECONNREFUSED)
        return error_set(errp, E_UNAVAILABLE, 0,
                         "cannot reach the daemon: nothing listens on %s (a stale socket); "
                         "start stockaded",
                         c->socket_path);
    return error_set(errp, E_UNAVAILABLE, 0,
                     "cannot reach the daemon at %s: %s; is stockaded running? (check "
                     "--url/STOCKADE_URL, or use --socket)",
                     c->where, errbuf[0] ? errbuf : curl_easy_strerror(rc));
}

static bool
is_connect_failure(CURLcode rc)
{
    return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
           rc == CURLE_COULDNT_RESOLVE_PROXY;
}

/* Runs one request. Returns 0 when an answer arrived (any status; *ret_rc says whether its
 * body came whole), -1 when none did (connect failure, interrupt) or on a sink error. */
static int
perform(Client *c, const Request *rq, Xfer *x, CURLcode *ret_rc, char *errbuf, Error **errp)
{
    struct curl_slist *headers = NULL;

    x->c = c;
    errbuf[0] = '\0';
    c->last_status = 0;
    c->nobody_listens = false;
    if (setup(c, rq, x, &headers, errbuf, errp) < 0) {
        curl_slist_free_all(headers);
        return -1;
    }
    CURLcode rc = curl_easy_perform(c->curl);
    curl_slist_free_all(headers);
    if (x->status == 0)
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &x->status);
    c->last_status = x->status;
    *ret_rc = rc;
    if (x->sink_err) {
        if (errp && !*errp)
            *errp = TAKE_PTR(x->sink_err);
        return -1;
    }
    if (x->status == 0 && is_connect_failure(rc))
        return connect_error(c, rc, errbuf, errp);
    if (x->status == 0 && (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE))
        return error_set(errp, E_UNAVAILABLE, 0,
                         "cannot verify the daemon's TLS certificate at %s: %s (pass the CA that "
                         "signed it with --cacert FILE or STOCKADE_CACERT)",
                         c->where, errbuf[0] ? errbuf : curl_easy_strerror(rc));
    return 0;
}

/* A non-stream request's outcome: the answer's status decides. */
static int
finish(Client *c, Xfer *x, CURLcode rc, const char *errbuf, Error **errp)
{
    if (x->interrupted)
        return error_set(errp, E_UNAVAILABLE, 0, "interrupted");
    if (x->status != 0 && !status_ok(x->status))
        return client_map_error(x->status, x->ebuf, x->elen, errp);
    if (x->over)
        return error_set(errp, E_TOO_LARGE, 0, "the daemon's answer is over %zu bytes", x->max);
    if (rc != CURLE_OK || x->status == 0)
        return error_set(errp, E_UNAVAILABLE, 0, "the connection to the daemon at %s broke: %s",
                         c->where, errbuf[0] ? errbuf : curl_easy_strerror(rc));
    return 0;
}

int
client_parse_answer(const uint8_t *buf, size_t len, json_t **ret, Error **errp)
{
    json_error_t jerr;
    if (!ret)
        return 0;
    if (len == 0) {
        *ret = NULL;
        return 0;
    }
    json_t *o = json_loadb((const char *) buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o)
        return error_set(errp, E_INTERNAL, 0, "the daemon's answer is not JSON (line %d: %.80s)",
                         jerr.line, jerr.text);
    *ret = o;
    return 0;
}

static int
request_json(Client *c, const Request *rq, json_t **ret, Error **errp)
{
    Xfer x = {.max = CLIENT_JSON_MAX_BYTES};
    char errbuf[CURL_ERROR_SIZE];
    CURLcode rc;
    int r = perform(c, rq, &x, &rc, errbuf, errp);
    if (r == 0)
        r = finish(c, &x, rc, errbuf, errp);
    if (r == 0)
        r = client_parse_answer(x.buf, x.len, ret, errp);
    xfer_clear(&x);
    return r;
}

int
client_json(Client *c, const char *method, const char *path, json_t *body, json_t **ret,
            Error **errp)
{
    _cleanup_free_ char *text = NULL;
    if (body && !(text = json_dumps(body, JSON_COMPACT)))
        return error_set(errp, E_INTERNAL, ENOMEM, "request body");
    Request rq = {.method = method,
                  .path = path,
                  .body = text,
                  .body_len = text ? strlen(text) : 0,
                  .content_type = "application/json"};
    if (!body && strcmp(method, "POST") == 0) { /* an empty JSON object: the API wants JSON */
        rq.body = "{}";
        rq.body_len = 2;
    }
    return request_json(c, &rq, ret, errp);
}

int
client_put(Client *c, const char *path, const void *data, size_t len, json_t **ret, Error **errp)
{
    Request rq = {.method = "PUT",
                  .path = path,
                  .body = len ? data : "",
                  .body_len = len,
                  .content_type = "application/octet-stream"};
    return request_json(c, &rq, ret, errp);
}

int
client_post_bytes(Client *c, const char *path, const void *data, size_t len, json_t **ret,
                  Error **errp)
{
    Request rq = {.method = "POST",
                  .path = path,
                  .body = len ? data : "",
                  .body_len = len,
                  .content_type = "application/octet-stream"};
    return request_json(c, &rq, ret, errp);
}

int
client_get_bytes(Client *c, const char *path, size_t max_bytes, uint8_t **ret, size_t *ret_len,
                 Error **errp)
{
    Xfer x = {.max = max_bytes};
    Request rq = {.method = "GET", .path = path, .stream = true};
    char errbuf[CURL_ERROR_SIZE];
    CURLcode rc;
    int r = perform(c, &rq, &x, &rc, errbuf, errp);
    if (r == 0)
        r = finish(c, &x, rc, errbuf, errp);
    if (r == 0) {
        *ret = x.buf ? TAKE_PTR(x.buf) : (uint8_t *) calloc(1, 1);
        *ret_len = x.len;
        if (!*ret)
            r = error_set(errp, E_INTERNAL, ENOMEM, "download");
    }
    xfer_clear(&x);
    return r;
}

int
client_stream(Client *c, const char *path, ClientSinkFn sink, void *userdata,
              ClientStreamResult *ret, Error **errp)
{
    Xfer x = {.sink = sink, .sink_ud = userdata};
    Request rq = {.method = "GET", .path = path, .stream = true};
    char errbuf[CURL_ERROR_SIZE];
    CURLcode rc = CURLE_OK;
    _cleanup_error_ Error *err = NULL;

    *ret = (ClientStreamResult){0};
    int r = perform(c, &rq, &x, &rc, errbuf, &err);
    ret->answered = x.status != 0;
    snprintf(ret->workspace_header, sizeof(ret->workspace_header), "%s", x.workspace_header);
    if (x.interrupted) {
        ret->end = CLIENT_STREAM_INTERRUPTED;
        r = 0;
    } else if (r < 0 && !ret->answered && err && err->category == E_UNAVAILABLE) {
        ret->end = CLIENT_STREAM_DROPPED; /* never connected: the caller decides */
        snprintf(ret->why, sizeof(ret->why), "%s", err->message);
        r = 0;
    } else if (r < 0) {
        *errp = TAKE_PTR(err);
    } else if (ret->answered && !status_ok(x.status)) {
        r = client_map_error(x.status, x.ebuf, x.elen, errp);
    } else if (rc != CURLE_OK || !ret->answered) {
        ret->end = CLIENT_STREAM_DROPPED;
        snprintf(ret->why, sizeof(ret->why), "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
    }
    xfer_clear(&x);
    return r;
}

/* ------------------------------------------------------------------ errors */

static ErrorCategory
category_for_status(long status)
{
    switch (status) {
    case 400:
        return E_INVALID;
    case 401:
        return E_UNAUTHORIZED;
    case 403:
        return E_FORBIDDEN;
    case 404:
        return E_NOT_FOUND;
    case 409:
        return E_CONFLICT;
    case 413:
    case 431:
        return E_TOO_LARGE;
    case 429:
        return E_QUOTA;
    case 502:
        return E_GUEST;
    case 503:
        return E_UNAVAILABLE;
    case 504:
        return E_TIMEOUT;
    default:
        return status >= 400 && status < 500 ? E_INVALID : E_INTERNAL;
    }
}

static const char *
hint_for_status(long status)
{
    switch (status) {
    case 400:
        return "check the command's arguments (--help)";
    case 401:
        return "pass a valid --token or set STOCKADE_TOKEN";
    case 403:
        return "this token may not do that; use an operator token or the unix socket";
    case 405:
        return "this daemon does not know that request (is it older than this CLI?)";
    case 409:
        return "see its state with: stockade sessions get ID";
    case 413:
        return "the daemon caps a request at [api] max_body_mib (default 64 MiB)";
    case 431:
        return "the request head is too large";
    case 502:
        return "the guest broke and its session ended; stockade logs ID shows why";
    case 503:
        return "the daemon is stopping or overloaded; retry shortly";
    case 504:
        return "a guest did not answer in time; retry";
    case 404:
        return NULL;
    default:
        return status >= 500 ? "see the daemon's log (journalctl -u stockaded)" : NULL;
    }
}

/* What to do about a 429: wait (retry_after seconds), or have an operator raise the limit
 * named by "quota" (retry_after null: waiting does not help). */
static void
quota_hint(json_t *err, char *out, size_t cap)
{
    json_t *retry = json_object_get(err, "retry_after"), *key = json_object_get(err, "quota");
    char opt[40] = "LIMIT";
    if (json_is_string(key) && json_string_length(key) < sizeof(opt) &&
        strspn(json_string_value(key), "abcdefghijklmnopqrstuvwxyz_") == json_string_length(key)) {
        snprintf(opt, sizeof(opt), "%s", json_string_value(key));
        for (char *p = opt; *p; p++)
            *p = *p == '_' ? '-' : *p;
    }
    if (json_is_integer(retry))
        snprintf(out, cap,
                 "retry after %lld s, or raise the tenant's quota (stockade quota "
                 "TENANT --%s N)",
                 (long long) json_integer_value(retry), opt);
    else
        snprintf(out, cap,
                 "waiting does not help: an operator must raise the tenant's quota "
                 "(stockade quota TENANT --%s N)",
                 opt);
}

int
client_map_error(long status, const char *body, size_t len, Error **errp)
{
    char msg[CLIENT_MESSAGE_MAX_BYTES], code[48] = "", quota[160];
    json_t *o = json_loadb(body ? body : "", len, 0, NULL);
    json_t *e = json_object_get(o, "error");
    json_t *m = json_object_get(e, "message"), *cd = json_object_get(e, "code");

    if (json_is_string(m))
        log_escape(msg, sizeof(msg), json_string_value(m), json_string_length(m));
    else if (len > 0)
        log_escape(msg, sizeof(msg), body, MIN(len, (size_t) 120));
    else
        snprintf(msg, sizeof(msg), "no message");
    if (json_is_string(cd) && json_string_length(cd) < sizeof(code) &&
        strspn(json_string_value(cd), "abcdefghijklmnopqrstuvwxyz_") == json_string_length(cd))
        snprintf(code, sizeof(code), " %s", json_string_value(cd));
    const char *hint = hint_for_status(status);
    if (status == 429) {
        quota_hint(e, quota, sizeof(quota));
        hint = quota;
    }
    int r = error_set(errp, category_for_status(status), 0, "%s (HTTP %ld%s)%s%s", msg, status,
                      code, hint ? "; " : "", hint ? hint : "");
    json_decref(o);
    return r;
}

char *
client_escape_path(const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(path);
    char *out = malloc(n * 3 + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *) path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~/", *p)) {
            *o++ = (char) *p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}
