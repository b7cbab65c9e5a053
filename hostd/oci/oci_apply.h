/* Applying OCI layers (tar streams) to a root tree on the host, in order, as image-spec's
 * "Applying Changesets" says: whiteouts (`.wh.NAME`) remove what lower layers had, opaque
 * markers (`.wh..wh..opq`) hide a directory's lower contents, later entries replace earlier
 * ones, owners and modes come from the headers. The result is what `mkfs.ext4 -d` packs.
 *
 * A layer is hostile, and this runs as root. What it may do:
 *  - write only beneath root_fd: every lookup is openat2(RESOLVE_IN_ROOT | NO_MAGICLINKS |
 *    NO_XDEV) from root_fd, so a symlink in a parent (absolute, or climbing with ..) resolves
 *    inside the tree as it would in the guest, never on the host; the last component is never
 *    followed (O_NOFOLLOW / AT_SYMLINK_NOFOLLOW; an entry in the way is removed first);
 *  - regular files, directories, symlinks (targets stored as written: they are resolved only
 *    in the guest) and hard links to a regular file already in the tree (this layer or a
 *    lower one), found the same confined way;
 *  - never: a device node, FIFO or socket (skipped and counted: `skipped`), a setuid or setgid
 *    bit (stripped and counted: `stripped`), an xattr or file capability (pax SCHILY.xattr.*
 *    is not applied).
 * Refused with an error naming the layer and the entry (the import fails, nothing is kept):
 * a name that is absolute, holds `..`, a NUL or is over the caps; a hard link whose target is
 * absolute, holds `..`, is missing or is not a regular file; an unknown entry type or a
 * sparse file; a bad owner; more than max_entries entries (all layers, implied parent
 * directories included: the tree's inode count); the time budget. Bytes are bounded by the
 * stream's budget (oci_stream.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "oci_pathset.h"
#include "oci_stream.h"

#define OCI_APPLY_NAME_MAX_BYTES 4000u /* a whole relative path (openat2 takes < PATH_MAX) */
#define OCI_APPLY_ESC_BYTES 160u       /* an entry name quoted in a message */

typedef struct OciApplyStats {
    uint64_t file_bytes;
    uint32_t entries; /* inodes made or replaced, implied parents included */
    uint32_t files, dirs, symlinks, hardlinks, whiteouts;
    uint32_t skipped;  /* devices, FIFOs, sockets */
    uint32_t stripped; /* files or dirs that lost a setuid/setgid bit */
    char first_skipped[OCI_APPLY_ESC_BYTES], first_stripped[OCI_APPLY_ESC_BYTES];
} OciApplyStats;

typedef struct OciApply {
    int root_fd; /* the tree (borrowed), an empty directory before the first layer */
    uint32_t max_entries, max_depth;
    uint64_t deadline_usec; /* CLOCK_MONOTONIC */
    OciApplyStats stats;
    OciPathSet seen;   /* paths the current layer wrote, with their parents */
    const char *label; /* "layer 2/5 (sha256:…)" */
} OciApply;

/* openat2(root_fd, path ("" = root_fd itself), flags | O_CLOEXEC, RESOLVE_IN_ROOT |
 * NO_MAGICLINKS | NO_XDEV): symlinks, absolute or climbing, resolve inside the tree. */
int oci_open_in_root(int root_fd, const char *path, int flags);

/* Opens directory path ("" = the root) of the tree the confined way; with create, missing
 * directories are made root-owned 0755 and counted as entries. -1 with errno. */
int oci_apply_open_dir(OciApply *a, const char *path, bool create, int *ret_fd);

/* Applies one layer read from s, labelled for messages. On error the tree is half-applied:
 * the caller throws it away. */
int oci_apply_layer(OciApply *a, const char *label, OciStream *s, Error **errp);
void oci_apply_free(OciApply *a);
