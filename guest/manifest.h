/* The workspace manifest of a Finalize (runner.proto "Finalize", "Manifest").
 *
 * A depth-first walk of the workspace through directory fds: each level is opened relative
 * to its parent with O_NOFOLLOW | O_DIRECTORY, so a symlink is never followed; only regular
 * files and directories are listed (others are counted as skipped); lost+found at the top is
 * not listed (the salvage leaves it out too). Entries over the caps of the request (path
 * bytes, depth) are left out, and the walk stops at max_entries or at
 * FINALIZE_MAX_PATH_BYTES_TOTAL path bytes: the last frame then says truncated. One frame
 * (<= MANIFEST_FRAME_MAX_ENTRIES entries, <= MANIFEST_FRAME_MAX_PATH_BYTES path bytes) per
 * call, so the loop interleaves it with other output. At most max_depth directories are open
 * at once. Nothing here logs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "outq.h"

typedef struct ManifestWalk ManifestWalk;

/* ws_fd is borrowed (an O_PATH or O_RDONLY fd of the workspace root) and must outlive w. */
ManifestWalk *manifest_walk_new(int ws_fd, const Stockade__Runner__Finalize *caps,
                                Error **errp);
void manifest_walk_free(ManifestWalk *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(ManifestWalk, manifest_walk_free)

/* True once the last frame was queued. */
bool manifest_walk_done(const ManifestWalk *w);
/* Queues the next frame (the last one with the totals) with req_id; call while the queue has
 * room. */
int manifest_walk_send_next(ManifestWalk *w, OutQueue *q, uint32_t req_id, Error **errp);
