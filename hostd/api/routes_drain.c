/* GET, POST (on) and DELETE (off) /v1/admin/drain (issue 30, `stockade drain`). POST makes
 * this host refuse new sessions while its live ones run to their end. With ?timeout_s=N
 * (GET or POST) the answer waits until no session is live, N seconds passed or the daemon
 * stops, so an upgrade can wait for a host to empty with a bound: "timed_out" then says
 * whether sessions were left, and "sessions" lists them (the first DRAIN_LIST_MAX). The wait
 * is a loop timer that looks every DRAIN_POLL_USEC (the live count is the loop's); each
 * waiter holds one connection of an operator, and the API's stop answers those still
 * waiting. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "timeutil.h"

#define DRAIN_WAIT_MAX_S 3600
#define DRAIN_POLL_USEC (250ull * 1000)
#define DRAIN_LIST_MAX 100

struct ApiDrainWait {
    ApiCtx *c;
    TimerId timer;
    uint64_t since_usec, deadline_usec;
    ApiDrainWait *next;
};

/* {"draining","live","pending","sessions":[{"id","state"}]} and, after a wait,
 * "timed_out" (sessions were left) and "waited_ms". */
static json_t *
drain_json(Api *a, const ApiDrainWait *w)
{
    SessionsStats ss;
    SessionsLive live[DRAIN_LIST_MAX];
    sessions_stats(a->d.sessions, &ss);
    size_t n = sessions_live_list(a->d.sessions, live, DRAIN_LIST_MAX);
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:s,s:s}", "id", live[i].id, "state",
                                              session_state_name(live[i].state)));
    json_t *o =
        json_pack("{s:b,s:I,s:I,s:o}", "draining", ss.draining, "live", (json_int_t) ss.live,
                  "pending", (json_int_t) ss.pending, "sessions", list);
    if (o && w) {
        json_object_set_new(o, "timed_out", json_boolean(ss.live > 0));
        json_object_set_new(o, "waited_ms",
                            json_integer((json_int_t) ((now_usec() - w->since_usec) / 1000)));
    }
    return o;
}

static void
drain_wait_unlink(Api *a, ApiDrainWait *w)
{
    for (ApiDrainWait **pp = &a->drain_waits; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            return;
        }
}

/* Answers when no session is live, the deadline passed or the daemon stops; looks again
 * later otherwise. */
static void
drain_wait_check(Loop *l, void *userdata)
{
    ApiDrainWait *w = userdata;
    Api *a = w->c->api;
    SessionsStats ss;
    uint64_t now = now_usec();

    w->timer = 0;
    sessions_stats(a->d.sessions, &ss);
    if (ss.live > 0 && now < w->deadline_usec && !ss.stopping &&
        (w->timer = loop_add_timer(l, MIN(now + DRAIN_POLL_USEC, w->deadline_usec),
                                   drain_wait_check, w)) != 0)
        return;
    drain_wait_unlink(a, w);
    if (ss.stopping) {
        _cleanup_error_ Error *e = NULL;
        error_set(&e, E_UNAVAILABLE, 0,
                  "the daemon is stopping: its live sessions are kept for the next start "
                  "(shutdown = keep) or ended");
        api_reply_error_extra(w->c, e, drain_json(a, w));
    } else {
        api_reply_json(w->c, 200, drain_json(a, w));
    }
    free(w);
}

static void
drain_on_loop(ApiCtx *c)
{
    const char *timeout_s = http_query(c->req, "timeout_s");
    uint64_t wait_s = 0;

    if (timeout_s && (strcmp(c->extra, "off") == 0 ||
                      api_query_number(timeout_s, 10, DRAIN_WAIT_MAX_S, &wait_s) < 0)) {
        api_reply_errorf(c, E_INVALID,
                         "timeout_s (with GET or POST) must be 0..%d seconds to wait for the "
                         "live sessions to end",
                         DRAIN_WAIT_MAX_S);
        return;
    }
    if (strcmp(c->extra, "wait") != 0)
        sessions_set_draining(c->api->d.sessions, strcmp(c->extra, "on") == 0);
    if (!timeout_s) {
        api_reply_json(c, 200, drain_json(c->api, NULL));
        return;
    }
    ApiDrainWait *w = calloc(1, sizeof(*w));
    if (!w) {
        api_reply_errorf(c, E_UNAVAILABLE, "the daemon is overloaded");
        return;
    }
    w->c = c;
    w->since_usec = now_usec();
    w->deadline_usec = w->since_usec + wait_s * USEC_PER_SEC;
    w->next = c->api->drain_waits;
    c->api->drain_waits = w;
    drain_wait_check(c->api->d.loop, w);
}

void
route_admin_drain(ApiCtx *c)
{
    const char *method = http_method(c->req);
    c->extra = strcmp(method, "POST") == 0     ? "on"
               : strcmp(method, "DELETE") == 0 ? "off"
                                               : "wait"; /* GET */
    api_on_loop(c, drain_on_loop);
}

void
api_drain_stop(Api *a)
{
    while (a->drain_waits) {
        ApiDrainWait *w = a->drain_waits;
        a->drain_waits = w->next;
        loop_cancel_timer(a->d.loop, w->timer);
        api_reply_errorf(w->c, E_UNAVAILABLE, "the daemon is stopping");
        free(w);
    }
}
