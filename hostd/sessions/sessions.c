/* The sessions module: its life cycle (new, free; start and stop are sessions_lifecycle.c's),
 * creation, and the entry points the API calls. See sessions.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "message.h"
#include "owndir.h"
#include "session_internal.h"
#include "timeutil.h"

/* ------------------------------------------------------------------ life cycle */

/* The module's parts, each owned by one file (session_internal.h), in order. */
static int (*const sessions_parts_new[])(Sessions *m) = {
    sessions_queue_new,
    sessions_commit_new,
    sessions_watches_new,
    sessions_stop_new,
};

static int
sessions_init(Sessions *m, Error **errp)
{
    if (asprintf(&m->artifacts_dir, "%s/artifacts", m->cfg.state_dir) < 0) {
        m->artifacts_dir = NULL;
        return error_set(errp, E_INTERNAL, ENOMEM, "sessions");
    }
    /* root's alone (owndir.h): what is put in it by path must not be another user's to swap */
    _cleanup_close_ int artifacts_fd = -1;
    if (owndir_open(m->artifacts_dir, 0700, OWNDIR_CREATE | OWNDIR_SET_MODE, &artifacts_fd, errp) <
        0)
        return -1;
    for (size_t i = 0; i < ELEMENTSOF(sessions_parts_new); i++)
        if (sessions_parts_new[i](m) < 0)
            return error_set(errp, E_INTERNAL, ENOMEM, "sessions");
    return sessions_egress_init(m, errp);
}

int
sessions_new(Loop *l, WorkQueue *q, const SessionsHost *host, Store *store, EventHub *hub,
             const SessionsConfig *cfg, Sessions **ret, Error **errp)
{
    Sessions *m = calloc(1, sizeof(*m));
    if (!m)
        return error_set(errp, E_INTERNAL, ENOMEM, "sessions");
    *m = (Sessions){.loop = l, .q = q, .host = *host, .store = store, .hub = hub, .cfg = *cfg};
    m->cfg.db_path = NULL;
    if (!(m->cfg.state_dir = strdup(cfg->state_dir))) {
        free(m);
        return error_set(errp, E_INTERNAL, ENOMEM, "sessions");
    }
    if (sessions_init(m, errp) < 0) {
        sessions_free(m);
        return -1;
    }
    m->host.ops->set_on_idle(m->host.pool, sessions_on_pool_idle, m);
    *ret = m;
    return 0;
}

void
sessions_free(Sessions *m)
{
    if (!m)
        return;
    while (m->all)
        session_free(m->all);
    sessions_egress_free(m);
    sessions_queue_free(m);
    sessions_commit_free(m);
    sessions_watches_free(m);
    sessions_stop_free(m);
    artifacts_retention_stop(m);
    free((char *) m->cfg.state_dir);
    free(m->artifacts_dir);
    free(m);
}

int
sessions_create(Sessions *m, const SessionSpec *spec, char ret_id[SESSION_ID_BYTES],
                AdmitRefusal *ret_refusal, Error **errp)
{
    Session *s;

    if (m->stopping)
        return error_set(errp, E_UNAVAILABLE, 0, "the daemon is stopping");
    if (m->draining)
        return error_set(errp, E_UNAVAILABLE, 0,
                         "this host is draining (stockade drain): it takes no new sessions; "
                         "live ones run to their end");
    if (session_spec_check(m, spec, errp) < 0)
        return -1;
    if (!(s = session_alloc(m)))
        return error_set(errp, E_INTERNAL, ENOMEM, "session");
    if (session_new_id(s->rec.id) < 0 || session_spec_copy(&s->spec, spec) < 0) {
        session_free(s);
        return error_set(errp, E_INTERNAL, ENOMEM, "session");
    }
    SessionRecord *r = &s->rec;
    snprintf(r->tenant_id, sizeof(r->tenant_id), "%s", spec->tenant_id);
    snprintf(r->kind, sizeof(r->kind), "%s", spec->is_task ? "task" : "session");
    snprintf(r->pool, sizeof(r->pool), "%s", spec->pool);
    r->created_usec = (int64_t) wall_usec();
    r->timeout_usec = spec->timeout_usec ? spec->timeout_usec : m->cfg.default_timeout_usec;
    r->spec = session_spec_json(&s->spec);
    /* quota check + reservation + record, atomically, before any guest is touched */
    if (session_set_state(s, ST_PENDING, SESSION_END_NONE, errp) < 0 ||
        session_admit_record(s, ret_refusal, errp) < 0) {
        sessions_commit_now(m); /* the transaction the savepoint opened holds the write lock */
        session_free(s);
        return -1;
    }
    s->next = m->all;
    m->all = s;
    m->stats.created++;
    session_event(s, "session.created", 0, NULL, 0,
                  json_pack("{s:s,s:s,s:I}", "kind", r->kind, "pool", r->pool, "timeout_ms",
                            (json_int_t) (r->timeout_usec / 1000)));
    sessions_commit_now(m);
    memcpy(ret_id, r->id, SESSION_ID_BYTES);
    session_start_enqueue(s); /* and offered the idle guests */
    return 0;
}

/* ------------------------------------------------------------------ API entry points */

int
sessions_exec(Sessions *m, const char *tenant, const char *id, const ExecSpec *spec,
              uint32_t *ret_exec_id, Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (!s)
        return -1;
    if (s->spec.is_task)
        return error_set(errp, E_CONFLICT, 0, "a task runs its own command only");
    if (argv_check(spec->argv, spec->argc, spec->env, spec->n_env, spec->cwd, errp) < 0)
        return -1;
    if (spec->timeout_usec > m->cfg.max_timeout_usec)
        return error_set(errp, E_INVALID, 0, "exec timeout over the maximum");
    return session_exec_start(s, spec, false, NULL, ret_exec_id, errp);
}

static int
session_end_live(Sessions *m, const char *tenant, const char *id, SessionEndReason reason,
                 Error **errp)
{
    Session *s = sessions_find(m, tenant, id);
    if (!s)
        return error_set(errp, E_NOT_FOUND, 0, "no live session %.40s", id);
    if (!session_state_is_ending(s->state))
        session_end(s, reason);
    else if (reason == SESSION_END_CANCELLED) /* a hard stop never waits on the runner */
        (void) session_finalize_cancel(s);
    return 0; /* already ending: idempotent (its first reason stays) */
}

int
sessions_close(Sessions *m, const char *tenant, const char *id, Error **errp)
{
    return session_end_live(m, tenant, id, SESSION_END_CLOSED, errp);
}

int
sessions_cancel(Sessions *m, const char *tenant, const char *id, Error **errp)
{
    return session_end_live(m, tenant, id, SESSION_END_CANCELLED, errp);
}

size_t
sessions_end_tenant(Sessions *m, const char *tenant, SessionEndReason reason)
{
    size_t n = 0;
    for (Session *s = m->all, *next; s; s = next) {
        next = s->next; /* session_end may free a pending session */
        if (s->state >= ST_STOPPING || strcmp(s->rec.tenant_id, tenant) != 0)
            continue;
        session_end(s, reason);
        n++;
    }
    return n;
}

int
sessions_signal(Sessions *m, const char *tenant, const char *id, uint32_t exec_id, int signo,
                Error **errp)
{
    Stockade__Runner__Signal sig = STOCKADE__RUNNER__SIGNAL__INIT;
    HostMsg msg = STOCKADE__RUNNER__HOST_MSG__INIT;
    Session *s = session_running(m, tenant, id, errp);

    if (!s)
        return -1;
    if (signo < 1 || signo > 64 || !session_exec_known(s, exec_id))
        return error_set(errp, E_INVALID, 0, "bad exec id or signal number");
    sig.exec_id = exec_id;
    sig.signo = signo;
    msg.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_SIGNAL;
    msg.signal = &sig;
    return session_send(s, &msg, NULL, errp);
}

int
sessions_resize(Sessions *m, const char *tenant, const char *id, uint32_t exec_id, uint32_t cols,
                uint32_t rows, Error **errp)
{
    Stockade__Runner__Resize rs = STOCKADE__RUNNER__RESIZE__INIT;
    Stockade__Runner__PtySize size = STOCKADE__RUNNER__PTY_SIZE__INIT;
    HostMsg msg = STOCKADE__RUNNER__HOST_MSG__INIT;
    Session *s = session_running(m, tenant, id, errp);

    if (!s)
        return -1;
    if (cols < 1 || cols > PTY_COLS_MAX || rows < 1 || rows > PTY_ROWS_MAX ||
        !session_exec_known(s, exec_id))
        return error_set(errp, E_INVALID, 0, "bad exec id, or size not cols 1..%d, rows 1..%d",
                         PTY_COLS_MAX, PTY_ROWS_MAX);
    if (!session_exec_on_pty(s, exec_id))
        return error_set(errp, E_CONFLICT, 0, "exec %u is not running on a terminal", exec_id);
    size.cols = cols;
    size.rows = rows;
    rs.exec_id = exec_id;
    rs.size = &size;
    msg.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_RESIZE;
    msg.resize = &rs;
    return session_send(s, &msg, NULL, errp);
}

int
sessions_stdin(Sessions *m, const char *tenant, const char *id, uint32_t exec_id,
               const uint8_t *data, size_t len, bool eof, Error **errp)
{
    Stockade__Runner__Stdin in = STOCKADE__RUNNER__STDIN__INIT;
    HostMsg msg = STOCKADE__RUNNER__HOST_MSG__INIT;
    Session *s = session_running(m, tenant, id, errp);

    if (!s)
        return -1;
    if (len > STDIN_CHUNK_MAX_BYTES || !session_exec_known(s, exec_id))
        return error_set(errp, E_INVALID, 0, "stdin chunk over %u bytes or bad exec id",
                         STDIN_CHUNK_MAX_BYTES);
    in.exec_id = exec_id;
    in.data.data = (uint8_t *) data;
    in.data.len = len;
    in.eof = eof;
    msg.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_STDIN;
    msg.stdin = &in;
    return session_send(s, &msg, NULL, errp);
}

int
sessions_file_put(Sessions *m, const char *tenant, const char *id, const char *path,
                  const uint8_t *data, size_t len, uint32_t mode, SessionsDoneFn done,
                  void *userdata, Error **errp)
{
    return sessions_file_put_as(m, tenant, id, path, data, len, mode, false, done, userdata, errp);
}

int
sessions_file_put_as(Sessions *m, const char *tenant, const char *id, const char *path,
                     const uint8_t *data, size_t len, uint32_t mode, bool as_root,
                     SessionsDoneFn done, void *userdata, Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (!s)
        return -1;
    if (!msg_path_is_valid(path, false) || (mode & ~0777u))
        return error_set(errp, E_INVALID, 0, "not a workspace path, or a bad mode");
    return session_start_put(s, path, data, len, mode, done, userdata, false, as_root, errp);
}

int
sessions_file_get(Sessions *m, const char *tenant, const char *id, const char *path,
                  size_t max_bytes, SessionsDataFn done, void *userdata, Error **errp)
{
    return sessions_file_get_as(m, tenant, id, path, max_bytes, false, done, userdata, errp);
}

int
sessions_file_get_as(Sessions *m, const char *tenant, const char *id, const char *path,
                     size_t max_bytes, bool as_root, SessionsDataFn done, void *userdata,
                     Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (!s)
        return -1;
    if (!msg_path_is_valid(path, false))
        return error_set(errp, E_INVALID, 0, "not a workspace path");
    return session_start_get(s, path, max_bytes, done, userdata, as_root, errp);
}

bool
sessions_is_live(Sessions *m, const char *tenant, const char *id)
{
    return sessions_find(m, tenant, id) != NULL;
}

bool
sessions_is_running(Sessions *m, const char *tenant, const char *id)
{
    Session *s = sessions_find(m, tenant, id);
    return s && s->state == ST_RUNNING;
}

int
sessions_state_of(Sessions *m, const char *id, SessionState *ret_state,
                  SessionEndReason *ret_reason, Error **errp)
{
    Session *s = sessions_find(m, NULL, id);
    SessionRecord r;
    if (s) {
        *ret_state = s->state;
        *ret_reason = s->rec.end_reason;
        return 0;
    }
    if (!sessions_id_is_valid(id))
        return error_set(errp, E_NOT_FOUND, 0, "no session %.40s", id);
    if (store_session_get(m->store, id, &r, errp) < 0)
        return -1;
    *ret_state = r.state;
    *ret_reason = r.end_reason;
    session_record_clear(&r);
    return 0;
}

int
sessions_fs_op(Sessions *m, const char *tenant, const char *id, SessionsFsKind kind,
               const char *path, const char *path2, SessionsFsFn done, void *userdata, Error **errp)
{
    return sessions_fs_op_as(m, tenant, id, kind, path, path2, false, done, userdata, errp);
}

int
sessions_fs_op_as(Sessions *m, const char *tenant, const char *id, SessionsFsKind kind,
                  const char *path, const char *path2, bool as_root, SessionsFsFn done,
                  void *userdata, Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    bool root_ok = kind == SESSIONS_FS_STAT || kind == SESSIONS_FS_LIST;

    if (!s)
        return -1;
    if (kind < SESSIONS_FS_STAT || kind > SESSIONS_FS_MOVE || !msg_path_is_valid(path, root_ok) ||
        (kind == SESSIONS_FS_MOVE) != (path2 != NULL) ||
        (path2 && !msg_path_is_valid(path2, false)))
        return error_set(errp, E_INVALID, 0, "not a workspace path, or a bad fs operation");
    return session_start_fs(s, kind, path, path2, done, userdata, as_root, errp);
}

void
sessions_set_draining(Sessions *m, bool on)
{
    m->draining = on;
}

bool
sessions_draining(const Sessions *m)
{
    return m->draining;
}

size_t
sessions_live_list(Sessions *m, SessionsLive *ret, size_t max)
{
    size_t n = 0;
    for (Session *s = m->all; s && n < max; s = s->next, n++) {
        snprintf(ret[n].id, sizeof(ret[n].id), "%s", s->rec.id);
        ret[n].state = s->state;
    }
    return n;
}

void
sessions_stats(Sessions *m, SessionsStats *ret)
{
    ExtractServiceStatus xs;
    m->host.ops->salvage_status(m->host.extract, &xs);
    *ret = m->stats;
    ret->appliance_state = xs.state;
    ret->appliance_force_tcg = xs.force_tcg;
    ret->appliance_launches = xs.launches;
    ret->appliance_launch_failures = xs.launch_failures;
    ret->appliance_launch_usec = xs.launch_usec;
    ret->pending = ret->live = 0;
    ret->draining = m->draining;
    ret->stopping = m->stopping;
    for (Session *s = m->all; s; s = s->next) {
        ret->live++;
        ret->pending += s->state == ST_PENDING;
    }
}
