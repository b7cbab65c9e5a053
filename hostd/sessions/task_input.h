/* What a caller hands a session besides its spec's scalars: environment pairs and files to
 * write into the workspace. Plain types: the API's body parsers (and their fuzzer) fill them
 * without linking the sessions. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SESSION_ARGV_MAX 256
#define SESSION_ENV_MAX 128
#define SESSION_FILES_MAX 1024 /* files uploaded with a task */

typedef struct EnvPair {
    char *name, *value;
} EnvPair;

typedef struct TaskFile {
    char *path;    /* workspace-relative, checked */
    uint8_t *data;
    size_t len;
    uint32_t mode; /* 0 = 0644 */
} TaskFile;
