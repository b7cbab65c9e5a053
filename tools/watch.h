/* Watching one task or one exec through its events: the program's stdout/stderr go to the
 * terminal's as they arrive, and the outcome (exit code, signal, end reason, artifacts) is
 * collected for the summary and the exit code. Used by run, exec and logs --output.
 *
 * Output data is the program's own and is written raw (like ssh does); everything else the
 * event carries is kept bounded (WATCH_TEXT_MAX_BYTES) and escaped before it is shown. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

#define WATCH_TEXT_MAX_BYTES 256 /* escaped failure / guest-error messages kept */
/* exec.failed "code": the runner's Error.Code (proto/runner.proto); NOT_FOUND at its "exec"
 * stage is execve's ENOENT over the whole PATH: the program does not exist in the guest. */
#define WATCH_RUNNER_NOT_FOUND 4

typedef struct Watch {
    /* settings */
    int64_t exec_id;   /* 0: any exec (a task runs one); else only this exec's output */
    int out_fd;        /* the program's stdout goes here; -1 drops it */
    int err_fd;        /* the program's stderr goes here; -1 drops it */
    FILE *json_out;    /* non-NULL: every event goes there as one JSON line instead */
    bool stop_on_exit; /* exec: done once this exec exited or failed */
    /* outcome */
    bool exited, failed, ended, timed_out, output_limit, out_closed;
    bool not_found; /* failed: no such program in the guest (127) */
    int exit_code, signal;
    int64_t wall_ms;
    bool has_session_exit;
    int session_exit;
    char end_reason[24];
    char fail_message[WATCH_TEXT_MAX_BYTES];
    char guest_error[WATCH_TEXT_MAX_BYTES];
    bool artifacts, art_truncated;
    uint64_t art_files, art_bytes, art_skipped;
} Watch;

void watch_init(Watch *w, int out_fd, int err_fd);

/* Handles one event. Returns 1 when the watch is complete (the session ended, or with
 * stop_on_exit our exec finished), 0 to go on, -1 with errp (bad data, or stdout failed). */
int watch_event(Watch *w, json_t *ev, Error **errp);

/* The exit code for the outcome (see cli.h): the program's code, 128+N for signal N, 124
 * timed out, 127 no such program, 125 could not start otherwise / failed / ended by the
 * daemon, 130 cancelled. */
int watch_exit_code(const Watch *w, bool interrupted);

/* A short word for the summary: "completed", "timed_out", "failed", "cancelled", ... */
const char *watch_outcome(const Watch *w, bool interrupted);
