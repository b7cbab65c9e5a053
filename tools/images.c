/* See images.h. */
#include "images.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "sha256.h"

static const char *const image_files[] = {"initramfs.cpio", "root.ext4", "vmlinux"}; /* sorted */

const char *
images_default_dir(void)
{
    if (access(STOCKADE_CLI_INSTALL_IMAGE_DIR, R_OK) == 0)
        return STOCKADE_CLI_INSTALL_IMAGE_DIR;
    return STOCKADE_CLI_BUILD_IMAGE_DIR[0] ? STOCKADE_CLI_BUILD_IMAGE_DIR
                                           : STOCKADE_CLI_INSTALL_IMAGE_DIR;
}

static void problem(ImageInfo *info, const char *fmt, ...) _printf_(2, 3);

static void
problem(ImageInfo *info, const char *fmt, ...)
{
    va_list ap;
    if (!info->ok)
        return; /* the first problem wins */
    info->ok = false;
    va_start(ap, fmt);
    vsnprintf(info->problem, sizeof(info->problem), fmt, ap);
    va_end(ap);
}

static bool
is_hex64(json_t *v)
{
    return json_is_string(v) && json_string_length(v) == 64 &&
           strspn(json_string_value(v), "0123456789abcdef") == 64;
}

static int
file_sha256(const char *path, char hex[SHA256_HEX_BYTES + 1])
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    static uint8_t buf[1 << 16];
    uint8_t digest[SHA256_BYTES];
    Sha256 s;
    ssize_t n;

    if (fd < 0)
        return -1;
    sha256_init(&s);
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        sha256_update(&s, buf, (size_t) n);
    if (n < 0)
        return -1;
    sha256_final(&s, digest);
    hex_encode(digest, sizeof(digest), hex);
    return 0;
}

/* One listed file: present, regular, the listed size (and hash). Adds to *hashes text. */
static void
check_file(ImageInfo *info, const char *dir, json_t *f, bool verify, Sha256 *content)
{
    const char *name = json_string_value(json_object_get(f, "name"));
    json_t *size = json_object_get(f, "size"), *sha = json_object_get(f, "sha256");
    char path[4200], hex[SHA256_HEX_BYTES + 1];
    struct stat st;

    if (!name || !json_is_integer(size) || !is_hex64(sha)) {
        problem(info, "manifest.json lists a file without name, size and sha256");
        return;
    }
    sha256_update(content, name, strlen(name));
    sha256_update(content, " ", 1);
    sha256_update(content, json_string_value(sha), 64);
    sha256_update(content, "\n", 1);
    snprintf(path, sizeof(path), "%s/%s/%s", dir, info->name, name);
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
        problem(info, "%s is missing: rebuild the image (stockade image build %s)", name,
                info->name);
        return;
    }
    info->bytes += (uint64_t) st.st_size;
    if ((json_int_t) st.st_size != json_integer_value(size))
        problem(info, "%s has %lld bytes, the manifest says %lld: rebuild the image", name,
                (long long) st.st_size, (long long) json_integer_value(size));
    else if (verify && (file_sha256(path, hex) < 0 || strcmp(hex, json_string_value(sha)) != 0))
        problem(info, "%s does not match its sha256: rebuild the image", name);
}

static void
check_files(ImageInfo *info, const char *dir, json_t *m, bool verify)
{
    json_t *files = json_object_get(m, "files"), *cmdline = json_object_get(m, "cmdline");
    uint8_t digest[SHA256_BYTES];
    char hex[SHA256_HEX_BYTES + 1];
    Sha256 content;

    if (!json_is_array(files) || json_array_size(files) != ELEMENTSOF(image_files) ||
        !json_is_string(cmdline)) {
        problem(info, "manifest.json needs files[3] and cmdline: rebuild the image");
        return;
    }
    sha256_init(&content);
    sha256_update(&content, "stockade-image-v1\n", 18);
    for (size_t i = 0; i < ELEMENTSOF(image_files); i++) {
        json_t *f = json_array_get(files, i);
        if (strcmp(json_string_value(json_object_get(f, "name")) ?: "", image_files[i]) != 0) {
            problem(info, "manifest.json must list %s, %s and %s in that order", image_files[0],
                    image_files[1], image_files[2]);
            return;
        }
        check_file(info, dir, f, verify, &content);
    }
    sha256_update(&content, "cmdline ", 8);
    sha256_update(&content, json_string_value(cmdline), json_string_length(cmdline));
    sha256_update(&content, "\n", 1);
    sha256_final(&content, digest);
    hex_encode(digest, sizeof(digest), hex);
    if (strcmp(hex, info->content_hash) != 0)
        problem(info, "content_hash does not match the listed files: rebuild the image");
}

/* "recipe" for the project's images (no origin), else the kind and the source, escaped. */
static void
check_origin(ImageInfo *info, json_t *m)
{
    json_t *origin = json_object_get(m, "origin");
    const char *kind = json_string_value(json_object_get(origin, "kind"));
    const char *source = json_string_value(json_object_get(origin, "source"));
    char esc[sizeof(info->origin) - 16];

    info->imported = origin != NULL;
    if (!origin) {
        snprintf(info->origin, sizeof(info->origin), "recipe");
        return;
    }
    log_escape(esc, sizeof(esc), source ? source : "?", source ? strlen(source) : 1);
    snprintf(info->origin, sizeof(info->origin), "%.12s %s", kind ? kind : "?", esc);
}

static void
check_manifest(ImageInfo *info, const char *dir, json_t *m, bool verify)
{
    json_t *kernel = json_object_get(json_object_get(m, "kernel"), "release");
    json_t *hash = json_object_get(m, "content_hash");

    if (!json_is_object(m) || json_integer_value(json_object_get(m, "format")) != 1) {
        problem(info, "manifest.json is not a format-1 image manifest");
        return;
    }
    if (strcmp(json_string_value(json_object_get(m, "name")) ?: "", info->name) != 0)
        problem(info, "manifest.json names another image than its folder %s", info->name);
    if (!is_hex64(hash)) {
        problem(info, "manifest.json has no valid content_hash");
        return;
    }
    snprintf(info->content_hash, sizeof(info->content_hash), "%s", json_string_value(hash));
    check_origin(info, m);
    if (json_is_string(kernel))
        log_escape(info->kernel, sizeof(info->kernel), json_string_value(kernel),
                   json_string_length(kernel));
    check_files(info, dir, m, verify);
}

void
image_check(const char *dir, const char *name, bool verify_sha256, ImageInfo *ret)
{
    char path[4200];
    _cleanup_free_ char *text = NULL;
    size_t len;
    struct stat st;

    *ret = (ImageInfo){.ok = true};
    log_escape(ret->name, sizeof(ret->name), name, strlen(name));
    snprintf(path, sizeof(path), "%s/%s/manifest.json", dir, name);
    if (read_file_bounded(path, IMAGE_MANIFEST_MAX_BYTES, &text, &len) < 0) {
        problem(ret,
                "no readable %s (%s): build the images (cmake --build BUILD, or "
                "stockade image build %s)",
                path, strerror(errno), ret->name);
        return;
    }
    if (stat(path, &st) == 0)
        ret->built_sec = st.st_mtime;
    json_t *m = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    check_manifest(ret, dir, m, verify_sha256);
    json_decref(m);
}

static int
cmp_info(const void *a, const void *b)
{
    return strcmp(((const ImageInfo *) a)->name, ((const ImageInfo *) b)->name);
}

int
images_scan(const char *dir, bool verify_sha256, ImageInfo **ret, size_t *ret_n, Error **errp)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[4200];
    ImageInfo *v = calloc(IMAGES_MAX, sizeof(*v));
    size_t n = 0;

    if (!v || !d) {
        int e = errno;
        free(v);
        if (d)
            closedir(d);
        return error_set(errp, E_INVALID, e, "image directory %.200s", dir);
    }
    while ((de = readdir(d)) && n < IMAGES_MAX) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len > IMAGE_NAME_MAX_BYTES)
            continue;
        snprintf(path, sizeof(path), "%s/%s/manifest.json", dir, de->d_name);
        if (access(path, F_OK) == 0)
            image_check(dir, de->d_name, verify_sha256, &v[n++]);
    }
    closedir(d);
    qsort(v, n, sizeof(*v), cmp_info);
    *ret = v;
    *ret_n = n;
    return 0;
}
