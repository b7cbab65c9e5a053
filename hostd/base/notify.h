/* The service manager's readiness protocol (sd_notify(3)), written here without libsystemd:
 * one datagram of "KEY=VALUE\n" lines to the unix socket named by $NOTIFY_SOCKET (a path, or
 * an abstract name written with a leading '@'). Nothing here blocks: a full or absent
 * listener drops the datagram and the caller hears of it as an error (log it once; never
 * stop for it: the manager is an observer, not a dependency). */
#pragma once

#include <stdint.h>

#include "error.h"
#include "macro.h"

/* The longest datagram sent; a STATUS= text longer than fits is cut. */
#define NOTIFY_MAX_BYTES 1024

typedef struct Notify Notify;

/* Opens the socket $NOTIFY_SOCKET names, then unsets it (and $WATCHDOG_USEC/$WATCHDOG_PID
 * after reading them) so no child (libguestfs' appliance, a helper) speaks for this daemon.
 * *ret is NULL when the variable is unset. A malformed or over-long address: E_INVALID. */
int notify_open_env(Notify **ret, Error **errp);
/* The watchdog interval the manager asked for ($WATCHDOG_USEC, for this pid when
 * $WATCHDOG_PID is set), read by notify_open_env(); 0 when none. */
uint64_t notify_watchdog_usec(const Notify *n);
/* Sends text (one or more "KEY=VALUE" lines) as one datagram, without blocking; a NULL n is a
 * no-op. Texts over NOTIFY_MAX_BYTES: E_TOO_LARGE; a send that fails: E_UNAVAILABLE. */
int notify_send(Notify *n, const char *text, Error **errp);
/* "STATUS=<text>": bytes outside printable ASCII become '?' (a newline would start another
 * assignment, say READY=1), and the text is cut to fit NOTIFY_MAX_BYTES. */
int notify_status(Notify *n, const char *text, Error **errp);
void notify_free(Notify *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(Notify, notify_free)
