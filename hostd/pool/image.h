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
/* The fields the daemon needs from manifest.json's text (len bytes, at most
 * IMAGE_MANIFEST_MAX_BYTES as read): a name of at most 32 [a-z0-9-], a content_hash of 64
 * lower-case hex digits, a cmdline of at most IMAGE_CMDLINE_MAX_BYTES without a newline,
 * into img->name, content_hash and cmdline (img->dir names it in errors). E_INVALID
 * otherwise, img's fields then unset. Pure: tests/fuzz/fuzz_image_manifest.c. */
int image_manifest_parse(Image *img, const char *text, size_t len, Error **errp);
DEFINE_TRIVIAL_CLEANUP_FUNC(Image, image_free)
