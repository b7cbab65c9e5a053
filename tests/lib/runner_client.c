/* Test client of the runner protocol: see runner_client.h. */
#include "runner_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CLIENT_STASH_MAX 65536 /* messages kept unread; a test that hits this is broken */
#define CLIENT_ERROR_BYTES 256

struct RunnerClient {
    int fd;
    uint32_t next_req_id;
    char error[CLIENT_ERROR_BYTES];
    GuestMsg **stash;
    size_t n_stash;
    FrameReader reader; /* large: the client is heap-allocated */
};

static int
client_fail(RunnerClient *c, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof(c->error), fmt, ap);
    va_end(ap);
    errno = err;
    return -1;
}

static int64_t
client_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
client_left_ms(int64_t deadline)
{
    int64_t left = deadline - client_now_ms();
    return left < 0 ? 0 : (int) left;
}

RunnerClient *
runner_client_new(int fd)
{
    RunnerClient *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->next_req_id = 1;
    frame_reader_init(&c->reader);
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    return c;
}

static void
client_drop_stash(RunnerClient *c)
{
    for (size_t i = 0; i < c->n_stash; i++)
        msg_free_guest(c->stash[i]);
    free(c->stash);
    c->stash = NULL;
    c->n_stash = 0;
}

void
runner_client_free(RunnerClient *c)
{
    if (!c)
        return;
    client_drop_stash(c);
    close(c->fd);
    free(c);
}

int
runner_client_fd(const RunnerClient *c)
{
    return c->fd;
}

const char *
runner_client_error(const RunnerClient *c)
{
    return c->error;
}

static int
client_stash_push(RunnerClient *c, GuestMsg *m)
{
    if (c->n_stash >= CLIENT_STASH_MAX) {
        msg_free_guest(m);
        return client_fail(c, ENOBUFS, "over %d unread messages", CLIENT_STASH_MAX);
    }
    GuestMsg **s = realloc(c->stash, (c->n_stash + 1) * sizeof(*s));
    if (!s) {
        msg_free_guest(m);
        return client_fail(c, ENOMEM, "out of memory");
    }
    c->stash = s;
    c->stash[c->n_stash++] = m;
    return 0;
}

static GuestMsg *
client_stash_take(RunnerClient *c, size_t i)
{
    GuestMsg *m = c->stash[i];
    memmove(&c->stash[i], &c->stash[i + 1], (c->n_stash - i - 1) * sizeof(*c->stash));
    c->n_stash--;
    return m;
}

/* Decodes every complete frame buffered so far into the stash. */
static int
client_decode_buffered(RunnerClient *c)
{
    const uint8_t *payload;
    size_t len;
    uint64_t nonce;
    char why[160];

    for (;;) {
        switch (frame_reader_next(&c->reader, &payload, &len, &nonce)) {
        case READ_NONE:
            return 0;
        case READ_SYNC:
            return client_fail(c, EPROTO, "unexpected sync marker (nonce %llu)",
                               (unsigned long long) nonce);
        case READ_BAD:
            return client_fail(c, EPROTO, "bad frame from the runner");
        case READ_FRAME: {
            GuestMsg *m = msg_decode_guest(payload, len, why, sizeof(why));
            if (!m)
                return client_fail(c, EPROTO, "runner sent an invalid message: %s", why);
            if (client_stash_push(c, m) < 0)
                return -1;
        }
        }
    }
}

/* Decodes buffered frames, except while runner_client_sync hunts for its marker. */
static int
client_absorb(RunnerClient *c)
{
    return c->reader.state == READER_HUNTING ? 0 : client_decode_buffered(c);
}

/* Reads what is available now into the reader; 1 if something arrived, 0 if nothing. */
static int
client_read_some(RunnerClient *c)
{
    size_t space;
    uint8_t *dst = frame_reader_space(&c->reader, &space);
    ssize_t n = read(c->fd, dst, space);

    if (n > 0) {
        frame_reader_commit(&c->reader, (size_t) n);
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    return client_fail(c, ECONNRESET, n == 0 ? "runner closed the channel" : "read: %s",
                       strerror(errno));
}

/* Waits up to timeout for input and decodes it. */
static int
client_pump(RunnerClient *c, int timeout_ms)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int r = poll(&p, 1, timeout_ms);

    if (r < 0 && errno != EINTR)
        return client_fail(c, errno, "poll: %s", strerror(errno));
    if (r <= 0)
        return 0;
    if (client_read_some(c) < 0)
        return -1;
    return client_absorb(c);
}

int
runner_client_send_raw(RunnerClient *c, const void *data, size_t len, int timeout_ms)
{
    const uint8_t *p = data;
    int64_t deadline = client_now_ms() + timeout_ms;

    while (len > 0) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLOUT | POLLIN};
        if (poll(&pfd, 1, client_left_ms(deadline)) < 0 && errno != EINTR)
            return client_fail(c, errno, "poll: %s", strerror(errno));
        if ((pfd.revents & POLLIN) && (client_read_some(c) < 0 || client_absorb(c) < 0))
            return -1; /* keep reading: the runner may wait for us to drain it */
        if (pfd.revents & POLLOUT) {
            ssize_t n = write(c->fd, p, len);
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                return client_fail(c, errno, "write: %s", strerror(errno));
            if (n > 0)
                p += n, len -= (size_t) n;
        }
        if (len > 0 && client_left_ms(deadline) == 0)
            return client_fail(c, ETIMEDOUT, "send timed out");
    }
    return 0;
}

int
runner_client_send(RunnerClient *c, HostMsg *m, int timeout_ms, uint32_t *ret_req_id)
{
    static uint8_t buf[FRAME_HDR_BYTES + FRAME_MAX_BYTES];
    size_t len;

    if (m->req_id == 0 && msg_host_needs_req_id(m->body_case))
        m->req_id = c->next_req_id++;
    if (msg_encode_host(m, buf, sizeof(buf), &len) < 0)
        return client_fail(c, EMSGSIZE, "message too large to encode");
    if (ret_req_id)
        *ret_req_id = m->req_id;
    return runner_client_send_raw(c, buf, len, timeout_ms);
}

/* Hunts for the echo of our marker, dropping everything before it. */
static int
client_hunt_sync(RunnerClient *c, uint64_t nonce, int64_t deadline)
{
    const uint8_t *payload;
    size_t len;
    uint64_t got;

    for (;;) {
        ReadResult r = frame_reader_next(&c->reader, &payload, &len, &got);
        if (r == READ_SYNC && got == nonce)
            return 0;
        if (r == READ_SYNC) {
            frame_reader_hunt(&c->reader); /* an older echo: keep looking */
            continue;
        }
        if (client_left_ms(deadline) == 0)
            return client_fail(c, ETIMEDOUT, "no sync echo for nonce %llu",
                               (unsigned long long) nonce);
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, client_left_ms(deadline)) > 0 && client_read_some(c) < 0)
            return -1;
    }
}

int
runner_client_sync(RunnerClient *c, uint64_t nonce, int timeout_ms, GuestMsg **ret_ready)
{
    uint8_t marker[FRAME_SYNC_BYTES];
    int64_t deadline = client_now_ms() + timeout_ms;
    GuestMsg *m;

    client_drop_stash(c);
    frame_reader_init(&c->reader);
    frame_reader_hunt(&c->reader);
    frame_put_sync(marker, nonce);
    if (runner_client_send_raw(c, marker, sizeof(marker), timeout_ms) < 0 ||
        client_hunt_sync(c, nonce, deadline) < 0 || client_decode_buffered(c) < 0 ||
        runner_client_next(c, client_left_ms(deadline), &m) < 0)
        return -1;
    if (m->body_case != STOCKADE__RUNNER__GUEST_MSG__BODY_READY || m->ready->nonce != nonce) {
        msg_free_guest(m);
        return client_fail(c, EPROTO, "sync echo not followed by Ready{%llu}",
                           (unsigned long long) nonce);
    }
    *ret_ready = m;
    return 0;
}

/* Waits for the first kept message accepted by match(); others stay kept, in order. */
static int
client_wait_match(RunnerClient *c, bool (*match)(const GuestMsg *, const void *), const void *arg,
                  int timeout_ms, GuestMsg **ret)
{
    int64_t deadline = client_now_ms() + timeout_ms;
    size_t seen = 0;

    for (;;) {
        for (; seen < c->n_stash; seen++)
            if (match(c->stash[seen], arg)) {
                *ret = client_stash_take(c, seen);
                return 0;
            }
        if (client_left_ms(deadline) == 0)
            return client_fail(c, ETIMEDOUT, "timed out waiting for a message");
        if (client_pump(c, client_left_ms(deadline)) < 0)
            return -1;
    }
}

static bool
match_any(const GuestMsg *m, const void *arg)
{
    (void) m;
    (void) arg;
    return true;
}

static bool
match_req_id(const GuestMsg *m, const void *arg)
{
    return m->req_id == *(const uint32_t *) arg;
}

typedef struct BodyMatch {
    int body_case;
    uint32_t exec_id;
} BodyMatch;

static uint32_t
msg_exec_id(const GuestMsg *m)
{
    switch (m->body_case) {
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED:
        return m->exec_started->exec_id;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT:
        return m->output->exec_id;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT:
        return m->exec_exit->exec_id;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_OPEN:
        return m->tunnel_open->stream_id;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_DATA:
        return m->tunnel_data->stream_id;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CREDIT:
        return m->tunnel_credit->stream_id;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CLOSE:
        return m->tunnel_close->stream_id;
    default:
        return 0;
    }
}

static bool
match_body(const GuestMsg *m, const void *arg)
{
    const BodyMatch *b = arg;
    return (int) m->body_case == b->body_case && (b->exec_id == 0 || msg_exec_id(m) == b->exec_id);
}

int
runner_client_next(RunnerClient *c, int timeout_ms, GuestMsg **ret)
{
    return client_wait_match(c, match_any, NULL, timeout_ms, ret);
}

int
runner_client_call(RunnerClient *c, HostMsg *m, int timeout_ms, GuestMsg **ret_reply)
{
    uint32_t req_id;
    int64_t deadline = client_now_ms() + timeout_ms;

    if (runner_client_send(c, m, timeout_ms, &req_id) < 0)
        return -1;
    return client_wait_match(c, match_req_id, &req_id, client_left_ms(deadline), ret_reply);
}

int
runner_client_wait_for(RunnerClient *c, int body_case, uint32_t match_exec_id, int timeout_ms,
                       GuestMsg **ret)
{
    BodyMatch b = {body_case, match_exec_id};
    return client_wait_match(c, match_body, &b, timeout_ms, ret);
}
