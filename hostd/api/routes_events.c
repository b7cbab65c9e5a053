/* GET /v1/sessions/{id}/events?after=SEQ&follow=1 : NDJSON, one event a line, seq strictly
 * increasing. Without follow the stream ends after the stored events; with follow it waits
 * (on an EventHub eventfd, no polling) for new ones until the session has ended and every
 * event went out. A follow stream with nothing to say for API_HEARTBEAT_USEC sends
 * {"type":"heartbeat"} (no seq) so proxies and the server's idle timeout keep it open.
 * Events are read from the store in pages and rendered into a bounded buffer that the
 * producer drains across calls: one event line can exceed the layer's chunk size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_internal.h"
#include "render.h"
#include "timeutil.h"

#define EVENTS_PAGE 256

typedef struct {
    Api *api;
    char id[SESSION_ID_BYTES];
    uint64_t after;
    bool follow;
    int sub_fd;    /* EventHub subscription, -1 without follow */
    char *pending; /* rendered, not yet sent */
    size_t pending_len, pending_off;
    bool done; /* the session ended and every event was rendered */
    uint64_t last_send_usec;
} Follower;

static void
follower_free(void *userdata)
{
    Follower *f = userdata;
    eventhub_unsubscribe(f->api->d.hub, f->sub_fd);
    free(f->pending);
    free(f);
}

static void
pending_add(Follower *f, const char *line, size_t len)
{
    char *p = realloc(f->pending, f->pending_len + len + 1);
    if (!p)
        return; /* the line is lost; the seq gap tells the client */
    f->pending = p;
    memcpy(f->pending + f->pending_len, line, len);
    f->pending_len += len;
    f->pending[f->pending_len++] = '\n';
}

/* Reads the next page of events into pending. Returns how many were read, -1 on error. */
static int
follower_fill(Follower *f)
{
    EventRecord *v = NULL;
    size_t n = 0;
    Store *s = store_reader_acquire(f->api->d.readers);
    int r = store_events_read(s, f->id, f->after, EVENTS_PAGE, &v, &n, NULL);
    store_reader_release(f->api->d.readers, s);
    if (r < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        json_t *o = render_event(&v[i]);
        char *line = json_dumps(o, JSON_COMPACT);
        if (line)
            pending_add(f, line, strlen(line));
        free(line);
        json_decref(o);
        f->after = v[i].seq;
    }
    event_records_free(v, n);
    return (int) n;
}

static bool
session_ended(Follower *f)
{
    uint64_t seq;
    bool ended;
    if (eventhub_peek(f->api->d.hub, f->id, &seq, &ended))
        return ended && seq <= f->after;
    SessionRecord r;
    Store *s = store_reader_acquire(f->api->d.readers);
    int rc = store_session_get(s, f->id, &r, NULL);
    store_reader_release(f->api->d.readers, s);
    if (rc < 0)
        return true;
    bool over = r.state == ST_ENDED;
    session_record_clear(&r);
    return over;
}

static ssize_t
follower_drain(Follower *f, uint8_t *buf, size_t cap)
{
    size_t n = MIN(cap, f->pending_len - f->pending_off);
    memcpy(buf, f->pending + f->pending_off, n);
    f->pending_off += n;
    if (f->pending_off == f->pending_len)
        f->pending_off = f->pending_len = 0;
    f->last_send_usec = now_usec();
    return (ssize_t) n;
}

static ssize_t
events_produce(HttpStream *st, void *userdata, uint8_t *buf, size_t cap)
{
    Follower *f = userdata;

    for (;;) {
        if (f->pending_len > f->pending_off)
            return follower_drain(f, buf, cap);
        if (f->done)
            return 0;
        bool ended_before = !f->follow || session_ended(f); /* read first: no lost race */
        int n = follower_fill(f);
        if (n < 0)
            return -1;
        if (n > 0)
            continue;
        if (ended_before) {
            f->done = true;
            continue;
        }
        uint64_t deadline = f->last_send_usec + API_HEARTBEAT_USEC;
        int w = http_stream_wait(st, f->sub_fd, deadline);
        if (w < 0)
            return -1;
        if (w == 0) {
            char line[96], ts[40];
            render_time((int64_t) wall_usec(), ts, sizeof(ts));
            int len = snprintf(line, sizeof(line), "{\"type\":\"heartbeat\",\"ts\":\"%s\"}", ts);
            pending_add(f, line, (size_t) len);
            continue;
        }
        uint64_t drained;
        (void) !read(f->sub_fd, &drained, sizeof(drained));
    }
}

void
route_events(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    const char *id = api_session_id(c, 2);
    const char *after = http_query(c->req, "after"), *follow = http_query(c->req, "follow");
    SessionRecord r;

    if (!id)
        return;
    if (api_load_session(c, id, &r, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    session_record_clear(&r);
    Follower *f = calloc(1, sizeof(*f));
    uint64_t a = 0;
    if (!f || (after && api_query_number(after, 10, INT64_MAX, &a) < 0)) {
        free(f);
        api_reply_errorf(c, E_INVALID, "after must be an event seq number");
        return;
    }
    f->api = c->api;
    snprintf(f->id, sizeof(f->id), "%s", id);
    f->after = a;
    f->follow = follow && (strcmp(follow, "1") == 0 || strcmp(follow, "true") == 0);
    f->sub_fd = -1;
    f->last_send_usec = now_usec();
    if (f->follow && (f->sub_fd = eventhub_subscribe(c->api->d.hub, f->id, &err)) < 0) {
        free(f);
        api_reply_error(c, err);
        return;
    }
    http_respond_stream(c->req, 200, "application/x-ndjson", events_produce, f, follower_free);
    api_ctx_done(c);
}
