/* Bounded outbound frame queue: see outq.h. A singly linked list of heap frames; at most
 * OUTQ_HARD_MAX_BYTES are held at any time, so the runner's memory stays bounded whatever
 * the host's reading speed. */
#include "outq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "guest_limits.h"
#include "macro.h"

#define OUTQ_WRITE_IOV_MAX 16

struct OutFrame {
    OutFrame *next;
    size_t len;
    size_t off; /* bytes already written */
    uint8_t data[];
};

void
outq_clear(OutQueue *q)
{
    for (OutFrame *f = q->head, *next; f; f = next) {
        next = f->next;
        free(f);
    }
    *q = (OutQueue){0};
}

bool
outq_has_room(const OutQueue *q)
{
    return q->bytes < OUTQ_SOFT_MAX_BYTES;
}

bool
outq_is_empty(const OutQueue *q)
{
    return q->head == NULL;
}

static OutFrame *
outq_frame_new(const OutQueue *q, size_t len)
{
    if (len == 0 || len > OUTQ_HARD_MAX_BYTES - q->bytes) {
        errno = ENOBUFS;
        return NULL;
    }
    OutFrame *f = malloc(sizeof(*f) + len);
    if (!f)
        return NULL;
    f->next = NULL;
    f->len = len;
    f->off = 0;
    return f;
}

static void
outq_append(OutQueue *q, OutFrame *f)
{
    if (q->tail)
        q->tail->next = f;
    else
        q->head = f;
    q->tail = f;
    q->bytes += f->len;
    q->frames++;
}

int
outq_push_bytes(OutQueue *q, const void *data, size_t len)
{
    OutFrame *f = outq_frame_new(q, len);
    if (!f)
        return -1;
    memcpy(f->data, data, len);
    outq_append(q, f);
    return 0;
}

static OutFrame *
outq_encode(const OutQueue *q, const GuestMsg *m, size_t prefix)
{
    char why[128];

    if (msg_check_guest(m, why, sizeof(why)) < 0) {
        errno = EPROTO;
        return NULL;
    }
    size_t n = protobuf_c_message_get_packed_size(&m->base);
    if (n == 0 || n > FRAME_MAX_BYTES) {
        errno = EMSGSIZE;
        return NULL;
    }
    OutFrame *f = outq_frame_new(q, prefix + FRAME_HDR_BYTES + n);
    if (!f)
        return NULL;
    size_t got;
    if (msg_encode_guest(m, f->data + prefix, f->len - prefix, &got) < 0) {
        free(f);
        return NULL;
    }
    return f;
}

int
outq_push_msg(OutQueue *q, const GuestMsg *m)
{
    OutFrame *f = outq_encode(q, m, 0);
    if (!f)
        return -1;
    outq_append(q, f);
    return 0;
}

int
outq_push_sync_reply(OutQueue *q, uint64_t nonce, const GuestMsg *ready)
{
    OutFrame *f = outq_encode(q, ready, FRAME_SYNC_BYTES);
    if (!f)
        return -1;
    frame_put_sync(f->data, nonce);
    OutFrame **at = &q->head;
    if (*at && (*at)->off > 0)
        at = &(*at)->next; /* a frame that started leaving finishes first */
    f->next = *at;
    *at = f;
    if (!f->next)
        q->tail = f;
    q->bytes += f->len;
    q->frames++;
    return 0;
}

static void
outq_consume(OutQueue *q, size_t n)
{
    q->bytes -= n;
    while (n > 0) {
        OutFrame *f = q->head;
        size_t take = MIN(n, f->len - f->off);
        f->off += take;
        n -= take;
        if (f->off == f->len) {
            q->head = f->next;
            if (!q->head)
                q->tail = NULL;
            q->frames--;
            free(f);
        }
    }
}

ssize_t
outq_write(OutQueue *q, int fd)
{
    size_t total = 0;

    while (q->head) {
        struct iovec iov[OUTQ_WRITE_IOV_MAX];
        int n = 0;
        for (OutFrame *f = q->head; f && n < OUTQ_WRITE_IOV_MAX; f = f->next)
            iov[n++] = (struct iovec){f->data + f->off, f->len - f->off};
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            return -1;
        }
        outq_consume(q, (size_t) w);
        total += (size_t) w;
    }
    return (ssize_t) total;
}
