/* Exec.pty (runner.proto): an exec's pseudo-terminal, opened by the runner (root) for the
 * session user. The runner keeps the master (non-blocking, close-on-exec): it reads the
 * terminal's bytes from it as the exec's STDOUT and writes Stdin to it, so the line
 * discipline echoes the input and turns ^C into SIGINT of the foreground process group.
 * The child gets the slave as fds 0-2 and, after setsid, as its controlling terminal
 * (spawn.h, SpawnSpec.ctty). Sizes were checked by proto/ (PTY_COLS_MAX, PTY_ROWS_MAX). */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "error.h"

typedef struct PtyEnds {
    int master; /* O_NONBLOCK, O_CLOEXEC */
    int slave;  /* O_CLOEXEC (the child's dup2 clears it), owned by uid:gid, mode 0620 */
} PtyEnds;

/* Opens a new terminal of cols x rows. On failure both ends are closed and *ret is untouched. */
int pty_open(uint32_t cols, uint32_t rows, uid_t uid, gid_t gid, PtyEnds *ret, Error **errp);
/* TIOCSWINSZ on the master: the kernel sends SIGWINCH to the foreground process group. */
int pty_resize(int master_fd, uint32_t cols, uint32_t rows, Error **errp);
