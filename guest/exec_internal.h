/* Internal to exec.c and exec_io.c: the exec record and the table. */
#pragma once

#include <stdint.h>
#include <sys/resource.h>

#include "exec.h"
#include "guest_limits.h"
#include "tree.h"

typedef enum {
    EXEC_STARTING,      /* forked; waiting for the report pipe (EOF = running) */
    EXEC_FAILED,        /* Error sent; waiting to reap the child */
    EXEC_RUNNING,       /* ExecStarted sent */
    EXEC_LEADER_EXITED, /* reaped; draining output */
    EXEC_LINGERING,     /* ExecExit sent; descendants still alive */
} ExecState;

enum { EXEC_OUT_STDOUT, EXEC_OUT_STDERR, EXEC_OUT_COUNT };

typedef enum {
    PARK_NONE,    /* an ordinary exec (or an adopted one) */
    PARK_WAITING, /* Prestart: Ack once stdout has bytes (req_id is the Prestart's) */
    PARK_READY,   /* acked; waiting for Exec.adopt, nothing read */
} ParkState;

typedef struct Exec {
    uint32_t id;
    uint32_t req_id; /* of the Exec request, until it is answered */
    ExecState state;
    pid_t pid;
    int report_fd;
    int out_fd[EXEC_OUT_COUNT];
    bool draining; /* grace over: read only drain_left[] more */
    size_t drain_left[EXEC_OUT_COUNT];
    int in_fd;
    int pty_fd; /* Exec.pty: the terminal's master, for Resize (out_fd/in_fd are dups); -1 */
    uint8_t *in_buf;
    size_t in_len;
    bool in_eof;
    uint64_t start_usec, exit_usec, deadline_usec;
    int wait_status;
    struct rusage ru;
    Tree tree;
    ParkState park;
    bool park_silent; /* PARK_WAITING and its stdout at EOF: no more polling it */
    char *park_argv; /* argv as NUL-ended strings, for Exec.adopt to compare */
    size_t park_argv_len;
    uid_t park_uid;
    gid_t park_gid;
} Exec;

typedef enum { POLL_REPORT, POLL_STDOUT, POLL_STDERR, POLL_STDIN, POLL_PARKED } PollKind;

struct ExecTable {
    OutQueue *q;
    TreeRoot root;
    Exec *slots[EXEC_TABLE_MAX];
    size_t stdin_total; /* pending stdin bytes of all execs */
    struct {
        uint16_t slot;
        uint8_t kind;
    } refs[EXEC_POLL_FDS_MAX];
    uint8_t buf[OUTPUT_CHUNK_MAX_BYTES];
};

/* exec.c: starts x as a new exec; *ret is its table entry. */
int exec_start_new(ExecTable *t, const ExecContext *ctx, const Stockade__Runner__Exec *x,
                   uint32_t req_id, Exec **ret, Error **errp);

/* exec_park.c. Adopt: 1 adopted (ExecStarted sent), 0 nothing to adopt, -1 error. */
int exec_park_adopt(ExecTable *t, const ExecContext *ctx, const Stockade__Runner__Exec *x,
                    const char *cwd_rel, uint32_t req_id, Error **errp);
int exec_park_on_ready(ExecTable *t, Exec *e, Error **errp);
/* The parked leader was reaped: an Error for a Prestart not yet answered; the tree killed. */
int exec_park_on_exit(ExecTable *t, Exec *e, Error **errp);

/* exec_io.c */
void exec_close_stdin(ExecTable *t, Exec *e);
void exec_close_out(Exec *e, int stream);
int exec_read_output(ExecTable *t, Exec *e, int stream, Error **errp);
int exec_flush_stdin(ExecTable *t, Exec *e, Error **errp);
int exec_queue_stdin(ExecTable *t, Exec *e, const uint8_t *data, size_t len, Error **errp);
/* Grace over: note what is in the pipes now; only that much more is read. */
void exec_start_drain(Exec *e);
