/* stockaded's wiring: the loop, the worker queue and the modules, and their start and
 * clean stop. main.c owns arguments, configuration and signals; this owns everything else. */
#pragma once

#include "config.h"
#include "error.h"

typedef struct Daemon Daemon;

/* The state directory: made 0711, or an existing one that is the daemon's own on a path no
 * other user can change (hostd/base/owndir.h: refused otherwise, E_CONFLICT); an operator's
 * symlink to it is followed once checked. Its database files are made or set 0600. *ret_fd is
 * the folder, open. */
int daemon_open_state_dir(const char *state_dir, int *ret_fd, Error **errp);
/* Locks the state directory (one daemon per state directory), builds the modules. */
int daemon_new(DaemonConfig *cfg, Daemon **ret, Error **errp);
/* Runs until a stop completes; returns the exit code. */
int daemon_run(Daemon *d);
/* Begins a clean stop (thread-safe; a second call quits at once). */
void daemon_request_stop(Daemon *d);
void daemon_free(Daemon *d);
