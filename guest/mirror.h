/* Live mirror of the workspace (SessionConfig.mirror).
 *
 * inotify watches every directory of the workspace (at most MIRROR_MAX_WATCHES; deeper or
 * further directories are not mirrored). Watches are added through /proc/self/fd of a
 * confined directory fd, so a swapped-in symlink never makes the runner watch outside.
 * Events are coalesced per path into a pending set (at most MIRROR_PENDING_MAX paths; later
 * events past that are dropped) and sent as FileChanged records, one record or one content
 * chunk (<= FILE_CHUNK_MAX_BYTES) per call, so the loop interleaves them with exec output:
 * - a regular file closed after writing, or moved in: its content in chunks (offset, data,
 *   last=true on the final one), read through the confined open; size is the size at open.
 * - a file over max_file_bytes, or past what is left of budget_bytes (counted per file at
 *   its size when it is opened), is announced with over_budget=true and no content.
 * - a deleted or moved-away path: removed=true. That path may be a directory (a directory
 *   moved out or deleted): the whole subtree is gone.
 * - a directory created or moved in is watched and every regular file in it is sent.
 * Files the host itself wrote with FilePut are reported too. On inotify overflow events are
 * lost (counted); the final workspace pull stays authoritative. Nothing here logs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "outq.h"

typedef struct Mirror Mirror;

Mirror *mirror_new(int ws_fd, uint64_t budget_bytes, uint64_t max_file_bytes, Error **errp);
void mirror_free(Mirror *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Mirror, mirror_free)

int mirror_fd(const Mirror *m);
/* Reads pending inotify events; updates watches and the pending set. */
int mirror_on_events(Mirror *m, Error **errp);
bool mirror_has_work(const Mirror *m);
/* Queues at most one record; call only while the queue has room. */
int mirror_send_next(Mirror *m, OutQueue *q, Error **errp);
