/* A session's event stream (NDJSON, GET .../events?after=SEQ&follow=1): line splitting,
 * checking, and following with resume.
 *
 * Each line is untrusted: at most EVENT_LINE_MAX_BYTES, a JSON object with a positive
 * integer `seq` and a short `type` (heartbeats carry no seq and are dropped). Seqs must
 * increase; after a resume the daemon may repeat nothing (it starts after `after`), but a
 * repeated or older seq is dropped anyway. A followed stream that breaks is resumed after
 * the last seq handled, with backoff, until FOLLOW_RETRY_USEC pass without progress. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "error.h"

#define EVENT_LINE_MAX_BYTES (1u << 20)      /* one event (64 KiB of output, JSON-escaped) */
#define EVENT_TYPE_MAX_BYTES 32              /* "session.timeout" and friends */
#define EVENT_DATA_MAX_BYTES (256u << 10)    /* decoded data of one output event */
#define FOLLOW_RETRY_USEC (120ull * 1000000) /* give up after this long without progress */
#define FOLLOW_BACKOFF_MIN_USEC (200ull * 1000)
#define FOLLOW_BACKOFF_MAX_USEC (5ull * 1000000)

/* ------------------------------------------------------------------ pure pieces */

typedef int (*LineFn)(void *userdata, char *line, size_t len, Error **errp);

typedef struct LineSplitter {
    char *buf;
    size_t len, cap, max;
} LineSplitter;

/* max = the longest line accepted (without its '\n'). */
void linesplit_init(LineSplitter *ls, size_t max);
void linesplit_free(LineSplitter *ls);
/* Forgets a partial line (after a dropped connection). */
void linesplit_reset(LineSplitter *ls);
/* Feeds bytes; calls fn once per complete line (NUL-terminated in place, without '\n').
 * A line over max fails (E_GUEST: the daemon's stream is malformed). */
int linesplit_feed(LineSplitter *ls, const uint8_t *data, size_t n, LineFn fn, void *userdata,
                   Error **errp);
/* True when a partial line is pending. */
bool linesplit_pending(const LineSplitter *ls);

/* Parses one line. 1: an event (*ret owned by the caller, *ret_seq > 0); 0: a heartbeat or
 * an empty line (nothing to do); -1: malformed (E_GUEST). */
int event_parse(const char *line, size_t len, json_t **ret, uint64_t *ret_seq, Error **errp);

/* The event's type ("" if absent; event_parse guarantees a string). */
const char *event_type(json_t *ev);

/* The bytes of an exec.stdout/exec.stderr event ("data" text or "data_b64"), malloc'd, at
 * most EVENT_DATA_MAX_BYTES. */
int event_data(json_t *ev, uint8_t **ret, size_t *ret_len, Error **errp);

/* Integer field or def when absent or not an integer. */
int64_t event_int(json_t *ev, const char *key, int64_t def);
/* String field or def; the string belongs to ev. */
const char *event_str(json_t *ev, const char *key, const char *def);

/* ------------------------------------------------------------------ following */

/* Return 1 to stop following (FOLLOW_STOPPED), 0 to go on, -1 with errp to fail. */
typedef int (*FollowEventFn)(void *userdata, json_t *ev, uint64_t seq, Error **errp);
/* Told when a broken stream is resumed (for a notice). */
typedef void (*FollowResumeFn)(void *userdata, uint64_t after, const char *why);

typedef struct Follow {
    Client *client;
    char id[80];    /* the session or task id */
    uint64_t after; /* last seq handled; advanced as events are handled */
    bool follow;    /* stay until the session ended */
    FollowEventFn on_event;
    FollowResumeFn on_resume;
    void *userdata;
    uint64_t retry_usec; /* 0: FOLLOW_RETRY_USEC */
    bool saw_end;        /* a session.state "ended" event went by */
    LineSplitter lines;  /* internal */
    bool stop;           /* internal */
} Follow;

typedef enum FollowEnd {
    FOLLOW_ENDED,       /* the stream ended: the session ended (follow) or no more events */
    FOLLOW_STOPPED,     /* on_event asked to stop */
    FOLLOW_INTERRUPTED, /* the client's interrupt hook fired; call again to go on */
} FollowEnd;

/* Streams events into on_event. Fails at once if the very first connection cannot be made or
 * the daemon answers with an error (e.g. 404); later breaks are resumed. */
int follow_events(Follow *f, FollowEnd *ret, Error **errp);
/* One piece of a stream's body, as follow_events() hands each (pure: no connection): its
 * complete lines are parsed, events at or below f->after dropped, the others handed to
 * on_event in order, f->after and f->saw_end kept. Fails like linesplit_feed() and
 * event_parse() (E_GUEST: a malformed stream), or with on_event's error. */
int follow_feed(Follow *f, const uint8_t *data, size_t len, Error **errp);
void follow_free(Follow *f);
