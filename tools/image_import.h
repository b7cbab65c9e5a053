/* `stockade image import`: the steps after the command line (image_import.c). A LOCAL
 * operator action on the daemon's host, as root, like `stockade image build`: it writes the
 * image directory the daemon reads. */
#pragma once

#include <stdbool.h>
#include <jansson.h>
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

/* Shared with the Dockerfile build (image_build.c). */
/* snprintf that says when the path did not fit (the caller refuses it). */
bool path_fmt(char *out, size_t cap, const char *fmt, ...) _printf_(3, 4);
/* Runs argv (a path in argv[0]) with RLIMIT_FSIZE = fsize_bytes (0: none), killed at
 * deadline_usec. Returns its exit status (128 + signal when killed), or -1 with errp. */
int run_bounded(const char *const *argv, uint64_t fsize_bytes, uint64_t deadline_usec,
                Error **errp);
/* pack-image.py of <scratch>/root and <scratch>/meta.json into <image_dir>/<name>. */
int image_pack(const ImportArgs *a, const char *scratch, uint64_t deadline, Error **errp);
/* A JSON array of the strings. */
json_t *strings_json(char *const *v, size_t n);

/* One of the three source forms, without a newline, shorter than a path. */
bool image_import_source_ok(const char *source);

/* Fetches, verifies, applies and packs; prints progress on stdout. */
int image_import_run(const ImportArgs *a, Error **errp);
