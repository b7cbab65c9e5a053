/* A built guest image as the daemon sees it: the files named in images/README.md and the
 * fields of manifest.json it needs. The manifest is configuration input: bounded and checked. */
#pragma once

#include "error.h"

#define IMAGE_MANIFEST_MAX_BYTES (256u * 1024u)
#define IMAGE_HASH_HEX_BYTES 64
#define IMAGE_CMDLINE_MAX_BYTES 2048

typedef struct Image {
    char *name;          /* [a-z0-9-] */
    char *dir;
    char *kernel_path;   /* <dir>/vmlinux */
    char *initrd_path;   /* <dir>/initramfs.cpio */
    char *root_path;     /* <dir>/root.ext4 */
    char *cmdline;
    char content_hash[IMAGE_HASH_HEX_BYTES + 1];
} Image;

/* Loads <dir>/manifest.json and checks that the three files exist. */
int image_load(const char *dir, Image **ret, Error **errp);
void image_free(Image *img);
DEFINE_TRIVIAL_CLEANUP_FUNC(Image, image_free)
