/* The exec table: start, report, reap, finish, signal. Pipe I/O is in exec_io.c, the child
 * side in spawn.c, process trees in tree.c. See exec.h for what the host sees. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec_internal.h"
#include "fdutil.h"
#include "pty.h"
#include "reply.h"
#include "spawn.h"
#include "timeutil.h"
#include "wspath.h"

ExecTable *
exec_table_new(OutQueue *q, const char *cgroup_root, Error **errp)
{
    ExecTable *t = calloc(1, sizeof(*t));
    if (!t) {
        error_set(errp, E_INTERNAL, ENOMEM, "exec table");
        return NULL;
    }
    t->q = q;
    if (tree_root_open(cgroup_root, &t->root, errp) < 0) {
        free(t);
        return NULL;
    }
    return t;
}

static void
exec_free(ExecTable *t, Exec *e)
{
    exec_close_stdin(t, e);
    for (int s = 0; s < EXEC_OUT_COUNT; s++)
        exec_close_out(e, s);
    e->report_fd = safe_close(e->report_fd);
    e->pty_fd = safe_close(e->pty_fd);
    tree_destroy(&t->root, &e->tree);
    free(e->park_argv);
    free(e);
}

static void
exec_release(ExecTable *t, size_t slot)
{
    exec_free(t, t->slots[slot]);
    t->slots[slot] = NULL;
}

void
exec_table_free(ExecTable *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < EXEC_TABLE_MAX; i++)
        if (t->slots[i])
            exec_release(t, i);
    tree_root_close(&t->root);
    free(t);
}

/* The host's execs: a parked process is no exec of the host's until adopted. */
static ssize_t
exec_find(const ExecTable *t, uint32_t id)
{
    for (size_t i = 0; i < EXEC_TABLE_MAX; i++)
        if (t->slots[i] && t->slots[i]->park == PARK_NONE && t->slots[i]->id == id)
            return (ssize_t) i;
    return -1;
}

/* A free slot, or -1 (BUSY) when too many execs run or the table is full. */
static ssize_t
exec_free_slot(const ExecTable *t)
{
    size_t running = 0;
    ssize_t slot = -1;

    for (size_t i = 0; i < EXEC_TABLE_MAX; i++) {
        if (!t->slots[i])
            slot = slot < 0 ? (ssize_t) i : slot;
        else if (t->slots[i]->state != EXEC_LINGERING)
            running++;
    }
    return running >= EXEC_MAX_CONCURRENT ? -1 : slot;
}

typedef struct ExecPipes {
    int report[2], out[2], err[2], in[2];
} ExecPipes;

static void
exec_pipes_close(ExecPipes *p)
{
    int *fds[] = {p->report, p->out, p->err, p->in};
    for (size_t i = 0; i < ELEMENTSOF(fds); i++)
        fds[i][0] = safe_close(fds[i][0]), fds[i][1] = safe_close(fds[i][1]);
}

static int
exec_pipes_open(ExecPipes *p, bool stdin_open)
{
    *p = (ExecPipes){{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    if (pipe2(p->report, O_CLOEXEC) < 0 || pipe2(p->out, O_CLOEXEC) < 0 ||
        pipe2(p->err, O_CLOEXEC) < 0 || (stdin_open && pipe2(p->in, O_CLOEXEC) < 0))
        return -1;
    /* Only the runner's ends are non-blocking; the child's stay blocking. */
    if (fd_set_nonblock(p->report[0], true) < 0 || fd_set_nonblock(p->out[0], true) < 0 ||
        fd_set_nonblock(p->err[0], true) < 0 || (stdin_open && fd_set_nonblock(p->in[1], true) < 0))
        return -1;
    return 0;
}

/* Exec.pty: the report pipe as usual; the terminal's master as stdout (read) and as stdin
 * (written), one more dup of it for Resize; the slave is the child's fds 0-2 (out[1]). */
static int
exec_pipes_open_pty(ExecPipes *p, Exec *e, const ExecContext *ctx,
                    const Stockade__Runner__PtySize *size, Error **errp)
{
    PtyEnds pty;

    *p = (ExecPipes){{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    if (pipe2(p->report, O_CLOEXEC) < 0 || fd_set_nonblock(p->report[0], true) < 0)
        return error_set(errp, reply_category_from_errno(errno), errno, "exec %u: pipes", e->id);
    if (pty_open(size->cols, size->rows, ctx->uid, ctx->gid, &pty, errp) < 0)
        return -1;
    p->out[0] = pty.master;
    p->out[1] = pty.slave;
    p->in[1] = fcntl(pty.master, F_DUPFD_CLOEXEC, 3);
    e->pty_fd = fcntl(pty.master, F_DUPFD_CLOEXEC, 3);
    if (p->in[1] < 0 || e->pty_fd < 0)
        return error_set(errp, reply_category_from_errno(errno), errno, "exec %u: pty", e->id);
    return 0;
}

/* NULL-terminated argv pointing into the request (alive until after the spawn). */
static char **
exec_argv(const Stockade__Runner__Exec *x)
{
    char **argv = calloc(x->n_argv + 1, sizeof(*argv));
    if (argv)
        memcpy(argv, x->argv, x->n_argv * sizeof(*argv));
    return argv;
}

/* Starts the child; on success the Exec owns the runner's pipe ends. */
static int
exec_launch(Exec *e, const SpawnSpec *spec, ExecPipes *p)
{
    e->start_usec = now_usec();
    pid_t pid = spawn_start(spec);
    if (pid < 0)
        return -1;
    e->pid = e->tree.leader = pid;
    e->tree.leader_alive = true;
    e->tree.procs_fd = safe_close(e->tree.procs_fd);
    e->report_fd = TAKE_FD(p->report[0]);
    e->out_fd[EXEC_OUT_STDOUT] = TAKE_FD(p->out[0]);
    e->out_fd[EXEC_OUT_STDERR] = TAKE_FD(p->err[0]);
    e->in_fd = TAKE_FD(p->in[1]);
    return 0;
}

/* Where the child changes directory by path instead of through the workspace fd: the
 * image's WorkingDir for an empty cwd, and a cwd under WS_HOME_PATH while the workspace is
 * mounted there (so getcwd() says /home/user/..., as E2B programs expect; the path was
 * checked by wspath_cwd_relative(), and the chdir is the user's own, after the id change). */
static const char *
exec_cwd_by_path(const ExecContext *ctx, const char *cwd)
{
    size_t n = strlen(WS_HOME_PATH);
    if (!cwd[0])
        return ctx->default_cwd;
    if (ctx->home_mounted && strncmp(cwd, WS_HOME_PATH, n) == 0 && (!cwd[n] || cwd[n] == '/'))
        return cwd;
    return NULL;
}

static bool
exec_env_has(const Stockade__Runner__Exec *x, const char *name)
{
    for (size_t i = 0; i < x->n_env; i++)
        if (strcmp(x->env[i]->name, name) == 0)
            return true;
    return false;
}

static int
exec_spawn(Exec *e, const ExecContext *ctx, const Stockade__Runner__Exec *x, const char *cwd_rel,
           Error **errp)
{
    _cleanup_free_ char **argv = exec_argv(x);
    EnvList env = {0};
    ExecPipes p;
    int r = -1;

    if (!argv || env_build_exec(ctx->home, ctx->session_env, x->env, x->n_env, &env) < 0 ||
        (x->pty && !exec_env_has(x, "TERM") && env_list_set(&env, "TERM", EXEC_PTY_TERM) < 0)) {
        env_list_clear(&env);
        return error_set(errp, E_UNAVAILABLE, ENOMEM, "exec %u", x->exec_id);
    }
    if (x->pty) {
        r = exec_pipes_open_pty(&p, e, ctx, x->pty, errp);
    } else if ((r = exec_pipes_open(&p, x->stdin_open)) < 0) {
        error_set(errp, reply_category_from_errno(errno), errno, "exec %u: pipes", x->exec_id);
    }
    if (r == 0) {
        SpawnSpec spec = {
            .argv = argv,
            .envp = env.items,
            .path_var = env_list_get(&env, "PATH"),
            .ws_fd = ctx->ws_fd,
            .cwd_rel = cwd_rel,
            .cwd_abs = exec_cwd_by_path(ctx, x->cwd),
            .uid = ctx->uid,
            .gid = ctx->gid,
            .stdin_fd = x->pty ? p.out[1] : p.in[0],
            .stdout_fd = p.out[1],
            .stderr_fd = x->pty ? p.out[1] : p.err[1],
            .ctty = x->pty != NULL,
            .report_fd = p.report[1],
            .cgroup_procs_fd = e->tree.procs_fd,
        };
        r = exec_launch(e, &spec, &p);
        if (r < 0)
            error_set(errp, E_UNAVAILABLE, errno, "exec %u: spawn", x->exec_id);
    }
    exec_pipes_close(&p);
    env_list_clear(&env);
    return r;
}

int
exec_start_new(ExecTable *t, const ExecContext *ctx, const Stockade__Runner__Exec *x,
               uint32_t req_id, Exec **ret, Error **errp)
{
    const char *cwd_rel;

    if (exec_find(t, x->exec_id) >= 0)
        return error_set(errp, E_CONFLICT, 0, "exec %u already exists", x->exec_id);
    if (!wspath_cwd_relative(x->cwd, &cwd_rel))
        return error_set(errp, E_INVALID, 0, "cwd must be inside %s", WS_LOGICAL_PATH);
    int adopted = exec_park_adopt(t, ctx, x, cwd_rel, req_id, errp);
    if (adopted != 0)
        return adopted < 0 ? -1 : 0;
    ssize_t slot = exec_free_slot(t);
    if (slot < 0)
        return error_set(errp, E_UNAVAILABLE, 0, "too many execs (max %d)", EXEC_MAX_CONCURRENT);
    Exec *e = calloc(1, sizeof(*e));
    if (!e)
        return error_set(errp, E_UNAVAILABLE, ENOMEM, "exec %u", x->exec_id);
    *e = (Exec){.id = x->exec_id,
                .req_id = req_id,
                .state = EXEC_STARTING,
                .report_fd = -1,
                .out_fd = {-1, -1},
                .in_fd = -1,
                .pty_fd = -1};
    if (tree_create(&t->root, x->exec_id, &e->tree, errp) < 0 ||
        exec_spawn(e, ctx, x, cwd_rel, errp) < 0) {
        exec_free(t, e);
        return -1;
    }
    t->slots[slot] = e;
    if (ret)
        *ret = e;
    return 0;
}

int
exec_start(ExecTable *t, const ExecContext *ctx, const Stockade__Runner__Exec *x, uint32_t req_id,
           Error **errp)
{
    return exec_start_new(t, ctx, x, req_id, NULL, errp);
}

/* The report pipe said EOF (running) or carried a SpawnReport (failed). */
static int
exec_resolve_start(ExecTable *t, Exec *e, Error **errp)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__ExecStarted started = STOCKADE__RUNNER__EXEC_STARTED__INIT;
    SpawnReport rep;
    ssize_t n;

    do
        n = read(e->report_fd, &rep, sizeof(rep));
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return 0;
    e->report_fd = safe_close(e->report_fd);
    if (n != 0) {
        bool whole = n == (ssize_t) sizeof(rep);
        int err = whole ? rep.err : EIO;
        e->state = EXEC_FAILED;
        exec_close_stdin(t, e);
        exec_close_out(e, EXEC_OUT_STDOUT);
        exec_close_out(e, EXEC_OUT_STDERR);
        ErrCode code = reply_code_from_category(reply_category_from_errno(err));
        if (whole && rep.stage != SPAWN_STAGE_EXEC && rep.stage != SPAWN_STAGE_CWD)
            code = ERRC(INTERNAL);
        if (reply_error(t->q, e->req_id, code, "exec %u: %s: %s", e->id,
                        spawn_stage_name(whole ? rep.stage : 0), strerror(err)) < 0)
            return error_set(errp, E_INTERNAL, errno, "exec %u: queue error", e->id);
        return 0;
    }
    e->state = EXEC_RUNNING;
    if (e->park != PARK_NONE)
        return 0; /* parked: the host hears of it when it is adopted */
    started.exec_id = e->id;
    started.pid = (uint32_t) e->pid;
    m.req_id = e->req_id;
    m.body_case = GBODY(EXEC_STARTED);
    m.exec_started = &started;
    if (outq_push_msg(t->q, &m) < 0)
        return error_set(errp, E_INTERNAL, errno, "exec %u: queue exec_started", e->id);
    return 0;
}

static int
exec_finish(ExecTable *t, size_t slot, Error **errp)
{
    Exec *e = t->slots[slot];
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__ExecExit x = STOCKADE__RUNNER__EXEC_EXIT__INIT;

    x.exec_id = e->id;
    if (WIFSIGNALED(e->wait_status)) {
        x.exit_code = -1;
        x.signal = WTERMSIG(e->wait_status);
    } else {
        x.exit_code = WEXITSTATUS(e->wait_status);
    }
    if (tree_cpu_usec(&e->tree, &x.cpu_user_usec, &x.cpu_system_usec) < 0) {
        x.cpu_user_usec = (uint64_t) e->ru.ru_utime.tv_sec * USEC_PER_SEC + e->ru.ru_utime.tv_usec;
        x.cpu_system_usec =
            (uint64_t) e->ru.ru_stime.tv_sec * USEC_PER_SEC + e->ru.ru_stime.tv_usec;
    }
    x.max_rss_kib = (uint64_t) e->ru.ru_maxrss;
    x.wall_usec = e->exit_usec - e->start_usec;
    m.body_case = GBODY(EXEC_EXIT);
    m.exec_exit = &x;
    int r = outq_push_msg(t->q, &m);
    if (r < 0)
        error_set(errp, E_INTERNAL, errno, "exec %u: queue exec_exit", e->id);
    if (tree_is_empty(&e->tree))
        exec_release(t, slot);
    else
        e->state = EXEC_LINGERING;
    return r;
}

/* Fallback mode: the runner's new children came from this exec's dying members. */
static void
exec_adopt_orphans(ExecTable *t, Exec *owner)
{
    pid_t kids[EXEC_ORPHANS_MAX];

    if (t->root.dir_fd >= 0)
        return; /* cgroups keep the tree whole */
    size_t n = tree_scan_children(getpid(), kids, ELEMENTSOF(kids));
    for (size_t i = 0; i < n; i++) {
        bool known = false;
        for (size_t s = 0; s < EXEC_TABLE_MAX && !known; s++)
            known = t->slots[s] && tree_has_pid(&t->slots[s]->tree, kids[i]);
        if (!known)
            (void) tree_add_orphan(&owner->tree, kids[i]);
    }
}

static int
exec_on_leader_exit(ExecTable *t, size_t slot, int status, const struct rusage *ru, Error **errp)
{
    Exec *e = t->slots[slot];

    e->tree.leader_alive = false;
    e->wait_status = status;
    e->ru = *ru;
    e->exit_usec = now_usec();
    if (e->state == EXEC_STARTING && exec_resolve_start(t, e, errp) < 0)
        return -1;
    if (e->state == EXEC_STARTING && /* cannot happen: the dead child closed the pipe */
        reply_error(t->q, e->req_id, ERRC(INTERNAL), "exec %u: no start report", e->id) < 0)
        error_set(errp, E_INTERNAL, errno, "exec %u: queue error", e->id);
    if (e->state == EXEC_FAILED || e->state == EXEC_STARTING) {
        exec_release(t, slot); /* never started: no ExecExit */
        return 0;
    }
    if (e->park != PARK_NONE) { /* never adopted: no ExecExit either */
        int r = exec_park_on_exit(t, e, errp);
        exec_release(t, slot);
        return r;
    }
    e->state = EXEC_LEADER_EXITED;
    e->deadline_usec = e->exit_usec + EXEC_DRAIN_GRACE_MSEC * USEC_PER_MSEC;
    exec_close_stdin(t, e);
    exec_adopt_orphans(t, e);
    return 0;
}

static void
exec_on_orphan_exit(ExecTable *t, pid_t pid)
{
    for (size_t i = 0; i < EXEC_TABLE_MAX; i++)
        if (t->slots[i] && tree_forget_orphan(&t->slots[i]->tree, pid)) {
            exec_adopt_orphans(t, t->slots[i]);
            return;
        }
}

static void
exec_collect_lingering(ExecTable *t)
{
    for (size_t i = 0; i < EXEC_TABLE_MAX; i++)
        if (t->slots[i] && t->slots[i]->state == EXEC_LINGERING &&
            tree_is_empty(&t->slots[i]->tree))
            exec_release(t, i);
}

int
exec_reap(ExecTable *t, Error **errp)
{
    int status, r = 0;
    struct rusage ru;
    pid_t pid;

    while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
        ssize_t slot = -1;
        for (size_t i = 0; i < EXEC_TABLE_MAX && slot < 0; i++)
            if (t->slots[i] && t->slots[i]->tree.leader_alive && t->slots[i]->pid == pid)
                slot = (ssize_t) i;
        if (slot >= 0) {
            if (exec_on_leader_exit(t, (size_t) slot, status, &ru, errp) < 0)
                r = -1;
        } else {
            exec_on_orphan_exit(t, pid); /* any other zombie: reaped, as PID 1 must */
        }
    }
    exec_collect_lingering(t);
    return r;
}

int
exec_tick(ExecTable *t, uint64_t now, Error **errp)
{
    int r = 0;

    for (size_t i = 0; i < EXEC_TABLE_MAX; i++) {
        Exec *e = t->slots[i];
        if (!e || e->state != EXEC_LEADER_EXITED)
            continue;
        if (!e->draining && now >= e->deadline_usec)
            exec_start_drain(e);
        if (e->out_fd[EXEC_OUT_STDOUT] < 0 && e->out_fd[EXEC_OUT_STDERR] < 0 &&
            exec_finish(t, i, errp) < 0)
            r = -1;
    }
    return r;
}

int
exec_timeout_msec(const ExecTable *t, uint64_t now)
{
    uint64_t next = UINT64_MAX;

    for (size_t i = 0; i < EXEC_TABLE_MAX; i++) {
        const Exec *e = t->slots[i];
        if (e && e->state == EXEC_LEADER_EXITED && !e->draining)
            next = MIN(next, e->deadline_usec);
    }
    if (next == UINT64_MAX)
        return -1;
    return next <= now ? 0 : (int) ((next - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC);
}

bool
exec_wants_idle(const ExecTable *t)
{
    return tree_wants_spare(&t->root);
}

void
exec_prepare_next(ExecTable *t)
{
    tree_make_spare(&t->root);
}

int
exec_signal(ExecTable *t, uint32_t exec_id, int signo, Error **errp)
{
    ssize_t slot = exec_find(t, exec_id);
    if (slot < 0 || t->slots[slot]->state == EXEC_FAILED)
        return error_set(errp, E_NOT_FOUND, 0, "exec %u: no such exec", exec_id);
    return tree_signal(&t->slots[slot]->tree, signo);
}

int
exec_resize(ExecTable *t, uint32_t exec_id, uint32_t cols, uint32_t rows, Error **errp)
{
    ssize_t slot = exec_find(t, exec_id);
    if (slot < 0 || t->slots[slot]->state == EXEC_FAILED)
        return error_set(errp, E_NOT_FOUND, 0, "exec %u: no such exec", exec_id);
    if (t->slots[slot]->pty_fd < 0)
        return error_set(errp, E_NOT_FOUND, 0, "exec %u: has no terminal", exec_id);
    return pty_resize(t->slots[slot]->pty_fd, cols, rows, errp);
}

int
exec_stdin(ExecTable *t, uint32_t exec_id, const uint8_t *data, size_t len, bool eof, Error **errp)
{
    ssize_t slot = exec_find(t, exec_id);
    if (slot < 0 || t->slots[slot]->state == EXEC_FAILED)
        return error_set(errp, E_NOT_FOUND, 0, "exec %u: no such exec", exec_id);
    Exec *e = t->slots[slot];
    if (e->in_fd < 0 || e->in_eof)
        return error_set(errp, E_IO, 0, "exec %u: stdin is closed", exec_id);
    if (exec_queue_stdin(t, e, data, len, errp) < 0)
        return -1;
    e->in_eof = eof;
    return exec_flush_stdin(t, e, errp);
}

void
exec_kill_all(ExecTable *t)
{
    for (size_t i = 0; i < EXEC_TABLE_MAX; i++)
        if (t->slots[i] && t->slots[i]->state != EXEC_FAILED)
            (void) tree_signal(&t->slots[i]->tree, SIGKILL);
}

bool
exec_all_gone(const ExecTable *t)
{
    for (size_t i = 0; i < EXEC_TABLE_MAX; i++)
        if (t->slots[i] && !tree_is_empty(&t->slots[i]->tree))
            return false;
    return true;
}

bool
exec_any_draining(const ExecTable *t)
{
    for (size_t i = 0; i < EXEC_TABLE_MAX; i++)
        if (t->slots[i] && t->slots[i]->state == EXEC_LEADER_EXITED)
            return true;
    return false;
}

static size_t
exec_poll_one(ExecTable *t, struct pollfd *pfd, size_t n, size_t cap, size_t slot, int fd,
              short events, PollKind kind)
{
    if (fd < 0 || n >= cap || n >= EXEC_POLL_FDS_MAX)
        return n;
    pfd[n] = (struct pollfd){.fd = fd, .events = events};
    t->refs[n].slot = (uint16_t) slot;
    t->refs[n].kind = (uint8_t) kind;
    return n + 1;
}

size_t
exec_poll_add(ExecTable *t, struct pollfd *pfd, size_t cap)
{
    bool room = outq_has_room(t->q);
    size_t n = 0;

    for (size_t i = 0; i < EXEC_TABLE_MAX; i++) {
        Exec *e = t->slots[i];
        if (!e)
            continue;
        n = exec_poll_one(t, pfd, n, cap, i, e->report_fd, POLLIN, POLL_REPORT);
        if (e->in_len > 0)
            n = exec_poll_one(t, pfd, n, cap, i, e->in_fd, POLLOUT, POLL_STDIN);
        if (e->park != PARK_NONE) { /* nothing read: only whether it has spoken */
            if (e->park == PARK_WAITING && e->state == EXEC_RUNNING && !e->park_silent)
                n = exec_poll_one(t, pfd, n, cap, i, e->out_fd[0], POLLIN, POLL_PARKED);
            continue;
        }
        if (!room || e->state == EXEC_STARTING)
            continue; /* no Output before ExecStarted; none while the queue is full */
        n = exec_poll_one(t, pfd, n, cap, i, e->out_fd[0], POLLIN, POLL_STDOUT);
        n = exec_poll_one(t, pfd, n, cap, i, e->out_fd[1], POLLIN, POLL_STDERR);
    }
    return n;
}

static int
exec_poll_event(ExecTable *t, Exec *e, PollKind kind, Error **errp)
{
    switch (kind) {
    case POLL_REPORT:
        return e->state == EXEC_STARTING ? exec_resolve_start(t, e, errp) : 0;
    case POLL_STDIN:
        return e->in_fd >= 0 ? exec_flush_stdin(t, e, errp) : 0;
    case POLL_PARKED:
        return exec_park_on_ready(t, e, errp);
    case POLL_STDOUT:
    case POLL_STDERR: {
        int s = kind == POLL_STDOUT ? EXEC_OUT_STDOUT : EXEC_OUT_STDERR;
        if (e->out_fd[s] < 0 || !outq_has_room(t->q))
            return 0;
        return exec_read_output(t, e, s, errp);
    }
    }
    return 0;
}

int
exec_poll_handle(ExecTable *t, const struct pollfd *pfd, size_t n, Error **errp)
{
    int r = 0;

    for (size_t i = 0; i < n; i++) {
        Exec *e = t->slots[t->refs[i].slot];
        if (pfd[i].revents == 0 || !e || pfd[i].fd < 0)
            continue;
        if (exec_poll_event(t, e, (PollKind) t->refs[i].kind, errp) < 0)
            r = -1;
    }
    return r;
}
