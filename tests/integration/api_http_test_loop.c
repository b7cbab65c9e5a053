/* Scenario loop: the HTTP layer's run-on-the-loop-then-reply facility (http_loop_post()), with
 * a real Loop run on a thread of the test:
 *   - the handler returns at once: while the loop has not run, no connection thread is inside
 *     a handler (http_server_handlers_running()), and the answer comes when the loop runs;
 *   - a call whose timeout passes before the loop began it is answered by its fail function
 *     (504) and its fn never runs;
 *   - with stop_answers, a call the loop holds is answered 503 at once when the server stops,
 *     well before the layer's grace; the loop's late claim then gets nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_http_test.h"
#include "loop.h"
#include "timeutil.h"

#define LOOP_TIMEOUT_USEC (300 * USEC_PER_MSEC)
#define LOOP_WAIT_USEC (15 * USEC_PER_SEC) /* for a condition that must come; "never" fails */
#define STOP_GRACE_S 2.0                   /* HTTP_STOP_GRACE_USEC */

static Loop *loop;
static atomic_int fn_runs;
static _Atomic(HttpLoopCall *) held; /* /loop/hold: the call the loop keeps */

static void
fn_answer(HttpLoopCall *call, void *ctx)
{
    (void) ctx;
    atomic_fetch_add(&fn_runs, 1);
    HttpRequest *req = http_loop_claim(call);
    if (req)
        http_respond_json(req, 200, json_pack("{s:b}", "ran", 1));
    http_loop_release(call);
}

static void
fn_hold(HttpLoopCall *call, void *ctx)
{
    (void) ctx;
    atomic_fetch_add(&fn_runs, 1);
    atomic_store(&held, call);
}

static void
loop_handler(HttpRequest *r, void *userdata)
{
    const char *path = http_path(r);
    HttpLoopSpec spec = {.loop = loop, .fn = fn_answer};

    (void) userdata;
    atomic_fetch_add(&handled, 1);
    if (strcmp(path, "/loop/timeout") == 0) {
        spec.timeout_usec = LOOP_TIMEOUT_USEC;
        spec.timeout_message = "the loop took too long";
    } else if (strcmp(path, "/loop/hold") == 0) {
        spec.fn = fn_hold;
        spec.stop_answers = true;
    }
    http_loop_post(r, &spec);
}

typedef struct {
    char path[32];
    CurlResult res;
    int rc;
    double took_s;
    pthread_t thread;
} Client;

static void *
client_run(void *userdata)
{
    Client *c = userdata;
    char url[128];
    uint64_t t0 = now_usec();
    snprintf(url, sizeof(url), "%s%s", url_base, c->path);
    c->rc = curl_request("GET", url, NULL, NULL, 0, &c->res);
    c->took_s = (double) (now_usec() - t0) / 1e6;
    return NULL;
}

static void
client_start(Client *c, const char *path)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->path, sizeof(c->path), "%s", path);
    if (pthread_create(&c->thread, NULL, client_run, c) != 0)
        abort();
}

static bool
wait_handled(int n)
{
    uint64_t end = now_usec() + LOOP_WAIT_USEC;
    while (atomic_load(&handled) < n && now_usec() < end)
        usleep(10000);
    return atomic_load(&handled) >= n;
}

static void *
loop_thread(void *userdata)
{
    (void) userdata;
    (void) loop_run(loop);
    return NULL;
}

/* The loop is not running yet: the handlers are out, the timeout answers; then the loop runs
 * (on *ret_thread): the other call is answered, the timed-out one never ran. */
static void
loop_timeout_then_answer(pthread_t *ret_thread)
{
    Client t, a;
    client_start(&t, "/loop/timeout");
    client_start(&a, "/loop/answer");
    EXPECT(wait_handled(2));
    usleep(100000);
    unsigned inside = http_server_handlers_running(srv);
    fprintf(stderr, "  2 requests posted to a loop that does not run: %u handlers inside\n",
            inside);
    EXPECT(inside == 0);
    pthread_join(t.thread, NULL);
    fprintf(stderr, "  timeout: %ld after %.2f s: %s", t.res.status, t.took_s,
            t.res.body ? t.res.body : "\n");
    EXPECT(t.rc == 0 && t.res.status == 504 && t.res.body &&
           strstr(t.res.body, "the loop took too long"));
    EXPECT(t.took_s >= 0.25 && t.took_s < STOP_GRACE_S * 5);
    curl_result_clear(&t.res);

    EXPECT(pthread_create(ret_thread, NULL, loop_thread, NULL) == 0);
    pthread_join(a.thread, NULL);
    fprintf(stderr, "  answer once the loop runs: %ld after %.2f s\n", a.res.status, a.took_s);
    EXPECT(a.rc == 0 && a.res.status == 200 && a.res.body && strstr(a.res.body, "\"ran\":true"));
    curl_result_clear(&a.res);
    EXPECT(atomic_load(&fn_runs) == 1); /* the timed-out call never ran */
}

/* A call the loop holds is answered 503 at once when the server stops; the loop's late claim
 * then gets nothing. */
static void
loop_stop_answers(void)
{
    Client h;
    client_start(&h, "/loop/hold");
    uint64_t end = now_usec() + LOOP_WAIT_USEC;
    while (!atomic_load(&held) && now_usec() < end)
        usleep(10000);
    EXPECT(atomic_load(&held) != NULL);
    uint64_t t0 = now_usec();
    server_down();
    double stop_s = (double) (now_usec() - t0) / 1e6;
    pthread_join(h.thread, NULL);
    fprintf(stderr, "  held call at stop: %ld; stop took %.2f s\n", h.res.status, stop_s);
    EXPECT(h.rc == 0 && h.res.status == 503 && h.res.body &&
           strstr(h.res.body, "the daemon is stopping"));
    EXPECT(stop_s < STOP_GRACE_S);
    curl_result_clear(&h.res);
    HttpLoopCall *call = atomic_exchange(&held, NULL);
    if (call) { /* the loop's late claim: answered already */
        EXPECT(http_loop_claim(call) == NULL);
        http_loop_release(call);
    }
}

void
scenario_loop(void)
{
    HttpConfig c;
    Error *e = NULL;

    if (loop_new(&loop, &e) < 0) {
        fprintf(stderr, "loop_new: %s\n", e->message);
        exit(1);
    }
    fixture_config(&c);
    if (http_server_start(&c, loop_handler, NULL, &srv, &e) < 0) {
        fprintf(stderr, "http_server_start: %s\n", e->message);
        exit(1);
    }
    port = http_server_tcp_port(srv);
    snprintf(url_base, sizeof(url_base), "http://127.0.0.1:%u", port);
    pthread_t lt;
    loop_timeout_then_answer(&lt);
    loop_stop_answers();
    loop_quit(loop, 0);
    pthread_join(lt, NULL);
    loop_free(loop);
}
