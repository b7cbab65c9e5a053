/* Runner host-mode integration tests: execs (output, exit, env, cwd, stdin, failures),
 * killing whole trees, back-pressure, limits, fork bomb and memory hog containment.
 * Fixture and helpers: runner_host.c. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdutil.h"
#include "guest_limits.h"
#include "macro.h"
#include "runner_host.h"
#include "testlib.h"

#define ERR(x) STOCKADE__RUNNER__ERROR__CODE__##x
#define RH_FLOOD_RSS_GROWTH_MAX_KIB (8 * 1024) /* outbound bound (~2 MiB) + slack */

static void
test_exec_echo(void **state)
{
    (void) state;
    ExecResult r;

    rh_sh("echo 42", &r);
    assert_string_equal(r.out, "42\n");
    assert_int_equal(r.err_len, 0);
    assert_int_equal(r.exit_code, 0);
    assert_int_equal(r.signal, 0);
    rh_result_free(&r);
}

/* Within one exec: ExecStarted (the reply), then every Output, then ExecExit. */
static void
test_exec_message_order(void **state)
{
    (void) state;
    const char *argv[] = {"sh", "-c", "echo a; echo b >&2; echo c", NULL};
    GuestMsg *m;
    int phase = 0; /* 0: want ExecStarted, 1: outputs, 2: done */
    size_t out = 0;

    rh_drop_pending();
    uint32_t id = fx.next_exec_id;
    rh_send_exec_only(argv);
    while (phase < 2) {
        if (runner_client_next(fx.c, RH_TIMEOUT_MS, &m) < 0)
            fail_msg("order: %s", runner_client_error(fx.c));
        switch (m->body_case) {
        case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED:
            assert_int_equal(phase, 0);
            phase = 1;
            break;
        case STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT:
            assert_int_equal(phase, 1);
            assert_int_equal(m->output->exec_id, id);
            assert_int_equal(m->req_id, 0);
            out += m->output->data.len;
            break;
        case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT:
            assert_int_equal(phase, 1);
            assert_int_equal(m->req_id, 0);
            phase = 2;
            break;
        default:
            break; /* mirror records may interleave */
        }
        msg_free_guest(m);
    }
    assert_int_equal(out, 6);
}

static void
test_exec_stderr_and_code(void **state)
{
    (void) state;
    ExecResult r;

    rh_sh("echo out; echo err >&2; exit 3", &r);
    assert_string_equal(r.out, "out\n");
    assert_string_equal(r.err, "err\n");
    assert_int_equal(r.exit_code, 3);
    rh_result_free(&r);
    rh_sh("kill -TERM $$", &r);
    assert_int_equal(r.exit_code, -1);
    assert_int_equal(r.signal, SIGTERM);
    rh_result_free(&r);
}

static void
test_exec_env_ids_cwd(void **state)
{
    (void) state;
    const char *mk[] = {"/bin/mkdir", "-p", "sub/dir", NULL};
    const char *argv[] = {"sh", "-c",
                          "echo \"$SESSION_VAR:$EXEC_VAR:$LANG:$TERM:$(id -u):$(id -g):$(pwd)\"; "
                          "echo \"$HOME\"; ulimit -c",
                          NULL};
    const char *env[] = {"EXEC_VAR=from-exec", "LANG=C", NULL};
    char want[1024];
    ExecResult r;

    rh_collect(rh_exec(mk, NULL, NULL, false), RH_TIMEOUT_MS, &r);
    assert_int_equal(r.exit_code, 0);
    rh_result_free(&r);
    rh_collect(rh_exec(argv, env, "/workspace/sub/dir", false), RH_TIMEOUT_MS, &r);
    snprintf(want, sizeof(want), "from-session:from-exec:C:dumb:%d:%d:%s/sub/dir\n%s\n0\n", RH_UID,
             RH_GID, fx.ws, fx.ws);
    assert_string_equal(r.out, want);
    rh_result_free(&r);
}

static void
test_exec_failures(void **state)
{
    (void) state;
    const char *missing[] = {"no-such-program-stockade", NULL};
    const char *abs_missing[] = {"/nonexistent/prog", NULL};
    const char *ok[] = {"/bin/true", NULL};

    assert_int_equal(rh_exec_error(missing, NULL), ERR(NOT_FOUND));
    assert_int_equal(rh_exec_error(abs_missing, NULL), ERR(NOT_FOUND));
    assert_int_equal(rh_exec_error(ok, "/etc"), ERR(INVALID_PATH));
    assert_int_equal(rh_exec_error(ok, "/workspace/../etc"), ERR(INVALID_PATH));
    assert_int_equal(rh_exec_error(ok, "/workspace/does-not-exist"), ERR(NOT_FOUND));
    char link[1024];
    snprintf(link, sizeof(link), "%s/etc-link", fx.ws);
    assert_int_equal(symlink("/etc", link), 0);
    assert_int_equal(rh_exec_error(ok, "/workspace/etc-link"), ERR(INVALID_PATH));
    unlink(link);
    rh_ping(11);
}

void
rh_stdin(uint32_t exec_id, const char *data, size_t len, bool eof)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Stdin in = STOCKADE__RUNNER__STDIN__INIT;

    in.exec_id = exec_id;
    in.data = (ProtobufCBinaryData){len, (uint8_t *) data};
    in.eof = eof;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_STDIN;
    m.stdin = &in;
    if (runner_client_send(fx.c, &m, RH_TIMEOUT_MS, NULL) < 0)
        fail_msg("stdin: %s", runner_client_error(fx.c));
}

static void
test_stdin(void **state)
{
    (void) state;
    const char *cat[] = {"cat", NULL};
    ExecResult r;

    uint32_t id = rh_exec(cat, NULL, NULL, true);
    rh_stdin(id, "hello ", 6, false);
    rh_stdin(id, "world", 5, true);
    rh_collect(id, RH_TIMEOUT_MS, &r);
    assert_string_equal(r.out, "hello world");
    assert_int_equal(r.exit_code, 0);
    rh_result_free(&r);
}

/* Kills a tree and checks that every process matching the needles is gone. */
static void
rh_kill_and_check(uint32_t id, const char *needle_a, const char *needle_b)
{
    ExecResult r;

    for (int i = 0; i < 100 && (rh_count_procs(needle_a) == 0 || rh_count_procs(needle_b) == 0);
         i++)
        usleep(20 * 1000);
    assert_int_equal(rh_count_procs(needle_a), 1);
    assert_int_equal(rh_count_procs(needle_b), 1);
    rh_signal(id, SIGKILL);
    rh_collect(id, RH_TIMEOUT_MS, &r);
    assert_int_equal(r.signal, SIGKILL);
    rh_result_free(&r);
    assert_true(rh_wait_procs_gone(needle_a, 5000));
    assert_true(rh_wait_procs_gone(needle_b, 5000));
}

static void
test_kill_tree(void **state)
{
    (void) state;
    char script[256], a[64], b[64];

    snprintf(a, sizeof(a), "sleep %s", rh_sleep_secs(1));
    snprintf(b, sizeof(b), "sleep %s", rh_sleep_secs(2));
    snprintf(script, sizeof(script), "%s & %s", a, b);
    const char *argv[] = {"sh", "-c", script, NULL};
    rh_kill_and_check(rh_exec(argv, NULL, NULL, false), a, b);
}

static void
test_kill_double_fork(void **state)
{
    (void) state;
    char script[256], a[64], b[64];

    /* The subshell starts setsid (new session, new process group) and exits at once: the
     * sleep is orphaned outside the leader's session and group. */
    snprintf(a, sizeof(a), "sleep %s", rh_sleep_secs(3));
    snprintf(b, sizeof(b), "sleep %s", rh_sleep_secs(4));
    snprintf(script, sizeof(script), "(setsid %s </dev/null >/dev/null 2>&1 &); exec %s", a, b);
    const char *argv[] = {"sh", "-c", script, NULL};
    rh_kill_and_check(rh_exec(argv, NULL, NULL, false), a, b);
}

static void
test_lingering_child(void **state)
{
    (void) state;
    char script[256], a[64];
    ExecResult r;

    /* The background sleep keeps stdout open: ExecExit comes after the drain grace. */
    snprintf(a, sizeof(a), "sleep %s", rh_sleep_secs(5));
    snprintf(script, sizeof(script), "%s & echo started", a);
    const char *argv[] = {"sh", "-c", script, NULL};
    uint32_t id = rh_exec(argv, NULL, NULL, false);
    rh_collect(id, 3000, &r);
    assert_string_equal(r.out, "started\n");
    assert_int_equal(r.exit_code, 0);
    rh_result_free(&r);
    assert_int_equal(rh_count_procs(a), 1);
    rh_signal(id, SIGKILL); /* the tree outlives its leader; Signal still reaches it */
    assert_true(rh_wait_procs_gone(a, 5000));
}

static void
test_output_flood_bounded(void **state)
{
    (void) state;
    const char *argv[] = {"yes", "stockade-flood-line-with-some-length", NULL};
    ExecResult r;

    long before = rh_runner_rss_kib();
    uint32_t id = rh_exec(argv, NULL, NULL, false);
    sleep(2); /* the test does not read: the runner must stop reading the pipe */
    long during = rh_runner_rss_kib();
    print_message("runner VmRSS: %ld KiB before, %ld KiB while flooded\n", before, during);
    assert_true(during - before < RH_FLOOD_RSS_GROWTH_MAX_KIB);
    rh_ping(12); /* and it still answers (the ping queues behind the output) */
    rh_signal(id, SIGKILL);
    rh_collect(id, RH_TIMEOUT_MS, &r);
    assert_true(r.out_len > 1024 * 1024);
    rh_result_free(&r);
}

static void
test_stdin_flood(void **state)
{
    (void) state;
    static char chunk[64 * 1024];
    char secs[32];
    int busy = 0;
    GuestMsg *m;
    ExecResult r;

    snprintf(secs, sizeof(secs), "%s", rh_sleep_secs(6));
    const char *argv[] = {"sleep", secs, NULL}; /* never reads its stdin */
    uint32_t id = rh_exec(argv, NULL, NULL, true);
    long before = rh_runner_rss_kib();
    memset(chunk, 'x', sizeof(chunk));
    for (int i = 0; i < 64; i++) /* 4 MiB */
        rh_stdin(id, chunk, sizeof(chunk), false);
    rh_ping(13);
    while (runner_client_wait_for(fx.c, STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR, 0, 200, &m) == 0) {
        busy += m->error->code == ERR(BUSY) && m->req_id == 0;
        msg_free_guest(m);
    }
    long after = rh_runner_rss_kib();
    print_message("stdin flood: %d chunks refused (BUSY); VmRSS %ld -> %ld KiB\n", busy, before,
                  after);
    assert_true(busy >= 50); /* 256 KiB pending + a 64 KiB pipe take the first few */
    assert_true(after - before < RH_FLOOD_RSS_GROWTH_MAX_KIB);
    rh_signal(id, SIGKILL);
    rh_collect(id, RH_TIMEOUT_MS, &r);
    rh_result_free(&r);
}

static void
test_busy(void **state)
{
    (void) state;
    uint32_t ids[EXEC_MAX_CONCURRENT];
    char secs[32];
    ExecResult r;

    snprintf(secs, sizeof(secs), "%s", rh_sleep_secs(7));
    const char *argv[] = {"sleep", secs, NULL};
    for (int i = 0; i < EXEC_MAX_CONCURRENT; i++)
        ids[i] = rh_exec(argv, NULL, NULL, false);
    assert_int_equal(rh_exec_error(argv, NULL), ERR(BUSY));
    for (int i = 0; i < EXEC_MAX_CONCURRENT; i++)
        rh_signal(ids[i], SIGKILL);
    for (int i = 0; i < EXEC_MAX_CONCURRENT; i++) {
        rh_collect(ids[i], RH_TIMEOUT_MS, &r);
        assert_int_equal(r.signal, SIGKILL);
        rh_result_free(&r);
    }
}

static void
test_exec_stats(void **state)
{
    (void) state;
    ExecResult r;

    /* About 0.2 s of CPU in a grandchild that the leader waits for. */
    rh_sh("sh -c 'i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done'", &r);
    print_message("stats: user %llu usec, max_rss %llu KiB\n", (unsigned long long) r.cpu_user_usec,
                  (unsigned long long) r.max_rss_kib);
    assert_int_equal(r.exit_code, 0);
    assert_true(r.cpu_user_usec > 10000);
    assert_true(r.max_rss_kib > 100);
    rh_result_free(&r);
}

/* A case this host cannot run safely: noted, and a failure under STOCKADE_MUST_WORK=1. */
static void
rh_case_skipped(const char *why)
{
    if (test_must_work())
        fail_msg("cannot skip under STOCKADE_MUST_WORK=1: %s", why);
    print_message("skipped: %s\n", why);
}

/* The spare cgroup (tree.h): made while the runner is idle, limits set, taken by the next
 * exec, and replaced once the runner is idle again. */
static bool
spare_cgroup(char *name, size_t cap)
{
    struct dirent *de;
    bool found = false;
    DIR *d = opendir(fx.cg_root);
    while (d && !found && (de = readdir(d)))
        if (strncmp(de->d_name, "exec-s", 6) == 0) {
            snprintf(name, cap, "%s", de->d_name);
            found = true;
        }
    if (d)
        closedir(d);
    return found;
}

static void
test_exec_spare_cgroup(void **state)
{
    (void) state;
    char spare[256], next[256], path[1024], want[260];
    ExecResult r;

    if (!fx.cg_root) {
        print_message("spare cgroup: pgroup mode has none\n");
        return;
    }
    usleep(200 * 1000); /* idle well past SERVE_IDLE_MSEC */
    rh_ping(7);
    assert_true(spare_cgroup(spare, sizeof(spare)));
    snprintf(path, sizeof(path), "%s/%s/pids.max", fx.cg_root, spare);
    if (access(path, F_OK) == 0) { /* the pids controller is delegated here */
        _cleanup_free_ char *pids = NULL;
        size_t len;
        assert_int_equal(read_file_bounded(path, 64, &pids, &len), 0);
        assert_int_equal(atoi(pids), EXEC_PIDS_MAX);
    }
    rh_sh("cat /proc/self/cgroup", &r);
    snprintf(want, sizeof(want), "/%s\n", spare);
    assert_non_null(strstr(r.out, want)); /* the exec ran in the spare */
    rh_result_free(&r);
    usleep(200 * 1000);
    rh_ping(8);
    assert_true(spare_cgroup(next, sizeof(next)));
    assert_string_not_equal(next, spare);
}

/* Only where a pids limit contains it (test-made v1 group around the runner, or v2 limits):
 * a fork bomb on this shared machine without one is not an option. */
static void
test_fork_bomb(void **state)
{
    (void) state;
    const char *argv[] = {"sh", "-c", "b() { b | b & }; b; sleep 3600", NULL};
    ExecResult r;

    if (!rh_contained("pids.max", fx.pids_v1)) {
        rh_case_skipped("fork bomb: no pids limit to contain it on this host");
        return;
    }
    if (!fx.cg_root) {
        print_message("fork bomb skipped in pgroup mode: only cgroup.kill stops one reliably\n");
        return;
    }
    uint32_t id = rh_exec(argv, NULL, NULL, false);
    for (int i = 0; i < 10; i++) { /* the runner keeps answering */
        usleep(200 * 1000);
        rh_ping(100 + (uint64_t) i);
    }
    rh_signal(id, SIGKILL);
    rh_collect(id, RH_TIMEOUT_MS, &r);
    rh_result_free(&r);
    rh_ping(111);
}

static void
test_memory_hog(void **state)
{
    (void) state;
    const char *argv[] = {"perl", "-e", "$x = 'a' x (1024 * 1024 * 1024); sleep 1", NULL};
    ExecResult r;

    if (!rh_contained("memory.max", fx.mem_v1)) {
        rh_case_skipped("memory hog: no memory limit to contain it on this host");
        return;
    }
    if (access("/usr/bin/perl", X_OK) < 0) {
        rh_case_skipped("memory hog: no /usr/bin/perl");
        return;
    }
    uint32_t id = rh_exec(argv, NULL, NULL, false);
    rh_collect(id, 30000, &r);
    print_message("memory hog: exit %d signal %d max_rss %llu KiB\n", r.exit_code, r.signal,
                  (unsigned long long) r.max_rss_kib);
    assert_int_equal(r.signal, SIGKILL); /* the OOM killer took the hog, not the runner */
    rh_result_free(&r);
    rh_ping(112);
}

const struct CMUnitTest rh_exec_tests[] = {
    cmocka_unit_test(test_exec_echo),
    cmocka_unit_test(test_exec_spare_cgroup),
    cmocka_unit_test(test_exec_message_order),
    cmocka_unit_test(test_exec_stderr_and_code),
    cmocka_unit_test(test_exec_env_ids_cwd),
    cmocka_unit_test(test_exec_failures),
    cmocka_unit_test(test_stdin),
    cmocka_unit_test(test_kill_tree),
    cmocka_unit_test(test_kill_double_fork),
    cmocka_unit_test(test_lingering_child),
    cmocka_unit_test(test_output_flood_bounded),
    cmocka_unit_test(test_stdin_flood),
    cmocka_unit_test(test_busy),
    cmocka_unit_test(test_exec_stats),
    cmocka_unit_test(test_fork_bomb),
    cmocka_unit_test(test_memory_hog),
};
const size_t rh_exec_tests_count = ELEMENTSOF_RH(rh_exec_tests);
