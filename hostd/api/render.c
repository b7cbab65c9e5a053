/* See render.h. */
#include "render.h"

#include "base64.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
render_time(int64_t wall_usec, char *out, size_t cap)
{
    time_t secs = (time_t) (wall_usec / 1000000);
    struct tm tm;
    char stamp[32];
    gmtime_r(&secs, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%03dZ", stamp, (int) ((wall_usec / 1000) % 1000));
}

static void
render_data(json_t *o, const uint8_t *data, size_t len)
{
    json_t *s = json_stringn(data ? (const char *) data : "", len); /* NULL unless valid UTF-8 */
    if (s && !memchr(data, '\0', len)) {
        json_object_set_new(o, "data", s);
        return;
    }
    json_decref(s);
    char *b64 = base64_encode(data, len);
    json_object_set_new(o, "data_b64", json_string(b64 ? b64 : ""));
    free(b64);
}

json_t *
render_event(const EventRecord *e)
{
    char ts[40];
    bool parsable = store_event_attrs_parsable(e);
    json_t *o = parsable ? json_loads(e->attrs, 0, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    if (e->attrs && !parsable) /* nested too deep to parse here: stored before the bound */
        json_object_set_new(o, "attrs_withheld", json_true());
    render_time(e->ts_usec, ts, sizeof(ts));
    json_object_set_new(o, "seq", json_integer((json_int_t) e->seq));
    json_object_set_new(o, "ts", json_string(ts));
    json_object_set_new(o, "type", json_string(e->type));
    if (e->exec_id)
        json_object_set_new(o, "exec_id", json_integer(e->exec_id));
    if (e->data)
        render_data(o, e->data, e->data_len);
    return o;
}

static void
set_time(json_t *o, const char *key, int64_t usec)
{
    char ts[40];
    if (usec <= 0)
        return;
    render_time(usec, ts, sizeof(ts));
    json_object_set_new(o, key, json_string(ts));
}

json_t *
render_session(const SessionRecord *r)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I}", "id", r->id, "kind", r->kind, "pool",
                          r->pool, "state", session_state_name(r->state), "timeout_s",
                          (json_int_t) (r->timeout_usec / 1000000), "output_bytes",
                          (json_int_t) r->output_bytes, "last_seq", (json_int_t) r->last_seq,
                          "events_suppressed", (json_int_t) r->events_suppressed);
    if (r->end_reason != SESSION_END_NONE)
        json_object_set_new(o, "end_reason", json_string(session_end_reason_name(r->end_reason)));
    if (r->guest[0]) /* the libvirt domain while it has one: operators find its QEMU by it */
        json_object_set_new(o, "guest", json_string(r->guest));
    set_time(o, "created_at", r->created_usec);
    set_time(o, "started_at", r->started_usec);
    set_time(o, "stopped_at", r->stopped_usec);
    set_time(o, "ended_at", r->ended_usec);
    if (r->has_exit_code)
        json_object_set_new(o, "exit_code", json_integer(r->exit_code));
    json_object_set_new(o, "artifacts",
                        json_pack("{s:I,s:i,s:b}", "bytes", (json_int_t) r->artifact_bytes,
                                  "files", (int) r->artifact_files, "truncated",
                                  r->artifacts_truncated));
    return o;
}
