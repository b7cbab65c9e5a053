/* Blocking steps of the slot life cycle, each run on a worker thread and completed on the
 * loop thread. A job reads only the slot's immutable fields (name, paths, xml) and writes
 * its results into the Job, never into the slot: the loop owns the slot. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diskfile.h"
#include "fdutil.h"
#include "owndir.h"
#include "pool_internal.h"

typedef enum { JOB_BOOT, JOB_SAVE, JOB_RESTORE, JOB_DESTROY, JOB_RECONCILE, JOB_SWEEP } JobKind;

typedef struct {
    JobKind kind;
    Pool *pool;
    Guest *g;
    JobDoneFn done;
    void (*pool_done)(Pool *p, Error *err);
    SweepDoneFn sweep_done;
    Error *err;
    pid_t pid;
    Error *template_err; /* JOB_RECONCILE: the template path cannot work (not fatal) */
    bool clone; /* JOB_RESTORE: a clone of the shape's template (decided on the loop) */
    char **swept; /* JOB_SWEEP: the domains it destroyed (NULL-terminated) */
} Job;

/* A folder of the pool's (a slot's): made, or the daemon's own already (owndir.h). */
static int
mkdir_own(const char *path, mode_t mode, Error **errp)
{
    _cleanup_close_ int fd = -1;
    return owndir_open(path, mode, OWNDIR_CREATE | OWNDIR_SET_MODE, &fd, errp);
}

int
pool_write_file_atomic(int dirfd, const char *name, const char *text, Error **errp)
{
    _cleanup_free_ char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp", name) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "path");
    (void) unlinkat(dirfd, tmp, 0); /* a crashed run's */
    _cleanup_close_ int fd =
        openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0 ||
        renameat(dirfd, tmp, dirfd, name) < 0) {
        int e = errno;
        (void) unlinkat(dirfd, tmp, 0);
        return error_set(errp, E_IO, e, "write %s", name);
    }
    return 0;
}

/* A fresh start for the slot's domain: no stale domain, a pristine disk, no stale socket. */
static int
slot_clean_start(Job *j, Error **errp)
{
    Guest *g = j->g;
    if (mkdir_own(g->dir, 0711, errp) < 0)
        return -1;
    if (virt_destroy(j->pool->virt, g->name, errp) < 0)
        return -1;
    (void) unlink(g->socket_path);
    return diskfile_reset_in_place(g->workspace_path, j->pool->template_path, errp);
}

static void
job_boot_work(Job *j)
{
    if (slot_clean_start(j, &j->err) < 0 ||
        (j->g->tmpl && template_create_memory_file(j->pool, j->g->shape, &j->err) < 0) ||
        virt_create(j->pool->virt, j->g->xml, &j->err) < 0)
        return;
    j->pid = virt_qemu_pid(j->g->name);
}

static void
job_save_work(Job *j)
{
    Guest *g = j->g;
    _cleanup_free_ char *tmp = NULL;

    if (g->tmpl) {
        template_save(j->pool, g->shape, g->key, &j->err);
        return;
    }
    if (asprintf(&tmp, "%s.tmp", g->save_path) < 0) {
        error_set(&j->err, E_INTERNAL, ENOMEM, "path");
        return;
    }
    (void) unlink(g->key_path); /* the key marks a complete save: drop it first */
    if (virt_save(j->pool->virt, g->name, tmp, &j->err) < 0) {
        (void) unlink(tmp);
        return;
    }
    if (rename(tmp, g->save_path) < 0) {
        error_set(&j->err, E_IO, errno, "install snapshot %s", g->save_path);
        (void) unlink(tmp);
        return;
    }
    pool_write_file_atomic(AT_FDCWD, g->key_path, g->key, &j->err);
}

static void
job_restore_work(Job *j)
{
    Guest *g = j->g;
    Pool *p = j->pool;
    unsigned limit = g->shape->memory_mib + p->cfg.tb_cache_mib + p->cfg.memory_overhead_mib;

    if (slot_clean_start(j, &j->err) < 0)
        return;
    int started = j->clone ? virt_clone_start(p->virt, g->xml, p->template_dir_fd,
                                              path_base(g->shape->state_path),
                                              POOL_TEMPLATE_MIGRATE_TIMEOUT_USEC, &j->err)
                           : virt_restore(p->virt, g->save_path, &j->err);
    if (started < 0)
        return;
    j->pid = virt_qemu_pid(g->name);
    if (virt_set_memory_hard_limit(p->virt, g->name, limit, &j->err) < 0)
        (void) virt_destroy(p->virt, g->name, NULL); /* never hand out an unlimited guest */
}

static void
job_destroy_work(Job *j)
{
    virt_destroy(j->pool->virt, j->g->name, &j->err);
}

/* guest_memory = template: QEMU's version (read-only mapping for clones from 8.2 on). The
 * templates' folder was made and opened by pool_new() (pool_template_choose_dir). */
static int
pool_reconcile_templates(Pool *p, Error **errp)
{
    return virt_hypervisor_version(p->virt, &p->qemu_version, errp);
}

/* Every slot's disk must exist before the extraction appliance attaches them all. Existing
 * disks are left alone: they may hold an earlier run's files waiting to be salvaged. */
static int
pool_create_missing_disks(Pool *p, Error **errp)
{
    for (size_t i = 0; i < p->n_shapes; i++)
        for (unsigned k = 0; k < p->shapes[i].n_slots; k++) {
            const Guest *g = &p->shapes[i].slots[k];
            if (access(g->workspace_path, F_OK) == 0)
                continue;
            if (mkdir_own(g->dir, 0711, errp) < 0)
                return -1;
            if (diskfile_reset_in_place(g->workspace_path, p->template_path, errp) < 0)
                return -1;
        }
    return 0;
}

/* Destroys and undefines every domain named with the pool's prefix, in list order, up to the
 * first failure. *ret_destroyed (NULL-terminated; virt_strv_free()) names those destroyed,
 * on failure too; NULL when even the listing failed. */
static int
pool_destroy_prefixed(Pool *p, char ***ret_destroyed, Error **errp)
{
    char **names = NULL;
    size_t k = 0, kept = 0;
    int r = 0;

    *ret_destroyed = NULL;
    if (virt_list_prefixed(p->virt, p->cfg.domain_prefix, &names, errp) < 0)
        return -1;
    for (; names[k]; k++) {
        const Guest *g = pool_slot_named(p, names[k]);
        if (g && pool_slot_survives_sweep(g)) { /* kept for, or being adopted by, a start */
            free(names[k]);
            names[k] = NULL;
            kept++;
            continue;
        }
        if (virt_destroy(p->virt, names[k], errp) < 0 || virt_undefine(p->virt, names[k], errp) < 0) {
            r = -1;
            break;
        }
        names[k - kept] = names[k]; /* destroyed: listed in order, without the kept ones */
        if (kept)
            names[k] = NULL;
    }
    for (size_t i = k; names[i]; i++) { /* the ones not reached: not destroyed */
        free(names[i]);
        names[i] = NULL;
    }
    names[k - kept] = NULL;
    *ret_destroyed = names;
    return r;
}

int
pool_make_state_dirs(Pool *p, Error **errp)
{
    static const struct {
        const char *name;
        mode_t mode;
    } dirs[] = {{"guests", 0711}, {"snapshots", 0700}, {"templates", 0711}};
    _cleanup_close_ int state = -1;

    if (owndir_open(p->cfg.state_dir, 0711, OWNDIR_CREATE | OWNDIR_SET_MODE | OWNDIR_FOLLOW_LAST,
                    &state, errp) < 0)
        return -1;
    for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
        _cleanup_free_ char *shown = NULL;
        _cleanup_close_ int fd = -1;
        if (asprintf(&shown, "%s/%s", p->cfg.state_dir, dirs[i].name) < 0)
            return error_set(errp, E_INTERNAL, ENOMEM, "paths");
        if (owndir_open_at(state, dirs[i].name, shown, dirs[i].mode,
                           OWNDIR_CREATE | OWNDIR_SET_MODE, &fd, errp) < 0)
            return -1;
    }
    return 0;
}

static void
job_reconcile_work(Job *j)
{
    Pool *p = j->pool;
    char **names = NULL;

    pool_adopt_check_work(p); /* first: a slot whose domain is not it is a leftover too */
    (void) pool_destroy_prefixed(p, &names, &j->err); /* leftovers of an earlier run */
    virt_strv_free(names);
    if (!j->err)
        diskfile_ensure_template(p->template_path, p->cfg.workspace_mib, p->cfg.exec_uid,
                                 p->cfg.exec_gid, &j->err);
    if (!j->err)
        pool_create_missing_disks(p, &j->err);
    if (!j->err && p->memory == POOL_MEMORY_TEMPLATE)
        pool_reconcile_templates(p, &j->template_err);
}

/* Every domain with the pool's prefix, gone: run once the pool believes none is left. */
static void
job_sweep_work(Job *j)
{
    (void) pool_destroy_prefixed(j->pool, &j->swept, &j->err);
}

static void
job_work(void *userdata)
{
    Job *j = userdata;
    switch (j->kind) {
    case JOB_BOOT: job_boot_work(j); break;
    case JOB_SAVE: job_save_work(j); break;
    case JOB_RESTORE: job_restore_work(j); break;
    case JOB_DESTROY: job_destroy_work(j); break;
    case JOB_RECONCILE: job_reconcile_work(j); break;
    case JOB_SWEEP: job_sweep_work(j); break;
    }
}

static void
job_complete(void *userdata)
{
    Job *j = userdata;
    Pool *p = j->pool;

    p->jobs--;
    if (j->kind == JOB_BOOT || j->kind == JOB_SAVE || j->kind == JOB_RESTORE)
        p->inflight--;
    if (j->g && j->pid > 0)
        j->g->qemu_pid = j->pid;
    if (j->template_err) {
        pool_template_failed(p, j->template_err->message);
        error_free(j->template_err);
    }
    if (j->sweep_done) {
        j->sweep_done(p, j->swept, j->err);
        virt_strv_free(j->swept);
    } else if (j->pool_done)
        j->pool_done(p, j->err);
    else
        j->done(j->g, j->err);
    free(j);
}

static void
job_submit(Pool *p, Job *j)
{
    p->jobs++;
    if (j->kind == JOB_BOOT || j->kind == JOB_SAVE || j->kind == JOB_RESTORE)
        p->inflight++;
    if (workq_submit(p->q, job_work, job_complete, j) < 0) {
        error_set(&j->err, E_INTERNAL, ENOMEM, "queue pool job");
        job_complete(j);
    }
}

static void
job_start(Guest *g, JobKind kind, JobDoneFn done)
{
    Job *j = calloc(1, sizeof(*j));
    if (!j)
        abort(); /* the slot would be stuck in a transitional state forever */
    *j = (Job){.kind = kind, .pool = g->pool, .g = g, .done = done,
               .clone = g->xml_memory == POOL_MEMORY_TEMPLATE};
    job_submit(g->pool, j);
}

void
job_boot(Guest *g, JobDoneFn done)
{
    job_start(g, JOB_BOOT, done);
}

void
job_save(Guest *g, JobDoneFn done)
{
    job_start(g, JOB_SAVE, done);
}

void
job_restore(Guest *g, JobDoneFn done)
{
    job_start(g, JOB_RESTORE, done);
}

void
job_destroy(Guest *g, JobDoneFn done)
{
    job_start(g, JOB_DESTROY, done);
}

void
job_reconcile(Pool *p, void (*done)(Pool *p, Error *err))
{
    Job *j = calloc(1, sizeof(*j));
    if (!j)
        abort();
    *j = (Job){.kind = JOB_RECONCILE, .pool = p, .pool_done = done};
    job_submit(p, j);
}

void
job_sweep(Pool *p, SweepDoneFn done)
{
    Job *j = calloc(1, sizeof(*j));
    if (!j)
        abort();
    *j = (Job){.kind = JOB_SWEEP, .pool = p, .sweep_done = done};
    job_submit(p, j);
}
