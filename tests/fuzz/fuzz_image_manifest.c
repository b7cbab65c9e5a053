/* Fuzz target: an image's manifest.json (images/README.md), as both of its readers take it:
 * the daemon (hostd/pool/image.c, image_manifest_parse()) and the CLI's `image ls` and
 * `doctor` (tools/images.c, image_check() on a scratch image folder whose three files exist
 * with contents of the test's own).
 *
 * Input: the manifest's text.
 * Invariants, not just "no crash":
 *  - the daemon takes a manifest exactly when its name is at most 32 of [a-z0-9-], its
 *    content_hash 64 lower-case hex digits and its cmdline at most IMAGE_CMDLINE_MAX_BYTES
 *    without a newline (read here with jansson on its own); it keeps exactly those values,
 *    and nothing when it refuses;
 *  - the CLI calls an image ok only when the manifest is format 1, names its folder, lists
 *    the three files in order with their real sizes and sha256 (checked: verify on), and its
 *    content_hash is the hash of those and the command line, recomputed here; what it shows
 *    (the kernel release, the problem) is printable text within its bounds. */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* fuzz_image_manifest_cli.c (tools/images.h and hostd's image.h each define
 * IMAGE_MANIFEST_MAX_BYTES: one translation unit each). */
void image_manifest_check_cli(const uint8_t *data, size_t size, json_t *m);

static bool
hex64(const char *s)
{
    return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static void
check_daemon(const uint8_t *data, size_t size, json_t *m)
{
    Image img = {.dir = (char *) "scratch"};
    Error *e = NULL;
    int r = image_manifest_parse(&img, (const char *) data, size, &e);
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *hash = json_string_value(json_object_get(m, "content_hash"));
    const char *cmd = json_string_value(json_object_get(m, "cmdline"));
    bool want = name && hex64(hash) && cmd && strlen(name) <= 32 &&
                strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(name) &&
                strlen(cmd) <= IMAGE_CMDLINE_MAX_BYTES && !strchr(cmd, '\n');
    CHECK((r == 0) == want);
    if (r == 0) {
        CHECK(strcmp(img.name, name) == 0 && strcmp(img.cmdline, cmd) == 0 &&
              strcmp(img.content_hash, hash) == 0);
    } else {
        CHECK(e && e->category == E_INVALID && !img.cmdline && !img.content_hash[0]);
    }
    free(img.name);
    free(img.cmdline);
    error_free(e);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *m = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES, NULL);
    check_daemon(data, size, m);
    image_manifest_check_cli(data, size, m);
    json_decref(m);
    return 0;
}
