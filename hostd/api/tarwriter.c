/* See tarwriter.h. */
#include "tarwriter.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdutil.h"

#define BLOCK 512
/* Blocks of the NUL-terminated name in a GNU 'L' record. */
#define NAME_BLOCKS ((TARW_NAME_MAX_BYTES + 1 + BLOCK - 1) / BLOCK)

typedef struct {
    char *path; /* relative */
    bool dir;
    off_t size;
    mode_t mode;
    time_t mtime;
} Entry;

struct TarWriter {
    int root_fd;
    Entry *e;
    size_t n, cap;
    size_t cur;             /* entry being sent */
    int phase;              /* 0 = headers next, 1 = data, 2 = padding */
    int fd;                 /* current file */
    off_t sent;             /* of the current file's data */
    size_t pad_left;        /* zero bytes that round the current file's data up to a block */
    uint8_t hdr[(2 + NAME_BLOCKS) * BLOCK]; /* 'L' header + its name blocks + header */
    size_t hdr_len, hdr_off;
    int trailer_left; /* zero bytes of the end-of-archive marker still to send */
};

static struct {
    TarWriter *t;
    size_t prefix;
    int err;
} walk;

static int
walk_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void) ftw;
    TarWriter *t = walk.t;
    size_t len = strlen(path);
    if (len <= walk.prefix || (type != FTW_F && type != FTW_D))
        return 0;
    if (type == FTW_F && !S_ISREG(st->st_mode))
        return 0;
    if (len - walk.prefix - 1 + (type == FTW_D) > TARW_NAME_MAX_BYTES)
        return 0; /* left out (see tarwriter.h) */
    if (t->n == TARW_MAX_ENTRIES)
        return 1; /* stop: the archive is cut at the cap */
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        Entry *ne = realloc(t->e, cap * sizeof(*ne));
        if (!ne) {
            walk.err = ENOMEM;
            return 1;
        }
        t->e = ne;
        t->cap = cap;
    }
    Entry *e = &t->e[t->n];
    if (!(e->path = strdup(path + walk.prefix + 1))) {
        walk.err = ENOMEM;
        return 1;
    }
    e->dir = type == FTW_D;
    e->size = e->dir ? 0 : st->st_size;
    e->mode = st->st_mode & 0755;
    e->mtime = st->st_mtime;
    t->n++;
    return 0;
}

int
tarw_new(const char *root_dir, TarWriter **ret, Error **errp)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    TarWriter *t = calloc(1, sizeof(*t));
    if (!t)
        return error_set(errp, E_INTERNAL, ENOMEM, "tar");
    t->fd = -1;
    t->trailer_left = 2 * BLOCK;
    t->root_fd = open(root_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (t->root_fd < 0) {
        int e = errno;
        free(t);
        return error_set(errp, e == ENOENT ? E_NOT_FOUND : E_IO, e, "open %s", root_dir);
    }
    pthread_mutex_lock(&lock);
    walk.t = t;
    walk.prefix = strlen(root_dir);
    walk.err = 0;
    (void) nftw(root_dir, walk_entry, 16, FTW_PHYS | FTW_MOUNT);
    int err = walk.err;
    pthread_mutex_unlock(&lock);
    if (err) {
        tarw_free(t);
        return error_set(errp, E_INTERNAL, err, "list %s", root_dir);
    }
    *ret = t;
    return 0;
}

void
tarw_free(TarWriter *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->e[i].path);
    free(t->e);
    safe_close(t->fd);
    safe_close(t->root_fd);
    free(t);
}

/* width-1 octal digits and a NUL; values that do not fit saturate (sizes are capped far
 * below 8 GiB by the artifact limits). */
static void
octal(char *dst, size_t width, unsigned long long v)
{
    dst[width - 1] = '\0';
    for (size_t i = width - 1; i-- > 0;) {
        dst[i] = (char) ('0' + (v & 7));
        v >>= 3;
    }
    if (v) /* did not fit */
        memset(dst, '7', width - 1);
}

static void
header_block(uint8_t *b, const char *name, size_t name_len, char type, unsigned long long size,
             mode_t mode, time_t mtime)
{
    memset(b, 0, BLOCK);
    memcpy(b, name, MIN(name_len, (size_t) 100));
    octal((char *) b + 100, 8, mode);
    octal((char *) b + 108, 8, 0);
    octal((char *) b + 116, 8, 0);
    octal((char *) b + 124, 12, size);
    octal((char *) b + 136, 12, (unsigned long long) (mtime > 0 ? mtime : 0));
    b[156] = (uint8_t) type;
    memcpy(b + 257, "ustar", 6);
    memcpy(b + 263, "00", 2);
    memset(b + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < BLOCK; i++)
        sum += b[i];
    snprintf((char *) b + 148, 8, "%06o", sum);
    b[155] = ' ';
}

/* Builds the header(s) of entry t->cur into t->hdr. */
static void
tarw_headers(TarWriter *t)
{
    Entry *e = &t->e[t->cur];
    char name[TARW_NAME_MAX_BYTES + 1]; /* the listing left longer names out */
    size_t len = (size_t) snprintf(name, sizeof(name), "%s%s", e->path, e->dir ? "/" : "");
    size_t off = 0;
    if (len > 100) { /* GNU long name: a 'L' entry whose data is the whole name and its NUL */
        size_t blocks = (len + 1 + BLOCK - 1) / BLOCK;
        header_block(t->hdr, "././@LongLink", 13, 'L', (unsigned long long) len + 1, 0644, 0);
        memset(t->hdr + BLOCK, 0, blocks * BLOCK);
        memcpy(t->hdr + BLOCK, name, len);
        off = (1 + blocks) * BLOCK;
    }
    header_block(t->hdr + off, name, len, e->dir ? '5' : '0', (unsigned long long) e->size, e->mode,
                 e->mtime);
    t->hdr_len = off + BLOCK;
    t->hdr_off = 0;
}

/* Opens a listed file for its data; -1 if it is gone or no longer a regular file (a FIFO
 * put in its place must not block the stream: O_NONBLOCK). Paths may exceed PATH_MAX. */
static int
tarw_open_file(int root_fd, const char *path)
{
    int fd = openat2_beneath_long(root_fd, path, O_RDONLY | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)))
        fd = safe_close(fd);
    return fd;
}

static ssize_t
tarw_data(TarWriter *t, uint8_t *buf, size_t cap)
{
    Entry *e = &t->e[t->cur];
    size_t want = (size_t) MIN((off_t) cap, e->size - t->sent);
    ssize_t n = t->fd >= 0 ? read(t->fd, buf, want) : 0;
    if (n <= 0) { /* vanished or shrank: keep the archive well-formed */
        memset(buf, 0, want);
        n = (ssize_t) want;
    }
    t->sent += n;
    return n;
}

ssize_t
tarw_read(TarWriter *t, void *out, size_t cap)
{
    uint8_t *buf = out;
    for (;;) {
        if (t->cur >= t->n) {
            size_t n = MIN(cap, (size_t) t->trailer_left);
            memset(buf, 0, n);
            t->trailer_left -= (int) n;
            return (ssize_t) n;
        }
        Entry *e = &t->e[t->cur];
        if (t->phase == 0) {
            if (t->hdr_len == 0) {
                tarw_headers(t);
                t->fd = e->dir ? -1 : tarw_open_file(t->root_fd, e->path);
                t->sent = 0;
            }
            if (t->hdr_off < t->hdr_len) {
                size_t n = MIN(cap, t->hdr_len - t->hdr_off);
                memcpy(buf, t->hdr + t->hdr_off, n);
                t->hdr_off += n;
                return (ssize_t) n;
            }
            t->phase = 1;
        }
        if (t->phase == 1) {
            if (t->sent < e->size)
                return tarw_data(t, buf, cap);
            t->pad_left = (size_t) ((BLOCK - e->size % BLOCK) % BLOCK);
            t->phase = 2;
        }
        if (t->pad_left > 0) {
            size_t n = MIN(cap, t->pad_left);
            memset(buf, 0, n);
            t->pad_left -= n;
            return (ssize_t) n;
        }
        t->fd = safe_close(t->fd);
        t->cur++;
        t->phase = 0;
        t->hdr_len = 0;
    }
}
