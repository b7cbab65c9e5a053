/* Local guest images (<image_dir>/<name>/{vmlinux,initramfs.cpio,root.ext4,manifest.json}, the
 * contract in images/README.md): finding the image directory, and checking manifests for
 * `image ls` and `doctor`. A manifest is read bounded (IMAGE_MANIFEST_MAX_BYTES) and checked:
 * format 1, its name, the three files with their sizes (and sha256 with verify), and its
 * content_hash recomputed from the listed hashes and the command line. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define IMAGE_MANIFEST_MAX_BYTES (1u << 20)
#define IMAGE_NAME_MAX_BYTES 64
#define IMAGES_MAX 64
#define IMAGE_PROBLEM_MAX_BYTES 256

typedef struct ImageInfo {
    char name[IMAGE_NAME_MAX_BYTES + 1];
    char content_hash[65];
    char kernel[64];   /* kernel release, e.g. 6.1.0-57-amd64 */
    uint64_t bytes;    /* the three files together */
    int64_t built_sec; /* the manifest's mtime */
    char origin[128];  /* "recipe" (the project's builder), or "import SOURCE" (escaped) */
    bool imported;     /* made by `stockade image import|build`: removable with image rm */
    bool ok;
    char problem[IMAGE_PROBLEM_MAX_BYTES]; /* why not ok, and what to do */
} ImageInfo;

/* The installed image directory if it exists, else the build tree's (like stockaded). */
const char *images_default_dir(void);

/* Checks <dir>/<name>. Never fails: problems land in ret->ok / ret->problem. */
void image_check(const char *dir, const char *name, bool verify_sha256, ImageInfo *ret);

/* Every subdirectory of dir that holds a manifest.json, checked, sorted by name. */
int images_scan(const char *dir, bool verify_sha256, ImageInfo **ret, size_t *ret_n, Error **errp);
