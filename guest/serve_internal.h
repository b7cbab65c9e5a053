/* Internal to serve.c, dispatch.c and session.c: the server state. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "env.h"
#include "exec.h"
#include "frame.h"
#include "manifest.h"
#include "mirror.h"
#include "outq.h"
#include "proxy.h"
#include "serve.h"

typedef struct Session {
    bool ready;    /* Hello succeeded */
    bool mounted;  /* PID 1: the workspace device is mounted */
    bool home_mounted; /* PID 1: and bind-mounted on WS_HOME_PATH too (session.c) */
    bool prepared; /* Prepare was received (it is allowed once, before Hello) */
    bool prestarted; /* Prestart was received (once, before Prepare and Hello) */
    uid_t uid;
    gid_t gid;
    EnvList env;
    int ws_fd; /* O_PATH workspace root, -1 before Hello */
} Session;

typedef struct Server {
    const ServeConfig *cfg;
    FrameReader *reader;
    OutQueue q;
    ExecTable *execs;
    Mirror *mirror;
    Proxy *proxy; /* the egress proxy, when Hello asked for egress */
    Session session;
    int sig_fd;
    bool shutdown_requested;
    uint32_t shutdown_req_id;
    bool finalizing;       /* Finalize received: only FileGet, Ping and Shutdown from now on */
    uint32_t finalize_req_id;
    ManifestWalk *manifest; /* from Finalize until its last frame is queued */
    uint8_t *file_buf; /* FILE_CHUNK_MAX_BYTES, for FileGet */
} Server;

/* dispatch.c: handles one frame payload; replies go to s->q. Logs at debug level. */
void dispatch_frame(Server *s, const uint8_t *payload, size_t len);

/* session.c */
int session_hello(Server *s, const Stockade__Runner__Hello *h, Error **errp);
/* Prepare: mount the workspace (PID 1) and start the warm-up exec. *ret_started says whether
 * a warm-up exec was started (it then answers with ExecStarted and ExecExit itself). */
int session_prepare(Server *s, const Stockade__Runner__Prepare *p, uint32_t req_id,
                    bool *ret_started, Error **errp);
/* Prestart: park argv as uid/gid (exec_park); it answers Ack or Error itself. */
int session_prestart(Server *s, const Stockade__Runner__Prestart *p, uint32_t req_id,
                     Error **errp);
/* The workspace is mounted read-write and (with sync) its disk takes writes: E_IO if not. */
int session_workspace_check(const char *workspace, bool sync, Error **errp);
/* Kills every exec and waits (bounded) for the trees to empty; then, for PID 1, syncs and
 * unmounts the workspace. Best effort: what fails is logged by the caller via errp. */
int session_shutdown(Server *s, Error **errp);
void session_clear(Session *ss);
/* Finalize: kills every exec (waiting as Shutdown does) and the proxy, syncs the workspace,
 * reads the mirror's last events and starts the manifest walk; the loop sends the mirror's
 * pending records, then the manifest frames (serve.c). */
int session_finalize(Server *s, const Stockade__Runner__Finalize *f, uint32_t req_id,
                     Error **errp);
