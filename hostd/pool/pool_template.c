/* guest_memory = template: one copy-on-write memory template per image and shape (see pool.h).
 *
 * Files, per shape, in template_dir (0711, root): <shape>.mem (the template's RAM: only QEMU's
 * user may open it, 0600, because clones on QEMU < 8.2 open it read-write even though they
 * map it privately), <shape>.state (device state, root only: the daemon hands QEMU an fd),
 * <shape>.key (sha256 of the template's XML and image: names what the files were made from).
 * Anything else there is removed at start. Loop thread, except the worker-side functions. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdutil.h"
#include "log.h"
#include "pool_internal.h"
#include "sha256.h"

#define TEMPLATE_TMPFS_DIR "/dev/shm"
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

int
pool_template_choose_dir(Pool *p, Error **errp)
{
    char why[256];
    const char *cfg = p->cfg.template_dir;
    int r;

    if (cfg && cfg[0]) {
        if (cfg[0] != '/' || strlen(cfg) > POOL_TEMPLATE_DIR_MAX_BYTES || strpbrk(cfg, ",\n"))
            return error_set(errp, E_INVALID, 0,
                             "pool: template_dir must be an absolute path of at most %d bytes "
                             "without ','",
                             POOL_TEMPLATE_DIR_MAX_BYTES);
        r = asprintf(&p->template_dir, "%s", cfg);
        snprintf(why, sizeof(why), "configured");
    } else if (template_tmpfs_fits(p, why, sizeof(why))) {
        char hex[SHA256_HEX_BYTES + 1];
        sha256_hex(p->cfg.state_dir, strlen(p->cfg.state_dir), hex);
        hex[12] = '\0'; /* one directory per state directory: a restart finds its templates */
        r = asprintf(&p->template_dir, TEMPLATE_TMPFS_DIR "/stockade-%s", hex);
    } else {
        r = asprintf(&p->template_dir, "%s/templates/memory", p->cfg.state_dir);
    }
    if (r < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "template_dir");
    if (strlen(p->template_dir) > POOL_TEMPLATE_DIR_MAX_BYTES || strchr(p->template_dir, ','))
        return error_set(errp, E_INVALID, 0, "pool: template_dir %s is too long or has a ','",
                         p->template_dir);
    snprintf(p->memory_reason, sizeof(p->memory_reason),
             "template: one per image and shape in %.512s (%.200s)", p->template_dir, why);
    return 0;
}

/* ------------------------------------------------------------------ validity, pruning */

bool
template_matches(const Shape *s)
{
    _cleanup_free_ char *key = NULL;
    size_t len;
    struct stat st;
    if (!s->tmpl || !s->tmpl->xml || stat(s->mem_path, &st) < 0 || !S_ISREG(st.st_mode) ||
        stat(s->state_path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
        return false;
    if (read_file_bounded(s->tkey_path, TEMPLATE_KEY_MAX_BYTES, &key, &len) < 0)
        return false;
    return strcmp(key, s->tmpl->key) == 0;
}

void
shape_set_template_ok(Shape *s, bool ok)
{
    s->template_ok = ok;
    for (unsigned k = 0; k < s->n_slots; k++)
        s->slots[k].snapshot_ok = ok;
    if (!ok)
        (void) unlink(s->tkey_path); /* the key marks a complete template */
}

static bool
template_file_wanted(const Pool *p, const char *name)
{
    for (size_t i = 0; i < p->n_shapes; i++) {
        const Shape *s = &p->shapes[i];
        const char *paths[] = {s->mem_path, s->state_path, s->tkey_path};
        for (size_t k = 0; k < ELEMENTSOF(paths); k++)
            if (s->template_ok && strcmp(strrchr(paths[k], '/') + 1, name) == 0)
                return true;
    }
    return false;
}

void
pool_prune_templates(Pool *p)
{
    DIR *d = opendir(p->template_dir);
    if (!d)
        return;
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
unlink_counting(const char *path)
{
    struct stat st;
    if (!path || lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || unlink(path) < 0)
        return 0;
    return (uint64_t) st.st_blocks * 512;
}

void
pool_release_templates(Pool *p)
{
    struct statfs fs;
    if (p->memory != POOL_MEMORY_TEMPLATE || !p->template_dir ||
        statfs(p->template_dir, &fs) < 0 || fs.f_type != TEMPLATE_TMPFS_MAGIC)
        return;
    uint64_t freed = 0;
    for (size_t i = 0; i < p->n_shapes; i++) {
        const Shape *s = &p->shapes[i];
        const char *paths[] = {s->mem_path, s->mem_new_path, s->state_path, s->state_new_path,
                               s->tkey_path};
        for (size_t k = 0; k < ELEMENTSOF(paths); k++)
            freed += unlink_counting(paths[k]);
    }
    /* the directory the daemon chose itself; a configured one is the operator's */
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

static int
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
template_create_memory_file(const Shape *s, Error **errp)
{
    uid_t uid;
    gid_t gid;
    if (qemu_user(&uid, &gid, errp) < 0)
        return -1;
    (void) unlink(s->mem_new_path); /* never reuse an inode a clone might map */
    _cleanup_close_ int fd =
        open(s->mem_new_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return error_set(errp, E_IO, errno, "create %s", s->mem_new_path);
    if (ftruncate(fd, (off_t) s->memory_mib << 20) < 0 || fchown(fd, uid, gid) < 0)
        return error_set(errp, E_IO, errno, "size or own %s", s->mem_new_path);
    return template_check_qemu_access(s->mem_new_path, uid, gid, errp);
}

int
template_save(Pool *p, const Shape *s, const char *key, Error **errp)
{
    (void) unlink(s->tkey_path); /* the key marks a complete template: drop it first */
    if (virt_template_save(p->virt, s->tmpl->name, s->state_new_path,
                           POOL_TEMPLATE_MIGRATE_TIMEOUT_USEC, errp) < 0) {
        (void) unlink(s->state_new_path);
        return -1;
    }
    if (rename(s->mem_new_path, s->mem_path) < 0 || rename(s->state_new_path, s->state_path) < 0)
        return error_set(errp, E_IO, errno, "install template files in %s", p->template_dir);
    return pool_write_file_atomic(s->tkey_path, key, errp);
}
