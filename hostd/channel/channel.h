/* Host end of one guest's virtio-serial channel: a non-blocking unix socket in the loop.
 *
 * The host speaks first (DESIGN.md "Channel"): after connecting it writes a sync marker with a
 * fresh random nonce and discards everything until the guest echoes that marker followed by
 * Ready{nonce}. Only then is the channel ready. From there every byte is checked by
 * proto/message.c; any violation (bad frame, bad message, unsolicited sync, EOF, more than
 * CHANNEL_SYNC_DISCARD_MAX_BYTES of junk before sync, the sync deadline passing) breaks the
 * channel exactly once through ops->broken, after which it sends and delivers nothing: the
 * owner destroys the guest. Loop thread only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "loop.h"
#include "message.h"

#define CHANNEL_OUTQ_MAX_BYTES (4u * 1024u * 1024u)
#define CHANNEL_SYNC_DISCARD_MAX_BYTES (1024u * 1024u)
#define CHANNEL_READ_BUDGET_BYTES (256u * 1024u) /* per wake-up, for fairness between guests */

typedef struct Channel Channel;

typedef struct ChannelOps {
    /* Sync finished: the runner is alive and speaks our protocol version. */
    void (*ready)(Channel *c, const Stockade__Runner__Ready *ready, void *userdata);
    /* One checked message; borrowed for the duration of the call. */
    void (*message)(Channel *c, const GuestMsg *m, void *userdata);
    /* The channel is dead (why->category E_GUEST for protocol violations, E_TIMEOUT, E_IO).
     * Called at most once; the owner may channel_free() from inside it. */
    void (*broken)(Channel *c, const Error *why, void *userdata);
} ChannelOps;

/* Connects to the guest's socket and starts the sync, which must finish by
 * sync_deadline_usec (monotonic). ops and userdata must outlive the channel. */
int channel_open(Loop *l, const char *socket_path, uint64_t sync_deadline_usec,
                 const ChannelOps *ops, void *userdata, Channel **ret, Error **errp);
void channel_free(Channel *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Channel, channel_free)

bool channel_is_ready(const Channel *c);
/* Queues one message (req_id must already be set; see channel_next_req_id()).
 * E_CONFLICT before ready or after broken; E_TOO_LARGE over CHANNEL_OUTQ_MAX_BYTES. */
int channel_send(Channel *c, const HostMsg *m, Error **errp);
uint32_t channel_next_req_id(Channel *c);
/* Back-pressure: stop (false) or resume (true) reading the guest. */
void channel_set_reading(Channel *c, bool on);
size_t channel_outq_bytes(const Channel *c);
/* Total bytes received from the guest after sync (for budgets and metrics). */
uint64_t channel_bytes_in(const Channel *c);
