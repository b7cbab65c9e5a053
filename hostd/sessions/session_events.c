/* Events: every change of a session is an event with the next seq, appended to the store in
 * an open batch; a short timer commits the batch and then tells the hub, so followers only
 * ever see committed events. State changes commit at once. Loop thread only; the store is the
 * loop's own connection. A store failure is logged once per batch and the session goes on:
 * its events are then missing from the record (issue 8 covers a full disk). */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

#define SESSION_COMMIT_DELAY_USEC (5 * 1000) /* events are batched this long at most */

struct SessionsCommit {
    Session *touched; /* sessions with uncommitted events */
    TimerId timer;
};

struct SessionEvents {
    bool touched;
    Session *next_touched;
    uint64_t guest_events; /* recorded by session_guest_event(); rec.events_suppressed after */
};

int
sessions_commit_new(Sessions *m)
{
    return (m->commit = calloc(1, sizeof(*m->commit))) ? 0 : -1;
}

void
sessions_commit_free(Sessions *m)
{
    if (!m->commit)
        return;
    loop_cancel_timer(m->loop, m->commit->timer);
    free(m->commit);
    m->commit = NULL;
}

int
session_events_new(Session *s)
{
    return (s->events = calloc(1, sizeof(*s->events))) ? 0 : -1;
}

/* A session freed with events not yet committed leaves the batch's list (its events stay in
 * the batch). */
void
session_events_free(Session *s)
{
    SessionsCommit *c = s->mgr->commit;
    if (!s->events)
        return;
    for (Session **pp = c ? &c->touched : NULL; s->events->touched && pp && *pp;
         pp = &(*pp)->events->next_touched)
        if (*pp == s) {
            *pp = s->events->next_touched;
            break;
        }
    free(s->events);
    s->events = NULL;
}

static void
sessions_on_commit_timer(Loop *l, void *userdata)
{
    Sessions *m = userdata;
    (void) l;
    m->commit->timer = 0;
    sessions_commit_now(m);
}

void
sessions_commit_now(Sessions *m)
{
    _cleanup_error_ Error *err = NULL;

    loop_cancel_timer(m->loop, m->commit->timer);
    m->commit->timer = 0;
    if (store_commit(m->store, &err) < 0)
        log_error("events could not be committed: %s", err->message);
    while (m->commit->touched) {
        Session *s = m->commit->touched;
        m->commit->touched = s->events->next_touched;
        s->events->touched = false;
        s->events->next_touched = NULL;
        eventhub_publish(m->hub, s->rec.id, s->rec.last_seq, s->state == ST_ENDED);
    }
}

static void
session_touch(Session *s)
{
    Sessions *m = s->mgr;
    if (!s->events->touched) {
        s->events->touched = true;
        s->events->next_touched = m->commit->touched;
        m->commit->touched = s;
    }
    if (!m->commit->timer)
        m->commit->timer = loop_add_timer(m->loop, now_usec() + SESSION_COMMIT_DELAY_USEC,
                                          sessions_on_commit_timer, m);
}

static void
session_store_begin(Session *s)
{
    _cleanup_error_ Error *err = NULL;
    if (store_begin(s->mgr->store, &err) < 0)
        log_error("session %s: %s", s->rec.id, err->message);
}

void
session_event(Session *s, const char *type, uint32_t exec_id, const void *data, size_t len,
              json_t *attrs)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_free_ char *text = attrs ? json_dumps(attrs, JSON_COMPACT) : NULL;
    EventRecord e = {
        .seq = ++s->rec.last_seq,
        .ts_usec = (int64_t) wall_usec(),
        .exec_id = exec_id,
        .data = (uint8_t *) data,
        .data_len = len,
        .attrs = text,
    };

    json_decref(attrs);
    snprintf(e.type, sizeof(e.type), "%s", type);
    session_store_begin(s);
    if (store_event_append(s->mgr->store, s->rec.id, &e, &err) < 0)
        log_error("session %s: event %s lost: %s", s->rec.id, type, err->message);
    session_touch(s);
}

void
session_guest_event(Session *s, const char *type, json_t *attrs)
{
    json_int_t cap = (json_int_t) s->mgr->cfg.max_guest_events;

    if (s->events->guest_events < s->mgr->cfg.max_guest_events) {
        s->events->guest_events++;
        session_event(s, type, 0, NULL, 0, attrs);
        return;
    }
    json_decref(attrs);
    if (s->rec.events_suppressed++ == 0)
        session_event(s, "events.suppressed", 0, NULL, 0, json_pack("{s:I}", "after", cap));
}

void
session_guest_events_summary(Session *s)
{
    if (s->rec.events_suppressed == 0)
        return;
    session_event(s, "events.suppressed", 0, NULL, 0,
                  json_pack("{s:I,s:I}", "after", (json_int_t) s->mgr->cfg.max_guest_events,
                            "suppressed", (json_int_t) s->rec.events_suppressed));
}

void
session_persist(Session *s)
{
    _cleanup_error_ Error *err = NULL;
    s->rec.state = s->state; /* the record's is derived, never set on its own */
    session_store_begin(s);
    if (store_session_update(s->mgr->store, &s->rec, &err) < 0)
        log_error("session %s: record not updated: %s", s->rec.id, err->message);
    session_touch(s);
}
