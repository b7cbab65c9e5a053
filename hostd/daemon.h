/* stockaded's wiring: the loop, the worker queue and the modules, and their start and
 * clean stop. main.c owns arguments, configuration and signals; this owns everything else. */
#pragma once

#include "config.h"
#include "error.h"

typedef struct Daemon Daemon;

/* Locks the state directory (one daemon per state directory), builds the modules. */
int daemon_new(DaemonConfig *cfg, Daemon **ret, Error **errp);
/* Runs until a stop completes; returns the exit code. */
int daemon_run(Daemon *d);
/* Begins a clean stop (thread-safe; a second call quits at once). */
void daemon_request_stop(Daemon *d);
void daemon_free(Daemon *d);
