/* A real pool (real libvirtd, real guests from the project's images) driven from a test or
 * a benchmark: its own state directory and domain prefix, a loop run in slices until a
 * condition holds, and a synchronous test session (hello, exec, collect output) on top of the
 * pool's Guest API. Not a fake: everything below it is the daemon's own code. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "loop.h"
#include "pool.h"
#include "workq.h"

typedef struct Harness {
    Loop *loop;
    WorkQueue *q;
    Pool *pool;
    char *state_dir;
    char prefix[POOL_PREFIX_MAX_BYTES + 1];
    char image_dir[1024];
    PoolConfig cfg;
    PoolShapeConfig shape;
    bool stopped;
    char *template_dir; /* template mode: where the pool put its templates (removed on cleanup) */
} Harness;

typedef struct HarnessOptions {
    const char *image;
    unsigned warm, slots;
    const char *state_dir; /* NULL: a fresh one (reuse one to test restarts) */
    const char *prefix;    /* NULL: a fresh random one */
    uint64_t health_interval_usec, ping_timeout_usec; /* 0: pool defaults */
    uint64_t sync_timeout_usec;                       /* 0: pool default */
    AccelMode accel;                                  /* 0 (auto): the pool default */
    const char *kvm_probe_append;                     /* NULL: none */
    uint64_t kvm_probe_timeout_usec;                  /* 0: pool default */
    bool kvm_probe_under_tcg;                         /* the probe's fault, not the host's */
    const char *guest_memory; /* "copy", "template"; NULL: harness_default_guest_memory */
    const char *template_dir; /* NULL: the pool's choice */
    bool no_start;            /* the pool is made (pool_new) but not started: no guest runs */
} HarnessOptions;

/* guest_memory for harnesses whose options name none (a test binary's mode argument); NULL:
 * the pool's default. */
extern const char *harness_default_guest_memory;

/* Skips (test_skip) when libvirtd or the image is missing. The pool is started (unless
 * o->no_start); it is not yet full. */
void harness_start_opts(Harness *h, const HarnessOptions *o);
void harness_start(Harness *h, const char *image, unsigned warm, unsigned slots,
                   const char *state_dir);
/* Runs the loop until cond(userdata) or the timeout; returns cond's last value. */
bool harness_run_until(Harness *h, bool (*cond)(void *userdata), void *userdata,
                       uint64_t timeout_usec);
bool harness_wait_full(Harness *h, uint64_t timeout_usec);
/* Stops the pool cleanly (every domain destroyed) and frees it; keeps the state dir. */
void harness_stop(Harness *h);
/* Frees without stopping: domains stay behind, as after a daemon crash. */
void harness_abandon(Harness *h);
void harness_cleanup(Harness *h); /* removes the state dir */
/* Names of live libvirt domains with the harness's prefix (NULL-terminated, malloc'd). */
char **harness_domains(Harness *h);
size_t harness_domain_count(Harness *h);

typedef struct TestSession {
    Harness *h;
    Guest *g;
    bool lost, acked;
    uint32_t hello_req;
    uint32_t exec_id;
    uint32_t exec_req;
    bool started, exited, errored;
    int exit_code, signal;
    char out[65536];
    size_t out_len;
    char err[4096];
    size_t err_len;
    uint64_t first_byte_usec; /* monotonic time of the first output byte of the current exec */
    uint64_t taken_usec, acked_usec, started_usec; /* hand-out phases (monotonic) */
    uint32_t ping_req;
    uint64_t pong_usec;
    char error_message[ERROR_MESSAGE_MAX + 64];
} TestSession;

/* Takes a guest and sends Hello (no wait). false if the pool had none idle. */
bool ts_take(Harness *h, TestSession *s, const char *session_id);
/* Ping -> Pong round trip in microseconds, or -1 (lost, timed out). */
int64_t ts_ping_usec(TestSession *s, uint64_t timeout_usec);
/* Sends Exec (argv NULL-terminated); does not wait. */
bool ts_exec_start(TestSession *s, const char *const *argv);
/* Runs the loop until the exec exits (or the guest is lost / timeout). */
bool ts_exec_wait(TestSession *s, uint64_t timeout_usec);
/* Start + wait; returns the exit code, or -1000 on failure. */
int ts_run(TestSession *s, const char *const *argv, uint64_t timeout_usec);
/* Releases the guest (destroy + recycle at once). */
void ts_release(TestSession *s);
