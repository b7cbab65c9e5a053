/* Fuzz target: the workspace tar writer (hostd/api/tarwriter.c) read back by our tar reader
 * (hostd/extract/tar.c). The input describes a tree that is made in a scratch directory
 * (through directory fds, so paths may pass PATH_MAX): per op, a directory or a file with
 * guest-like bytes in its name (any but NUL and '/') and its content taken from the input
 * (a forged tar header there is the attack of issue 14). The archive is pulled in odd-sized
 * pieces and parsed in odd-sized reads, both seeded by the first input byte. Invariants:
 *  - exactly the entries made come back, each once, with their type, size and content,
 *    except those whose name (a directory's with its '/') passes TARW_NAME_MAX_BYTES;
 *  - no name is flagged bad; the archive ends with its marker and nothing follows it.
 * Input: seed, then ops [kind|parent][len][fill][last] (+ [size lo][size hi][data] for
 * files). Seeds: seeds_tarwriter.py. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"
#include "fuzz_check.h"
#include "macro.h"
#include "tar.h"
#include "tarwriter.h"
#include "testlib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_OPS_MAX 48
#define FUZZ_PATH_MAX_BYTES (TARW_NAME_MAX_BYTES + 300) /* a little over the writer's cap */
#define FUZZ_FILE_MAX_BYTES 2048
#define FUZZ_ARCHIVE_MAX_BYTES (FUZZ_OPS_MAX * (16 * 512 + FUZZ_FILE_MAX_BYTES) + 2048)

typedef struct Made {
    char name[FUZZ_PATH_MAX_BYTES + 2]; /* as the archive names it: a directory ends in '/' */
    size_t name_len;
    bool dir, seen;
    const uint8_t *content;
    size_t size;
} Made;

static char scratch[512];
static Made made[FUZZ_OPS_MAX];
static size_t n_made;
static uint8_t archive[FUZZ_ARCHIVE_MAX_BYTES];

static void
remove_scratch(void)
{
    (void) rm_rf(scratch);
}

static unsigned
next_rand(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 16;
}

/* Makes one op's entry; returns false when the input ran out. Duplicates are skipped. */
static bool
make_one(int root_fd, const uint8_t **p, const uint8_t *end)
{
    if (end - *p < 4)
        return false;
    bool file = (*p)[0] & 1;
    size_t nparents = 1, parent = 0, pick = (*p)[0] >> 1;
    size_t len = MIN((size_t) (*p)[1] + 1, (size_t) 255);
    char fill = (char) ((*p)[2] ? (*p)[2] : 'z'), last = (char) ((*p)[3] ? (*p)[3] : 'y');
    *p += 4;
    for (size_t i = 0; i < n_made; i++)
        if (made[i].dir && nparents++ == pick % (n_made + 1))
            parent = i + 1;
    char comp[256];
    memset(comp, fill == '/' ? 'x' : fill, len);
    comp[len - 1] = last == '/' ? 'x' : last;
    comp[len] = '\0';
    if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0)
        comp[0] = 'x';
    const Made *par = parent ? &made[parent - 1] : NULL;
    size_t plen = par ? par->name_len : 0; /* with its '/' */
    const uint8_t *content = *p;
    size_t csize = 0;
    if (file) {
        if (end - *p < 2)
            return false;
        csize = MIN((size_t) ((*p)[0] | (*p)[1] << 8) % (FUZZ_FILE_MAX_BYTES + 1),
                    (size_t) (end - *p - 2));
        content = *p + 2;
        *p += 2 + csize;
    }
    if (plen + len + !file > FUZZ_PATH_MAX_BYTES || n_made == FUZZ_OPS_MAX)
        return true;
    int dfd = test_mkdirs_at(root_fd, par ? par->name : "", plen);
    CHECK(dfd >= 0);
    int r = file ? openat(dfd, comp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)
                 : mkdirat(dfd, comp, 0755);
    if (r < 0) {
        CHECK(errno == EEXIST);
        close(dfd);
        return true;
    }
    if (file) {
        CHECK(write_all(r, content, csize) == 0);
        close(r);
    }
    close(dfd);
    Made *m = &made[n_made++];
    memcpy(m->name, par ? par->name : "", plen);
    memcpy(m->name + plen, comp, len);
    m->name_len = plen + len;
    if (!file)
        m->name[m->name_len++] = '/';
    m->name[m->name_len] = '\0';
    m->dir = !file;
    m->seen = false;
    m->content = content;
    m->size = csize;
    return true;
}

static size_t
write_archive(const char *root, unsigned seed)
{
    TarWriter *t = NULL;
    Error *err = NULL;
    size_t len = 0;
    CHECK(tarw_new(root, &t, &err) == 0);
    for (;;) {
        size_t piece = 1 + next_rand(&seed) % 1400;
        size_t cap = MIN(piece, sizeof(archive) - len);
        CHECK(cap > 0); /* the archive fits its bound */
        ssize_t n = tarw_read(t, archive + len, cap);
        CHECK(n >= 0 && (size_t) n <= cap);
        if (n == 0)
            break;
        len += (size_t) n;
    }
    tarw_free(t);
    CHECK(len % TAR_BLOCK_BYTES == 0);
    return len;
}

typedef struct MemSource {
    const uint8_t *p;
    size_t left;
    unsigned seed;
} MemSource;

static int
mem_read(void *ctx, void *buf, size_t len, size_t *ret_got)
{
    MemSource *m = ctx;
    size_t piece = 1 + next_rand(&m->seed) % 700; /* MIN() evaluates twice */
    size_t n = MIN(len, MIN(m->left, piece));
    memcpy(buf, m->p, n);
    m->p += n;
    m->left -= n;
    *ret_got = n;
    return 0;
}

static Made *
find_made(const TarEntry *e)
{
    for (size_t i = 0; i < n_made; i++)
        if (made[i].name_len == e->path_len && memcmp(made[i].name, e->path, e->path_len) == 0)
            return &made[i];
    return NULL;
}

static void
read_back(size_t len, unsigned seed)
{
    static TarReader r;
    static TarEntry e;
    static uint8_t data[FUZZ_FILE_MAX_BYTES + 1];
    MemSource src = {archive, len, seed};
    TarStatus st;
    tar_reader_init(&r, mem_read, &src);
    while ((st = tar_reader_next(&r, &e)) == TAR_ENTRY) {
        Made *m = find_made(&e);
        CHECK(!e.path_bad);
        CHECK(m != NULL && !m->seen);                      /* nothing forged, nothing twice */
        CHECK(m->name_len <= TARW_NAME_MAX_BYTES);
        CHECK(e.type == (m->dir ? TAR_TYPE_DIR : TAR_TYPE_FILE));
        CHECK(e.size == m->size);
        size_t got = 0, n;
        do {
            CHECK(tar_reader_read(&r, data + got, sizeof(data) - got, &n) == TAR_ENTRY);
            got += n;
        } while (n > 0 && got < sizeof(data));
        CHECK(got == m->size && memcmp(data, m->content, got) == 0);
        m->seen = true;
    }
    if (st != TAR_END)
        fprintf(stderr, "reader: %s at %llu of %zu\n", r.why ? r.why : "io",
                (unsigned long long) r.offset, len);
    CHECK(st == TAR_END);
    CHECK(r.offset + TAR_BLOCK_BYTES == len); /* the second zero block, then nothing */
    for (size_t i = 0; i < n_made; i++)
        CHECK(made[i].seen == (made[i].name_len <= TARW_NAME_MAX_BYTES));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char root[600];
    if (!scratch[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(scratch, sizeof(scratch), "%s/fuzz_tarwriter.XXXXXX",
                 base && *base ? base : "/tmp");
        CHECK(mkdtemp(scratch) != NULL);
        atexit(remove_scratch);
    }
    if (size < 1)
        return 0;
    snprintf(root, sizeof(root), "%s/tree", scratch);
    CHECK(mkdir(root, 0700) == 0);
    int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(root_fd >= 0);
    const uint8_t *p = data + 1, *end = data + size;
    n_made = 0;
    while (make_one(root_fd, &p, end))
        ;
    close(root_fd);
    size_t len = write_archive(root, data[0]);
    read_back(len, data[0] * 7u + 1);
    CHECK(rm_rf(root) == 0);
    return 0;
}
