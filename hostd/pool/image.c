/* See image.h. */
#include "image.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fdutil.h"

void
image_free(Image *img)
{
    if (!img)
        return;
    free(img->name);
    free(img->dir);
    free(img->kernel_path);
    free(img->initrd_path);
    free(img->root_path);
    free(img->cmdline);
    free(img);
}

static char *
image_file(const char *dir, const char *name, Error **errp)
{
    char *p;
    struct stat st;
    if (asprintf(&p, "%s/%s", dir, name) < 0) {
        error_set(errp, E_INTERNAL, ENOMEM, "image path");
        return NULL;
    }
    if (stat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
        error_set(errp, E_UNAVAILABLE, errno, "image file %s is missing (build the image)", p);
        free(p);
        return NULL;
    }
    return p;
}

static bool
is_hex64(const char *s)
{
    return strlen(s) == IMAGE_HASH_HEX_BYTES &&
           strspn(s, "0123456789abcdef") == IMAGE_HASH_HEX_BYTES;
}

int
image_manifest_parse(Image *img, const char *text, size_t len, Error **errp)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    int r = -1;

    if (!root)
        return error_set(errp, E_INVALID, 0, "%s/manifest.json: %s (line %d)", img->dir,
                         jerr.text, jerr.line);
    const char *name = json_string_value(json_object_get(root, "name"));
    const char *hash = json_string_value(json_object_get(root, "content_hash"));
    const char *cmdline = json_string_value(json_object_get(root, "cmdline"));
    if (!name || !hash || !cmdline)
        error_set(errp, E_INVALID, 0, "%s/manifest.json: needs name, content_hash, cmdline",
                  img->dir);
    else if (!is_hex64(hash) || strlen(cmdline) > IMAGE_CMDLINE_MAX_BYTES ||
             strchr(cmdline, '\n') || strlen(name) > 32 ||
             strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(name))
        error_set(errp, E_INVALID, 0, "%s/manifest.json: bad name, content_hash or cmdline",
                  img->dir);
    else if (!(img->name = strdup(name)) || !(img->cmdline = strdup(cmdline)))
        error_set(errp, E_INTERNAL, ENOMEM, "manifest");
    else {
        memcpy(img->content_hash, hash, IMAGE_HASH_HEX_BYTES + 1);
        r = 0;
    }
    json_decref(root);
    return r;
}

int
image_load(const char *dir, Image **ret, Error **errp)
{
    _cleanup_(image_freep) Image *img = calloc(1, sizeof(*img));
    _cleanup_free_ char *manifest_path = NULL, *text = NULL;
    size_t len;

    if (!img || !(img->dir = strdup(dir)) || asprintf(&manifest_path, "%s/manifest.json", dir) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "image");
    if (read_file_bounded(manifest_path, IMAGE_MANIFEST_MAX_BYTES, &text, &len) < 0)
        return error_set(errp, E_UNAVAILABLE, errno, "read %s (build the image)", manifest_path);
    if (image_manifest_parse(img, text, len, errp) < 0)
        return -1;
    if (!(img->kernel_path = image_file(dir, "vmlinux", errp)) ||
        !(img->initrd_path = image_file(dir, "initramfs.cpio", errp)) ||
        !(img->root_path = image_file(dir, "root.ext4", errp)))
        return -1;
    *ret = TAKE_PTR(img);
    return 0;
}
