/* Workspace disk files: the pristine template and in-place resets.
 *
 * Every guest's workspace disk has one fixed virtual size (a restored guest keeps the
 * template's disk size). A slot's disk is reset IN PLACE — same inode — because the warm
 * extraction appliance keeps it open: replacing the file would leave the appliance reading
 * the deleted inode (notes/salvage-2026-11.md). Blocking: call from the worker queue. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#define WORKSPACE_MIN_MIB 16u
#define WORKSPACE_MAX_MIB (1024u * 1024u)

/* Makes template_path (if missing or of another size): an empty ext4 of size_mib whose root
 * belongs to uid:gid, written atomically (temp file + rename). Runs mkfs.ext4. */
int diskfile_ensure_template(const char *template_path, unsigned size_mib, uid_t uid, gid_t gid,
                             Error **errp);
/* Makes path a copy of template_path without changing its inode (creating it if missing):
 * truncate to 0 (drops every block), then copy only the template's data extents and set the
 * size. Holes stay holes. */
int diskfile_reset_in_place(const char *path, const char *template_path, Error **errp);
/* Bytes actually allocated for path (st_blocks * 512). */
int diskfile_allocated_bytes(const char *path, uint64_t *ret_bytes, Error **errp);
