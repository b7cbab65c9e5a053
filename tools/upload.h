/* Local files to send into a workspace: `run --upload PATH` (inline in POST /v1/tasks) and
 * `cp LOCAL ID:PATH` (one PUT per file).
 *
 * A file goes to <prefix>/<its name>; a directory's contents go under <prefix>/, recursively,
 * with their relative paths, sorted by name. Symlinks, devices, FIFOs and sockets are never
 * followed or sent: they are skipped and counted. Caps refuse with an error that names the
 * limit: UPLOAD_FILES_MAX files, depth UPLOAD_DEPTH_MAX, paths of UPLOAD_PATH_MAX_BYTES, and
 * the caller's per-file and total byte caps (run: the daemon's 64 MiB request body holds the
 * files base64-encoded, hence RUN_UPLOAD_* below). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define UPLOAD_FILES_MAX 1024 /* the daemon's SESSION_FILES_MAX */
#define UPLOAD_DEPTH_MAX 32
#define UPLOAD_PATH_MAX_BYTES 1024
#define RUN_UPLOAD_FILE_MAX_BYTES (32ull << 20)
#define RUN_UPLOAD_TOTAL_MAX_BYTES (44ull << 20) /* x 4/3 (base64) + JSON < 64 MiB */
#define CP_UPLOAD_FILE_MAX_BYTES (63ull << 20)   /* one PUT body under the 64 MiB cap */
#define CP_UPLOAD_TOTAL_MAX_BYTES (16ull << 30)

typedef struct UploadEntry {
    char *local;  /* path on this machine */
    char *remote; /* relative workspace path */
    uint64_t size;
    uint32_t mode; /* permission bits 0..0777 */
} UploadEntry;

typedef struct UploadList {
    UploadEntry *v;
    size_t n, cap;
    uint64_t total_bytes;
    size_t skipped;          /* symlinks and special files left out */
    char first_skipped[256]; /* one of them, for the warning */
    uint64_t max_file_bytes, max_total_bytes;
} UploadList;

void upload_list_init(UploadList *u, uint64_t max_file_bytes, uint64_t max_total_bytes);
void upload_list_free(UploadList *u);

/* Adds local (a file or a directory) under prefix ("" = the workspace root). */
int upload_list_add(UploadList *u, const char *local, const char *prefix, Error **errp);
/* Adds one regular file under an explicit remote path. */
int upload_list_add_file(UploadList *u, const char *local, const char *remote, Error **errp);

/* Reads the file of entry e (bounded by the size it was listed with; a file that changed size
 * since is refused). */
int upload_read(const UploadEntry *e, uint8_t **ret, size_t *ret_len, Error **errp);

/* The `files` array of POST /v1/tasks: {"path","content"} for UTF-8 text without NUL, else
 * {"path","content_b64"}, and "mode". */
int upload_files_json(const UploadList *u, json_t **ret, Error **errp);

/* True if remote is a relative workspace path without empty, "." or ".." components. */
bool upload_remote_ok(const char *remote);
