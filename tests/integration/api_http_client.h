/* Client side of the HTTP layer's integration test: raw sockets (to send exactly the bytes
 * a hostile client would), a libcurl wrapper, and /proc counters (threads, fds, RSS, CPU). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int cli_connect_tcp(uint16_t port);
/* From 127.a.b.c (any 127/8 address is the loopback), to 127.0.0.1:port. */
int cli_connect_tcp_from(uint32_t src_host_order, uint16_t port);
int cli_connect_unix(const char *path);
int cli_send(int fd, const void *buf, size_t len);

typedef struct {
    int status;
    char *head; /* status line + headers, NUL-terminated */
    char *body; /* NUL-terminated; body_len bytes */
    size_t body_len;
} CliResponse;

/* Reads one response: the head, then Content-Length bytes, a chunked body, or up to EOF.
 * Returns its status, or -1 when the connection closed/failed first or timeout_ms passed. */
int cli_read_response(int fd, int timeout_ms, CliResponse *ret);
void cli_response_clear(CliResponse *r);
/* Copies the value of header name from a response head into buf; NULL if absent. */
const char *cli_header(const char *head, const char *name, char *buf, size_t cap);
/* Waits for EOF or a reset, discarding data; returns the microseconds waited, -1 on
 * timeout. */
int64_t cli_wait_closed(int fd, int timeout_ms);

typedef struct {
    long status; /* 0: no response */
    int curl_code;
    char *body;
    size_t body_len;
    char *headers;
} CurlResult;

/* The CA file an https:// URL's certificate must chain to (alone); NULL: the system's. */
extern const char *curl_ca_file;
/* One request; unix_path non-NULL sends it over that socket. body may be NULL. */
int curl_request(const char *method, const char *url, const char *unix_path, const void *body,
                 size_t len, CurlResult *ret);
void curl_result_clear(CurlResult *r);

unsigned proc_thread_count(void);
unsigned proc_fd_count(void);
size_t proc_rss_bytes(void);
uint64_t process_cpu_usec(void);
/* Polls cond() every 10 ms until it holds or timeout_ms passed. */
bool wait_until(bool (*cond)(void), int timeout_ms);
