/* FsOp STAT / LIST / MKDIR / REMOVE / MOVE below the workspace: see files.h.
 * Every directory is entered through wspath_openat (no symlink, no other mount), and every
 * operation on a last component uses the *at() call that does not follow it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "files.h"
#include "guest_limits.h"
#include "log.h"
#include "reply.h"
#include "wspath.h"

typedef Stockade__Runner__FsEntry FsEntry;
typedef Stockade__Runner__FsResult FsResult;

#define FSE_TYPE(x) STOCKADE__RUNNER__FS_ENTRY__TYPE__##x
#define FSOP(x) STOCKADE__RUNNER__FS_OP__KIND__##x
#define LIST_REMOVE_PASSES 2 /* a busy writer may refill a directory while we empty it */

static int
fsops_fail(Error **errp, int e, const char *what, const char *path)
{
    char shown[96];
    return error_set(errp, reply_category_from_errno(e), e, "%s %s", what,
                     log_escape(shown, sizeof(shown), path, strlen(path)));
}

static void
fsops_entry_free(FsEntry *e)
{
    if (!e)
        return;
    free(e->name);
    if (e->symlink_target != protobuf_c_empty_string)
        free(e->symlink_target);
    if (e->resolved_target != protobuf_c_empty_string)
        free(e->resolved_target);
    free(e);
}

void
fsops_result_free(FsResult *r)
{
    for (size_t i = 0; i < r->n_entries; i++)
        fsops_entry_free(r->entries[i]);
    free(r->entries);
    r->entries = NULL;
    r->n_entries = 0;
}

static Stockade__Runner__FsEntry__Type
fsops_type(mode_t m)
{
    return S_ISREG(m)   ? FSE_TYPE(FILE)
           : S_ISDIR(m) ? FSE_TYPE(DIR)
           : S_ISLNK(m) ? FSE_TYPE(SYMLINK)
                        : FSE_TYPE(OTHER);
}

/* The link's own target text; a link that vanished or changed meanwhile becomes OTHER. */
static void
fsops_entry_target(FsEntry *e, int dirfd, const char *name)
{
    char buf[PATH_MAX_BYTES + 1];
    ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf));
    if (n <= 0 || (size_t) n > PATH_MAX_BYTES || memchr(buf, 0, (size_t) n) ||
        !(e->symlink_target = strndup(buf, (size_t) n))) {
        e->symlink_target = (char *) protobuf_c_empty_string;
        e->type = FSE_TYPE(OTHER);
    }
}

/* Where a link leads, as E2B's envd reports it (e2b-dev/infra packages/shared/pkg/filesystem/
 * entry.go, GetEntryInfo: filepath.EvalSymlinks, then os.Stat of the result): the absolute,
 * fully resolved path and that file's type and permission bits. Resolved with the session
 * user's file system identity (setfsuid: the runner is single-threaded, and the kernel drops
 * the DAC capabilities while the fsuid is not 0), so it tells the caller nothing the user
 * could not learn with stat(1); magic links (/proc/<pid>/fd/...) are not followed, so the
 * runner's own descriptors stay unnamed. A link that does not resolve keeps an empty
 * resolved_target and TYPE_UNSPECIFIED, as envd's (the host then shows the link's own path). */
static void
fsops_entry_resolve(FsEntry *e, int dirfd, const char *name, const WsCtx *ws)
{
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS};
    char proc[64], buf[PATH_MAX_BYTES + 1];
    struct stat st;

    int old_gid = setfsgid(ws->gid);
    int old_uid = setfsuid(ws->uid);
    /* setfsuid() cannot say it failed: ask (-1 changes nothing); never resolve as root */
    bool as_user =
        (uid_t) setfsuid((uid_t) -1) == ws->uid && (gid_t) setfsgid((gid_t) -1) == ws->gid;
    long r = as_user ? syscall(SYS_openat2, dirfd, name, &how, sizeof(how)) : -1;
    (void) setfsuid((uid_t) old_uid);
    (void) setfsgid((gid_t) old_gid);
    _cleanup_close_ int fd = r < 0 ? -1 : (int) r;
    if (fd < 0 || fstat(fd, &st) < 0)
        return;
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, buf, sizeof(buf));
    if (n <= 0 || (size_t) n > PATH_MAX_BYTES || buf[0] != '/' || memchr(buf, 0, (size_t) n) ||
        !(e->resolved_target = strndup(buf, (size_t) n))) {
        e->resolved_target = (char *) protobuf_c_empty_string;
        return;
    }
    e->target_type = fsops_type(st.st_mode);
    e->target_mode = st.st_mode & 07777;
}

/* An entry for name in dirfd ("" = dirfd itself), shown as shown. NULL with errno. */
static FsEntry *
fsops_entry_new(const WsCtx *ws, int dirfd, const char *name, const char *shown)
{
    struct stat st;
    int flags = name[0] ? AT_SYMLINK_NOFOLLOW : AT_EMPTY_PATH;

    if (fstatat(dirfd, name, &st, flags) < 0)
        return NULL;
    FsEntry *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    *e = (FsEntry) STOCKADE__RUNNER__FS_ENTRY__INIT;
    e->type = fsops_type(st.st_mode);
    e->size = (uint64_t) st.st_size;
    e->mode = st.st_mode & 07777;
    e->mtime_ns = (uint64_t) st.st_mtim.tv_sec * 1000000000u + (uint64_t) st.st_mtim.tv_nsec;
    if (e->type == FSE_TYPE(SYMLINK))
        fsops_entry_target(e, dirfd, name);
    if (e->type == FSE_TYPE(SYMLINK)) /* still: its text could be read */
        fsops_entry_resolve(e, dirfd, name, ws);
    if (!(e->name = strdup(shown))) {
        fsops_entry_free(e);
        errno = ENOMEM;
        return NULL;
    }
    return e;
}

static int
fsops_stat(const WsCtx *ws, const char *path, FsResult *ret, Error **errp)
{
    const char *name = "";
    _cleanup_close_ int dirfd = -1;

    if (path[0]) {
        dirfd = wspath_open_parent(ws->ws_fd, path, &name, errp);
        if (dirfd < 0)
            return -1;
    }
    FsEntry *e = fsops_entry_new(ws, dirfd >= 0 ? dirfd : ws->ws_fd, name, path);
    if (!e)
        return fsops_fail(errp, errno, "stat", path);
    ret->entries = malloc(sizeof(*ret->entries));
    if (!ret->entries) {
        fsops_entry_free(e);
        return error_set(errp, E_INTERNAL, ENOMEM, "stat");
    }
    ret->entries[0] = e;
    ret->n_entries = 1;
    return 0;
}

static int
fsops_cmp_entry(const void *a, const void *b)
{
    return strcmp((*(FsEntry *const *) a)->name, (*(FsEntry *const *) b)->name);
}

/* Adds one entry unless the reply would pass a bound; returns false to stop listing. */
static bool
fsops_list_add(FsResult *r, FsEntry *e, size_t *bytes)
{
    size_t n = protobuf_c_message_get_packed_size(&e->base) + 4; /* tag + length varint */
    if (r->n_entries >= LIST_MAX_ENTRIES || *bytes + n > LIST_REPLY_MAX_BYTES) {
        fsops_entry_free(e);
        r->truncated = true;
        return false;
    }
    r->entries[r->n_entries++] = e;
    *bytes += n;
    return true;
}

static int
fsops_list(const WsCtx *ws, const char *path, FsResult *ret, Error **errp)
{
    size_t bytes = 0;
    struct dirent *de;

    int fd = wspath_openat(ws->ws_fd, path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fsops_fail(errp, errno, "list", path);
    DIR *d = fdopendir(fd);
    if (!d) {
        safe_close(fd);
        return fsops_fail(errp, errno, "list", path);
    }
    ret->entries = calloc(LIST_MAX_ENTRIES, sizeof(*ret->entries));
    while (ret->entries && (errno = 0, de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        FsEntry *e = fsops_entry_new(ws, dirfd(d), de->d_name, de->d_name);
        if (e && !fsops_list_add(ret, e, &bytes))
            break; /* an entry that vanished meanwhile (e == NULL) is skipped */
    }
    closedir(d);
    if (!ret->entries)
        return error_set(errp, E_INTERNAL, ENOMEM, "list");
    qsort(ret->entries, ret->n_entries, sizeof(*ret->entries), fsops_cmp_entry);
    return 0;
}

/* One MKDIR step: create (owned by the session) or accept an existing real directory. */
static int
fsops_mkdir_step(const WsCtx *ws, int dirfd, const char *comp)
{
    bool created = mkdirat(dirfd, comp, DIR_MODE_DEFAULT) == 0;
    if (!created && errno != EEXIST)
        return -1;
    int fd = wspath_openat(dirfd, comp, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) {
        struct stat st;
        int e = errno;
        /* A symlink is INVALID_PATH; a file in the way is EXISTS. */
        if (e == ENOTDIR && fstatat(dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0)
            e = S_ISLNK(st.st_mode) ? ELOOP : EEXIST;
        errno = e;
        return -1;
    }
    if (created && fchown(fd, ws->uid, ws->gid) < 0)
        return safe_close(fd);
    return fd;
}

static int
fsops_mkdir(const WsCtx *ws, const char *path, Error **errp)
{
    char buf[PATH_MAX_BYTES + 1];
    char *save = NULL;

    snprintf(buf, sizeof(buf), "%s", path);
    _cleanup_close_ int cur = wspath_openat(ws->ws_fd, "", O_PATH | O_DIRECTORY, 0);
    if (cur < 0)
        return fsops_fail(errp, errno, "mkdir", path);
    for (char *comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
        int next = fsops_mkdir_step(ws, cur, comp);
        if (next < 0)
            return fsops_fail(errp, errno, "mkdir", path);
        safe_close(cur);
        cur = next;
    }
    return 0;
}

static int fsops_remove_at(int dirfd, const char *name, unsigned depth);

static int
fsops_empty_dir(int fd, unsigned depth)
{
    DIR *d = fdopendir(fd);
    struct dirent *de;
    int r = 0;

    if (!d)
        return safe_close(fd);
    while (r == 0 && (errno = 0, de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            r = fsops_remove_at(dirfd(d), de->d_name, depth + 1);
    int e = errno;
    closedir(d);
    errno = e;
    return r;
}

/* Removes name in dirfd, recursively; never leaves the workspace's filesystem. */
static int
fsops_remove_at(int dirfd, const char *name, unsigned depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR)
        return -1;
    if (depth >= REMOVE_MAX_DEPTH) {
        errno = EFBIG; /* TOO_LARGE: deeper than the runner descends */
        return -1;
    }
    for (int pass = 0; pass < LIST_REMOVE_PASSES; pass++) {
        int fd = wspath_openat(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0 || fsops_empty_dir(fd, depth) < 0)
            return -1;
        if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
            return 0;
        if (errno != ENOTEMPTY)
            return -1;
    }
    return -1;
}

static int
fsops_remove(const WsCtx *ws, const char *path, Error **errp)
{
    const char *name;
    _cleanup_close_ int dirfd = wspath_open_parent(ws->ws_fd, path, &name, errp);
    if (dirfd < 0)
        return -1;
    if (fsops_remove_at(dirfd, name, 0) < 0)
        return fsops_fail(errp, errno, "remove", path);
    return 0;
}

/* Like rename(2): an existing file target is replaced, a non-empty directory is not. */
static int
fsops_move(const WsCtx *ws, const char *from, const char *to, Error **errp)
{
    const char *name_from, *name_to;
    _cleanup_close_ int dir_from = wspath_open_parent(ws->ws_fd, from, &name_from, errp);
    if (dir_from < 0)
        return -1;
    _cleanup_close_ int dir_to = wspath_open_parent(ws->ws_fd, to, &name_to, errp);
    if (dir_to < 0)
        return -1;
    if (renameat(dir_from, name_from, dir_to, name_to) < 0)
        return fsops_fail(errp, errno, "move", from);
    return 0;
}

int
fsops_run(const WsCtx *ws, const Stockade__Runner__FsOp *op, FsResult *ret, Error **errp)
{
    FsResult r = STOCKADE__RUNNER__FS_RESULT__INIT;
    int res;

    switch (op->kind) {
    case FSOP(STAT):
        res = fsops_stat(ws, op->path, &r, errp);
        break;
    case FSOP(LIST):
        res = fsops_list(ws, op->path, &r, errp);
        break;
    case FSOP(MKDIR):
        res = fsops_mkdir(ws, op->path, errp);
        break;
    case FSOP(REMOVE):
        res = fsops_remove(ws, op->path, errp);
        break;
    case FSOP(MOVE):
        res = fsops_move(ws, op->path, op->path2, errp);
        break;
    default:
        return error_set(errp, E_INVALID, 0, "unknown fs_op kind");
    }
    if (res < 0) {
        fsops_result_free(&r);
        return -1;
    }
    *ret = r;
    return 0;
}
