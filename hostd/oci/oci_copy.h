/* COPY and ADD (local files) of a Dockerfile build: a file or a directory's contents from the
 * build context into the tree (images/README.md, "Building from a Dockerfile").
 *
 * The context is the operator's, but what it holds need not be: the source is opened beneath
 * the context with openat2(RESOLVE_BENEATH | NO_MAGICLINKS | NO_XDEV) (an absolute or `..`
 * source, or a symlink leaving the context, is refused); inside a copied directory symlinks
 * are copied as symlinks, never followed, and devices, FIFOs and sockets are skipped. In the
 * tree every directory is found the confined way of oci_apply.h (RESOLVE_IN_ROOT) and what is
 * in a file's way is removed first. Entries are sorted, owned by spec->uid:gid (`--chown`, or
 * root), their modes kept without setuid/setgid, their times spec->mtime_sec: the same context
 * gives the same tree whatever its files' times. Entries and bytes count against the apply's
 * entry cap and *budget_bytes. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "oci_apply.h"

typedef struct OciCopySpec {
    const char *src;  /* relative to the context */
    const char *dest; /* relative to the tree's root, normalised; "" = the root */
    bool dest_is_dir; /* a file lands in dest/<its name> (else dest is the file's path) */
    uint32_t uid, gid;
    int64_t mtime_sec;
} OciCopySpec;

int oci_copy_into(OciApply *a, int ctx_fd, const OciCopySpec *spec, uint64_t *budget_bytes,
                  Error **errp);
