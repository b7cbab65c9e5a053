/* Limits and schema of HostMsg (what the runner accepts). See runner.proto. */
#include <string.h>

#include "check.h"

#define FAIL(...) check_fail(err, errcap, __VA_ARGS__)

static int
check_session_config(const Stockade__Runner__SessionConfig *c, char *err, size_t errcap)
{
    size_t env_bytes;

    if (!check_known(&c->base))
        return FAIL("hello.config: unknown fields");
    if (!check_len(c->session_id, SESSION_ID_MAX_BYTES, false) ||
        !check_charset(c->session_id, "_-"))
        return FAIL("hello.config.session_id: 1..%d of [A-Za-z0-9_-]", SESSION_ID_MAX_BYTES);
    if (c->uid < EXEC_MIN_UID || c->gid < EXEC_MIN_UID)
        return FAIL("hello.config: uid and gid must be >= %d", EXEC_MIN_UID);
    if (!check_env(c->env, c->n_env, &env_bytes))
        return FAIL("hello.config.env: bad name, value or count");
    if (strlen(c->workspace_device) != 8 || strncmp(c->workspace_device, "/dev/vd", 7) != 0 ||
        c->workspace_device[7] < 'b' || c->workspace_device[7] > 'z')
        return FAIL("hello.config.workspace_device: must be /dev/vd[b-z]");
    if (!check_len(c->hostname, HOSTNAME_MAX_BYTES, true) || !check_charset(c->hostname, "-"))
        return FAIL("hello.config.hostname: up to %d of [A-Za-z0-9-]", HOSTNAME_MAX_BYTES);
    if (c->mirror) {
        if (!check_known(&c->mirror->base) || c->mirror->budget_bytes > MIRROR_BUDGET_MAX_BYTES ||
            c->mirror->max_file_bytes > c->mirror->budget_bytes)
            return FAIL("hello.config.mirror: budget over cap or max_file_bytes over budget");
    }
    if (c->egress && (!check_known(&c->egress->base) || c->egress->max_streams == 0 ||
                      c->egress->max_streams > TUNNEL_STREAMS_MAX))
        return FAIL("hello.config.egress.max_streams: 1..%d", TUNNEL_STREAMS_MAX);
    return 0;
}

static int
check_hello(const Stockade__Runner__Hello *h, char *err, size_t errcap)
{
    if (!check_known(&h->base))
        return FAIL("hello: unknown fields");
    if (h->wall_time_ns == 0)
        return FAIL("hello.wall_time_ns: must be set");
    if (h->entropy.len != HELLO_ENTROPY_BYTES)
        return FAIL("hello.entropy: must be exactly %d bytes", HELLO_ENTROPY_BYTES);
    if (!h->config)
        return FAIL("hello.config: required");
    return check_session_config(h->config, err, errcap);
}

static bool
check_pty_size(const Stockade__Runner__PtySize *p)
{
    return check_known(&p->base) && p->cols >= 1 && p->cols <= PTY_COLS_MAX && p->rows >= 1 &&
           p->rows <= PTY_ROWS_MAX;
}

static int
check_exec(const Stockade__Runner__Exec *e, char *err, size_t errcap)
{
    size_t total = 0;

    if (!check_known(&e->base))
        return FAIL("exec: unknown fields");
    if (e->exec_id == 0 || e->exec_id >= EXEC_ID_PARKED) /* the runner's own two ids */
        return FAIL("exec.exec_id: must be 1..%u", EXEC_ID_PARKED - 1);
    if (e->n_argv == 0 || e->n_argv > ARGV_MAX_COUNT)
        return FAIL("exec.argv: 1..%d entries", ARGV_MAX_COUNT);
    for (size_t i = 0; i < e->n_argv; i++) {
        if (!check_len(e->argv[i], ARG_MAX_BYTES, i > 0))
            return FAIL("exec.argv[%zu]: empty or over %u bytes", i, ARG_MAX_BYTES);
        total += strlen(e->argv[i]) + 1;
    }
    size_t env_bytes;
    if (!check_env(e->env, e->n_env, &env_bytes))
        return FAIL("exec.env: bad name, value or count");
    if (total + env_bytes > EXEC_TOTAL_MAX_BYTES)
        return FAIL("exec: argv and env over %u bytes", EXEC_TOTAL_MAX_BYTES);
    if (!check_len(e->cwd, PATH_MAX_BYTES, true) || (e->cwd[0] && e->cwd[0] != '/'))
        return FAIL("exec.cwd: must be empty or an absolute path of at most %d bytes",
                    PATH_MAX_BYTES);
    if (e->pty && !check_pty_size(e->pty))
        return FAIL("exec.pty: cols 1..%d, rows 1..%d", PTY_COLS_MAX, PTY_ROWS_MAX);
    if (e->pty && e->adopt)
        return FAIL("exec: pty and adopt together");
    return 0;
}

static int
check_file_put(const Stockade__Runner__FilePut *p, char *err, size_t errcap)
{
    if (!check_known(&p->base) || !msg_path_is_valid(p->path, false))
        return FAIL("file_put.path: not a valid workspace path");
    if (p->data.len > FILE_CHUNK_MAX_BYTES)
        return FAIL("file_put.data: over %u bytes", FILE_CHUNK_MAX_BYTES);
    if (p->truncate && p->offset != 0)
        return FAIL("file_put: truncate needs offset 0");
    if (p->offset > UINT64_MAX / 2 || (p->mode & ~0777u) != 0)
        return FAIL("file_put: offset or mode out of range");
    return 0;
}

static int
check_fs_op(const Stockade__Runner__FsOp *o, char *err, size_t errcap)
{
    bool root_ok = o->kind == STOCKADE__RUNNER__FS_OP__KIND__STAT ||
                   o->kind == STOCKADE__RUNNER__FS_OP__KIND__LIST;

    if (!check_known(&o->base))
        return FAIL("fs_op: unknown fields");
    if (o->kind < STOCKADE__RUNNER__FS_OP__KIND__STAT || o->kind > STOCKADE__RUNNER__FS_OP__KIND__MOVE)
        return FAIL("fs_op.kind: unknown");
    if (!msg_path_is_valid(o->path, root_ok))
        return FAIL("fs_op.path: not a valid workspace path");
    bool is_move = o->kind == STOCKADE__RUNNER__FS_OP__KIND__MOVE;
    if (is_move ? !msg_path_is_valid(o->path2, false) : o->path2[0] != '\0')
        return FAIL("fs_op.path2: required for MOVE only");
    return 0;
}

static int
check_argv_short(char *const *argv, size_t n, const char *what, char *err, size_t errcap)
{
    if (n > WARMUP_ARGV_MAX_COUNT)
        return FAIL("%s: at most %d entries", what, WARMUP_ARGV_MAX_COUNT);
    for (size_t i = 0; i < n; i++)
        if (!check_len(argv[i], WARMUP_ARG_MAX_BYTES, false))
            return FAIL("%s[%zu]: 1..%d bytes", what, i, WARMUP_ARG_MAX_BYTES);
    return 0;
}

static int
check_prepare(const Stockade__Runner__Prepare *p, char *err, size_t errcap)
{
    const char *d = p->workspace_device;
    if (!check_known(&p->base))
        return FAIL("prepare: unknown fields");
    if (strlen(d) != 8 || strncmp(d, "/dev/vd", 7) != 0 || d[7] < 'b' || d[7] > 'z')
        return FAIL("prepare.workspace_device: must be /dev/vd[b-z]");
    if (p->wall_time_ns == 0 || p->entropy.len != HELLO_ENTROPY_BYTES)
        return FAIL("prepare: needs wall_time_ns and exactly %d bytes of entropy",
                    HELLO_ENTROPY_BYTES);
    return check_argv_short(p->warmup_argv, p->n_warmup_argv, "prepare.warmup_argv", err, errcap);
}

static int
check_prestart(const Stockade__Runner__Prestart *p, char *err, size_t errcap)
{
    if (!check_known(&p->base))
        return FAIL("prestart: unknown fields");
    if (p->n_argv == 0)
        return FAIL("prestart.argv: 1..%d entries", WARMUP_ARGV_MAX_COUNT);
    if (p->uid < EXEC_MIN_UID || p->gid < EXEC_MIN_UID)
        return FAIL("prestart: uid and gid must be >= %d", EXEC_MIN_UID);
    return check_argv_short(p->argv, p->n_argv, "prestart.argv", err, errcap);
}

bool
msg_host_needs_req_id(int body_case)
{
    switch (body_case) {
    case STOCKADE__RUNNER__HOST_MSG__BODY_STDIN:
    case STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_OPEN_RESULT:
    case STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_DATA:
    case STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_CREDIT:
    case STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_CLOSE:
        return false;
    default:
        return true;
    }
}

static int
check_host_body(const HostMsg *m, char *err, size_t errcap)
{
    switch (m->body_case) {
    case STOCKADE__RUNNER__HOST_MSG__BODY_HELLO:
        return check_hello(m->hello, err, errcap);
    case STOCKADE__RUNNER__HOST_MSG__BODY_EXEC:
        return check_exec(m->exec, err, errcap);
    case STOCKADE__RUNNER__HOST_MSG__BODY_STDIN:
        if (!check_known(&m->stdin->base) || m->stdin->exec_id == 0 ||
            m->stdin->data.len > STDIN_CHUNK_MAX_BYTES)
            return FAIL("stdin: exec_id 0 or data over %u bytes", STDIN_CHUNK_MAX_BYTES);
        return 0;
    case STOCKADE__RUNNER__HOST_MSG__BODY_SIGNAL:
        if (!check_known(&m->signal->base) || m->signal->exec_id == 0 ||
            m->signal->signo < 1 || m->signal->signo > 64)
            return FAIL("signal: exec_id 0 or signo outside 1..64");
        return 0;
    case STOCKADE__RUNNER__HOST_MSG__BODY_RESIZE:
        if (!check_known(&m->resize->base) || m->resize->exec_id == 0 || !m->resize->size ||
            !check_pty_size(m->resize->size))
            return FAIL("resize: exec_id 0, or size not cols 1..%d, rows 1..%d", PTY_COLS_MAX,
                        PTY_ROWS_MAX);
        return 0;
    case STOCKADE__RUNNER__HOST_MSG__BODY_FILE_PUT:
        return check_file_put(m->file_put, err, errcap);
    case STOCKADE__RUNNER__HOST_MSG__BODY_FILE_GET:
        if (!check_known(&m->file_get->base) || !msg_path_is_valid(m->file_get->path, false) ||
            m->file_get->max_bytes == 0 || m->file_get->max_bytes > FILE_CHUNK_MAX_BYTES)
            return FAIL("file_get: bad path or max_bytes outside 1..%u", FILE_CHUNK_MAX_BYTES);
        return 0;
    case STOCKADE__RUNNER__HOST_MSG__BODY_FS_OP:
        return check_fs_op(m->fs_op, err, errcap);
    case STOCKADE__RUNNER__HOST_MSG__BODY_SHUTDOWN:
        return check_known(&m->shutdown->base) ? 0 : FAIL("shutdown: unknown fields");
    case STOCKADE__RUNNER__HOST_MSG__BODY_PING:
        return check_known(&m->ping->base) ? 0 : FAIL("ping: unknown fields");
    case STOCKADE__RUNNER__HOST_MSG__BODY_PREPARE:
        return check_prepare(m->prepare, err, errcap);
    case STOCKADE__RUNNER__HOST_MSG__BODY_PRESTART:
        return check_prestart(m->prestart, err, errcap);
    case STOCKADE__RUNNER__HOST_MSG__BODY_FINALIZE:
        if (!check_known(&m->finalize->base) || m->finalize->max_entries == 0 ||
            m->finalize->max_entries > FINALIZE_MAX_ENTRIES || m->finalize->max_path_bytes == 0 ||
            m->finalize->max_path_bytes > PATH_MAX_BYTES || m->finalize->max_depth == 0 ||
            m->finalize->max_depth > PATH_MAX_DEPTH)
            return FAIL("finalize: a cap outside its range");
        return 0;
    case STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_OPEN_RESULT:
        return check_tunnel_open_result(m->tunnel_open_result, err, errcap);
    case STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_DATA:
        return check_tunnel_data(m->tunnel_data, err, errcap);
    case STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_CREDIT:
        return check_tunnel_credit(m->tunnel_credit, err, errcap);
    case STOCKADE__RUNNER__HOST_MSG__BODY_TUNNEL_CLOSE:
        return check_tunnel_close(m->tunnel_close, err, errcap);
    default:
        return FAIL("host message without a body");
    }
}

int
msg_check_host(const HostMsg *m, char *err, size_t errcap)
{
    if (!check_known(&m->base))
        return FAIL("host message: unknown fields");
    if (check_host_body(m, err, errcap) < 0)
        return -1;
    if (msg_host_needs_req_id(m->body_case) != (m->req_id != 0))
        return FAIL("req_id must be 0 for stdin and tunnel messages, nonzero otherwise");
    return 0;
}
