/* Integration test of the HTTP server layer (hostd/http) over loopback TCP and a unix
 * socket in a scratch directory; one ctest per scenario (argv[1]):
 *   echo, paths, body, unix, config                            api_http_test_req.c
 *   slowloris, idle, load, limits, stream, disconnect, stop, cpu  api_http_test_conn.c
 *   guard, crowd                                               api_http_test_hostile.c
 *   share, rate                                                api_http_test_share.c
 *   loop                                                       api_http_test_loop.c
 *   tls                                                        api_http_test_tls.c
 * This file holds the fixture, the test handler (its routes: /echo, /late, /gate, /slow, /never,
 * /error/quota, /seg/..., /bytes, /file, /head/sized, /head/unsized, /stream/timer,
 * /stream/pipe, /stream/steps) and main(). Figures (cut-off times, CPU, request rates) are printed.
 */
#include "api_http_test.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http_url.h"
#include "testlib.h"
#include "timeutil.h"
#include "sha256.h"

int failures, checks;
HttpServer *srv;
char sock_path[256];
char url_base[64];
uint16_t port;
atomic_int handled, stream_closed_seen, stream_freed, late_peak, gate_target;
int stream_pipe_w = -1;
int stream_step_efd = -1;
_Atomic(HttpRequest *) pending_req;

static char *scratch;
static char file_path[300];
static int stream_pipe_r = -1;
static atomic_int late_in_flight;

#define LATE_DELAY_USEC (100 * USEC_PER_MSEC)
#define GATE_TIMEOUT_USEC (10 * USEC_PER_SEC)
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

/* Queues r's answer, due in delay_usec; dq_lock held. */
static void
defer_answer_locked(HttpRequest *r, uint64_t delay_usec, bool slow)
{
    Deferred *d = calloc(1, sizeof(*d)), **tail;

    d->req = r;
    d->due_usec = now_usec() + delay_usec;
    d->slow = slow;
    for (tail = &dq_head; *tail && (*tail)->due_usec <= d->due_usec; tail = &(*tail)->next)
        ;
    d->next = *tail;
    *tail = d;
    pthread_cond_signal(&dq_cond);
}

static void
defer_answer(HttpRequest *r, uint64_t delay_usec, bool slow)
{
    pthread_mutex_lock(&dq_lock);
    defer_answer_locked(r, delay_usec, slow);
    pthread_mutex_unlock(&dq_lock);
}

/* Counting and queueing under one lock: the last /gate arrival releases every answer queued,
 * and none counted before it can still be on its way to the queue (it was, once: one answer
 * queued just after the release waited out the gate's timeout). */
static void
late_arrived(HttpRequest *r, bool gate)
{
    pthread_mutex_lock(&dq_lock);
    int now = atomic_fetch_add(&late_in_flight, 1) + 1;

    for (int peak = atomic_load(&late_peak); now > peak;)
        if (atomic_compare_exchange_weak(&late_peak, &peak, now))
            break;
    defer_answer_locked(r, gate ? GATE_TIMEOUT_USEC : LATE_DELAY_USEC, false);
    if (gate && now == atomic_load(&gate_target))
        for (Deferred *d = dq_head; d; d = d->next)
            d->due_usec = 0;
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

/* /stream/steps?n=N: line k (from 0) is produced only once the client acknowledged line
 * k - 1 (a count on stream_step_efd): a layer that held lines back would never be acked. */
typedef struct {
    int left, seq;
} StepStream;

static ssize_t
step_produce(HttpStream *st, void *ud, uint8_t *buf, size_t cap)
{
    StepStream *t = ud;
    uint64_t acks;

    if (t->left == 0)
        return 0;
    while (t->seq > 0 && read(stream_step_efd, &acks, sizeof(acks)) != sizeof(acks)) {
        if (http_stream_wait(st, stream_step_efd, 0) < 0) { /* one ack at a time (semaphore) */
            atomic_fetch_add(&stream_closed_seen, 1);
            return -1;
        }
    }
    t->left--;
    return snprintf((char *) buf, cap, "{\"seq\":%d}\n", t->seq++);
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
    if (body) {
        char hex[SHA256_HEX_BYTES + 1];
        sha256_hex(body, len, hex);
        json_object_set_new(j, "body_sha256", json_string(hex));
    }
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
    if (strcmp(path, "/stream/steps") == 0) {
        StepStream *t = calloc(1, sizeof(*t));
        const char *n = http_query(r, "n");
        t->left = n ? atoi(n) : 10;
        http_respond_stream(r, 200, "application/x-ndjson", step_produce, t, stream_userdata_free);
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

void
test_handler(HttpRequest *r, void *userdata)
{
    const char *path = http_path(r);

    (void) userdata;
    atomic_fetch_add(&handled, 1);
    if (strcmp(path, "/echo") == 0) {
        answer_echo(r);
    } else if (strcmp(path, "/late") == 0 || strcmp(path, "/gate") == 0) {
        late_arrived(r, strcmp(path, "/gate") == 0);
    } else if (strcmp(path, "/slow") == 0) {
        defer_answer(r, SLOW_DELAY_USEC, true);
    } else if (strcmp(path, "/error/quota") == 0) {
        answer_quota(r);
    } else if (strncmp(path, "/seg/", 5) == 0) {
        answer_segments(r);
    } else if (strcmp(path, "/bytes") == 0) {
        http_respond_bytes(r, 200, "text/plain", "hello\n", 6);
    } else if (strcmp(path, "/head/sized") == 0) { /* as a forwarded HEAD answers */
        http_respond_head(r, 200, "application/x-tar", HEAD_SIZED_BYTES);
    } else if (strcmp(path, "/head/unsized") == 0) {
        http_respond_head(r, 200, "application/x-ndjson", -1);
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

const char *
scratch_dir(void)
{
    return scratch;
}

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

    if (http_server_start(c, test_handler, NULL, &srv, &e) < 0) {
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
    {"guard", scenario_guard},
    {"crowd", scenario_crowd},
    {"loop", scenario_loop},
    {"share", scenario_share},
    {"rate", scenario_rate},
    {"tls", scenario_tls},
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
    if ((stream_step_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE)) < 0)
        exit(1);
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
    close(stream_step_efd);
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
