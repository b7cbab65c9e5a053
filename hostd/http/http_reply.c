/* Answers: what http_respond_*() records (on any thread) and how the connection thread turns
 * it into an MHD response. A handler's answer is published under the request lock and
 * wakes the connection thread, which alone talks to MHD (MHD_queue_response() must run on
 * the connection's own thread). Every response gets Cache-Control: no-store and
 * X-Content-Type-Options: nosniff; error bodies are {"error":{"code","message",...}}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_internal.h"
#include "http_stream.h"
#include "log.h"

#define HTTP_RESPONSE_HEADER_MAX_BYTES 4096
#define CONTENT_TYPE_JSON "application/json"

/* Headers the layer owns; a handler may not set them. */
static const char *const reserved_headers[] = {
    "Content-Type",           "Content-Length", "Transfer-Encoding", "Connection", "Cache-Control",
    "X-Content-Type-Options", "Date",           "Keep-Alive",
};

unsigned
http_status_for_category(ErrorCategory c)
{
    static const unsigned status[_E_CATEGORY_MAX] = {
        [E_INTERNAL] = 500,    [E_INVALID] = 400,  [E_UNAUTHORIZED] = 401, [E_FORBIDDEN] = 403,
        [E_NOT_FOUND] = 404,   [E_CONFLICT] = 409, [E_TOO_LARGE] = 413,    [E_QUOTA] = 429,
        [E_UNAVAILABLE] = 503, [E_TIMEOUT] = 504,  [E_GUEST] = 502,        [E_IO] = 500,
    };
    return (unsigned) c < _E_CATEGORY_MAX ? status[c] : 500;
}

void
http_reply_clear(HttpReply *rp)
{
    free(rp->content_type);
    free(rp->data);
    safe_close(rp->fd);
    if (rp->free_userdata)
        rp->free_userdata(rp->userdata);
    for (size_t i = 0; i < rp->n_headers; i++) {
        free(rp->hdr_names[i]);
        free(rp->hdr_values[i]);
    }
    *rp = (HttpReply){.fd = -1};
}

static bool
is_token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && !strchr("!#$%&'*+-.^_`|~", c))
            return false;
    }
    return true;
}

static int
reply_add_header(HttpReply *rp, const char *name, const char *value)
{
    if (rp->n_headers >= HTTP_MAX_RESPONSE_HEADERS)
        return -1;
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return -1;
    }
    rp->hdr_names[rp->n_headers] = n;
    rp->hdr_values[rp->n_headers++] = v;
    return 0;
}

int
http_response_header(HttpRequest *r, const char *name, const char *value)
{
    if (!is_token(name) || strpbrk(value, "\r\n") || strlen(value) > HTTP_RESPONSE_HEADER_MAX_BYTES)
        return -1;
    for (size_t i = 0; i < ELEMENTSOF(reserved_headers); i++)
        if (strcasecmp(name, reserved_headers[i]) == 0)
            return -1;
    return reply_add_header(&r->reply, name, value);
}

/* Serialises j compactly with a trailing newline into a new buffer. */
static int
json_to_buffer(const json_t *j, uint8_t **ret, size_t *ret_len)
{
    const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
    size_t n = json_dumpb(j, NULL, 0, flags);
    _cleanup_free_ uint8_t *buf = NULL;

    if (n == 0 || !(buf = malloc(n + 1)))
        return -1;
    if (json_dumpb(j, (char *) buf, n, flags) != n)
        return -1;
    buf[n] = '\n';
    *ret = TAKE_PTR(buf);
    *ret_len = n + 1;
    return 0;
}

static json_t *
message_string(const char *message)
{
    json_t *s = json_string(message);
    if (s)
        return s;
    /* Not UTF-8: escape it rather than lose it. */
    char esc[ERROR_MESSAGE_MAX * 4 + 4];
    return json_string(log_escape(esc, sizeof(esc), message, strlen(message)));
}

/* {"error":{<extra>,"code":...,"message":...}}; extra is stolen. NULL on OOM. */
static json_t *
error_json(ErrorCategory c, const char *message, json_t *extra)
{
    json_t *inner = extra; /* ours: stolen */

    if (!json_is_object(inner)) {
        json_decref(inner);
        inner = json_object();
    }
    if (!inner)
        return NULL;
    if (json_object_set_new(inner, "code", json_string(error_category_name(c))) < 0 ||
        json_object_set_new(inner, "message", message_string(message)) < 0) {
        json_decref(inner);
        return NULL;
    }
    return json_pack("{s:o}", "error", inner);
}

/* Fills the body part of rp (its headers stay). Takes data. */
static void
reply_set_buffer(HttpReply *rp, unsigned status, const char *content_type, uint8_t *data,
                 size_t len)
{
    rp->kind = REPLY_BUFFER;
    rp->status = status;
    free(rp->content_type);
    rp->content_type = content_type ? strdup(content_type) : NULL;
    free(rp->data);
    rp->data = data;
    rp->len = len;
}

/* The answer of last resort: a fixed body, no allocation that can fail but the copy. */
static void
reply_set_internal(HttpReply *rp)
{
    static const char body[] =
        "{\"error\":{\"code\":\"internal\",\"message\":\"cannot build the response\"}}\n";
    uint8_t *copy = malloc(sizeof(body) - 1);

    if (copy)
        memcpy(copy, body, sizeof(body) - 1);
    reply_set_buffer(rp, 500, CONTENT_TYPE_JSON, copy, copy ? sizeof(body) - 1 : 0);
}

static void
reply_set_json(HttpReply *rp, unsigned status, json_t *body)
{
    uint8_t *buf;
    size_t len;

    if (!body || json_to_buffer(body, &buf, &len) < 0)
        reply_set_internal(rp);
    else
        reply_set_buffer(rp, status, CONTENT_TYPE_JSON, buf, len);
    json_decref(body);
}

static void
reply_set_error_extra(HttpReply *rp, unsigned status, const Error *e, json_t *extra)
{
    json_t *retry = json_object_get(extra, "retry_after");
    char value[32];

    if (json_is_integer(retry) && json_integer_value(retry) >= 0) {
        snprintf(value, sizeof(value), "%" JSON_INTEGER_FORMAT, json_integer_value(retry));
        (void) reply_add_header(rp, MHD_HTTP_HEADER_RETRY_AFTER, value);
    }
    reply_set_json(
        rp, status,
        error_json(e ? e->category : E_INTERNAL, e ? e->message : "internal error", extra));
}

void
http_reply_set_error(HttpReply *rp, unsigned status, const Error *e)
{
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) {
        /* A method no route has: the code hostd/api/API.md promises for 405, the one the
         * router answers for a known path with another method (no category maps to it). */
        (void) reply_add_header(rp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD, POST, PUT, DELETE");
        reply_set_json(rp, status,
                       json_pack("{s:{s:s,s:o}}", "error", "code", "method_not_allowed", "message",
                                 message_string(e ? e->message : "method not allowed")));
        return;
    }
    reply_set_error_extra(rp, status, e, NULL);
}

/* Hands the recorded answer to the connection thread and drops the handler's reference.
 * If the connection thread stopped waiting (server stop), the answer is freed with r. */
static void
reply_publish(HttpRequest *r)
{
    pthread_mutex_lock(&r->lock);
    r->answered = true;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
    http_request_unref(r);
}

static bool
status_valid(unsigned status)
{
    return status >= 200 && status <= 599;
}

void
http_respond_json(HttpRequest *r, unsigned status, json_t *body)
{
    if (!body)
        body = json_object();
    if (status_valid(status))
        reply_set_json(&r->reply, status, body);
    else {
        json_decref(body);
        reply_set_internal(&r->reply);
    }
    reply_publish(r);
}

void
http_respond_error(HttpRequest *r, const Error *e, json_t *extra)
{
    reply_set_error_extra(&r->reply, http_status_for_category(e ? e->category : E_INTERNAL), e,
                          extra);
    reply_publish(r);
}

void
http_respond_bytes(HttpRequest *r, unsigned status, const char *content_type, const void *data,
                   size_t len)
{
    uint8_t *copy = len ? malloc(len) : NULL;

    if ((len && !copy) || !status_valid(status)) {
        free(copy);
        reply_set_internal(&r->reply);
    } else {
        if (len)
            memcpy(copy, data, len);
        reply_set_buffer(&r->reply, status, content_type, copy, len);
    }
    reply_publish(r);
}

void
http_respond_file(HttpRequest *r, unsigned status, const char *content_type, int fd, uint64_t size)
{
    HttpReply *rp = &r->reply;

    if (fd < 0 || !status_valid(status)) {
        safe_close(fd);
        reply_set_internal(rp);
    } else {
        reply_set_buffer(rp, status, content_type, NULL, 0);
        rp->kind = REPLY_FILE;
        rp->fd = fd;
        rp->size = size;
    }
    reply_publish(r);
}

/* An answer of unknown length to a HEAD closes the connection: MHD (0.9.75) still ends a
 * chunked answer to a HEAD with its last-chunk line, bytes that a client keeping the
 * connection would read as the start of its next answer. */
static void
reply_close_unsized_head(HttpRequest *r)
{
    if (strcmp(http_method(r), "HEAD") == 0)
        r->reply.close = true;
}

void
http_respond_head(HttpRequest *r, unsigned status, const char *content_type, int64_t content_length)
{
    HttpReply *rp = &r->reply;

    if (!status_valid(status) || strcmp(http_method(r), "HEAD") != 0) {
        reply_set_internal(rp);
    } else {
        reply_set_buffer(rp, status, content_type, NULL, 0);
        rp->kind = REPLY_HEAD;
        rp->size = content_length < 0 ? MHD_SIZE_UNKNOWN : (uint64_t) content_length;
        if (content_length < 0)
            reply_close_unsized_head(r);
    }
    reply_publish(r);
}

void
http_respond_stream(HttpRequest *r, unsigned status, const char *content_type,
                    HttpProducer producer, void *userdata, void (*free_userdata)(void *))
{
    HttpReply *rp = &r->reply;

    if (!producer || !status_valid(status)) {
        if (free_userdata)
            free_userdata(userdata);
        reply_set_internal(rp);
    } else {
        reply_set_buffer(rp, status, content_type, NULL, 0);
        reply_close_unsized_head(r);
        rp->kind = REPLY_STREAM;
        rp->producer = producer;
        rp->userdata = userdata;
        rp->free_userdata = free_userdata;
    }
    reply_publish(r);
}

/* The body of a REPLY_HEAD: MHD sends no body to a HEAD and so never calls this; if it ever
 * did, the connection is closed rather than a made-up body sent. */
static ssize_t
head_no_body(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void) cls, (void) pos, (void) buf, (void) max;
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

/* Moves the body of rp into a new MHD response (rp keeps nothing to free on success). */
static struct MHD_Response *
reply_build_body(HttpServer *s, HttpReply *rp, struct MHD_Connection *mc)
{
    struct MHD_Response *resp = NULL;

    switch (rp->kind) {
    case REPLY_BUFFER:
        resp = MHD_create_response_from_buffer(
            rp->len, rp->data, rp->data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (resp)
            rp->data = NULL;
        break;
    case REPLY_FILE:
        resp = MHD_create_response_from_fd64(rp->size, rp->fd);
        if (resp)
            rp->fd = -1;
        break;
    case REPLY_STREAM:
        resp = http_stream_response(s, mc, rp->producer, rp->userdata, rp->free_userdata);
        rp->free_userdata = NULL; /* the stream (or its failure path) freed or owns it */
        rp->producer = NULL;
        break;
    case REPLY_HEAD:
        resp = MHD_create_response_from_callback(rp->size, 1024, head_no_body, NULL, NULL);
        break;
    case REPLY_NONE:
        break;
    }
    return resp;
}

static struct MHD_Response *
reply_build(HttpServer *s, HttpReply *rp, struct MHD_Connection *mc)
{
    struct MHD_Response *resp = reply_build_body(s, rp, mc);

    if (!resp)
        return NULL;
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") != MHD_YES ||
        MHD_add_response_header(resp, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff") !=
            MHD_YES ||
        (rp->content_type && MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                                     rp->content_type) != MHD_YES) ||
        (rp->close &&
         MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") != MHD_YES)) {
        MHD_destroy_response(resp);
        return NULL;
    }
    for (size_t i = 0; i < rp->n_headers; i++)
        (void) MHD_add_response_header(resp, rp->hdr_names[i], rp->hdr_values[i]);
    return resp;
}

enum MHD_Result
http_reply_queue(HttpServer *s, HttpReply *rp, struct MHD_Connection *mc)
{
    struct MHD_Response *resp = reply_build(s, rp, mc);
    enum MHD_Result ret;

    if (!resp) {
        http_reply_clear(rp);
        reply_set_internal(rp);
        if (!(resp = reply_build(s, rp, mc)))
            return MHD_NO;
    }
    ret = MHD_queue_response(mc, rp->status, resp);
    MHD_destroy_response(resp);
    return ret;
}
