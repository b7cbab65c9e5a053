/* Integration test of the HTTP server layer (hostd/api/http*) over loopback TCP and a unix
 * socket in a scratch directory; one ctest per scenario (argv[1]):
 *   echo        JSON round trip over TCP and unix (SO_PEERCRED uid), late answers from
 *               another thread, error bodies (429 + Retry-After), bytes, file, HEAD, segments
 *   paths       traversal, encoded '/', NUL, bad escapes, long targets, 405, header caps
 *   body        exact-cap body; 1 GiB Content-Length refused before the body (bytes pushed
 *               and RSS measured); curl with Expect; chunked over the cap closed
 *   unix        stale socket replaced, live one and a regular file refused, modes
 *   config      bad configurations refused
 *   slowloris, idle, load, limits, stream, disconnect, stop, cpu: api_http_test_conn.c
 * Figures (cut-off times, CPU, request rates) are printed. */
#include "api_http_test.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http_url.h"
#include "testlib.h"
#include "timeutil.h"

int failures, checks;
HttpServer *srv;
char sock_path[256];
char url_base[64];
uint16_t port;
atomic_int handled, stream_closed_seen, stream_freed, late_peak;
int stream_pipe_w = -1;
_Atomic(HttpRequest *) pending_req;

static char *scratch;
static char file_path[300];
static int stream_pipe_r = -1;
static atomic_int late_in_flight;

#define FILE_CONTENT "file body\n"
#define LATE_DELAY_USEC (100 * USEC_PER_MSEC)
#define SLOW_DELAY_USEC (3 * USEC_PER_SEC)

/* ---- deferred answers: one worker thread answers /late and /slow after a delay ---- */

typedef struct Deferred {
    HttpRequest *req;
    uint64_t due_usec;
    bool slow;
    struct Deferred *next;
} Deferred;

static pthread_mutex_t dq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dq_cond = PTHREAD_COND_INITIALIZER;
static Deferred *dq_head;
static bool dq_quit;
static pthread_t dq_thread;

static void
defer_answer(HttpRequest *r, uint64_t delay_usec, bool slow)
{
    Deferred *d = calloc(1, sizeof(*d)), **tail;

    d->req = r;
    d->due_usec = now_usec() + delay_usec;
    d->slow = slow;
    pthread_mutex_lock(&dq_lock);
    for (tail = &dq_head; *tail && (*tail)->due_usec <= d->due_usec; tail = &(*tail)->next)
        ;
    d->next = *tail;
    *tail = d;
    pthread_cond_signal(&dq_cond);
    pthread_mutex_unlock(&dq_lock);
}

static void *
dq_main(void *arg)
{
    (void) arg;
    pthread_mutex_lock(&dq_lock);
    while (!dq_quit) {
        if (!dq_head) {
            pthread_cond_wait(&dq_cond, &dq_lock);
            continue;
        }
        if (dq_head->due_usec > now_usec()) {
            pthread_mutex_unlock(&dq_lock);
            usleep(2000); /* test code: coarse is fine */
            pthread_mutex_lock(&dq_lock);
            continue;
        }
        Deferred *d = dq_head;
        dq_head = d->next;
        pthread_mutex_unlock(&dq_lock);
        if (!d->slow)
            atomic_fetch_sub(&late_in_flight, 1);
        http_respond_json(d->req, 200, json_pack("{s:b}", "late", 1));
        free(d);
        pthread_mutex_lock(&dq_lock);
    }
    pthread_mutex_unlock(&dq_lock);
    return NULL;
}

/* ---- streams ---- */

typedef struct {
    int left;
    uint64_t interval_usec;
    uint64_t next_usec;
    int seq;
} TimerStream;

static ssize_t
timer_produce(HttpStream *st, void *ud, uint8_t *buf, size_t cap)
{
    TimerStream *t = ud;

    if (t->left == 0)
        return 0;
    if (http_stream_wait(st, -1, t->next_usec) < 0) {
        atomic_fetch_add(&stream_closed_seen, 1);
        return -1;
    }
    t->next_usec += t->interval_usec;
    t->left--;
    return snprintf((char *) buf, cap, "{\"seq\":%d}\n", t->seq++);
}

static void
stream_userdata_free(void *ud)
{
    free(ud);
    atomic_fetch_add(&stream_freed, 1);
}

typedef struct {
    int fd;
} PipeStream;

static ssize_t
pipe_produce(HttpStream *st, void *ud, uint8_t *buf, size_t cap)
{
    PipeStream *p = ud;

    for (;;) {
        ssize_t n = read(p->fd, buf, cap);
        if (n >= 0)
            return n; /* 0: the test closed the write end: stream finished */
        if (errno != EAGAIN)
            return -1;
        if (http_stream_wait(st, p->fd, 0) < 0) {
            atomic_fetch_add(&stream_closed_seen, 1);
            return -1;
        }
    }
}

static void
pipe_stream_free(void *ud)
{
    PipeStream *p = ud;
    close(p->fd);
    free(p);
    atomic_fetch_add(&stream_freed, 1);
}

/* ---- the handler ---- */

static void
answer_echo(HttpRequest *r)
{
    size_t len;
    const uint8_t *body = http_body(r, &len);
    uid_t uid;
    json_t *j = json_pack("{s:s,s:s,s:b,s:I}", "method", http_method(r), "path", http_path(r),
                          "unix", http_peer_is_unix(r), "body_len", (json_int_t) len);
    const char *keys[] = {"a", "b", "c"};

    for (size_t i = 0; i < 3; i++)
        if (http_query(r, keys[i]))
            json_object_set_new(j, keys[i], json_string(http_query(r, keys[i])));
    if (http_header(r, "x-test"))
        json_object_set_new(j, "x_test", json_string(http_header(r, "X-Test")));
    json_object_set_new(j, "uid", http_peer_cred(r, &uid) == 0 ? json_integer(uid) : json_null());
    if (body && len < 4096)
        json_object_set_new(j, "body", json_loadb((const char *) body, len, 0, NULL));
    http_respond_json(r, 200, j);
}

static void
answer_segments(HttpRequest *r)
{
    char **segs;
    size_t n;
    Error *e = NULL;

    if (http_path_segments(r, &segs, &n, &e) < 0) {
        http_respond_error(r, e, NULL);
        error_free(e);
        return;
    }
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(segs[i]));
    http_strv_free(segs);
    http_respond_json(r, 200, json_pack("{s:o}", "segments", a));
}

static void
answer_stream(HttpRequest *r, const char *path)
{
    if (strcmp(path, "/stream/timer") == 0) {
        TimerStream *t = calloc(1, sizeof(*t));
        const char *n = http_query(r, "n"), *ms = http_query(r, "ms");
        t->left = n ? atoi(n) : 10;
        t->interval_usec = (ms ? (uint64_t) atoi(ms) : 200) * USEC_PER_MSEC;
        t->next_usec = now_usec();
        http_respond_stream(r, 200, "application/x-ndjson", timer_produce, t, stream_userdata_free);
        return;
    }
    PipeStream *p = calloc(1, sizeof(*p));
    p->fd = fcntl(stream_pipe_r, F_DUPFD_CLOEXEC, 3);
    http_respond_stream(r, 200, "application/x-ndjson", pipe_produce, p, pipe_stream_free);
}

static void
answer_quota(HttpRequest *r)
{
    Error e = {.category = E_QUOTA};
    snprintf(e.message, sizeof(e.message), "tenant is over its session quota");
    http_response_header(r, "X-Extra", "1");
    EXPECT(http_response_header(r, "Content-Type", "text/html") < 0);
    EXPECT(http_response_header(r, "X-Bad", "a\r\nInjected: 1") < 0);
    EXPECT(http_response_header(r, "Bad Name", "x") < 0);
    http_respond_error(r, &e, json_pack("{s:i,s:i,s:i}", "limit", 5, "used", 5, "retry_after", 7));
}

static void
handler(HttpRequest *r, void *userdata)
{
    const char *path = http_path(r);

    (void) userdata;
    atomic_fetch_add(&handled, 1);
    if (strcmp(path, "/echo") == 0) {
        answer_echo(r);
    } else if (strcmp(path, "/late") == 0) {
        int now = atomic_fetch_add(&late_in_flight, 1) + 1;
        for (int peak = atomic_load(&late_peak); now > peak;)
            if (atomic_compare_exchange_weak(&late_peak, &peak, now))
                break;
        defer_answer(r, LATE_DELAY_USEC, false);
    } else if (strcmp(path, "/slow") == 0) {
        defer_answer(r, SLOW_DELAY_USEC, true);
    } else if (strcmp(path, "/error/quota") == 0) {
        answer_quota(r);
    } else if (strncmp(path, "/seg/", 5) == 0) {
        answer_segments(r);
    } else if (strcmp(path, "/bytes") == 0) {
        http_respond_bytes(r, 200, "text/plain", "hello\n", 6);
    } else if (strcmp(path, "/file") == 0) {
        int fd = open(file_path, O_RDONLY | O_CLOEXEC);
        http_respond_file(r, 200, "text/plain", fd, strlen(FILE_CONTENT));
    } else if (strncmp(path, "/stream/", 8) == 0) {
        answer_stream(r, path);
    } else if (strcmp(path, "/never") == 0) {
        atomic_store(&pending_req, r); /* the test answers it */
    } else {
        Error e = {.category = E_NOT_FOUND};
        snprintf(e.message, sizeof(e.message), "no such route");
        http_respond_error(r, &e, NULL);
    }
}

/* ---- fixture ---- */

void
fixture_config(HttpConfig *c)
{
    http_config_defaults(c);
    c->tcp_address = "127.0.0.1";
    c->tcp_port = 0;
    c->unix_path = sock_path;
}

void
server_up(const HttpConfig *c)
{
    Error *e = NULL;

    if (http_server_start(c, handler, NULL, &srv, &e) < 0) {
        fprintf(stderr, "http_server_start: %s\n", e->message);
        exit(1);
    }
    port = http_server_tcp_port(srv);
    snprintf(url_base, sizeof(url_base), "http://127.0.0.1:%u", port);
}

void
server_down(void)
{
    http_server_stop(srv);
    srv = NULL;
}

int
raw_exchange(const void *req, size_t len, CliResponse *ret)
{
    int fd = cli_connect_tcp(port);
    int status = -1;

    *ret = (CliResponse){.status = -1};
    if (fd < 0)
        return -1;
    if (cli_send(fd, req, len) == 0)
        status = cli_read_response(fd, 5000, ret);
    close(fd);
    return status;
}

/* ---- scenarios ---- */

static json_t *
body_json(const CurlResult *res)
{
    return json_loadb(res->body, res->body_len, 0, NULL);
}

static bool
has_header(const char *headers, const char *line)
{
    return strcasestr(headers, line) != NULL;
}

static void
echo_over(const char *unix_path)
{
    CurlResult res;
    char url[128];
    const char *body = "{\"x\":1}";

    snprintf(url, sizeof(url), "%s/echo?a=1+2&b=%%41&c", unix_path ? "http://localhost" : url_base);
    EXPECT(curl_request("POST", url, unix_path, body, strlen(body), &res) == 0);
    EXPECT(res.status == 200);
    EXPECT(has_header(res.headers, "Cache-Control: no-store"));
    EXPECT(has_header(res.headers, "X-Content-Type-Options: nosniff"));
    EXPECT(has_header(res.headers, "Content-Type: application/json"));
    json_t *j = body_json(&res);
    EXPECT(j && strcmp(json_string_value(json_object_get(j, "method")), "POST") == 0);
    EXPECT(j && strcmp(json_string_value(json_object_get(j, "path")), "/echo") == 0);
    EXPECT(j && strcmp(json_string_value(json_object_get(j, "a")), "1 2") == 0);
    EXPECT(j && strcmp(json_string_value(json_object_get(j, "b")), "A") == 0);
    EXPECT(j && strcmp(json_string_value(json_object_get(j, "c")), "") == 0);
    EXPECT(j && json_integer_value(json_object_get(json_object_get(j, "body"), "x")) == 1);
    EXPECT(j && json_is_true(json_object_get(j, "unix")) == (unix_path != NULL));
    if (unix_path)
        EXPECT(j && json_integer_value(json_object_get(j, "uid")) == (json_int_t) getuid());
    else
        EXPECT(j && json_is_null(json_object_get(j, "uid")));
    json_decref(j);
    curl_result_clear(&res);
}

static void
scenario_echo(void)
{
    HttpConfig c;
    CurlResult res;
    char url[256];
    unsigned fds0 = proc_fd_count(), threads0 = proc_thread_count();

    fixture_config(&c);
    server_up(&c);
    echo_over(NULL);
    echo_over(sock_path);

    /* Request headers reach the handler, case-insensitively. */
    static const char xreq[] = "GET /echo HTTP/1.1\r\nHost: x\r\nx-TEST: yes\r\n"
                               "Connection: close\r\n\r\n";
    CliResponse raw;
    EXPECT(raw_exchange(xreq, sizeof(xreq) - 1, &raw) == 200);
    EXPECT(raw.body && strstr(raw.body, "\"x_test\":\"yes\""));
    cli_response_clear(&raw);

    snprintf(url, sizeof(url), "%s/late", url_base);
    EXPECT(curl_request("GET", url, NULL, NULL, 0, &res) == 0 && res.status == 200);
    EXPECT(strstr(res.body, "\"late\":true"));
    curl_result_clear(&res);

    snprintf(url, sizeof(url), "%s/error/quota", url_base);
    EXPECT(curl_request("GET", url, NULL, NULL, 0, &res) == 0 && res.status == 429);
    EXPECT(has_header(res.headers, "Retry-After: 7"));
    EXPECT(has_header(res.headers, "X-Extra: 1"));
    EXPECT(has_header(res.headers, "Cache-Control: no-store"));
    json_t *j = body_json(&res), *err = json_object_get(j, "error");
    EXPECT(err && strcmp(json_string_value(json_object_get(err, "code")), "quota_exceeded") == 0);
    EXPECT(err && strstr(json_string_value(json_object_get(err, "message")), "quota"));
    EXPECT(err && json_integer_value(json_object_get(err, "limit")) == 5);
    EXPECT(err && json_integer_value(json_object_get(err, "retry_after")) == 7);
    json_decref(j);
    curl_result_clear(&res);

    snprintf(url, sizeof(url), "%s/nope", url_base);
    EXPECT(curl_request("GET", url, NULL, NULL, 0, &res) == 0 && res.status == 404);
    EXPECT(strstr(res.body, "\"code\":\"not_found\""));
    curl_result_clear(&res);

    snprintf(url, sizeof(url), "%s/echo", url_base);
    EXPECT(curl_request("HEAD", url, NULL, NULL, 0, &res) == 0 && res.status == 200);
    EXPECT(res.body_len == 0);
    curl_result_clear(&res);

    snprintf(url, sizeof(url), "%s/bytes", url_base);
    EXPECT(curl_request("GET", url, NULL, NULL, 0, &res) == 0 && res.status == 200);
    EXPECT(strcmp(res.body, "hello\n") == 0 && has_header(res.headers, "Content-Type: text/plain"));
    EXPECT(has_header(res.headers, "X-Content-Type-Options: nosniff"));
    curl_result_clear(&res);

    snprintf(url, sizeof(url), "%s/file", url_base);
    EXPECT(curl_request("GET", url, NULL, NULL, 0, &res) == 0 && res.status == 200);
    EXPECT(strcmp(res.body, FILE_CONTENT) == 0);
    curl_result_clear(&res);

    snprintf(url, sizeof(url), "%s/seg/a%%20b/c%%C3%%A9;x=1", url_base);
    EXPECT(curl_request("GET", url, NULL, NULL, 0, &res) == 0 && res.status == 200);
    EXPECT(strcmp(res.body, "{\"segments\":[\"seg\",\"a b\",\"c\xc3\xa9;x=1\"]}\n") == 0);
    curl_result_clear(&res);

    server_down();
    struct stat st;
    EXPECT(stat(sock_path, &st) < 0 && errno == ENOENT);
    EXPECT(proc_fd_count() == fds0);
    EXPECT(proc_thread_count() == threads0);
}

typedef struct {
    const char *request;
    int status;
    const char *code; /* expected error code, NULL: do not check the body */
} RawCase;

static void
raw_cases(const RawCase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        CliResponse r;
        int status = raw_exchange(cases[i].request, strlen(cases[i].request), &r);
        bool ok = status == cases[i].status &&
                  (!cases[i].code || (r.body && strstr(r.body, cases[i].code)));
        if (!ok)
            fprintf(stderr, "case %zu: got %d %s\n", i, status, r.body ? r.body : "");
        EXPECT(ok);
        if (ok && cases[i].code) {
            char v[64];
            EXPECT(cli_header(r.head, "Content-Type", v, sizeof(v)) &&
                   strcmp(v, "application/json") == 0);
            EXPECT(cli_header(r.head, "Cache-Control", v, sizeof(v)) && strcmp(v, "no-store") == 0);
        }
        cli_response_clear(&r);
    }
}

#define REQ(target) "GET " target " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

static const RawCase path_cases[] = {
    {REQ("/echo?a=x"), 200, NULL},
    {REQ("/a/../b"), 400, "invalid_argument"},
    {REQ("/a/./b"), 400, "invalid_argument"},
    {REQ("/a/%2e%2E/b"), 400, "invalid_argument"},
    {REQ("/a/%2E"), 400, "invalid_argument"},
    {REQ("/a%2Fb"), 400, "invalid_argument"},
    {REQ("/a/%2f"), 400, "invalid_argument"},
    {REQ("/a/%00b"), 400, "invalid_argument"},
    {REQ("//a"), 400, "invalid_argument"},
    {REQ("/a//b"), 400, "invalid_argument"},
    {REQ("/a/"), 400, "invalid_argument"},
    {REQ("/a%zz"), 400, "invalid_argument"},
    {REQ("/a%4"), 400, "invalid_argument"},
    {REQ("/a\\b"), 400, "invalid_argument"},
    {REQ("/a?x=%zz"), 400, "invalid_argument"},
    {REQ("/a?x=%00"), 400, "invalid_argument"},
    {REQ("/a?=1"), 400, "invalid_argument"},
    {REQ("a/b"), 400, "invalid_argument"},
    {REQ("*"), 400, "invalid_argument"},
    {REQ("http://x/a"), 400, "invalid_argument"},
    {"PATCH /echo HTTP/1.1\r\nHost: x\r\n\r\n", 405, "invalid_argument"},
    {"BREW /echo HTTP/1.1\r\nHost: x\r\n\r\n", 405, "invalid_argument"},
    {"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 405, "invalid_argument"},
    {"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n"
     "\r\n3\r\nabc\r\n0\r\n\r\n",
     400, "invalid_argument"},
    {"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde", 400,
     "invalid_argument"},
    {"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nabc", 400,
     "invalid_argument"},
    {"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     400, "invalid_argument"},
    {"POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n"
     "\r\n3\r\nabc\r\n0\r\n\r\n",
     200, "\"body_len\":3"},
};

static char *
big_request(const char *target_prefix, size_t target_len, unsigned n_headers, size_t header_bytes)
{
    size_t cap = target_len + header_bytes + n_headers * 32 + 256;
    char *req = malloc(cap), *p = req;

    p += sprintf(p, "GET %s", target_prefix);
    for (size_t i = strlen(target_prefix); i < target_len; i++)
        *p++ = 'a';
    p += sprintf(p, " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for (unsigned i = 0; i < n_headers; i++)
        p += sprintf(p, "X-H%u: v\r\n", i);
    if (header_bytes) {
        p += sprintf(p, "X-Big: ");
        memset(p, 'b', header_bytes);
        p += header_bytes;
        p += sprintf(p, "\r\n");
    }
    p += sprintf(p, "\r\n");
    return req;
}

static void
big_case(const char *prefix, size_t target_len, unsigned n_headers, size_t header_bytes,
         int want_status, const char *want_code)
{
    char *req = big_request(prefix, target_len, n_headers, header_bytes);
    CliResponse r;
    int status = raw_exchange(req, strlen(req), &r);

    fprintf(stderr, "  target %zu B, %u headers, %zu B header: %d\n", target_len, n_headers,
            header_bytes, status);
    if (want_code)
        EXPECT(status == want_status && r.body && strstr(r.body, want_code));
    else
        EXPECT(status == -1 || (status >= 400 && status < 500)); /* MHD's own refusal */
    cli_response_clear(&r);
    free(req);
}

static void
scenario_paths(void)
{
    HttpConfig c;
    char q[300];

    fixture_config(&c);
    server_up(&c);
    raw_cases(path_cases, ELEMENTSOF(path_cases));

    CliResponse r;
    EXPECT(raw_exchange("PATCH /echo HTTP/1.1\r\nHost: x\r\n\r\n", 34, &r) == 405);
    char v[128];
    EXPECT(r.head && cli_header(r.head, "Allow", v, sizeof(v)) && strstr(v, "DELETE"));
    cli_response_clear(&r);
    /* A literal NUL in the request line: MHD 0.9.75 ends the target there, so this is served
     * as "/a" (no such route here): never as a path holding NUL. */
    static const char nul_req[] = "GET /a\0b HTTP/1.1\r\nHost: x\r\n\r\n";
    int st = raw_exchange(nul_req, sizeof(nul_req) - 1, &r);
    fprintf(stderr, "  literal NUL in the target: %d %s\n", st, r.body ? r.body : "");
    EXPECT(st == -1 || st == 400 || st == 404);
    cli_response_clear(&r);

    big_case("/", 4000, 0, 0, 404, "not_found");                     /* long but fine */
    big_case("/", HTTP_PATH_MAX_BYTES + 10, 0, 0, 414, "too_large"); /* path cap */
    strcpy(q, "/echo?");
    for (int i = 0; i < HTTP_QUERY_MAX_PARAMS + 1; i++)
        sprintf(q + strlen(q), "k%d=1&", i);
    big_case(q, strlen(q), 0, 0, 400, "invalid_argument"); /* query parameter count */
    big_case("/echo", 5, HTTP_MAX_REQUEST_HEADERS + 5, 0, 431, "too_large");
    big_case("/echo", 5, 0, 40 << 10, 431, "too_large"); /* over 32 KiB, MHD's pool ok */
    big_case("/echo", 5, 0, 200 << 10, 0, NULL);         /* over MHD's pool */
    server_down();
}

typedef struct {
    size_t given;
    size_t limit;
} UploadSource;

static size_t
upload_read(char *buf, size_t size, size_t n, void *ud)
{
    UploadSource *s = ud;
    size_t want = MIN(size * n, s->limit - s->given);
    memset(buf, 'z', want);
    s->given += want;
    return want;
}

static size_t
discard_body(char *data, size_t size, size_t n, void *ud)
{
    (void) data;
    (void) ud;
    return size * n;
}

/* curl's default for a large PUT is Expect: 100-continue: the 413 comes before the body. */
static void
body_curl_expect(void)
{
    UploadSource src = {.limit = (size_t) 1 << 30};
    char url[128];
    long status = 0;
    CURL *c = curl_easy_init();

    snprintf(url, sizeof(url), "%s/echo", url_base);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, upload_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &src);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t) src.limit);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    fprintf(stderr, "  curl 1 GiB PUT: status %ld after curl read %zu bytes\n", status, src.given);
    EXPECT(status == 413);
    EXPECT(src.given < ((size_t) 16 << 20));
}

/* A raw client declares 1 GiB and pushes it without waiting: 413 before the body, and the
 * server neither buffers nor reads on (bytes accepted bounded by socket buffers). */
static void
body_raw_push(void)
{
    static char chunk[1 << 20];
    const char *head = "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n";
    int fd = cli_connect_tcp(port);
    size_t rss0 = proc_rss_bytes(), sent = 0;
    int handled0 = atomic_load(&handled);
    CliResponse r;

    EXPECT(fd >= 0 && cli_send(fd, head, strlen(head)) == 0);
    EXPECT(cli_read_response(fd, 5000, &r) == 413);
    EXPECT(r.body && strstr(r.body, "\"code\":\"too_large\""));
    cli_response_clear(&r);
    memset(chunk, 'y', sizeof(chunk));
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    while (sent < ((size_t) 1 << 30)) {
        ssize_t n = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL);
        if (n <= 0)
            break;
        sent += (size_t) n;
    }
    close(fd);
    size_t rss1 = proc_rss_bytes();
    fprintf(stderr,
            "  raw 1 GiB PUT: 413 first; %zu bytes accepted by the kernel before the "
            "close; RSS %+ld KiB\n",
            sent, ((long) rss1 - (long) rss0) / 1024);
    EXPECT(sent < ((size_t) 64 << 20));
    EXPECT(rss1 < rss0 + ((size_t) 16 << 20));
    EXPECT(atomic_load(&handled) == handled0);
}

/* Chunked: no length up front, so the cap hits mid-body and the connection is closed. */
static void
body_chunked_over(size_t cap)
{
    const char *head = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    static char chunk[(64 << 10) + 16];
    int fd = cli_connect_tcp(port);
    int handled0 = atomic_load(&handled);
    size_t sent = 0;

    EXPECT(fd >= 0 && cli_send(fd, head, strlen(head)) == 0);
    int hl = sprintf(chunk, "%x\r\n", 64 << 10);
    memset(chunk + hl, 'c', 64 << 10);
    memcpy(chunk + hl + (64 << 10), "\r\n", 2);
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    while (sent < 256 * cap && cli_send(fd, chunk, (size_t) hl + (64 << 10) + 2) == 0)
        sent += 64 << 10;
    CliResponse r;
    int status = cli_read_response(fd, 5000, &r);
    fprintf(stderr, "  chunked over the cap: closed after %zu bytes were sent, status %d\n", sent,
            status);
    EXPECT(sent < 64 * cap);
    EXPECT(status == -1);
    EXPECT(atomic_load(&handled) == handled0);
    cli_response_clear(&r);
    close(fd);
}

static void
scenario_body(void)
{
    HttpConfig c;
    CurlResult res;
    char url[128];
    size_t cap = (size_t) 1 << 20;
    char *body = malloc(cap);

    fixture_config(&c);
    c.max_body_bytes = cap;
    server_up(&c);
    memset(body, 'x', cap);
    snprintf(url, sizeof(url), "%s/echo", url_base);
    EXPECT(curl_request("POST", url, NULL, body, cap, &res) == 0 && res.status == 200);
    EXPECT(strstr(res.body, "\"body_len\":1048576"));
    curl_result_clear(&res);
    EXPECT(curl_request("POST", url, NULL, body, cap, &res) == 0 && res.status == 200);
    curl_result_clear(&res);
    free(body);
    body_curl_expect();
    body_raw_push();
    body_chunked_over(cap);
    server_down();
}

static void
scenario_unix(void)
{
    HttpConfig c;
    HttpServer *other = NULL;
    Error *e = NULL;
    struct stat st;

    /* A stale socket file: bound, never listened on, its owner gone. */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, sock_path, MIN(strlen(sock_path), sizeof(sa.sun_path) - 1));
    EXPECT(bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0);
    close(fd);
    fixture_config(&c);
    server_up(&c);
    EXPECT(stat(sock_path, &st) == 0 && (st.st_mode & 07777) == 0660);

    /* A live one is not taken over. */
    fixture_config(&c);
    c.tcp_address = NULL;
    EXPECT(http_server_start(&c, handler, NULL, &other, &e) < 0 && e && e->category == E_CONFLICT);
    error_free(e);
    e = NULL;
    server_down();
    EXPECT(stat(sock_path, &st) < 0);

    /* Nor is a regular file. */
    fd = open(sock_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    close(fd);
    EXPECT(http_server_start(&c, handler, NULL, &other, &e) < 0 && e && e->category == E_CONFLICT);
    error_free(e);
    e = NULL;
    unlink(sock_path);

    c.unix_mode = 0600;
    EXPECT(http_server_start(&c, handler, NULL, &srv, &e) == 0);
    EXPECT(stat(sock_path, &st) == 0 && (st.st_mode & 07777) == 0600);
    server_down();
}

static void
scenario_config(void)
{
    HttpConfig c, base, bad[8];
    HttpServer *s = NULL;

    fixture_config(&base);
    for (size_t i = 0; i < ELEMENTSOF(bad); i++)
        bad[i] = base;
    bad[0].tcp_address = NULL, bad[0].unix_path = NULL;
    bad[1].idle_timeout_s = 0;
    bad[2].request_timeout_s = 0;
    bad[3].max_connections = 0;
    bad[4].max_header_bytes = 10;
    bad[5].max_body_bytes = HTTP_MAX_BODY_BYTES_CEILING + 1;
    bad[6].tcp_address = "localhost"; /* numeric only */
    bad[7].unix_mode = 01777;
    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        Error *e = NULL;
        EXPECT(http_server_start(&bad[i], handler, NULL, &s, &e) < 0 && e &&
               e->category == E_INVALID);
        error_free(e);
    }
    struct stat st;
    EXPECT(stat(sock_path, &st) < 0);

    /* Too few descriptors for max_connections: refused, not discovered under load. */
    struct rlimit rl, low = {.rlim_cur = 256};
    getrlimit(RLIMIT_NOFILE, &rl);
    low.rlim_max = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &low);
    Error *fe = NULL;
    EXPECT(http_server_start(&base, handler, NULL, &s, &fe) < 0 && fe &&
           fe->category == E_INVALID && strstr(fe->message, "RLIMIT_NOFILE"));
    error_free(fe);
    c = base;
    c.max_connections = 64;
    EXPECT(http_server_start(&c, handler, NULL, &s, NULL) == 0);
    http_server_stop(s);
    setrlimit(RLIMIT_NOFILE, &rl);

    c = base;
    c.tcp_address = "::1"; /* IPv6 loopback works where the kernel has it */
    c.unix_path = NULL;
    Error *e = NULL;
    if (http_server_start(&c, handler, NULL, &s, &e) == 0)
        http_server_stop(s);
    error_free(e);
}

static const struct {
    const char *name;
    void (*fn)(void);
} scenarios[] = {
    {"echo", scenario_echo},
    {"paths", scenario_paths},
    {"body", scenario_body},
    {"unix", scenario_unix},
    {"config", scenario_config},
    {"slowloris", scenario_slowloris},
    {"idle", scenario_idle},
    {"load", scenario_load},
    {"limits", scenario_limits},
    {"stream", scenario_stream},
    {"disconnect", scenario_disconnect},
    {"stop", scenario_stop},
    {"cpu", scenario_cpu},
};

static void
setup(void)
{
    int p[2];

    struct rlimit rl;

    signal(SIGPIPE, SIG_IGN);
    /* What the daemon does at startup: the HTTP layer wants 2 fds per connection. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!(scratch = test_mkdtemp("stockade-http")))
        test_skip("cannot make a scratch directory");
    snprintf(sock_path, sizeof(sock_path), "%s/api.sock", scratch);
    snprintf(file_path, sizeof(file_path), "%s/file", scratch);
    FILE *f = fopen(file_path, "we");
    fputs(FILE_CONTENT, f);
    fclose(f);
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        exit(1);
    stream_pipe_r = p[0];
    stream_pipe_w = p[1];
    pthread_create(&dq_thread, NULL, dq_main, NULL);
}

static void
teardown(void)
{
    pthread_mutex_lock(&dq_lock);
    dq_quit = true;
    pthread_cond_signal(&dq_cond);
    pthread_mutex_unlock(&dq_lock);
    pthread_join(dq_thread, NULL);
    close(stream_pipe_r);
    close(stream_pipe_w);
    test_rm_rf(scratch);
    free(scratch);
    curl_global_cleanup();
}

int
main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCENARIO\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < ELEMENTSOF(scenarios); i++) {
        if (strcmp(argv[1], scenarios[i].name) != 0)
            continue;
        setup();
        scenarios[i].fn();
        teardown();
        printf("%s: %d checks, %d failed\n", argv[1], checks, failures);
        return failures ? 1 : 0;
    }
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
}
