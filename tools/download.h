/* Downloading a session's workspace (GET .../workspace, a tar) into a local directory.
 *
 * The tar is untrusted (it holds what a hostile program left). It is streamed through the
 * daemon's own fuzzed extractor (hostd/extract: extract_untar), so only regular files and
 * directories are made, beneath the directory, never through a symlink, never replacing what
 * is there; absolute names, `..`, links, devices and FIFOs are skipped and counted; modes lose
 * setuid/setgid/sticky and group/other write. The DOWNLOAD_* caps bound bytes, entries, depth,
 * name length and time. The directory must be new or empty, so what is in it afterwards is
 * exactly what came from the workspace. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "error.h"
#include "output.h"

#define DOWNLOAD_MAX_TOTAL_BYTES (64ull << 30)
#define DOWNLOAD_MAX_FILE_BYTES (64ull << 30)
#define DOWNLOAD_MAX_FILES 200000u /* the daemon's tar writer stops at as many entries */
#define DOWNLOAD_MAX_DEPTH 64u
#define DOWNLOAD_MAX_NAME_BYTES 4096u
#define DOWNLOAD_MAX_USEC (6ull * 3600 * 1000000)
#define DOWNLOAD_FILE_MAX_BYTES (4ull << 30) /* cp ID:PATH LOCAL, one file */

typedef struct DownloadResult {
    uint64_t bytes;
    uint32_t files, dirs, skipped;
    bool truncated;     /* a cap or a malformed stream cut it short */
    char stop[12];      /* extract_stop_name(): "none", "bytes", "malformed", ... */
    char workspace[16]; /* the daemon's X-Stockade-Workspace: "final" or "mirror" */
    bool interrupted;   /* the client's interrupt hook stopped it */
} DownloadResult;

/* OK when dir does not exist yet (it will be made, with its parents) or is an empty directory
 * that is not a symlink. E_INVALID naming the fix otherwise. */
int download_dir_check(const char *dir, Error **errp);

/* Makes dir if needed and extracts the tar answer of GET `path` into it. expected_bytes (0 if
 * unknown) sizes the progress bar. Files that arrived stay even when it fails. */
int download_workspace(Client *c, const char *path, const char *dir, Progress *progress,
                       uint64_t expected_bytes, DownloadResult *ret, Error **errp);

/* The extraction alone: tar from tar_fd into the directory dirfd, with the DOWNLOAD_* caps.
 * Reads tar_fd to its end. (Unit-tested with hostile archives.) */
int download_untar_fd(int tar_fd, int dirfd, DownloadResult *ret, Error **errp);

/* GET `path` (one file) into local: written to a temporary file beside it, then renamed over
 * it; "-" writes to stdout. At most DOWNLOAD_FILE_MAX_BYTES. */
int download_file(Client *c, const char *path, const char *local, uint64_t *ret_bytes,
                  Error **errp);
