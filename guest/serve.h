/* The protocol server: one non-blocking poll loop over the port, the exec pipes, SIGCHLD
 * (signalfd) and the mirror's inotify fd. Used by PID 1 (init.c hands it the virtio port)
 * and by `stockade-runner --serve-fd` (tests, on a socketpair).
 *
 * Port behaviour: Ready{nonce 0} is written (blocking) on start and again each time the
 * port reports EOF/POLLHUP (host disconnected: that write blocks until a host connects, so a
 * disconnected guest uses no CPU; meanwhile children are neither read nor reaped, and a
 * partly received request is dropped). A sync marker with nonce N is echoed, followed by
 * Ready{N}, ahead of every frame that has not started leaving. A bad frame gets
 * Error{BAD_FRAME} and a hunt for the next marker; a frame that does not decode or check
 * gets Error{BAD_MESSAGE} (with its req_id when readable) and is dropped. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "imagecfg.h"

typedef struct ServeConfig {
    bool pid1;               /* Hello sets clock, entropy, hostname and mounts the workspace */
    int port_fd;             /* borrowed */
    const char *workspace;   /* the real workspace directory (mount point when pid1) */
    const char *cgroup_root; /* writable cgroup v2 directory for exec trees; NULL = fallback */
    uint16_t proxy_port;     /* the egress proxy's port on 127.0.0.1 (PROXY_PORT in a guest) */
    const ImageCfg *image;   /* the image's exec defaults (imagecfg.h); empty for none */
} ServeConfig;

typedef enum {
    SERVE_SHUTDOWN,  /* Shutdown handled (execs killed, workspace synced/unmounted, Ack sent) */
    SERVE_HOST_GONE, /* the port closed for good (a write after EOF failed): execs killed */
} ServeEnd;

/* Runs until Shutdown or until the host is gone for good. SIGCHLD must be blocked in the
 * caller (the loop reads it from a signalfd); SIGPIPE must be ignored. */
int serve_run(const ServeConfig *cfg, ServeEnd *ret_end, Error **errp);
