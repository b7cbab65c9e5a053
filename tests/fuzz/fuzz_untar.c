/* Fuzz target: the tar pull parser (hostd/extract/tar.c) and the name check (path.c), pure,
 * from memory. The first input byte seeds the read sizes, so the parser sees the stream cut
 * at odd places as read() would cut it. Invariants, not just "no crash":
 *  - the parser never consumes more than the input holds, and always terminates;
 *  - every entry's name is NUL-terminated within TAR_PATH_MAX_BYTES, and a name not flagged
 *    bad holds no NUL;
 *  - an entry's data reads back exactly `size` bytes unless the stream breaks;
 *  - a name judged PATH_OK is relative, has no "." / ".." / empty component, and is within
 *    the length and depth caps. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "path.h"
#include "tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME_MAX 200u
#define FUZZ_DEPTH_MAX 6u

typedef struct MemSource {
    const uint8_t *p;
    size_t left, consumed;
    unsigned seed;
} MemSource;

static int
mem_read(void *ctx, void *buf, size_t len, size_t *ret_got)
{
    MemSource *m = ctx;
    m->seed = m->seed * 1103515245u + 12345u;
    size_t n = MIN(len, MIN(m->left, (size_t) (1 + (m->seed >> 16) % 700)));
    memcpy(buf, m->p, n);
    m->p += n;
    m->left -= n;
    m->consumed += n;
    *ret_got = n;
    return 0;
}

static void
check_path(const TarEntry *e)
{
    static char out[TAR_PATH_MAX_BYTES + 1];
    size_t len = 0;
    uint32_t depth = 0;
    if (e->path_bad)
        return;
    PathVerdict v = extract_path_normalize(e->path, e->path_len, FUZZ_NAME_MAX, FUZZ_DEPTH_MAX, out,
                                           &len, &depth);
    if (v != PATH_OK)
        return;
    CHECK(len == strlen(out) && len > 0 && len <= FUZZ_NAME_MAX);
    CHECK(depth >= 1 && depth <= FUZZ_DEPTH_MAX);
    CHECK(out[0] != '/' && out[len - 1] != '/');
    CHECK(strstr(out, "//") == NULL);
    for (char *c = out; c;) {
        char *slash = strchr(c, '/');
        size_t clen = slash ? (size_t) (slash - c) : strlen(c);
        CHECK(clen > 0 && clen <= EXTRACT_NAME_MAX_BYTES);
        CHECK(!(clen == 1 && c[0] == '.') && !(clen == 2 && c[0] == '.' && c[1] == '.'));
        c = slash ? slash + 1 : NULL;
    }
}

static TarReader reader;
static TarEntry entry;
static uint8_t buf[4096];

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    MemSource src = {.p = data + 1, .left = size - 1, .seed = data[0]};
    tar_reader_init(&reader, mem_read, &src);
    for (;;) {
        TarStatus st = tar_reader_next(&reader, &entry);
        CHECK(src.consumed <= size - 1 && reader.offset == src.consumed);
        if (st != TAR_ENTRY) {
            CHECK(st == TAR_END || st == TAR_MALFORMED);
            break;
        }
        CHECK(entry.path_len <= TAR_PATH_MAX_BYTES && entry.path[entry.path_len] == '\0');
        CHECK(entry.path_bad || memchr(entry.path, '\0', entry.path_len) == NULL);
        CHECK(entry.size <= TAR_SIZE_MAX_BYTES && entry.mode <= 07777);
        check_path(&entry);
        uint64_t total = 0;
        size_t got = 1;
        while (got > 0 && tar_reader_read(&reader, buf, sizeof(buf), &got) == TAR_ENTRY)
            total += got;
        CHECK(reader.broken || total == entry.size);
        if (reader.broken)
            break;
    }
    return 0;
}
