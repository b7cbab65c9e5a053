/* Request-level scenarios of the HTTP layer's integration test (see api_http_test.c):
 *   echo    JSON round trip over TCP and unix (SO_PEERCRED uid), late answers from another
 *           thread, error bodies (429 + Retry-After), bytes, file, HEAD (also one answered
 *           with http_respond_head: a length, no body), segments
 *   paths   traversal, encoded '/', NUL, bad escapes, long targets, 405, header caps, framing
 *   body    exact-cap body; 1 GiB Content-Length refused before the body (bytes pushed and
 *           RSS measured); curl with Expect; chunked over the cap closed
 *   unix    stale socket replaced, live one and a regular file refused, modes
 *   config  bad configurations refused, descriptor budget */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api_http_test.h"
#include "http_url.h"
#include "macro.h"

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
echo_quota(void)
{
    CurlResult res;
    char url[256];

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
}

/* GET path and check status; the body must hold want (if not NULL). */
static void
get_expect(const char *method, const char *path, long status, const char *want)
{
    CurlResult res;
    char url[256];

    snprintf(url, sizeof(url), "%s%s", url_base, path);
    EXPECT(curl_request(method, url, NULL, NULL, 0, &res) == 0 && res.status == status);
    EXPECT(has_header(res.headers, "X-Content-Type-Options: nosniff"));
    if (want && !strstr(res.body, want))
        fprintf(stderr, "%s: got %s\n", path, res.body);
    EXPECT(!want || strstr(res.body, want));
    curl_result_clear(&res);
}

/* Sends req on a new connection and reads every byte until EOF (or 5 s of silence) into
 * out: what the server sent, exactly. */
static void
read_all_answers(const char *req, char *out, size_t cap)
{
    size_t got = 0;
    int fd = cli_connect_tcp(port);

    if (fd >= 0 && cli_send(fd, req, strlen(req)) == 0)
        for (;;) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            ssize_t r = poll(&p, 1, 5000) == 1 ? read(fd, out + got, cap - 1 - got) : -1;
            if (r <= 0 || (got += (size_t) r) == cap - 1)
                break;
        }
    out[got] = '\0';
    if (fd >= 0)
        close(fd);
}

/* http_respond_head (a forwarded HEAD): the owner's length announced and not a byte sent,
 * so a request after it on the same connection is answered right after its head; without
 * a length (a stream's HEAD too) the connection closes after the head; refused for a GET. */
static void
echo_head(void)
{
    static const char next[] = "GET /bytes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char out[8192], req[256], want[64];

    snprintf(req, sizeof(req), "HEAD /head/sized HTTP/1.1\r\nHost: x\r\n\r\n%s", next);
    read_all_answers(req, out, sizeof(out));
    snprintf(want, sizeof(want), "Content-Length: %d\r\n", HEAD_SIZED_BYTES);
    const char *second = strstr(out, "\r\n\r\nHTTP/1.1 200"), *tail = NULL;
    EXPECT(strncmp(out, "HTTP/1.1 200", 12) == 0 && second);
    EXPECT(has_header(out, want) && has_header(out, "Content-Type: application/x-tar"));
    EXPECT(second && (tail = strstr(second + 4, "\r\n\r\n")) &&
           strcmp(tail, "\r\n\r\nhello\n") == 0);
    const char *unsized[] = {"/head/unsized", "/stream/timer?n=2&ms=10"};
    for (size_t i = 0; i < ELEMENTSOF(unsized); i++) {
        snprintf(req, sizeof(req), "HEAD %s HTTP/1.1\r\nHost: x\r\n\r\n%s", unsized[i], next);
        read_all_answers(req, out, sizeof(out));
        EXPECT(strncmp(out, "HTTP/1.1 200", 12) == 0 && !has_header(out, "Content-Length:"));
        EXPECT(has_header(out, "Connection: close") && !strstr(out, "hello"));
    }
    get_expect("GET", "/head/sized", 500, "\"code\":\"internal\"");
}

void
scenario_echo(void)
{
    HttpConfig c;
    unsigned fds0 = proc_fd_count(), threads0 = proc_thread_count();
    struct stat st;

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

    get_expect("GET", "/late", 200, "\"late\":true"); /* answered from another thread */
    echo_quota();
    get_expect("GET", "/nope", 404, "\"code\":\"not_found\"");
    get_expect("HEAD", "/echo", 200, NULL);
    echo_head();
    get_expect("GET", "/bytes", 200, "hello\n");
    get_expect("GET", "/file", 200, FILE_CONTENT);
    get_expect("GET", "/seg/a%20b/c%C3%A9;x=1", 200,
               "{\"segments\":[\"seg\",\"a b\",\"c\xc3\xa9;x=1\"]}\n");

    server_down();
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
    {"PATCH /echo HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method_not_allowed"},
    {"BREW /echo HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method_not_allowed"},
    {"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 405, "method_not_allowed"},
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

void
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

void
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

void
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
    EXPECT(http_server_start(&c, test_handler, NULL, &other, &e) < 0 && e &&
           e->category == E_CONFLICT);
    error_free(e);
    e = NULL;
    server_down();
    EXPECT(stat(sock_path, &st) < 0);

    /* Nor is a regular file. */
    fd = open(sock_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    close(fd);
    EXPECT(http_server_start(&c, test_handler, NULL, &other, &e) < 0 && e &&
           e->category == E_CONFLICT);
    error_free(e);
    e = NULL;
    unlink(sock_path);

    c.unix_mode = 0600;
    EXPECT(http_server_start(&c, test_handler, NULL, &srv, &e) == 0);
    EXPECT(stat(sock_path, &st) == 0 && (st.st_mode & 07777) == 0600);
    server_down();
}

/* Too few descriptors for max_connections: refused, not discovered under load. */
static void
config_fd_budget(const HttpConfig *base)
{
    struct rlimit rl, low = {.rlim_cur = 256};
    HttpServer *s = NULL;
    HttpConfig c = *base;
    Error *fe = NULL;

    getrlimit(RLIMIT_NOFILE, &rl);
    low.rlim_max = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &low);
    EXPECT(http_server_start(base, test_handler, NULL, &s, &fe) < 0 && fe &&
           fe->category == E_INVALID && strstr(fe->message, "RLIMIT_NOFILE"));
    error_free(fe);
    c.max_connections = 64;
    c.max_pending = 32;
    EXPECT(http_server_start(&c, test_handler, NULL, &s, NULL) == 0);
    http_server_stop(s);
    setrlimit(RLIMIT_NOFILE, &rl);
}

void
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
        EXPECT(http_server_start(&bad[i], test_handler, NULL, &s, &e) < 0 && e &&
               e->category == E_INVALID);
        error_free(e);
    }
    struct stat st;
    EXPECT(stat(sock_path, &st) < 0);

    config_fd_budget(&base);
    c = base;
    c.tcp_address = "::1"; /* IPv6 loopback works where the kernel has it */
    c.unix_path = NULL;
    Error *e = NULL;
    if (http_server_start(&c, test_handler, NULL, &s, &e) == 0)
        http_server_stop(s);
    error_free(e);
}
