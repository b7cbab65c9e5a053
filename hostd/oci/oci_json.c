/* OCI layout documents: see oci_json.h. Every string quoted in an error is escaped. */
#include "oci_json.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "jsonscan.h"
#include "log.h"

#define OCI_ESC_BYTES 96u

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_OCI_CONFIG "application/vnd.oci.image.config.v1+json"
#define MT_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"
#define ANNOTATION_REF_NAME "org.opencontainers.image.ref.name"

typedef struct LayerType {
    const char *media_type;
    OciCompression compression;
} LayerType;

static const LayerType layer_types[] = {
    {"application/vnd.oci.image.layer.v1.tar", OCI_COMPRESSION_NONE},
    {"application/vnd.oci.image.layer.v1.tar+gzip", OCI_COMPRESSION_GZIP},
    {"application/vnd.oci.image.layer.v1.tar+zstd", OCI_COMPRESSION_ZSTD},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar", OCI_COMPRESSION_NONE},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", OCI_COMPRESSION_GZIP},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", OCI_COMPRESSION_ZSTD},
    {"application/vnd.docker.image.rootfs.diff.tar", OCI_COMPRESSION_NONE},
    {"application/vnd.docker.image.rootfs.diff.tar.gzip", OCI_COMPRESSION_GZIP},
    {"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", OCI_COMPRESSION_GZIP},
};

bool
oci_digest_ok(const char *s)
{
    return s && strlen(s) == OCI_DIGEST_BYTES && strncmp(s, "sha256:", 7) == 0 &&
           strspn(s + 7, "0123456789abcdef") == 64;
}

/* Parses text after the size and nesting checks. NULL with *errp set on failure. */
static json_t *
oci_load(const char *what, const char *text, size_t len, Error **errp)
{
    json_error_t jerr;
    json_t *root;

    if (len > OCI_JSON_MAX_BYTES)
        return error_set(errp, E_TOO_LARGE, 0, "%s: over %u bytes", what, OCI_JSON_MAX_BYTES), NULL;
    if (!jsonscan_depth_within(text, len, OCI_JSON_MAX_DEPTH))
        return error_set(errp, E_INVALID, 0, "%s: nested deeper than %u", what, OCI_JSON_MAX_DEPTH),
               NULL;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char esc[OCI_ESC_BYTES];
        error_set(errp, E_INVALID, 0, "%s: not JSON (%s, line %d)", what,
                  log_escape(esc, sizeof(esc), jerr.text, strlen(jerr.text)), jerr.line);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        return error_set(errp, E_INVALID, 0, "%s: not a JSON object", what), NULL;
    }
    return root;
}

static int
oci_schema2(const char *what, json_t *root, Error **errp)
{
    json_t *v = json_object_get(root, "schemaVersion");
    if (!json_is_integer(v) || json_integer_value(v) != 2)
        return error_set(errp, E_INVALID, 0, "%s: schemaVersion must be 2", what);
    return 0;
}

/* A descriptor {mediaType, digest, size}; mediaType may be absent when allow_no_type. */
static int
oci_descriptor(const char *what, json_t *d, bool allow_no_type, OciDescriptor *ret, Error **errp)
{
    const char *mt = json_string_value(json_object_get(d, "mediaType"));
    const char *digest = json_string_value(json_object_get(d, "digest"));
    json_t *size = json_object_get(d, "size");
    char esc[OCI_ESC_BYTES];

    if (!json_is_object(d))
        return error_set(errp, E_INVALID, 0, "%s: a descriptor is not an object", what);
    if (!mt && !allow_no_type)
        return error_set(errp, E_INVALID, 0, "%s: a descriptor has no mediaType", what);
    if (mt && strlen(mt) > OCI_MEDIA_TYPE_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "%s: mediaType over %u bytes", what,
                         OCI_MEDIA_TYPE_MAX_BYTES);
    if (!oci_digest_ok(digest))
        return error_set(errp, E_INVALID, 0, "%s: digest %s is not sha256:<64 hex>", what,
                         digest ? log_escape(esc, sizeof(esc), digest, strlen(digest)) : "(none)");
    if (!json_is_integer(size) || json_integer_value(size) < 0 ||
        (uint64_t) json_integer_value(size) > OCI_SIZE_MAX)
        return error_set(errp, E_INVALID, 0, "%s: descriptor %s has no valid size", what, digest);
    if (json_object_get(d, "urls"))
        return error_set(errp, E_INVALID, 0,
                         "%s: descriptor %s names URLs (a foreign layer): refused", what, digest);
    *ret = (OciDescriptor){.size = (uint64_t) json_integer_value(size)};
    snprintf(ret->media_type, sizeof(ret->media_type), "%s", mt ? mt : "");
    memcpy(ret->digest, digest, OCI_DIGEST_BYTES + 1);
    return 0;
}

static bool
oci_is_index_type(const char *mt)
{
    return strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0;
}

static bool
oci_entry_matches(json_t *m, const char *tag)
{
    const char *ref =
        json_string_value(json_object_get(json_object_get(m, "annotations"), ANNOTATION_REF_NAME));
    return ref && strcmp(ref, tag) == 0;
}

int
oci_index_pick(const char *text, size_t len, const char *tag, OciDescriptor *ret, Error **errp)
{
    json_t *root = oci_load("index.json", text, len, errp);
    json_t *ms, *pick = NULL;
    OciDescriptor d;
    char esc[OCI_ESC_BYTES];
    int r = -1;

    if (!root)
        return -1;
    if (oci_schema2("index.json", root, errp) < 0)
        goto fail_decref;
    ms = json_object_get(root, "manifests");
    if (!json_is_array(ms) || json_array_size(ms) == 0 || json_array_size(ms) > OCI_LAYERS_MAX) {
        error_set(errp, E_INVALID, 0, "index.json: manifests must be 1..%u entries",
                  OCI_LAYERS_MAX);
        goto fail_decref;
    }
    if (tag && tag[0]) {
        for (size_t i = 0; i < json_array_size(ms) && !pick; i++)
            if (oci_entry_matches(json_array_get(ms, i), tag))
                pick = json_array_get(ms, i);
        if (!pick) {
            error_set(errp, E_NOT_FOUND, 0, "index.json: no image tagged %s",
                      log_escape(esc, sizeof(esc), tag, strlen(tag)));
            goto fail_decref;
        }
    } else if (json_array_size(ms) != 1) {
        error_set(errp, E_INVALID, 0, "index.json holds %zu images: name one with oci:DIR:TAG",
                  json_array_size(ms));
        goto fail_decref;
    } else {
        pick = json_array_get(ms, 0);
    }
    if (oci_descriptor("index.json", pick, false, &d, errp) < 0)
        goto fail_decref;
    if (oci_is_index_type(d.media_type)) {
        error_set(errp, E_INVALID, 0,
                  "index.json: %s is an image index (several platforms); "
                  "import it through skopeo, which picks linux/amd64",
                  d.digest);
        goto fail_decref;
    }
    if (strcmp(d.media_type, MT_OCI_MANIFEST) != 0 && strcmp(d.media_type, MT_DOCKER_MANIFEST)) {
        error_set(errp, E_INVALID, 0, "index.json: %s has media type %s, not an image manifest",
                  d.digest, log_escape(esc, sizeof(esc), d.media_type, strlen(d.media_type)));
        goto fail_decref;
    }
    *ret = d;
    r = 0;

fail_decref:
    json_decref(root);
    return r;
}

static int
oci_layer_type(const char *mt, OciCompression *ret)
{
    for (size_t i = 0; i < ELEMENTSOF(layer_types); i++)
        if (strcmp(mt, layer_types[i].media_type) == 0) {
            *ret = layer_types[i].compression;
            return 0;
        }
    return -1;
}

int
oci_manifest_parse(const char *text, size_t len, OciManifest *ret, Error **errp)
{
    _cleanup_free_ OciManifest *m = calloc(1, sizeof(*m));
    json_t *root, *layers;
    const char *mt;
    char esc[OCI_ESC_BYTES];
    int r = -1;

    if (!m)
        return error_set(errp, E_INTERNAL, ENOMEM, "manifest");
    if (!(root = oci_load("image manifest", text, len, errp)))
        return -1;
    mt = json_string_value(json_object_get(root, "mediaType"));
    if (oci_schema2("image manifest", root, errp) < 0)
        goto fail_decref;
    if (mt && strcmp(mt, MT_OCI_MANIFEST) != 0 && strcmp(mt, MT_DOCKER_MANIFEST) != 0) {
        error_set(errp, E_INVALID, 0, "image manifest: media type %s is not an image manifest",
                  log_escape(esc, sizeof(esc), mt, strlen(mt)));
        goto fail_decref;
    }
    if (oci_descriptor("image manifest: config", json_object_get(root, "config"), false, &m->config,
                       errp) < 0)
        goto fail_decref;
    if (strcmp(m->config.media_type, MT_OCI_CONFIG) != 0 &&
        strcmp(m->config.media_type, MT_DOCKER_CONFIG) != 0) {
        error_set(errp, E_INVALID, 0,
                  "image manifest: config media type %s is not an image "
                  "config",
                  log_escape(esc, sizeof(esc), m->config.media_type, strlen(m->config.media_type)));
        goto fail_decref;
    }
    layers = json_object_get(root, "layers");
    if (!json_is_array(layers) || json_array_size(layers) > OCI_LAYERS_MAX) {
        error_set(errp, E_INVALID, 0, "image manifest: layers must be an array of at most %u",
                  OCI_LAYERS_MAX);
        goto fail_decref;
    }
    for (size_t i = 0; i < json_array_size(layers); i++) {
        OciDescriptor *d = &m->layers[i];
        if (oci_descriptor("image manifest: layer", json_array_get(layers, i), false, d, errp) < 0)
            goto fail_decref;
        if (oci_layer_type(d->media_type, &d->compression) < 0) {
            error_set(errp, E_INVALID, 0,
                      "image manifest: layer %zu (%s) has media type %s, "
                      "not a tar layer",
                      i + 1, d->digest,
                      log_escape(esc, sizeof(esc), d->media_type, strlen(d->media_type)));
            goto fail_decref;
        }
    }
    m->n_layers = json_array_size(layers);
    *ret = *m;
    r = 0;

fail_decref:
    json_decref(root);
    return r;
}

void
oci_config_clear(OciConfig *c)
{
    for (size_t i = 0; i < c->n_env; i++)
        free(c->env[i]);
    for (size_t i = 0; i < c->n_entrypoint; i++)
        free(c->entrypoint[i]);
    for (size_t i = 0; i < c->n_cmd; i++)
        free(c->cmd[i]);
    free(c->env);
    free(c->entrypoint);
    free(c->cmd);
    free(c->working_dir);
    free(c->user);
    *c = (OciConfig){0};
}

/* A string field with a bound; absent or null = "". *ret owned. */
static int
oci_string(const char *what, json_t *v, size_t max_bytes, char **ret, Error **errp)
{
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    if (v && !json_is_null(v) && !json_is_string(v))
        return error_set(errp, E_INVALID, 0, "image config: %s is not a string", what);
    if (strlen(s) > max_bytes || (v && json_string_length(v) != strlen(s)))
        return error_set(errp, E_INVALID, 0, "image config: %s is over %zu bytes or holds NUL",
                         what, max_bytes);
    if (!(*ret = strdup(s)))
        return error_set(errp, E_INTERNAL, ENOMEM, "image config");
    return 0;
}

/* A string array with bounds; absent or null = empty. */
static int
oci_strings(const char *what, json_t *v, size_t max_n, size_t max_bytes, char ***ret, size_t *ret_n,
            Error **errp)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v) || json_array_size(v) > max_n)
        return error_set(errp, E_INVALID, 0, "image config: %s must be an array of at most %zu",
                         what, max_n);
    if (json_array_size(v) && !(*ret = calloc(json_array_size(v), sizeof(char *))))
        return error_set(errp, E_INTERNAL, ENOMEM, "image config");
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *s = json_array_get(v, i);
        if (!json_is_string(s))
            return error_set(errp, E_INVALID, 0, "image config: %s holds a non-string", what);
        if (oci_string(what, s, max_bytes, &(*ret)[i], errp) < 0)
            return -1;
        (*ret_n)++;
    }
    return 0;
}

static bool
oci_env_ok(const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv || strchr(kv, '\n'))
        return false;
    if (!(kv[0] == '_' || (kv[0] >= 'A' && kv[0] <= 'Z') || (kv[0] >= 'a' && kv[0] <= 'z')))
        return false;
    for (const char *p = kv; p < eq; p++)
        if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
              (*p >= '0' && *p <= '9')))
            return false;
    return true;
}

static int
oci_config_fields(json_t *root, OciConfig *c, Error **errp)
{
    json_t *cfg = json_object_get(root, "config"); /* null in some scratch images */
    char esc[OCI_ESC_BYTES];

    if (cfg && !json_is_null(cfg) && !json_is_object(cfg))
        return error_set(errp, E_INVALID, 0, "image config: config is not an object");
    if (oci_strings("Env", json_object_get(cfg, "Env"), OCI_ENV_MAX, OCI_ENV_MAX_BYTES, &c->env,
                    &c->n_env, errp) < 0 ||
        oci_strings("Entrypoint", json_object_get(cfg, "Entrypoint"), OCI_ARGV_MAX,
                    OCI_ARG_MAX_BYTES, &c->entrypoint, &c->n_entrypoint, errp) < 0 ||
        oci_strings("Cmd", json_object_get(cfg, "Cmd"), OCI_ARGV_MAX, OCI_ARG_MAX_BYTES, &c->cmd,
                    &c->n_cmd, errp) < 0 ||
        oci_string("WorkingDir", json_object_get(cfg, "WorkingDir"), OCI_PATH_MAX_BYTES,
                   &c->working_dir, errp) < 0 ||
        oci_string("User", json_object_get(cfg, "User"), OCI_USER_MAX_BYTES, &c->user, errp) < 0)
        return -1;
    for (size_t i = 0; i < c->n_env; i++)
        if (!oci_env_ok(c->env[i]))
            return error_set(errp, E_INVALID, 0, "image config: Env entry %s is not NAME=value",
                             log_escape(esc, sizeof(esc), c->env[i], strlen(c->env[i])));
    if (c->working_dir[0] && c->working_dir[0] != '/')
        return error_set(errp, E_INVALID, 0, "image config: WorkingDir %s is not absolute",
                         log_escape(esc, sizeof(esc), c->working_dir, strlen(c->working_dir)));
    if (strchr(c->user, '\n'))
        return error_set(errp, E_INVALID, 0, "image config: User holds a newline");
    return 0;
}

static int
oci_config_rootfs(json_t *root, OciConfig *c, Error **errp)
{
    json_t *rootfs = json_object_get(root, "rootfs");
    json_t *ids = json_object_get(rootfs, "diff_ids");
    const char *type = json_string_value(json_object_get(rootfs, "type"));

    if (!type || strcmp(type, "layers") != 0 || !json_is_array(ids) ||
        json_array_size(ids) > OCI_LAYERS_MAX)
        return error_set(errp, E_INVALID, 0,
                         "image config: rootfs must be {type: layers, diff_ids: [at most %u]}",
                         OCI_LAYERS_MAX);
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const char *d = json_string_value(json_array_get(ids, i));
        if (!oci_digest_ok(d))
            return error_set(errp, E_INVALID, 0, "image config: diff_id %zu is not sha256:<64 hex>",
                             i + 1);
        memcpy(c->diff_ids[i], d, OCI_DIGEST_BYTES + 1);
    }
    c->n_diff_ids = json_array_size(ids);
    return 0;
}

static int
oci_config_platform(json_t *root, Error **errp)
{
    const char *os = json_string_value(json_object_get(root, "os"));
    const char *arch = json_string_value(json_object_get(root, "architecture"));
    char esc[OCI_ESC_BYTES];

    if (os && strcmp(os, "linux") != 0)
        return error_set(errp, E_INVALID, 0, "image config: os %s: guests run linux",
                         log_escape(esc, sizeof(esc), os, strlen(os)));
    if (arch && strcmp(arch, "amd64") != 0)
        return error_set(errp, E_INVALID, 0, "image config: architecture %s: guests are amd64",
                         log_escape(esc, sizeof(esc), arch, strlen(arch)));
    return 0;
}

int
oci_config_parse(const char *text, size_t len, OciConfig *ret, Error **errp)
{
    OciConfig c = {0};
    json_t *root = oci_load("image config", text, len, errp);
    int r = -1;

    if (!root)
        return -1;
    if (oci_config_platform(root, errp) < 0 || oci_config_fields(root, &c, errp) < 0 ||
        oci_config_rootfs(root, &c, errp) < 0) {
        oci_config_clear(&c);
        goto fail_decref;
    }
    *ret = c;
    r = 0;

fail_decref:
    json_decref(root);
    return r;
}
