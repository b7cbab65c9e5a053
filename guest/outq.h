/* The bounded outbound queue: encoded frames waiting for the port.
 *
 * Every byte the runner sends goes through here, in order. Producers of bulk data (exec
 * output, mirror content, requests read from the port) run only while outq_has_room(); small
 * control frames may still be added above that soft bound, up to OUTQ_HARD_MAX_BYTES, which
 * is never exceeded (push fails with ENOBUFS). Writing is non-blocking; a frame may leave in
 * several writes. No logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "message.h"

typedef struct OutFrame OutFrame;

typedef struct OutQueue {
    OutFrame *head;
    OutFrame *tail;
    size_t bytes; /* queued and not yet written */
    size_t frames;
} OutQueue;

void outq_clear(OutQueue *q);
bool outq_has_room(const OutQueue *q);
bool outq_is_empty(const OutQueue *q);
/* Appends a copy of an encoded frame (or marker). -1: ENOBUFS over the hard bound, ENOMEM. */
int outq_push_bytes(OutQueue *q, const void *data, size_t len);
/* Checks (msg_check_guest) and encodes m, then appends it. A message that fails the check is
 * a runner bug; it is not sent (EPROTO) because the host would drop the guest for it. */
int outq_push_msg(OutQueue *q, const GuestMsg *m);
/* Queues the sync reply (marker + the encoded Ready) in front of every frame that has not
 * started leaving, so it reaches a reconnected host before older output. */
int outq_push_sync_reply(OutQueue *q, uint64_t nonce, const GuestMsg *ready);
/* Writes as much as fd takes now. Returns bytes written, or -1 with errno (never EAGAIN:
 * that returns 0). */
ssize_t outq_write(OutQueue *q, int fd);
