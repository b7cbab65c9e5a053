/* See api_http_client.h. Test code: small, blocking, bounded by explicit timeouts. */
#include "api_http_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "timeutil.h"

#define CLI_RESPONSE_MAX_BYTES ((size_t) 8 << 20)

int
cli_connect_tcp(uint16_t port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int
cli_connect_tcp_from(uint32_t src_host_order, uint16_t port)
{
    struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(src_host_order)};
    struct sockaddr_in dst = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *) &src, sizeof(src)) < 0 ||
        connect(fd, (struct sockaddr *) &dst, sizeof(dst)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int
cli_connect_unix(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int
cli_send(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t) n;
    }
    return 0;
}

/* Reads more bytes into *buf (growing it); 0 on EOF, -1 on error or deadline. */
static ssize_t
read_more(int fd, char **buf, size_t *len, size_t *cap, uint64_t deadline)
{
    if (*len + 4096 + 1 > *cap) {
        if (*cap >= CLI_RESPONSE_MAX_BYTES)
            return -1;
        *cap = *cap ? *cap * 2 : 8192;
        char *b = realloc(*buf, *cap);
        if (!b)
            return -1;
        *buf = b;
    }
    for (;;) {
        uint64_t now = now_usec();
        if (now >= deadline)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int) ((deadline - now) / 1000 + 1));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = recv(fd, *buf + *len, *cap - *len - 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        *len += (size_t) n;
        (*buf)[*len] = '\0';
        return n;
    }
}

const char *
cli_header(const char *head, const char *name, char *buf, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line && line[2];
         line = strstr(line + 2, "\r\n")) {
        const char *l = line + 2;
        if (strncasecmp(l, name, nl) == 0 && l[nl] == ':') {
            const char *v = l + nl + 1;
            while (*v == ' ')
                v++;
            const char *end = strstr(v, "\r\n");
            size_t vl = end ? (size_t) (end - v) : strlen(v);
            snprintf(buf, cap, "%.*s", (int) MIN(vl, cap - 1), v);
            return buf;
        }
    }
    return NULL;
}

/* Decodes a complete chunked body in place; -1 if incomplete. */
static ssize_t
dechunk(char *body, size_t len)
{
    size_t in = 0, out = 0;
    for (;;) {
        char *end = memmem(body + in, len - in, "\r\n", 2);
        if (!end)
            return -1;
        size_t n = strtoul(body + in, NULL, 16);
        in = (size_t) (end - body) + 2;
        if (n == 0)
            return memmem(body + in, len - in, "\r\n", 2) ? (ssize_t) out : -1;
        if (len - in < n + 2)
            return -1;
        memmove(body + out, body + in, n);
        out += n;
        in += n + 2;
    }
}

static bool
body_complete(CliResponse *r, char *buf, size_t len, size_t head_len)
{
    char v[64];
    size_t have = len - head_len;

    if (cli_header(r->head, "Content-Length", v, sizeof(v)))
        return have >= strtoull(v, NULL, 10);
    if (cli_header(r->head, "Transfer-Encoding", v, sizeof(v))) {
        _cleanup_free_ char *copy = malloc(have + 1);
        if (!copy)
            return false;
        memcpy(copy, buf + head_len, have);
        return dechunk(copy, have) >= 0;
    }
    return r->status == 204 || r->status == 304;
}

int
cli_read_response(int fd, int timeout_ms, CliResponse *ret)
{
    uint64_t deadline = now_usec() + (uint64_t) timeout_ms * 1000;
    char *buf = NULL, *sep;
    size_t len = 0, cap = 0;
    ssize_t n = 0;

    *ret = (CliResponse){.status = -1};
    while (!(sep = len ? strstr(buf, "\r\n\r\n") : NULL))
        if ((n = read_more(fd, &buf, &len, &cap, deadline)) <= 0)
            goto fail_free;
    size_t head_len = (size_t) (sep - buf) + 4;
    ret->head = strndup(buf, head_len);
    ret->status = atoi(buf + 9);
    while (!body_complete(ret, buf, len, head_len))
        if ((n = read_more(fd, &buf, &len, &cap, deadline)) <= 0)
            break; /* EOF ends a body without length */
    ret->body_len = len - head_len;
    ret->body = malloc(ret->body_len + 1);
    memcpy(ret->body, buf + head_len, ret->body_len);
    ret->body[ret->body_len] = '\0';
    char v[64];
    if (cli_header(ret->head, "Transfer-Encoding", v, sizeof(v))) {
        ssize_t d = dechunk(ret->body, ret->body_len);
        ret->body_len = d < 0 ? 0 : (size_t) d;
        ret->body[ret->body_len] = '\0';
    }
    free(buf);
    return ret->status;

fail_free:
    free(buf);
    return -1;
}

void
cli_response_clear(CliResponse *r)
{
    free(r->head);
    free(r->body);
    *r = (CliResponse){0};
}

int64_t
cli_wait_closed(int fd, int timeout_ms)
{
    uint64_t start = now_usec(), deadline = start + (uint64_t) timeout_ms * 1000;
    char buf[4096];

    for (;;) {
        uint64_t now = now_usec();
        if (now >= deadline)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int) ((deadline - now) / 1000 + 1)) <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return (int64_t) (now_usec() - start);
    }
}

typedef struct {
    char *buf;
    size_t len;
} Sink;

static size_t
sink_write(char *data, size_t size, size_t n, void *ud)
{
    Sink *s = ud;
    size_t add = size * n;
    char *b = realloc(s->buf, s->len + add + 1);
    if (!b)
        return 0;
    memcpy(b + s->len, data, add);
    s->buf = b;
    s->len += add;
    s->buf[s->len] = '\0';
    return add;
}

const char *curl_ca_file;

int
curl_request(const char *method, const char *url, const char *unix_path, const void *body,
             size_t len, CurlResult *ret)
{
    CURL *c = curl_easy_init();
    Sink out = {0}, hdr = {0};

    *ret = (CurlResult){0};
    if (!c)
        return -1;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (unix_path)
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, unix_path);
    if (curl_ca_file) {
        curl_easy_setopt(c, CURLOPT_CAINFO, curl_ca_file);
        curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
    }
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, sink_write);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &hdr);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    ret->curl_code = (int) curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &ret->status);
    curl_easy_cleanup(c);
    ret->body = out.buf ? out.buf : strdup("");
    ret->body_len = out.len;
    ret->headers = hdr.buf ? hdr.buf : strdup("");
    return ret->curl_code == CURLE_OK ? 0 : -1;
}

void
curl_result_clear(CurlResult *r)
{
    free(r->body);
    free(r->headers);
    *r = (CurlResult){0};
}

static unsigned
dir_count(const char *path)
{
    DIR *d = opendir(path);
    unsigned n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

unsigned
proc_thread_count(void)
{
    return dir_count("/proc/self/task");
}

unsigned
proc_fd_count(void)
{
    return dir_count("/proc/self/fd") - 1; /* the directory's own fd */
}

size_t
proc_rss_bytes(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (size_t) sysconf(_SC_PAGESIZE);
}

uint64_t
process_cpu_usec(void)
{
    return clock_now_usec(CLOCK_PROCESS_CPUTIME_ID);
}

bool
wait_until(bool (*cond)(void), int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 10) {
        if (cond())
            return true;
        usleep(10000);
    }
    return cond();
}
