/* See download.h. The HTTP body is written into a pipe from libcurl's callback; a thread runs
 * extract_untar() on the pipe's other end and drains it to EOF afterwards, so the writer never
 * blocks on a reader that stopped early. */
#include "download.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extract.h"
#include "fdutil.h"
#include "log.h"

int
download_dir_check(const char *dir, Error **errp)
{
    struct stat st;
    char esc[200];

    log_escape(esc, sizeof(esc), dir, strlen(dir));
    if (lstat(dir, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        return error_set(errp, E_INVALID, errno, "download directory %s", esc);
    }
    if (!S_ISDIR(st.st_mode))
        return error_set(errp, E_INVALID, 0,
                         "download directory %s exists and is not a directory (or is a "
                         "symlink): choose another with --download",
                         esc);
    DIR *d = opendir(dir);
    if (!d)
        return error_set(errp, E_INVALID, errno, "download directory %s", esc);
    struct dirent *de;
    bool empty = true;
    while (empty && (de = readdir(d)))
        empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
    closedir(d);
    if (!empty)
        return error_set(errp, E_INVALID, 0,
                         "download directory %s is not empty: remove it or choose another with "
                         "--download",
                         esc);
    return 0;
}

/* mkdir -p */
static int
make_dirs(const char *dir, Error **errp)
{
    _cleanup_free_ char *p = strdup(dir);
    if (!p)
        return error_set(errp, E_INTERNAL, ENOMEM, "download");
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
            return error_set(errp, E_IO, errno, "mkdir %.200s", p);
        *s = '/';
    }
    if (mkdir(p, 0755) < 0 && errno != EEXIST)
        return error_set(errp, E_IO, errno, "mkdir %.200s", p);
    return 0;
}

static void
result_from_stats(DownloadResult *ret, const ExtractStats *st)
{
    ret->bytes = st->bytes;
    ret->files = st->files;
    ret->dirs = st->dirs;
    ret->skipped = st->skipped;
    ret->truncated = st->truncated || st->stop != EXTRACT_STOP_NONE;
    snprintf(ret->stop, sizeof(ret->stop), "%s", extract_stop_name(st->stop));
}

int
download_untar_fd(int tar_fd, int dirfd, DownloadResult *ret, Error **errp)
{
    ExtractLimits lim = {
        .max_total_bytes = DOWNLOAD_MAX_TOTAL_BYTES,
        .max_file_bytes = DOWNLOAD_MAX_FILE_BYTES,
        .max_files = DOWNLOAD_MAX_FILES,
        .max_depth = DOWNLOAD_MAX_DEPTH,
        .max_name_bytes = DOWNLOAD_MAX_NAME_BYTES,
        .max_usec = DOWNLOAD_MAX_USEC,
    };
    ExtractStats st = {0};
    char buf[64 * 1024];

    int r = extract_untar(tar_fd, dirfd, &lim, &st, errp);
    for (;;) { /* drain to EOF: the writer must never block on a reader that stopped */
        ssize_t n = read(tar_fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EINTR))
            break;
    }
    result_from_stats(ret, &st);
    return r;
}

typedef struct Untar {
    int rfd, dirfd;
    DownloadResult res;
    Error *err;
    int r;
} Untar;

static void *
untar_thread(void *userdata)
{
    Untar *u = userdata;
    sigset_t all;
    sigfillset(&all); /* signals go to the main thread, which watches for Ctrl-C */
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    u->r = download_untar_fd(u->rfd, u->dirfd, &u->res, &u->err);
    return NULL;
}

typedef struct Feed {
    int wfd;
    uint64_t bytes, expected;
    Progress *progress;
} Feed;

static int
feed_sink(void *userdata, const uint8_t *data, size_t len, Error **errp)
{
    Feed *f = userdata;
    if (write_all(f->wfd, data, len) < 0)
        return error_set(errp, E_IO, errno, "download pipe");
    f->bytes += len;
    if (f->progress)
        progress_update(f->progress, f->bytes, f->expected);
    return 0;
}

/* Streams the answer into the pipe; closes wfd. */
static int
feed_pipe(Client *c, const char *path, Feed *f, DownloadResult *ret, Error **errp)
{
    ClientStreamResult res;
    int r = client_stream(c, path, feed_sink, f, &res, errp);
    f->wfd = safe_close(f->wfd);
    if (f->progress)
        progress_end(f->progress);
    if (r < 0)
        return -1;
    snprintf(ret->workspace, sizeof(ret->workspace), "%s", res.workspace_header);
    if (res.end == CLIENT_STREAM_INTERRUPTED) {
        ret->interrupted = true;
        return error_set(errp, E_UNAVAILABLE, 0, "download interrupted");
    }
    if (res.end == CLIENT_STREAM_DROPPED)
        return error_set(errp, E_UNAVAILABLE, 0, "the download broke: %s", res.why);
    return 0;
}

int
download_workspace(Client *c, const char *path, const char *dir, Progress *progress,
                   uint64_t expected_bytes, DownloadResult *ret, Error **errp)
{
    int p[2];
    pthread_t th;

    *ret = (DownloadResult){0};
    if (download_dir_check(dir, errp) < 0 || make_dirs(dir, errp) < 0)
        return -1;
    _cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0)
        return error_set(errp, E_IO, errno, "open %.200s", dir);
    if (pipe2(p, O_CLOEXEC) < 0)
        return error_set(errp, E_IO, errno, "pipe");
    Untar u = {.rfd = p[0], .dirfd = dirfd};
    if (pthread_create(&th, NULL, untar_thread, &u) != 0) {
        safe_close(p[0]);
        safe_close(p[1]);
        return error_set(errp, E_INTERNAL, EAGAIN, "thread");
    }
    Feed f = {.wfd = p[1], .expected = expected_bytes, .progress = progress};
    _cleanup_error_ Error *ferr = NULL;
    int r = feed_pipe(c, path, &f, ret, &ferr);
    pthread_join(th, NULL);
    safe_close(p[0]);
    char ws[16];
    memcpy(ws, ret->workspace, sizeof(ws));
    bool interrupted = ret->interrupted;
    *ret = u.res;
    memcpy(ret->workspace, ws, sizeof(ws));
    ret->interrupted = interrupted;
    if (u.err) { /* the host side of the extraction failed: that error wins */
        error_free(ferr);
        ferr = u.err;
        r = -1;
    }
    if (r < 0)
        *errp = TAKE_PTR(ferr);
    return r;
}

/* ------------------------------------------------------------------ one file */

typedef struct FileSink {
    int fd;
    uint64_t bytes;
} FileSink;

static int
file_sink(void *userdata, const uint8_t *data, size_t len, Error **errp)
{
    FileSink *s = userdata;
    if (len > DOWNLOAD_FILE_MAX_BYTES - s->bytes)
        return error_set(errp, E_TOO_LARGE, 0, "the file is over %llu GiB",
                         (unsigned long long) (DOWNLOAD_FILE_MAX_BYTES >> 30));
    if (write_all(s->fd, data, len) < 0)
        return error_set(errp, E_IO, errno, "write");
    s->bytes += len;
    return 0;
}

static int
get_into_fd(Client *c, const char *path, int fd, uint64_t *ret_bytes, Error **errp)
{
    FileSink s = {.fd = fd};
    ClientStreamResult res;
    if (client_stream(c, path, file_sink, &s, &res, errp) < 0)
        return -1;
    if (res.end == CLIENT_STREAM_INTERRUPTED)
        return error_set(errp, E_UNAVAILABLE, 0, "interrupted");
    if (res.end == CLIENT_STREAM_DROPPED)
        return error_set(errp, E_UNAVAILABLE, 0, "the download broke: %s", res.why);
    *ret_bytes = s.bytes;
    return 0;
}

int
download_file(Client *c, const char *path, const char *local, uint64_t *ret_bytes, Error **errp)
{
    if (strcmp(local, "-") == 0)
        return get_into_fd(c, path, STDOUT_FILENO, ret_bytes, errp);
    _cleanup_free_ char *tmp = NULL;
    _cleanup_free_ char *copy = strdup(local);
    if (!copy)
        return error_set(errp, E_INTERNAL, ENOMEM, "download");
    char *slash = strrchr(copy, '/');
    if (slash)
        slash[1] = '\0';
    if (asprintf(&tmp, "%s.stockade-cp.XXXXXX", slash ? copy : "") < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "download");
    _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "create a file beside %.200s", local);
    mode_t mask = umask(0);
    umask(mask);
    if (get_into_fd(c, path, fd, ret_bytes, errp) < 0 || fchmod(fd, 0644 & ~mask) < 0 ||
        rename(tmp, local) < 0) {
        int e = errno;
        (void) unlink(tmp);
        return errp && *errp ? -1 : error_set(errp, E_IO, e, "save %.200s", local);
    }
    return 0;
}
