/* See events.h. */
#include "events.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "timeutil.h"

/* ------------------------------------------------------------------ lines */

void
linesplit_init(LineSplitter *ls, size_t max)
{
    *ls = (LineSplitter){.max = max};
}

void
linesplit_free(LineSplitter *ls)
{
    free(ls->buf);
    *ls = (LineSplitter){.max = ls->max};
}

void
linesplit_reset(LineSplitter *ls)
{
    ls->len = 0;
}

bool
linesplit_pending(const LineSplitter *ls)
{
    return ls->len > 0;
}

/* Appends n bytes and always leaves room for a NUL (so buf exists after any call). */
static int
linesplit_append(LineSplitter *ls, const uint8_t *p, size_t n, Error **errp)
{
    if (n > ls->max - ls->len)
        return error_set(errp, E_GUEST, 0,
                         "the daemon sent an event line over %zu bytes: malformed stream", ls->max);
    if (ls->len + n + 1 > ls->cap) {
        size_t cap = MIN(MAX(ls->cap * 2, ls->len + n + 1), ls->max + 1);
        char *b = realloc(ls->buf, cap);
        if (!b)
            return error_set(errp, E_INTERNAL, ENOMEM, "event line");
        ls->buf = b;
        ls->cap = cap;
    }
    if (n > 0)
        memcpy(ls->buf + ls->len, p, n);
    ls->len += n;
    return 0;
}

int
linesplit_feed(LineSplitter *ls, const uint8_t *data, size_t n, LineFn fn, void *userdata,
               Error **errp)
{
    while (n > 0) {
        const uint8_t *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t) (nl - data) : n;
        if (linesplit_append(ls, data, take, errp) < 0)
            return -1;
        if (!nl)
            return 0;
        ls->buf[ls->len] = '\0';
        size_t len = ls->len;
        ls->len = 0;
        if (fn(userdata, ls->buf, len, errp) < 0)
            return -1;
        data += take + 1;
        n -= take + 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ events */

static bool
type_ok(json_t *t)
{
    size_t n = json_string_length(t);
    const char *s = json_string_value(t);
    return n > 0 && n <= EVENT_TYPE_MAX_BYTES && strspn(s, "abcdefghijklmnopqrstuvwxyz._") == n;
}

int
event_parse(const char *line, size_t len, json_t **ret, uint64_t *ret_seq, Error **errp)
{
    json_error_t jerr;

    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--;
    if (len == 0)
        return 0;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(o)) {
        json_decref(o);
        return error_set(errp, E_GUEST, 0, "the daemon sent a malformed event (%.80s)",
                         o ? "not an object" : jerr.text);
    }
    json_t *seq = json_object_get(o, "seq"), *type = json_object_get(o, "type");
    if (!seq && json_is_string(type) && strcmp(json_string_value(type), "heartbeat") == 0) {
        json_decref(o);
        return 0;
    }
    if (!json_is_integer(seq) || json_integer_value(seq) < 1 || !json_is_string(type) ||
        !type_ok(type)) {
        json_decref(o);
        return error_set(errp, E_GUEST, 0,
                         "the daemon sent an event without a positive seq and a type");
    }
    *ret_seq = (uint64_t) json_integer_value(seq);
    *ret = o;
    return 1;
}

const char *
event_type(json_t *ev)
{
    return event_str(ev, "type", "");
}

int64_t
event_int(json_t *ev, const char *key, int64_t def)
{
    json_t *v = json_object_get(ev, key);
    return json_is_integer(v) ? (int64_t) json_integer_value(v) : def;
}

const char *
event_str(json_t *ev, const char *key, const char *def)
{
    json_t *v = json_object_get(ev, key);
    return json_is_string(v) ? json_string_value(v) : def;
}

int
event_data(json_t *ev, uint8_t **ret, size_t *ret_len, Error **errp)
{
    json_t *text = json_object_get(ev, "data"), *b64 = json_object_get(ev, "data_b64");

    if (json_is_string(text)) {
        size_t n = json_string_length(text);
        if (n > EVENT_DATA_MAX_BYTES)
            return error_set(errp, E_GUEST, 0, "an output event over %u bytes",
                             EVENT_DATA_MAX_BYTES);
        uint8_t *p = malloc(n + 1);
        if (!p)
            return error_set(errp, E_INTERNAL, ENOMEM, "event data");
        memcpy(p, json_string_value(text), n);
        p[n] = '\0';
        *ret = p;
        *ret_len = n;
        return 0;
    }
    if (json_is_string(b64) && json_string_length(b64) <= EVENT_DATA_MAX_BYTES / 3 * 4 + 4 &&
        base64_decode(json_string_value(b64), json_string_length(b64), ret, ret_len) == 0)
        return 0;
    return error_set(errp, E_GUEST, 0, "an output event without valid data");
}

/* ------------------------------------------------------------------ following */

static int
follow_line(void *userdata, char *line, size_t len, Error **errp)
{
    Follow *f = userdata;
    json_t *ev = NULL;
    uint64_t seq = 0;

    if (f->stop)
        return 0;
    int r = event_parse(line, len, &ev, &seq, errp);
    if (r <= 0)
        return r;
    if (seq <= f->after) { /* already handled (a resume overlapped) */
        json_decref(ev);
        return 0;
    }
    if (strcmp(event_type(ev), "session.state") == 0 &&
        strcmp(event_str(ev, "state", ""), "ended") == 0)
        f->saw_end = true;
    r = f->on_event(f->userdata, ev, seq, errp);
    json_decref(ev);
    if (r < 0)
        return -1;
    f->after = seq;
    if (r > 0)
        f->stop = true;
    return 0;
}

int
follow_feed(Follow *f, const uint8_t *data, size_t len, Error **errp)
{
    if (!f->lines.max)
        linesplit_init(&f->lines, EVENT_LINE_MAX_BYTES);
    return linesplit_feed(&f->lines, data, len, follow_line, f, errp);
}

static int
follow_sink(void *userdata, const uint8_t *data, size_t len, Error **errp)
{
    Follow *f = userdata;
    if (follow_feed(f, data, len, errp) < 0)
        return -1;
    if (f->stop) /* end the transfer; follow_events sees f->stop and drops this error */
        return error_set(errp, E_INTERNAL, 0, "stopped by the consumer");
    return 0;
}

/* After a stream ended cleanly while following: has the session really ended? */
static int
follow_session_over(Follow *f, bool *ret_over, Error **errp)
{
    char path[128];
    json_t *s = NULL;
    snprintf(path, sizeof(path), "/v1/sessions/%s", f->id);
    if (client_json(f->client, "GET", path, NULL, &s, errp) < 0)
        return -1;
    json_t *last = json_object_get(s, "last_seq");
    bool ended = strcmp(event_str(s, "state", ""), "ended") == 0;
    *ret_over =
        ended && (!json_is_integer(last) || (uint64_t) json_integer_value(last) <= f->after);
    json_decref(s);
    return 0;
}

/* A stream ended cleanly: is there nothing more to follow? */
static bool
follow_done(Follow *f)
{
    bool over = false;
    if (linesplit_pending(&f->lines)) /* it ended inside a line: not cleanly after all */
        return false;
    return !f->follow || f->saw_end || (follow_session_over(f, &over, NULL) == 0 && over);
}

static void
sleep_usec(uint64_t usec)
{
    struct timespec ts = {.tv_sec = (time_t) (usec / USEC_PER_SEC),
                          .tv_nsec = (long) (usec % USEC_PER_SEC) * 1000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        return; /* a signal: let the caller look at it */
}

/* One connection: streams until it ends. */
static int
follow_once(Follow *f, ClientStreamResult *res, Error **errp)
{
    char path[192];
    snprintf(path, sizeof(path), "/v1/sessions/%s/events?after=%" PRIu64 "%s", f->id, f->after,
             f->follow ? "&follow=1" : "");
    linesplit_reset(&f->lines);
    if (!f->lines.max)
        linesplit_init(&f->lines, EVENT_LINE_MAX_BYTES);
    return client_stream(f->client, path, follow_sink, f, res, errp);
}

int
follow_events(Follow *f, FollowEnd *ret, Error **errp)
{
    uint64_t budget = f->retry_usec ? f->retry_usec : FOLLOW_RETRY_USEC;
    uint64_t backoff = FOLLOW_BACKOFF_MIN_USEC, last_progress = now_usec();
    bool first = true;

    for (;;) {
        ClientStreamResult res;
        uint64_t before = f->after;
        _cleanup_error_ Error *err = NULL;
        int r = follow_once(f, &res, &err);
        if (f->stop) {
            *ret = FOLLOW_STOPPED;
            return 0;
        }
        if (r < 0 && !(err->category == E_UNAVAILABLE && !first)) {
            *errp = TAKE_PTR(err);
            return -1;
        }
        if (r == 0 && res.end == CLIENT_STREAM_INTERRUPTED) {
            *ret = FOLLOW_INTERRUPTED;
            return 0;
        }
        if (r == 0 && res.end == CLIENT_STREAM_DROPPED && first && !res.answered)
            return error_set(errp, E_UNAVAILABLE, 0, "%s", res.why);
        first = false;
        if (r == 0 && res.end == CLIENT_STREAM_DONE && follow_done(f)) {
            *ret = FOLLOW_ENDED;
            return 0;
        }
        if (f->after != before) {
            last_progress = now_usec();
            backoff = FOLLOW_BACKOFF_MIN_USEC;
        }
        if (now_usec() - last_progress > budget)
            return error_set(errp, E_UNAVAILABLE, 0,
                             "lost the event stream of %s and could not resume it for %llu s "
                             "(%s); resume later with: stockade logs -f --after %llu %s",
                             f->id, (unsigned long long) (budget / USEC_PER_SEC),
                             r < 0 ? err->message : res.why, (unsigned long long) f->after, f->id);
        if (f->on_resume)
            f->on_resume(f->userdata, f->after, r < 0 ? err->message : res.why);
        sleep_usec(backoff);
        backoff = MIN(backoff * 2, FOLLOW_BACKOFF_MAX_USEC);
    }
}

void
follow_free(Follow *f)
{
    linesplit_free(&f->lines);
}
