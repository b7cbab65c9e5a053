/* HTTPS on the HTTP layer (issue 30), scenario tls (see api_http_test.c). A test CA and
 * certificates are made by openssl when it starts (tests/lib/testca.sh), nothing is kept.
 *   - start refused with an error naming the file: a certificate that does not exist, a key
 *     that is not a key, a pair that does not match;
 *   - HTTPS with the CA: GET /echo 200; curl without it (the system's store) or with another
 *     CA refuses the server (CURLE_PEER_FAILED_VERIFICATION); the unix socket stays plain;
 *   - the front door on a TLS listener: plain HTTP sent to it is closed unanswered at once;
 *     50 connections holding part of a ClientHello wait without a thread each, and are closed
 *     at the head window; a completed handshake with no request head, and a head trickled
 *     1 byte / 500 ms over TLS, are cut at the head window (not the request deadline); a head
 *     sent whole and a body trickled are cut at the request deadline;
 *   - figures: a GET on a fresh connection, HTTPS and plain, p50 of 40 each. */
#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api_http_test.h"
#include "testlib.h"
#include "timeutil.h"

/* As api_http_test_conn.c: exact lower bounds, upper bounds that only catch "never" or "at
 * the other deadline" (the two deadlines are chosen far enough apart for that). */
#define SLOW_HOST_FACTOR 5
#define TRICKLE_INTERVAL_MS 500
#define GIVE_UP_MS 30000
#define CUT_LATE_S (1.2 * SLOW_HOST_FACTOR)
#define HEAD_WINDOW_S 1      /* head_timeout_s */
#define REQUEST_DEADLINE_S 8 /* request_timeout_s: over HEAD_WINDOW_S + CUT_LATE_S */
#define DOOR_CROWD 50        /* under max_per_ip (64): all from 127.0.0.1 */
#define FRESH_GETS 40
#define WAIT_TLS_MS (3000 * SLOW_HOST_FACTOR) /* a handshake, an answer, a close */
_Static_assert(HEAD_WINDOW_S + CUT_LATE_S < REQUEST_DEADLINE_S - 0.2, "the deadlines apart");

static char dir[256], ca[300], cert[300], key[300], other_ca[300], other_key[300];

static double
secs_since(uint64_t t0)
{
    return (double) (now_usec() - t0) / 1e6;
}

static void
make_certs(void)
{
    char cmd[1024];
    snprintf(dir, sizeof(dir), "%s", scratch_dir());
    snprintf(cmd, sizeof(cmd),
             "sh %s/tests/lib/testca.sh %s server && sh %s/tests/lib/testca.sh %s other other-ca",
             STOCKADE_SOURCE_DIR, dir, STOCKADE_SOURCE_DIR, dir);
    if (system(cmd) != 0)
        test_skip("openssl could not make the test CA (%s)", cmd);
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    snprintf(cert, sizeof(cert), "%s/server.pem", dir);
    snprintf(key, sizeof(key), "%s/server.key", dir);
    snprintf(other_ca, sizeof(other_ca), "%s/other-ca.pem", dir);
    snprintf(other_key, sizeof(other_key), "%s/other.key", dir);
}

static void
tls_config(HttpConfig *c)
{
    fixture_config(c);
    c->tls_cert_file = cert;
    c->tls_key_file = key;
    c->head_timeout_s = HEAD_WINDOW_S;
    c->request_timeout_s = REQUEST_DEADLINE_S;
    c->idle_timeout_s = 30; /* a trickle never trips it: only the two deadlines may cut */
}

/* The start is refused, E_INVALID, and the message names `name` (and says `why`). */
static void
start_refused(const char *cert_file, const char *key_file, const char *name, const char *why)
{
    HttpConfig c;
    HttpServer *s = NULL;
    Error *e = NULL;

    tls_config(&c);
    c.tls_cert_file = cert_file;
    c.tls_key_file = key_file;
    EXPECT(http_server_start(&c, test_handler, NULL, &s, &e) < 0 && e && e->category == E_INVALID);
    if (e) {
        fprintf(stderr, "  refused: %s\n", e->message);
        EXPECT(strstr(e->message, name) != NULL);
        EXPECT(strstr(e->message, why) != NULL);
    }
    error_free(e);
}

static void
refusals(void)
{
    char missing[320];
    snprintf(missing, sizeof(missing), "%s/nothing.pem", dir);
    start_refused(missing, key, missing, "tls_cert");
    start_refused(cert, ca, ca, "tls_key"); /* a certificate where the key should be */
    start_refused(cert, other_key, other_key, "is not the key of");
    start_refused(key, key, key, "not a PEM certificate");
}

static int
curl_get(const char *url, const char *ca_file, CurlResult *res)
{
    curl_ca_file = ca_file;
    int r = curl_request("GET", url, NULL, NULL, 0, res);
    curl_ca_file = NULL;
    return r;
}

static void
serve(void)
{
    CurlResult res;
    char url[128];

    snprintf(url, sizeof(url), "https://127.0.0.1:%u/echo", port);
    EXPECT(curl_get(url, ca, &res) == 0 && res.status == 200);
    curl_result_clear(&res);
    /* The system's store does not know the test CA, and another CA is not this one. */
    EXPECT(curl_get(url, NULL, &res) < 0 && res.curl_code == CURLE_PEER_FAILED_VERIFICATION);
    curl_result_clear(&res);
    EXPECT(curl_get(url, other_ca, &res) < 0 && res.curl_code == CURLE_PEER_FAILED_VERIFICATION);
    curl_result_clear(&res);
    /* The unix socket is this machine's: plain. */
    EXPECT(curl_request("GET", "http://localhost/echo", sock_path, NULL, 0, &res) == 0 &&
           res.status == 200);
    curl_result_clear(&res);
}

/* A TLS client on its own socket (GnuTLS): the test's hands on the record layer. */
typedef struct {
    int fd;
    gnutls_session_t s;
    gnutls_certificate_credentials_t cred;
} TlsClient;

static int
tls_connect(TlsClient *t)
{
    int r;
    *t = (TlsClient){.fd = cli_connect_tcp(port)};
    if (t->fd < 0 || gnutls_certificate_allocate_credentials(&t->cred) < 0 ||
        gnutls_certificate_set_x509_trust_file(t->cred, ca, GNUTLS_X509_FMT_PEM) < 1 ||
        gnutls_init(&t->s, GNUTLS_CLIENT) < 0)
        return -1;
    gnutls_set_default_priority(t->s);
    gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, t->cred);
    gnutls_session_set_verify_cert(t->s, NULL, 0);
    gnutls_transport_set_int(t->s, t->fd);
    gnutls_handshake_set_timeout(t->s, WAIT_TLS_MS);
    do
        r = gnutls_handshake(t->s);
    while (r < 0 && !gnutls_error_is_fatal(r));
    return r < 0 ? -1 : 0;
}

static void
tls_close(TlsClient *t)
{
    if (t->s)
        gnutls_deinit(t->s);
    if (t->cred)
        gnutls_certificate_free_credentials(t->cred);
    if (t->fd >= 0)
        close(t->fd);
}

/* Sends prefix over TLS, then (trickle) one byte every TRICKLE_INTERVAL_MS, until the server
 * cuts the connection: the seconds from t0 (-1: never, or it answered). */
static double
tls_until_cut(TlsClient *t, const char *prefix, bool trickle, uint64_t t0)
{
    if (prefix[0] && gnutls_record_send(t->s, prefix, strlen(prefix)) < 0)
        return secs_since(t0);
    while (secs_since(t0) * 1000 < GIVE_UP_MS) {
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        if (gnutls_record_check_pending(t->s) > 0 || poll(&p, 1, TRICKLE_INTERVAL_MS) > 0) {
            char buf[256];
            ssize_t n = gnutls_record_recv(t->s, buf, sizeof(buf));
            if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
                continue;
            return n <= 0 ? secs_since(t0) : -1;
        }
        if (trickle && gnutls_record_send(t->s, "a", 1) != 1)
            return secs_since(t0);
    }
    return -1;
}

static void *
body_trickle_main(void *arg)
{
    double *ret = arg;
    TlsClient t;
    uint64_t t0 = now_usec();
    *ret = tls_connect(&t) < 0 ? -2
                               : tls_until_cut(&t,
                                               "POST /echo HTTP/1.1\r\nHost: x\r\n"
                                               "Content-Length: 1000\r\n\r\n",
                                               true, t0);
    tls_close(&t);
    return NULL;
}

static bool
door_full(void)
{
    return http_server_pending_heads(srv) == DOOR_CROWD;
}

static bool
door_empty(void)
{
    return http_server_pending_heads(srv) == 0;
}

/* Plain HTTP to the TLS port, and a crowd holding part of a ClientHello: no thread each. */
static void
front_door(void)
{
    static const char plain[] = "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n";
    static const uint8_t partial_hello[] = {22, 3, 1, 0x02, 0x00, 1, 0, 1};
    int fds[DOOR_CROWD];

    int fd = cli_connect_tcp(port);
    EXPECT(fd >= 0 && cli_send(fd, plain, sizeof(plain) - 1) == 0);
    CliResponse r;
    EXPECT(cli_read_response(fd, WAIT_TLS_MS, &r) == -1 && r.status == -1); /* closed, unanswered */
    cli_response_clear(&r);
    close(fd);

    unsigned threads = proc_thread_count();
    uint64_t t0 = now_usec();
    for (int i = 0; i < DOOR_CROWD; i++)
        EXPECT((fds[i] = cli_connect_tcp(port)) >= 0 &&
               cli_send(fds[i], partial_hello, sizeof(partial_hello)) == 0);
    EXPECT(wait_until(door_full, WAIT_TLS_MS));
    unsigned during = proc_thread_count();
    fprintf(stderr,
            "  %d connections holding part of a ClientHello: %u waiting at the door, "
            "threads %u -> %u\n",
            DOOR_CROWD, http_server_pending_heads(srv), threads, during);
    EXPECT(during <= threads); /* none started for them (earlier ones may have ended) */
    EXPECT(wait_until(door_empty, GIVE_UP_MS));
    double closed = secs_since(t0);
    fprintf(stderr,
            "  ... all closed by the door %.2f s after the first connect (head window "
            "%d s)\n",
            closed, HEAD_WINDOW_S);
    EXPECT(closed >= HEAD_WINDOW_S - 0.2 && closed <= HEAD_WINDOW_S + CUT_LATE_S);
    for (int i = 0; i < DOOR_CROWD; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* Past the door a thread is held: the head window still bounds it, the request deadline
 * bounds the body. */
static void
deadlines(void)
{
    pthread_t body_thread;
    double body_cut = -1;
    TlsClient t;

    pthread_create(&body_thread, NULL, body_trickle_main, &body_cut);
    uint64_t t0 = now_usec();
    EXPECT(tls_connect(&t) == 0);
    double cut = tls_until_cut(&t, "", false, t0);
    fprintf(stderr, "  a handshake and no request head: cut after %.2f s (head window %d s)\n", cut,
            HEAD_WINDOW_S);
    EXPECT(cut >= HEAD_WINDOW_S - 0.2 && cut <= HEAD_WINDOW_S + CUT_LATE_S);
    tls_close(&t);

    t0 = now_usec();
    EXPECT(tls_connect(&t) == 0);
    cut = tls_until_cut(&t, "GET /echo HTTP/1.1\r\nHost: x\r\nX-Slow: ", true, t0);
    fprintf(stderr, "  a head trickled over TLS (1 B / %d ms): cut after %.2f s\n",
            TRICKLE_INTERVAL_MS, cut);
    EXPECT(cut >= HEAD_WINDOW_S - 0.2 && cut <= HEAD_WINDOW_S + CUT_LATE_S);
    tls_close(&t);

    pthread_join(body_thread, NULL);
    fprintf(stderr,
            "  a whole head, then a body trickled: cut after %.2f s (request deadline "
            "%d s)\n",
            body_cut, REQUEST_DEADLINE_S);
    EXPECT(body_cut >= REQUEST_DEADLINE_S - 0.2 && body_cut <= REQUEST_DEADLINE_S + CUT_LATE_S);
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* A fresh connection per GET: what the handshake adds. Printed, never judged. */
static double
fresh_get_p50_ms(const char *scheme)
{
    double ms[FRESH_GETS];
    char url[128];
    snprintf(url, sizeof(url), "%s://127.0.0.1:%u/echo", scheme, port);
    for (int i = 0; i < FRESH_GETS; i++) {
        CurlResult res;
        uint64_t t0 = now_usec();
        EXPECT(curl_get(url, ca, &res) == 0 && res.status == 200);
        ms[i] = secs_since(t0) * 1000;
        curl_result_clear(&res);
    }
    qsort(ms, FRESH_GETS, sizeof(ms[0]), cmp_double);
    return ms[FRESH_GETS / 2];
}

void
scenario_tls(void)
{
    HttpConfig c;

    make_certs();
    refusals();
    tls_config(&c);
    server_up(&c);
    EXPECT(http_server_tls(srv));
    serve();
    front_door();
    deadlines();
    double https = fresh_get_p50_ms("https");
    server_down();
    fixture_config(&c);
    server_up(&c);
    EXPECT(!http_server_tls(srv));
    double plain = fresh_get_p50_ms("http");
    server_down();
    fprintf(stderr, "  GET on a fresh connection, p50 of %d: https %.2f ms, http %.2f ms\n",
            FRESH_GETS, https, plain);
}
