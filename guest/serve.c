/* The protocol server loop: see serve.h. One thread; poll() over at most POLL_FDS_MAX fds,
 * rebuilt each turn (a few hundred at most, so rebuilding is cheaper than bookkeeping).
 * This file is a loop edge: it logs what modules return. */
#include "serve.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "fdutil.h"
#include "guest_limits.h"
#include "log.h"
#include "reply.h"
#include "serve_internal.h"
#include "timeutil.h"

enum { PFD_PORT, PFD_SIGNAL, PFD_MIRROR, PFD_FIXED };
#define POLL_FDS_MAX (PFD_FIXED + EXEC_POLL_FDS_MAX + PROXY_POLL_FDS_MAX)
/* Quiet this long before idle work (the next exec's cgroup) runs: it stays off the path of a
 * request that is in flight, and of a burst of output. */
#define SERVE_IDLE_MSEC 20

/* Writes Ready{0} blocking: returns 0 once a host is connected and took it, 1 when the
 * write fails (EPIPE: a socket peer that closed for good; the host will never come back). */
static int
serve_wait_host(Server *s)
{
    GuestMsg m;
    Stockade__Runner__Ready ready;
    uint8_t buf[FRAME_HDR_BYTES + 128];
    size_t len;

    reply_ready_init(&m, &ready, 0);
    if (msg_encode_guest(&m, buf, sizeof(buf), &len) < 0 ||
        fd_set_nonblock(s->cfg->port_fd, false) < 0 || write_all(s->cfg->port_fd, buf, len) < 0 ||
        fd_set_nonblock(s->cfg->port_fd, true) < 0) {
        log_info("port closed for good: %m");
        return 1;
    }
    return 0;
}

static void
serve_sync(Server *s, uint64_t nonce)
{
    GuestMsg m;
    Stockade__Runner__Ready ready;

    log_debug("sync %016llx", (unsigned long long) nonce);
    reply_ready_init(&m, &ready, nonce);
    if (outq_push_sync_reply(&s->q, nonce, &m) < 0)
        log_error("sync reply not queued: %m");
}

/* Handles complete frames already read, while the outbound queue has room. */
static void
serve_process_input(Server *s)
{
    const uint8_t *payload;
    size_t len;
    uint64_t nonce;

    while (outq_has_room(&s->q) && !s->shutdown_requested) {
        switch (frame_reader_next(s->reader, &payload, &len, &nonce)) {
        case READ_NONE:
            return;
        case READ_SYNC:
            serve_sync(s, nonce);
            break;
        case READ_BAD:
            log_debug("bad frame: hunting for a sync marker");
            if (reply_error(&s->q, 0, ERRC(BAD_FRAME), "bad frame length; resyncing") < 0)
                log_error("bad-frame error not queued: %m");
            frame_reader_hunt(s->reader);
            break;
        case READ_FRAME:
            dispatch_frame(s, payload, len);
            break;
        }
    }
}

/* Port readable, or hung up. Returns 1 when the host is gone (EOF). */
static int
serve_read_port(Server *s, short revents)
{
    size_t space;
    uint8_t *dst = frame_reader_space(s->reader, &space);

    if (space == 0)
        return (revents & (POLLHUP | POLLERR)) ? 1 : 0;
    ssize_t n = read(s->cfg->port_fd, dst, space);
    if (n > 0) {
        frame_reader_commit(s->reader, (size_t) n);
        return 0;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return (revents & (POLLHUP | POLLERR)) ? 1 : 0;
    if (n < 0)
        log_debug("port read: %m");
    return 1;
}

/* A frame half-sent by the host that went away would swallow the next host's sync marker:
 * input starts afresh. Queued output stays: it follows the next sync reply. */
static int
serve_host_gone(Server *s)
{
    log_debug("host disconnected; waiting for it (Ready{0})");
    frame_reader_init(s->reader);
    return serve_wait_host(s);
}

/* Returns 1 when the host is gone for good. */
static int
serve_port_events(Server *s, short revents)
{
    if ((revents & POLLOUT) && outq_write(&s->q, s->cfg->port_fd) < 0) {
        log_debug("port write: %m");
        return serve_host_gone(s);
    }
    if ((revents & (POLLIN | POLLHUP | POLLERR)) && serve_read_port(s, revents))
        return serve_host_gone(s);
    return 0;
}

static void
serve_on_signal(Server *s)
{
    struct signalfd_siginfo si;
    _cleanup_error_ Error *err = NULL;

    while (read(s->sig_fd, &si, sizeof(si)) > 0)
        ;
    if (exec_reap(s->execs, &err) < 0)
        log_error("reap: %s", err->message);
}

/* Fixed fds, then the execs' (*ret_n_exec of them), then the proxy's. */
static size_t
serve_build_poll(Server *s, struct pollfd *pfd, size_t *ret_n_exec)
{
    size_t space;
    short port_events = 0;

    (void) frame_reader_space(s->reader, &space);
    if (outq_has_room(&s->q) && space > 0)
        port_events |= POLLIN;
    if (!outq_is_empty(&s->q))
        port_events |= POLLOUT;
    pfd[PFD_PORT] = (struct pollfd){.fd = s->cfg->port_fd, .events = port_events};
    pfd[PFD_SIGNAL] = (struct pollfd){.fd = s->sig_fd, .events = POLLIN};
    pfd[PFD_MIRROR] =
        (struct pollfd){.fd = s->mirror ? mirror_fd(s->mirror) : -1, .events = POLLIN};
    size_t n = PFD_FIXED + exec_poll_add(s->execs, pfd + PFD_FIXED, EXEC_POLL_FDS_MAX);
    *ret_n_exec = n - PFD_FIXED;
    if (s->proxy)
        n += proxy_poll_add(s->proxy, pfd + n, POLL_FDS_MAX - n);
    return n;
}

/* A Finalize's manifest, one frame a turn, once the mirror has sent what it had pending.
 * Returns true when more frames follow. */
static bool
serve_manifest_work(Server *s)
{
    _cleanup_error_ Error *err = NULL;

    if (!s->manifest || (s->mirror && mirror_has_work(s->mirror)) || !outq_has_room(&s->q) ||
        exec_any_draining(s->execs))
        return false;
    if (manifest_walk_send_next(s->manifest, &s->q, s->finalize_req_id, &err) < 0) {
        log_error("finalize: %s", err->message);
        if (reply_from_error(&s->q, s->finalize_req_id, err) < 0)
            log_error("finalize error not queued: %m");
        manifest_walk_free(TAKE_PTR(s->manifest));
        return false;
    }
    if (manifest_walk_done(s->manifest)) {
        manifest_walk_free(TAKE_PTR(s->manifest));
        return false;
    }
    return true;
}

/* Work that needs no fd: deadlines, one mirror record, one manifest frame. Returns the poll
 * timeout. */
static int
serve_idle_work(Server *s)
{
    _cleanup_error_ Error *exec_err = NULL;
    _cleanup_error_ Error *mirror_err = NULL;
    _cleanup_error_ Error *proxy_err = NULL;
    uint64_t now = now_usec();

    if (exec_tick(s->execs, now, &exec_err) < 0)
        log_error("exec: %s", exec_err->message);
    if (s->proxy && proxy_flush(s->proxy, &proxy_err) < 0)
        log_error("egress proxy: %s", proxy_err->message);
    if (s->mirror && mirror_has_work(s->mirror) && outq_has_room(&s->q) &&
        mirror_send_next(s->mirror, &s->q, &mirror_err) < 0)
        log_error("mirror: %s", mirror_err->message);
    if (s->mirror && mirror_has_work(s->mirror) && outq_has_room(&s->q))
        return 0;
    if (serve_manifest_work(s))
        return 0;
    return exec_timeout_msec(s->execs, now);
}

/* One turn of the loop: 0 to go on, 1 when the host is gone for good, -1 on failure. */
static int
serve_turn(Server *s, Error **errp)
{
    struct pollfd pfd[POLL_FDS_MAX];
    _cleanup_error_ Error *mirror_err = NULL;
    _cleanup_error_ Error *exec_err = NULL;
    _cleanup_error_ Error *proxy_err = NULL;
    size_t n_exec;

    serve_process_input(s);
    if (s->shutdown_requested)
        return 0;
    int timeout = serve_idle_work(s);
    bool idle_work = exec_wants_idle(s->execs);
    if (idle_work && (timeout < 0 || timeout > SERVE_IDLE_MSEC))
        timeout = SERVE_IDLE_MSEC;
    size_t n = serve_build_poll(s, pfd, &n_exec);
    int ready = poll(pfd, n, timeout);
    if (ready < 0)
        return errno == EINTR ? 0 : error_set(errp, E_INTERNAL, errno, "poll");
    if (ready == 0 && idle_work)
        exec_prepare_next(s->execs);
    if (pfd[PFD_PORT].revents && serve_port_events(s, pfd[PFD_PORT].revents))
        return 1;
    if (pfd[PFD_SIGNAL].revents)
        serve_on_signal(s);
    if (pfd[PFD_MIRROR].revents && mirror_on_events(s->mirror, &mirror_err) < 0)
        log_error("mirror: %s", mirror_err->message);
    if (exec_poll_handle(s->execs, pfd + PFD_FIXED, n_exec, &exec_err) < 0)
        log_error("exec: %s", exec_err->message);
    size_t at = PFD_FIXED + n_exec;
    if (s->proxy && proxy_poll_handle(s->proxy, pfd + at, n - at, &proxy_err) < 0)
        log_error("egress proxy: %s", proxy_err->message);
    return 0;
}

/* Tries for SHUTDOWN_FLUSH_MSEC to hand the queue (with the Ack) to the host. */
static void
serve_flush(Server *s)
{
    uint64_t deadline = now_usec() + SHUTDOWN_FLUSH_MSEC * USEC_PER_MSEC;

    while (!outq_is_empty(&s->q)) {
        uint64_t now = now_usec();
        struct pollfd p = {.fd = s->cfg->port_fd, .events = POLLOUT};
        if (now >= deadline || poll(&p, 1, (int) ((deadline - now) / USEC_PER_MSEC + 1)) <= 0 ||
            !(p.revents & POLLOUT) || outq_write(&s->q, s->cfg->port_fd) < 0)
            return;
    }
}

static void
serve_shutdown(Server *s)
{
    _cleanup_error_ Error *err = NULL;

    log_info("shutdown requested");
    if (session_shutdown(s, &err) < 0)
        log_error("shutdown: %s", err->message);
    if (reply_ack(&s->q, s->shutdown_req_id) < 0)
        log_error("shutdown ack not queued: %m");
    serve_flush(s);
}

static int
serve_open(Server *s, const ServeConfig *cfg, Error **errp)
{
    sigset_t chld;

    *s = (Server){.cfg = cfg, .sig_fd = -1, .session = {.ws_fd = -1}};
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    s->reader = malloc(sizeof(*s->reader));
    s->file_buf = malloc(FILE_CHUNK_MAX_BYTES);
    if (!s->reader || !s->file_buf)
        return error_set(errp, E_INTERNAL, ENOMEM, "server buffers");
    frame_reader_init(s->reader);
    s->sig_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s->sig_fd < 0)
        return error_set(errp, E_INTERNAL, errno, "signalfd");
    if (fd_set_nonblock(cfg->port_fd, true) < 0)
        return error_set(errp, E_INTERNAL, errno, "port");
    s->execs = exec_table_new(&s->q, cfg->cgroup_root, errp);
    return s->execs ? 0 : -1;
}

static void
serve_close(Server *s)
{
    if (s->execs) {
        exec_kill_all(s->execs);
        (void) session_shutdown(s, NULL); /* waits for the trees; PID 1 also unmounts */
    }
    mirror_free(s->mirror);
    proxy_free(s->proxy);
    manifest_walk_free(s->manifest);
    exec_table_free(s->execs);
    session_clear(&s->session);
    outq_clear(&s->q);
    safe_close(s->sig_fd);
    free(s->reader);
    free(s->file_buf);
}

int
serve_run(const ServeConfig *cfg, ServeEnd *ret_end, Error **errp)
{
    Server s;
    int r = serve_open(&s, cfg, errp);

    if (r == 0)
        r = serve_wait_host(&s);
    while (r == 0 && !s.shutdown_requested)
        r = serve_turn(&s, errp);
    if (s.shutdown_requested) {
        serve_shutdown(&s);
        *ret_end = SERVE_SHUTDOWN;
        r = 0;
    } else if (r == 1) {
        *ret_end = SERVE_HOST_GONE;
        r = 0;
    }
    serve_close(&s);
    return r;
}
