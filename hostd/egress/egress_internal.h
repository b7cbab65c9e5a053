/* Internal to hostd/egress: egress.c (sessions, decisions, events, guest messages) and
 * egress_stream.c (the upstream side of a stream: connect, relay, flow control). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "egress.h"
#include "flow.h"
#include "runner_limits.h"

typedef enum { STREAM_RESOLVING, STREAM_CONNECTING, STREAM_OPEN } StreamState;

typedef struct Stream {
    EgressSession *e;
    uint32_t id;
    StreamState state;
    char host[TUNNEL_HOST_MAX_BYTES + 1];
    char name[EGRESS_NAME_MAX_BYTES + 1]; /* a name host, normalised; "" for a numeric one */
    uint16_t port;
    bool inspecting; /* a name's first bytes are held (not written, nothing read) until judged */
    unsigned pieces; /* guest messages while inspecting */
    EgressAddr addrs[EGRESS_ADDRS_MAX]; /* vetted, tried in order */
    size_t n_addrs, next_addr;
    EgressAddr addr; /* being connected to, or connected to */
    int fd;
    LoopSource *src;
    uint32_t events; /* what src watches; 0: not watched at all */
    TimerId timer;   /* the connect deadline */
    EgressLookup *lookup;
    int connect_errno;
    uint8_t *up; /* ring of TUNNEL_WINDOW_BYTES: guest -> upstream */
    size_t up_head, up_len;
    FlowSend send; /* upstream -> guest */
    FlowRecv recv; /* guest -> upstream */
    bool guest_eof, upstream_eof, up_shut;
    bool quiet; /* the guest forgot the stream (or is going away): send it nothing more */
    uint64_t bytes_in, bytes_out, start_usec;
    struct Stream *next;
} Stream;

struct EgressSession {
    Loop *loop;
    EgressResolver *resolver;
    EgressPolicy allowed;
    EgressLimits lim;
    const EgressOps *ops;
    void *ud;
    Stream *streams;
    unsigned n_streams, n_lookups;
    uint32_t last_id;
    uint64_t opened, allowed_n, denied_n, denied_unrecorded, bytes_in, bytes_out;
    bool bytes_spent; /* a byte limit was reached: no new streams */
    TimerId backlog_timer;
    unsigned depth; /* egress frames on the stack: a free meanwhile is deferred */
    bool dying;
    uint8_t buf[TUNNEL_DATA_MAX_BYTES];
};

/* egress.c */
void egress_enter(EgressSession *e);
void egress_leave(EgressSession *e);
/* Sends m; -1 when it failed or the session began to die meanwhile (stop touching it). */
int egress_send(EgressSession *e, HostMsg *m);
int egress_send_open_result(EgressSession *e, uint32_t id, OpenCode code, const char *message);
int egress_send_close(EgressSession *e, uint32_t id, bool reset);
void egress_event(EgressSession *e, const char *type, json_t *attrs);
/* Refuses a stream that has a Stream (after its lookup): OpenResult (unless quiet),
 * egress.denied, freed. */
void stream_deny(Stream *st, OpenCode code, const char *reason, const char *detail,
                 const EgressAddr *addr);
/* Refuses an open stream on what its first bytes say: egress.denied, then stream_end(). */
void stream_refuse(Stream *st, const char *reason, const char *detail);
/* Ends a stream that was allowed: egress.closed; unless quiet, TunnelClose (if it was open;
 * reset unless reason is "done") or OpenResult (if it never opened); freed. */
void stream_end(Stream *st, const char *reason, const char *detail);
void stream_free(Stream *st);
Stream *stream_find(EgressSession *e, uint32_t id);

/* egress_stream.c */
void stream_connect(Stream *st);
void stream_update_events(Stream *st);
void stream_on_timeout(Loop *l, void *userdata);
/* Guest bytes and credit for an open stream. -1 with E_GUEST on a protocol violation. */
int stream_on_guest_data(Stream *st, const Stockade__Runner__TunnelData *d, Error **errp);
int stream_on_guest_credit(Stream *st, uint32_t bytes, Error **errp);
void egress_backlog_retry(Loop *l, void *userdata);
