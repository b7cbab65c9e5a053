/* The JSON documents of an OCI image layout (image-spec v1.0/1.1): index.json, an image
 * manifest and an image config; Docker's schema-2 media types are accepted as their OCI
 * twins (skopeo writes what it read). Pure: text in, checked structs out; no I/O.
 *
 * Every document is hostile. Before jansson sees one it must be under OCI_JSON_MAX_BYTES and
 * nest at most OCI_JSON_MAX_DEPTH deep; digests must be "sha256:" + 64 lower-case hex (no
 * other algorithm is verified, so none is accepted); sizes are integers in 0..2^53; counts
 * and string lengths are capped by the named limits below. A document that breaks a rule is
 * refused as a whole (E_INVALID, the field named), never half-used. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define OCI_JSON_MAX_BYTES (4u * 1024u * 1024u)
#define OCI_JSON_MAX_DEPTH 16u
#define OCI_DIGEST_BYTES 71u /* "sha256:" + 64 hex */
#define OCI_MEDIA_TYPE_MAX_BYTES 128u
#define OCI_LAYERS_MAX 128u
#define OCI_ENV_MAX 256u
#define OCI_ENV_MAX_BYTES 32768u /* one "NAME=value" (the runner's ENV_VALUE_MAX_BYTES) */
#define OCI_ARGV_MAX 256u
#define OCI_ARG_MAX_BYTES 4096u
#define OCI_PATH_MAX_BYTES 4096u /* WorkingDir */
#define OCI_USER_MAX_BYTES 256u
#define OCI_TAG_MAX_BYTES 128u
#define OCI_SIZE_MAX (UINT64_C(1) << 53)

typedef enum OciCompression {
    OCI_COMPRESSION_NONE,
    OCI_COMPRESSION_GZIP,
    OCI_COMPRESSION_ZSTD,
} OciCompression;

typedef struct OciDescriptor {
    char media_type[OCI_MEDIA_TYPE_MAX_BYTES + 1];
    char digest[OCI_DIGEST_BYTES + 1];
    uint64_t size;
    OciCompression compression; /* layers only */
} OciDescriptor;

typedef struct OciManifest {
    OciDescriptor config;
    OciDescriptor layers[OCI_LAYERS_MAX];
    size_t n_layers;
} OciManifest;

/* The parts of an image config Stockade uses. Strings are owned (oci_config_clear). */
typedef struct OciConfig {
    char **env; /* "NAME=value", NAME [A-Za-z_][A-Za-z0-9_]*; value without NUL or newline */
    size_t n_env;
    char **entrypoint, **cmd;
    size_t n_entrypoint, n_cmd;
    char *working_dir; /* absolute or empty */
    char *user;        /* as written: "", "name", "uid", "uid:gid", "name:group" */
    char diff_ids[OCI_LAYERS_MAX][OCI_DIGEST_BYTES + 1];
    size_t n_diff_ids;
} OciConfig;

/* True for "sha256:" + 64 lower-case hex digits, NUL-terminated. */
bool oci_digest_ok(const char *s);

/* index.json: the image manifest to import. With tag (non-NULL, non-empty), the one whose
 * annotation org.opencontainers.image.ref.name equals it; without, the only one. An entry
 * that is itself an index (a multi-platform image) is refused: skopeo resolves platforms
 * before the layout is written. */
int oci_index_pick(const char *text, size_t len, const char *tag, OciDescriptor *ret, Error **errp);

/* An image manifest: schemaVersion 2, a config descriptor, 0..OCI_LAYERS_MAX layers whose
 * media types are tar, tar+gzip or tar+zstd (OCI or Docker names; non-distributable ones too).
 * Foreign (URL) layers are refused. */
int oci_manifest_parse(const char *text, size_t len, OciManifest *ret, Error **errp);

/* An image config: os linux, architecture amd64 (absent fields pass), rootfs.type "layers"
 * with diff_ids, and config.{Env, Entrypoint, Cmd, WorkingDir, User}. On success *ret owns
 * the strings; on failure it is left empty. */
int oci_config_parse(const char *text, size_t len, OciConfig *ret, Error **errp);
void oci_config_clear(OciConfig *c);
