/* Limits and schema of GuestMsg (what the daemon accepts from a hostile guest). */
#include <string.h>

#include "check.h"

#define FAIL(...) check_fail(err, errcap, __VA_ARGS__)

static int
check_exec_exit(const Stockade__Runner__ExecExit *x, char *err, size_t errcap)
{
    if (!check_known(&x->base) || x->exec_id == 0)
        return FAIL("exec_exit: unknown fields or exec_id 0");
    bool exited = x->exit_code >= 0 && x->exit_code <= 255 && x->signal == 0;
    bool killed = x->exit_code == -1 && x->signal >= 1 && x->signal <= 64;
    if (!exited && !killed)
        return FAIL("exec_exit: exit_code %d with signal %d is inconsistent", x->exit_code,
                    x->signal);
    return 0;
}

static int
check_fs_entry(const Stockade__Runner__FsEntry *e, char *err, size_t errcap)
{
    if (!check_known(&e->base) || !msg_path_is_valid(e->name, true))
        return FAIL("fs_result.entries: bad name");
    if (e->type < STOCKADE__RUNNER__FS_ENTRY__TYPE__FILE ||
        e->type > STOCKADE__RUNNER__FS_ENTRY__TYPE__OTHER || (e->mode & ~07777u) != 0)
        return FAIL("fs_result.entries: bad type or mode");
    bool is_link = e->type == STOCKADE__RUNNER__FS_ENTRY__TYPE__SYMLINK;
    if (!check_len(e->symlink_target, PATH_MAX_BYTES, !is_link) ||
        (!is_link && e->symlink_target[0] != '\0'))
        return FAIL("fs_result.entries: bad symlink_target");
    bool resolved = e->resolved_target[0] != '\0';
    if (!check_len(e->resolved_target, PATH_MAX_BYTES, true) ||
        (resolved && (!is_link || e->resolved_target[0] != '/')) || (int) e->target_type < 0 ||
        e->target_type > STOCKADE__RUNNER__FS_ENTRY__TYPE__OTHER ||
        (e->target_mode & ~07777u) != 0 ||
        (!resolved && (e->target_type != 0 || e->target_mode != 0)))
        return FAIL("fs_result.entries: bad resolved_target, target_type or target_mode");
    return 0;
}

static int
check_fs_result(const Stockade__Runner__FsResult *r, char *err, size_t errcap)
{
    if (!check_known(&r->base) || r->n_entries > LIST_MAX_ENTRIES)
        return FAIL("fs_result: unknown fields or over %d entries", LIST_MAX_ENTRIES);
    for (size_t i = 0; i < r->n_entries; i++)
        if (check_fs_entry(r->entries[i], err, errcap) < 0)
            return -1;
    return 0;
}

static int
check_file_changed(const Stockade__Runner__FileChanged *c, char *err, size_t errcap)
{
    if (!check_known(&c->base) || !msg_path_is_valid(c->path, false))
        return FAIL("file_changed.path: not a valid workspace path");
    if (c->data.len > FILE_CHUNK_MAX_BYTES || (c->mode & ~0777u) != 0)
        return FAIL("file_changed: data over %u bytes or bad mode", FILE_CHUNK_MAX_BYTES);
    if ((c->removed || c->over_budget) && (c->data.len != 0 || c->offset != 0))
        return FAIL("file_changed: removed/over_budget records carry no content");
    if (c->removed && c->over_budget)
        return FAIL("file_changed: removed and over_budget are exclusive");
    if (c->offset > c->size || c->data.len > c->size - c->offset)
        return FAIL("file_changed: chunk beyond the announced size");
    return 0;
}

/* Per frame only; what spans frames (totals, duplicates, caps) is the host's manifest check. */
static int
check_manifest(const Stockade__Runner__Manifest *m, char *err, size_t errcap)
{
    size_t path_bytes = 0;

    if (!check_known(&m->base) || m->n_entries > MANIFEST_FRAME_MAX_ENTRIES)
        return FAIL("manifest: unknown fields or over %d entries", MANIFEST_FRAME_MAX_ENTRIES);
    if (!m->last && (m->total_entries || m->total_file_bytes || m->truncated || m->skipped))
        return FAIL("manifest: totals before the last frame");
    for (size_t i = 0; i < m->n_entries; i++) {
        const Stockade__Runner__ManifestEntry *e = m->entries[i];
        if (!check_known(&e->base) || !msg_path_is_valid(e->path, false))
            return FAIL("manifest.entries: bad path");
        bool dir = e->type == STOCKADE__RUNNER__MANIFEST_ENTRY__TYPE__DIR;
        if ((!dir && e->type != STOCKADE__RUNNER__MANIFEST_ENTRY__TYPE__FILE) ||
            (e->mode & ~0777u) != 0 || (dir && e->size != 0))
            return FAIL("manifest.entries: bad type, mode or size");
        path_bytes += strlen(e->path);
    }
    if (path_bytes > MANIFEST_FRAME_MAX_PATH_BYTES)
        return FAIL("manifest: paths over %u bytes in one frame", MANIFEST_FRAME_MAX_PATH_BYTES);
    return 0;
}

static int
check_error(const Stockade__Runner__Error *e, char *err, size_t errcap)
{
    if (!check_known(&e->base) || e->code < STOCKADE__RUNNER__ERROR__CODE__BAD_FRAME ||
        e->code > STOCKADE__RUNNER__ERROR__CODE__INTERNAL)
        return FAIL("error: unknown code");
    if (!check_len(e->message, ERROR_MESSAGE_MAX_BYTES, true) || !check_printable(e->message))
        return FAIL("error.message: over %d bytes or not printable", ERROR_MESSAGE_MAX_BYTES);
    return 0;
}

static int
check_guest_body(const GuestMsg *m, char *err, size_t errcap)
{
    switch (m->body_case) {
    case STOCKADE__RUNNER__GUEST_MSG__BODY_READY:
        if (!check_known(&m->ready->base) ||
            !check_len(m->ready->runner_version, VERSION_MAX_BYTES, false) ||
            !check_printable(m->ready->runner_version))
            return FAIL("ready: bad runner_version");
        return 0;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ACK:
        return check_known(&m->ack->base) ? 0 : FAIL("ack: unknown fields");
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_STARTED:
        if (!check_known(&m->exec_started->base) || m->exec_started->exec_id == 0 ||
            m->exec_started->pid <= 1)
            return FAIL("exec_started: exec_id 0 or pid <= 1");
        return 0;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT:
        if (!check_known(&m->output->base) || m->output->exec_id == 0 ||
            (m->output->stream != STOCKADE__RUNNER__OUTPUT__STREAM__STDOUT &&
             m->output->stream != STOCKADE__RUNNER__OUTPUT__STREAM__STDERR) ||
            m->output->data.len == 0 || m->output->data.len > OUTPUT_CHUNK_MAX_BYTES)
            return FAIL("output: bad exec_id, stream or data length");
        return 0;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT:
        return check_exec_exit(m->exec_exit, err, errcap);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_DATA:
        if (!check_known(&m->file_data->base) || m->file_data->data.len > FILE_CHUNK_MAX_BYTES ||
            m->file_data->offset > m->file_data->size ||
            m->file_data->data.len > m->file_data->size - m->file_data->offset)
            return FAIL("file_data: chunk over %u bytes or beyond size", FILE_CHUNK_MAX_BYTES);
        return 0;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_FS_RESULT:
        return check_fs_result(m->fs_result, err, errcap);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_CHANGED:
        return check_file_changed(m->file_changed, err, errcap);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR:
        return check_error(m->error, err, errcap);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_MANIFEST:
        return check_manifest(m->manifest, err, errcap);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_PONG:
        return check_known(&m->pong->base) ? 0 : FAIL("pong: unknown fields");
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_OPEN:
        return check_tunnel_open(m->tunnel_open, err, errcap);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_DATA:
        return check_tunnel_data(m->tunnel_data, err, errcap);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CREDIT:
        return check_tunnel_credit(m->tunnel_credit, err, errcap);
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CLOSE:
        return check_tunnel_close(m->tunnel_close, err, errcap);
    default:
        return FAIL("guest message without a body");
    }
}

int
msg_check_guest(const GuestMsg *m, char *err, size_t errcap)
{
    if (!check_known(&m->base))
        return FAIL("guest message: unknown fields");
    if (check_guest_body(m, err, errcap) < 0)
        return -1;
    switch (m->body_case) {
    case STOCKADE__RUNNER__GUEST_MSG__BODY_READY:
    case STOCKADE__RUNNER__GUEST_MSG__BODY_OUTPUT:
    case STOCKADE__RUNNER__GUEST_MSG__BODY_EXEC_EXIT:
    case STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_CHANGED:
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_OPEN:
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_DATA:
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CREDIT:
    case STOCKADE__RUNNER__GUEST_MSG__BODY_TUNNEL_CLOSE:
        if (m->req_id != 0)
            return FAIL("unsolicited message with req_id %u", m->req_id);
        return 0;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR:
        return 0; /* an error may answer a request or stand alone */
    default:
        return m->req_id != 0 ? 0 : FAIL("reply without req_id");
    }
}
