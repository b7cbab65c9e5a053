/* Round trips with a running guest: putting and getting whole files in FILE_CHUNK_MAX_BYTES
 * chunks (one chunk in flight per operation, each with SESSION_OP_TIMEOUT_USEC), single
 * filesystem operations (FsOp), and the task flow built on them: upload the task's files,
 * start its command. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest_replies.h"
#include "log.h"
#include "runner_limits.h"
#include "session_internal.h"
#include "timeutil.h"

#define SESSION_OP_TIMEOUT_USEC (30 * 1000000) /* a file chunk round trip */

typedef enum { OP_FILE_PUT, OP_FILE_GET, OP_FS } OpKind;

typedef struct Op {
    OpKind kind;
    uint32_t req_id;
    Session *session;
    char *path;
    uint8_t *data; /* put: the whole file; get: what arrived */
    size_t len, off, cap;
    uint32_t mode;
    SessionsDoneFn put_done;
    SessionsDataFn get_done;
    void *userdata;
    TimerId timer;
    bool task;              /* part of a task's upload: its completion moves the task on */
    bool mkdir_first;       /* put: make the parent directories before the first chunk */
    bool as_root;           /* done as root in the guest (runner.proto's as_root) */
    SessionsFsKind fs_kind; /* OP_FS: sessions_fs_op() */
    char *path2;
    SessionsFsFn fs_done;
    struct Op *next;
} Op;

struct SessionOps {
    Op *list;
    size_t task_next_file; /* the task's files go in one after another */
    bool task_command;     /* then its command, once */
};

static void op_send(Op *op);

int
session_ops_new(Session *s)
{
    return (s->ops = calloc(1, sizeof(*s->ops))) ? 0 : -1;
}

/* The end failed every operation (session_ops_fail_all): one still here is dropped unheard,
 * as the module itself goes (sessions_free). */
void
session_ops_free(Session *s)
{
    if (!s->ops)
        return;
    while (s->ops->list) {
        Op *op = s->ops->list;
        s->ops->list = op->next;
        loop_cancel_timer(s->mgr->loop, op->timer);
        free(op->path);
        free(op->path2);
        free(op->data);
        free(op);
    }
    free(s->ops);
    s->ops = NULL;
}

static void
op_unlink(Op *op)
{
    Session *s = op->session;
    for (Op **pp = &s->ops->list; *pp; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            break;
        }
    loop_cancel_timer(s->mgr->loop, op->timer);
}

/* Finishes op (err NULL = success), calls its owner, frees it. */
static void
op_finish(Op *op, const Error *err)
{
    Session *s = op->session;
    op_unlink(op);
    if (op->kind == OP_FILE_PUT && op->put_done)
        op->put_done(op->userdata, err);
    if (op->kind == OP_FILE_GET && op->get_done) {
        uint8_t *data = err ? NULL : op->data;
        op->get_done(op->userdata, err, data, err ? 0 : op->off);
        if (!err)
            op->data = NULL; /* handed over */
    }
    if (op->kind == OP_FS && op->fs_done)
        op->fs_done(op->userdata, err, NULL, 0, false); /* success comes through op_finish_fs */
    bool task = op->task;
    free(op->path);
    free(op->path2);
    free(op->data);
    free(op);
    if (task && !err && s->state == ST_RUNNING)
        session_task_advance(s);
    else if (task && err && s->state == ST_RUNNING)
        session_end(s, SESSION_END_FAILED);
}

static void op_fail(Op *op, ErrorCategory cat, const char *fmt, ...) _printf_(3, 4);

static void
op_fail(Op *op, ErrorCategory cat, const char *fmt, ...)
{
    _cleanup_error_ Error *err = NULL;
    char msg[ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    error_set(&err, cat, 0, "%s", msg);
    op_finish(op, err);
}

void
session_ops_fail_all(Session *s, SessionEndReason why)
{
    while (s->ops->list)
        op_fail(s->ops->list, E_CONFLICT, "session is stopping (%s)", session_end_reason_name(why));
}

static void
op_on_timeout(Loop *l, void *userdata)
{
    Op *op = userdata;
    (void) l;
    op->timer = 0;
    op_fail(op, E_TIMEOUT, "%s: the guest did not answer in time", op->path);
}

static void
op_send(Op *op)
{
    Session *s = op->session;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Stockade__Runner__FilePut put = STOCKADE__RUNNER__FILE_PUT__INIT;
    Stockade__Runner__FileGet get = STOCKADE__RUNNER__FILE_GET__INIT;
    Stockade__Runner__FsOp fs = STOCKADE__RUNNER__FS_OP__INIT;
    _cleanup_free_ char *parent = NULL;
    _cleanup_error_ Error *err = NULL;

    if (op->kind == OP_FS) {
        fs.kind = (Stockade__Runner__FsOp__Kind) op->fs_kind;
        fs.path = op->path;
        fs.path2 = op->path2 ? op->path2 : "";
        fs.as_root = op->as_root;
        m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FS_OP;
        m.fs_op = &fs;
    } else if (op->kind == OP_FILE_PUT && op->mkdir_first) {
        parent = strdup(op->path);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        if (!slash) {
            op_fail(op, E_INTERNAL, "%s: out of memory", op->path);
            return;
        }
        *slash = '\0';
        fs.kind = STOCKADE__RUNNER__FS_OP__KIND__MKDIR;
        fs.path = parent;
        fs.as_root = op->as_root;
        m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FS_OP;
        m.fs_op = &fs;
    } else if (op->kind == OP_FILE_PUT) {
        size_t n = MIN(op->len - op->off, (size_t) FILE_CHUNK_MAX_BYTES);
        put.path = op->path;
        put.offset = op->off;
        put.data.data = op->data + op->off;
        put.data.len = n;
        put.truncate = op->off == 0;
        put.mode = op->mode;
        put.as_root = op->as_root;
        m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FILE_PUT;
        m.file_put = &put;
    } else {
        get.path = op->path;
        get.offset = op->off;
        get.max_bytes = FILE_CHUNK_MAX_BYTES;
        get.as_root = op->as_root;
        m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FILE_GET;
        m.file_get = &get;
    }
    if (session_send(s, &m, &op->req_id, &err) < 0) {
        op_finish(op, err);
        return;
    }
    loop_cancel_timer(s->mgr->loop, op->timer);
    op->timer = loop_add_timer(s->mgr->loop, now_usec() + SESSION_OP_TIMEOUT_USEC,
                               op_on_timeout, op);
}

static void
op_on_file_data(Op *op, const Stockade__Runner__FileData *d)
{
    switch (file_get_take(&op->data, &op->len, &op->off, op->cap, d)) {
    case FILE_GET_MORE:
        op_send(op);
        return;
    case FILE_GET_DONE:
        op_finish(op, NULL);
        return;
    case FILE_GET_OUT_OF_SEQUENCE:
    case FILE_GET_TOO_LARGE:
        op_fail(op, d->offset != op->off ? E_GUEST : E_TOO_LARGE,
                "%s: file larger than allowed, or out-of-sequence data", op->path);
        return;
    case FILE_GET_EMPTY_CHUNK:
        op_fail(op, E_GUEST, "%s: empty chunk before end of file", op->path);
        return;
    case FILE_GET_NO_MEMORY:
        op_fail(op, E_INTERNAL, "%s: out of memory", op->path);
        return;
    }
}

void
sessions_fs_entries_free(SessionsFsEntry *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].name), free(v[i].symlink_target), free(v[i].resolved_target);
    free(v);
}

/* A successful FsOp: the entries (copied out of the guest's message) go to the owner. */
static void
op_finish_fs(Op *op, const Stockade__Runner__FsResult *r)
{
    size_t n = r ? r->n_entries : 0;
    SessionsFsEntry *v = calloc(n + 1, sizeof(*v));
    for (size_t i = 0; v && i < n; i++) {
        const Stockade__Runner__FsEntry *e = r->entries[i];
        v[i] = (SessionsFsEntry){.type = (SessionsFsType) e->type, .size = e->size,
                                 .mode = e->mode, .mtime_ns = e->mtime_ns,
                                 .target_type = (SessionsFsType) e->target_type,
                                 .target_mode = e->target_mode};
        v[i].name = strdup(e->name);
        v[i].symlink_target = e->symlink_target[0] ? strdup(e->symlink_target) : NULL;
        v[i].resolved_target = e->resolved_target[0] ? strdup(e->resolved_target) : NULL;
        if (!v[i].name || (e->symlink_target[0] && !v[i].symlink_target) ||
            (e->resolved_target[0] && !v[i].resolved_target)) {
            sessions_fs_entries_free(v, i + 1);
            v = NULL;
        }
    }
    if (!v) {
        op_fail(op, E_INTERNAL, "%s: out of memory", op->path);
        return;
    }
    SessionsFsFn done = op->fs_done;
    op->fs_done = NULL; /* op_finish must not call it again */
    done(op->userdata, NULL, v, n, r && r->truncated);
    op_finish(op, NULL);
}

bool
session_ops_on_reply(Session *s, const GuestMsg *m)
{
    Op *op = NULL;
    for (Op *o = s->ops->list; o; o = o->next)
        if (o->req_id == m->req_id && m->req_id != 0)
            op = o;
    if (!op)
        return false;
    if (m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR) {
        ErrorCategory cat = m->error->code == STOCKADE__RUNNER__ERROR__CODE__NOT_FOUND ? E_NOT_FOUND
                            : m->error->code == STOCKADE__RUNNER__ERROR__CODE__INVALID_PATH
                                ? E_INVALID
                            : m->error->code == STOCKADE__RUNNER__ERROR__CODE__EXISTS ? E_CONFLICT
                                                                                      : E_GUEST;
        op_fail(op, cat, "%s", m->error->message);
    } else if (op->kind == OP_FS && (m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT ||
                                     m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ACK)) {
        op_finish_fs(op, m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT
                             ? m->fs_result
                             : NULL);
    } else if (op->kind == OP_FILE_PUT && op->mkdir_first &&
               (m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT ||
                m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ACK)) {
        op->mkdir_first = false; /* the parents exist: now the content */
        op_send(op);
    } else if (op->kind == OP_FILE_PUT && m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_ACK) {
        op->off += MIN(op->len - op->off, (size_t) FILE_CHUNK_MAX_BYTES);
        if (op->off >= op->len)
            op_finish(op, NULL);
        else
            op_send(op);
    } else if (op->kind == OP_FILE_GET &&
               m->body_case == STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_DATA) {
        op_on_file_data(op, m->file_data);
    } else {
        op_fail(op, E_GUEST, "%s: unexpected reply from the guest", op->path);
    }
    return true;
}

static Op *
op_new(Session *s, OpKind kind, const char *path)
{
    Op *op = calloc(1, sizeof(*op));
    if (!op || !(op->path = strdup(path))) {
        free(op);
        return NULL;
    }
    op->kind = kind;
    op->session = s;
    op->next = s->ops->list;
    s->ops->list = op;
    return op;
}

int
session_start_put(Session *s, const char *path, const uint8_t *data, size_t len, uint32_t mode,
                  SessionsDoneFn done, void *userdata, bool task, bool as_root, Error **errp)
{
    Op *op = op_new(s, OP_FILE_PUT, path);
    if (!op || (len && !(op->data = malloc(len)))) {
        if (op)
            op_unlink(op), free(op->path), free(op);
        return error_set(errp, E_INTERNAL, ENOMEM, "file put");
    }
    if (len)
        memcpy(op->data, data, len);
    op->len = len;
    op->mode = mode;
    op->put_done = done;
    op->userdata = userdata;
    op->task = task;
    op->as_root = as_root;
    op->mkdir_first = strchr(path, '/') != NULL;
    op_send(op);
    return 0;
}

int
session_start_get(Session *s, const char *path, size_t max_bytes, SessionsDataFn done,
                  void *userdata, bool as_root, Error **errp)
{
    Op *op = op_new(s, OP_FILE_GET, path);
    if (!op)
        return error_set(errp, E_INTERNAL, ENOMEM, "file get");
    op->cap = max_bytes;
    op->get_done = done;
    op->userdata = userdata;
    op->as_root = as_root;
    op_send(op);
    return 0;
}

int
session_start_fs(Session *s, SessionsFsKind kind, const char *path, const char *path2,
                 SessionsFsFn done, void *userdata, bool as_root, Error **errp)
{
    Op *op = op_new(s, OP_FS, path);
    if (!op || (path2 && !(op->path2 = strdup(path2)))) {
        if (op)
            op_unlink(op), free(op->path), free(op);
        return error_set(errp, E_INTERNAL, ENOMEM, "fs op");
    }
    op->fs_kind = kind;
    op->fs_done = done;
    op->userdata = userdata;
    op->as_root = as_root;
    op_send(op);
    return 0;
}

void
session_task_advance(Session *s)
{
    _cleanup_error_ Error *err = NULL;

    if (s->ops->task_next_file < s->spec.n_files) {
        TaskFile *f = &s->spec.files[s->ops->task_next_file++];
        if (session_start_put(s, f->path, f->data, f->len, f->mode, NULL, NULL, true, false, &err) <
            0)
            session_end(s, SESSION_END_FAILED);
        return;
    }
    if (s->ops->task_command)
        return;
    ExecSpec e = {.argv = s->spec.argv, .argc = s->spec.argc, .env = NULL, .n_env = 0,
                  .cwd = s->spec.cwd, .timeout_usec = s->rec.timeout_usec};
    uint32_t exec_id;
    s->ops->task_command = true;
    if (session_exec_start(s, &e, true, NULL, &exec_id, &err) < 0) {
        log_warn("session %s: task command not started: %s", s->rec.id, err->message);
        session_end(s, SESSION_END_FAILED);
    }
}
