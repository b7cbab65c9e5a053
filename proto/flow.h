/* Credit-based flow control of one tunnel stream, shared by both ends (runner.proto "Tunnel").
 * Pure arithmetic: no I/O, no allocation, fuzzable and unit tested.
 *
 * Each end keeps, per stream, a FlowSend for what it sends and a FlowRecv for what it gets.
 * A sender starts with TUNNEL_WINDOW_BYTES of credit and spends it with every data byte; the
 * receiver starts having granted exactly that much. The receiver's three counters always add
 * up to the window:
 *     granted (the peer may still send)  +  buffered (arrived, not consumed)
 *   + ungranted (consumed, not yet returned to the peer)  ==  TUNNEL_WINDOW_BYTES
 * so a receiver never holds more than one window per stream, whatever the peer does: bytes
 * beyond `granted` are refused (flow_recv_on_data fails: the peer broke the protocol). Credit
 * goes back in batches of at least FLOW_GRANT_MIN_BYTES, so a trickle of small writes does not
 * cost one TunnelCredit each; a sender is never stuck, because a stalled sender means
 * granted == 0, i.e. buffered + ungranted == window, and consuming the buffer frees a batch. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "runner_limits.h"

#define FLOW_GRANT_MIN_BYTES (TUNNEL_WINDOW_BYTES / 4)

typedef struct FlowSend {
    uint32_t credit; /* bytes we may still send */
} FlowSend;

typedef struct FlowRecv {
    uint32_t granted;   /* the peer may still send this many */
    uint32_t buffered;  /* arrived, not consumed yet */
    uint32_t ungranted; /* consumed, not yet granted back */
} FlowRecv;

void flow_send_init(FlowSend *f);
/* How much of want may go out in one TunnelData now: min(want, credit, TUNNEL_DATA_MAX_BYTES). */
size_t flow_send_allowance(const FlowSend *f, size_t want);
/* Spends n bytes of credit; -1 (nothing changes) when n is more than the credit. */
int flow_send_spend(FlowSend *f, size_t n);
/* The peer granted n more bytes; -1 (nothing changes) when that would lift the credit above
 * TUNNEL_WINDOW_BYTES or n is 0: the peer broke the protocol. */
int flow_send_on_credit(FlowSend *f, uint32_t n);

void flow_recv_init(FlowRecv *f);
/* n bytes arrived; -1 (nothing changes) when n is more than what was granted. */
int flow_recv_on_data(FlowRecv *f, size_t n);
/* n buffered bytes were consumed (written on); -1 when n is more than what is buffered. */
int flow_recv_consumed(FlowRecv *f, size_t n);
/* Credit to send back now: all that was consumed once it reaches FLOW_GRANT_MIN_BYTES, else 0.
 * The amount counts as granted from here on (send it, or flow_recv_ungrant() it back). */
uint32_t flow_recv_take_grant(FlowRecv *f);
/* Undoes flow_recv_take_grant() when the TunnelCredit could not be queued. */
void flow_recv_ungrant(FlowRecv *f, uint32_t n);
