/* The project's additions to an imported tree: see oci_finish.h. */
#include "oci_finish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ascii.h"
#include "fdutil.h"
#include "log.h"
#include "oci_apply.h"

#define FINISH_DIR_DEPTH_MAX 4096u
#define FINISH_ESC_BYTES 96u
#define DEFAULTS_HEADER                                                                            \
    "# Stockade image defaults, written by `stockade image import|build` (images/README.md).\n"    \
    "# Read by the runner at boot (guest/imagecfg.h). Values are %-escaped.\n"

typedef struct MountPoint {
    const char *name;
    mode_t mode;
} MountPoint;

static const MountPoint mount_points[] = {
    {"workspace", 0755}, {"tmp", 01777}, {"run", 0755},  {"proc", 0555},
    {"sys", 0555},       {"dev", 0755},  {"root", 0700},
};

/* ------------------------------------------------------------ User */

/* Field 3 (and 4) of the line of /etc/passwd or /etc/group whose name is name[0..len). */
static bool
id_file_lookup(const char *text, const char *name, size_t len, uint32_t *ret_id, uint32_t *ret_gid)
{
    for (const char *line = text; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        const char *end = strchrnul(line, '\n'), *f[4] = {line};
        size_t nf = 1;
        for (const char *p = line; p < end && nf < 4; p++)
            if (*p == ':')
                f[nf++] = p + 1;
        if (nf < 4 || (size_t) (f[1] - 1 - line) != len || memcmp(line, name, len) != 0)
            continue;
        const char *f4end = memchr(f[3], ':', (size_t) (end - f[3]));
        if (!ascii_parse_u32(f[2], (size_t) (f[3] - 1 - f[2]), ret_id))
            return false;
        if (ret_gid && !ascii_parse_u32(f[3], (size_t) ((f4end ? f4end : end) - f[3]), ret_gid))
            return false;
        return true;
    }
    return false;
}

static char *
read_id_file(int root_fd, const char *path)
{
    char *text = NULL;
    size_t len;
    int fd = oci_open_in_root(root_fd, path, O_RDONLY | O_NOFOLLOW);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        safe_close(fd);
        return NULL;
    }
    if (read_file_bounded_fd(fd, OCI_FINISH_ID_FILE_MAX_BYTES, &text, &len) < 0 ||
        memchr(text, '\0', len)) {
        free(text);
        return NULL;
    }
    return text;
}

int
oci_user_resolve(int root_fd, const char *user, OciUser *ret, Error **errp)
{
    const char *colon = strchr(user, ':');
    size_t ulen = colon ? (size_t) (colon - user) : strlen(user);
    _cleanup_free_ char *passwd = read_id_file(root_fd, "etc/passwd");
    _cleanup_free_ char *group = colon ? read_id_file(root_fd, "etc/group") : NULL;
    char esc[FINISH_ESC_BYTES];
    OciUser u = {0};
    uint32_t primary = 0;

    log_escape(esc, sizeof(esc), user, strlen(user));
    if (ulen == 0) {
        *ret = u;
        return colon ? error_set(errp, E_INVALID, 0, "image config: User %s has no user", esc) : 0;
    }
    bool have_primary = passwd && id_file_lookup(passwd, user, ulen, &u.uid, &primary);
    if (!have_primary && !ascii_parse_u32(user, ulen, &u.uid))
        return error_set(errp, E_INVALID, 0,
                         "image config: User %s: no such user in the "
                         "image's /etc/passwd",
                         esc);
    if (!have_primary && passwd) { /* a numeric uid: its passwd line gives the group */
        char uidtext[16];
        for (const char *l = passwd; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
            const char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            const char *c3 = c2 ? strchr(c2 + 1, ':') : NULL, *nl = strchrnul(l, '\n');
            snprintf(uidtext, sizeof(uidtext), "%u", u.uid);
            if (c3 && c3 < nl && (size_t) (c3 - c2 - 1) == strlen(uidtext) &&
                memcmp(c2 + 1, uidtext, strlen(uidtext)) == 0 &&
                ascii_parse_u32(c3 + 1, strcspn(c3 + 1, ":\n"), &primary)) {
                have_primary = true;
                break;
            }
        }
    }
    u.gid = have_primary ? primary : u.uid; /* no passwd line: the group of the same number */
    if (colon && !(group && id_file_lookup(group, colon + 1, strlen(colon + 1), &u.gid, NULL)) &&
        !ascii_parse_u32(colon + 1, strlen(colon + 1), &u.gid))
        return error_set(errp, E_INVALID, 0,
                         "image config: User %s: no such group in the "
                         "image's /etc/group",
                         esc);
    if (u.uid == 0 || u.gid == 0) {
        snprintf(u.note, sizeof(u.note),
                 "User %s is root: execs run as the session's user "
                 "(uid %u)",
                 esc, OCI_SESSION_UID);
        u.uid = u.gid = 0;
    } else {
        u.set = true;
    }
    *ret = u;
    return 0;
}

/* ------------------------------------------------------------ defaults file */

typedef struct Text {
    char *buf;
    size_t len, cap;
    bool oom;
} Text;

static void
text_add(Text *t, const char *s, size_t n)
{
    if (t->oom)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->oom = true;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

/* "key value\n" with value %-escaped: '%', controls, DEL and bytes >= 0x80 stay as they are
 * except that '%', control characters and DEL become %XX. */
static void
text_line(Text *t, const char *key, const char *value)
{
    text_add(t, key, strlen(key));
    text_add(t, " ", 1);
    for (const unsigned char *p = (const unsigned char *) value; *p; p++) {
        if (*p == '%' || *p < 0x20 || *p == 0x7f) {
            char hex[4];
            snprintf(hex, sizeof(hex), "%%%02X", *p);
            text_add(t, hex, 3);
        } else {
            text_add(t, (const char *) p, 1);
        }
    }
    text_add(t, "\n", 1);
}

int
oci_defaults_render(const OciConfig *cfg, const OciUser *user, char **ret, Error **errp)
{
    Text t = {0};
    char ids[32];

    text_add(&t, DEFAULTS_HEADER, strlen(DEFAULTS_HEADER));
    for (size_t i = 0; i < cfg->n_env; i++)
        text_line(&t, "env", cfg->env[i]);
    if (cfg->working_dir && cfg->working_dir[0])
        text_line(&t, "cwd", cfg->working_dir);
    if (user->set) {
        snprintf(ids, sizeof(ids), "%u:%u", user->uid, user->gid);
        text_line(&t, "user", ids);
    }
    for (size_t i = 0; i < cfg->n_entrypoint; i++)
        text_line(&t, "entrypoint", cfg->entrypoint[i]);
    for (size_t i = 0; i < cfg->n_cmd; i++)
        text_line(&t, "cmd", cfg->cmd[i]);
    if (t.oom) {
        free(t.buf);
        return error_set(errp, E_INTERNAL, ENOMEM, "image defaults");
    }
    *ret = t.buf;
    return 0;
}

/* ------------------------------------------------------------ the tree */

/* Makes directory path (relative, confined) and its missing parents, root 0755. */
static int
mkdir_in_root(int root_fd, const char *path, mode_t mode)
{
    char buf[OCI_PATH_MAX_BYTES + 1];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        int fd = oci_open_in_root(root_fd, buf, O_PATH | O_DIRECTORY);
        if (fd < 0) {
            char *slash = strrchr(buf, '/');
            if (slash)
                *slash = '\0';
            _cleanup_close_ int parent =
                oci_open_in_root(root_fd, slash ? buf : "", O_PATH | O_DIRECTORY);
            if (slash)
                *slash = '/';
            if (parent < 0 || mkdirat(parent, slash ? slash + 1 : buf, c ? 0755 : mode) < 0)
                return -1;
        }
        safe_close(fd);
        *p = c;
        if (!c)
            return 0;
    }
}

/* The time of everything this file writes: the tree must not depend on when it was made. */
static struct timespec finish_ts[2];

static int
write_new_file(int dir_fd, const char *name, const char *text, mode_t mode)
{
    if (rm_rf_at(dir_fd, name) < 0)
        return -1;
    _cleanup_close_ int fd =
        openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || fchmod(fd, mode) < 0 ||
        futimens(fd, finish_ts) < 0)
        return -1;
    return 0;
}

static int
finish_mount_points(int root_fd, Error **errp)
{
    struct stat st;
    for (size_t i = 0; i < ELEMENTSOF(mount_points); i++) {
        const MountPoint *m = &mount_points[i];
        if (fstatat(root_fd, m->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            continue; /* the image's own (a symlink resolves in the guest) */
        if (mkdirat(root_fd, m->name, m->mode) < 0 || fchmodat(root_fd, m->name, m->mode, 0) < 0)
            return error_set(errp, E_IO, errno, "mount point /%s", m->name);
    }
    _cleanup_close_ int home = -1;
    if (mkdir_in_root(root_fd, "home", 0755) < 0 ||
        (home = oci_open_in_root(root_fd, "home", O_PATH | O_DIRECTORY)) < 0)
        return error_set(errp, E_IO, errno, "/home");
    if (fstatat(home, "user", &st, AT_SYMLINK_NOFOLLOW) < 0 &&
        (symlinkat("../workspace", home, "user") < 0 ||
         utimensat(home, "user", finish_ts, AT_SYMLINK_NOFOLLOW) < 0))
        return error_set(errp, E_IO, errno, "/home/user");
    return 0;
}

/* Appends line to dir/name unless a line of it already has id in field 3; makes the file
 * (with fallback) if it is missing. A non-regular file there is left alone. */
static int
finish_id_file(int root_fd, const char *name, uint32_t id, const char *line, const char *fallback)
{
    char path[32], idtext[16];
    uint32_t found;
    snprintf(path, sizeof(path), "etc/%s", name);
    snprintf(idtext, sizeof(idtext), "%u", id);
    _cleanup_free_ char *text = read_id_file(root_fd, path);
    _cleanup_close_ int etc = oci_open_in_root(root_fd, "etc", O_PATH | O_DIRECTORY);
    struct stat st;

    if (etc < 0)
        return -1;
    if (!text) {
        if (fstatat(etc, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            return 0; /* something else is there (a symlink resolves in the guest): keep it */
        return write_new_file(etc, name, fallback, 0644);
    }
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        const char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        const char *nl = strchrnul(l, '\n');
        if (c2 && c2 < nl && ascii_parse_u32(c2 + 1, strcspn(c2 + 1, ":\n"), &found) && found == id)
            return 0;
    }
    _cleanup_close_ int fd = openat(etc, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    if (len > 0 && text[len - 1] != '\n' && write_all(fd, "\n", 1) < 0)
        return -1;
    if (write_all(fd, line, strlen(line)) < 0)
        return -1;
    return futimens(fd, finish_ts);
}

static int
finish_defaults(int root_fd, const OciConfig *cfg, const OciUser *user, Error **errp)
{
    _cleanup_free_ char *text = NULL;
    _cleanup_close_ int etc = -1, dir = -1;

    if (cfg->working_dir && cfg->working_dir[0] && cfg->working_dir[1] &&
        mkdir_in_root(root_fd, cfg->working_dir + 1, 0755) < 0)
        return error_set(errp, E_IO, errno, "WorkingDir");
    if (oci_defaults_render(cfg, user, &text, errp) < 0)
        return -1;
    if ((etc = oci_open_in_root(root_fd, "etc", O_PATH | O_DIRECTORY)) < 0 ||
        rm_rf_at(etc, "stockade") < 0 || mkdirat(etc, "stockade", 0755) < 0 ||
        (dir = openat(etc, "stockade", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        write_new_file(dir, "image.conf", text, 0644) < 0)
        return error_set(errp, E_IO, errno, "/%s", IMAGE_DEFAULTS_PATH);
    return 0;
}

/* Sets atime/mtime of dir_fd's directory, of every directory below and of every symlink to
 * epoch (debugfs rdump, which a Dockerfile build starts from, stamps symlinks with "now"). */
static int
finish_dir_times(int dir_fd, const struct timespec ts[2], unsigned depth)
{
    int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    int r = 0;

    if (!d) {
        safe_close(fd);
        return -1;
    }
    if (depth > FINISH_DIR_DEPTH_MAX) {
        closedir(d);
        errno = ELOOP;
        return -1;
    }
    for (struct dirent *de; r == 0 && (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (de->d_type == DT_LNK) {
            r = utimensat(dirfd(d), de->d_name, ts, AT_SYMLINK_NOFOLLOW);
            continue;
        }
        if (de->d_type != DT_DIR)
            continue;
        int child = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        r = child < 0 ? -1 : finish_dir_times(child, ts, depth + 1);
        safe_close(child);
    }
    if (r == 0 && futimens(dirfd(d), ts) < 0)
        r = -1;
    closedir(d);
    return r;
}

int
oci_finish_tree(int root_fd, const OciConfig *cfg, const OciUser *user, int64_t epoch, Error **errp)
{
    struct timespec ts[2] = {{epoch, 0}, {epoch, 0}};

    finish_ts[0] = finish_ts[1] = ts[0];
    if (finish_mount_points(root_fd, errp) < 0)
        return -1;
    if (mkdir_in_root(root_fd, "etc", 0755) < 0 ||
        finish_id_file(root_fd, "passwd", OCI_SESSION_UID,
                       "user:x:1000:1000:user:/workspace:/bin/sh\n",
                       "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/workspace:/bin/sh\n"
                       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n") < 0 ||
        finish_id_file(root_fd, "group", OCI_SESSION_UID, "user:x:1000:\n",
                       "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n") < 0)
        return error_set(errp, E_IO, errno, "/etc/passwd or /etc/group");
    if (finish_defaults(root_fd, cfg, user, errp) < 0)
        return -1;
    if (finish_dir_times(root_fd, ts, 0) < 0)
        return error_set(errp, E_IO, errno, "directory times");
    return 0;
}
