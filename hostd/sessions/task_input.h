/* What a caller hands a session: its spec, environment pairs and files to write into the
 * workspace. Plain types: the API's body parsers (and their fuzzer) fill them without linking
 * the sessions. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

#define SESSION_ARGV_MAX 256
#define SESSION_ENV_MAX 128
#define SESSION_FILES_MAX 1024 /* files uploaded with a task */
#define SESSION_EGRESS_ENTRIES_MAX (EGRESS_PATTERNS_MAX + EGRESS_CIDRS_MAX)

typedef struct EnvPair {
    char *name, *value;
} EnvPair;

typedef struct TaskFile {
    char *path;    /* workspace-relative, checked */
    uint8_t *data;
    size_t len;
    uint32_t mode; /* 0 = 0644 */
} TaskFile;

typedef struct SessionSpec {
    const char *tenant_id;
    const char *pool;          /* the image pool, e.g. "python" */
    uint64_t timeout_usec;     /* 0 = default */
    bool mirror;               /* live mirror on (default true) */
    EnvPair *env;              /* session-wide environment */
    size_t n_env;
    /* task only */
    bool is_task;
    char **argv;
    size_t argc;
    char *cwd;                 /* NULL = /workspace */
    TaskFile *files;
    size_t n_files;
    /* egress (hostd/egress): host patterns and CIDRs within the operator's allowed set */
    char **egress;
    size_t n_egress;
    bool egress_all; /* "egress": true: the operator's whole allowed set */
} SessionSpec;

typedef struct ExecSpec {
    char **argv;
    size_t argc;
    EnvPair *env;
    size_t n_env;
    char *cwd;
    uint64_t timeout_usec;     /* 0 = default */
    bool stdin_open;
    bool adopt;   /* take the guest's pre-started process of this argv if any (runner.proto) */
    bool as_root; /* run as root in the guest, not as the session's user (issue 28) */
    /* 1..PTY_COLS_MAX x 1..PTY_ROWS_MAX: on a pseudo-terminal of that size (runner.proto
     * Exec.pty; stdin then always open, output one stream: stdout); 0 x 0: pipes */
    uint32_t pty_cols, pty_rows;
} ExecSpec;
