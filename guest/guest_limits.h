/* Every bound the runner puts on itself and on the programs it runs, beyond the wire limits
 * of proto/runner_limits.h. One place, so a reviewer sees at a glance what a hostile program
 * or a slow host can make the runner hold. Changing one here is not a protocol change. */
#pragma once

#include "runner_limits.h"

/* ---- outbound queue (outq.c) */
/* Above this many queued bytes the runner stops reading child pipes, the mirror and the port:
 * back-pressure reaches the children through their full pipes. */
#define OUTQ_SOFT_MAX_BYTES (1024u * 1024u)
/* Never exceeded: after one bulk producer passes the soft bound, only small control frames
 * (exits, errors, sync replies) are added, and a request produces at most one reply frame. */
#define OUTQ_HARD_MAX_BYTES (OUTQ_SOFT_MAX_BYTES + 2u * (FRAME_HDR_BYTES + FRAME_MAX_BYTES))

/* ---- execs (exec.c, spawn.c, tree.c) */
#define EXEC_TABLE_MAX (2 * EXEC_MAX_CONCURRENT) /* running + lingering (see exec.h) */
/* After the leader is reaped, output is read until both pipes reach EOF or this grace runs
 * out; then whatever sits in the pipes at that moment is still delivered, nothing later. */
#define EXEC_DRAIN_GRACE_MSEC 250
#define EXEC_PIDS_MAX 1024         /* pids.max of one exec's cgroup */
#define EXEC_MEMORY_RESERVE_MIB 32 /* memory.max = MemTotal - this (runner + kernel) */
#define EXEC_MEMORY_MIN_MIB 16     /* floor for tiny guests */
#define EXEC_NOFILE_SOFT 1024      /* RLIMIT_NOFILE of a fresh exec */
#define EXEC_NOFILE_HARD 65536
#define EXEC_OOM_SCORE_ADJ 1000                /* children die first ... */
#define RUNNER_OOM_SCORE_ADJ (-1000)           /* ... the runner never */
#define STDIN_PENDING_MAX_BYTES (256u * 1024u) /* per exec, not yet taken by the child */
#define STDIN_PENDING_TOTAL_MAX_BYTES (4u * 1024u * 1024u) /* all execs together */
#define EXEC_ORPHANS_MAX 256 /* fallback mode: adopted orphans tracked per exec */
#define PROC_SCAN_MAX 65536  /* processes read from /proc in one fallback walk */
#define EXEC_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* ---- files (files.c, fsops.c) */
#define LIST_REPLY_MAX_BYTES                                                                       \
    (FRAME_MAX_BYTES - 4096u) /* encoded FsResult; keeps the frame legal                           \
                               */
#define REMOVE_MAX_DEPTH 128  /* directory levels a recursive REMOVE descends */
#define FILE_MODE_DEFAULT 0644
#define DIR_MODE_DEFAULT 0755

/* ---- live mirror (mirror.c) */
#define MIRROR_MAX_WATCHES 4096 /* directories watched; deeper/more are not mirrored */
#define MIRROR_PENDING_MAX 1024 /* distinct paths waiting to be sent */
#define MIRROR_EVENT_BUF_BYTES (64u * 1024u)

/* ---- egress proxy (proxy.c, proxyreq.c): 127.0.0.1:PROXY_PORT inside the guest */
#define PROXY_PORT 3128
#define PROXY_URL_FORMAT "http://127.0.0.1:%u" /* HTTP(S)_PROXY of execs, with PROXY_PORT */
#define PROXY_NO_PROXY "localhost,127.0.0.1,::1"
#define PROXY_HEAD_MAX_BYTES (16u * 1024u) /* request line + headers of one client request */
#define PROXY_HEADERS_MAX 64               /* header lines in that head */
#define PROXY_METHOD_MAX_BYTES 16
#define PROXY_REWRITE_MAX_BYTES (PROXY_HEAD_MAX_BYTES + 512u) /* the origin-form head sent on */
#define PROXY_REPLY_MAX_BYTES 512 /* the proxy's own answers (200 for CONNECT, errors) */
#define PROXY_ACCEPTS_PER_TURN 16 /* connections accepted per loop turn */
#define PROXY_POLL_FDS_MAX (1 + TUNNEL_STREAMS_MAX) /* the listener and every client */

/* ---- shutdown and disconnects (serve.c) */
#define SHUTDOWN_KILL_WAIT_MSEC 2000 /* wait for killed trees to empty before unmounting */
#define SHUTDOWN_FLUSH_MSEC 1000     /* try this long to deliver the Ack */

/* ---- PID 1 boot (init.c, bootcfg.c, port.c) */
#define CMDLINE_MAX_BYTES 4096
#define BOOT_VALUE_MAX_BYTES 128 /* one stockade.* value */
#define MODULES_LIST_MAX_BYTES (64u * 1024u)
#define ROOT_WAIT_MSEC 20000 /* the root block device must appear by then */
#define PORT_WAIT_MSEC 20000 /* the virtio-serial port must appear by then */
#define BOOT_POLL_STEP_MSEC 10
#define PORT_NAME_DEFAULT "org.stockade.runner.0"
/* tmpfs sizes are a share of RAM: they are charged to whoever writes, but outlive the exec. */
#define TMPFS_TMP_OPTIONS "size=25%,mode=1777"
#define TMPFS_SHM_OPTIONS "size=25%,mode=1777"
#define TMPFS_RUN_OPTIONS "size=5%,mode=755"
#define DEVPTS_OPTIONS "mode=0620,ptmxmode=0666"
#define EXEC_PTY_TERM "xterm" /* TERM of an exec with a pty unless the Exec's env sets it */
