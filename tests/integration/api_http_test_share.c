/* What one caller may hold of what every caller shares (issue 25, finding 5): the guard names
 * the caller ("Authorization: Bearer A" is "tenant:A"), as both faces name a tenant.
 *   share  caller A tries to hold the whole body budget and every connection: four declared
 *          bodies trickled (Content-Length: its share is admitted, the rest 503 at once, never
 *          read), four chunked bodies sent as fast as loopback takes them and then stalled
 *          (reserved as they arrive: the share stops them too; the time A takes to fill its
 *          share is printed: what reserving as bytes arrive would let a caller do without
 *          a share), and kept-alive connections from four addresses (its share of
 *          max_connections; the rest 503 and closed). After each, caller B's request from
 *          another address is answered 200.
 *   rate   a body trickled below the budget's minimum rate is cut after one window (its
 *          reservation released, the cut counted), long before request_timeout_s; a steady
 *          upload at 4x the minimum across several windows arrives whole.
 * Figures are printed. The budget is the test's own (HttpConfig.body_budget), so what each
 * caller holds in it can be read. */
#include "api_http_test.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testlib.h"
#include "timeutil.h"

#define MIB(x) ((double) (x) / (1 << 20))
#define SHARE_MAX_BODY ((size_t) 4 << 20)
#define SHARE_BUDGET ((size_t) 16 << 20) /* four largest bodies; one caller's share: half */
#define SHARE_MAX_CONNECTIONS 16         /* one caller's share: half */
#define SHARE_MAX_PER_IP 8
#define CALLER_A "tenant:A"
#define WAIT_MS 10000

static HttpBudget *budget;

/* "Authorization: Bearer <name>" names caller "tenant:<name>"; /bytes is public (passes
 * unnamed, as a health route does); anything else is 401. */
static bool
bearer_guard(HttpRequest *r, void *userdata)
{
    const char *auth = http_header(r, "Authorization");
    char key[HTTP_CALLER_MAX_BYTES];

    (void) userdata;
    if (auth && strncmp(auth, "Bearer ", 7) == 0 && auth[7] &&
        snprintf(key, sizeof(key), "tenant:%s", auth + 7) < (int) sizeof(key) &&
        http_request_set_caller(r, key) == 0)
        return true;
    if (strcmp(http_path(r), "/bytes") == 0)
        return true;
    Error e = {.category = E_UNAUTHORIZED};
    snprintf(e.message, sizeof(e.message), "no valid token");
    http_respond_error(r, &e, NULL);
    return false;
}

static void
share_server_up(HttpConfig *c)
{
    Error *e = NULL;

    if (http_budget_new(c, &budget, &e) < 0) {
        fprintf(stderr, "http_budget_new: %s\n", e->message);
        exit(1);
    }
    c->body_budget = budget;
    c->guard = bearer_guard;
    server_up(c);
}

static void
share_server_down(void)
{
    server_down();
    http_budget_free(budget);
    budget = NULL;
}

static uint32_t
addr(unsigned a, unsigned b, unsigned c)
{
    return (127u << 24) | (a << 16) | (b << 8) | c;
}

/* A POST /echo head from src with caller name's token and the given framing. */
static int
open_upload(uint32_t src, const char *name, const char *framing)
{
    char head[256];
    int fd = cli_connect_tcp_from(src, port);
    int n = snprintf(head, sizeof(head),
                     "POST /echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n%s\r\n\r\n",
                     name, framing);

    if (fd >= 0 && cli_send(fd, head, (size_t) n) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Caller B, from its own address: one request with a 1 MiB body. Its status. */
static int
caller_b_posts(void)
{
    static char body[1 << 20];
    char framing[64];
    CliResponse r;

    memset(body, 'b', sizeof(body));
    snprintf(framing, sizeof(framing), "Content-Length: %zu\r\nConnection: close", sizeof(body));
    int fd = open_upload(addr(5, 0, 1), "B", framing), status = -1;
    if (fd >= 0 && cli_send(fd, body, sizeof(body)) == 0)
        status = cli_read_response(fd, WAIT_MS, &r);
    if (status >= 0)
        cli_response_clear(&r);
    if (fd >= 0)
        close(fd);
    return status;
}

static size_t held_target;

static bool
a_holds_target(void)
{
    return http_budget_used_by(budget, CALLER_A) == held_target;
}

/* Declared bodies: A declares four largest bodies, sends one byte of each and holds them. A
 * refused one is answered 503 at once; an admitted one shows in the budget at its head. */
static void
share_declared(void)
{
    char framing[64];
    int fd[4], refused = 0;

    snprintf(framing, sizeof(framing), "Content-Length: %zu", SHARE_MAX_BODY);
    for (int i = 0; i < 4; i++) {
        size_t before = http_budget_used_by(budget, CALLER_A);
        fd[i] = open_upload(addr(3, 0, 1), "A", framing);
        EXPECT(fd[i] >= 0 && cli_send(fd[i], "a", 1) == 0);
        held_target = before + SHARE_MAX_BODY;
        struct pollfd p = {.fd = fd[i], .events = POLLIN};
        /* Either the 503 arrives or the reservation shows: whichever is first decides. */
        for (uint64_t end = now_usec() + WAIT_MS * USEC_PER_MSEC;
             now_usec() < end && !a_holds_target() && poll(&p, 1, 10) == 0;)
            ;
        if (!a_holds_target()) {
            CliResponse r;
            refused += cli_read_response(fd[i], WAIT_MS, &r) == 503;
            cli_response_clear(&r);
        }
    }
    size_t held = http_budget_used_by(budget, CALLER_A);
    int b = caller_b_posts();
    fprintf(stderr,
            "  declared: A declared 4 x %.0f MiB and trickles them: it holds %.0f MiB (share "
            "%.0f of %.0f MiB), %d refused 503 before a byte was read; B's 1 MiB POST: %d\n",
            MIB(SHARE_MAX_BODY), MIB(held), MIB(http_budget_share(budget)), MIB(SHARE_BUDGET),
            refused, b);
    EXPECT(held <= http_budget_share(budget) && refused == 2);
    EXPECT(b == 200);
    for (int i = 0; i < 4; i++)
        close(fd[i]);
    held_target = 0;
    EXPECT(wait_until(a_holds_target, WAIT_MS));
}

/* Sends n chunks of 64 KiB on fd; false once the server closed it. */
static bool
send_chunks(int fd, int n)
{
    static char chunk[10 + (64 << 10) + 2];
    static size_t len;

    if (!len) {
        len = (size_t) snprintf(chunk, sizeof(chunk), "10000\r\n");
        memset(chunk + len, 'c', 64 << 10);
        len += 64 << 10;
        memcpy(chunk + len, "\r\n", 2);
        len += 2;
    }
    for (int i = 0; i < n; i++)
        if (cli_send(fd, chunk, len) < 0)
            return false;
    return true;
}

/* Chunked bodies, reserved as their buffers grow: A sends all but the last 64 KiB of a
 * largest body on four connections as fast as the server reads, then stalls. */
static void
share_chunked(void)
{
    int fd[4], cut = 0;
    int n_chunks = (int) (SHARE_MAX_BODY / (64 << 10)) - 1;
    uint64_t sending_usec = 0, filled_usec = 0;

    for (int i = 0; i < 4; i++) {
        fd[i] = open_upload(addr(3, 0, 2), "A", "Transfer-Encoding: chunked");
        uint64_t t0 = now_usec();
        bool whole = fd[i] >= 0 && send_chunks(fd[i], n_chunks);
        sending_usec += now_usec() - t0;
        /* The server closes a body that outgrows A's share mid-body: the rest of what was
         * sent meets a reset, or the close shows as EOF. */
        cut += !whole || cli_wait_closed(fd[i], 500) >= 0;
        if (!filled_usec && http_budget_used_by(budget, CALLER_A) >= http_budget_share(budget))
            filled_usec = sending_usec; /* the time spent sending, not the waits for a close */
    }
    size_t held = http_budget_used_by(budget, CALLER_A);
    int b = caller_b_posts();
    fprintf(stderr,
            "  chunked: A sent 4 bodies of %.2f MiB at loopback speed, then stalled: it filled "
            "its %.0f MiB share in %.3f s and holds %.0f MiB; %d cut mid-body; B's 1 MiB POST: "
            "%d\n",
            MIB((size_t) n_chunks << 16), MIB(http_budget_share(budget)),
            (double) filled_usec / USEC_PER_SEC, MIB(held), cut, b);
    EXPECT(held <= http_budget_share(budget) && cut == 2);
    EXPECT(b == 200);
    for (int i = 0; i < 4; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    held_target = 0;
    EXPECT(wait_until(a_holds_target, WAIT_MS));
}

static unsigned conns_target;

static bool
conns_at_target(void)
{
    return http_server_connections(srv) == conns_target;
}

/* Connections: A opens SHARE_MAX_CONNECTIONS kept-alive ones from four addresses (each
 * within max_per_ip), one authenticated GET each, then idles. */
static void
share_connections(void)
{
    static const char get[] = "GET /echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer A\r\n\r\n";
    int fd[SHARE_MAX_CONNECTIONS], kept = 0, refused = 0;

    for (int i = 0; i < SHARE_MAX_CONNECTIONS; i++) {
        CliResponse r;
        fd[i] = cli_connect_tcp_from(addr(4, 0, (unsigned) (i % 4) + 1), port);
        int status = fd[i] >= 0 && cli_send(fd[i], get, sizeof(get) - 1) == 0
                         ? cli_read_response(fd[i], WAIT_MS, &r)
                         : -1;
        if (status >= 0)
            cli_response_clear(&r);
        kept += status == 200;
        refused += status == 503;
    }
    /* The refused ones close; what stays is what A holds. */
    conns_target = (unsigned) kept;
    EXPECT(wait_until(conns_at_target, WAIT_MS));
    int b = caller_b_posts();
    fprintf(stderr,
            "  connections: A opened %d kept-alive connections from 4 addresses "
            "(max_connections %d, max_per_ip %d): %d kept (share %u), %d refused 503; B's "
            "POST: %d\n",
            SHARE_MAX_CONNECTIONS, SHARE_MAX_CONNECTIONS, SHARE_MAX_PER_IP, kept,
            http_server_max_per_caller(srv), refused, b);
    EXPECT(kept == (int) http_server_max_per_caller(srv) &&
           kept + refused == SHARE_MAX_CONNECTIONS);
    EXPECT(b == 200);
    for (int i = 0; i < SHARE_MAX_CONNECTIONS; i++)
        if (fd[i] >= 0)
            close(fd[i]);
}

/* A public route's answer closes its connection: a caller nobody named is not kept alive
 * (idle, it would hold a thread for idle_timeout_s, counted per address only); a named one
 * is. */
static void
share_public_not_kept_alive(void)
{
    static const char pub[] = "GET /bytes HTTP/1.1\r\nHost: x\r\n\r\n";
    static const char named[] = "GET /bytes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer C\r\n\r\n";
    const char *reqs[] = {pub, named};
    bool closed[2] = {false, false};
    int status[2] = {-1, -1};

    for (int i = 0; i < 2; i++) {
        CliResponse r;
        int fd = cli_connect_tcp_from(addr(6, 0, 1), port);
        if (fd >= 0 && cli_send(fd, reqs[i], strlen(reqs[i])) == 0)
            status[i] = cli_read_response(fd, WAIT_MS, &r);
        if (status[i] >= 0)
            cli_response_clear(&r);
        closed[i] = fd >= 0 && cli_wait_closed(fd, 1000) >= 0;
        if (fd >= 0)
            close(fd);
    }
    fprintf(stderr,
            "  public route: %d, closed %s; the same by a named caller: %d, kept alive %s\n",
            status[0], closed[0] ? "yes" : "no", status[1], closed[1] ? "no" : "yes");
    EXPECT(status[0] == 200 && closed[0]);
    EXPECT(status[1] == 200 && !closed[1]);
}

void
scenario_share(void)
{
    HttpConfig c;

    fixture_config(&c);
    c.max_body_bytes = SHARE_MAX_BODY;
    c.body_budget_bytes = SHARE_BUDGET;
    c.body_min_bytes_per_s = 0; /* the share alone: nothing is cut for its pace here */
    c.max_connections = SHARE_MAX_CONNECTIONS;
    c.max_per_ip = SHARE_MAX_PER_IP;
    share_server_up(&c);
    share_declared();
    share_chunked();
    share_connections();
    share_public_not_kept_alive();
    share_server_down();
}

/* ---- rate ---- */

#define RATE_MIN_BYTES_PER_S ((size_t) 64 << 10)
#define RATE_WINDOW_S 2
#define RATE_REQUEST_TIMEOUT_S 30
#define STEADY_BYTES ((size_t) 1 << 20)
#define STEADY_PIECE ((size_t) 32 << 10)
#define STEADY_GAP_USEC (125 * USEC_PER_MSEC) /* 256 KiB/s: 4x the minimum */

/* A declares 1 MiB and sends a byte every 250 ms until the server closes the connection (or
 * until well before the absolute deadline would). Returns the seconds it took, -1: never. */
static double
trickle_until_cut(void)
{
    char framing[64];
    uint64_t t0 = now_usec(), end = t0 + (RATE_REQUEST_TIMEOUT_S - 5) * USEC_PER_SEC;

    snprintf(framing, sizeof(framing), "Content-Length: %zu", STEADY_BYTES);
    int fd = open_upload(addr(3, 0, 3), "A", framing);
    if (fd < 0)
        return -1;
    while (now_usec() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char c;
        if (poll(&p, 1, 250) > 0 && recv(fd, &c, 1, MSG_DONTWAIT) <= 0)
            break; /* EOF or reset: cut */
        if (send(fd, "a", 1, MSG_NOSIGNAL) < 0)
            break;
    }
    double took = (double) (now_usec() - t0) / USEC_PER_SEC;
    close(fd);
    return now_usec() < end ? took : -1;
}

static unsigned
slow_cuts(void)
{
    HttpBudgetStats st;
    http_budget_stats(budget, &st);
    return (unsigned) st.slow_cut;
}

static bool
nothing_held(void)
{
    return http_budget_used(budget) == 0;
}

/* B's steady upload, STEADY_PIECE every STEADY_GAP_USEC: its status; *ret_len: the body length
 * the handler saw. */
static int
steady_upload(size_t *ret_len)
{
    static char piece[STEADY_PIECE];
    char framing[64];
    CliResponse r;
    int status = -1;

    *ret_len = 0;
    memset(piece, 's', sizeof(piece));
    snprintf(framing, sizeof(framing), "Content-Length: %zu\r\nConnection: close", STEADY_BYTES);
    int fd = open_upload(addr(5, 0, 2), "B", framing);
    for (size_t sent = 0; fd >= 0 && sent < STEADY_BYTES; sent += STEADY_PIECE) {
        if (cli_send(fd, piece, STEADY_PIECE) < 0)
            break;
        usleep(STEADY_GAP_USEC);
    }
    if (fd >= 0)
        status = cli_read_response(fd, WAIT_MS, &r);
    if (status == 200) {
        const char *p = strstr(r.body, "\"body_len\":");
        *ret_len = p ? strtoull(p + 11, NULL, 10) : 0;
    }
    if (status >= 0)
        cli_response_clear(&r);
    if (fd >= 0)
        close(fd);
    return status;
}

void
scenario_rate(void)
{
    HttpConfig c;
    size_t len;

    fixture_config(&c);
    c.request_timeout_s = RATE_REQUEST_TIMEOUT_S;
    c.body_min_bytes_per_s = RATE_MIN_BYTES_PER_S;
    c.body_rate_window_s = RATE_WINDOW_S;
    share_server_up(&c);

    double cut_s = trickle_until_cut();
    fprintf(stderr,
            "  a 1 MiB body trickled a byte per 250 ms (minimum %zu KiB/s over %d s windows): "
            "cut after %.2f s (request_timeout_s %d); slow bodies cut: %u\n",
            RATE_MIN_BYTES_PER_S >> 10, RATE_WINDOW_S, cut_s, RATE_REQUEST_TIMEOUT_S, slow_cuts());
    EXPECT(cut_s >= RATE_WINDOW_S - 0.5); /* judged at the end of a window, not before */
    EXPECT(slow_cuts() == 1);
    EXPECT(wait_until(nothing_held, WAIT_MS)); /* its reservation went with it */

    uint64_t t0 = now_usec();
    int status = steady_upload(&len);
    fprintf(stderr,
            "  a steady 1 MiB upload at 4x the minimum (%zu KiB every %llu ms) over %.1f s: %d, "
            "%zu bytes arrived; slow bodies cut: %u\n",
            STEADY_PIECE >> 10, (unsigned long long) (STEADY_GAP_USEC / USEC_PER_MSEC),
            (double) (now_usec() - t0) / USEC_PER_SEC, status, len, slow_cuts());
    EXPECT(status == 200 && len == STEADY_BYTES);
    EXPECT(slow_cuts() == 1);
    share_server_down();
}
