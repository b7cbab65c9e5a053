/* `stockade image build -f Dockerfile [CONTEXT] --name NAME` (image_build.c): like an import,
 * a LOCAL operator action on the daemon's host, as root. */
#pragma once

#include <stdint.h>

#include "error.h"
#include "image_import.h"
#include "oci_import.h"

typedef struct BuildArgs {
    const char *dockerfile; /* its path */
    const char *context;    /* the build context folder */
    const char *name;       /* the image's name */
    const char *image_dir;
    const char *kernel_from; /* a project image whose vmlinux+initramfs to use */
    const char *packer;      /* images/pack-image.py */
    int64_t epoch;
    OciLimits limits; /* entries, bytes (what COPY may add), depth, time */
} BuildArgs;

int image_build_dockerfile(const BuildArgs *a, Error **errp);
