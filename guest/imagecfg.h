/* An imported image's defaults for every exec (images/README.md, "Imported images"): the
 * image config's Env, WorkingDir and User as `stockade image import|build` wrote them into
 * IMAGECFG_PATH of the root filesystem. Read once at boot; absent for the project's own images
 * (then nothing changes). Pure parser, fuzzed (tests/fuzz/fuzz_imagecfg.c).
 *
 * Format: UTF-8 lines "KEY VALUE"; '#' lines and empty lines are skipped; VALUE is %-escaped
 * (%XX for '%', control characters and DEL). Keys:
 *   env NAME=VALUE   (at most ENV_MAX_COUNT; NAME as proto's env names; VALUE <=
 * ENV_VALUE_MAX_BYTES) cwd /ABS/PATH    (at most once; absolute, <= PATH_MAX_BYTES, no NUL) user
 * UID:GID     (at most once; both >= EXEC_MIN_UID) entrypoint ARG, cmd ARG   (recorded by the
 * importer; the runner runs what each exec names) Any other key, a bad value or a file over
 * IMAGECFG_MAX_BYTES makes the whole file refused: the runner then boots with no defaults and logs
 * why. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "env.h"
#include "runner_limits.h"

#define IMAGECFG_PATH "/etc/stockade/image.conf"
#define IMAGECFG_MAX_BYTES (512u * 1024u)

typedef struct ImageCfg {
    EnvList env;                  /* before the session's variables; after PATH/HOME/LANG */
    char cwd[PATH_MAX_BYTES + 1]; /* "" = the workspace */
    bool has_user;
    uint32_t uid, gid;
} ImageCfg;

/* Parses text[0..len). 0, or -1 with errno (EINVAL: *ret_line says which line; ENOMEM).
 * On failure *ret is left empty. */
int imagecfg_parse(const char *text, size_t len, ImageCfg *ret, size_t *ret_line);
void imagecfg_clear(ImageCfg *c);
