/* Tunnel flow control arithmetic: see flow.h. Every function keeps the receiver's invariant
 * granted + buffered + ungranted == TUNNEL_WINDOW_BYTES and the sender's credit within
 * 0..TUNNEL_WINDOW_BYTES; refused inputs change nothing. */
#include "flow.h"

void
flow_send_init(FlowSend *f)
{
    f->credit = TUNNEL_WINDOW_BYTES;
}

size_t
flow_send_allowance(const FlowSend *f, size_t want)
{
    size_t n = want < f->credit ? want : f->credit;
    return n < TUNNEL_DATA_MAX_BYTES ? n : TUNNEL_DATA_MAX_BYTES;
}

int
flow_send_spend(FlowSend *f, size_t n)
{
    if (n > f->credit)
        return -1;
    f->credit -= (uint32_t) n;
    return 0;
}

int
flow_send_on_credit(FlowSend *f, uint32_t n)
{
    if (n == 0 || n > TUNNEL_WINDOW_BYTES - f->credit)
        return -1;
    f->credit += n;
    return 0;
}

void
flow_recv_init(FlowRecv *f)
{
    *f = (FlowRecv){.granted = TUNNEL_WINDOW_BYTES};
}

int
flow_recv_on_data(FlowRecv *f, size_t n)
{
    if (n > f->granted)
        return -1;
    f->granted -= (uint32_t) n;
    f->buffered += (uint32_t) n;
    return 0;
}

int
flow_recv_consumed(FlowRecv *f, size_t n)
{
    if (n > f->buffered)
        return -1;
    f->buffered -= (uint32_t) n;
    f->ungranted += (uint32_t) n;
    return 0;
}

uint32_t
flow_recv_take_grant(FlowRecv *f)
{
    if (f->ungranted < FLOW_GRANT_MIN_BYTES)
        return 0;
    uint32_t n = f->ungranted;
    f->ungranted = 0;
    f->granted += n;
    return n;
}

void
flow_recv_ungrant(FlowRecv *f, uint32_t n)
{
    if (n > f->granted)
        n = f->granted; /* never below zero: the invariant holds whatever the caller passes */
    f->granted -= n;
    f->ungranted += n;
}
