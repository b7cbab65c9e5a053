/* guest_memory = template: one copy-on-write memory template per image and shape (see pool.h).
 *
 * Files, per shape, in template_dir (0711, root): <shape>.mem (the template's RAM: only QEMU's
 * user may open it, 0600, because clones on QEMU < 8.2 open it read-write even though they
 * map it privately), <shape>.state (device state, root only: the daemon hands QEMU an fd),
 * <shape>.key (sha256 of the template's XML and image: names what the files were made from).
 * Anything else there is removed at start.
 *
 * The folder is the daemon's own (owndir.h): made by it, or an existing one that root owns and
 * nobody else can write, on a path nobody else can change; the pool holds it open
 * (template_dir_fd) and makes every file in it with openat(O_CREAT|O_EXCL|O_NOFOLLOW). QEMU
 * still opens <shape>.mem by path (a `-object` argument): the path's folders are checked for
 * that reason. Loop thread, except the worker-side functions. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "owndir.h"
#include "pool_internal.h"
#include "sha256.h"

#define TEMPLATE_TMPFS_DIR "/dev/shm"
/* /dev/shm/stockade-<TEMPLATE_TMPFS_HASH_HEX of sha256(state_dir)>[-<random hex>] */
#define TEMPLATE_TMPFS_HASH_HEX 12
#define TEMPLATE_TMPFS_RANDOM_BYTES 8
#define TEMPLATE_TMPFS_NAME_MAX_BYTES (NAME_MAX + 1)
/* Random names tried before giving up on the tmpfs (each taken one is another user's). */
#define TEMPLATE_TMPFS_RANDOM_TRIES 16
#define TEMPLATE_KEY_MAX_BYTES 128
#define TEMPLATE_TMPFS_MAGIC 0x01021994 /* statfs f_type of tmpfs */
#define TEMPLATE_PWBUF_BYTES 4096

/* ------------------------------------------------------------------ the template guest */

void
template_guest_free(Guest *g)
{
    if (!g)
        return;
    guest_free_fields(g);
    free(g);
}

static int
template_paths(Pool *p, Shape *s)
{
    const char *d = p->template_dir;
    return asprintf(&s->mem_path, "%s/%s.mem", d, s->name) < 0 ||
                   asprintf(&s->mem_new_path, "%s/%s.mem.new", d, s->name) < 0 ||
                   asprintf(&s->state_path, "%s/%s.state", d, s->name) < 0 ||
                   asprintf(&s->state_new_path, "%s/%s.state.new", d, s->name) < 0 ||
                   asprintf(&s->tkey_path, "%s/%s.key", d, s->name) < 0
               ? -1
               : 0;
}

/* The guest that boots once and is saved as the shape's template: named <prefix><shape>-tmpl
 * (never a slot's name: those end in a number), its own disk and channel. */
int
template_guest_new(Pool *p, Shape *s, Error **errp)
{
    Guest *g = calloc(1, sizeof(*g));
    if (!g)
        return error_set(errp, E_INTERNAL, ENOMEM, "template guest");
    s->tmpl = g;
    g->pool = p;
    g->shape = s;
    g->tmpl = true;
    g->qemu_pid = -1;
    g->state = SLOT_EMPTY;
    snprintf(g->name, sizeof(g->name), "%s%s-tmpl", p->cfg.domain_prefix, s->name);
    /* Like a slot's: derived from the state directory and the name. A fixed UUID per shape
     * index made two daemons of one host (or a daemon and the test harness) collide: "domain
     * ... is already defined with uuid", and the second fell back to copy. */
    slot_uuid(p->cfg.state_dir, g->name, g->uuid);
    if (guest_init_paths(g, p->cfg.state_dir) < 0 || template_paths(p, s) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "template guest");
    return 0;
}

/* ------------------------------------------------------------------ where templates live */

static uint64_t
pool_templates_mib(const Pool *p)
{
    uint64_t mib = 0;
    for (size_t i = 0; i < p->n_shapes; i++)
        mib += p->shapes[i].memory_mib;
    return mib;
}

/* tmpfs: the templates' pages are in memory anyway (the page cache clones map); on disk they
 * would also be written back. Only when each template fits twice (a remade template is
 * written before the old one goes) with POOL_TEMPLATE_TMPFS_SPARE_MIB left over. */
static bool
template_tmpfs_fits(const Pool *p, char *why, size_t why_len)
{
    struct statfs fs;
    struct statvfs vfs;
    if (statfs(TEMPLATE_TMPFS_DIR, &fs) < 0 || fs.f_type != TEMPLATE_TMPFS_MAGIC ||
        statvfs(TEMPLATE_TMPFS_DIR, &vfs) < 0) {
        snprintf(why, why_len, TEMPLATE_TMPFS_DIR " is not a tmpfs");
        return false;
    }
    uint64_t free_mib = (uint64_t) vfs.f_bavail * vfs.f_frsize >> 20;
    uint64_t need_mib = 2 * pool_templates_mib(p) + POOL_TEMPLATE_TMPFS_SPARE_MIB;
    snprintf(why, why_len, "tmpfs " TEMPLATE_TMPFS_DIR " has %llu MiB free, templates need %llu",
             (unsigned long long) free_mib, (unsigned long long) need_mib);
    return free_mib >= need_mib;
}

/* Appends to the reason (cut at its end). */
static void why_append(char *why, size_t why_len, const char *fmt, ...) _printf_(3, 4);
static void
why_append(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    size_t n = strlen(why);
    va_start(ap, fmt);
    (void) vsnprintf(why + n, why_len - n, fmt, ap);
    va_end(ap);
}

/* A folder of ours that an earlier run made under a random name (the usual one was refused
 * then too): reused, so a restart after a crash finds its templates. */
static bool
tmpfs_find_random(int shm_fd, const char *stem, char *ret_name, size_t name_len, int *ret_fd)
{
    size_t stem_len = strlen(stem), hex_len = 2 * TEMPLATE_TMPFS_RANDOM_BYTES;
    int fd = openat(shm_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        safe_close(fd);
        return false;
    }
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        const char *tail = e->d_name + stem_len + 1;
        _cleanup_error_ Error *err = NULL;
        if (strncmp(e->d_name, stem, stem_len) != 0 || e->d_name[stem_len] != '-' ||
            strlen(tail) != hex_len || strspn(tail, "0123456789abcdef") != hex_len)
            continue;
        found = owndir_open_at(dirfd(d), e->d_name, e->d_name, 0711, OWNDIR_SET_MODE, ret_fd,
                               &err) == 0;
        if (found)
            snprintf(ret_name, name_len, "%s", e->d_name);
    }
    closedir(d);
    return found;
}

/* A new folder of a random name: mkdirat() fails on a name that exists, so nobody can have
 * made it first. */
static int
tmpfs_make_random(int shm_fd, const char *stem, char *ret_name, size_t name_len, int *ret_fd,
                  Error **errp)
{
    for (unsigned i = 0; i < TEMPLATE_TMPFS_RANDOM_TRIES; i++) {
        uint8_t rnd[TEMPLATE_TMPFS_RANDOM_BYTES];
        char hex[2 * TEMPLATE_TMPFS_RANDOM_BYTES + 1];
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
            return error_set(errp, E_INTERNAL, errno, "getrandom");
        hex_encode(rnd, sizeof(rnd), hex);
        snprintf(ret_name, name_len, "%s-%s", stem, hex);
        if (mkdirat(shm_fd, ret_name, 0711) == 0)
            return owndir_open_at(shm_fd, ret_name, ret_name, 0711, OWNDIR_SET_MODE, ret_fd, errp);
        if (errno != EEXIST)
            return error_set(errp, E_IO, errno, "create " TEMPLATE_TMPFS_DIR "/%s", ret_name);
    }
    return error_set(errp, E_CONFLICT, 0, TEMPLATE_TMPFS_DIR ": %d random names were all taken",
                     TEMPLATE_TMPFS_RANDOM_TRIES);
}

/* The templates' folder on the tmpfs: stockade-<hash of the state directory>, one per state
 * directory so that a restart finds its templates. That name is one anybody can predict, in a
 * folder anybody can write: a folder there that is not the daemon's own (another user made it
 * first, or put a symlink or a file there) is refused, logged and left alone, and the
 * templates go to stockade-<hash>-<random hex> instead (issue 25). */
static int
template_open_tmpfs(Pool *p, char *why, size_t why_len, Error **errp)
{
    char hex[SHA256_HEX_BYTES + 1], stem[TEMPLATE_TMPFS_NAME_MAX_BYTES];
    char name[TEMPLATE_TMPFS_NAME_MAX_BYTES];
    char shown[sizeof(TEMPLATE_TMPFS_DIR) + TEMPLATE_TMPFS_NAME_MAX_BYTES];
    _cleanup_close_ int shm = -1;
    _cleanup_error_ Error *refused = NULL;

    sha256_hex(p->cfg.state_dir, strlen(p->cfg.state_dir), hex);
    hex[TEMPLATE_TMPFS_HASH_HEX] = '\0';
    snprintf(stem, sizeof(stem), "stockade-%s", hex);
    snprintf(shown, sizeof(shown), TEMPLATE_TMPFS_DIR "/%s", stem);
    if (owndir_open_parent(TEMPLATE_TMPFS_DIR, &shm, errp) < 0)
        return -1;
    if (owndir_open_at(shm, stem, shown, 0711, OWNDIR_CREATE | OWNDIR_SET_MODE, &p->template_dir_fd,
                       &refused) == 0)
        snprintf(name, sizeof(name), "%s", stem);
    else if (refused->category != E_CONFLICT)
        return error_set(errp, refused->category, 0, "%s", refused->message);
    else {
        log_error(
            "pool: %s; the memory templates go to a folder of a random name in " TEMPLATE_TMPFS_DIR
            " instead",
            refused->message);
        if (!tmpfs_find_random(shm, stem, name, sizeof(name), &p->template_dir_fd) &&
            tmpfs_make_random(shm, stem, name, sizeof(name), &p->template_dir_fd, errp) < 0)
            return -1;
        why_append(why, why_len, "; %s was refused: not this daemon's", shown);
    }
    return asprintf(&p->template_dir, TEMPLATE_TMPFS_DIR "/%s", name) < 0
               ? error_set(errp, E_INTERNAL, ENOMEM, "template_dir")
               : 0;
}

/* <state_dir>/templates/memory: each folder on the way the daemon's own. */
static int
template_open_state_dir(Pool *p, Error **errp)
{
    _cleanup_close_ int state = -1, templates = -1;
    _cleanup_free_ char *shown = NULL;
    if (asprintf(&shown, "%s/templates", p->cfg.state_dir) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "template_dir");
    if (owndir_open(p->cfg.state_dir, 0711, OWNDIR_CREATE | OWNDIR_FOLLOW_LAST, &state, errp) < 0 ||
        owndir_open_at(state, "templates", shown, 0711, OWNDIR_CREATE | OWNDIR_SET_MODE, &templates,
                       errp) < 0)
        return -1;
    return owndir_open_at(templates, "memory", p->template_dir, 0711,
                          OWNDIR_CREATE | OWNDIR_SET_MODE, &p->template_dir_fd, errp);
}

static int
template_dir_check(const char *dir, Error **errp)
{
    if (dir[0] != '/' || strlen(dir) > POOL_TEMPLATE_DIR_MAX_BYTES || strpbrk(dir, ",\n"))
        return error_set(errp, E_INVALID, 0,
                         "pool: template_dir must be an absolute path of at most %d bytes "
                         "without ',' (%.64s)",
                         POOL_TEMPLATE_DIR_MAX_BYTES, dir);
    return 0;
}

int
pool_template_choose_dir(Pool *p, Error **errp)
{
    char why[512];
    const char *cfg = p->cfg.template_dir;
    _cleanup_error_ Error *err = NULL;

    if (cfg && cfg[0]) {
        if (template_dir_check(cfg, errp) < 0)
            return -1;
        if (!(p->template_dir = strdup(cfg)))
            return error_set(errp, E_INTERNAL, ENOMEM, "template_dir");
        snprintf(why, sizeof(why), "configured");
        (void) owndir_open(cfg, 0711, OWNDIR_CREATE | OWNDIR_SET_MODE | OWNDIR_FOLLOW_LAST,
                           &p->template_dir_fd, &err);
    } else if (template_tmpfs_fits(p, why, sizeof(why)) &&
               template_open_tmpfs(p, why, sizeof(why), &err) == 0) {
        /* p->template_dir is set */
    } else {
        if (err) { /* no folder of ours on the tmpfs: on disk then */
            why_append(why, sizeof(why), "; %s", err->message);
            error_free(TAKE_PTR(err));
        }
        if (asprintf(&p->template_dir, "%s/templates/memory", p->cfg.state_dir) < 0)
            return error_set(errp, E_INTERNAL, ENOMEM, "template_dir");
        if (template_dir_check(p->template_dir, errp) < 0)
            return -1;
        (void) template_open_state_dir(p, &err);
    }
    snprintf(p->memory_reason, sizeof(p->memory_reason),
             "template: one per image and shape in %.512s (%.400s)", p->template_dir, why);
    if (err) /* the folder cannot be the daemon's own: no templates, copy */
        pool_template_failed(p, err->message);
    return 0;
}

/* ------------------------------------------------------------------ validity, pruning */

bool
template_matches(const Shape *s)
{
    _cleanup_free_ char *key = NULL;
    size_t len;
    struct stat st;
    if (!s->tmpl || !s->tmpl->xml)
        return false;
    int dir = s->tmpl->pool->template_dir_fd;
    if (fstatat(dir, path_base(s->mem_path), &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISREG(st.st_mode) ||
        fstatat(dir, path_base(s->state_path), &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISREG(st.st_mode) || st.st_size == 0)
        return false;
    if (read_file_bounded_at(dir, path_base(s->tkey_path), TEMPLATE_KEY_MAX_BYTES, &key, &len) < 0)
        return false;
    return strcmp(key, s->tmpl->key) == 0;
}

void
shape_set_template_ok(Shape *s, bool ok)
{
    s->template_ok = ok;
    for (unsigned k = 0; k < s->n_slots; k++)
        s->slots[k].snapshot_ok = ok;
    if (!ok && s->tmpl) /* the key marks a complete template */
        (void) unlinkat(s->tmpl->pool->template_dir_fd, path_base(s->tkey_path), 0);
}

static bool
template_file_wanted(const Pool *p, const char *name)
{
    for (size_t i = 0; i < p->n_shapes; i++) {
        const Shape *s = &p->shapes[i];
        const char *paths[] = {s->mem_path, s->state_path, s->tkey_path};
        for (size_t k = 0; k < ELEMENTSOF(paths); k++)
            if (s->template_ok && strcmp(path_base(paths[k]), name) == 0)
                return true;
    }
    return false;
}

void
pool_prune_templates(Pool *p)
{
    int fd = openat(p->template_dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        safe_close(fd);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            template_file_wanted(p, e->d_name))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            log_info("removed stale template file %s/%s", p->template_dir, e->d_name);
    }
    closedir(d);
}

static uint64_t
unlink_counting(int dir, const char *path)
{
    struct stat st;
    const char *name = path ? path_base(path) : NULL;
    if (!name || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
        unlinkat(dir, name, 0) < 0)
        return 0;
    return (uint64_t) st.st_blocks * 512;
}

void
pool_release_templates(Pool *p)
{
    struct statfs fs;
    if (p->memory != POOL_MEMORY_TEMPLATE || p->template_dir_fd < 0 ||
        fstatfs(p->template_dir_fd, &fs) < 0 || fs.f_type != TEMPLATE_TMPFS_MAGIC)
        return;
    uint64_t freed = 0;
    for (size_t i = 0; i < p->n_shapes; i++) {
        const Shape *s = &p->shapes[i];
        const char *paths[] = {s->mem_path, s->mem_new_path, s->state_path, s->state_new_path,
                               s->tkey_path};
        for (size_t k = 0; k < ELEMENTSOF(paths); k++)
            freed += unlink_counting(p->template_dir_fd, paths[k]);
    }
    /* the directory the daemon chose itself (a configured one is the operator's), by path:
     * every folder on it is root's and can be changed by nobody else */
    bool chosen = !p->cfg.template_dir || !p->cfg.template_dir[0];
    if (chosen && rmdir(p->template_dir) < 0 && errno != ENOENT)
        log_warn("stop: could not remove %s: %s", p->template_dir, strerror(errno));
    log_info("stop: removed the templates from the tmpfs %s (%llu MiB of memory back to the "
             "host); the next start boots them again",
             p->template_dir, (unsigned long long) (freed >> 20));
}

/* ------------------------------------------------------------------ fallback */

bool
pool_template_unproven(const Pool *p)
{
    return p->memory == POOL_MEMORY_TEMPLATE && !p->template_ever_saved && !p->clone_ever_started;
}

void
pool_template_failed(Pool *p, const char *why)
{
    if (p->memory != POOL_MEMORY_TEMPLATE)
        return;
    char safe[400];
    log_escape(safe, sizeof(safe), why, strlen(why));
    snprintf(p->memory_reason, sizeof(p->memory_reason),
             "copy: guest_memory = template failed before it ever worked (%s)", safe);
    log_error("guest_memory = template does not work here: %s; FALLING BACK to copy (a "
              "private save image per slot)",
              safe);
    p->memory = POOL_MEMORY_COPY;
    if (!p->accel_decided)
        return; /* no XML yet: it is made for copy when the accel is decided */
    for (size_t i = 0; i < p->n_shapes; i++)
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++) {
            Guest *g = &p->shapes[i].slots[k];
            _cleanup_error_ Error *err = NULL;
            SlotState st = g->state;
            if (st == SLOT_BOOTING || st == SLOT_SAVING || st == SLOT_RESTORING)
                continue; /* a worker reads its XML: slot_start refreshes it later */
            if (slot_refresh(g, &err) < 0)
                log_error("pool %s: %s", p->shapes[i].name, err->message);
        }
}

/* ------------------------------------------------------------------ worker side */

int
qemu_user(uid_t *ret_uid, gid_t *ret_gid, Error **errp)
{
    struct passwd pw, *found = NULL;
    char buf[TEMPLATE_PWBUF_BYTES];
    if (getpwnam_r(POOL_QEMU_USER, &pw, buf, sizeof(buf), &found) != 0 || !found)
        return error_set(errp, E_UNAVAILABLE, 0, "no user " POOL_QEMU_USER " (QEMU's)");
    *ret_uid = pw.pw_uid;
    *ret_gid = pw.pw_gid;
    return 0;
}

/* Whether QEMU's user can open path read-write (as QEMU 7.2 does even with share=off): a
 * child drops to that user and tries. libvirt relabels nothing in <qemu:commandline>, so this
 * is the one check before a guest depends on it. */
static int
template_check_qemu_access(const char *path, uid_t uid, gid_t gid, Error **errp)
{
    pid_t pid = fork();
    if (pid < 0)
        return error_set(errp, E_INTERNAL, errno, "fork");
    if (pid == 0) { /* async-signal-safe calls only: the parent has threads */
        if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
            _exit(125);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        _exit(fd < 0 ? (errno & 0x7f) : 0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return error_set(errp, E_INTERNAL, errno, "waitpid");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    return error_set(errp, E_IO, code == 125 ? 0 : code, POOL_QEMU_USER " cannot open %s", path);
}

int
template_create_memory_file(const Pool *p, const Shape *s, Error **errp)
{
    uid_t uid;
    gid_t gid;
    const char *name = path_base(s->mem_new_path);
    if (qemu_user(&uid, &gid, errp) < 0)
        return -1;
    (void) unlinkat(p->template_dir_fd, name, 0); /* never reuse an inode a clone might map */
    _cleanup_close_ int fd =
        openat(p->template_dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "create %s", s->mem_new_path);
    if (ftruncate(fd, (off_t) s->memory_mib << 20) < 0 || fchown(fd, uid, gid) < 0)
        return error_set(errp, E_IO, errno, "size or own %s", s->mem_new_path);
    return template_check_qemu_access(s->mem_new_path, uid, gid, errp);
}

int
template_save(Pool *p, const Shape *s, const char *key, Error **errp)
{
    int dir = p->template_dir_fd;
    (void) unlinkat(dir, path_base(s->tkey_path), 0); /* the key marks a complete template */
    if (virt_template_save(p->virt, s->tmpl->name, dir, path_base(s->state_new_path),
                           POOL_TEMPLATE_MIGRATE_TIMEOUT_USEC, errp) < 0) {
        (void) unlinkat(dir, path_base(s->state_new_path), 0);
        return -1;
    }
    if (renameat(dir, path_base(s->mem_new_path), dir, path_base(s->mem_path)) < 0 ||
        renameat(dir, path_base(s->state_new_path), dir, path_base(s->state_path)) < 0)
        return error_set(errp, E_IO, errno, "install template files in %s", p->template_dir);
    return pool_write_file_atomic(dir, path_base(s->tkey_path), key, errp);
}
