/* An OCI image layout (as skopeo writes it) → a root tree: index.json → the image manifest →
 * the config and each layer, every blob's size and sha256 checked against its descriptor and
 * every layer's uncompressed sha256 against the config's diff_id, the layers applied in
 * order (oci_apply.h). The layout is hostile input: blobs are opened beneath layout_fd with
 * openat2(RESOLVE_BENEATH | NO_SYMLINKS), must be regular files of exactly the size their
 * descriptor says (checked before reading), and JSON blobs are verified before they are
 * parsed. Nothing here logs; progress goes through the caller's callback. */
#pragma once

#include <stdint.h>

#include "error.h"
#include "oci_apply.h"
#include "oci_json.h"

typedef struct OciLimits {
    uint64_t max_bytes;      /* uncompressed bytes of all layers (tar padding included) */
    uint64_t max_blob_bytes; /* one blob as stored (the descriptor's size) */
    uint32_t max_entries;    /* entries of the tree (its inodes) */
    uint32_t max_depth;      /* path components */
    uint64_t max_usec;       /* the whole import */
} OciLimits;

/* 16 GiB unpacked, 8 GiB per blob, 1 000 000 entries, depth 128, 30 minutes. */
void oci_limits_default(OciLimits *ret);

typedef struct OciLayerInfo {
    OciDescriptor desc;
    char diff_id[OCI_DIGEST_BYTES + 1];
    uint64_t unpacked_bytes; /* the uncompressed tar stream */
    uint64_t usec;
} OciLayerInfo;

typedef struct OciImport {
    char manifest_digest[OCI_DIGEST_BYTES + 1];
    OciManifest manifest;
    OciConfig config;
    OciLayerInfo layers[OCI_LAYERS_MAX];
    OciApplyStats stats;
} OciImport;

/* Called after each layer is applied and verified (index from 0). */
typedef void (*OciProgressFn)(void *ctx, size_t index, size_t n, const OciLayerInfo *layer);

/* Applies the image tagged tag (NULL: the only one) of the layout at layout_fd onto root_fd
 * (an empty directory). On success *ret is filled (oci_import_clear frees its config); on
 * failure the tree is half-made and *ret is left empty. */
int oci_import_layout(int layout_fd, const char *tag, int root_fd, const OciLimits *lim,
                      OciProgressFn progress, void *ctx, OciImport *ret, Error **errp);
void oci_import_clear(OciImport *imp);
