/* The hop of a forwarded request: the owner's side in a thread of its own, the client's
 * side on the connection thread. See api_forward.c for when, api_forward.h for the trust.
 * Every hop goes to the owner's host-to-host listener (its advertise_url, api_hop.c), never
 * to a listener of its clients, whose per-address and connection limits it would share
 * (issue 25), and names the host and the face it is for. Each tenant has at most
 * FWD_TENANT_HOPS_MAX hops under way from here at once (429 beyond).
 *
 * One detached thread per forwarded request runs libcurl (blocking easy interface) towards
 * the owner, on a handle kept with its connection from an earlier transfer when there is
 * one. The request body is the one already read under the local limits and is read by curl
 * in place, so the request is answered only once all of it went upstream. The owner's answer
 * comes back through a bounded buffer (FWD_BUFFER_BYTES): a response with a Content-Length
 * that fits is answered whole (with its length); anything else (chunked, as
 * events?follow=1 and the workspace tar, or larger) is answered as a stream whose producer
 * runs on the connection thread. Back-pressure: a full buffer blocks curl's write callback,
 * so the owner's socket stops being read. The client going away closes the stream; the
 * curl thread sees the cancel flag at its next write or progress callback (at most about a
 * second) and drops the owner's connection. The owner going away ends the transfer and the
 * client's stream with it (truncated, so the client knows). A HEAD goes upstream as a HEAD
 * and is answered with the owner's status, headers and Content-Length, and no body
 * (http_respond_head), exactly as the owner answers it locally. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "api_forward_internal.h"
#include "timeutil.h"

#define FWD_BUFFER_BYTES (256u * 1024) /* the owner's answer in memory, per request */
#define FWD_CONNECT_TIMEOUT_MS 3000    /* the owner's TCP connect */
#define FWD_LOW_SPEED_TIME_S 120       /* a silent owner (events send a line each 15 s) */
#define FWD_MAX_KEPT_HEADERS 4         /* response headers passed back */
#define FWD_PASS_HEADER_MAX_BYTES 4096 /* a request header passed through (api_forward_pass) */
/* A request header line sent upstream: a name of at most 64 bytes, ": ", the larger of a
 * passed value and the hop credential (64 hex digits), NUL. */
#define FWD_HEADER_LINE_MAX_BYTES (FWD_PASS_HEADER_MAX_BYTES + 128)
_Static_assert(CLUSTER_HOP_AUTH_HEX_BYTES + 64 <= FWD_HEADER_LINE_MAX_BYTES,
               "the credential's line");

/* One forwarded request. References: the transfer thread's, and the stream's once the
 * answer is a stream. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t room; /* the producer took bytes, or the transfer was cancelled */
    unsigned refs;
    ApiForward *af;
    CURL *curl;       /* the transfer thread's */
    HttpRequest *req; /* until answered */
    char host_id[CLUSTER_HOST_ID_MAX_BYTES + 1];
    char url[API_FORWARD_URL_MAX_BYTES + 1];
    char tenant[64];  /* the native face's identity */
    char hop_key[64]; /* the tenant this hop counts against (ApiForward.hops) */
    ApiHopFace face;
    bool admin;
    bool head; /* a HEAD: the owner sends headers only; its length is answered */
    /* The hop key this host sends to the owner's hop listener (cluster_hop_credential(),
     * never the secret), on every face. */
    char hop_auth[CLUSTER_HOP_AUTH_HEX_BYTES + 1];
    bool hop_refused; /* the owner's hop listener refused hop_auth (API_HOP_REFUSED_HEADER) */
    const char *const *pass; /* the E2B faces: the client's headers passed through, or NULL */
    const char *tls_ca;      /* the CA an https:// owner's certificate must chain to; NULL:
                              * the system's store (the Cluster's string, lives as long) */
    bool insecure;           /* [cluster] insecure_hops: http:// owners allowed */
    const uint8_t *body;
    size_t body_len, body_off;
    long status;
    bool chunked;
    curl_off_t content_length; /* -1: none */
    char ctype[256];
    char *kept[FWD_MAX_KEPT_HEADERS][2];
    size_t n_kept;
    bool headers_done, answered, done, failed, cancel;
    char curl_error[CURL_ERROR_SIZE];
    uint8_t *buf;
    size_t len;
    int efd; /* written when bytes or the end arrive; the producer waits on it */
} Fwd;

static void
fwd_unref(Fwd *f)
{
    pthread_mutex_lock(&f->lock);
    unsigned left = --f->refs;
    pthread_mutex_unlock(&f->lock);
    if (left > 0)
        return;
    for (size_t i = 0; i < f->n_kept; i++) {
        free(f->kept[i][0]);
        free(f->kept[i][1]);
    }
    explicit_bzero(f->hop_auth, sizeof(f->hop_auth));
    if (f->efd >= 0)
        close(f->efd);
    free(f->buf);
    pthread_cond_destroy(&f->room);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static void
fwd_wake(Fwd *f)
{
    uint64_t one = 1;
    (void) !write(f->efd, &one, sizeof(one));
}

/* 502 naming the owner: the client learns which host failed and how (what: "did not
 * answer: " and curl's one line, a refused certificate, ...), nothing of the credential. */
static void
respond_hop_failed(HttpRequest *req, const Fwd *f, const char *what, const char *why)
{
    atomic_fetch_add(&f->af->unreachable, 1);
    http_respond_json(req, 502,
                      json_pack("{s:{s:s,s:s++++,s:s}}", "error", "code", "host_unreachable",
                                "message", "the session's host ", f->host_id, " ", what, why,
                                "host", f->host_id));
}

static void
respond_unreachable(HttpRequest *req, const Fwd *f, const char *why)
{
    respond_hop_failed(req, f, "did not answer: ", why);
}

/* What a failed transfer says about the owner: TLS failures are named as such (a wrong
 * certificate is not an owner that is down). */
static const char *
hop_failure_what(CURLcode rc)
{
    switch (rc) {
    case CURLE_PEER_FAILED_VERIFICATION:
        return "presented a TLS certificate this host does not trust ([cluster] tls_ca), so "
               "nothing was sent: ";
    case CURLE_SSL_CONNECT_ERROR:
        return "failed the TLS handshake, so nothing was sent: ";
    case CURLE_SSL_CACERT_BADFILE:
        return "could not be verified: [cluster] tls_ca is not a readable CA file: ";
    case CURLE_UNSUPPORTED_PROTOCOL:
        return "was not contacted: its URL is http:// and [cluster] insecure_hops is off: ";
    default:
        return "did not answer: ";
    }
}

/* ------------------------------------------------------------------ the client's side */

static ssize_t
fwd_produce(HttpStream *st, void *userdata, uint8_t *out, size_t cap)
{
    Fwd *f = userdata;
    for (;;) {
        uint64_t v;
        (void) !read(f->efd, &v, sizeof(v)); /* drain before looking: no wake-up is lost */
        pthread_mutex_lock(&f->lock);
        if (f->len > 0) {
            size_t n = MIN(cap, f->len);
            memcpy(out, f->buf, n);
            memmove(f->buf, f->buf + n, f->len - n);
            f->len -= n;
            pthread_cond_signal(&f->room);
            pthread_mutex_unlock(&f->lock);
            return (ssize_t) n;
        }
        bool done = f->done, failed = f->failed;
        pthread_mutex_unlock(&f->lock);
        if (done)
            return failed ? -1 : 0; /* a truncated stream tells the client the owner went */
        if (http_stream_wait(st, f->efd, 0) < 0)
            return -1;
    }
}

/* The stream ended (finished, the client left, the server stops): stop the transfer. */
static void
fwd_stream_end(void *userdata)
{
    Fwd *f = userdata;
    pthread_mutex_lock(&f->lock);
    f->cancel = true;
    pthread_cond_broadcast(&f->room);
    pthread_mutex_unlock(&f->lock);
    fwd_unref(f);
}

/* Whether the owner's 401 is about this host, not the caller: its hop listener refused the
 * credential (it says so in HOP_REFUSED_HEADER, on every face), or a hop carrying an identity
 * was refused (the caller's own token never goes upstream on the native face). An E2B face's
 * own 401 (the client's key or token) passes through. */
static bool
fwd_credential_refused(const Fwd *f)
{
    return f->status == 401 && (f->hop_refused || !f->pass);
}

/* Answers the client once, under no lock (the producer may start at once). stream: as a
 * stream of what comes; else whole, from the buffer. An owner that refused this host's
 * credential: that is this host's failure, not the caller's, so 502 naming the owner. */
static void
fwd_answer(Fwd *f, bool stream)
{
    HttpRequest *req = f->req;
    f->req = NULL;
    if (fwd_credential_refused(f)) {
        respond_hop_failed(req, f, "refused this host's credential: ",
                           "their host_token_file holds no secret this host sends (a rotation "
                           "step missed?)");
        return;
    }
    for (size_t i = 0; i < f->n_kept; i++)
        (void) http_response_header(req, f->kept[i][0], f->kept[i][1]);
    const char *ctype = f->ctype[0] ? f->ctype : NULL;
    if (f->head) { /* the owner's length, as a local HEAD answers it (chunked: none) */
        http_respond_head(req, (unsigned) f->status, ctype, f->chunked ? -1 : f->content_length);
    } else if (stream) {
        pthread_mutex_lock(&f->lock);
        f->refs++; /* the stream's */
        pthread_mutex_unlock(&f->lock);
        http_respond_stream(req, (unsigned) f->status, ctype, fwd_produce, f, fwd_stream_end);
    } else {
        http_respond_bytes(req, (unsigned) f->status, ctype, f->buf, f->len);
    }
}

/* ------------------------------------------------------------------ the owner's side */

static size_t
fwd_read_body(char *out, size_t size, size_t nmemb, void *userdata)
{
    Fwd *f = userdata;
    size_t n = MIN(size * nmemb, f->body_len - f->body_off);
    memcpy(out, f->body + f->body_off, n);
    f->body_off += n;
    return n;
}

/* curl rewinds the body when a kept connection turned out closed and it sends again. */
static int
fwd_seek_body(void *userdata, curl_off_t offset, int origin)
{
    Fwd *f = userdata;
    if (origin != SEEK_SET || offset < 0 || (uint64_t) offset > f->body_len)
        return CURL_SEEKFUNC_CANTSEEK;
    f->body_off = (size_t) offset;
    return CURL_SEEKFUNC_OK;
}

static void
keep_header(Fwd *f, const char *line, size_t len)
{
    char name[API_FORWARD_HEADER_NAME_MAX_BYTES + 1];
    const char *v;
    size_t vlen;
    if (api_forward_header_split(line, len, name, &v, &vlen) < 0)
        return;
    if (strcasecmp(name, "Content-Type") == 0) {
        snprintf(f->ctype, sizeof(f->ctype), "%.*s", (int) vlen, v);
    } else if (strcasecmp(name, "Transfer-Encoding") == 0) {
        f->chunked = true;
    } else if (strcasecmp(name, API_HOP_REFUSED_HEADER) == 0) {
        f->hop_refused = true;
    } else if (api_forward_response_header_kept(name) && f->n_kept < FWD_MAX_KEPT_HEADERS) {
        char *k = strdup(name), *val = strndup(v, vlen);
        if (!k || !val) {
            free(k);
            free(val);
            return;
        }
        f->kept[f->n_kept][0] = k;
        f->kept[f->n_kept++][1] = val;
    }
}

static size_t
fwd_header(char *line, size_t size, size_t nmemb, void *userdata)
{
    Fwd *f = userdata;
    size_t len = size * nmemb;

    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) { /* a new answer (after a 100) */
        f->chunked = false;
        f->hop_refused = false;
        f->ctype[0] = '\0';
        return len;
    }
    if (!(len == 2 && line[0] == '\r') && !(len == 1 && line[0] == '\n')) {
        keep_header(f, line, len);
        return len;
    }
    return len; /* the blank line: the first body byte (fwd_write) or the end decides */
}

/* Called with f->lock held, before the first body byte is stored. */
static bool
fwd_should_stream(const Fwd *f)
{
    return api_forward_streams(f->chunked, f->content_length, FWD_BUFFER_BYTES,
                               fwd_credential_refused(f), f->body_off == f->body_len);
}

static size_t
fwd_write(char *data, size_t size, size_t nmemb, void *userdata)
{
    Fwd *f = userdata;
    size_t len = size * nmemb, done = 0;

    pthread_mutex_lock(&f->lock);
    if (!f->headers_done) {
        f->headers_done = true;
        (void) curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &f->status);
        (void) curl_easy_getinfo(f->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &f->content_length);
        bool stream = fwd_should_stream(f);
        if (stream && f->req) {
            pthread_mutex_unlock(&f->lock);
            fwd_answer(f, true);
            pthread_mutex_lock(&f->lock);
            f->answered = true;
        }
    }
    while (done < len) {
        while (f->len == FWD_BUFFER_BYTES && !f->cancel) {
            if (!f->answered) { /* more than fits and no stream: not answerable whole */
                f->cancel = true;
                snprintf(f->curl_error, sizeof(f->curl_error), "its answer outgrew %u bytes",
                         FWD_BUFFER_BYTES);
                break;
            }
            /* Timed: a stop must reach a transfer whose client stopped reading. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            (void) pthread_cond_timedwait(&f->room, &f->lock, &ts);
            if (atomic_load(&f->af->stopping))
                f->cancel = true;
        }
        if (f->cancel)
            break;
        size_t n = MIN(len - done, FWD_BUFFER_BYTES - f->len);
        memcpy(f->buf + f->len, data + done, n);
        f->len += n;
        done += n;
        fwd_wake(f);
    }
    bool cancel = f->cancel;
    pthread_mutex_unlock(&f->lock);
    return cancel ? 0 : len;
}

static int
fwd_progress(void *userdata, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    Fwd *f = userdata;
    (void) dt, (void) dn, (void) ut, (void) un;
    pthread_mutex_lock(&f->lock);
    bool cancel = f->cancel;
    pthread_mutex_unlock(&f->lock);
    return cancel || atomic_load(&f->af->stopping);
}

/* "name: value" appended to *h (the line wiped after: credentials go this way). false when
 * out of memory (*h is kept for the caller to free). */
static bool
header_add(struct curl_slist **h, const char *name, const char *value)
{
    char line[FWD_HEADER_LINE_MAX_BYTES];
    snprintf(line, sizeof(line), "%s: %s", name, value);
    struct curl_slist *t = curl_slist_append(*h, line);
    explicit_bzero(line, sizeof(line));
    if (t)
        *h = t;
    return t != NULL;
}

/* What every hop carries: no 100-continue round trip before a body, the host credential,
 * the host and the face it is for. */
static struct curl_slist *
fwd_hop_headers(const Fwd *f)
{
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    const char *fmt[][2] = {{API_FORWARD_HOST_HEADER, f->hop_auth},
                            {API_HOP_TO_HEADER, f->host_id},
                            {API_HOP_FACE_HEADER, api_hop_face_name(f->face)}};
    for (size_t i = 0; h && i < ELEMENTSOF(fmt); i++)
        if (!header_add(&h, fmt[i][0], fmt[i][1]))
            goto fail_free;
    return h;

fail_free:
    curl_slist_free_all(h);
    return NULL;
}

/* The native face: the caller's identity and the client's Content-Type. */
static struct curl_slist *
fwd_request_headers(const Fwd *f, const char *ctype)
{
    struct curl_slist *h = fwd_hop_headers(f);
    const char *fmt[][2] = {{API_FORWARD_TENANT_HEADER, f->tenant},
                            {API_FORWARD_ADMIN_HEADER, f->admin ? "1" : "0"},
                            {"Content-Type", ctype}};
    for (size_t i = 0; h && i < ELEMENTSOF(fmt); i++)
        if (fmt[i][1] && !header_add(&h, fmt[i][0], fmt[i][1]))
            goto fail_free;
    return h;

fail_free:
    curl_slist_free_all(h);
    return NULL;
}

/* A client's header value goes on only when it is plain text on one line within max. */
static const char *
plain_header(HttpRequest *req, const char *name, size_t max)
{
    const char *v = http_header(req, name);
    if (!v || strlen(v) > max)
        return NULL;
    for (const char *p = v; *p; p++)
        if ((unsigned char) *p < ' ' || (unsigned char) *p >= 0x7f)
            return NULL;
    return v;
}

static const char *
plain_ctype(HttpRequest *req)
{
    return plain_header(req, "Content-Type", 255);
}

/* Passing (api_forward_pass): the client's own headers of f->pass, unchanged, and nothing
 * that names the caller (the owner's E2B face authenticates it). */
static struct curl_slist *
fwd_pass_headers(const Fwd *f, HttpRequest *req)
{
    struct curl_slist *h = fwd_hop_headers(f);
    const char *ct = plain_ctype(req);

    if (h && ct && !header_add(&h, "Content-Type", ct))
        goto fail_free;
    for (size_t i = 0; h && f->pass[i]; i++) {
        const char *v = plain_header(req, f->pass[i], FWD_PASS_HEADER_MAX_BYTES);
        if (v && strlen(f->pass[i]) <= 64 && !header_add(&h, f->pass[i], v))
            goto fail_free;
    }
    return h;

fail_free:
    curl_slist_free_all(h);
    return NULL;
}

/* How the hop reaches the owner (issue 25 finding 9, issue 30): never through a proxy from
 * the daemon's environment (libcurl honours http_proxy, https_proxy and ALL_PROXY; a proxy
 * would see the credential and the bodies), https:// only unless insecure_hops, TLS 1.2 at
 * least, the owner's certificate and name verified against [cluster] tls_ca alone (the
 * system's store is then not trusted too) or, without tls_ca, the system's store. */
static void
fwd_transport(const Fwd *f, CURL *curl)
{
    curl_easy_setopt(curl, CURLOPT_PROXY, "");
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, f->insecure ? "http,https" : "https");
    curl_easy_setopt(curl, CURLOPT_SSLVERSION, (long) CURL_SSLVERSION_TLSv1_2);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    if (f->tls_ca) {
        curl_easy_setopt(curl, CURLOPT_CAINFO, f->tls_ca);
        curl_easy_setopt(curl, CURLOPT_CAPATH, NULL);
    }
}

static CURLcode
fwd_perform(Fwd *f, CURL *curl, struct curl_slist *hdrs, const char *method)
{
    curl_easy_setopt(curl, CURLOPT_URL, f->url);
    fwd_transport(f, curl);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long) FWD_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, (long) FWD_LOW_SPEED_TIME_S);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, f->curl_error);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, fwd_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, f);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, fwd_write);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, fwd_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, f);
    curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 64L * 1024);
    if (f->head) {
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
        if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || f->body_len > 0) {
            curl_easy_setopt(curl, CURLOPT_POST, 1L); /* the method line says `method` */
            curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) f->body_len);
            curl_easy_setopt(curl, CURLOPT_READFUNCTION, fwd_read_body);
            curl_easy_setopt(curl, CURLOPT_READDATA, f);
            curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, fwd_seek_body);
            curl_easy_setopt(curl, CURLOPT_SEEKDATA, f);
        }
    }
    return curl_easy_perform(curl);
}

/* A handle with its connections, or a new one. */
static CURL *
handle_take(ApiForward *af)
{
    CURL *h = NULL;
    pthread_mutex_lock(&af->lock);
    if (af->n_idle > 0)
        h = af->handles[--af->n_idle];
    pthread_mutex_unlock(&af->lock);
    if (h)
        curl_easy_reset(h); /* options back to defaults; open connections stay */
    return h ? h : curl_easy_init();
}

/* Kept only after a transfer that ended well: a failed or cancelled one may have left its
 * connection in any state (curl closes those it cannot reuse anyway). */
static void
handle_give(ApiForward *af, CURL *h, bool ok)
{
    pthread_mutex_lock(&af->lock);
    if (ok && af->n_idle < FWD_IDLE_HANDLES && !atomic_load(&af->stopping)) {
        af->handles[af->n_idle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&af->lock);
    if (h)
        curl_easy_cleanup(h);
}

static void
respond_plain(HttpRequest *req, ErrorCategory cat, const char *message)
{
    Error e = {.category = cat};
    snprintf(e.message, sizeof(e.message), "%s", message);
    http_respond_error(req, &e, NULL);
}

/* Counted under the lock that api_forward_stop() sets stopping under: either the stop
 * sees this transfer and waits for it, or this sees the stop and starts nothing. */
static bool
live_enter(ApiForward *af)
{
    pthread_mutex_lock(&af->lock);
    bool ok = !atomic_load(&af->stopping);
    if (ok)
        af->live++;
    pthread_mutex_unlock(&af->lock);
    return ok;
}

static void
live_leave(ApiForward *af)
{
    pthread_mutex_lock(&af->lock);
    af->live--;
    pthread_mutex_unlock(&af->lock);
}

/* The tenant's share of hops (FWD_TENANT_HOPS_MAX), taken for the transfer's life. */
static bool
hop_key_enter(ApiForward *af, const char *key)
{
    pthread_mutex_lock(&af->lock);
    bool ok = api_tally_enter(&af->hops, key, FWD_TENANT_HOPS_MAX);
    pthread_mutex_unlock(&af->lock);
    if (!ok)
        atomic_fetch_add(&af->refused_hops, 1);
    return ok;
}

static void
hop_key_leave(ApiForward *af, const char *key)
{
    pthread_mutex_lock(&af->lock);
    api_tally_leave(&af->hops, key);
    pthread_mutex_unlock(&af->lock);
}

static void *
fwd_thread(void *userdata)
{
    Fwd *f = userdata;
    CURLcode rc = CURLE_OUT_OF_MEMORY;
    const char *method = http_method(f->req);
    struct curl_slist *hdrs =
        f->pass ? fwd_pass_headers(f, f->req) : fwd_request_headers(f, plain_ctype(f->req));

    f->curl = handle_take(f->af);
    if (f->curl && hdrs)
        rc = fwd_perform(f, f->curl, hdrs, method);
    pthread_mutex_lock(&f->lock);
    if (!f->headers_done && rc == CURLE_OK) { /* no body came: the answer is complete */
        (void) curl_easy_getinfo(f->curl, CURLINFO_RESPONSE_CODE, &f->status);
        (void) curl_easy_getinfo(f->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &f->content_length);
    }
    f->done = true;
    f->failed = rc != CURLE_OK;
    bool answer = !f->answered;
    f->answered = true;
    pthread_mutex_unlock(&f->lock);
    fwd_wake(f);
    if (answer && f->failed) {
        HttpRequest *req = f->req;
        f->req = NULL;
        respond_hop_failed(req, f, hop_failure_what(rc),
                           f->curl_error[0] ? f->curl_error : curl_easy_strerror(rc));
    } else if (answer) {
        fwd_answer(f, false);
    }
    curl_slist_free_all(hdrs);
    ApiForward *af = f->af;
    if (f->curl)
        handle_give(af, f->curl, rc == CURLE_OK);
    hop_key_leave(af, f->hop_key);
    fwd_unref(f);
    live_leave(af);
    return NULL;
}

static Fwd *
fwd_new(Api *a, HttpRequest *req, const HopSpec *hs)
{
    Fwd *f = calloc(1, sizeof(*f));
    if (!f || !(f->buf = malloc(FWD_BUFFER_BYTES))) {
        free(f);
        return NULL;
    }
    cluster_hop_credential(a->d.cluster, f->hop_auth);
    f->tls_ca = cluster_tls_ca(a->d.cluster);
    f->insecure = cluster_insecure_hops(a->d.cluster);
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->room, NULL);
    f->refs = 1;
    f->af = a->fwd;
    f->req = req;
    f->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    f->content_length = -1;
    f->admin = hs->admin;
    f->face = hs->face;
    f->head = strcmp(http_method(req), "HEAD") == 0;
    f->pass = hs->pass;
    snprintf(f->tenant, sizeof(f->tenant), "%s", hs->tenant ? hs->tenant : "");
    snprintf(f->hop_key, sizeof(f->hop_key), "%s",
             hs->admin    ? FWD_SCOPE_OPERATOR
             : hs->tenant ? hs->tenant
                          : "");
    snprintf(f->host_id, sizeof(f->host_id), "%s", hs->host_id);
    f->body = http_body(req, &f->body_len);
    return f;
}

/* 429: the tenant has its share of hops under way (they end as their transfers do). */
static void
respond_hops_full(HttpRequest *req)
{
    Error e = {.category = E_QUOTA};
    snprintf(e.message, sizeof(e.message),
             "this tenant has %d requests on their way to other hosts from this one, the most "
             "at once: retry when one has ended",
             FWD_TENANT_HOPS_MAX);
    http_respond_error(req, &e,
                       json_pack("{s:s,s:i,s:i}", "quota", "forwarded_requests", "limit",
                                 FWD_TENANT_HOPS_MAX, "retry_after", 1));
}

void
api_forward_hop_start(Api *a, HttpRequest *req, const HopSpec *hs)
{
    pthread_attr_t attr;
    pthread_t t;

    if (!a->fwd || !live_enter(a->fwd)) {
        respond_plain(req, E_UNAVAILABLE, "the daemon is stopping");
        return;
    }
    Fwd *f = fwd_new(a, req, hs);
    if (!f) {
        respond_plain(req, E_INTERNAL, "out of memory forwarding the request");
        live_leave(a->fwd);
        return;
    }
    if (!hop_key_enter(a->fwd, f->hop_key)) {
        f->req = NULL;
        respond_hops_full(req);
        fwd_unref(f);
        live_leave(a->fwd);
        return;
    }
    if (f->efd < 0 || api_forward_url(hs->base_url, http_path(req), http_raw_query(req), f->url,
                                      sizeof(f->url)) < 0) {
        respond_unreachable(req, f, f->efd < 0 ? "no eventfd" : "its advertise_url is not usable");
        f->req = NULL;
        hop_key_leave(a->fwd, f->hop_key);
        fwd_unref(f);
        live_leave(a->fwd);
        return;
    }
    if (cluster_url_is_plain_http(f->url) && !f->insecure) { /* before any byte leaves */
        respond_hop_failed(req, f, hop_failure_what(CURLE_UNSUPPORTED_PROTOCOL),
                           "the credential and the request would cross the network in clear");
        f->req = NULL;
        hop_key_leave(a->fwd, f->hop_key);
        fwd_unref(f);
        live_leave(a->fwd);
        return;
    }
    atomic_fetch_add(&a->fwd->forwarded, 1);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int r = pthread_create(&t, &attr, fwd_thread, f);
    pthread_attr_destroy(&attr);
    if (r != 0) {
        respond_plain(req, E_UNAVAILABLE, "the daemon is overloaded");
        f->req = NULL;
        hop_key_leave(a->fwd, f->hop_key);
        fwd_unref(f);
        live_leave(a->fwd);
    }
}

void
api_forward_pass(Api *a, HttpRequest *req, const ApiPassTarget *t, const char *const *pass)
{
    api_forward_hop_start(a, req,
                          &(HopSpec){.host_id = t->host_id,
                                     .base_url = t->url,
                                     .face = t->face,
                                     .tenant = t->tenant,
                                     .pass = pass});
}

void
api_stop_forwarding(Api *a)
{
    if (!a)
        return;
    api_forward_stop(a->fwd);
    api_hop_server_stop(a); /* no other host's hop reaches a face that is about to stop */
}

void
api_forward_handles_free(ApiForward *af)
{
    while (af->n_idle > 0)
        curl_easy_cleanup(af->handles[--af->n_idle]);
}
