/* Tells followers on other threads that a session's events were committed.
 *
 * The loop thread publishes (session id, last committed seq, ended) after each commit; an
 * HTTP thread following a session waits here instead of polling the database, then reads
 * the new events from the store. Thread-safe. Bounded: EVENTHUB_MAX_SESSIONS entries; the
 * oldest ended entries are dropped first (a follower of a dropped session reads the store,
 * which already has everything). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define EVENTHUB_MAX_SESSIONS 4096

typedef struct EventHub EventHub;

int eventhub_new(EventHub **ret, Error **errp);
void eventhub_free(EventHub *h);

void eventhub_publish(EventHub *h, const char *session_id, uint64_t seq, bool ended);
/* Waits until the session's committed seq exceeds after_seq, it ended, the hub shuts down,
 * or the monotonic deadline passes. Returns false when the hub does not know the session
 * (ended long ago, or never live here): read the store and stop following. */
bool eventhub_wait(EventHub *h, const char *session_id, uint64_t after_seq,
                   uint64_t deadline_usec, uint64_t *ret_seq, bool *ret_ended);
/* An eventfd that becomes readable whenever the session's events are published (and when the
 * hub shuts down), for waiting with poll() or http_stream_wait(). At most
 * EVENTHUB_MAX_SUBSCRIBERS at once (E_UNAVAILABLE beyond). Read it to re-arm it. */
#define EVENTHUB_MAX_SUBSCRIBERS 1024
int eventhub_subscribe(EventHub *h, const char *session_id, Error **errp);
void eventhub_unsubscribe(EventHub *h, int fd);
/* The session's last published seq and whether it ended; false when unknown. */
bool eventhub_peek(EventHub *h, const char *session_id, uint64_t *ret_seq, bool *ret_ended);

/* Wakes every waiter for good (daemon stopping). */
void eventhub_shutdown(EventHub *h);
bool eventhub_is_shut_down(EventHub *h);
