/* Fuzz target: stockaded's config parser (hostd/config.c) on arbitrary bytes. Invariants:
 * a parse either succeeds or fails with an E_INVALID message that names a line; on success,
 * finishing the config either succeeds with every pool name valid and every numeric field
 * inside its documented range, or fails cleanly. And --check-config's text of a finished
 * config (config_dump) parses back to a config whose text is the same, origins aside. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static DaemonConfig cfg, again;

/* a and b hold the same lines once each line's "# origin" is cut off. */
static bool
same_settings(const char *a, const char *b)
{
    while (*a || *b) {
        size_t la = strcspn(a, "#\n"), lb = strcspn(b, "#\n");
        if (la != lb || memcmp(a, b, la) != 0)
            return false;
        a += strcspn(a, "\n");
        b += strcspn(b, "\n");
        a += *a == '\n';
        b += *b == '\n';
    }
    return true;
}

static void
check_round_trip(void)
{
    Error *err = NULL;
    char *dump = config_dump(&cfg);
    CHECK(dump);
    config_defaults(&again, "/usr/share/stockade/images");
    CHECK(config_parse(&again, dump, strlen(dump), &err) == 0);
    CHECK(config_finish(&again, &err) == 0);
    char *dump2 = config_dump(&again);
    CHECK(dump2 && same_settings(dump, dump2));
    free(dump);
    free(dump2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Error *err = NULL;
    config_defaults(&cfg, "/usr/share/stockade/images");
    if (config_parse(&cfg, (const char *) data, size, &err) < 0) {
        CHECK(err && err->category == E_INVALID && err->message[0]);
        error_free(err);
        return 0;
    }
    CHECK(!err);
    if (config_finish(&cfg, &err) < 0) {
        CHECK(err && err->message[0]);
        error_free(err);
        return 0;
    }
    CHECK(cfg.pool.n_shapes <= POOL_SHAPES_MAX);
    for (size_t i = 0; i < cfg.pool.n_shapes; i++) {
        const PoolShapeConfig *s = &cfg.shapes[i];
        CHECK(strlen(s->name) >= 1 && strlen(s->name) <= POOL_SHAPE_NAME_MAX_BYTES);
        CHECK(s->vcpus >= 1 && s->vcpus <= 64 && s->memory_mib >= 64);
    }
    CHECK(cfg.pool.workspace_mib >= 16 && cfg.pool.cpu_quota_percent <= 100);
    CHECK(cfg.state_dir[0] == '/' && cfg.http.unix_path && cfg.http.unix_path[0] == '/');
    check_round_trip();
    return 0;
}
