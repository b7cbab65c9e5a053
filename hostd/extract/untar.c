/* extract_untar(): drives the tar parser (tar.h) over a blocking fd, judges each name
 * (path.h) and writes files and directories through dest.h. Limits come from ExtractLimits;
 * the only fixed sizes are the copy buffer (UNTAR_BUF_BYTES) and the parser's own caps.
 * Hostile stream content stops the run (stats->stop) but never fails it. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "dest.h"
#include "extract.h"
#include "fdutil.h"
#include "log.h"
#include "path.h"
#include "tar.h"
#include "timeutil.h"

#define UNTAR_BUF_BYTES (128u * 1024u)
#define UNTAR_NAME_ESC_BYTES 160u /* escaped name quoted in an error message */
#define UNTAR_FILE_MODE_MASK 0744u
#define UNTAR_DIR_MODE_MASK 0755u
#define UNTAR_DIR_MODE_OWNER 0700u

#define EXTRACT_DEFAULT_TOTAL_BYTES (UINT64_C(256) * 1024 * 1024)
#define EXTRACT_DEFAULT_FILE_BYTES (UINT64_C(64) * 1024 * 1024)
#define EXTRACT_DEFAULT_FILES 10000u
#define EXTRACT_DEFAULT_DEPTH 32u
#define EXTRACT_DEFAULT_NAME_BYTES 1024u
#define EXTRACT_DEFAULT_USEC (60 * USEC_PER_SEC)

void
extract_limits_default(ExtractLimits *ret)
{
    *ret = (ExtractLimits){
        .max_total_bytes = EXTRACT_DEFAULT_TOTAL_BYTES,
        .max_file_bytes = EXTRACT_DEFAULT_FILE_BYTES,
        .max_files = EXTRACT_DEFAULT_FILES,
        .max_depth = EXTRACT_DEFAULT_DEPTH,
        .max_name_bytes = EXTRACT_DEFAULT_NAME_BYTES,
        .max_usec = EXTRACT_DEFAULT_USEC,
    };
}

const char *
extract_stop_name(ExtractStop stop)
{
    static const char *const names[] = {"none", "bytes", "files", "time", "malformed", "error"};
    return (unsigned) stop < ELEMENTSOF(names) ? names[stop] : "unknown";
}

typedef struct FdSource {
    int fd;
    uint64_t deadline_usec;
} FdSource;

/* Blocking read bounded by the deadline: ETIMEDOUT once it has passed. */
static int
fd_source_read(void *ctx, void *buf, size_t len, size_t *ret_got)
{
    FdSource *s = ctx;
    for (;;) {
        uint64_t now = now_usec();
        if (now >= s->deadline_usec) {
            errno = ETIMEDOUT;
            return -1;
        }
        uint64_t left_ms = (s->deadline_usec - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC;
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        int r = poll(&p, 1, (int) MIN(left_ms, (uint64_t) INT32_MAX));
        if (r < 0 && errno != EINTR)
            return -1;
        if (r <= 0)
            continue;
        ssize_t n = read(s->fd, buf, len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -1;
        *ret_got = (size_t) n;
        return 0;
    }
}

typedef struct Untar {
    int dest_fd;
    const ExtractLimits *lim;
    ExtractStats *stats;
    uint64_t deadline_usec;
    uint32_t entries;
    TarReader reader;
    TarEntry entry;
    char path[TAR_PATH_MAX_BYTES + 1];
    uint8_t buf[UNTAR_BUF_BYTES];
} Untar;

static const char *
untar_escaped(const Untar *u, char *out, size_t cap)
{
    return log_escape(out, cap, u->entry.path, u->entry.path_len);
}

/* A parser failure: I/O on the fd is the host's, anything else the stream's. */
static int
untar_reader_failed(Untar *u, TarStatus st, Error **errp)
{
    if (st == TAR_IO_ERROR && errno == ETIMEDOUT) {
        u->stats->stop = EXTRACT_STOP_TIME;
        return 0;
    }
    if (st == TAR_IO_ERROR) {
        u->stats->stop = EXTRACT_STOP_ERROR;
        return error_set(errp, E_IO, errno, "read tar stream");
    }
    u->stats->stop = EXTRACT_STOP_MALFORMED;
    return 0;
}

/* Host-side write failure for the current entry. */
static int
untar_host_failed(Untar *u, const char *what, int err, Error **errp)
{
    char esc[UNTAR_NAME_ESC_BYTES];
    u->stats->stop = EXTRACT_STOP_ERROR;
    return error_set(errp, E_IO, err, "%s \"%s\"", what, untar_escaped(u, esc, sizeof(esc)));
}

static int
untar_copy_data(Untar *u, int fd, Error **errp)
{
    for (;;) {
        size_t got = 0;
        TarStatus st = tar_reader_read(&u->reader, u->buf, sizeof(u->buf), &got);
        if (st != TAR_ENTRY)
            return untar_reader_failed(u, st, errp) < 0 ? -1 : 1;
        if (got == 0)
            return 0;
        if (write_all(fd, u->buf, got) < 0)
            return untar_host_failed(u, "write", errno, errp);
        u->stats->bytes += got;
    }
}

/* Returns 0 when done (written or skipped), 1 when the run must stop, -1 on host failure. */
static int
untar_file(Untar *u, Error **errp)
{
    const TarEntry *e = &u->entry;
    if (e->size > u->lim->max_file_bytes) {
        u->stats->skipped++;
        u->stats->truncated = true;
        return 0; /* its data is skipped by the next tar_reader_next() */
    }
    uint32_t made = 0;
    int fd = dest_create_file(u->dest_fd, u->path, &made);
    u->stats->dirs += made;
    if (fd < 0 && dest_errno_is_conflict(-fd)) {
        u->stats->skipped++;
        return 0;
    }
    if (fd < 0)
        return untar_host_failed(u, "create", -fd, errp);
    uint64_t bytes_before = u->stats->bytes;
    int r = untar_copy_data(u, fd, errp);
    if (r != 0) { /* cut short: remove it, and its bytes from the count */
        safe_close(fd);
        dest_unlink(u->dest_fd, u->path);
        u->stats->bytes = bytes_before;
        u->stats->skipped++;
        return r;
    }
    r = dest_file_finish(fd, e->mode & UNTAR_FILE_MODE_MASK, e->mtime_sec);
    if (r < 0) {
        dest_unlink(u->dest_fd, u->path);
        u->stats->bytes = bytes_before;
        return untar_host_failed(u, "finish", -r, errp);
    }
    u->stats->files++;
    return 0;
}

static int
untar_dir(Untar *u, Error **errp)
{
    uint32_t made = 0;
    uint32_t mode = (u->entry.mode & UNTAR_DIR_MODE_MASK) | UNTAR_DIR_MODE_OWNER;
    int r = dest_mkdir(u->dest_fd, u->path, mode, &made);
    u->stats->dirs += made;
    if (r < 0 && dest_errno_is_conflict(-r)) {
        u->stats->skipped++;
        return 0;
    }
    return r < 0 ? untar_host_failed(u, "mkdir", -r, errp) : 0;
}

/* Checks the caps that stop the run before this entry's data is read. */
static bool
untar_must_stop(Untar *u)
{
    ExtractStats *s = u->stats;
    if (now_usec() >= u->deadline_usec)
        s->stop = EXTRACT_STOP_TIME;
    else if (u->entries >= u->lim->max_files)
        s->stop = EXTRACT_STOP_FILES;
    else if (u->entry.size >
             u->lim->max_total_bytes - MIN(s->streamed_bytes, u->lim->max_total_bytes))
        s->stop = EXTRACT_STOP_BYTES;
    return s->stop != EXTRACT_STOP_NONE;
}

static int
untar_entry(Untar *u, Error **errp)
{
    size_t len;
    uint32_t depth;
    PathVerdict v = PATH_ABSOLUTE;

    if (untar_must_stop(u))
        return 1;
    u->entries++;
    u->stats->streamed_bytes += u->entry.size;
    if (!u->entry.path_bad)
        v = extract_path_normalize(u->entry.path, u->entry.path_len, u->lim->max_name_bytes,
                                   u->lim->max_depth, u->path, &len, &depth);
    if (v == PATH_ROOT && u->entry.type == TAR_TYPE_DIR)
        return 0; /* "./": the destination itself */
    if (v != PATH_OK || (u->entry.type != TAR_TYPE_FILE && u->entry.type != TAR_TYPE_DIR)) {
        u->stats->skipped++;
        if (u->entry.path_bad || extract_path_verdict_is_cap(v))
            u->stats->truncated = true;
        return 0;
    }
    return u->entry.type == TAR_TYPE_DIR ? untar_dir(u, errp) : untar_file(u, errp);
}

static int
untar_run(Untar *u, Error **errp)
{
    for (;;) {
        TarStatus st = tar_reader_next(&u->reader, &u->entry);
        if (st == TAR_END)
            return 0;
        if (st != TAR_ENTRY)
            return untar_reader_failed(u, st, errp);
        int r = untar_entry(u, errp);
        if (r != 0)
            return r < 0 ? -1 : 0;
    }
}

int
extract_untar(int tar_fd, int dest_dirfd, const ExtractLimits *lim, ExtractStats *stats,
              Error **errp)
{
    _cleanup_free_ Untar *u = calloc(1, sizeof(*u));
    uint64_t start = now_usec();

    *stats = (ExtractStats){0};
    if (!u)
        return error_set(errp, E_INTERNAL, ENOMEM, "untar");
    FdSource src = {.fd = tar_fd, .deadline_usec = start + MIN(lim->max_usec, UINT64_MAX - start)};
    u->dest_fd = dest_dirfd;
    u->lim = lim;
    u->stats = stats;
    u->deadline_usec = src.deadline_usec;
    tar_reader_init(&u->reader, fd_source_read, &src);
    int r = untar_run(u, errp);
    stats->truncated = stats->truncated || stats->stop != EXTRACT_STOP_NONE;
    return r;
}
