/* Limits and schema of the tunnel messages (runner.proto "Tunnel"), shared by both ends.
 * Only what one message can be checked alone is checked here; stream state (ids, credit) is
 * the owner's: guest/proxy.c and hostd/egress/. */
#include "check.h"

#define FAIL(...) check_fail(err, errcap, __VA_ARGS__)

/* Printable ASCII without space: what an HTTP client can put in a request target. */
static bool
check_host_chars(const char *s)
{
    for (; *s; s++)
        if ((unsigned char) *s <= 0x20 || (unsigned char) *s > 0x7e)
            return false;
    return true;
}

int
check_tunnel_open(const Stockade__Runner__TunnelOpen *o, char *err, size_t errcap)
{
    if (!check_known(&o->base) || o->stream_id == 0)
        return FAIL("tunnel_open: unknown fields or stream_id 0");
    if (!check_len(o->host, TUNNEL_HOST_MAX_BYTES, false) || !check_host_chars(o->host))
        return FAIL("tunnel_open.host: 1..%d printable bytes without space", TUNNEL_HOST_MAX_BYTES);
    if (o->port == 0 || o->port > TUNNEL_PORT_MAX)
        return FAIL("tunnel_open.port: 1..%d", TUNNEL_PORT_MAX);
    return 0;
}

int
check_tunnel_open_result(const Stockade__Runner__TunnelOpenResult *r, char *err, size_t errcap)
{
    if (!check_known(&r->base) || r->stream_id == 0)
        return FAIL("tunnel_open_result: unknown fields or stream_id 0");
    if (r->code < STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__CODE__OK ||
        r->code > STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__CODE__TIMEOUT)
        return FAIL("tunnel_open_result.code: unknown");
    if (!check_len(r->message, ERROR_MESSAGE_MAX_BYTES, true) || !check_printable(r->message))
        return FAIL("tunnel_open_result.message: over %d bytes or not printable",
                    ERROR_MESSAGE_MAX_BYTES);
    return 0;
}

int
check_tunnel_data(const Stockade__Runner__TunnelData *d, char *err, size_t errcap)
{
    if (!check_known(&d->base) || d->stream_id == 0)
        return FAIL("tunnel_data: unknown fields or stream_id 0");
    if (d->data.len > TUNNEL_DATA_MAX_BYTES || (d->data.len == 0 && !d->eof))
        return FAIL("tunnel_data: 1..%u bytes, or eof", TUNNEL_DATA_MAX_BYTES);
    return 0;
}

int
check_tunnel_credit(const Stockade__Runner__TunnelCredit *c, char *err, size_t errcap)
{
    if (!check_known(&c->base) || c->stream_id == 0)
        return FAIL("tunnel_credit: unknown fields or stream_id 0");
    if (c->bytes == 0 || c->bytes > TUNNEL_WINDOW_BYTES)
        return FAIL("tunnel_credit.bytes: 1..%u", TUNNEL_WINDOW_BYTES);
    return 0;
}

int
check_tunnel_close(const Stockade__Runner__TunnelClose *c, char *err, size_t errcap)
{
    if (!check_known(&c->base) || c->stream_id == 0)
        return FAIL("tunnel_close: unknown fields or stream_id 0");
    return 0;
}
