/* Run on the loop, then reply: the one hand-off both front doors (the v1 API, the E2B faces)
 * use to give a request's work to the daemon's loop thread. The handler posts and returns;
 * the loop (or a completion callback on it) answers. Nothing waits inside a handler.
 *
 * Who answers is decided once, under the call's lock (http_loop_claim()): the loop when its
 * work is done, the connection thread when the call's timeout passes or the server stops
 * (HttpLoopSpec), or the poster when the post itself fails. The others then answer nothing;
 * a call claimed before the loop began it never runs. The call holds a reference on the
 * request, so the loop may read the request (its body, its headers) until it releases the
 * call, even when someone else answered. References on the call: the loop side's (until
 * http_loop_release()) and the connection thread's (until its wait ends: http_loop_detach()). */
#include <stdio.h>
#include <stdlib.h>

#include "http_internal.h"
#include "loop.h"

struct HttpLoopCall {
    pthread_mutex_t lock;
    unsigned refs; /* under lock */
    bool claimed;  /* under lock */
    HttpRequest *req;
    HttpLoopSpec spec;
    uint64_t deadline_usec; /* monotonic; 0: none */
};

static void
call_unref(HttpLoopCall *c)
{
    pthread_mutex_lock(&c->lock);
    unsigned left = --c->refs;
    pthread_mutex_unlock(&c->lock);
    if (left > 0)
        return;
    if (c->spec.free_ctx)
        c->spec.free_ctx(c->spec.ctx);
    http_request_unref(c->req);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

HttpRequest *
http_loop_claim(HttpLoopCall *c)
{
    pthread_mutex_lock(&c->lock);
    bool mine = !c->claimed;
    c->claimed = true;
    pthread_mutex_unlock(&c->lock);
    return mine ? c->req : NULL;
}

void
http_loop_release(HttpLoopCall *c)
{
    call_unref(c);
}

/* Answers with err through the front door's fail function, unless someone claimed first. */
static void
call_fail(HttpLoopCall *c, ErrorCategory cat, const char *message)
{
    HttpRequest *req = http_loop_claim(c);
    if (!req)
        return;
    Error e = {.category = cat};
    snprintf(e.message, sizeof(e.message), "%s", message);
    if (c->spec.fail)
        c->spec.fail(req, &e, c->spec.ctx);
    else
        http_respond_error(req, &e, NULL);
}

static void
call_trampoline(void *userdata)
{
    HttpLoopCall *c = userdata;
    pthread_mutex_lock(&c->lock);
    bool given_up = c->claimed; /* timed out or stopped before it began: it never runs */
    pthread_mutex_unlock(&c->lock);
    if (given_up) {
        call_unref(c);
        return;
    }
    c->spec.fn(c, c->spec.ctx);
}

void
http_loop_post(HttpRequest *r, const HttpLoopSpec *spec)
{
    HttpLoopCall *c = calloc(1, sizeof(*c));
    Error e = {.category = E_UNAVAILABLE};

    snprintf(e.message, sizeof(e.message), "%s", HTTP_LOOP_POST_FAILED);
    /* A call that answers a stop itself is not posted once the stop began: the loop may be
     * gone. Others wait for the layer's stop answer, as any handler's request. */
    if (!c || (spec->stop_answers && atomic_load(&r->srv->stopping))) {
        free(c);
        spec->fail ? spec->fail(r, &e, spec->ctx) : http_respond_error(r, &e, NULL);
        if (spec->free_ctx)
            spec->free_ctx(spec->ctx);
        return;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->refs = 2; /* the loop side's and the connection thread's */
    c->req = r;
    c->spec = *spec;
    c->deadline_usec = spec->timeout_usec ? now_usec() + spec->timeout_usec : 0;
    pthread_mutex_lock(&r->lock);
    r->refs++; /* the call's */
    r->loop_call = c;
    pthread_mutex_unlock(&r->lock);
    if (loop_post(spec->loop, call_trampoline, c) < 0) {
        call_fail(c, E_UNAVAILABLE, HTTP_LOOP_POST_FAILED);
        call_unref(c);
    }
}

uint64_t
http_loop_deadline(const HttpLoopCall *c)
{
    return c->deadline_usec;
}

bool
http_loop_answers_stop(const HttpLoopCall *c)
{
    return c->spec.stop_answers;
}

void
http_loop_expire(HttpLoopCall *c, bool stopping)
{
    if (stopping)
        call_fail(c, E_UNAVAILABLE, "the daemon is stopping");
    else
        call_fail(c, E_TIMEOUT,
                  c->spec.timeout_message ? c->spec.timeout_message : "the loop did not answer");
}

void
http_loop_detach(HttpRequest *r)
{
    pthread_mutex_lock(&r->lock);
    HttpLoopCall *c = r->loop_call;
    r->loop_call = NULL;
    pthread_mutex_unlock(&r->lock);
    if (c)
        call_unref(c);
}
