/* The daemon's side of the service manager's readiness protocol (base/notify.h): READY=1 once
 * every listener accepts, STATUS= lines with the pools' progress while the first start makes
 * snapshots and templates, WATCHDOG=1 from a loop timer (a loop that stops turning stops
 * feeding it, and the manager restarts the daemon), STOPPING=1 when a stop begins. Without
 * $NOTIFY_SOCKET every call is a no-op. A send that fails is logged once (and once more when
 * sends work again), never fatal. Loop thread only. */
#pragma once

#include "error.h"
#include "loop.h"
#include "pool.h"

typedef struct DaemonNotify DaemonNotify;

/* Reads (and unsets) $NOTIFY_SOCKET and $WATCHDOG_USEC: call before any thread starts. A bad
 * address is logged and readiness is off; this never fails. *ret may be NULL on ENOMEM. */
void daemon_notify_new(DaemonNotify **ret);
/* Every listener is up and the loop turns: READY=1 with the pools' status (read from pool
 * from now on), and the watchdog's timer starts on l. */
void daemon_notify_ready(DaemonNotify *n, Loop *l, Pool *pool);
/* A STATUS= line when the pools' progress changed since the last one. */
void daemon_notify_progress(DaemonNotify *n);
/* A stop began: STOPPING=1; the watchdog keeps being fed while guests are destroyed. */
void daemon_notify_stopping(DaemonNotify *n);
void daemon_notify_free(DaemonNotify *n);
