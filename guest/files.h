/* FilePut, FileGet and FsOp below the workspace (confined through wspath.h).
 *
 * Files and directories the runner creates belong to WsCtx's uid:gid: the session's, or
 * root's when the host asks for root (as_root in runner.proto; dispatch.c picks). The runner
 * itself reads and writes as root either way: the workspace and everything in it is the
 * tenant's, returned whole at the end whatever its modes, so a mode bit inside it hides
 * nothing from the host's caller. Only regular
 * files are read or written: a FIFO, socket or device planted by the program is refused
 * (opened O_NONBLOCK first, so a FIFO cannot block the runner). Errors carry categories that
 * reply.c maps to Error codes: NOT_FOUND, EXISTS, INVALID_PATH (symlink, wrong type,
 * escape), TOO_LARGE, IO. Nothing here logs. */
#pragma once

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "error.h"
#include "message.h"

typedef struct WsCtx {
    int ws_fd; /* O_PATH directory fd of the workspace root */
    uid_t uid; /* owner of what the runner creates; whose identity resolves a STAT's link */
    gid_t gid;
} WsCtx;

int files_put(const WsCtx *ws, const Stockade__Runner__FilePut *p, Error **errp);
/* Reads up to g->max_bytes into buf (which holds at least that) and fills *ret, whose data
 * points into buf. An offset past the end of the file is TOO_LARGE. */
int files_get(const WsCtx *ws, const Stockade__Runner__FileGet *g, uint8_t *buf,
              Stockade__Runner__FileData *ret, Error **errp);
/* Opens a regular file for reading (mirror, FileGet). Returns the fd; fills *ret_st. */
int files_open_regular(int ws_fd, const char *rel, struct stat *ret_st, Error **errp);

/* STAT and LIST fill *ret (free with fsops_result_free); MKDIR, REMOVE and MOVE leave it
 * empty. LIST sorts by name and stops at LIST_MAX_ENTRIES or LIST_REPLY_MAX_BYTES encoded,
 * setting truncated. */
int fsops_run(const WsCtx *ws, const Stockade__Runner__FsOp *op, Stockade__Runner__FsResult *ret,
              Error **errp);
void fsops_result_free(Stockade__Runner__FsResult *r);
