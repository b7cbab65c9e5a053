/* Hostile-input scenarios of the HTTP layer (issue 14):
 *   guard   an unauthenticated 60 MB body is answered 401 before it is read (bytes the client
 *           got to send, peak RSS), and concurrent authenticated uploads stay within the
 *           body budget (503 + Retry-After beyond it; peak RSS printed); a refused request
 *           without a body is not kept alive (an authenticated one is)
 *   crowd   10 000 connections from 200 loopback addresses, one header byte each then
 *           silence: memory per waiting connection, a legitimate client's answer time from
 *           another address, and the head deadline closing them all
 * Figures are printed; bounds are generous (CI runs this under ASan too). */
#include "api_http_test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "timeutil.h"
#include "sha256.h"

#define BIG_BODY_BYTES ((size_t) 60 << 20)
#define MIB(x) ((double) (x) / (1 << 20))

/* ---- peak RSS: VmHWM, reset through clear_refs ---- */

static void
peak_rss_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "we");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

/* A "Key:   N kB" line of /proc/self/status, in bytes (0 if absent). */
static size_t
proc_status_bytes(const char *key)
{
    char line[256];
    size_t kib = 0, n = strlen(key);
    FILE *f = fopen("/proc/self/status", "re");

    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, n) == 0 && sscanf(line + n, ": %zu kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib << 10;
}

static size_t
peak_rss_bytes(void)
{
    return proc_status_bytes("VmHWM");
}

/* The test's authentication: "Authorization: Bearer ok", decided at the head (and named, as
 * the faces name a tenant). */
static bool
test_guard(HttpRequest *r, void *userdata)
{
    const char *auth = http_header(r, "Authorization");

    (void) userdata;
    if (auth && strcmp(auth, "Bearer ok") == 0)
        return http_request_set_caller(r, "tenant:ok") == 0;
    Error e = {.category = E_UNAUTHORIZED};
    snprintf(e.message, sizeof(e.message), "no valid token");
    http_respond_error(r, &e, NULL);
    return false;
}

/* Sends a head declaring body_len bytes, then the body as fast as the server takes it,
 * until a response arrives or everything is sent; reads the response. Returns its status
 * (-1: none) and the body bytes that had been sent when the answer arrived. */
static int
upload(const char *auth, size_t body_len, size_t piece, int piece_gap_ms, size_t *ret_sent,
       CliResponse *ret)
{
    static char buf[256 << 10];
    char head[256];
    int fd = cli_connect_tcp(port), status = -1;
    size_t sent = 0;

    *ret = (CliResponse){.status = -1};
    int n = snprintf(head, sizeof(head),
                     "POST /echo HTTP/1.1\r\nHost: x\r\n%s%s%sContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "",
                     body_len);
    if (fd < 0 || cli_send(fd, head, (size_t) n) < 0)
        goto out;
    memset(buf, 'x', sizeof(buf));
    piece = MIN(piece, sizeof(buf));
    while (sent < body_len) {
        struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
        if (poll(&p, 1, 10000) <= 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)))
            break; /* the answer came (or the connection ended) first */
        ssize_t w = send(fd, buf, MIN(piece, body_len - sent), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno != EAGAIN)
            break;
        sent += w > 0 ? (size_t) w : 0;
        if (piece_gap_ms && w > 0)
            usleep((useconds_t) piece_gap_ms * 1000);
    }
    status = cli_read_response(fd, 10000, ret);
out:
    *ret_sent = sent;
    if (fd >= 0)
        close(fd);
    return status;
}

static void
guard_unauthenticated(void)
{
    CliResponse r;
    size_t sent, base = proc_rss_bytes(), peak_growth = 0, max_sent = 0;
    int n_401 = 0;

    for (int i = 0; i < 20; i++) {
        peak_rss_reset();
        n_401 += upload(NULL, BIG_BODY_BYTES, 256 << 10, 0, &sent, &r) == 401;
        peak_growth = MAX(peak_growth, peak_rss_bytes() - MIN(base, peak_rss_bytes()));
        max_sent = MAX(max_sent, sent);
        cli_response_clear(&r);
    }
    fprintf(stderr,
            "  20 unauthenticated %.0f MiB POSTs: %d answered 401; at most %.2f MiB of a body "
            "sent when the answer came; peak RSS %.1f MiB over the %.1f MiB before\n",
            MIB(BIG_BODY_BYTES), n_401, MIB(max_sent), MIB(peak_growth), MIB(base));
    EXPECT(n_401 == 20);
    /* Socket buffers take a few MiB that the server never reads; the whole body is 60. */
    EXPECT(max_sent < BIG_BODY_BYTES / 4);
    EXPECT(peak_growth < ((size_t) 16 << 20));
}

/* One bodiless HTTP/1.1 GET (keep-alive by default); true when the server then closed the
 * connection within timeout_ms. *ret_status: the answer's status. */
static bool
get_then_closed(const char *auth, int timeout_ms, int *ret_status, bool *ret_close_header)
{
    char head[256], v[32];
    CliResponse r;
    int fd = cli_connect_tcp(port);
    int n = snprintf(head, sizeof(head), "GET /echo HTTP/1.1\r\nHost: x\r\n%s%s%s\r\n",
                     auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "");

    *ret_status = -1;
    *ret_close_header = false;
    if (fd < 0 || cli_send(fd, head, (size_t) n) < 0) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    *ret_status = cli_read_response(fd, 10000, &r);
    *ret_close_header = r.head && cli_header(r.head, "Connection", v, sizeof(v)) &&
                        strcasecmp(v, "close") == 0;
    cli_response_clear(&r);
    bool closed = cli_wait_closed(fd, timeout_ms) >= 0;
    close(fd);
    return closed;
}

static void
guard_refused_not_kept_alive(void)
{
    int status;
    bool hdr;
    bool closed = get_then_closed(NULL, 5000, &status, &hdr);

    fprintf(stderr, "  refused bodiless GET: %d, Connection: close %s, closed %s\n", status,
            hdr ? "sent" : "missing", closed ? "yes" : "no");
    EXPECT(status == 401 && hdr && closed);
    closed = get_then_closed("Bearer ok", 1000, &status, &hdr); /* the control */
    fprintf(stderr, "  authenticated bodiless GET: %d, kept alive %s\n", status,
            closed ? "no" : "yes");
    EXPECT(status == 200 && !hdr && !closed);
}

#define UPLOADS 12
static char upload_sha256[SHA256_HEX_BYTES + 1]; /* of UPLOAD_BYTES of 'x' (upload()'s body) */
#define UPLOAD_BYTES ((size_t) 4 << 20)
#define UPLOAD_BUDGET_BYTES ((size_t) 16 << 20)

typedef struct {
    int status;
    bool retry_after;
    bool intact; /* the handler saw the body byte for byte (its sha256) */
} UploadResult;

static void *
upload_one(void *arg)
{
    UploadResult *res = arg;
    CliResponse r;
    size_t sent;
    char v[16];

    /* 64 KiB every 20 ms: about 1.3 s per upload, so they overlap. */
    res->status = upload("Bearer ok", UPLOAD_BYTES, 64 << 10, 20, &sent, &r);
    res->retry_after = res->status == 503 && r.head && cli_header(r.head, "Retry-After", v, sizeof(v));
    res->intact = res->status == 200 && r.body && strstr(r.body, upload_sha256);
    cli_response_clear(&r);
    return NULL;
}

static void
guard_budget(void)
{
    pthread_t th[UPLOADS];
    UploadResult res[UPLOADS] = {0};
    int ok = 0, busy = 0, busy_retry = 0;
    size_t base = proc_rss_bytes();

    peak_rss_reset();
    for (int i = 0; i < UPLOADS; i++)
        pthread_create(&th[i], NULL, upload_one, &res[i]);
    for (int i = 0; i < UPLOADS; i++) {
        pthread_join(th[i], NULL);
        ok += res[i].status == 200;
        busy += res[i].status == 503;
        busy_retry += res[i].retry_after;
    }
    size_t growth = peak_rss_bytes() - MIN(base, peak_rss_bytes());
    fprintf(stderr,
            "  %d concurrent authenticated %.0f MiB uploads, budget %.0f MiB: %d answered 200, "
            "%d refused 503 (%d with Retry-After); peak RSS %.1f MiB over the %.1f MiB "
            "before\n",
            UPLOADS, MIB(UPLOAD_BYTES), MIB(UPLOAD_BUDGET_BYTES), ok, busy, busy_retry,
            MIB(growth), MIB(base));
    EXPECT(ok >= 1 && busy >= 1 && ok + busy == UPLOADS && busy_retry == busy);
    EXPECT(ok <= (int) (UPLOAD_BUDGET_BYTES / UPLOAD_BYTES) * 3); /* later ones reuse room */
    /* The budget, plus a margin for threads, socket reads and answers. Under ASan the RSS
     * says nothing of the daemon's own holding (freed bodies sit in its quarantine and every
     * allocation carries redzones): there the 200/503 split above is the budget's proof. */
#ifndef __SANITIZE_ADDRESS__
    EXPECT(growth < UPLOAD_BUDGET_BYTES + ((size_t) 24 << 20));
#endif
}

/* ---- peak anonymous memory (heap, not the page cache a mapped file brings in) ---- */

static size_t
rss_anon_bytes(void)
{
    return proc_status_bytes("RssAnon");
}

static atomic_bool sampling;
static size_t anon_peak;

static void *
sample_anon(void *arg)
{
    (void) arg;
    while (atomic_load(&sampling)) {
        anon_peak = MAX(anon_peak, rss_anon_bytes());
        usleep(5000);
    }
    return NULL;
}

/* Spooled (spool_dir set): every upload admitted (the budget is as large as all of them)
 * reaches the handler intact, and the server's heap does not hold them: its anonymous memory
 * (sampled every 5 ms) stays far below their size. Mapped, they are page cache (RssFile),
 * which the kernel may drop; not counted. */
static void
guard_spooled(void)
{
    pthread_t th[UPLOADS], sampler;
    UploadResult res[UPLOADS] = {0};
    int intact = 0;
    size_t base = rss_anon_bytes();

    anon_peak = base;
    atomic_store(&sampling, true);
    pthread_create(&sampler, NULL, sample_anon, NULL);
    for (int i = 0; i < UPLOADS; i++)
        pthread_create(&th[i], NULL, upload_one, &res[i]);
    for (int i = 0; i < UPLOADS; i++) {
        pthread_join(th[i], NULL);
        intact += res[i].intact;
    }
    atomic_store(&sampling, false);
    pthread_join(sampler, NULL);
    size_t growth = anon_peak - MIN(base, anon_peak);
    fprintf(stderr,
            "  %d concurrent authenticated %.0f MiB uploads spooled to files: %d arrived intact; "
            "peak anonymous memory %.1f MiB over the %.1f MiB before (the bodies: %.0f MiB)\n",
            UPLOADS, MIB(UPLOAD_BYTES), intact, MIB(growth), MIB(base),
            MIB(UPLOADS * UPLOAD_BYTES));
    EXPECT(intact == UPLOADS);
#ifndef __SANITIZE_ADDRESS__
    EXPECT(growth < UPLOADS * UPLOAD_BYTES / 4); /* the bodies are not in the heap */
#endif
}

void
scenario_guard(void)
{
    HttpConfig c;
    char *x = malloc(UPLOAD_BYTES);

    memset(x, 'x', UPLOAD_BYTES);
    sha256_hex(x, UPLOAD_BYTES, upload_sha256);
    free(x);

    fixture_config(&c);
    c.guard = test_guard;
    c.max_body_bytes = BIG_BODY_BYTES + 1;
    c.body_budget_bytes = BIG_BODY_BYTES + 1;
    server_up(&c);
    guard_unauthenticated();
    guard_refused_not_kept_alive();
    server_down();

    fixture_config(&c);
    c.guard = test_guard;
    c.max_body_bytes = UPLOAD_BYTES;
    c.body_budget_bytes = UPLOAD_BUDGET_BYTES;
    c.body_share_bytes = UPLOAD_BUDGET_BYTES; /* one caller: the budget is what is counted */
    server_up(&c);
    guard_budget();
    server_down();

    fixture_config(&c);
    c.guard = test_guard;
    c.max_body_bytes = UPLOAD_BYTES;
    c.body_budget_bytes = UPLOADS * UPLOAD_BYTES;
    c.body_share_bytes = c.body_budget_bytes; /* one caller, every upload admitted */
    c.spool_dir = scratch_dir();
    server_up(&c);
    guard_spooled();
    server_down();
}

/* ---- crowd ---- */

#define CROWD 10000
#define CROWD_PER_ADDR 50
#define CROWD_HEAD_TIMEOUT_S 8

/* A TCP socket bound to 127.a.b.c (any 127/8 address is the loopback) and connected. */
static int
connect_from(uint32_t src_host_order)
{
    return cli_connect_tcp_from(src_host_order, port);
}

/* The child: CROWD connections, 50 per address from 127.1.0.1 on, each sends "G"; reports
 * how many it holds, then holds them until the parent closes the pipe. */
static void
crowd_child(int report_fd, int hold_fd)
{
    int n = 0;

    for (int i = 0; i < CROWD; i++) {
        uint32_t k = (uint32_t) (i / CROWD_PER_ADDR);
        int fd = connect_from((127u << 24) | (1u << 16) | ((k / 250) << 8) | (k % 250 + 1));
        if (fd >= 0 && send(fd, "G", 1, MSG_NOSIGNAL) == 1)
            n++;
    }
    (void) !write(report_fd, &n, sizeof(n));
    char c;
    (void) !read(hold_fd, &c, 1);
    _exit(0);
}

static unsigned crowd_target;

static bool
crowd_waiting(void)
{
    return http_server_pending_heads(srv) >= crowd_target;
}

static bool
crowd_gone(void)
{
    return http_server_pending_heads(srv) == 0;
}

/* A request from 127.2.0.1, an address the crowd does not use: its answer time (s), or -1. */
static double
legit_request(void)
{
    static const char req[] = "GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    CliResponse r;
    uint64_t t0 = now_usec();
    int fd = connect_from((127u << 24) | (2u << 16) | 1u), status = -1;

    if (fd >= 0 && cli_send(fd, req, sizeof(req) - 1) == 0)
        status = cli_read_response(fd, 10000, &r);
    if (fd >= 0)
        close(fd);
    if (status >= 0)
        cli_response_clear(&r);
    return status == 200 ? (double) (now_usec() - t0) / USEC_PER_SEC : -1;
}

void
scenario_crowd(void)
{
    HttpConfig c;
    struct rlimit rl;
    int report[2], hold[2], held = 0;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur < CROWD + 2048)
        test_skip("RLIMIT_NOFILE is below what 10 000 connections need");
    fixture_config(&c);
    c.head_timeout_s = CROWD_HEAD_TIMEOUT_S;
    server_up(&c);
    double before = legit_request();
    size_t rss0 = proc_rss_bytes();
    if (pipe2(report, O_CLOEXEC) < 0 || pipe2(hold, O_CLOEXEC) < 0)
        exit(1);
    uint64_t t0 = now_usec();
    pid_t pid = fork();
    if (pid == 0) {
        close(report[0]);
        close(hold[1]);
        crowd_child(report[1], hold[0]);
    }
    close(report[1]);
    close(hold[0]);
    EXPECT(read(report[0], &held, sizeof(held)) == (ssize_t) sizeof(held));
    double connect_s = (double) (now_usec() - t0) / USEC_PER_SEC;
    crowd_target = (unsigned) held;
    EXPECT(held == CROWD);
    EXPECT(wait_until(crowd_waiting, 5000));
    unsigned waiting = http_server_pending_heads(srv);
    size_t rss1 = proc_rss_bytes();
    double during = legit_request();
    fprintf(stderr,
            "  %d connections from %d addresses (one header byte each) in %.2f s; %u waiting "
            "for their head; RSS %.1f -> %.1f MiB: %.0f bytes per waiting connection\n",
            held, CROWD / CROWD_PER_ADDR, connect_s, waiting, MIB(rss0), MIB(rss1),
            waiting ? (double) (rss1 - MIN(rss0, rss1)) / waiting : 0.0);
    fprintf(stderr, "  legitimate client from 127.2.0.1: answered in %.3f s before, %.3f s "
            "during\n", before, during);
    EXPECT(waiting >= (unsigned) CROWD);
    EXPECT(during >= 0 && during < 5.0); /* the goal is < 1 s; 5x for ASan and a busy CI */
    EXPECT(rss1 - MIN(rss0, rss1) < (size_t) waiting * 2048);
    EXPECT(wait_until(crowd_gone, (CROWD_HEAD_TIMEOUT_S + 10) * 1000));
    fprintf(stderr, "  every waiting head closed %.2f s after the first connect (head timeout "
            "%d s)\n", (double) (now_usec() - t0) / USEC_PER_SEC, CROWD_HEAD_TIMEOUT_S);
    close(hold[1]);
    close(report[0]);
    waitpid(pid, NULL, 0);
    server_down();
}
