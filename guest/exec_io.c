/* Pipe I/O of execs: output chunks (with back-pressure and the post-exit drain) and the
 * bounded stdin buffer. See exec.h for the contract. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "exec_internal.h"
#include "reply.h"

void
exec_close_stdin(ExecTable *t, Exec *e)
{
    e->in_fd = safe_close(e->in_fd);
    t->stdin_total -= e->in_len;
    free(e->in_buf);
    e->in_buf = NULL;
    e->in_len = 0;
}

void
exec_close_out(Exec *e, int stream)
{
    e->out_fd[stream] = safe_close(e->out_fd[stream]);
    e->drain_left[stream] = 0;
}

void
exec_start_drain(Exec *e)
{
    e->draining = true;
    for (int s = 0; s < EXEC_OUT_COUNT; s++) {
        int avail = 0;
        if (e->out_fd[s] < 0)
            continue;
        if (ioctl(e->out_fd[s], FIONREAD, &avail) < 0 || avail <= 0)
            exec_close_out(e, s);
        else
            e->drain_left[s] = (size_t) avail;
    }
}

static int
exec_push_output(ExecTable *t, Exec *e, int stream, size_t len)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__Output out = STOCKADE__RUNNER__OUTPUT__INIT;

    out.exec_id = e->id;
    out.stream = stream == EXEC_OUT_STDOUT ? STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT
                                           : STOCKADE__RUNNER__OUTPUT__STREAM__STDERR;
    out.data.data = t->buf;
    out.data.len = len;
    m.body_case = GBODY(OUTPUT);
    m.output = &out;
    return outq_push_msg(t->q, &m);
}

/* One read of at most one chunk; called only while the outbound queue has room. */
int
exec_read_output(ExecTable *t, Exec *e, int stream, Error **errp)
{
    size_t want = OUTPUT_CHUNK_MAX_BYTES;
    if (e->draining)
        want = MIN(want, e->drain_left[stream]);
    ssize_t n = read(e->out_fd[stream], t->buf, want);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (e->draining)
            exec_close_out(e, stream); /* what was there is gone (read by a descendant) */
        return 0;
    }
    if (n <= 0) {
        exec_close_out(e, stream); /* EOF, or an error that ends the stream the same way */
        return 0;
    }
    if (e->draining && (e->drain_left[stream] -= (size_t) n) == 0)
        exec_close_out(e, stream);
    if (exec_push_output(t, e, stream, (size_t) n) < 0)
        return error_set(errp, E_INTERNAL, errno, "exec %u: queue output", e->id);
    return 0;
}

/* Writes what the child takes now; EPIPE closes stdin and is reported (req_id 0). */
int
exec_flush_stdin(ExecTable *t, Exec *e, Error **errp)
{
    while (e->in_len > 0) {
        ssize_t n = write(e->in_fd, e->in_buf, e->in_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n < 0) {
            int err = errno;
            exec_close_stdin(t, e);
            if (reply_error(t->q, 0, ERRC(IO), "exec %u: stdin: %s", e->id, strerror(err)) < 0)
                return error_set(errp, E_INTERNAL, errno, "exec %u: queue error", e->id);
            return 0;
        }
        memmove(e->in_buf, e->in_buf + n, e->in_len - (size_t) n);
        e->in_len -= (size_t) n;
        t->stdin_total -= (size_t) n;
    }
    if (e->in_eof)
        exec_close_stdin(t, e);
    return 0;
}

int
exec_queue_stdin(ExecTable *t, Exec *e, const uint8_t *data, size_t len, Error **errp)
{
    if (e->in_len + len > STDIN_PENDING_MAX_BYTES ||
        t->stdin_total + len > STDIN_PENDING_TOTAL_MAX_BYTES)
        return error_set(errp, E_UNAVAILABLE, 0,
                         "exec %u: stdin buffer full (%zu bytes pending); data dropped", e->id,
                         e->in_len);
    if (len == 0)
        return 0;
    if (!e->in_buf && !(e->in_buf = malloc(STDIN_PENDING_MAX_BYTES)))
        return error_set(errp, E_UNAVAILABLE, ENOMEM, "exec %u: stdin", e->id);
    memcpy(e->in_buf + e->in_len, data, len);
    e->in_len += len;
    t->stdin_total += len;
    return 0;
}
