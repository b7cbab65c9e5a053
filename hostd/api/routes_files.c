/* Files of a session: PUT and GET one file, GET the whole workspace as a tar.
 * A running session's files go to and come from its guest (chunked, each chunk bounded by
 * its own deadline). An ended session's files come from its artifact folder, opened with
 * openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) so nothing outside it is ever served. The
 * workspace tar is always the artifact folder: for a live session that is the live mirror
 * so far (header X-Stockade-Workspace: mirror), for an ended one the final result (final). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_internal.h"
#include "fdutil.h"
#include "message.h"
#include "tarwriter.h"

/* The workspace path from segment `from` on, joined and checked. */
static char *
api_workspace_path(ApiCtx *c, size_t from)
{
    size_t len = 0;
    for (size_t i = from; i < c->n_seg; i++)
        len += strlen(c->seg[i]) + 1;
    char *p = malloc(len + 1), *o = p;
    if (!p)
        return NULL;
    for (size_t i = from; i < c->n_seg; i++)
        o += sprintf(o, "%s%s", i > from ? "/" : "", c->seg[i]);
    *o = '\0';
    if (!msg_path_is_valid(p, false)) {
        free(p);
        return NULL;
    }
    return p;
}

/* ------------------------------------------------------------------ put */

static void
put_done(void *userdata, const Error *err)
{
    ApiCtx *c = userdata;
    _cleanup_free_ char *path = c->extra; /* the reply frees c */
    if (err)
        api_reply_error(c, err);
    else
        api_reply_json(c, 201, json_pack("{s:s}", "path", path));
}

static void
put_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    size_t len;
    const uint8_t *data = http_body(c->req, &len);
    const char *mode_s = http_query(c->req, "mode");
    uint64_t mode = 0644;

    if (mode_s && api_query_number(mode_s, 8, 0777, &mode) < 0) {
        free(c->extra);
        api_reply_errorf(c, E_INVALID, "mode must be octal 0..0777");
        return;
    }
    if (sessions_file_put(c->api->d.sessions, c->admin ? NULL : c->tenant, c->seg[2], c->extra,
                          data, len, (uint32_t) mode, put_done, c, &err) < 0) {
        free(c->extra);
        api_reply_error(c, err);
    }
}

void
route_file_put(ApiCtx *c)
{
    if (!api_session_id(c, 2))
        return;
    if (!(c->extra = api_workspace_path(c, 4))) {
        api_reply_errorf(c, E_INVALID, "not a workspace path (relative, no '.' or '..')");
        return;
    }
    api_on_loop(c, put_on_loop);
}

/* ------------------------------------------------------------------ get */

static void
get_done(void *userdata, const Error *err, uint8_t *data, size_t len)
{
    ApiCtx *c = userdata;
    free(c->extra);
    if (err) {
        api_reply_error(c, err);
        return;
    }
    http_respond_bytes(c->req, 200, "application/octet-stream", data, len);
    free(data);
    api_ctx_done(c);
}

static void
get_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    if (sessions_file_get(c->api->d.sessions, c->admin ? NULL : c->tenant, c->seg[2], c->extra,
                          API_FILE_GET_MAX_BYTES, get_done, c, &err) < 0) {
        free(c->extra);
        api_reply_error(c, err);
    }
}

static void
get_from_artifacts(ApiCtx *c, const char *id, const char *path)
{
    _cleanup_free_ char *dir = NULL;
    _cleanup_error_ Error *err = NULL;
    struct stat st;

    if (sessions_artifact_dir(c->api->d.state_dir, id, &dir, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = dfd >= 0 ? openat2_beneath(dfd, path, O_RDONLY) : -1;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        safe_close(fd);
        api_reply_errorf(c, E_NOT_FOUND, "no file %.200s in the session's artifacts", path);
        return;
    }
    http_respond_file(c->req, 200, "application/octet-stream", fd, (uint64_t) st.st_size);
    api_ctx_done(c);
}

void
route_file_get(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    SessionRecord r;
    const char *id = api_session_id(c, 2);

    if (!id)
        return;
    _cleanup_free_ char *path = api_workspace_path(c, 4);
    if (!path) {
        api_reply_errorf(c, E_INVALID, "not a workspace path (relative, no '.' or '..')");
        return;
    }
    if (api_load_session(c, id, &r, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    bool running = r.state == ST_RUNNING;
    session_record_clear(&r);
    if (!running) { /* ended, or ending: the artifact folder is the answer */
        get_from_artifacts(c, id, path);
        return;
    }
    c->extra = TAKE_PTR(path);
    api_on_loop(c, get_on_loop);
}

/* ------------------------------------------------------------------ workspace tar */

static ssize_t
tar_produce(HttpStream *st, void *userdata, uint8_t *buf, size_t cap)
{
    (void) st;
    return tarw_read(userdata, buf, cap);
}

static void
tar_free(void *userdata)
{
    tarw_free(userdata);
}

void
route_workspace(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    _cleanup_free_ char *dir = NULL;
    SessionRecord r;
    TarWriter *t;
    const char *id = api_session_id(c, 2);

    if (!id)
        return;
    if (api_load_session(c, id, &r, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    bool ended = r.state == ST_ENDED;
    session_record_clear(&r);
    if (sessions_artifact_dir(c->api->d.state_dir, id, &dir, &err) < 0 ||
        tarw_new(dir, &t, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    char disposition[96];
    snprintf(disposition, sizeof(disposition), "attachment; filename=\"%s.tar\"", id);
    http_response_header(c->req, "Content-Disposition", disposition);
    http_response_header(c->req, "X-Stockade-Workspace", ended ? "final" : "mirror");
    http_respond_stream(c->req, 200, "application/x-tar", tar_produce, t, tar_free);
    api_ctx_done(c);
}
