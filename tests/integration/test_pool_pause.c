/* Pause and resume of a template clone (issue 27), the pool's primitive against real libvirtd
 * and a real guest of the project's minimal image: a harness pool on templates hands out a
 * guest; the test writes a file and starts a process in it, pauses it into a state file
 * (pool_pause_domain), keeps its workspace disk, and resumes it into a domain of its own
 * (pool_resume_domain), talking to its runner over the new domain's channel. Then three more
 * cycles with a file written between each, and the state files a resume must refuse (altered,
 * truncated, missing, made against another template), each leaving no domain behind; the
 * good file still resumes after them. Then the pool stops cleanly (its tmpfs template is removed)
 * and starts again on the same state directory (a new template): the state still resumes,
 * against the template kept at its first pause, and pauses and resumes once more.
 * Prints the figures: pause ms, resume -> first byte of an exec ms, stored bytes.
 * Usage: test_pool_pause [IMAGE] (minimal by default; python for the figures). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "pausefile.h"
#include "poolharness.h"
#include "runner_client.h"
#include "sha256.h"
#include "testlib.h"
#include "timeutil.h"
#include "virt.h"

#define FILL_TIMEOUT_USEC (300 * USEC_PER_SEC)
#define EXEC_TIMEOUT_USEC (60 * USEC_PER_SEC)
#define CALL_TIMEOUT_MS 60000
#define SYNC_TIMEOUT_MS 60000
#define CYCLES 3

static Harness h;
static Virt *virt;
static char dir[1200], name[128], xml_shape[64];
static int dir_fd = -1;
static uint8_t from_tmpl[32]; /* the template our guest maps */
static uint32_t next_exec_id = 1000;

static int
connect_channel(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    for (int i = 0; i < 200; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0)
            return fd;
        close(fd);
        usleep(50000);
    }
    return -1;
}

/* Runs argv through c; returns stdout (static), the exit code in *ret_code and the time the
 * first message after ExecStarted came (monotonic). */
static const char *
run(RunnerClient *c, const char *const *argv, int *ret_code, uint64_t *ret_first_usec)
{
    static char out[8192];
    size_t n = 0, argc = 0;
    uint32_t exec_id = next_exec_id++;
    Stockade__Runner__Exec e = STOCKADE__RUNNER__EXEC__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    while (argv[argc])
        argc++;
    e.exec_id = exec_id;
    e.argv = (char **) argv;
    e.n_argv = argc;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &e;
    GuestMsg *r = NULL;
    TEST_CHECK(runner_client_call(c, &m, CALL_TIMEOUT_MS, &r) == 0, "call: %s",
               runner_client_error(c));
    TEST_CHECK(r->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED,
               "exec %s not started", argv[0]);
    msg_free_guest(r);
    bool first = true;
    for (;;) {
        GuestMsg *g = NULL;
        TEST_CHECK(runner_client_next(c, CALL_TIMEOUT_MS, &g) == 0, "exec output: %s",
                   runner_client_error(c));
        if (first && ret_first_usec)
            *ret_first_usec = now_usec();
        first = false;
        if (g->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT &&
            g->output->exec_id == exec_id &&
            g->output->stream == STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT) {
            size_t k = MIN(g->output->data.len, sizeof(out) - 1 - n);
            memcpy(out + n, g->output->data.data, k);
            n += k;
        }
        bool done = g->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT &&
                    g->exec_exit->exec_id == exec_id;
        if (done)
            *ret_code = g->exec_exit->exit_code;
        msg_free_guest(g);
        if (done)
            break;
    }
    out[n] = '\0';
    return out;
}

static const char *
sh(RunnerClient *c, const char *script, uint64_t *ret_first_usec)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    int code = -1;
    const char *out = run(c, argv, &code, ret_first_usec);
    TEST_CHECK(code == 0, "'%s' exited %d: %s", script, code, out);
    return out;
}

static bool
cond_acked(void *userdata)
{
    TestSession *s = userdata;
    return s->acked || s->lost;
}

static bool
cond_started(void *userdata)
{
    TestSession *s = userdata;
    return s->started || s->errored || s->lost;
}

/* Pauses `domain` into state_name; returns the milliseconds it took. */
static double
pause_into(const char *domain, const char *state_name, PauseStats *st)
{
    Error *err = NULL;
    uint64_t t0 = now_usec();
    TEST_CHECK(pool_pause_domain(h.pool, h.shape.name, domain, from_tmpl, dir_fd, state_name, st,
                                 &err) == 0,
               "pause %s: %s", domain, err ? err->message : "?");
    double ms = (double) (now_usec() - t0) / 1000.0;
    TEST_CHECK(!virt_is_active(virt, domain), "%s still runs after its pause", domain);
    printf("pause %s: %.0f ms; stream %llu bytes, filtered %llu, stored %llu; template pages "
           "%llu, dropped %llu (keep %llu ms, stream %llu ms, header+fsync+rename %llu ms, "
           "destroy %llu ms)\n",
           domain, ms, (unsigned long long) st->stream_bytes, (unsigned long long) st->raw_bytes,
           (unsigned long long) st->body_bytes, (unsigned long long) st->pages_seen,
           (unsigned long long) st->pages_dropped, (unsigned long long) (st->keep_usec / 1000),
           (unsigned long long) (st->stream_usec / 1000),
           (unsigned long long) (st->finish_usec / 1000),
           (unsigned long long) (st->destroy_usec / 1000));
    return ms;
}

/* Resumes state_name into our domain; returns the synced client and, in *ret_ms, the time
 * from the resume call to the first byte of an exec's answer. */
static RunnerClient *
resume_from(const char *state_name, double *ret_ms)
{
    Error *err = NULL;
    uint64_t t0 = now_usec();
    TEST_CHECK(pool_resume_domain(h.pool, h.shape.name, name, dir, dir_fd, state_name, from_tmpl,
                                  &err) == 0,
               "resume from %s: %s", state_name, err ? err->message : "?");
    char sock[1300];
    snprintf(sock, sizeof(sock), "%s/channel.sock", dir);
    int fd = connect_channel(sock);
    TEST_CHECK(fd >= 0, "connect %s", sock);
    RunnerClient *c = runner_client_new(fd);
    GuestMsg *ready = NULL;
    TEST_CHECK(runner_client_sync(c, 0x9a05e000ull + next_exec_id, SYNC_TIMEOUT_MS, &ready) == 0,
               "no Ready after the resume: %s", runner_client_error(c));
    msg_free_guest(ready);
    uint64_t first = 0;
    sh(c, "echo up", &first);
    *ret_ms = (double) (first - t0) / 1000.0;
    printf("resume from %s -> first byte of an exec: %.0f ms\n", state_name, *ret_ms);
    return c;
}

static unsigned long
counter(RunnerClient *c)
{
    return strtoul(sh(c, "cat counter", NULL), NULL, 10);
}

/* The loop started before the pause still runs: its counter moves on (bounded wait). */
static void
check_counter_moves(RunnerClient *c)
{
    unsigned long a = counter(c), b = a;
    for (int i = 0; i < 100 && b == a; i++) {
        usleep(100 * 1000);
        b = counter(c);
    }
    TEST_CHECK(b > a, "the loop started before the pause stopped: counter %lu then %lu", a, b);
}

static void
cleanup(void)
{
    if (virt && name[0])
        (void) virt_destroy(virt, name, NULL);
}

/* Takes the pool's guest, writes f1 and starts the counter loop, pauses it. */
static void
first_pause(PauseStats *st)
{
    TestSession s;
    TEST_CHECK(ts_take(&h, &s, "pause-test"), "no idle guest");
    TEST_CHECK(harness_run_until(&h, cond_acked, &s, EXEC_TIMEOUT_USEC) && s.acked, "no Hello ack");
    const char *w[] = {"/bin/sh", "-c", "echo one > f1", NULL};
    TEST_CHECK(ts_run(&s, w, EXEC_TIMEOUT_USEC) == 0, "write f1: %s", s.error_message);
    const char *loop[] = {
        "/bin/sh", "-c",
        "i=0; while :; do i=$((i+1)); echo $i > c.tmp && mv c.tmp counter; sleep 0.1; done", NULL};
    TEST_CHECK(ts_exec_start(&s, loop), "start the loop");
    TEST_CHECK(harness_run_until(&h, cond_started, &s, EXEC_TIMEOUT_USEC) && s.started,
               "the loop did not start");
    char src[1300];
    snprintf(src, sizeof(src), "%s", guest_workspace_path(s.g));
    pause_into(guest_name(s.g), "state", st);
    /* The disk is part of the paused state: it moves to the paused guest's folder. */
    char cmd[3000];
    snprintf(cmd, sizeof(cmd), "cp --sparse=always '%s' '%s/workspace.raw'", src, dir);
    TEST_CHECK(system(cmd) == 0, "%s", cmd);
    ts_release(&s);
}

static void
expect_refused(const char *state_name, ErrorCategory cat, const char *words)
{
    Error *err = NULL;
    uint8_t got[32];
    TEST_CHECK(pool_resume_domain(h.pool, h.shape.name, name, dir, dir_fd, state_name, got, &err) <
                   0,
               "%s was resumed", state_name);
    printf("refused %s: %s\n", state_name, err->message);
    TEST_CHECK(err->category == cat && strstr(err->message, words),
               "%s refused as %d '%s', not %d '%s'", state_name, err->category, err->message, cat,
               words);
    TEST_CHECK(!virt_is_active(virt, name), "a refused resume left %s running", name);
    error_free(err);
}

static void
copy_state(const char *from, const char *to, long flip_at, long truncate_to)
{
    char cmd[3000];
    snprintf(cmd, sizeof(cmd), "cp '%s/%s' '%s/%s'", dir, from, dir, to);
    TEST_CHECK(system(cmd) == 0, "%s", cmd);
    int fd = openat(dir_fd, to, O_RDWR);
    TEST_CHECK(fd >= 0, "open %s", to);
    if (flip_at >= 0) {
        uint8_t b;
        TEST_CHECK(pread(fd, &b, 1, flip_at) == 1, "read %s", to);
        b ^= 0x01;
        TEST_CHECK(pwrite(fd, &b, 1, flip_at) == 1, "write %s", to);
    }
    if (truncate_to >= 0)
        TEST_CHECK(ftruncate(fd, truncate_to) == 0, "truncate %s", to);
    close(fd);
}

/* The same file with another template id in its header and a checksum made anew: only the
 * template check can refuse it. */
static void
copy_state_other_template(const char *from, const char *to)
{
    copy_state(from, to, -1, -1);
    int fd = openat(dir_fd, to, O_RDWR);
    struct stat st;
    TEST_CHECK(fd >= 0 && fstat(fd, &st) == 0, "open %s", to);
    uint8_t *data = malloc((size_t) st.st_size);
    TEST_CHECK(data && pread(fd, data, (size_t) st.st_size, 0) == st.st_size, "read %s", to);
    data[32] ^= 0xff;
    Sha256 s;
    sha256_init(&s);
    sha256_update(&s, data + PAUSEFILE_HEADER_BYTES, (size_t) st.st_size - PAUSEFILE_HEADER_BYTES);
    sha256_update(&s, data, 64);
    sha256_final(&s, data + 64);
    TEST_CHECK(pwrite(fd, data, PAUSEFILE_HEADER_BYTES, 0) == PAUSEFILE_HEADER_BYTES, "write");
    free(data);
    close(fd);
}

int
main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    Error *err = NULL;
    HarnessOptions o = {
        .image = argc > 1 ? argv[1] : "minimal", .warm = 1, .slots = 1, .guest_memory = "template"};
    harness_start_opts(&h, &o);
    TEST_CHECK(harness_wait_full(&h, FILL_TIMEOUT_USEC), "the pool did not fill");
    PoolStatus pst;
    pool_status(h.pool, &pst);
    TEST_CHECK(pst.guest_memory == POOL_MEMORY_TEMPLATE && pst.shapes[0].template_ready,
               "template mode not in effect: %s", pst.guest_memory_reason);
    TEST_CHECK(virt_open("qemu:///system", &virt, &err) == 0, "libvirt: %s",
               err ? err->message : "?");
    atexit(cleanup);
    snprintf(dir, sizeof(dir), "%s/paused-test", h.state_dir);
    TEST_CHECK(mkdir(dir, 0711) == 0 && (dir_fd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0,
               "mkdir %s", dir);
    snprintf(name, sizeof(name), "%spz", h.prefix);
    snprintf(xml_shape, sizeof(xml_shape), "%s", h.shape.name);
    TEST_CHECK(pool_template_identity(h.pool, h.shape.name, from_tmpl, &err) == 0, "template: %s",
               err ? err->message : "?");

    PauseStats st;
    double resume_ms;
    char mem[1400];
    struct stat mst;
    snprintf(mem, sizeof(mem), "%s/%s.mem", pst.template_dir, h.shape.name);
    TEST_CHECK(stat(mem, &mst) == 0, "stat %s", mem);
    long long mem_mib_before = (long long) mst.st_blocks * 512 / (1 << 20);
    first_pause(&st);
    TEST_CHECK(stat(mem, &mst) == 0, "stat %s", mem);
    /* notes pitfall 4: a full read of a clone's RAM may fill a tmpfs template's holes */
    printf("template RAM file allocated: %lld MiB before the first pause, %lld MiB after\n",
           mem_mib_before, (long long) mst.st_blocks * 512 / (1 << 20));
    TEST_CHECK(st.pages_dropped > 0 && st.pages_dropped < st.pages_seen,
               "the filter dropped %llu of %llu template pages",
               (unsigned long long) st.pages_dropped, (unsigned long long) st.pages_seen);
    RunnerClient *c = resume_from("state", &resume_ms);
    TEST_CHECK(strcmp(sh(c, "cat f1", NULL), "one\n") == 0, "f1 lost in the pause");
    check_counter_moves(c);

    for (int k = 2; k <= CYCLES + 1; k++) {
        char script[128], want[512] = "", cat[128] = "cat";
        snprintf(script, sizeof(script), "echo %d > f%d && sync", k, k);
        sh(c, script, NULL);
        runner_client_free(c);
        pause_into(name, "state", &st);
        c = resume_from("state", &resume_ms);
        for (int j = 1; j <= k; j++) {
            char one[32];
            if (j == 1)
                snprintf(one, sizeof(one), "one\n");
            else
                snprintf(one, sizeof(one), "%d\n", j);
            strcat(want, one);
            char f[16];
            snprintf(f, sizeof(f), " f%d", j);
            strcat(cat, f);
        }
        TEST_CHECK(strcmp(sh(c, cat, NULL), want) == 0, "cycle %d: files lost", k);
        check_counter_moves(c);
    }
    sh(c, "echo last > flast", NULL);
    runner_client_free(c);
    pause_into(name, "state", &st);

    struct stat sst;
    TEST_CHECK(fstatat(dir_fd, "state", &sst, 0) == 0, "stat state");
    copy_state("state", "flipped", sst.st_size / 2, -1);
    expect_refused("flipped", E_INVALID, "checksum");
    copy_state("state", "flipped-header", 16, -1); /* body bytes */
    expect_refused("flipped-header", E_INVALID, "truncated or extended");
    copy_state("state", "truncated", -1, sst.st_size - 1);
    expect_refused("truncated", E_INVALID, "truncated");
    copy_state("state", "short", -1, 100);
    expect_refused("short", E_INVALID, "truncated");
    copy_state_other_template("state", "other-template");
    expect_refused("other-template", E_CONFLICT, "template");
    expect_refused("missing", E_NOT_FOUND, "missing");

    /* A clean stop removes the tmpfs template; the next start boots a new one. */
    char state_dir[1024], prefix[64];
    snprintf(state_dir, sizeof(state_dir), "%s", h.state_dir);
    snprintf(prefix, sizeof(prefix), "%s", h.prefix);
    harness_stop(&h);
    HarnessOptions again = o;
    again.state_dir = state_dir;
    again.prefix = prefix;
    harness_start_opts(&h, &again);
    TEST_CHECK(harness_wait_full(&h, FILL_TIMEOUT_USEC), "the pool did not fill again");
    uint8_t now[32];
    TEST_CHECK(pool_template_identity(h.pool, h.shape.name, now, &err) == 0, "template: %s",
               err ? err->message : "?");
    printf("after the restart the pool's template is %s\n",
           memcmp(now, from_tmpl, sizeof(now)) ? "another" : "the same (!)");

    c = resume_from("state", &resume_ms); /* the good file, after all that */
    TEST_CHECK(strcmp(sh(c, "cat flast f1", NULL), "last\none\n") == 0, "files lost at the end");
    check_counter_moves(c);
    sh(c, "echo again > fagain", NULL);
    runner_client_free(c);
    pause_into(name, "state", &st); /* a guest on a kept template pauses again */
    c = resume_from("state", &resume_ms);
    TEST_CHECK(strcmp(sh(c, "cat fagain f1", NULL), "again\none\n") == 0, "files lost");
    check_counter_moves(c);
    runner_client_free(c);
    cleanup();
    name[0] = '\0';
    harness_stop(&h);
    harness_cleanup(&h);
    printf("PASS\n");
    return 0;
}
