/* The sessions module: life cycle, creation and its checks, the pending queue, the entry
 * points the API calls, and restart reconciliation. See sessions.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "log.h"
#include "message.h"
#include "owndir.h"
#include "session_internal.h"
#include "timeutil.h"

#define ID_PREFIX "ses_"
#define ID_RANDOM_CHARS 26 /* 128 bits in base32 */

bool
sessions_id_is_valid(const char *id)
{
    size_t n = strnlen(id, SESSION_ID_BYTES);
    return n == strlen(ID_PREFIX) + ID_RANDOM_CHARS && strncmp(id, ID_PREFIX, 4) == 0 &&
           strspn(id + 4, "abcdefghijklmnopqrstuvwxyz234567") == ID_RANDOM_CHARS;
}

static int
session_new_id(char out[SESSION_ID_BYTES])
{
    static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
    uint8_t r[ID_RANDOM_CHARS];
    if (getrandom(r, sizeof(r), 0) != (ssize_t) sizeof(r))
        return -1;
    memcpy(out, ID_PREFIX, 4);
    for (int i = 0; i < ID_RANDOM_CHARS; i++)
        out[4 + i] = b32[r[i] & 31];
    out[4 + ID_RANDOM_CHARS] = '\0';
    return 0;
}

Session *
sessions_find(Sessions *m, const char *tenant, const char *id)
{
    for (Session *s = m->all; s; s = s->next)
        if (strcmp(s->rec.id, id) == 0)
            return !tenant || strcmp(s->rec.tenant_id, tenant) == 0 ? s : NULL;
    return NULL;
}

/* ------------------------------------------------------------------ spec checks and copies */

static bool
env_ok(const EnvPair *env, size_t n)
{
    if (n > SESSION_ENV_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(env[i].name);
        if (len == 0 || len > ENV_NAME_MAX_BYTES || (env[i].name[0] >= '0' && env[i].name[0] <= '9') ||
            strspn(env[i].name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
                len ||
            strlen(env[i].value) > ENV_VALUE_MAX_BYTES)
            return false;
    }
    return true;
}

int
argv_check(char *const *argv, size_t argc, const EnvPair *env, size_t n_env, const char *cwd,
           Error **errp)
{
    size_t total = 0;
    if (argc == 0 || argc > SESSION_ARGV_MAX)
        return error_set(errp, E_INVALID, 0, "argv must have 1..%d entries", SESSION_ARGV_MAX);
    for (size_t i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]);
        if ((i == 0 && n == 0) || n > ARG_MAX_BYTES)
            return error_set(errp, E_INVALID, 0, "argv[%zu] is empty or over %u bytes", i,
                             ARG_MAX_BYTES);
        total += n + 1;
    }
    if (!env_ok(env, n_env))
        return error_set(errp, E_INVALID, 0, "env: at most %d variables named "
                         "[A-Za-z_][A-Za-z0-9_]*, values up to %u bytes", SESSION_ENV_MAX,
                         ENV_VALUE_MAX_BYTES);
    for (size_t i = 0; i < n_env; i++)
        total += strlen(env[i].name) + strlen(env[i].value) + 2;
    if (total > EXEC_TOTAL_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "argv and env together are over %u bytes",
                         EXEC_TOTAL_MAX_BYTES);
    if (cwd && (cwd[0] != '/' || strlen(cwd) > PATH_MAX_BYTES))
        return error_set(errp, E_INVALID, 0, "cwd must be an absolute path");
    return 0;
}

static int
spec_check(Sessions *m, const SessionSpec *sp, Error **errp)
{
    PoolStatus st;
    pool_status(m->pool, &st);
    if (!pool_status_shape(&st, sp->pool))
        return error_set(errp, E_INVALID, 0, "no pool (image) named '%.32s'", sp->pool);
    if (sp->timeout_usec > m->cfg.max_timeout_usec)
        return error_set(errp, E_INVALID, 0, "timeout is over the maximum of %llu s",
                         (unsigned long long) (m->cfg.max_timeout_usec / USEC_PER_SEC));
    if (!env_ok(sp->env, sp->n_env))
        return error_set(errp, E_INVALID, 0, "env: bad name, value or count");
    if (session_egress_check_spec(m, sp, errp) < 0)
        return -1;
    if (!sp->is_task)
        return 0;
    if (argv_check(sp->argv, sp->argc, NULL, 0, sp->cwd, errp) < 0)
        return -1;
    if (sp->n_files > SESSION_FILES_MAX)
        return error_set(errp, E_INVALID, 0, "at most %d files", SESSION_FILES_MAX);
    for (size_t i = 0; i < sp->n_files; i++)
        if (!msg_path_is_valid(sp->files[i].path, false))
            return error_set(errp, E_INVALID, 0, "files[%zu].path is not a relative path "
                             "without '..'", i);
    return 0;
}

static char *
xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void
spec_free(SessionSpec *sp)
{
    for (size_t i = 0; i < sp->n_env; i++)
        free(sp->env[i].name), free(sp->env[i].value);
    for (size_t i = 0; i < sp->argc; i++)
        free(sp->argv[i]);
    for (size_t i = 0; i < sp->n_files; i++)
        free(sp->files[i].path), free(sp->files[i].data);
    free(sp->env), free(sp->argv), free(sp->files), free(sp->cwd);
    free((char *) sp->tenant_id), free((char *) sp->pool);
    session_egress_free_spec(sp);
    memset(sp, 0, sizeof(*sp));
}

static int
spec_copy(SessionSpec *dst, const SessionSpec *src)
{
    *dst = (SessionSpec){.timeout_usec = src->timeout_usec, .mirror = src->mirror,
                         .is_task = src->is_task};
    dst->tenant_id = xstrdup(src->tenant_id);
    dst->pool = xstrdup(src->pool);
    dst->cwd = xstrdup(src->cwd);
    dst->env = calloc(src->n_env + 1, sizeof(EnvPair));
    dst->argv = calloc(src->argc + 1, sizeof(char *));
    dst->files = calloc(src->n_files + 1, sizeof(TaskFile));
    if (!dst->tenant_id || !dst->pool || !dst->env || !dst->argv || !dst->files)
        return -1;
    for (; dst->n_env < src->n_env; dst->n_env++) {
        EnvPair *e = &dst->env[dst->n_env];
        if (!(e->name = strdup(src->env[dst->n_env].name)) ||
            !(e->value = strdup(src->env[dst->n_env].value)))
            return -1;
    }
    for (; dst->argc < src->argc; dst->argc++)
        if (!(dst->argv[dst->argc] = strdup(src->argv[dst->argc])))
            return -1;
    for (; dst->n_files < src->n_files; dst->n_files++) {
        const TaskFile *f = &src->files[dst->n_files];
        TaskFile *t = &dst->files[dst->n_files];
        *t = (TaskFile){.len = f->len, .mode = f->mode};
        if (!(t->path = strdup(f->path)) || (f->len && !(t->data = malloc(f->len))))
            return -1;
        if (f->len)
            memcpy(t->data, f->data, f->len);
    }
    return session_egress_copy_spec(dst, src);
}

static char *
spec_json(const SessionSpec *sp)
{
    json_t *o = json_pack("{s:s,s:b}", "pool", sp->pool, "mirror", sp->mirror);
    if (sp->is_task) {
        json_t *argv = json_array();
        for (size_t i = 0; i < sp->argc; i++)
            json_array_append_new(argv, json_string_nocheck(sp->argv[i]));
        json_object_set_new(o, "argv", argv);
        json_object_set_new(o, "files", json_integer((json_int_t) sp->n_files));
    }
    if (sp->egress_all || sp->n_egress > 0)
        json_object_set_new(o, "egress", session_egress_spec_json(sp));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* ------------------------------------------------------------------ life cycle */

void
session_free(Session *s)
{
    Sessions *m = s->mgr;
    for (Session **pp = &m->all; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    session_exec_free_all(s);
    session_code_free_all(s);
    session_finalize_free(s);
    mirror_abort(s);
    session_egress_stop(s);
    spec_free(&s->spec);
    session_record_clear(&s->rec);
    error_free(s->xerr);
    free(s);
}

static void
session_on_timeout(Loop *l, void *userdata)
{
    Session *s = userdata;
    (void) l;
    s->timeout_timer = 0;
    session_event(s, "session.timeout", 0, NULL, 0,
                  json_pack("{s:I}", "timeout_ms", (json_int_t) (s->rec.timeout_usec / 1000)));
    session_end(s, "timed_out");
}

static void
session_on_pending_timeout(Loop *l, void *userdata)
{
    Session *s = userdata;
    (void) l;
    s->pending_timer = 0;
    session_end(s, "no_capacity");
}

void
sessions_dispatch_pending(Sessions *m)
{
    Session **pp = &m->pending_head;
    while (*pp) {
        Session *s = *pp;
        Guest *g = pool_take(m->pool, s->spec.pool, &session_guest_ops, s, NULL);
        if (!g) {
            pp = &s->next_pending;
            continue; /* this pool is empty; a later session may want another pool */
        }
        *pp = s->next_pending;
        s->next_pending = NULL;
        loop_cancel_timer(m->loop, s->pending_timer);
        s->pending_timer = 0;
        s->lifetime_start_usec = now_usec();
        s->timeout_timer = loop_add_timer(m->loop, s->lifetime_start_usec + s->rec.timeout_usec,
                                          session_on_timeout, s);
        session_bind_guest(s, g);
    }
    m->pending_tail = &m->pending_head;
    while (*m->pending_tail)
        m->pending_tail = &(*m->pending_tail)->next_pending;
}

static void
sessions_on_pool_idle(void *userdata)
{
    sessions_dispatch_pending(userdata);
}

int
sessions_new(Loop *l, WorkQueue *q, Pool *pool, ExtractService *extract, Store *store,
             EventHub *hub, const SessionsConfig *cfg, Sessions **ret, Error **errp)
{
    Sessions *m = calloc(1, sizeof(*m));
    if (!m)
        return error_set(errp, E_INTERNAL, ENOMEM, "sessions");
    *m = (Sessions){.loop = l, .q = q, .pool = pool, .extract = extract, .store = store,
                    .hub = hub, .cfg = *cfg};
    m->pending_tail = &m->pending_head;
    m->cfg.state_dir = NULL;
    m->cfg.db_path = NULL;
    if (asprintf(&m->artifacts_dir, "%s/artifacts", cfg->state_dir) < 0) {
        free(m);
        return error_set(errp, E_INTERNAL, ENOMEM, "sessions");
    }
    /* root's alone (owndir.h): what is put in it by path must not be another user's to swap */
    _cleanup_close_ int artifacts_fd = -1;
    if (owndir_open(m->artifacts_dir, 0700, OWNDIR_CREATE | OWNDIR_SET_MODE, &artifacts_fd, errp) <
        0) {
        sessions_free(m);
        return -1;
    }
    m->cfg.state_dir = strdup(cfg->state_dir);
    if (sessions_egress_init(m, errp) < 0) {
        sessions_free(m);
        return -1;
    }
    pool_set_on_idle(pool, sessions_on_pool_idle, m);
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
    loop_cancel_timer(m->loop, m->commit_timer);
    loop_cancel_timer(m->loop, m->retention_timer);
    loop_cancel_timer(m->loop, m->stop_timer);
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
    if (spec_check(m, spec, errp) < 0)
        return -1;
    if (!(s = calloc(1, sizeof(*s))))
        return error_set(errp, E_INTERNAL, ENOMEM, "session");
    s->mgr = m;
    s->mirror.fd = -1;
    s->created_mono_usec = now_usec();
    if (session_new_id(s->rec.id) < 0 || spec_copy(&s->spec, spec) < 0) {
        spec_free(&s->spec);
        free(s);
        return error_set(errp, E_INTERNAL, ENOMEM, "session");
    }
    SessionRecord *r = &s->rec;
    snprintf(r->tenant_id, sizeof(r->tenant_id), "%s", spec->tenant_id);
    snprintf(r->kind, sizeof(r->kind), "%s", spec->is_task ? "task" : "session");
    snprintf(r->pool, sizeof(r->pool), "%s", spec->pool);
    snprintf(r->state, sizeof(r->state), "pending");
    r->created_usec = (int64_t) wall_usec();
    r->timeout_usec = spec->timeout_usec ? spec->timeout_usec : m->cfg.default_timeout_usec;
    r->spec = spec_json(&s->spec);
    /* quota check + reservation + record, atomically, before any guest is touched */
    if (session_admit_record(s, ret_refusal, errp) < 0) {
        sessions_commit_now(m); /* the transaction the savepoint opened holds the write lock */
        session_record_clear(r);
        spec_free(&s->spec);
        free(s);
        return -1;
    }
    s->next = m->all;
    m->all = s;
    m->stats.created++;
    session_event(s, "session.created", 0, NULL, 0,
                  json_pack("{s:s,s:s,s:I}", "kind", r->kind, "pool", r->pool, "timeout_ms",
                            (json_int_t) (r->timeout_usec / 1000)));
    sessions_commit_now(m);
    *m->pending_tail = s;
    m->pending_tail = &s->next_pending;
    s->pending_timer = loop_add_timer(m->loop, now_usec() + m->cfg.pending_timeout_usec,
                                      session_on_pending_timeout, s);
    memcpy(ret_id, r->id, SESSION_ID_BYTES);
    sessions_dispatch_pending(m);
    return 0;
}

/* ------------------------------------------------------------------ API entry points */

/* E_CONFLICT for a session of this tenant that exists but ended, E_NOT_FOUND otherwise. */
static int
session_not_live(Sessions *m, const char *tenant, const char *id, Error **errp)
{
    SessionRecord r;
    if (sessions_id_is_valid(id) && store_session_get(m->store, id, &r, NULL) == 0) {
        bool mine = !tenant || strcmp(r.tenant_id, tenant) == 0;
        session_record_clear(&r);
        if (mine)
            return error_set(errp, E_CONFLICT, 0, "session %s has ended", id);
    }
    return error_set(errp, E_NOT_FOUND, 0, "no session %.40s", id);
}

Session *
session_running(Sessions *m, const char *tenant, const char *id, Error **errp)
{
    Session *s = sessions_find(m, tenant, id);
    if (!s) {
        session_not_live(m, tenant, id, errp);
        return NULL;
    }
    if (s->state != ST_RUNNING) {
        error_set(errp, E_CONFLICT, 0, "session %s is %s, not running", s->rec.id,
                  session_state_name(s->state));
        return NULL;
    }
    return s;
}

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
    return session_send_exec(s, spec, ret_exec_id, errp);
}

static int
session_end_live(Sessions *m, const char *tenant, const char *id, const char *reason,
                 Error **errp)
{
    Session *s = sessions_find(m, tenant, id);
    if (!s)
        return error_set(errp, E_NOT_FOUND, 0, "no live session %.40s", id);
    if (s->state < ST_STOPPING)
        session_end(s, reason);
    else if (strcmp(reason, "cancelled") == 0) /* a hard stop never waits on the runner */
        (void) session_finalize_cancel(s);
    return 0; /* already ending: idempotent (its first reason stays) */
}

int
sessions_close(Sessions *m, const char *tenant, const char *id, Error **errp)
{
    return session_end_live(m, tenant, id, "closed", errp);
}

int
sessions_cancel(Sessions *m, const char *tenant, const char *id, Error **errp)
{
    return session_end_live(m, tenant, id, "cancelled", errp);
}

size_t
sessions_end_tenant(Sessions *m, const char *tenant, const char *reason)
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
    if (signo < 1 || signo > 64 || exec_id == 0 || exec_id > s->next_exec_id)
        return error_set(errp, E_INVALID, 0, "bad exec id or signal number");
    sig.exec_id = exec_id;
    sig.signo = signo;
    msg.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_SIGNAL;
    msg.signal = &sig;
    return guest_send(s->guest, &msg, NULL, errp);
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
    if (len > STDIN_CHUNK_MAX_BYTES || exec_id == 0 || exec_id > s->next_exec_id)
        return error_set(errp, E_INVALID, 0, "stdin chunk over %u bytes or bad exec id",
                         STDIN_CHUNK_MAX_BYTES);
    in.exec_id = exec_id;
    in.data.data = (uint8_t *) data;
    in.data.len = len;
    in.eof = eof;
    msg.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_STDIN;
    msg.stdin = &in;
    return guest_send(s->guest, &msg, NULL, errp);
}

int
sessions_file_put(Sessions *m, const char *tenant, const char *id, const char *path,
                  const uint8_t *data, size_t len, uint32_t mode, SessionsDoneFn done,
                  void *userdata, Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (!s)
        return -1;
    if (!msg_path_is_valid(path, false) || (mode & ~0777u))
        return error_set(errp, E_INVALID, 0, "not a workspace path, or a bad mode");
    return session_start_put(s, path, data, len, mode, done, userdata, false, errp);
}

int
sessions_file_get(Sessions *m, const char *tenant, const char *id, const char *path,
                  size_t max_bytes, SessionsDataFn done, void *userdata, Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (!s)
        return -1;
    if (!msg_path_is_valid(path, false))
        return error_set(errp, E_INVALID, 0, "not a workspace path");
    return session_start_get(s, path, max_bytes, done, userdata, errp);
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
                  char ret_reason[STORE_REASON_MAX_BYTES], Error **errp)
{
    Session *s = sessions_find(m, NULL, id);
    SessionRecord r;
    if (s) {
        *ret_state = s->state;
        snprintf(ret_reason, STORE_REASON_MAX_BYTES, "%s", s->rec.end_reason);
        return 0;
    }
    if (!sessions_id_is_valid(id))
        return error_set(errp, E_NOT_FOUND, 0, "no session %.40s", id);
    if (store_session_get(m->store, id, &r, errp) < 0)
        return -1;
    if (!session_state_from_name(r.state, ret_state))
        *ret_state = ST_ENDED; /* a name no state has: treated as over */
    snprintf(ret_reason, STORE_REASON_MAX_BYTES, "%s", r.end_reason);
    session_record_clear(&r);
    return 0;
}

static uint64_t
session_lifetime_left(const Session *s)
{
    uint64_t end = s->lifetime_start_usec + s->rec.timeout_usec, now = now_usec();
    return end > now ? end - now : 0;
}

int
sessions_timeout_left(Sessions *m, const char *tenant, const char *id, uint64_t *ret_usec,
                      Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (!s)
        return -1;
    *ret_usec = session_lifetime_left(s);
    return 0;
}

int
sessions_set_timeout(Sessions *m, const char *tenant, const char *id, uint64_t timeout_usec,
                     Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    if (!s)
        return -1;
    uint64_t left = session_lifetime_left(s);
    if (timeout_usec > left)
        return error_set(errp, E_INVALID, 0, "a timeout of %llu s is over what is left of the "
                         "lifetime admitted for this session (%llu s of %llu s)",
                         (unsigned long long) ((timeout_usec + USEC_PER_SEC - 1) / USEC_PER_SEC),
                         (unsigned long long) (left / USEC_PER_SEC),
                         (unsigned long long) (s->rec.timeout_usec / USEC_PER_SEC));
    loop_cancel_timer(m->loop, s->timeout_timer);
    s->timeout_timer = loop_add_timer(m->loop, now_usec() + timeout_usec, session_on_timeout, s);
    session_event(s, "session.timeout_set", 0, NULL, 0,
                  json_pack("{s:I}", "timeout_ms", (json_int_t) (timeout_usec / 1000)));
    return 0;
}

int
sessions_exec_state(Sessions *m, const char *tenant, const char *id, uint32_t exec_id,
                    SessionsExecState *ret, Error **errp)
{
    Session *s = sessions_find(m, tenant, id);
    for (Exec *e = s ? s->execs : NULL; e; e = e->next)
        if (e->id == exec_id) {
            *ret = e->done ? SESSIONS_EXEC_DONE
                   : e->running ? SESSIONS_EXEC_RUNNING
                                : SESSIONS_EXEC_STARTING;
            return 0;
        }
    return error_set(errp, E_NOT_FOUND, 0, "no exec %u in a live session %.40s", exec_id, id);
}

int
sessions_fs_op(Sessions *m, const char *tenant, const char *id, SessionsFsKind kind,
               const char *path, const char *path2, SessionsFsFn done, void *userdata,
               Error **errp)
{
    Session *s = session_running(m, tenant, id, errp);
    bool root_ok = kind == SESSIONS_FS_STAT || kind == SESSIONS_FS_LIST;

    if (!s)
        return -1;
    if (kind < SESSIONS_FS_STAT || kind > SESSIONS_FS_MOVE || !msg_path_is_valid(path, root_ok) ||
        (kind == SESSIONS_FS_MOVE) != (path2 != NULL) || (path2 && !msg_path_is_valid(path2, false)))
        return error_set(errp, E_INVALID, 0, "not a workspace path, or a bad fs operation");
    return session_start_fs(s, kind, path, path2, done, userdata, errp);
}

void
sessions_stats(Sessions *m, SessionsStats *ret)
{
    ExtractServiceStatus xs;
    extract_service_status(m->extract, &xs);
    *ret = m->stats;
    ret->appliance_state = xs.state;
    ret->appliance_force_tcg = xs.force_tcg;
    ret->appliance_launches = xs.launches;
    ret->appliance_launch_failures = xs.launch_failures;
    ret->appliance_launch_usec = xs.launch_usec;
    ret->pending = ret->live = 0;
    for (Session *s = m->all; s; s = s->next) {
        ret->live++;
        ret->pending += s->state == ST_PENDING;
    }
}
