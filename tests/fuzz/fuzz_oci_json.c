/* Fuzz target: hostd/oci/oci_json.c, the OCI layout's documents. The first byte picks the
 * document (index.json with or without a tag, an image manifest, an image config); the rest
 * is its text. Invariants on success: every digest is sha256:<64 hex>, counts are within their
 * caps, a picked manifest is not an index, layer compressions are known, Env entries are
 * NAME=value without a newline, WorkingDir is empty or absolute; a failure sets the error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "oci_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_config(const OciConfig *c)
{
    CHECK(c->n_env <= OCI_ENV_MAX && c->n_cmd <= OCI_ARGV_MAX && c->n_entrypoint <= OCI_ARGV_MAX);
    CHECK(c->n_diff_ids <= OCI_LAYERS_MAX);
    for (size_t i = 0; i < c->n_diff_ids; i++)
        CHECK(oci_digest_ok(c->diff_ids[i]));
    for (size_t i = 0; i < c->n_env; i++)
        CHECK(strchr(c->env[i], '=') > c->env[i] && !strchr(c->env[i], '\n') &&
              strlen(c->env[i]) <= OCI_ENV_MAX_BYTES);
    CHECK(c->working_dir && (c->working_dir[0] == '\0' || c->working_dir[0] == '/'));
    CHECK(c->user && strlen(c->user) <= OCI_USER_MAX_BYTES && !strchr(c->user, '\n'));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static OciManifest m;
    Error *err = NULL;
    OciDescriptor d;
    OciConfig c;

    if (size < 1)
        return 0;
    const char *text = (const char *) data + 1;
    size_t len = size - 1;
    switch (data[0] % 4) {
    case 0:
    case 1:
        if (oci_index_pick(text, len, data[0] % 4 ? "v1" : NULL, &d, &err) == 0) {
            CHECK(oci_digest_ok(d.digest) && d.size <= OCI_SIZE_MAX);
            CHECK(!strstr(d.media_type, "index") && !strstr(d.media_type, "list"));
        }
        break;
    case 2:
        if (oci_manifest_parse(text, len, &m, &err) == 0) {
            CHECK(oci_digest_ok(m.config.digest) && m.n_layers <= OCI_LAYERS_MAX);
            for (size_t i = 0; i < m.n_layers; i++)
                CHECK(oci_digest_ok(m.layers[i].digest) &&
                      m.layers[i].compression <= OCI_COMPRESSION_ZSTD);
        }
        break;
    default:
        if (oci_config_parse(text, len, &c, &err) == 0) {
            check_config(&c);
            oci_config_clear(&c);
        }
        break;
    }
    CHECK(err == NULL || err->message[0] != '\0');
    error_free(err);
    return 0;
}
