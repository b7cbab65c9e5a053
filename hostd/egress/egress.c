/* Egress sessions: decisions on TunnelOpen, the guest's tunnel messages, events, and the end
 * of a session. See egress.h; the upstream side of a stream is egress_stream.c. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "classify.h"
#include "egress_internal.h"
#include "timeutil.h"

#define EGRESS_DETAIL_BYTES 256

int
egress_session_new(Loop *l, EgressResolver *r, const EgressPolicy *allowed, const EgressLimits *lim,
                   const EgressOps *ops, void *userdata, EgressSession **ret, Error **errp)
{
    EgressSession *e = calloc(1, sizeof(*e));
    if (!e)
        return error_set(errp, E_INTERNAL, ENOMEM, "egress session");
    e->loop = l;
    e->resolver = r;
    e->allowed = *allowed;
    e->lim = *lim;
    e->lim.max_streams = MIN(e->lim.max_streams, TUNNEL_STREAMS_MAX);
    e->ops = ops;
    e->ud = userdata;
    *ret = e;
    return 0;
}

/* ------------------------------------------------------------------ sending, events */

int
egress_send(EgressSession *e, HostMsg *m)
{
    if (e->dying || e->ops->send(e->ud, m, NULL) < 0)
        return -1;
    return e->dying ? -1 : 0;
}

int
egress_send_open_result(EgressSession *e, uint32_t id, OpenCode code, const char *message)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__TunnelOpenResult r = STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__INIT;
    char text[ERROR_MESSAGE_MAX_BYTES + 1];

    snprintf(text, sizeof(text), "%s", message); /* printable already: our own words */
    r.stream_id = id;
    r.code = code;
    r.message = text;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_OPEN_RESULT;
    m.tunnel_open_result = &r;
    return egress_send(e, &m);
}

int
egress_send_close(EgressSession *e, uint32_t id, bool reset)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__TunnelClose c = STOCKADE__RUNNER__TUNNEL_CLOSE__INIT;

    c.stream_id = id;
    c.reset = reset;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_CLOSE;
    m.tunnel_close = &c;
    return egress_send(e, &m);
}

void
egress_event(EgressSession *e, const char *type, json_t *attrs)
{
    e->ops->event(e->ud, type, attrs);
}

static json_t *
addr_json(const EgressAddr *a)
{
    char text[EGRESS_ADDR_TEXT_BYTES];
    return json_string(egress_addr_format(a, text, sizeof(text)));
}

/* Every refusal counts; the first max_denied_events are recorded one by one. */
static void
egress_event_denied(EgressSession *e, uint32_t id, const char *host, unsigned port,
                    const char *reason, const char *detail, const EgressAddr *addr)
{
    e->denied_n++;
    if (e->denied_n > e->lim.max_denied_events) {
        if (e->denied_unrecorded++ == 0)
            egress_event(e, "egress.suppressed",
                         json_pack("{s:I}", "after", (json_int_t) e->lim.max_denied_events));
        return;
    }
    json_t *o = json_pack("{s:I,s:s,s:i,s:s,s:s}", "stream", (json_int_t) id, "host", host, "port",
                          (int) port, "reason", reason, "detail", detail);
    if (o && addr)
        json_object_set_new(o, "address", addr_json(addr));
    egress_event(e, "egress.denied", o);
}

/* ------------------------------------------------------------------ streams */

Stream *
stream_find(EgressSession *e, uint32_t id)
{
    for (Stream *st = e->streams; st; st = st->next)
        if (st->id == id)
            return st;
    return NULL;
}

void
stream_free(Stream *st)
{
    EgressSession *e = st->e;
    for (Stream **pp = &e->streams; *pp; pp = &(*pp)->next)
        if (*pp == st) {
            *pp = st->next;
            break;
        }
    e->n_streams--;
    if (st->lookup) {
        egress_lookup_cancel(st->lookup);
        e->n_lookups--;
    }
    loop_cancel_timer(e->loop, st->timer);
    loop_source_free(st->src);
    safe_close(st->fd);
    free(st->up);
    free(st);
}

void
stream_deny(Stream *st, OpenCode code, const char *reason, const char *detail,
            const EgressAddr *addr)
{
    EgressSession *e = st->e;
    egress_event_denied(e, st->id, st->host, st->port, reason, detail, addr);
    uint32_t id = st->id;
    bool quiet = st->quiet;
    stream_free(st);
    if (!quiet)
        (void) egress_send_open_result(e, id, code, detail);
}

void
stream_refuse(Stream *st, const char *reason, const char *detail)
{
    egress_event_denied(st->e, st->id, st->host, st->port, reason, detail, &st->addr);
    stream_end(st, reason, detail);
}

void
stream_end(Stream *st, const char *reason, const char *detail)
{
    EgressSession *e = st->e;
    json_t *o = json_pack("{s:I,s:s,s:i,s:o,s:s,s:I,s:I,s:I}", "stream", (json_int_t) st->id,
                          "host", st->host, "port", (int) st->port, "address", addr_json(&st->addr),
                          "reason", reason, "bytes_in", (json_int_t) st->bytes_in, "bytes_out",
                          (json_int_t) st->bytes_out, "ms",
                          (json_int_t) ((now_usec() - st->start_usec) / 1000));
    if (o && detail)
        json_object_set_new(o, "detail", json_string(detail));
    egress_event(e, "egress.closed", o);
    uint32_t id = st->id;
    bool opened = st->state == STREAM_OPEN, quiet = st->quiet;
    stream_free(st);
    if (quiet || e->dying)
        return;
    if (opened)
        (void) egress_send_close(e, id, strcmp(reason, "done") != 0);
    else
        (void) egress_send_open_result(e, id, OPEN_CODE(UNREACHABLE), detail ? detail : reason);
}

static Stream *
stream_new(EgressSession *e, const Stockade__Runner__TunnelOpen *o)
{
    Stream *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->e = e;
    st->id = o->stream_id;
    st->port = (uint16_t) o->port;
    st->fd = -1;
    st->start_usec = now_usec();
    snprintf(st->host, sizeof(st->host), "%s", o->host);
    st->timer = loop_add_timer(e->loop, st->start_usec + e->lim.connect_timeout_usec,
                               stream_on_timeout, st);
    st->next = e->streams;
    e->streams = st;
    e->n_streams++;
    return st;
}

/* Vetted: record the decision and connect to exactly these addresses. */
static void
stream_allow(Stream *st)
{
    json_t *list = json_array();
    for (size_t i = 0; i < st->n_addrs; i++)
        json_array_append_new(list, addr_json(&st->addrs[i]));
    st->e->allowed_n++;
    st->addr = st->addrs[0];
    egress_event(st->e, "egress.allowed",
                 json_pack("{s:I,s:s,s:i,s:o,s:o}", "stream", (json_int_t) st->id, "host", st->host,
                           "port", (int) st->port, "address", addr_json(&st->addr), "addresses",
                           list));
    stream_connect(st);
}

static void
stream_add_addr(Stream *st, const EgressAddr *a)
{
    for (size_t i = 0; i < st->n_addrs; i++)
        if (egress_addr_equal(&st->addrs[i], a))
            return;
    if (st->n_addrs < EGRESS_ADDRS_MAX)
        st->addrs[st->n_addrs++] = *a;
}

static bool
addr_from_sockaddr(const struct sockaddr *sa, EgressAddr *ret)
{
    *ret = (EgressAddr){.family = sa->sa_family};
    if (sa->sa_family == AF_INET)
        memcpy(ret->bytes, &((const struct sockaddr_in *) sa)->sin_addr, 4);
    else if (sa->sa_family == AF_INET6)
        memcpy(ret->bytes, &((const struct sockaddr_in6 *) sa)->sin6_addr, 16);
    else
        return false;
    egress_addr_unmap(ret);
    return true;
}

/* Every address must pass, or the name is refused: false when it was (st is gone). */
static bool
stream_vet(Stream *st, const struct addrinfo *res)
{
    char why[EGRESS_DETAIL_BYTES];
    EgressAddr a;

    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (!addr_from_sockaddr(ai->ai_addr, &a))
            continue;
        if (!egress_policy_addr_ok(&st->e->allowed, &a, st->port, why, sizeof(why))) {
            stream_deny(st, OPEN_CODE(DENIED), "forbidden_address", why, &a);
            return false;
        }
        stream_add_addr(st, &a);
    }
    return true;
}

static void
stream_on_resolved(void *userdata, int gai_err, struct addrinfo *res)
{
    Stream *st = userdata;
    EgressSession *e = st->e;
    char why[EGRESS_DETAIL_BYTES];

    egress_enter(e);
    st->lookup = NULL;
    e->n_lookups--;
    if (stream_vet(st, res)) {
        if (st->n_addrs > 0) {
            stream_allow(st);
        } else {
            snprintf(why, sizeof(why), "%.128s does not resolve: %s", st->host,
                     gai_err ? gai_strerror(gai_err) : "no address");
            stream_deny(st, OPEN_CODE(UNREACHABLE), "unresolvable", why, NULL);
        }
    }
    if (res)
        freeaddrinfo(res);
    egress_leave(e);
}

/* ------------------------------------------------------------------ decisions */

/* A refusal before any Stream exists. */
static void
egress_deny_open(EgressSession *e, const Stockade__Runner__TunnelOpen *o, OpenCode code,
                 const char *reason, const char *detail, const EgressAddr *addr)
{
    egress_event_denied(e, o->stream_id, o->host, o->port, reason, detail, addr);
    (void) egress_send_open_result(e, o->stream_id, code, detail);
}

/* Per-session limits: the reason to refuse, or NULL. */
static const char *
egress_over_limit(EgressSession *e, char *detail, size_t cap)
{
    if (e->n_streams >= e->lim.max_streams) {
        snprintf(detail, cap, "at most %u streams at once", e->lim.max_streams);
        return "limit_streams";
    }
    if (e->opened >= e->lim.max_streams_total) {
        snprintf(detail, cap, "at most %u streams per session", e->lim.max_streams_total);
        return "limit_streams_total";
    }
    if (e->bytes_spent) {
        snprintf(detail, cap, "the session's egress byte limit is reached");
        return "limit_bytes";
    }
    return NULL;
}

static void
egress_open_numeric(EgressSession *e, const Stockade__Runner__TunnelOpen *o, EgressAddr *a)
{
    char why[EGRESS_DETAIL_BYTES];
    EgressVerdict v;

    if (!egress_policy_holds_addr(&e->allowed, a, (uint16_t) o->port)) {
        egress_classify(a, &v);
        if (!v.allowed) {
            egress_verdict_describe(a, &v, why, sizeof(why));
            egress_deny_open(e, o, OPEN_CODE(DENIED), "forbidden_address", why, a);
        } else {
            egress_deny_open(e, o, OPEN_CODE(DENIED), "not_allowed",
                             "a numeric host and port must lie in a CIDR of the session's egress "
                             "list",
                             a);
        }
        return;
    }
    Stream *st = stream_new(e, o);
    if (!st) {
        egress_deny_open(e, o, OPEN_CODE(UNREACHABLE), "limit_streams", "out of memory", NULL);
        return;
    }
    egress_addr_unmap(a);
    stream_add_addr(st, a);
    stream_allow(st);
}

static void
egress_open_name(EgressSession *e, const Stockade__Runner__TunnelOpen *o, const char *name)
{
    if (!egress_policy_matches_name(&e->allowed, name, (uint16_t) o->port)) {
        egress_deny_open(e, o, OPEN_CODE(DENIED), "not_allowed",
                         "the host and port are not in the session's egress list", NULL);
        return;
    }
    if (e->n_lookups >= EGRESS_LOOKUPS_MAX) {
        egress_deny_open(e, o, OPEN_CODE(LIMIT), "limit_lookups", "too many lookups at once", NULL);
        return;
    }
    Stream *st = stream_new(e, o);
    if (st) {
        snprintf(st->name, sizeof(st->name), "%s", name);
        st->inspecting = true;
    }
    if (st && (st->lookup = egress_resolve(e->resolver, name, stream_on_resolved, st, NULL)))
        e->n_lookups++;
    else if (st)
        stream_deny(st, OPEN_CODE(UNREACHABLE), "unresolvable", "out of memory", NULL);
    else
        egress_deny_open(e, o, OPEN_CODE(UNREACHABLE), "unresolvable", "out of memory", NULL);
}

static int
egress_on_open(EgressSession *e, const Stockade__Runner__TunnelOpen *o, Error **errp)
{
    char detail[EGRESS_DETAIL_BYTES], name[EGRESS_NAME_MAX_BYTES + 1];
    const char *why;
    EgressAddr a;

    if (o->stream_id <= e->last_id)
        return error_set(errp, E_GUEST, 0, "tunnel stream %u is not above %u", o->stream_id,
                         e->last_id);
    e->last_id = o->stream_id;
    if ((why = egress_over_limit(e, detail, sizeof(detail)))) {
        egress_deny_open(e, o, OPEN_CODE(LIMIT), why, detail, NULL);
        return 0;
    }
    e->opened++;
    switch (egress_host_parse(o->host, &a, name, &why)) {
    case HOST_BAD:
        egress_deny_open(e, o, OPEN_CODE(DENIED), "bad_host", why, NULL);
        break;
    case HOST_NUMERIC:
        egress_open_numeric(e, o, &a);
        break;
    case HOST_NAME:
        egress_open_name(e, o, name);
        break;
    }
    return 0;
}

/* ------------------------------------------------------------------ guest messages */

/* The stream a message is about: NULL with *ret_stale for one that is gone (dropped), NULL
 * with an error for one never opened. */
static Stream *
egress_stream_of(EgressSession *e, uint32_t id, bool *ret_stale, Error **errp)
{
    Stream *st = stream_find(e, id);
    *ret_stale = !st && id <= e->last_id;
    if (!st && !*ret_stale)
        error_set(errp, E_GUEST, 0, "tunnel message for stream %u, never opened", id);
    return st;
}

static int
egress_dispatch(EgressSession *e, const GuestMsg *m, Error **errp)
{
    bool stale;
    Stream *st;

    switch (m->body_case) {
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_OPEN:
        return egress_on_open(e, m->tunnel_open, errp);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_DATA:
        if (!(st = egress_stream_of(e, m->tunnel_data->stream_id, &stale, errp)))
            return stale ? 0 : -1;
        return stream_on_guest_data(st, m->tunnel_data, errp);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CREDIT:
        if (!(st = egress_stream_of(e, m->tunnel_credit->stream_id, &stale, errp)))
            return stale ? 0 : -1;
        return stream_on_guest_credit(st, m->tunnel_credit->bytes, errp);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CLOSE:
        if (!(st = egress_stream_of(e, m->tunnel_close->stream_id, &stale, errp)))
            return stale ? 0 : -1;
        st->quiet = true;
        if (st->state == STREAM_RESOLVING)
            stream_deny(st, OPEN_CODE(UNREACHABLE), "guest_reset", "closed by the guest", NULL);
        else
            stream_end(st, "guest_reset", NULL);
        return 0;
    default:
        return error_set(errp, E_INTERNAL, 0, "not a tunnel message");
    }
}

int
egress_session_on_message(EgressSession *e, const GuestMsg *m, Error **errp)
{
    egress_enter(e);
    int r = egress_dispatch(e, m, errp);
    egress_leave(e);
    return r;
}

/* ------------------------------------------------------------------ the end */

void
egress_enter(EgressSession *e)
{
    e->depth++;
}

static void
egress_teardown(EgressSession *e)
{
    e->dying = true; /* nothing is sent from here on: the guest is going away */
    while (e->streams) {
        Stream *st = e->streams;
        st->quiet = true;
        if (st->state == STREAM_RESOLVING)
            stream_deny(st, OPEN_CODE(UNREACHABLE), "session_ended", "the session ended", NULL);
        else
            stream_end(st, "session_ended", NULL);
    }
    egress_event(e, "egress.summary",
                 json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "opened", (json_int_t) e->opened, "allowed",
                           (json_int_t) e->allowed_n, "denied", (json_int_t) e->denied_n,
                           "denied_unrecorded", (json_int_t) e->denied_unrecorded, "bytes_in",
                           (json_int_t) e->bytes_in, "bytes_out", (json_int_t) e->bytes_out));
    loop_cancel_timer(e->loop, e->backlog_timer);
    free(e);
}

void
egress_leave(EgressSession *e)
{
    if (--e->depth == 0 && e->dying)
        egress_teardown(e);
}

void
egress_session_free(EgressSession *e)
{
    if (!e)
        return;
    e->dying = true;
    if (e->depth == 0)
        egress_teardown(e);
}
