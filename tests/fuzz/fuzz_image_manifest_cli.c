/* The CLI's half of fuzz_image_manifest (see fuzz_image_manifest.c): tools/images.c's
 * image_check() on a scratch image folder whose three files hold their own names. */
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "images.h"
#include "sha256.h"

void image_manifest_check_cli(const uint8_t *data, size_t size, json_t *m);

#define IMG "img"

static char dir[64];

static const char *const scratch_files[] = {"initramfs.cpio", "root.ext4", "vmlinux",
                                            "manifest.json"};

static void
scratch_remove(void)
{
    char path[256];
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof(path), "%s/" IMG "/%s", dir, scratch_files[i]);
        (void) unlink(path);
    }
    snprintf(path, sizeof(path), "%s/" IMG, dir);
    (void) rmdir(path);
    (void) rmdir(dir);
}

/* The scratch image folder, once (removed at exit): its three files hold their own names. */
static void
scratch_once(void)
{
    char path[256];
    if (dir[0])
        return;
    snprintf(dir, sizeof(dir), "%s/fuzz-image-XXXXXX", getenv("TMPDIR") ?: "/tmp");
    CHECK(mkdtemp(dir));
    atexit(scratch_remove);
    snprintf(path, sizeof(path), "%s/" IMG, dir);
    CHECK(mkdir(path, 0700) == 0);
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/" IMG "/%s", dir, scratch_files[i]);
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(scratch_files[i], f) >= 0 && fclose(f) == 0);
    }
}

static bool
printable(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char) s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return n < cap;
}

/* The content_hash of what m lists, the images' way (images/README.md). */
static bool
listed_hash_matches(json_t *m)
{
    json_t *files = json_object_get(m, "files");
    const char *cmd = json_string_value(json_object_get(m, "cmdline"));
    uint8_t d[SHA256_BYTES];
    char hex[SHA256_HEX_BYTES + 1];
    Sha256 h;
    if (!cmd || json_array_size(files) != 3)
        return false;
    sha256_init(&h);
    sha256_update(&h, "stockade-image-v1\n", 18);
    for (size_t i = 0; i < 3; i++) {
        json_t *f = json_array_get(files, i);
        const char *n = json_string_value(json_object_get(f, "name"));
        const char *sha = json_string_value(json_object_get(f, "sha256"));
        if (!n || !sha)
            return false;
        sha256_update(&h, n, strlen(n));
        sha256_update(&h, " ", 1);
        sha256_update(&h, sha, strlen(sha));
        sha256_update(&h, "\n", 1);
    }
    sha256_update(&h, "cmdline ", 8);
    sha256_update(&h, cmd, strlen(cmd));
    sha256_update(&h, "\n", 1);
    sha256_final(&h, d);
    hex_encode(d, sizeof(d), hex);
    return strcmp(hex, json_string_value(json_object_get(m, "content_hash")) ?: "") == 0;
}

/* Each listed file has the real size and sha256 of the scratch file of that name. */
static bool
listed_files_real(json_t *m)
{
    static const char *const want[] = {"initramfs.cpio", "root.ext4", "vmlinux"};
    json_t *files = json_object_get(m, "files");
    for (size_t i = 0; i < 3; i++) {
        json_t *f = json_array_get(files, i);
        uint8_t d[SHA256_BYTES];
        char hex[SHA256_HEX_BYTES + 1];
        Sha256 h;
        if (strcmp(json_string_value(json_object_get(f, "name")) ?: "", want[i]) != 0 ||
            json_integer_value(json_object_get(f, "size")) != (json_int_t) strlen(want[i]))
            return false;
        sha256_init(&h);
        sha256_update(&h, want[i], strlen(want[i]));
        sha256_final(&h, d);
        hex_encode(d, sizeof(d), hex);
        if (strcmp(json_string_value(json_object_get(f, "sha256")) ?: "", hex) != 0)
            return false;
    }
    return true;
}

void
image_manifest_check_cli(const uint8_t *data, size_t size, json_t *m)
{
    char path[256];
    scratch_once();
    snprintf(path, sizeof(path), "%s/" IMG "/manifest.json", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0 && write(fd, data, size) == (ssize_t) size && close(fd) == 0);
    ImageInfo info;
    image_check(dir, IMG, true, &info);
    CHECK(printable(info.kernel, sizeof(info.kernel)) &&
          printable(info.problem, sizeof(info.problem)) && printable(info.name, sizeof(info.name)));
    if (!info.ok)
        return;
    CHECK(json_is_object(m) && json_integer_value(json_object_get(m, "format")) == 1);
    CHECK(strcmp(json_string_value(json_object_get(m, "name")) ?: "", IMG) == 0);
    CHECK(listed_files_real(m) && listed_hash_matches(m));
    CHECK(strcmp(info.content_hash, json_string_value(json_object_get(m, "content_hash"))) == 0);
}
