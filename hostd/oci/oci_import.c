/* Layout → tree: see oci_import.h. */
#include "oci_import.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "sha256.h"
#include "timeutil.h"

#define OCI_DEFAULT_MAX_BYTES (UINT64_C(16) << 30)
#define OCI_DEFAULT_MAX_BLOB_BYTES (UINT64_C(8) << 30)
#define OCI_DEFAULT_MAX_ENTRIES 1000000u
#define OCI_DEFAULT_MAX_DEPTH 128u
#define OCI_DEFAULT_MAX_USEC (30 * 60 * USEC_PER_SEC)
#define OCI_LAYOUT_FILE_MAX_BYTES 4096u
#define OCI_LABEL_BYTES 96u

void
oci_limits_default(OciLimits *ret)
{
    *ret = (OciLimits){.max_bytes = OCI_DEFAULT_MAX_BYTES,
                       .max_blob_bytes = OCI_DEFAULT_MAX_BLOB_BYTES,
                       .max_entries = OCI_DEFAULT_MAX_ENTRIES,
                       .max_depth = OCI_DEFAULT_MAX_DEPTH,
                       .max_usec = OCI_DEFAULT_MAX_USEC};
}

void
oci_import_clear(OciImport *imp)
{
    oci_config_clear(&imp->config);
}

/* Opens the blob of d, checking it is a regular file of d's size (before any byte is read). */
static int
oci_blob_open(int layout_fd, const OciDescriptor *d, const char *what, Error **errp)
{
    char path[32 + OCI_DIGEST_BYTES];
    struct stat st;

    snprintf(path, sizeof(path), "blobs/sha256/%s", d->digest + 7);
    _cleanup_close_ int fd = openat2_beneath(layout_fd, path, O_RDONLY);
    if (fd < 0)
        return error_set(errp, errno == ENOENT ? E_NOT_FOUND : E_INVALID, errno,
                         "%s %s: blob missing or not a plain file", what, d->digest);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return error_set(errp, E_INVALID, errno, "%s %s: not a regular file", what, d->digest);
    if ((uint64_t) st.st_size != d->size)
        return error_set(errp, E_INVALID, 0,
                         "%s %s: the blob has %llu bytes, the manifest says %llu", what, d->digest,
                         (unsigned long long) st.st_size, (unsigned long long) d->size);
    return TAKE_FD(fd);
}

/* A JSON blob, read whole and verified against d before anyone parses it. */
static int
oci_blob_json(int layout_fd, const OciDescriptor *d, const char *what, char **ret, size_t *ret_len,
              Error **errp)
{
    char hex[SHA256_HEX_BYTES + 1];
    _cleanup_free_ char *text = NULL;
    size_t len;

    if (d->size > OCI_JSON_MAX_BYTES)
        return error_set(errp, E_TOO_LARGE, 0, "%s %s: %llu bytes, over %u", what, d->digest,
                         (unsigned long long) d->size, OCI_JSON_MAX_BYTES);
    int fd = oci_blob_open(layout_fd, d, what, errp);
    if (fd < 0)
        return -1;
    if (read_file_bounded_fd(fd, OCI_JSON_MAX_BYTES, &text, &len) < 0)
        return error_set(errp, E_IO, errno, "%s %s: read", what, d->digest);
    sha256_hex(text, len, hex);
    if (len != d->size || strcmp(hex, d->digest + 7) != 0)
        return error_set(errp, E_INVALID, 0, "%s %s: its sha256 is not its digest", what,
                         d->digest);
    *ret = TAKE_PTR(text);
    *ret_len = len;
    return 0;
}

static int
oci_read_manifest(int layout_fd, const char *tag, OciImport *imp, Error **errp)
{
    _cleanup_free_ char *layout = NULL, *index = NULL, *text = NULL;
    size_t len;
    OciDescriptor d;

    if (read_file_bounded_at(layout_fd, "oci-layout", OCI_LAYOUT_FILE_MAX_BYTES, &layout, &len) <
            0 ||
        !strstr(layout, "\"imageLayoutVersion\""))
        return error_set(errp, E_INVALID, errno, "not an OCI image layout (oci-layout)");
    if (read_file_bounded_at(layout_fd, "index.json", OCI_JSON_MAX_BYTES, &index, &len) < 0)
        return error_set(errp, errno == EFBIG ? E_TOO_LARGE : E_INVALID, errno,
                         "index.json of the layout");
    if (oci_index_pick(index, len, tag, &d, errp) < 0)
        return -1;
    if (oci_blob_json(layout_fd, &d, "image manifest", &text, &len, errp) < 0 ||
        oci_manifest_parse(text, len, &imp->manifest, errp) < 0)
        return -1;
    memcpy(imp->manifest_digest, d.digest, sizeof(imp->manifest_digest));
    return 0;
}

static int
oci_read_config(int layout_fd, OciImport *imp, const OciLimits *lim, Error **errp)
{
    _cleanup_free_ char *text = NULL;
    size_t len;

    if (oci_blob_json(layout_fd, &imp->manifest.config, "image config", &text, &len, errp) < 0 ||
        oci_config_parse(text, len, &imp->config, errp) < 0)
        return -1;
    if (imp->config.n_diff_ids != imp->manifest.n_layers)
        return error_set(errp, E_INVALID, 0,
                         "the manifest has %zu layers, the config's rootfs %zu diff_ids",
                         imp->manifest.n_layers, imp->config.n_diff_ids);
    for (size_t i = 0; i < imp->manifest.n_layers; i++)
        if (imp->manifest.layers[i].size > lim->max_blob_bytes)
            return error_set(errp, E_TOO_LARGE, 0, "layer %zu (%s): %llu bytes, over %llu", i + 1,
                             imp->manifest.layers[i].digest,
                             (unsigned long long) imp->manifest.layers[i].size,
                             (unsigned long long) lim->max_blob_bytes);
    return 0;
}

static int
oci_import_one(int layout_fd, OciApply *a, size_t i, OciImport *imp, uint64_t *budget, Error **errp)
{
    const OciDescriptor *d = &imp->manifest.layers[i];
    char label[OCI_LABEL_BYTES];
    OciStream s;
    uint64_t t0 = now_usec(), before = *budget;

    snprintf(label, sizeof(label), "layer %zu/%zu (%.19s)", i + 1, imp->manifest.n_layers,
             d->digest);
    _cleanup_close_ int fd = oci_blob_open(layout_fd, d, label, errp);
    if (fd < 0)
        return -1;
    if (oci_stream_open(&s, fd, d, budget, a->deadline_usec, errp) < 0)
        return -1;
    int r = oci_apply_layer(a, label, &s, errp);
    if (r == 0 && oci_stream_finish(&s, d, imp->config.diff_ids[i], errp) < 0)
        r = error_prefix(errp, "%s: ", label);
    oci_stream_close(&s);
    if (r < 0)
        return -1;
    imp->layers[i] =
        (OciLayerInfo){.desc = *d, .unpacked_bytes = before - *budget, .usec = now_usec() - t0};
    memcpy(imp->layers[i].diff_id, imp->config.diff_ids[i], OCI_DIGEST_BYTES + 1);
    return 0;
}

int
oci_import_layout(int layout_fd, const char *tag, int root_fd, const OciLimits *lim,
                  OciProgressFn progress, void *ctx, OciImport *ret, Error **errp)
{
    _cleanup_free_ OciImport *imp = calloc(1, sizeof(*imp));
    uint64_t budget = lim->max_bytes;
    OciApply a = {.root_fd = root_fd,
                  .max_entries = lim->max_entries,
                  .max_depth = lim->max_depth,
                  .deadline_usec = now_usec() + lim->max_usec};
    int r = -1;

    if (!imp)
        return error_set(errp, E_INTERNAL, ENOMEM, "import");
    if (oci_read_manifest(layout_fd, tag, imp, errp) < 0 ||
        oci_read_config(layout_fd, imp, lim, errp) < 0)
        goto fail_clear;
    for (size_t i = 0; i < imp->manifest.n_layers; i++) {
        if (oci_import_one(layout_fd, &a, i, imp, &budget, errp) < 0)
            goto fail_clear;
        if (progress)
            progress(ctx, i, imp->manifest.n_layers, &imp->layers[i]);
    }
    imp->stats = a.stats;
    *ret = *imp;
    imp->config = (OciConfig){0}; /* moved */
    r = 0;

fail_clear:
    oci_apply_free(&a);
    oci_import_clear(imp);
    return r;
}
