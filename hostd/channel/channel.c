/* See channel.h. State machine: SYNCING -> READY -> BROKEN. */
#include "channel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "log.h"
#include "timeutil.h"

typedef enum { CH_SYNCING, CH_AWAIT_READY, CH_READY, CH_BROKEN } ChState;

struct Channel {
    Loop *loop;
    int fd;
    LoopSource *src;
    TimerId sync_timer;
    ChState state;
    uint64_t nonce;
    uint64_t discarded;
    uint64_t bytes_in;
    bool reading;
    bool freed;             /* channel_free() ran inside a callback */
    unsigned dispatch_depth;
    uint32_t next_req_id;
    const ChannelOps *ops;
    void *userdata;
    uint8_t *outq;
    size_t out_len, out_off, out_cap;
    FrameReader reader; /* last: large */
};

static void channel_update_events(Channel *c);

static void channel_break(Channel *c, ErrorCategory cat, const char *fmt, ...) _printf_(3, 4);

static void
channel_break(Channel *c, ErrorCategory cat, const char *fmt, ...)
{
    _cleanup_error_ Error *why = NULL;
    char msg[ERROR_MESSAGE_MAX];
    va_list ap;

    if (c->state == CH_BROKEN)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    c->state = CH_BROKEN;
    loop_cancel_timer(c->loop, c->sync_timer);
    c->sync_timer = 0;
    loop_source_free(c->src);
    c->src = NULL;
    error_set(&why, cat, 0, "%s", msg);
    c->ops->broken(c, why, c->userdata); /* may free c: touch nothing after */
}

static void
on_sync_deadline(Loop *l, void *userdata)
{
    Channel *c = userdata;
    (void) l;
    c->sync_timer = 0;
    channel_break(c, E_TIMEOUT, "no sync reply from the runner before the deadline");
}

static int
outq_reserve(Channel *c, size_t n)
{
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (c->out_len - c->out_off + n > CHANNEL_OUTQ_MAX_BYTES)
        return -1;
    if (c->out_len + n > c->out_cap) {
        if (c->out_off > 0) { /* compact first (never with a NULL queue: out_off is 0 then) */
            memmove(c->outq, c->outq + c->out_off, c->out_len - c->out_off);
            c->out_len -= c->out_off;
            c->out_off = 0;
        }
        size_t cap = MAX(c->out_cap * 2, c->out_len + n);
        uint8_t *q = realloc(c->outq, cap);
        if (!q)
            return -1;
        c->outq = q;
        c->out_cap = cap;
    }
    return 0;
}

static void
channel_flush(Channel *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->outq + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            channel_break(c, E_IO, "write to guest: %s", strerror(errno));
            return;
        }
        c->out_off += (size_t) n;
    }
    channel_update_events(c);
}

static void
channel_update_events(Channel *c)
{
    if (!c->src)
        return;
    uint32_t ev = EPOLLRDHUP;
    if (c->reading || c->state != CH_READY)
        ev |= EPOLLIN;
    if (c->out_off < c->out_len)
        ev |= EPOLLOUT;
    (void) loop_source_set_events(c->src, ev);
}

/* Callbacks may free the channel; dispatch_depth defers the free until they return. */
static bool
channel_enter(Channel *c)
{
    c->dispatch_depth++;
    return true;
}

static void channel_destroy(Channel *c);

/* Returns false when the channel was freed during dispatch (the caller must return). */
static bool
channel_leave(Channel *c)
{
    if (--c->dispatch_depth == 0 && c->freed) {
        channel_destroy(c);
        return false;
    }
    return !c->freed;
}

static void
channel_on_ready_frame(Channel *c, const GuestMsg *m)
{
    if (m->body_case != STOCKADE__RUNNER__GUEST_MSG__BODY_READY || m->ready->nonce != c->nonce) {
        channel_break(c, E_GUEST, "expected Ready with our nonce right after the sync echo");
        return;
    }
    if (m->ready->protocol_version != PROTOCOL_VERSION) {
        channel_break(c, E_GUEST, "runner speaks another protocol version");
        return;
    }
    c->state = CH_READY;
    loop_cancel_timer(c->loop, c->sync_timer);
    c->sync_timer = 0;
    channel_update_events(c);
    c->ops->ready(c, m->ready, c->userdata);
}

static void
channel_on_frame(Channel *c, const uint8_t *payload, size_t len)
{
    char err[256];
    GuestMsg *m = msg_decode_guest(payload, len, err, sizeof(err));

    if (!m) {
        channel_break(c, E_GUEST, "bad message from guest: %s", err);
        return;
    }
    if (c->state == CH_AWAIT_READY)
        channel_on_ready_frame(c, m);
    else if (m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_READY)
        channel_break(c, E_GUEST, "unsolicited Ready while connected");
    else
        c->ops->message(c, m, c->userdata);
    msg_free_guest(m);
}

static void
channel_on_sync(Channel *c, uint64_t nonce)
{
    if (c->state != CH_SYNCING) {
        channel_break(c, E_GUEST, "unsolicited sync marker from guest");
        return;
    }
    if (nonce == c->nonce)
        c->state = CH_AWAIT_READY;
    else
        c->reader.state = READER_HUNTING; /* a stale echo from an earlier connection */
}

/* Processes buffered frames; stops when the channel breaks or is freed. */
static void
channel_drain(Channel *c)
{
    const uint8_t *payload;
    size_t len;
    uint64_t nonce;

    while (c->state != CH_BROKEN && !c->freed) {
        switch (frame_reader_next(&c->reader, &payload, &len, &nonce)) {
        case READ_NONE:
            return;
        case READ_SYNC:
            channel_on_sync(c, nonce);
            break;
        case READ_FRAME:
            channel_on_frame(c, payload, len);
            break;
        case READ_BAD:
            channel_break(c, E_GUEST, "broken framing from guest");
            return;
        }
    }
}

static void
channel_read(Channel *c)
{
    size_t budget = CHANNEL_READ_BUDGET_BYTES;

    while (budget > 0 && c->state != CH_BROKEN && !c->freed) {
        if (c->state == CH_READY && !c->reading)
            return;
        size_t space;
        uint8_t *dst = frame_reader_space(&c->reader, &space);
        ssize_t n = recv(c->fd, dst, MIN(space, budget), 0);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR)
                channel_break(c, E_IO, "read from guest: %s", strerror(errno));
            return;
        }
        if (n == 0) {
            channel_break(c, E_GUEST, "guest closed the channel (QEMU gone?)");
            return;
        }
        frame_reader_commit(&c->reader, (size_t) n);
        budget -= (size_t) n;
        if (c->state == CH_READY) {
            c->bytes_in += (uint64_t) n;
        } else if ((c->discarded += (uint64_t) n) > CHANNEL_SYNC_DISCARD_MAX_BYTES) {
            channel_break(c, E_GUEST, "too many bytes before the sync reply");
            return;
        }
        channel_drain(c);
    }
}

static void
channel_on_io(LoopSource *s, int fd, uint32_t events, void *userdata)
{
    Channel *c = userdata;
    (void) s;
    (void) fd;

    channel_enter(c);
    if (events & EPOLLOUT)
        channel_flush(c);
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) && c->state != CH_BROKEN &&
        !c->freed)
        channel_read(c);
    channel_leave(c);
}

static int
channel_connect(const char *path, Error **errp)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};

    if (strlen(path) >= sizeof(sa.sun_path))
        return error_set(errp, E_INTERNAL, ENAMETOOLONG, "channel socket path");
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return error_set(errp, E_INTERNAL, errno, "socket");
    if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
        int e = errno;
        safe_close(fd);
        return error_set(errp, E_GUEST, e, "connect to guest channel %s", path);
    }
    return fd;
}

int
channel_open(Loop *l, const char *socket_path, uint64_t sync_deadline_usec,
             const ChannelOps *ops, void *userdata, Channel **ret, Error **errp)
{
    _cleanup_(channel_freep) Channel *c = calloc(1, sizeof(*c));
    uint8_t marker[FRAME_SYNC_BYTES];

    if (!c)
        return error_set(errp, E_INTERNAL, ENOMEM, "channel");
    c->loop = l;
    c->fd = -1;
    c->ops = ops;
    c->userdata = userdata;
    c->reading = true;
    frame_reader_init(&c->reader);
    c->reader.state = READER_HUNTING; /* everything before our echo is stale */
    while (c->nonce == 0)
        if (getrandom(&c->nonce, sizeof(c->nonce), 0) != sizeof(c->nonce))
            return error_set(errp, E_INTERNAL, errno, "getrandom");
    c->fd = channel_connect(socket_path, errp);
    if (c->fd < 0)
        return -1;
    if (loop_watch_fd(l, c->fd, EPOLLIN | EPOLLRDHUP, channel_on_io, c, &c->src, errp) < 0)
        return -1;
    frame_put_sync(marker, c->nonce);
    if (outq_reserve(c, sizeof(marker)) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "channel queue");
    memcpy(c->outq + c->out_len, marker, sizeof(marker));
    c->out_len += sizeof(marker);
    c->sync_timer = loop_add_timer(l, sync_deadline_usec, on_sync_deadline, c);
    channel_update_events(c);
    *ret = TAKE_PTR(c);
    return 0;
}

static void
channel_destroy(Channel *c)
{
    loop_cancel_timer(c->loop, c->sync_timer);
    loop_source_free(c->src);
    safe_close(c->fd);
    free(c->outq);
    free(c);
}

void
channel_free(Channel *c)
{
    if (!c)
        return;
    if (c->dispatch_depth > 0) {
        c->freed = true; /* channel_leave() finishes the job */
        c->state = CH_BROKEN;
        return;
    }
    channel_destroy(c);
}

bool
channel_is_ready(const Channel *c)
{
    return c->state == CH_READY;
}

int
channel_send(Channel *c, const HostMsg *m, Error **errp)
{
    if (c->state != CH_READY)
        return error_set(errp, E_CONFLICT, 0, "guest channel is not ready");
    size_t need = protobuf_c_message_get_packed_size(&m->base) + FRAME_HDR_BYTES;
    if (outq_reserve(c, need) < 0)
        return error_set(errp, E_TOO_LARGE, 0, "guest channel queue is full (%zu bytes)",
                         c->out_len - c->out_off);
    size_t n;
    if (msg_encode_host(m, c->outq + c->out_len, c->out_cap - c->out_len, &n) < 0)
        return error_set(errp, E_TOO_LARGE, errno, "encode message for guest");
    c->out_len += n;
    channel_enter(c);
    channel_flush(c);
    channel_leave(c);
    return 0;
}

uint32_t
channel_next_req_id(Channel *c)
{
    if (++c->next_req_id == 0)
        c->next_req_id = 1;
    return c->next_req_id;
}

void
channel_set_reading(Channel *c, bool on)
{
    if (c->reading == on)
        return;
    c->reading = on;
    channel_update_events(c);
}

size_t
channel_outq_bytes(const Channel *c)
{
    return c->out_len - c->out_off;
}

uint64_t
channel_bytes_in(const Channel *c)
{
    return c->bytes_in;
}
