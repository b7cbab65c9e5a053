/* Shared fixture of the runner host-mode integration test (runner_host*.c): one real
 * stockade-runner started with --serve-fd on a socketpair and a temporary workspace, driven
 * through tests/lib/runner_client. Needs root (the runner drops to the session uid). */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include "runner_client.h"

#define ELEMENTSOF_RH(x) (sizeof(x) / sizeof((x)[0]))
#define RH_UID 1000
#define RH_GID 1000
#define RH_TIMEOUT_MS 60000 /* a bound, not a target: generous for loaded machines */
#define RH_MIRROR_BUDGET_BYTES (4u * 1024u * 1024u)
#define RH_MIRROR_MAX_FILE_BYTES (128u * 1024u)

typedef struct Fixture {
    const char *runner_path;
    bool cgroup_mode; /* --cgroup-root given (else the pgroup fallback) */
    pid_t runner_pid;
    RunnerClient *c;
    char *ws;      /* the workspace directory */
    char *cg_root; /* cgroup v2 directory given to the runner, or NULL */
    char *pids_v1; /* cgroup v1 pids group holding the runner, or NULL */
    char *mem_v1;  /* cgroup v1 memory group holding the runner, or NULL */
    uint32_t next_exec_id;
} Fixture;

extern Fixture fx;

typedef struct ExecResult {
    char *out;
    size_t out_len;
    char *err;
    size_t err_len;
    int exit_code;
    int signal;
    uint64_t max_rss_kib;
    uint64_t cpu_user_usec;
} ExecResult;

/* Sends an Exec and asserts ExecStarted; returns the exec_id. env: "NAME=value" strings. */
uint32_t rh_exec(const char *const *argv, const char *const *env, const char *cwd, bool stdin_open);
/* Sends an Exec with Exec.pty of that size and asserts ExecStarted; returns the exec_id. */
uint32_t rh_exec_pty(const char *const *argv, uint32_t cols, uint32_t rows);
/* Sends Resize and returns the reply (Ack or Error). */
GuestMsg *rh_resize(uint32_t exec_id, uint32_t cols, uint32_t rows);
/* Sends an Exec without waiting for anything (the next exec_id is used). */
void rh_send_exec_only(const char *const *argv);
/* Sends an Exec expected to fail; returns the Error code. */
int rh_exec_error(const char *const *argv, const char *cwd);
/* Waits for ExecExit of exec_id and gathers its output (in order). */
void rh_collect(uint32_t exec_id, int timeout_ms, ExecResult *ret);
void rh_result_free(ExecResult *r);
/* Runs a shell command and returns its result. */
void rh_sh(const char *script, ExecResult *ret);
/* Calls m and returns the reply (asserts it arrived). */
GuestMsg *rh_call(HostMsg *m);
/* Asserts the reply is Ack (frees it). */
void rh_expect_ack(GuestMsg *reply);
/* Asserts the reply is an Error with that code (frees it). */
void rh_expect_error(GuestMsg *reply, int code);
void rh_ping(uint64_t nonce);
void rh_signal(uint32_t exec_id, int signo);
/* Sends Stdin (no reply); eof closes the exec's stdin after data. */
void rh_stdin(uint32_t exec_id, const char *data, size_t len, bool eof);
/* Processes whose command line contains needle (zombies excluded). */
int rh_count_procs(const char *needle);
/* Waits up to timeout_ms for rh_count_procs(needle) == 0. */
bool rh_wait_procs_gone(const char *needle, int timeout_ms);
long rh_runner_rss_kib(void);
/* True when the runner and its children are under a limit: a v1 group made by the test
 * (v1_group) or, in cgroup mode, a v2 limit file (v2_file) on the runner's cgroup root. */
bool rh_contained(const char *v2_file, const char *v1_group);
/* "sleep N" with an N unique to this test process and k, so parallel runs never match each
 * other's processes in /proc. Returns a static buffer holding "N". */
const char *rh_sleep_secs(int k);
/* Drops kept messages that no test waits for (mirror records, stray output). */
void rh_drop_pending(void);

/* The test lists of runner_host_exec.c and runner_host_files.c. */
/* runner_host_park.c: one test each, before and after Hello */
extern const struct CMUnitTest rh_park_before_hello[];
extern const struct CMUnitTest rh_park_after_hello[];
extern const struct CMUnitTest rh_exec_tests[];
extern const size_t rh_exec_tests_count;
extern const struct CMUnitTest rh_pty_tests[]; /* runner_host_pty.c */
extern const size_t rh_pty_tests_count;
extern const struct CMUnitTest rh_files_tests[];
extern const size_t rh_files_tests_count;
