/* Integration test: the real stockade-runner in host mode (--serve-fd on a socketpair, a
 * temporary workspace), driven through tests/lib/runner_client like the daemon drives a
 * guest. argv: RUNNER_PATH cgroup|pgroup. The cgroup run gives the runner a fresh cgroup v2
 * directory (--cgroup-root); the pgroup run exercises the fallback. Needs root (skips
 * otherwise). Fork bomb and memory hog run only where a pids/memory limit contains them.
 * This file: fixture, helpers, protocol tests; exec tests in runner_host_exec.c, file and
 * mirror tests in runner_host_files.c. */
#include "runner_host.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#define CGROUP2_MAGIC 0x63677270
#define CGROUP1_MAGIC 0x27e0eb
#define RH_PIDS_V1_MAX "300"
#define RH_MEMORY_LIMIT "268435456" /* 256 MiB for the runner and everything it runs */

Fixture fx;

/* ------------------------------------------------------------------ helpers */

const char *
rh_sleep_secs(int k)
{
    static char buf[32];
    snprintf(buf, sizeof(buf), "%d", 100000 + (int) (getpid() % 40000) * 20 + k);
    return buf;
}

GuestMsg *
rh_call(HostMsg *m)
{
    GuestMsg *reply = NULL;
    if (runner_client_call(fx.c, m, RH_TIMEOUT_MS, &reply) < 0)
        fail_msg("call: %s", runner_client_error(fx.c));
    return reply;
}

void
rh_expect_ack(GuestMsg *reply)
{
    if (reply->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR)
        fail_msg("expected Ack, got Error %d: %s", reply->error->code, reply->error->message);
    assert_int_equal(reply->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_ACK);
    msg_free_guest(reply);
}

void
rh_expect_error(GuestMsg *reply, int code)
{
    if (reply->body_case != STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR)
        fail_msg("expected Error %d, got body %d", code, reply->body_case);
    if ((int) reply->error->code != code)
        fail_msg("expected Error %d, got %d: %s", code, reply->error->code, reply->error->message);
    msg_free_guest(reply);
}

void
rh_ping(uint64_t nonce)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Ping ping = STOCKADE__RUNNER__PING__INIT;

    ping.nonce = nonce;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_PING;
    m.ping = &ping;
    GuestMsg *r = rh_call(&m);
    assert_int_equal(r->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_PONG);
    assert_int_equal(r->pong->nonce, nonce);
    msg_free_guest(r);
}

void
rh_signal(uint32_t exec_id, int signo)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Signal sig = STOCKADE__RUNNER__SIGNAL__INIT;

    sig.exec_id = exec_id;
    sig.signo = signo;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_SIGNAL;
    m.signal = &sig;
    rh_expect_ack(rh_call(&m));
}

static bool
rh_proc_matches(const char *pid, const char *needle)
{
    char path[64], buf[4096], state = 0;
    snprintf(path, sizeof(path), "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    if (fgets(buf, sizeof(buf), f)) {
        char *p = strrchr(buf, ')');
        state = p ? p[2] : 0;
    }
    fclose(f);
    snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || state == 'Z')
        return fd >= 0 ? (close(fd), false) : false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    for (ssize_t i = 0; i < n - 1; i++)
        buf[i] = buf[i] ? buf[i] : ' ';
    buf[n] = '\0';
    return strcmp(buf, needle) == 0;
}

int
rh_count_procs(const char *needle)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int n = 0;

    while (d && (de = readdir(d)))
        if (de->d_name[0] >= '1' && de->d_name[0] <= '9' && rh_proc_matches(de->d_name, needle))
            n++;
    if (d)
        closedir(d);
    return n;
}

bool
rh_wait_procs_gone(const char *needle, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        if (rh_count_procs(needle) == 0)
            return true;
        usleep(50 * 1000);
    }
    return false;
}

long
rh_runner_rss_kib(void)
{
    char path[64], line[256];
    long kib = -1;

    snprintf(path, sizeof(path), "/proc/%d/status", (int) fx.runner_pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

bool
rh_contained(const char *v2_file, const char *v1_group)
{
    char path[1024];

    if (v1_group)
        return true;
    if (!fx.cg_root)
        return false;
    snprintf(path, sizeof(path), "%s/%s", fx.cg_root, v2_file);
    return access(path, F_OK) == 0;
}

void
rh_drop_pending(void)
{
    GuestMsg *m;
    while (runner_client_next(fx.c, 0, &m) == 0)
        msg_free_guest(m);
}

static void
rh_build_env(const char *const *env, Stockade__Runner__EnvVar *vars,
             Stockade__Runner__EnvVar **ptrs, char names[][64], size_t *n)
{
    for (*n = 0; env && env[*n]; (*n)++) {
        const char *eq = strchr(env[*n], '=');
        snprintf(names[*n], 64, "%.*s", (int) (eq - env[*n]), env[*n]);
        vars[*n] = (Stockade__Runner__EnvVar) STOCKADE__RUNNER__ENV_VAR__INIT;
        vars[*n].name = names[*n];
        vars[*n].value = (char *) eq + 1;
        ptrs[*n] = &vars[*n];
    }
}

static void
rh_fill_exec(Stockade__Runner__Exec *x, uint32_t id, const char *const *argv)
{
    size_t n_argv = 0;
    while (argv[n_argv])
        n_argv++;
    x->exec_id = id;
    x->argv = (char **) argv;
    x->n_argv = n_argv;
    x->cwd = "";
}

uint32_t
rh_exec_pty(const char *const *argv, uint32_t cols, uint32_t rows)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Exec x = STOCKADE__RUNNER__EXEC__INIT;
    Stockade__Runner__PtySize size = STOCKADE__RUNNER__PTY_SIZE__INIT;
    uint32_t id = fx.next_exec_id++;

    rh_fill_exec(&x, id, argv);
    size.cols = cols;
    size.rows = rows;
    x.pty = &size;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &x;
    GuestMsg *r = rh_call(&m);
    if (r->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR)
        fail_msg("exec %s: Error %d: %s", argv[0], r->error->code, r->error->message);
    assert_int_equal(r->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED);
    msg_free_guest(r);
    return id;
}

GuestMsg *
rh_resize(uint32_t exec_id, uint32_t cols, uint32_t rows)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Resize rs = STOCKADE__RUNNER__RESIZE__INIT;
    Stockade__Runner__PtySize size = STOCKADE__RUNNER__PTY_SIZE__INIT;

    size.cols = cols;
    size.rows = rows;
    rs.exec_id = exec_id;
    rs.size = &size;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_RESIZE;
    m.resize = &rs;
    return rh_call(&m);
}

void
rh_send_exec_only(const char *const *argv)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Exec x = STOCKADE__RUNNER__EXEC__INIT;

    rh_fill_exec(&x, fx.next_exec_id++, argv);
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &x;
    if (runner_client_send(fx.c, &m, RH_TIMEOUT_MS, NULL) < 0)
        fail_msg("send exec: %s", runner_client_error(fx.c));
}

static GuestMsg *
rh_send_exec(uint32_t id, const char *const *argv, const char *const *env, const char *cwd,
             bool stdin_open)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Exec x = STOCKADE__RUNNER__EXEC__INIT;
    Stockade__Runner__EnvVar vars[8], *ptrs[8];
    char names[8][64];
    size_t n_env;

    rh_build_env(env, vars, ptrs, names, &n_env);
    rh_fill_exec(&x, id, argv);
    x.env = ptrs;
    x.n_env = n_env;
    x.cwd = (char *) (cwd ? cwd : "");
    x.stdin_open = stdin_open;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_EXEC;
    m.exec = &x;
    return rh_call(&m);
}

uint32_t
rh_exec(const char *const *argv, const char *const *env, const char *cwd, bool stdin_open)
{
    uint32_t id = fx.next_exec_id++;
    GuestMsg *r = rh_send_exec(id, argv, env, cwd, stdin_open);

    if (r->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR)
        fail_msg("exec %s: Error %d: %s", argv[0], r->error->code, r->error->message);
    assert_int_equal(r->body_case, STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED);
    assert_int_equal(r->exec_started->exec_id, id);
    assert_true(r->exec_started->pid > 1);
    msg_free_guest(r);
    return id;
}

int
rh_exec_error(const char *const *argv, const char *cwd)
{
    GuestMsg *r = rh_send_exec(fx.next_exec_id++, argv, NULL, cwd, false);
    if (r->body_case != STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR)
        fail_msg("exec %s: expected an Error, got body %d", argv[0], r->body_case);
    int code = (int) r->error->code;
    msg_free_guest(r);
    return code;
}

static void
rh_append(char **buf, size_t *len, const ProtobufCBinaryData *d)
{
    *buf = realloc(*buf, *len + d->len + 1);
    assert_non_null(*buf);
    memcpy(*buf + *len, d->data, d->len);
    *len += d->len;
    (*buf)[*len] = '\0';
}

void
rh_collect(uint32_t exec_id, int timeout_ms, ExecResult *ret)
{
    GuestMsg *m;

    *ret = (ExecResult){.out = calloc(1, 1), .err = calloc(1, 1)};
    if (runner_client_wait_for(fx.c, STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT, exec_id,
                               timeout_ms, &m) < 0)
        fail_msg("exec %u: no ExecExit: %s", exec_id, runner_client_error(fx.c));
    ret->exit_code = m->exec_exit->exit_code;
    ret->signal = m->exec_exit->signal;
    ret->max_rss_kib = m->exec_exit->max_rss_kib;
    ret->cpu_user_usec = m->exec_exit->cpu_user_usec;
    msg_free_guest(m);
    /* Every Output of the exec came before its ExecExit, so it is all kept already. */
    while (runner_client_wait_for(fx.c, STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT, exec_id, 0, &m) ==
           0) {
        bool out = m->output->stream == STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT;
        rh_append(out ? &ret->out : &ret->err, out ? &ret->out_len : &ret->err_len,
                  &m->output->data);
        msg_free_guest(m);
    }
}

void
rh_result_free(ExecResult *r)
{
    free(r->out);
    free(r->err);
}

void
rh_sh(const char *script, ExecResult *ret)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    rh_collect(rh_exec(argv, NULL, NULL, false), RH_TIMEOUT_MS, ret);
}

/* ------------------------------------------------------------------ cgroups for the test */

static bool
rh_fs_is(const char *path, long magic)
{
    struct statfs s;
    return statfs(path, &s) == 0 && s.f_type == magic;
}

/* This process's cgroup path for a v1 controller ("pids") or v2 ("" ), from /proc/self/cgroup. */
static bool
rh_own_cgroup(const char *controller, char *out, size_t cap)
{
    char line[512];
    bool found = false;
    FILE *f = fopen("/proc/self/cgroup", "r");

    while (f && !found && fgets(line, sizeof(line), f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        line[strcspn(c2 + 1, "\n") + (size_t) (c2 + 1 - line)] = '\0';
        if (strcmp(c1 + 1, controller) == 0) {
            snprintf(out, cap, "%s", c2 + 1);
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

static int
rh_write_file(const char *dir, const char *file, const char *value)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, value, strlen(value));
    close(fd);
    return n == (ssize_t) strlen(value) ? 0 : -1;
}

/* A fresh child cgroup of ours: v1 under /sys/fs/cgroup/<controller>, v2 at mount. */
static char *
rh_make_cgroup(const char *mount, const char *controller)
{
    char own[512], *path = NULL;
    long magic = controller[0] ? CGROUP1_MAGIC : CGROUP2_MAGIC;

    if (!rh_fs_is(mount, magic) || !rh_own_cgroup(controller, own, sizeof(own)))
        return NULL;
    if (asprintf(&path, "%s%s/stockade-rh-%d", mount, strcmp(own, "/") ? own : "", (int) getpid()) <
        0)
        return NULL;
    if (mkdir(path, 0755) < 0) {
        free(path);
        return NULL;
    }
    return path;
}

static const char *
rh_cgroup2_mount(void)
{
    if (rh_fs_is("/sys/fs/cgroup", CGROUP2_MAGIC))
        return "/sys/fs/cgroup";
    return rh_fs_is("/sys/fs/cgroup/unified", CGROUP2_MAGIC) ? "/sys/fs/cgroup/unified" : NULL;
}

static void
rh_setup_cgroups(void)
{
    if (fx.cgroup_mode) {
        const char *mnt = rh_cgroup2_mount();
        fx.cg_root = mnt ? rh_make_cgroup(mnt, "") : NULL;
        if (!fx.cg_root)
            test_skip("no writable cgroup v2 hierarchy for --cgroup-root");
        /* Where the v2 controllers exist, they bound everything the runner starts. */
        (void) rh_write_file(fx.cg_root, "cgroup.subtree_control", "+pids +memory");
        (void) rh_write_file(fx.cg_root, "pids.max", RH_PIDS_V1_MAX);
        (void) rh_write_file(fx.cg_root, "memory.max", RH_MEMORY_LIMIT);
    }
    /* v1 groups holding the runner itself (hybrid hosts like this one). */
    fx.pids_v1 = rh_make_cgroup("/sys/fs/cgroup/pids", "pids");
    if (fx.pids_v1 && rh_write_file(fx.pids_v1, "pids.max", RH_PIDS_V1_MAX) < 0)
        fx.pids_v1 = (rmdir(fx.pids_v1), free(fx.pids_v1), NULL);
    fx.mem_v1 = rh_make_cgroup("/sys/fs/cgroup/memory", "memory");
    if (fx.mem_v1 && rh_write_file(fx.mem_v1, "memory.limit_in_bytes", RH_MEMORY_LIMIT) < 0)
        fx.mem_v1 = (rmdir(fx.mem_v1), free(fx.mem_v1), NULL);
}

/* Kills whatever is still in a test group (a runner that had to be SIGKILLed leaves its
 * execs behind in host mode; in a guest they die with PID 1). */
static void
rh_kill_group(const char *dir)
{
    char path[1024];
    int pid;

    if (!dir)
        return;
    if (rh_write_file(dir, "cgroup.kill", "1") == 0)
        return; /* cgroup v2: the whole subtree */
    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    for (int round = 0; round < 50; round++) {
        FILE *f = fopen(path, "r");
        bool any = false;
        while (f && fscanf(f, "%d", &pid) == 1)
            any = kill(pid, SIGKILL) == 0 || any;
        if (f)
            fclose(f);
        if (!any)
            return;
        usleep(20 * 1000);
    }
}

/* Removes a test group and the exec-* groups the runner may have left in it. */
static void
rh_remove_cgroup(char **path)
{
    struct dirent *de;

    if (!*path)
        return;
    DIR *d = opendir(*path);
    while (d && (de = readdir(d))) {
        char child[1024];
        if (strncmp(de->d_name, "exec-", 5) != 0)
            continue;
        snprintf(child, sizeof(child), "%s/%s", *path, de->d_name);
        for (int i = 0; i < 100 && rmdir(child) < 0 && errno == EBUSY; i++)
            usleep(20 * 1000);
    }
    if (d)
        closedir(d);
    for (int i = 0; i < 100 && rmdir(*path) < 0 && errno == EBUSY; i++)
        usleep(20 * 1000);
    free(*path);
    *path = NULL;
}

/* ------------------------------------------------------------------ runner process */

_Noreturn static void
rh_runner_child(int fd)
{
    char self[16];
    snprintf(self, sizeof(self), "%d", (int) getpid());
    if (fx.pids_v1)
        (void) rh_write_file(fx.pids_v1, "cgroup.procs", self);
    if (fx.mem_v1)
        (void) rh_write_file(fx.mem_v1, "cgroup.procs", self);
    if (dup2(fd, 3) < 0)
        _exit(126);
    const char *debug = getenv("STOCKADE_RUNNER_DEBUG") ? "--debug" : NULL;
    if (fx.cg_root)
        execl(fx.runner_path, "stockade-runner", "--serve-fd", "3", "--workspace", fx.ws,
              "--cgroup-root", fx.cg_root, debug, (char *) NULL);
    else
        execl(fx.runner_path, "stockade-runner", "--serve-fd", "3", "--workspace", fx.ws, debug,
              (char *) NULL);
    _exit(127);
}

static void
rh_start_runner(void)
{
    int sv[2];

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        fail_msg("socketpair: %m");
    fx.runner_pid = fork();
    if (fx.runner_pid < 0)
        fail_msg("fork: %m");
    if (fx.runner_pid == 0)
        rh_runner_child(sv[1]);
    close(sv[1]);
    fx.c = runner_client_new(sv[0]);
    assert_non_null(fx.c);
}

static void
rh_hello(void)
{
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Hello h = STOCKADE__RUNNER__HELLO__INIT;
    Stockade__Runner__SessionConfig cfg = STOCKADE__RUNNER__SESSION_CONFIG__INIT;
    Stockade__Runner__MirrorConfig mirror = STOCKADE__RUNNER__MIRROR_CONFIG__INIT;
    Stockade__Runner__EnvVar var = STOCKADE__RUNNER__ENV_VAR__INIT, *vars[] = {&var};
    uint8_t entropy[HELLO_ENTROPY_BYTES] = {1, 2, 3};

    var.name = "SESSION_VAR";
    var.value = "from-session";
    mirror.budget_bytes = RH_MIRROR_BUDGET_BYTES;
    mirror.max_file_bytes = RH_MIRROR_MAX_FILE_BYTES;
    cfg.session_id = "rh-session";
    cfg.uid = RH_UID;
    cfg.gid = RH_GID;
    cfg.env = vars;
    cfg.n_env = 1;
    cfg.workspace_device = "/dev/vdb"; /* ignored in host mode */
    cfg.mirror = &mirror;
    h.wall_time_ns = 1; /* host mode must not set the clock: the test would notice */
    h.entropy = (ProtobufCBinaryData){sizeof(entropy), entropy};
    h.config = &cfg;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_HELLO;
    m.hello = &h;
    rh_expect_ack(rh_call(&m));
    rh_expect_error(rh_call(&m), STOCKADE__RUNNER__ERROR__CODE__NOT_READY); /* twice */
}

/* ------------------------------------------------------------------ group fixture */

static int
rh_group_setup(void **state)
{
    (void) state;
    char tmpl[] = "/tmp/stockade-rh-ws.XXXXXX"; /* /tmp: the session user must reach it */

    if (geteuid() != 0)
        test_skip("the runner needs root to switch to the session user");
    if (access(fx.runner_path, X_OK) < 0)
        fail_msg("runner %s: %m", fx.runner_path);
    fx.ws = strdup(mkdtemp(tmpl) ? tmpl : "");
    if (!fx.ws[0])
        fail_msg("mkdtemp: %m");
    fx.next_exec_id = 1;
    rh_setup_cgroups();
    rh_start_runner();
    return 0;
}

static int
rh_group_teardown(void **state)
{
    (void) state;
    int status;

    runner_client_free(fx.c);
    fx.c = NULL;
    if (fx.runner_pid > 0 && waitpid(fx.runner_pid, &status, WNOHANG) == 0) {
        kill(fx.runner_pid, SIGKILL);
        waitpid(fx.runner_pid, &status, 0);
    }
    rh_kill_group(fx.cg_root);
    rh_kill_group(fx.pids_v1);
    rh_remove_cgroup(&fx.cg_root);
    rh_remove_cgroup(&fx.pids_v1);
    rh_remove_cgroup(&fx.mem_v1);
    if (fx.ws)
        test_rm_rf(fx.ws);
    free(fx.ws);
    return 0;
}

/* ------------------------------------------------------------------ protocol tests */

static void
test_sync_ready(void **state)
{
    (void) state;
    GuestMsg *ready;

    /* Twice: the second sync skips whatever the first left behind. */
    for (uint64_t nonce = 0x5eed0001; nonce <= 0x5eed0002; nonce++) {
        if (runner_client_sync(fx.c, nonce, RH_TIMEOUT_MS, &ready) < 0)
            fail_msg("sync: %s", runner_client_error(fx.c));
        assert_int_equal(ready->ready->nonce, nonce);
        assert_int_equal(ready->ready->protocol_version, PROTOCOL_VERSION);
        assert_string_equal(ready->ready->runner_version, STOCKADE_VERSION);
        msg_free_guest(ready);
    }
}

static void
test_before_hello(void **state)
{
    (void) state;
    const char *argv[] = {"/bin/true", NULL};

    rh_ping(7);
    assert_int_equal(rh_exec_error(argv, NULL), STOCKADE__RUNNER__ERROR__CODE__NOT_READY);
}

static void
test_hello(void **state)
{
    (void) state;
    struct stat st;

    rh_hello();
    assert_int_equal(stat(fx.ws, &st), 0);
    assert_int_equal(st.st_uid, RH_UID); /* the workspace root belongs to the session */
    assert_int_equal(st.st_gid, RH_GID);
}

static void
rh_send_frame(const uint8_t *payload, uint32_t len)
{
    uint8_t buf[256];
    frame_put_header(buf, len);
    memcpy(buf + FRAME_HDR_BYTES, payload, len);
    if (runner_client_send_raw(fx.c, buf, FRAME_HDR_BYTES + len, RH_TIMEOUT_MS) < 0)
        fail_msg("send: %s", runner_client_error(fx.c));
}

/* The next Error (mirror records that arrive meanwhile are skipped). */
static int
rh_next_error(GuestMsg **ret)
{
    return runner_client_wait_for(fx.c, STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR, 0, RH_TIMEOUT_MS,
                                  ret);
}

static void
test_malformed_frames(void **state)
{
    (void) state;
    static const uint8_t garbage[] = {0xff, 0xff, 0xff};
    /* req_id 77, then field 99 (unknown): decodes only to fail the checks */
    static const uint8_t unknown_field[] = {0x08, 77, 0x98, 0x06, 0x01};
    static const uint8_t huge_len[] = {0xff, 0xff, 0xff, 0xff};
    GuestMsg *m, *ready;

    rh_drop_pending();
    rh_send_frame(garbage, sizeof(garbage));
    assert_int_equal(rh_next_error(&m), 0);
    rh_expect_error(m, STOCKADE__RUNNER__ERROR__CODE__BAD_MESSAGE);
    rh_ping(8); /* the runner keeps serving */

    rh_send_frame(unknown_field, sizeof(unknown_field));
    assert_int_equal(rh_next_error(&m), 0);
    assert_int_equal(m->req_id, 77);
    rh_expect_error(m, STOCKADE__RUNNER__ERROR__CODE__BAD_MESSAGE);
    rh_ping(9);

    /* A length over the cap breaks framing: BAD_FRAME, then only a sync marker helps. */
    assert_int_equal(runner_client_send_raw(fx.c, huge_len, sizeof(huge_len), RH_TIMEOUT_MS), 0);
    assert_int_equal(rh_next_error(&m), 0);
    rh_expect_error(m, STOCKADE__RUNNER__ERROR__CODE__BAD_FRAME);
    if (runner_client_sync(fx.c, 0x5eed0003, RH_TIMEOUT_MS, &ready) < 0)
        fail_msg("resync: %s", runner_client_error(fx.c));
    msg_free_guest(ready);
    rh_ping(10);
}

/* A second runner whose peer closes the channel for good: it kills its execs and exits 0. */
static void
test_peer_close(void **state)
{
    (void) state;
    Fixture saved = fx;
    char tmpl[] = "/tmp/stockade-rh-ws2.XXXXXX", needle[64];
    const char *argv[] = {"sleep", rh_sleep_secs(98), NULL};
    GuestMsg *ready;
    int status = -1;

    snprintf(needle, sizeof(needle), "sleep %s", argv[1]);
    assert_non_null(mkdtemp(tmpl));
    fx.ws = tmpl; /* the runner child joins no test cgroup: fallback mode, no limits needed */
    fx.cg_root = fx.pids_v1 = fx.mem_v1 = NULL;
    rh_start_runner();
    bool synced = runner_client_sync(fx.c, 0x5eed0099, RH_TIMEOUT_MS, &ready) == 0;
    if (synced) {
        msg_free_guest(ready);
        rh_hello();
        (void) rh_exec(argv, NULL, NULL, false);
    }
    runner_client_free(fx.c);
    pid_t pid = waitpid(fx.runner_pid, &status, 0);
    test_rm_rf(tmpl);
    fx = saved;
    assert_true(synced);
    assert_true(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(rh_wait_procs_gone(needle, 5000));
}

static void
test_shutdown(void **state)
{
    (void) state;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__Shutdown sd = STOCKADE__RUNNER__SHUTDOWN__INIT;
    const char *argv[] = {"sleep", rh_sleep_secs(99), NULL};
    char needle[64];
    int status;

    snprintf(needle, sizeof(needle), "sleep %s", argv[1]);
    (void) rh_exec(argv, NULL, NULL, false); /* Shutdown kills what still runs */
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_SHUTDOWN;
    m.shutdown = &sd;
    rh_expect_ack(rh_call(&m));
    assert_int_equal(waitpid(fx.runner_pid, &status, 0), fx.runner_pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    fx.runner_pid = 0;
    assert_true(rh_wait_procs_gone(needle, 5000));
}

int
main(int argc, char **argv)
{
    static const struct CMUnitTest first[] = {
        cmocka_unit_test(test_sync_ready),
        cmocka_unit_test(test_before_hello),
    };
    static const struct CMUnitTest hello[] = {
        cmocka_unit_test(test_hello),
    };
    static const struct CMUnitTest last[] = {
        cmocka_unit_test(test_malformed_frames),
        cmocka_unit_test(test_peer_close),
        cmocka_unit_test(test_shutdown),
    };
    size_t n = ELEMENTSOF_RH(first) + 1 + ELEMENTSOF_RH(hello) + 1 + rh_exec_tests_count +
               rh_pty_tests_count + rh_files_tests_count + ELEMENTSOF_RH(last);
    struct CMUnitTest *all = calloc(n, sizeof(*all));
    size_t k = 0;

    if (argc != 3 || (strcmp(argv[2], "cgroup") && strcmp(argv[2], "pgroup"))) {
        fprintf(stderr, "usage: %s RUNNER cgroup|pgroup\n", argv[0]);
        return 2;
    }
    fx.runner_path = argv[1];
    fx.cgroup_mode = strcmp(argv[2], "cgroup") == 0;
    memcpy(all + k, first, sizeof(first)), k += ELEMENTSOF_RH(first);
    all[k++] = rh_park_before_hello[0];
    memcpy(all + k, hello, sizeof(hello)), k += ELEMENTSOF_RH(hello);
    all[k++] = rh_park_after_hello[0];
    memcpy(all + k, rh_exec_tests, rh_exec_tests_count * sizeof(*all)), k += rh_exec_tests_count;
    memcpy(all + k, rh_pty_tests, rh_pty_tests_count * sizeof(*all)), k += rh_pty_tests_count;
    memcpy(all + k, rh_files_tests, rh_files_tests_count * sizeof(*all)), k += rh_files_tests_count;
    memcpy(all + k, last, sizeof(last));
    int failed = _cmocka_run_group_tests(argv[2], all, n, rh_group_setup, rh_group_teardown);
    free(all);
    return failed;
}
