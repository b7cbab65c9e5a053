/* Files of a running sandbox: GET/POST /files and the filesystem.Filesystem unary calls, as
 * round trips with its runner (whole-file get/put, FsOp). Only /workspace is reachable;
 * /home/user, "~" and relative paths name it too (e2b_wire.h). Uploads are multipart (one
 * part per file, its filename the destination, a "path" query winning for a single file) or,
 * for clients that send it, a raw application/octet-stream body with a "path" query;
 * compressed bodies are refused.
 *
 * The handler checks what it can without the guest and posts one job to the loop, which runs
 * its round trips one after another (each checks the sandbox again, as the guest may be gone)
 * and answers: MakeDir is stat, mkdir, stat; Move is move, stat; an upload is one put per
 * part; ListDir lists depth first. Nothing waits in a handler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_internal.h"
#include "multipart.h"

#define LIST_DEPTH_MAX 16 /* ListDir depth; entries are capped at LIST_MAX_ENTRIES in total */

typedef enum { JOB_GET, JOB_PUT, JOB_STAT, JOB_MKDIR, JOB_MOVE, JOB_REMOVE, JOB_LIST } JobKind;

/* One part of an upload: where it goes and its bytes (the request's body: the job holds the
 * request until it is released, and sessions_file_put() copies). */
typedef struct PutStep {
    char *rel, *name, *shown;
    const uint8_t *data;
    size_t len;
} PutStep;

/* A directory ListDir is listing: its entries, and the next one to look at. */
typedef struct ListFrame {
    E2bPath dir;
    unsigned depth;
    SessionsFsEntry *entries;
    size_t n, next;
} ListFrame;

typedef struct FilesJob {
    E2bCall c;
    E2bEnvdAuth auth;
    JobKind kind;
    int stage;
    E2bPath p, to; /* the path; MOVE: from p to to */
    /* JOB_PUT */
    PutStep *puts;
    size_t n_puts, next_put;
    Error *after_puts; /* what the upload met after its last good part, answered then */
    json_t *infos;
    /* JOB_LIST */
    unsigned depth;
    ListFrame frames[LIST_DEPTH_MAX];
    size_t n_frames;
    /* out */
    uint8_t *got; /* JOB_GET */
    size_t got_len;
    SessionsFsEntry *entries; /* the last FsOp's */
    size_t n_entries;
    bool exists; /* JOB_MKDIR: the path was there already */
    json_t *out; /* the RPC's answer */
} FilesJob;

static void
job_free(E2bCall *c)
{
    FilesJob *j = (FilesJob *) c;
    e2b_envd_auth_clear(&j->auth);
    for (size_t i = 0; i < j->n_puts; i++)
        free(j->puts[i].rel), free(j->puts[i].name), free(j->puts[i].shown);
    free(j->puts);
    error_free(j->after_puts);
    json_decref(j->infos);
    for (size_t i = 0; i < j->n_frames; i++)
        sessions_fs_entries_free(j->frames[i].entries, j->frames[i].n);
    free(j->got);
    sessions_fs_entries_free(j->entries, j->n_entries);
    json_decref(j->out);
}

static FilesJob *
job_new(JobKind kind, E2bEnvdAuth *auth)
{
    FilesJob *j = e2b_call_new(sizeof(*j), job_free);
    if (!j)
        return NULL;
    j->kind = kind;
    j->auth = *auth;
    *auth = (E2bEnvdAuth){0}; /* the job owns the strings now */
    return j;
}

/* ------------------------------------------------------------------ filesystem entries */

static E2bFileType
file_type(SessionsFsType t)
{
    return t == SESSIONS_FS_FILE      ? E2B_FILE_FILE
           : t == SESSIONS_FS_DIR     ? E2B_FILE_DIR
           : t == SESSIONS_FS_SYMLINK ? E2B_FILE_SYMLINK
                                      : E2B_FILE_OTHER;
}

/* EntryInfo of an entry at shown (the path as the client sees it), spelt from p (how the
 * caller wrote its path). A symlink is reported as envd reports it (e2b-dev/infra
 * packages/shared/pkg/filesystem/entry.go, GetEntryInfo): resolved fully, its type and mode
 * those of what it leads to, symlinkTarget that absolute path (in the caller's spelling when
 * it is in the workspace); one that does not resolve has type FILE_TYPE_UNSPECIFIED, mode 0
 * and its own path as the target (followSymlink()'s fallback). */
static json_t *
entry_json(const SessionsFsEntry *en, const E2bPath *p, const char *shown)
{
    const char *base = strrchr(shown, '/');
    E2bEntry x = {.name = base && base[1] ? base + 1 : shown,
                  .type = file_type(en->type),
                  .size = en->size,
                  .mode = en->mode,
                  .mtime_ns = en->mtime_ns,
                  .symlink_target = en->symlink_target};
    char target[PATH_MAX_BYTES + 64];
    const char *r = en->resolved_target;
    size_t wl = strlen(E2B_WORKSPACE);

    if (en->type == SESSIONS_FS_SYMLINK) {
        x.link = true;
        x.link_mode = en->mode;
        x.type = r ? file_type(en->target_type) : E2B_FILE_OTHER;
        x.mode = r ? en->target_mode & 0777 : 0; /* os.FileMode.Perm(): no setuid, sticky */
        if (!r)
            x.symlink_target = shown;
        else if (strncmp(r, E2B_WORKSPACE, wl) == 0 && (r[wl] == '\0' || r[wl] == '/') &&
                 (size_t) snprintf(target, sizeof(target), "%s%s", p->base, r + wl) <
                     sizeof(target))
            x.symlink_target = target;
        else
            x.symlink_target = r;
    }
    return e2b_render_entry(&x, shown);
}

/* ------------------------------------------------------------------ round trips (loop) */

/* What a step did: started a round trip (its callback steps on), finished the job (with or
 * without an error), or could not start one (its error is then the step's input, as if the
 * round trip had failed). */
enum { JOB_DONE, JOB_STARTED, JOB_RETRY };
#define TRIP(r) ((r) < 0 ? JOB_RETRY : JOB_STARTED)

static void job_step(FilesJob *j, const Error *prev);

static void
put_done(void *userdata, const Error *err)
{
    job_step(userdata, err);
}

static void
get_done(void *userdata, const Error *err, uint8_t *data, size_t len)
{
    FilesJob *j = userdata;
    j->got = data;
    j->got_len = len;
    job_step(j, err);
}

static void
fs_done(void *userdata, const Error *err, SessionsFsEntry *entries, size_t n, bool truncated)
{
    FilesJob *j = userdata;
    (void) truncated;
    sessions_fs_entries_free(j->entries, j->n_entries);
    j->entries = entries;
    j->n_entries = n;
    job_step(j, err);
}

/* The running sandbox's session (checked before every round trip). */
static const char *
job_session(FilesJob *j, Error **errp)
{
    E2bSandbox *sb = e2b_envd_sandbox(j->c.e, &j->auth, errp);
    return sb ? sb->session_id : NULL;
}

/* Starts one round trip: its callback steps the job on. -1: it could not start (*errp). */
static int
job_fs(FilesJob *j, SessionsFsKind kind, const char *path, const char *path2, Error **errp)
{
    const char *id = job_session(j, errp);
    return id ? sessions_fs_op_as(j->c.e->d.sessions, NULL, id, kind, path, path2, j->auth.root,
                                  fs_done, j, errp)
              : -1;
}

static int
job_put(FilesJob *j, const PutStep *ps, Error **errp)
{
    const char *id = job_session(j, errp);
    return id ? sessions_file_put_as(j->c.e->d.sessions, NULL, id, ps->rel, ps->data, ps->len, 0644,
                                     j->auth.root, put_done, j, errp)
              : -1;
}

static int
job_get(FilesJob *j, Error **errp)
{
    const char *id = job_session(j, errp);
    return id ? sessions_file_get_as(j->c.e->d.sessions, NULL, id, j->p.rel, E2B_FILE_GET_MAX_BYTES,
                                     j->auth.root, get_done, j, errp)
              : -1;
}

/* The STAT just done of p, as {"entry": EntryInfo}. */
static int
stat_out(FilesJob *j, const E2bPath *p, Error **errp)
{
    char shown[PATH_MAX_BYTES + 64];
    if (e2b_path_show(p, NULL, shown, sizeof(shown)) < 0)
        return error_set(errp, E_INVALID, 0, "the path is too long");
    if (j->n_entries != 1)
        return error_set(errp, E_GUEST, 0, "the guest's stat was empty");
    j->out = json_pack("{s:o}", "entry", entry_json(&j->entries[0], p, shown));
    return 0;
}

/* A STAT of p unless its shown form does not fit (checked first, as it is answered). */
static int
job_stat(FilesJob *j, const E2bPath *p, Error **errp)
{
    char shown[PATH_MAX_BYTES + 64];
    if (e2b_path_show(p, NULL, shown, sizeof(shown)) < 0)
        return error_set(errp, E_INVALID, 0, "the path is too long");
    return job_fs(j, SESSIONS_FS_STAT, p->rel, NULL, errp);
}

/* ------------------------------------------------------------------ the steps (loop) */

static int
list_push(FilesJob *j, const E2bPath *dir, unsigned depth, Error **errp)
{
    ListFrame *f = &j->frames[j->n_frames++];
    *f = (ListFrame){.dir = *dir, .depth = depth};
    return TRIP(job_fs(j, SESSIONS_FS_LIST, dir->rel, NULL, errp));
}

/* The top frame's entries from its next one on, appended to the answer; a subdirectory (while
 * depth allows) is listed before its later siblings, as a recursive walk would. */
static int
list_walk(FilesJob *j, Error **errp)
{
    json_t *out = json_object_get(j->out, "entries");
    while (j->n_frames > 0) {
        ListFrame *f = &j->frames[j->n_frames - 1];
        while (f->next < f->n) {
            const SessionsFsEntry *en = &f->entries[f->next++];
            char shown[PATH_MAX_BYTES + 64];
            E2bPath child = {.base = f->dir.base};
            int n = snprintf(child.rel, sizeof(child.rel), "%s%s%s", f->dir.rel,
                             f->dir.rel[0] ? "/" : "", en->name);
            if (n < 0 || (size_t) n >= sizeof(child.rel) || strchr(en->name, '/') ||
                e2b_path_show(&child, NULL, shown, sizeof(shown)) < 0)
                continue; /* a name the guest should not have sent, or too deep to show */
            if (json_array_size(out) >= LIST_MAX_ENTRIES)
                break;
            json_array_append_new(out, entry_json(en, &child, shown));
            if (en->type == SESSIONS_FS_DIR && f->depth > 1)
                return list_push(j, &child, f->depth - 1, errp);
        }
        sessions_fs_entries_free(f->entries, f->n);
        j->n_frames--;
    }
    return JOB_DONE;
}

static int
step_list(FilesJob *j, Error **errp)
{
    if (j->stage++ == 0) {
        if ((j->out = json_pack("{s:[]}", "entries")))
            return list_push(j, &j->p, j->depth, errp);
        error_set(errp, E_INTERNAL, ENOMEM, "list");
        return JOB_DONE;
    }
    ListFrame *f = &j->frames[j->n_frames - 1]; /* the listing that came back is its */
    f->entries = TAKE_PTR(j->entries);
    f->n = j->n_entries;
    j->n_entries = 0;
    return list_walk(j, errp);
}

static int
step_put(FilesJob *j, Error **errp)
{
    if (j->stage++ > 0) { /* the part before went in */
        const PutStep *ps = &j->puts[j->next_put - 1];
        json_array_append_new(j->infos, e2b_render_write_info(ps->name, ps->shown));
    }
    if (j->next_put < j->n_puts)
        return TRIP(job_put(j, &j->puts[j->next_put++], errp));
    if (j->after_puts)
        error_set(errp, j->after_puts->category, 0, "%s", j->after_puts->message);
    return JOB_DONE;
}

/* stat; if it is there: already exists; if not: mkdir, then stat for the answer. */
static int
step_mkdir(FilesJob *j, const Error *prev, Error **errp)
{
    if (prev && j->stage != 1) { /* only the first stat may fail and go on */
        error_set(errp, prev->category, 0, "%s", prev->message);
        return JOB_DONE;
    }
    switch (j->stage++) {
    case 0:
        return TRIP(job_stat(j, &j->p, errp));
    case 1:
        if (!prev) {
            j->exists = stat_out(j, &j->p, errp) == 0;
            return JOB_DONE;
        }
        if (prev->category != E_NOT_FOUND) {
            error_set(errp, prev->category, 0, "%s", prev->message);
            return JOB_DONE;
        }
        return TRIP(job_fs(j, SESSIONS_FS_MKDIR, j->p.rel, NULL, errp));
    case 2:
        return TRIP(job_stat(j, &j->p, errp));
    default:
        (void) stat_out(j, &j->p, errp);
        return JOB_DONE;
    }
}

static int
step_other(FilesJob *j, Error **errp)
{
    int stage = j->stage++;
    switch (j->kind) {
    case JOB_GET:
        return stage == 0 ? TRIP(job_get(j, errp)) : JOB_DONE;
    case JOB_STAT:
        if (stage == 0)
            return TRIP(job_stat(j, &j->p, errp));
        (void) stat_out(j, &j->p, errp);
        return JOB_DONE;
    case JOB_MOVE:
        if (stage == 0)
            return TRIP(job_fs(j, SESSIONS_FS_MOVE, j->p.rel, j->to.rel, errp));
        if (stage == 1)
            return TRIP(job_stat(j, &j->to, errp));
        (void) stat_out(j, &j->to, errp);
        return JOB_DONE;
    case JOB_REMOVE:
        return stage == 0 ? TRIP(job_fs(j, SESSIONS_FS_REMOVE, j->p.rel, NULL, errp)) : JOB_DONE;
    default:
        error_set(errp, E_INTERNAL, 0, "files job");
        return JOB_DONE;
    }
}

/* The next step, given what the round trip before it said (prev). Only MakeDir's first stat
 * may fail and go on. */
static int
job_next(FilesJob *j, const Error *prev, Error **errp)
{
    if (j->kind == JOB_MKDIR)
        return step_mkdir(j, prev, errp);
    if (prev) {
        error_set(errp, prev->category, 0, "%s", prev->message);
        return JOB_DONE;
    }
    if (j->kind == JOB_PUT)
        return step_put(j, errp);
    if (j->kind == JOB_LIST)
        return step_list(j, errp);
    return step_other(j, errp);
}

static void
job_step(FilesJob *j, const Error *prev)
{
    Error *held = NULL; /* a round trip that could not start: the next step's input */
    for (;;) {
        Error *err = NULL;
        int r = job_next(j, prev, &err);
        error_free(held);
        if (r == JOB_RETRY) {
            prev = held = err;
            continue;
        }
        if (r == JOB_DONE)
            e2b_call_done(&j->c, err); /* may free j */
        error_free(err);
        return;
    }
}

static void
job_on_loop(E2bCall *c)
{
    job_step((FilesJob *) c, NULL);
}

static void
job_reply(E2bCall *c, HttpRequest *req, const Error *err)
{
    FilesJob *j = (FilesJob *) c;
    if (j->kind == JOB_GET || j->kind == JOB_PUT) {
        if (err)
            e2b_files_error(req, err);
        else if (j->kind == JOB_GET)
            http_respond_bytes(req, 200, "application/octet-stream", j->got, j->got_len);
        else
            http_respond_json(req, 200, TAKE_PTR(j->infos));
    } else if (err) {
        e2b_rpc_error(req, err);
    } else if (j->exists) {
        e2b_rpc_errorf(req, CONNECT_ALREADY_EXISTS, "the path already exists");
    } else {
        e2b_rpc_reply(req, TAKE_PTR(j->out));
    }
}

/* Posts j; each round trip is bounded on its own (sessions), trips bounds the whole. */
static void
job_post(E2b *e, HttpRequest *req, FilesJob *j, size_t trips)
{
    e2b_post(e, req, &j->c, job_on_loop, job_reply, E2B_CALL_TIMEOUT_USEC * MAX(trips, 1));
}

/* Answers err for a job that never went to the loop. Takes j. */
static void
job_refuse(HttpRequest *req, FilesJob *j, bool rpc, const Error *err)
{
    Error oom = {.category = E_INTERNAL};
    snprintf(oom.message, sizeof(oom.message), "out of memory");
    if (!err)
        err = &oom;
    if (rpc)
        e2b_rpc_error(req, err);
    else
        e2b_files_error(req, err);
    e2b_call_unref(j ? &j->c : NULL);
}

/* ------------------------------------------------------------------ /files */

void
e2b_files_get(E2b *e, HttpRequest *req, E2bEnvdAuth *auth)
{
    _cleanup_error_ Error *err = NULL;
    const char *path = http_query(req, "path"), *why = NULL;
    FilesJob *j = job_new(JOB_GET, auth);

    if (!j) {
        job_refuse(req, NULL, false, NULL);
        return;
    }
    if (!path || e2b_path_map(path, false, &j->p, &why) < 0) {
        error_set(&err, E_INVALID, 0, "path: %s", why ? why : "required");
        job_refuse(req, j, false, err);
        return;
    }
    job_post(e, req, j, 1);
}

/* One file of the upload, checked; its put comes later, on the loop. */
static int
put_add(FilesJob *j, const char *dest, const uint8_t *data, size_t len, Error **errp)
{
    const char *why = NULL, *base;
    char shown[PATH_MAX_BYTES + 64];
    E2bPath p;
    PutStep *ps;

    if (e2b_path_map(dest, false, &p, &why) < 0 ||
        e2b_path_show(&p, NULL, shown, sizeof(shown)) < 0)
        return error_set(errp, E_INVALID, 0, "%.200s: %s", dest, why ? why : "too long");
    if (!(ps = realloc(j->puts, (j->n_puts + 1) * sizeof(*ps))))
        return error_set(errp, E_INTERNAL, ENOMEM, "upload");
    j->puts = ps;
    ps = &j->puts[j->n_puts];
    base = strrchr(p.rel, '/');
    *ps = (PutStep){.rel = strdup(p.rel),
                    .name = strdup(base ? base + 1 : p.rel),
                    .shown = strdup(shown),
                    .data = data,
                    .len = len};
    j->n_puts++;
    if (!ps->rel || !ps->name || !ps->shown)
        return error_set(errp, E_INTERNAL, ENOMEM, "upload");
    return 0;
}

/* The parts to put, in order, until the first one that cannot be (its error is answered
 * after the parts before it went in, as when they were put one by one). */
static int
post_multipart(FilesJob *j, HttpRequest *req, const char *boundary, Error **errp)
{
    const char *query_path = http_query(req, "path");
    size_t len;
    const uint8_t *body = http_body(req, &len);
    MultipartReader r;
    MultipartPart part;
    int k;
    unsigned files = 0;

    multipart_reader_init(&r, body, len, boundary);
    while ((k = multipart_next(&r, &part)) > 0) {
        if (strcmp(part.name, "file") != 0)
            continue;
        const char *dest = query_path && query_path[0] ? query_path : part.filename;
        if (!dest[0])
            return error_set(errp, E_INVALID, 0,
                             "a file part needs a filename (its path) or a "
                             "path query");
        if (++files > 1 && query_path && query_path[0])
            return error_set(errp, E_INVALID, 0,
                             "a path query names one file; this upload "
                             "has several");
        if (put_add(j, dest, part.data, part.len, errp) < 0)
            return -1;
    }
    if (k < 0)
        return error_set(errp, E_INVALID, 0, "multipart body: %s", r.why);
    if (files == 0)
        return error_set(errp, E_INVALID, 0, "the upload has no part named \"file\"");
    return 0;
}

void
e2b_files_post(E2b *e, HttpRequest *req, E2bEnvdAuth *auth)
{
    const char *ctype = http_header(req, "Content-Type"),
               *enc = http_header(req, "Content-Encoding");
    const char *path = http_query(req, "path");
    char boundary[MULTIPART_BOUNDARY_MAX_BYTES + 1];
    size_t len;
    const uint8_t *body = http_body(req, &len);
    FilesJob *j = job_new(JOB_PUT, auth);

    if (!j || !(j->infos = json_array())) {
        job_refuse(req, j, false, NULL);
        return;
    }
    if (enc && strcmp(enc, "identity") != 0)
        error_set(&j->after_puts, E_INVALID, 0,
                  "Content-Encoding %.32s is not supported: send the file "
                  "uncompressed",
                  enc);
    else if (ctype && multipart_boundary(ctype, boundary) == 0)
        (void) post_multipart(j, req, boundary, &j->after_puts);
    else if (ctype && strncmp(ctype, "application/octet-stream", 24) == 0 && path)
        (void) put_add(j, path, body, len, &j->after_puts);
    else
        error_set(&j->after_puts, E_INVALID, 0,
                  "the body must be multipart/form-data (field \"file\"), "
                  "or application/octet-stream with a path query");
    if (j->after_puts && j->n_puts == 0) {
        job_refuse(req, j, false, j->after_puts);
        return;
    }
    job_post(e, req, j, j->n_puts);
}

/* ------------------------------------------------------------------ filesystem calls */

/* The mapped path of the request's field (E_INVALID naming it). */
static int
msg_path(json_t *msg, const char *field, bool allow_root, E2bPath *ret, Error **errp)
{
    json_t *v = json_object_get(msg, field);
    const char *why = "must be a string";
    if (!json_is_string(v) || e2b_path_map(json_string_value(v), allow_root, ret, &why) < 0)
        return error_set(errp, E_INVALID, 0, "%s: %s", field, why);
    return 0;
}

/* A filesystem call on the path in msg's "path" (and MOVE's destination). */
static void
fs_rpc(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg, JobKind kind)
{
    _cleanup_error_ Error *err = NULL;
    FilesJob *j = job_new(kind, auth);
    bool root = kind == JOB_STAT || kind == JOB_LIST;

    if (!j) {
        job_refuse(req, NULL, true, NULL);
        return;
    }
    if (kind == JOB_MOVE ? msg_path(msg, "source", false, &j->p, &err) < 0 ||
                               msg_path(msg, "destination", false, &j->to, &err) < 0
                         : msg_path(msg, "path", root, &j->p, &err) < 0) {
        job_refuse(req, j, true, err);
        return;
    }
    job_post(e, req, j, kind == JOB_MKDIR ? 3 : kind == JOB_MOVE ? 2 : 1); /* round trips */
}

void
e2b_fs_stat(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    fs_rpc(e, req, auth, msg, JOB_STAT);
}

void
e2b_fs_make_dir(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    fs_rpc(e, req, auth, msg, JOB_MKDIR);
}

void
e2b_fs_move(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    fs_rpc(e, req, auth, msg, JOB_MOVE);
}

void
e2b_fs_remove(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    fs_rpc(e, req, auth, msg, JOB_REMOVE);
}

void
e2b_fs_list_dir(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    _cleanup_error_ Error *err = NULL;
    json_t *d = json_object_get(msg, "depth");
    json_int_t depth = json_is_integer(d) ? json_integer_value(d) : 1;
    FilesJob *j = job_new(JOB_LIST, auth);

    if (!j) {
        job_refuse(req, NULL, true, NULL);
        return;
    }
    if (depth == 0)
        depth = 1; /* proto3: an absent uint32 is 0; the SDK sends 1 by default */
    if (depth < 1 || depth > LIST_DEPTH_MAX)
        error_set(&err, E_INVALID, 0, "depth must be 1..%d", LIST_DEPTH_MAX);
    else
        (void) msg_path(msg, "path", true, &j->p, &err);
    if (err) {
        job_refuse(req, j, true, err);
        return;
    }
    j->depth = (unsigned) depth;
    job_post(e, req, j, (size_t) depth);
}
