/* The parked process (runner.proto Prestart, Exec.adopt): one exec started before the guest
 * is saved, held with nothing read from it until a session's Exec adopts it. It lives in the
 * exec table under EXEC_ID_PARKED, hidden from the host's Stdin and Signal (exec_find skips
 * it); exec.c asks here at the few points where a parked exec differs. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "exec_internal.h"
#include "reply.h"
#include "timeutil.h"
#include "wspath.h"

/* argv as one buffer of NUL-ended strings: what Exec.adopt compares. */
static char *
argv_key(char *const *argv, size_t n, size_t *ret_len)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += strlen(argv[i]) + 1;
    char *key = malloc(len ? len : 1), *p = key;
    for (size_t i = 0; key && i < n; i++)
        p = stpcpy(p, argv[i]) + 1;
    *ret_len = len;
    return key;
}

int
exec_park(ExecTable *t, const ExecContext *ctx, char **argv, size_t n_argv, uint32_t req_id,
          Error **errp)
{
    Stockade__Runner__Exec x = STOCKADE__RUNNER__EXEC__INIT;
    size_t len;

    for (size_t i = 0; i < EXEC_TABLE_MAX; i++)
        if (t->slots[i] && t->slots[i]->park != PARK_NONE)
            return error_set(errp, E_CONFLICT, 0, "a process is parked already");
    _cleanup_free_ char *key = argv_key(argv, n_argv, &len);
    if (!key)
        return error_set(errp, E_UNAVAILABLE, ENOMEM, "prestart");
    x.exec_id = EXEC_ID_PARKED;
    x.argv = argv;
    x.n_argv = n_argv;
    x.cwd = "";
    x.stdin_open = true;
    Exec *e;
    if (exec_start_new(t, ctx, &x, req_id, &e, errp) < 0)
        return -1;
    e->park = PARK_WAITING;
    e->park_argv = TAKE_PTR(key);
    e->park_argv_len = len;
    e->park_uid = ctx->uid;
    e->park_gid = ctx->gid;
    return 0;
}

int
exec_park_on_ready(ExecTable *t, Exec *e, Error **errp)
{
    int avail = 0;

    if (e->park != PARK_WAITING || e->state != EXEC_RUNNING)
        return 0;
    /* readable with nothing to read: its stdout closed without a word (it exited, say); the
     * reap answers the Prestart with an Error */
    if (ioctl(e->out_fd[EXEC_OUT_STDOUT], FIONREAD, &avail) < 0 || avail <= 0) {
        e->park_silent = true;
        return 0;
    }
    e->park = PARK_READY;
    uint32_t req_id = e->req_id;
    e->req_id = 0;
    if (reply_ack(t->q, req_id) < 0)
        return error_set(errp, E_INTERNAL, errno, "prestart: queue ack");
    return 0;
}

int
exec_park_on_exit(ExecTable *t, Exec *e, Error **errp)
{
    if (e->park == PARK_WAITING &&
        reply_error(t->q, e->req_id, ERRC(INTERNAL),
                    "prestart: the process exited before it was ready") < 0)
        return error_set(errp, E_INTERNAL, errno, "prestart: queue error");
    (void) tree_signal(&e->tree, SIGKILL); /* what it left behind goes with it */
    return 0;
}

void
exec_park_warm(ExecTable *t)
{
    static const char line[] = "STOCKADE-WARMUP\n";

    for (size_t i = 0; i < EXEC_TABLE_MAX; i++) {
        Exec *e = t->slots[i];
        if (e && e->park == PARK_READY && e->in_fd >= 0)
            (void) exec_queue_stdin(t, e, (const uint8_t *) line, sizeof(line) - 1, NULL);
    }
}

static Exec *
park_match(ExecTable *t, const ExecContext *ctx, const Stockade__Runner__Exec *x)
{
    size_t len;
    _cleanup_free_ char *key = argv_key(x->argv, x->n_argv, &len);

    for (size_t i = 0; key && i < EXEC_TABLE_MAX; i++) {
        Exec *e = t->slots[i];
        if (e && e->park == PARK_READY && e->park_uid == ctx->uid && e->park_gid == ctx->gid &&
            e->park_argv_len == len && memcmp(e->park_argv, key, len) == 0)
            return e;
    }
    return NULL;
}

/* The cwd the adopted kernel takes: under WS_HOME_PATH when the exec named it so and the
 * workspace is mounted there (getcwd() then says /home/user, as E2B programs expect, like a
 * spawned exec's: exec.c exec_cwd_by_path()); else the workspace path of cwd_rel. */
static bool
adopt_cwd_home(const ExecContext *ctx, const char *cwd)
{
    size_t n = strlen(WS_HOME_PATH);
    return ctx->home_mounted && strncmp(cwd, WS_HOME_PATH, n) == 0 && (!cwd[n] || cwd[n] == '/');
}

/* "STOCKADE-ADOPT <n>\n", then cwd NUL and each NAME=value NUL (runner.proto Exec.adopt). */
static char *
adopt_header(const ExecContext *ctx, const char *cwd, const char *cwd_rel, const EnvList *env,
             size_t *ret_len)
{
    const char *base = adopt_cwd_home(ctx, cwd) ? WS_HOME_PATH : ctx->home;
    size_t body = strlen(base) + (cwd_rel[0] ? 1 + strlen(cwd_rel) : 0) + 1;
    for (size_t i = 0; i < env->n; i++)
        body += strlen(env->items[i]) + 1;
    char head[48];
    int hl = snprintf(head, sizeof(head), "STOCKADE-ADOPT %zu\n", body);
    char *h = malloc((size_t) hl + body), *p = h;
    if (!h)
        return NULL;
    p = stpcpy(p, head);
    p = stpcpy(p, base);
    if (cwd_rel[0])
        p = stpcpy(stpcpy(p, "/"), cwd_rel);
    p++;
    for (size_t i = 0; i < env->n; i++)
        p = stpcpy(p, env->items[i]) + 1;
    *ret_len = (size_t) (p - h);
    return h;
}

int
exec_park_adopt(ExecTable *t, const ExecContext *ctx, const Stockade__Runner__Exec *x,
                const char *cwd_rel, uint32_t req_id, Error **errp)
{
    GuestMsg m = STOCKADE__RUNNER__GUEST_MSG__INIT;
    Stockade__Runner__ExecStarted started = STOCKADE__RUNNER__EXEC_STARTED__INIT;
    EnvList env = {0};
    size_t len;

    if (!x->adopt || !x->stdin_open)
        return 0;
    Exec *e = park_match(t, ctx, x);
    if (!e)
        return 0;
    if (env_build_exec(ctx->home, ctx->session_env, x->env, x->n_env, &env) < 0)
        return error_set(errp, E_UNAVAILABLE, ENOMEM, "exec %u", x->exec_id);
    _cleanup_free_ char *h = adopt_header(ctx, x->cwd, cwd_rel, &env, &len);
    env_list_clear(&env);
    if (!h)
        return error_set(errp, E_UNAVAILABLE, ENOMEM, "exec %u", x->exec_id);
    if (exec_queue_stdin(t, e, (const uint8_t *) h, len, errp) < 0)
        return -1; /* the process stays parked; nothing was sent */
    e->id = x->exec_id;
    e->park = PARK_NONE;
    e->start_usec = now_usec(); /* its wall time counts from the adoption */
    started.exec_id = e->id;
    started.pid = (uint32_t) e->pid;
    started.adopted = true;
    m.req_id = req_id;
    m.body_case = GBODY(EXEC_STARTED);
    m.exec_started = &started;
    if (outq_push_msg(t->q, &m) < 0)
        return error_set(errp, E_INTERNAL, errno, "exec %u: queue exec_started", e->id);
    return 1;
}
