/* Files of a running sandbox: GET/POST /files and the filesystem.Filesystem unary calls, as
 * round trips with its runner (whole-file get/put, FsOp). Only /workspace is reachable;
 * /home/user, "~" and relative paths name it too (e2b_wire.h). Uploads are multipart (one
 * part per file, its filename the destination, a "path" query winning for a single file) or,
 * for clients that send it, a raw application/octet-stream body with a "path" query;
 * compressed bodies are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_internal.h"
#include "multipart.h"

#define LIST_DEPTH_MAX 16 /* ListDir depth; entries are capped at LIST_MAX_ENTRIES in total */

/* ------------------------------------------------------------------ one round trip */

typedef enum { FILE_GET, FILE_PUT, FILE_FS } FileOp;

typedef struct FileCall {
    E2bCall c;
    E2bEnvdAuth auth; /* borrowed from the handler: used by fn's synchronous part only */
    FileOp op;
    SessionsFsKind fs_kind;
    const char *path, *path2;
    const uint8_t *data; /* FILE_PUT: borrowed, sessions_file_put() copies */
    size_t len;
    /* out */
    uint8_t *got;
    size_t got_len;
    SessionsFsEntry *entries;
    size_t n_entries;
    bool truncated;
} FileCall;

static void
file_call_free(E2bCall *c)
{
    FileCall *fc = (FileCall *) c;
    free(fc->got);
    sessions_fs_entries_free(fc->entries, fc->n_entries);
}

static void
put_done(void *userdata, const Error *err)
{
    e2b_call_done(userdata, err);
}

static void
get_done(void *userdata, const Error *err, uint8_t *data, size_t len)
{
    FileCall *fc = userdata;
    fc->got = data;
    fc->got_len = len;
    e2b_call_done(&fc->c, err);
}

static void
fs_done(void *userdata, const Error *err, SessionsFsEntry *entries, size_t n, bool truncated)
{
    FileCall *fc = userdata;
    fc->entries = entries;
    fc->n_entries = n;
    fc->truncated = truncated;
    e2b_call_done(&fc->c, err);
}

static void
file_on_loop(E2bCall *c)
{
    FileCall *fc = (FileCall *) c;
    _cleanup_error_ Error *err = NULL;
    E2bSandbox *sb = e2b_envd_sandbox(c->e, &fc->auth, &err);
    Sessions *s = c->e->d.sessions;
    int r = -1;

    if (sb && fc->op == FILE_GET)
        r = sessions_file_get(s, NULL, sb->session_id, fc->path, E2B_FILE_GET_MAX_BYTES, get_done,
                              fc, &err);
    else if (sb && fc->op == FILE_PUT)
        r = sessions_file_put(s, NULL, sb->session_id, fc->path, fc->data, fc->len, 0644, put_done,
                              fc, &err);
    else if (sb)
        r = sessions_fs_op(s, NULL, sb->session_id, fc->fs_kind, fc->path, fc->path2, fs_done, fc,
                           &err);
    if (r < 0)
        e2b_call_done(c, err); /* else the round trip's callback does */
}

/* One round trip; on success the caller reads and then unrefs *ret. The auth's strings stay
 * the handler's: fn reads them only in its synchronous part (see e2b_call()). */
static int
file_call(E2b *e, const E2bEnvdAuth *auth, const FileCall *proto, FileCall **ret, Error **errp)
{
    FileCall *fc = e2b_call_new(sizeof(*fc), file_call_free);
    if (!fc)
        return error_set(errp, E_INTERNAL, ENOMEM, "file call");
    E2bCall head = fc->c;
    *fc = *proto;
    fc->c = head;
    fc->auth = *auth;
    int r = e2b_call(e, &fc->c, file_on_loop, E2B_CALL_TIMEOUT_USEC, errp);
    explicit_bzero(fc->auth.token, sizeof(fc->auth.token));
    fc->auth.sig_prefix = fc->auth.sig_suffix = NULL; /* borrowed: not freed with the call */
    if (r < 0) {
        e2b_call_unref(&fc->c);
        return -1;
    }
    *ret = fc;
    return 0;
}

static int
fs_call(E2b *e, const E2bEnvdAuth *auth, SessionsFsKind kind, const char *path, const char *path2,
        FileCall **ret, Error **errp)
{
    FileCall proto = {.op = FILE_FS, .fs_kind = kind, .path = path, .path2 = path2};
    return file_call(e, auth, &proto, ret, errp);
}

/* ------------------------------------------------------------------ /files */

void
e2b_files_get(E2b *e, HttpRequest *req, E2bEnvdAuth *auth)
{
    _cleanup_error_ Error *err = NULL;
    const char *path = http_query(req, "path"), *why = NULL;
    E2bPath p;
    FileCall *fc = NULL;

    if (!path || e2b_path_map(path, false, &p, &why) < 0) {
        error_set(&err, E_INVALID, 0, "path: %s", why ? why : "required");
        e2b_files_error(req, err);
        return;
    }
    FileCall proto = {.op = FILE_GET, .path = p.rel};
    if (file_call(e, auth, &proto, &fc, &err) < 0) {
        e2b_files_error(req, err);
        return;
    }
    http_respond_bytes(req, 200, "application/octet-stream", fc->got, fc->got_len);
    e2b_call_unref(&fc->c);
}

/* Writes one file; appends its WriteInfo to infos. */
static int
put_one(E2b *e, E2bEnvdAuth *auth, const char *dest, const uint8_t *data, size_t len, json_t *infos,
        Error **errp)
{
    const char *why = NULL;
    char shown[PATH_MAX_BYTES + 64];
    E2bPath p;
    FileCall *fc = NULL;

    if (e2b_path_map(dest, false, &p, &why) < 0 ||
        e2b_path_show(&p, NULL, shown, sizeof(shown)) < 0)
        return error_set(errp, E_INVALID, 0, "%.200s: %s", dest, why ? why : "too long");
    FileCall proto = {.op = FILE_PUT, .path = p.rel, .data = data, .len = len};
    if (file_call(e, auth, &proto, &fc, errp) < 0)
        return -1;
    e2b_call_unref(&fc->c);
    const char *base = strrchr(p.rel, '/');
    json_array_append_new(infos, e2b_render_write_info(base ? base + 1 : p.rel, shown));
    return 0;
}

static int
post_multipart(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, const char *boundary, json_t *infos,
               Error **errp)
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
        if (put_one(e, auth, dest, part.data, part.len, infos, errp) < 0)
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
    _cleanup_error_ Error *err = NULL;
    const char *ctype = http_header(req, "Content-Type"),
               *enc = http_header(req, "Content-Encoding");
    const char *path = http_query(req, "path");
    char boundary[MULTIPART_BOUNDARY_MAX_BYTES + 1];
    json_t *infos = json_array();
    size_t len;
    const uint8_t *body = http_body(req, &len);

    if (enc && strcmp(enc, "identity") != 0)
        error_set(&err, E_INVALID, 0,
                  "Content-Encoding %.32s is not supported: send the file "
                  "uncompressed",
                  enc);
    else if (ctype && multipart_boundary(ctype, boundary) == 0)
        (void) post_multipart(e, req, auth, boundary, infos, &err);
    else if (ctype && strncmp(ctype, "application/octet-stream", 24) == 0 && path)
        (void) put_one(e, auth, path, body, len, infos, &err);
    else
        error_set(&err, E_INVALID, 0,
                  "the body must be multipart/form-data (field \"file\"), "
                  "or application/octet-stream with a path query");
    if (err) {
        json_decref(infos);
        e2b_files_error(req, err);
        return;
    }
    http_respond_json(req, 200, infos);
}

/* ------------------------------------------------------------------ filesystem calls */

static E2bFileType
file_type(SessionsFsType t)
{
    return t == SESSIONS_FS_FILE      ? E2B_FILE_FILE
           : t == SESSIONS_FS_DIR     ? E2B_FILE_DIR
           : t == SESSIONS_FS_SYMLINK ? E2B_FILE_SYMLINK
                                      : E2B_FILE_OTHER;
}

/* EntryInfo of an entry at shown (the path as the client sees it). */
static json_t *
entry_json(const SessionsFsEntry *en, const char *shown)
{
    const char *base = strrchr(shown, '/');
    E2bEntry x = {.name = base && base[1] ? base + 1 : shown,
                  .type = file_type(en->type),
                  .size = en->size,
                  .mode = en->mode,
                  .mtime_ns = en->mtime_ns,
                  .symlink_target = en->symlink_target};
    return e2b_render_entry(&x, shown);
}

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

/* STAT of p, answered as {"entry": EntryInfo}. */
static int
stat_entry(E2b *e, const E2bEnvdAuth *auth, const E2bPath *p, json_t **ret, Error **errp)
{
    char shown[PATH_MAX_BYTES + 64];
    FileCall *fc = NULL;
    if (e2b_path_show(p, NULL, shown, sizeof(shown)) < 0)
        return error_set(errp, E_INVALID, 0, "the path is too long");
    if (fs_call(e, auth, SESSIONS_FS_STAT, p->rel, NULL, &fc, errp) < 0)
        return -1;
    int r = fc->n_entries == 1 ? 0 : error_set(errp, E_GUEST, 0, "the guest's stat was empty");
    if (r == 0)
        *ret = json_pack("{s:o}", "entry", entry_json(&fc->entries[0], shown));
    e2b_call_unref(&fc->c);
    return r;
}

void
e2b_fs_stat(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    _cleanup_error_ Error *err = NULL;
    E2bPath p;
    json_t *out = NULL;
    if (msg_path(msg, "path", true, &p, &err) < 0 || stat_entry(e, auth, &p, &out, &err) < 0)
        e2b_rpc_error(req, err);
    else
        e2b_rpc_reply(req, out);
}

void
e2b_fs_make_dir(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    _cleanup_error_ Error *err = NULL;
    E2bPath p;
    json_t *out = NULL;
    FileCall *fc = NULL;

    if (msg_path(msg, "path", false, &p, &err) < 0) {
        e2b_rpc_error(req, err);
        return;
    }
    if (stat_entry(e, auth, &p, &out, &err) == 0) { /* envd: an existing path is a conflict */
        json_decref(out);
        e2b_rpc_errorf(req, CONNECT_ALREADY_EXISTS, "the path already exists");
        return;
    }
    if (err->category == E_NOT_FOUND) {
        error_free(TAKE_PTR(err));
        if (fs_call(e, auth, SESSIONS_FS_MKDIR, p.rel, NULL, &fc, &err) == 0) {
            e2b_call_unref(&fc->c);
            (void) stat_entry(e, auth, &p, &out, &err);
        }
    }
    if (err)
        e2b_rpc_error(req, err);
    else
        e2b_rpc_reply(req, out);
}

void
e2b_fs_move(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    _cleanup_error_ Error *err = NULL;
    E2bPath from, to;
    json_t *out = NULL;
    FileCall *fc = NULL;

    if (msg_path(msg, "source", false, &from, &err) == 0 &&
        msg_path(msg, "destination", false, &to, &err) == 0 &&
        fs_call(e, auth, SESSIONS_FS_MOVE, from.rel, to.rel, &fc, &err) == 0) {
        e2b_call_unref(&fc->c);
        (void) stat_entry(e, auth, &to, &out, &err);
    }
    if (err)
        e2b_rpc_error(req, err);
    else
        e2b_rpc_reply(req, out);
}

void
e2b_fs_remove(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    _cleanup_error_ Error *err = NULL;
    E2bPath p;
    FileCall *fc = NULL;
    if (msg_path(msg, "path", false, &p, &err) < 0 ||
        fs_call(e, auth, SESSIONS_FS_REMOVE, p.rel, NULL, &fc, &err) < 0) {
        e2b_rpc_error(req, err);
        return;
    }
    e2b_call_unref(&fc->c);
    e2b_rpc_reply(req, NULL);
}

/* Lists dir (workspace-relative rel, shown as shown) into out, then its subdirectories while
 * depth allows and the total stays under LIST_MAX_ENTRIES. */
static int
list_into(E2b *e, const E2bEnvdAuth *auth, const E2bPath *dir, unsigned depth, json_t *out,
          Error **errp)
{
    FileCall *fc = NULL;
    if (fs_call(e, auth, SESSIONS_FS_LIST, dir->rel, NULL, &fc, errp) < 0)
        return -1;
    int r = 0;
    for (size_t i = 0; i < fc->n_entries && r == 0; i++) {
        const SessionsFsEntry *en = &fc->entries[i];
        char shown[PATH_MAX_BYTES + 64];
        E2bPath child = {.base = dir->base};
        int n = snprintf(child.rel, sizeof(child.rel), "%s%s%s", dir->rel, dir->rel[0] ? "/" : "",
                         en->name);
        if (n < 0 || (size_t) n >= sizeof(child.rel) || strchr(en->name, '/') ||
            e2b_path_show(&child, NULL, shown, sizeof(shown)) < 0)
            continue; /* a name the guest should not have sent, or too deep to show */
        if (json_array_size(out) >= LIST_MAX_ENTRIES)
            break;
        json_array_append_new(out, entry_json(en, shown));
        if (en->type == SESSIONS_FS_DIR && depth > 1)
            r = list_into(e, auth, &child, depth - 1, out, errp);
    }
    e2b_call_unref(&fc->c);
    return r;
}

void
e2b_fs_list_dir(E2b *e, HttpRequest *req, E2bEnvdAuth *auth, json_t *msg)
{
    _cleanup_error_ Error *err = NULL;
    json_t *d = json_object_get(msg, "depth");
    json_int_t depth = json_is_integer(d) ? json_integer_value(d) : 1;
    E2bPath p;
    json_t *entries = json_array();

    if (depth == 0)
        depth = 1; /* proto3: an absent uint32 is 0; the SDK sends 1 by default */
    if (depth < 1 || depth > LIST_DEPTH_MAX)
        error_set(&err, E_INVALID, 0, "depth must be 1..%d", LIST_DEPTH_MAX);
    else if (msg_path(msg, "path", true, &p, &err) == 0)
        (void) list_into(e, auth, &p, (unsigned) depth, entries, &err);
    if (err) {
        json_decref(entries);
        e2b_rpc_error(req, err);
        return;
    }
    e2b_rpc_reply(req, json_pack("{s:o}", "entries", entries));
}
