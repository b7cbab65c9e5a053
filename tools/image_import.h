/* `stockade image import`: the steps after the command line (image_import.c). A LOCAL
 * operator action on the daemon's host, as root, like `stockade image build`: it writes the
 * image directory the daemon reads. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "oci_import.h"

typedef struct ImportArgs {
    const char *source;      /* oci:DIR[:TAG] | docker-archive:FILE | docker://REF */
    const char *name;        /* the image's name: [a-z0-9-], at most 32 */
    const char *image_dir;   /* where <name>/ goes */
    const char *kernel_from; /* a project image in image_dir whose vmlinux+initramfs to use */
    const char *authfile;    /* skopeo --authfile, or NULL for its default */
    const char *skopeo;      /* path of skopeo */
    const char *packer;      /* path of images/pack-image.py */
    int64_t epoch;           /* SOURCE_DATE_EPOCH of the result */
    OciLimits limits;
} ImportArgs;

/* One of the three source forms, without a newline, shorter than a path. */
bool image_import_source_ok(const char *source);

/* Fetches, verifies, applies and packs; prints progress on stdout. */
int image_import_run(const ImportArgs *a, Error **errp);
