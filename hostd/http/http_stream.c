/* Streaming responses: an HttpProducer behind an MHD content reader (chunked encoding).
 *
 * The reader runs on the connection's own thread (thread-per-connection mode), where MHD's
 * manual says blocking is how flow control is done; returning 0 there would make MHD call
 * again at once (a busy loop), so a producer's 0 means "finished" instead. A producer with
 * nothing to send blocks in http_stream_wait(), a poll() on its own fd, the client socket
 * (POLLRDHUP: the client went away) and the server's stop eventfd: no timer, no spinning.
 * MHD's idle timeout is suspended while the producer runs (it would otherwise close a quiet
 * stream the moment the producer returns) and restarts, from now, when it returns; a client
 * that stops reading is still cut off by the idle timeout while MHD waits to send. */
#include <limits.h>
#include <poll.h>
#include <stdlib.h>

#include "http_stream.h"

struct HttpStream {
    HttpServer *srv; /* outlives the stream: http_server_stop() joins connection threads */
    struct MHD_Connection *mc;
    int sock_fd; /* MHD's socket for this connection; valid while MHD calls the reader */
    HttpProducer producer;
    void *userdata;
    void (*free_userdata)(void *);
    bool closed;
};

static ssize_t
stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    HttpStream *st = cls;
    ssize_t n;

    (void) pos;
    if (http_stream_closed(st))
        return MHD_CONTENT_READER_END_WITH_ERROR;
    (void) MHD_set_connection_option(st->mc, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    n = st->producer(st, st->userdata, (uint8_t *) buf, max);
    /* Re-enabling from 0 restarts MHD's idle clock now (MHD_set_connection_option()). */
    (void) MHD_set_connection_option(st->mc, MHD_CONNECTION_OPTION_TIMEOUT,
                                     st->srv->cfg.idle_timeout_s);
    if (n > 0 && (size_t) n <= max)
        return n;
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void
stream_free(void *cls)
{
    HttpStream *st = cls;

    if (st->free_userdata)
        st->free_userdata(st->userdata);
    free(st);
}

struct MHD_Response *
http_stream_response(HttpServer *s, struct MHD_Connection *mc, HttpProducer producer,
                     void *userdata, void (*free_userdata)(void *))
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    HttpStream *st = calloc(1, sizeof(*st));
    struct MHD_Response *resp;

    if (!st || !info) {
        free(st);
        if (free_userdata)
            free_userdata(userdata);
        return NULL;
    }
    *st = (HttpStream){.srv = s,
                       .mc = mc,
                       .sock_fd = info->connect_fd,
                       .producer = producer,
                       .userdata = userdata,
                       .free_userdata = free_userdata};
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, HTTP_STREAM_BLOCK_BYTES, stream_read,
                                             st, stream_free);
    if (!resp)
        stream_free(st);
    return resp;
}

static int
poll_timeout_ms(uint64_t deadline_usec)
{
    uint64_t now = now_usec();

    if (deadline_usec == 0)
        return -1;
    if (deadline_usec <= now)
        return 0;
    return (int) MIN((deadline_usec - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (uint64_t) INT_MAX);
}

int
http_stream_wait(HttpStream *st, int fd, uint64_t deadline_usec)
{
    struct pollfd p[3] = {
        {.fd = st->srv->stop_fd, .events = POLLIN},
        {.fd = st->sock_fd, .events = POLLRDHUP},
        {.fd = fd, .events = POLLIN},
    };
    nfds_t n = fd >= 0 ? 3 : 2;

    for (;;) {
        if (st->closed)
            return -1;
        int timeout = poll_timeout_ms(deadline_usec);
        if (timeout == 0 && deadline_usec != 0 && now_usec() >= deadline_usec)
            return 0;
        int r = poll(p, n, timeout);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[0].revents || p[1].revents) {
            st->closed = true;
            return -1;
        }
        if (n == 3 && p[2].revents)
            return 1;
    }
}

bool
http_stream_closed(HttpStream *st)
{
    struct pollfd p = {.fd = st->sock_fd, .events = POLLRDHUP};

    if (!st->closed && (atomic_load(&st->srv->stopping) || poll(&p, 1, 0) != 0))
        st->closed = true;
    return st->closed;
}
