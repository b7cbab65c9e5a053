/* Fuzz target: guest/imagecfg.c, the runner's reader of an image's exec defaults. Invariants
 * on success: at most ENV_MAX_COUNT variables, each NAME=value with a valid name; cwd empty or
 * absolute without NUL; a user only with both ids >= EXEC_MIN_UID. On failure the result is
 * empty and the line number points into the text. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "imagecfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ImageCfg c;
    size_t line = 0;

    if (imagecfg_parse((const char *) data, size, &c, &line) < 0) {
        CHECK(errno == EINVAL || errno == ENOMEM);
        CHECK(errno == ENOMEM || line <= size + 1);
        return 0;
    }
    CHECK(c.env.n <= ENV_MAX_COUNT);
    for (size_t i = 0; i < c.env.n; i++) {
        const char *eq = strchr(c.env.items[i], '=');
        CHECK(eq && eq > c.env.items[i] && strlen(eq + 1) <= ENV_VALUE_MAX_BYTES);
    }
    CHECK(c.cwd[0] == '\0' || c.cwd[0] == '/');
    CHECK(!c.has_user || (c.uid >= EXEC_MIN_UID && c.gid >= EXEC_MIN_UID));
    imagecfg_clear(&c);
    return 0;
}
