/* Confined workspace paths: see wspath.h. */
#include "wspath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "message.h"
#include "reply.h"

#define WS_RESOLVE_FLAGS                                                                           \
    (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

bool
wspath_cwd_relative(const char *cwd, const char **ret_rel)
{
    size_t n = strlen(WS_LOGICAL_PATH);

    if (cwd[0] == '\0') {
        *ret_rel = "";
        return true;
    }
    if (strncmp(cwd, WS_HOME_PATH, strlen(WS_HOME_PATH)) == 0)
        n = strlen(WS_HOME_PATH);
    else if (strncmp(cwd, WS_LOGICAL_PATH, n) != 0)
        return false;
    if (cwd[n] != '\0' && cwd[n] != '/')
        return false;
    const char *rel = cwd + n + (cwd[n] == '/');
    if (!msg_path_is_valid(rel, true))
        return false;
    *ret_rel = rel;
    return true;
}

void
wspath_split(const char *rel, char *parent, const char **ret_name)
{
    const char *slash = strrchr(rel, '/');
    if (!slash) {
        parent[0] = '\0';
        *ret_name = rel;
        return;
    }
    memcpy(parent, rel, (size_t) (slash - rel));
    parent[slash - rel] = '\0';
    *ret_name = slash + 1;
}

bool
wspath_join(const char *dir, const char *name, char *out, size_t cap)
{
    int n = dir[0] ? snprintf(out, cap, "%s/%s", dir, name) : snprintf(out, cap, "%s", name);
    return n > 0 && (size_t) n < cap && msg_path_is_valid(out, false);
}

int
wspath_openat(int dirfd, const char *rel, int flags, mode_t mode)
{
    /* openat2 refuses O_PATH with any flag beyond O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC. */
    int extra = (flags & O_PATH) ? 0 : O_NOCTTY;
    struct open_how how = {
        .flags = (uint64_t) (flags | O_NOFOLLOW | O_CLOEXEC | extra),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = WS_RESOLVE_FLAGS,
    };
    long fd = syscall(SYS_openat2, dirfd, rel[0] ? rel : ".", &how, sizeof(how));
    return fd < 0 ? -1 : (int) fd;
}

int
wspath_open_parent(int ws_fd, const char *rel, const char **ret_name, Error **errp)
{
    char parent[PATH_MAX_BYTES + 1];

    if (strlen(rel) > PATH_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "path too long");
    wspath_split(rel, parent, ret_name);
    int fd = wspath_openat(ws_fd, parent, O_PATH | O_DIRECTORY, 0);
    if (fd < 0)
        return error_set(errp, reply_category_from_errno(errno), errno, "parent directory");
    return fd;
}
