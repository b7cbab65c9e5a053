/* stockade exec -i / -it: the local side of an interactive exec.
 *
 * -i forwards this process's stdin to the exec's (POST .../stdin), in chunks of what one
 * read(2) returns (at most EXEC_INPUT_CHUNK_BYTES), and closes the exec's stdin (eof=1) at
 * end of file. -t (with -i) also puts the local terminal in raw mode, so every key (Ctrl-C
 * included) travels as a byte to the guest's terminal, whose line discipline echoes it and
 * turns it into signals; the terminal's size is sent at start and on every SIGWINCH
 * (POST .../resize). The terminal's settings are restored on every way out: the normal end,
 * exit(), and SIGTERM, SIGHUP, SIGQUIT, SIGPIPE (restored, then the signal's default action).
 *
 * The forwarding runs on a thread of its own with a client of its own (cli_client_new); the
 * caller's thread follows the events. exec_input_stop() ends it (it never blocks on the
 * guest: a request in flight finishes or times out as any request does). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "error.h"

#define EXEC_INPUT_CHUNK_BYTES 4096 /* well under the stdin route's 64 KiB */
#define EXEC_INPUT_SIZE_MAX 1000    /* the daemon's bound on columns and rows (API.md) */

typedef struct ExecInput ExecInput;

/* The local terminal's size (TIOCGWINSZ on stdin, then stdout), or 80 x 24 when neither is a
 * terminal or it says 0. Bounded to 1..EXEC_INPUT_SIZE_MAX. */
void exec_input_term_size(uint32_t *ret_cols, uint32_t *ret_rows);

/* Raw mode on stdin's terminal (-t). -1 with errp when stdin is not a terminal. */
int exec_input_raw_begin(Error **errp);
/* Restores what exec_input_raw_begin changed; safe to call twice, and from a signal handler. */
void exec_input_raw_end(void);

/* Starts forwarding to exec_id of session; tty: also window sizes on SIGWINCH. */
int exec_input_start(Cli *cli, const char *session, int64_t exec_id, bool tty, ExecInput **ret,
                     Error **errp);
/* Stops the thread and frees; NULL is fine. */
void exec_input_stop(ExecInput *in);
