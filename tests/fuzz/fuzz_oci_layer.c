/* Fuzz target: one OCI layer applied onto a scratch root (hostd/oci: oci_stream.c decoding,
 * oci_apply.c applying), with small caps. The first byte picks the compression (none, gzip,
 * zstd); the rest is the blob. A first honest layer (a directory, a file, a symlink to /) is
 * applied before, so whiteouts, hard links and symlinked parents have something to meet.
 * Invariants, by walking what landed: nothing appears beside the root; no device node, FIFO,
 * socket, setuid or setgid bit exists in it; the entry count stays within the cap; a failure
 * always says why. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "oci_apply.h"
#include "timeutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_ENTRIES 64u
#define FUZZ_MAX_BYTES (512u * 1024u)

/* An honest first layer: dir d/, file d/f, symlink up -> / (ustar, made once). */
static uint8_t base_layer[6 * 512];
static char scratch[4096];

static void
tar_header(uint8_t *b, const char *name, char type, const char *link, unsigned size)
{
    unsigned sum = 0;
    memset(b, 0, 512);
    snprintf((char *) b, 100, "%s", name);
    snprintf((char *) b + 100, 8, "%07o", type == '5' ? 0755u : 0644u);
    snprintf((char *) b + 108, 8, "%07o", 0u);
    snprintf((char *) b + 116, 8, "%07o", 0u);
    snprintf((char *) b + 124, 12, "%011o", size);
    snprintf((char *) b + 136, 12, "%011o", 0u);
    b[156] = (uint8_t) type;
    snprintf((char *) b + 157, 100, "%s", link);
    memcpy(b + 257,
           "ustar\0"
           "00",
           8);
    memset(b + 148, ' ', 8);
    for (int i = 0; i < 512; i++)
        sum += b[i];
    snprintf((char *) b + 148, 8, "%06o", sum);
}

static int
walk_check(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void) path;
    (void) type;
    (void) ftw;
    CHECK(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode) || S_ISLNK(st->st_mode));
    CHECK((st->st_mode & (S_ISUID | S_ISGID)) == 0);
    return 0;
}

static int
rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void) st;
    (void) type;
    return ftw->level == 0 ? 0 : remove(path);
}

static void
remove_scratch(void)
{
    (void) nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    (void) rmdir(scratch);
}

static void
setup_once(void)
{
    if (scratch[0])
        return;
    const char *base = getenv("TMPDIR");
    snprintf(scratch, sizeof(scratch), "%s/fuzz_oci_layer.XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(scratch) != NULL);
    atexit(remove_scratch);
    tar_header(base_layer, "d/", '5', "", 0);
    tar_header(base_layer + 512, "d/f", '0', "", 2);
    memcpy(base_layer + 1024, "hi", 2);
    tar_header(base_layer + 1536, "up", '2', "/", 0);
}

static int
count_beside_root(void)
{
    DIR *d = opendir(scratch);
    int n = 0;
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "root"))
            n++;
    closedir(d);
    return n;
}

static int
apply_blob(OciApply *a, const uint8_t *blob, size_t len, OciCompression comp, uint64_t *budget)
{
    OciDescriptor d = {.size = len, .compression = comp};
    Error *err = NULL;
    OciStream s;
    int in = memfd_create("blob", MFD_CLOEXEC);
    CHECK(in >= 0 && write(in, blob, len) == (ssize_t) len);
    lseek(in, 0, SEEK_SET);
    CHECK(oci_stream_open(&s, in, &d, budget, now_usec() + 10 * USEC_PER_SEC, &err) == 0);
    int r = oci_apply_layer(a, "layer", &s, &err);
    CHECK(r == 0 || (err && err->message[0]));
    oci_stream_close(&s);
    error_free(err);
    close(in);
    return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char root[4200];
    uint64_t budget = FUZZ_MAX_BYTES;

    if (size < 1)
        return 0;
    setup_once();
    snprintf(root, sizeof(root), "%s/root", scratch);
    CHECK(mkdir(root, 0755) == 0);
    int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(rfd >= 0);
    OciApply a = {.root_fd = rfd,
                  .max_entries = FUZZ_MAX_ENTRIES,
                  .max_depth = 16,
                  .deadline_usec = now_usec() + 10 * USEC_PER_SEC};
    CHECK(apply_blob(&a, base_layer, sizeof(base_layer), OCI_COMPRESSION_NONE, &budget) == 0);
    (void) apply_blob(&a, data + 1, size - 1, (OciCompression) (data[0] % 3), &budget);
    CHECK(a.stats.entries <= FUZZ_MAX_ENTRIES + 1);
    CHECK(nftw(root, walk_check, 16, FTW_PHYS) == 0);
    CHECK(count_beside_root() == 0);
    oci_apply_free(&a);
    close(rfd);
    CHECK(nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
    return 0;
}
