/* Shared state of the HTTP layer's integration test (api_http_test*.c): the server fixture,
 * the test handler's counters and the check macro. */
#pragma once

#include <stdatomic.h>
#include <stdio.h>

#include "api_http_client.h"
#include "http.h"

extern int failures, checks;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAILED: %s (%s:%d)\n", #cond, __FILE__, __LINE__);                    \
        }                                                                                          \
    } while (0)

/* The fixture: one server on 127.0.0.1:<any port> and <scratch>/api.sock. */
const char *scratch_dir(void);
extern HttpServer *srv;
extern char sock_path[256];
extern char url_base[64];
extern uint16_t port;

void fixture_config(HttpConfig *c);
void server_up(const HttpConfig *c);
void server_down(void);
/* Sends raw bytes on a new TCP connection and reads one response (status, -1 if closed). */
int raw_exchange(const void *req, size_t len, CliResponse *ret);

/* Counters kept by the test handler. */
extern atomic_int handled;                 /* handler calls */
extern atomic_int stream_closed_seen;      /* producers that saw http_stream_wait() == -1 */
extern atomic_int stream_freed;            /* stream userdata freed */
extern atomic_int late_peak;               /* most /late and /gate requests in flight at once */
extern atomic_int gate_target;             /* /gate answers nothing until this many are in flight */
extern int stream_pipe_w;                  /* write end feeding /stream/pipe producers */
extern int stream_step_efd;                /* acks for /stream/steps (a semaphore eventfd) */
extern _Atomic(HttpRequest *) pending_req; /* the /never request, answered by the test */

#define FILE_CONTENT "file body\n" /* what /file serves */
#define HEAD_SIZED_BYTES 123457    /* the length /head/sized announces (and never sends) */

void test_handler(HttpRequest *r, void *userdata);

/* Scenarios in api_http_test_req.c. */
void scenario_echo(void);
void scenario_paths(void);
void scenario_body(void);
void scenario_unix(void);
void scenario_config(void);
/* Scenarios in api_http_test_conn.c. */
void scenario_slowloris(void);
void scenario_idle(void);
void scenario_load(void);
void scenario_limits(void);
void scenario_stream(void);
void scenario_disconnect(void);
void scenario_stop(void);
void scenario_cpu(void);
/* Scenario in api_http_test_loop.c. */
void scenario_loop(void);
/* Scenarios in api_http_test_hostile.c. */
void scenario_guard(void);
void scenario_crowd(void);
/* Scenarios in api_http_test_share.c. */
void scenario_share(void);
void scenario_rate(void);
/* Scenario in api_http_test_tls.c. */
void scenario_tls(void);
