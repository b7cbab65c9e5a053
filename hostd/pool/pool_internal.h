/* Internal to hostd/pool: the structures shared by pool.c (API), pool_slot.c (slot state
 * machine), pool_jobs.c (blocking work on worker threads) and pool_accel.c (accel choice). */
#pragma once

#include <string.h>

#include "channel.h"
#include "image.h"
#include "pool.h"
#include "virt.h"

#define POOL_GONE_POLL_USEC (2 * 1000)            /* how often "is QEMU gone" is checked */
#define POOL_GONE_GIVE_UP_USEC (30 * 1000 * 1000) /* then rely on the destroy call alone */
#define POOL_BACKOFF_MIN_USEC (1 * 1000 * 1000)
#define POOL_BACKOFF_MAX_USEC (60 * 1000 * 1000)
#define POOL_RESTORE_FAILURES_BEFORE_REBOOT 2    /* then the snapshot is remade */
/* In every image (busybox applet). It writes a line, so the output path (pipe, Output frame)
 * is translated before a session's first output too, not only the exec path. */
#define POOL_WARMUP_COMMAND "echo", "stockade-warmup"

typedef enum {
    SLOT_EMPTY,      /* nothing running; the disk may still hold the last session's files */
    SLOT_BOOTING,    /* worker: cold boot for a snapshot */
    SLOT_BOOT_SYNC,  /* waiting for the cold-booted runner's Ready */
    SLOT_SAVING,     /* worker: virDomainSave */
    SLOT_RESTORING,  /* worker: disk reset + virDomainRestore */
    SLOT_SYNCING,    /* waiting for the restored runner's Ready */
    SLOT_PREPARING,  /* Prepare sent: workspace mount and warm-up exec under way */
    SLOT_IDLE,       /* warm, healthy, waiting for a session */
    SLOT_BUSY,       /* handed out */
    SLOT_DESTROYING, /* destroy requested; waiting for QEMU to go and the call to return */
    SLOT_HELD,       /* domain gone; disk kept until pool_recycle() */
    SLOT_BACKOFF,    /* failed; empty again after a delay */
    SLOT_KEPT,       /* stopping with shutdown = keep: left running for the next start */
    SLOT_ADOPTING,   /* an earlier run's guest: its domain checked, then its channel synced */
} SlotState;

typedef struct Shape Shape;

struct Guest {
    Pool *pool;
    Shape *shape;
    unsigned index;
    size_t disk_index;
    bool probe; /* the accel=auto KVM probe, not a pool slot */
    bool tmpl;  /* a shape's memory template guest (guest_memory = template), not a slot */
    char name[DOMXML_NAME_MAX_BYTES + 1];
    char uuid[37];
    char *dir, *workspace_path, *socket_path, *console_path, *save_path, *key_path;
    char *xml;      /* this slot's domain XML (set once the accel is decided) */
    PoolGuestMemory xml_memory; /* the mode xml was made for (a fallback changes the pool's) */
    char *cmdline;  /* the probe's kernel command line (image's + kvm_probe_append); else NULL */
    char key[65];   /* sha256 of xml + image content hash: names the snapshot */
    bool snapshot_ok;
    SlotState state;
    Channel *ch;
    pid_t qemu_pid;
    unsigned restore_failures;
    uint64_t backoff_usec;
    TimerId timer;  /* health ping, ping deadline or backoff, by state */
    uint32_t ping_req_id;
    uint32_t prepare_req_id;
    uint32_t prestart_req_id; /* SLOT_BOOT_SYNC: Prestart sent, its answer awaited */
    uint64_t prestart_started_usec;
    /* while handed out */
    const GuestOps *ops;
    void *userdata;
    bool lost_notified;
    /* destroy bookkeeping */
    TimerId gone_timer;
    bool destroy_done, pid_gone, released, awaiting_recycle;
    bool failed; /* the destroy follows a failure: back off before reuse */
    bool destroy_failed; /* libvirt may still hold the domain: destroy again after the backoff */
    GuestGoneFn gone_fn;
    GuestAdoptedFn adopt_done; /* SLOT_ADOPTING (pool_adopt.c) */
    Error *adopt_err;          /* its domain's check (worker), read after the job completes */
    void *gone_userdata;
    uint64_t destroy_requested_usec, gone_usec;
    uint64_t restore_started_usec;
    uint64_t boot_started_usec;
};

struct Shape {
    char *name;
    char *image_dir;
    unsigned vcpus, memory_mib, warm, n_slots;
    bool code_kernel;        /* configured: pre-start the code kernel before the save */
    bool code_kernel_failed; /* it did not come up once: later saves go without it */
    Image *image;
    Guest *slots;
    /* guest_memory = template: the template guest and its files in template_dir. The guest
     * writes mem_new; a completed save renames mem_new and state_new over mem and state
     * (new inodes: clones of an older template keep theirs), then writes key. */
    Guest *tmpl;
    bool template_ok;
    char *mem_path, *mem_new_path, *state_path, *state_new_path, *tkey_path;
};

struct Pool {
    Loop *loop;
    WorkQueue *q;
    Virt *virt;
    PoolConfig cfg; /* strings owned by the pool */
    char *template_path;
    Shape shapes[POOL_SHAPES_MAX];
    size_t n_shapes;
    const char **disk_paths;
    size_t n_disks;
    Accel accel;
    bool accel_decided;
    bool disks_ready;   /* reconciled: every slot's workspace disk exists */
    char accel_reason[512];
    PoolGuestMemory memory;      /* in effect: the configured mode until a fallback */
    char memory_reason[1024];
    char *template_dir;
    int template_dir_fd;         /* template_dir, held open: its files are made beneath it */
    unsigned long qemu_version;  /* major * 1000000 + minor * 1000 + micro; 0 = unknown */
    bool template_ever_saved;    /* a template worked this run: later failures are no fallback */
    bool clone_ever_started;
    unsigned clone_failures;     /* clones failed before any worked */
    Guest *probe;
    void (*on_accel_decided)(Pool *p);
    void (*on_idle)(void *userdata);
    void *on_idle_userdata;
    bool started, stopping;
    bool swept;          /* stopping: the final sweep of leftover domains ran */
    TimerId fill_timer;  /* the refill a take deferred (refill_holdoff_ms) */
    unsigned inflight;   /* boots + saves + restores running now */
    unsigned jobs;       /* every job not yet completed */
    void (*stop_done)(void *userdata);
    void *stop_userdata;
    PoolStatus stats;    /* counters; the rest is computed by pool_status() */
};

/* A template failing this many clones before any worked means the path does not work here. */
#define POOL_CLONE_FAILURES_BEFORE_FALLBACK 2
/* /dev/shm holds the templates only with this much left over once each is there twice. */
#define POOL_TEMPLATE_TMPFS_SPARE_MIB 1024
/* QEMU >= 8.2 can map a clone's template read-only (readonly=on,rom=off). */
#define POOL_QEMU_READONLY_MEMORY_VERSION 8002000ul
/* A device-state save or load (320 KB; 6-10 ms measured) that takes longer failed. */
#define POOL_TEMPLATE_MIGRATE_TIMEOUT_USEC (30 * 1000 * 1000)

/* The last component of a path the pool built (it has a '/'). */
static inline const char *
path_base(const char *path)
{
    return strrchr(path, '/') + 1;
}

/* pool.c */
/* g->dir, workspace_path, socket_path, console_path from g->name; -1 on ENOMEM. */
int guest_init_paths(Guest *g, const char *state_dir);
/* Frees what a Guest owns (channel, paths, xml), not g itself. */
void guest_free_fields(Guest *g);
/* (Re)builds the slot's XML for the pool's memory mode and whether it can start without a
 * cold boot (its own save, or its shape's template). */
int slot_refresh(Guest *g, Error **errp);

/* pool_template.c */
int template_guest_new(Pool *p, Shape *s, Error **errp);
void template_guest_free(Guest *g);
/* Chooses p->template_dir (config, tmpfs or the state directory) and says why. */
int pool_template_choose_dir(Pool *p, Error **errp);
bool template_matches(const Shape *s);
void shape_set_template_ok(Shape *s, bool ok);
/* Files in template_dir that belong to no shape's valid template (loop thread, at start). */
void pool_prune_templates(Pool *p);
/* Neither a template was saved nor a clone started this run: a failure now says the path
 * does not work on this host, rather than that one attempt failed. */
bool pool_template_unproven(const Pool *p);
/* At the end of a clean stop: templates on a tmpfs are host memory while no daemon uses them,
 * so they go (the next start boots them again); on disk they stay for it to reuse. */
void pool_release_templates(Pool *p);
/* Drops the pool to copy, loudly, with why (callers decide it is warranted). */
void pool_template_failed(Pool *p, const char *why);
/* Worker side: a fresh shared-memory file for the template guest, for QEMU's user only. */
/* QEMU's user (libvirt-qemu), who must own any RAM file a <qemu:commandline> names. */
int qemu_user(uid_t *ret_uid, gid_t *ret_gid, Error **errp);
int template_create_memory_file(const Pool *p, const Shape *s, Error **errp);
/* Worker side: save the template's device state and install its files. */
int template_save(Pool *p, const Shape *s, const char *key, Error **errp);

/* pool.c: a stable UUID per domain name, derived from the state directory and the name */
void slot_uuid(const char *state_dir, const char *name, char out[37]);

/* pool_slot.c */
void pool_fill(Pool *p);
void slot_fail(Guest *g, const char *why);
void slot_destroy(Guest *g, bool failed);
void slot_start_boot(Guest *g);
int slot_prepare_xml(Guest *g, Error **errp);
void pool_check_stopped(Pool *p);
void slot_close_channel(Guest *g);
void slot_cancel_timer(Guest *g);
void slot_open_channel(Guest *g, uint64_t timeout_usec);
const Guest *pool_slot_named(Pool *p, const char *name); /* NULL: no slot of that name */
/* pool_adopt.c */
bool pool_slot_survives_sweep(const Guest *g); /* worker and loop: states set before jobs */
void pool_adopt_check_work(Pool *p);           /* worker, in the reconcile job */
void pool_adopt_continue(Pool *p);             /* loop, once reconciled */
void pool_adopt_on_ready(Guest *g);
void pool_adopt_failed(Guest *g, const char *why);

/* pool_jobs.c: each submits one blocking step and continues on the loop thread. */
typedef void (*JobDoneFn)(Guest *g, Error *err); /* err is owned by the callee */
void job_boot(Guest *g, JobDoneFn done);
void job_save(Guest *g, JobDoneFn done);
void job_restore(Guest *g, JobDoneFn done);
void job_destroy(Guest *g, JobDoneFn done);
void job_reconcile(Pool *p, void (*done)(Pool *p, Error *err));
/* Destroys every domain named with the pool's prefix; done gets the names it destroyed (NULL
 * on an early failure; the job frees them) and takes err. */
typedef void (*SweepDoneFn)(Pool *p, char **destroyed, Error *err);
void job_sweep(Pool *p, SweepDoneFn done);
/* The state directory (0711: QEMU's user passes through to its guests' disks) and the pool's
 * folders in it (guests, snapshots, templates), each made by the daemon or already its own:
 * one another user made or can write, or a symlink in its place, is refused (owndir.h), so
 * nobody else can swap or redirect what the pool later puts there by path. pool_new(). */
int pool_make_state_dirs(Pool *p, Error **errp);
/* Worker side: text into name beneath dirfd (or a path, with AT_FDCWD) through a temporary
 * file made anew (O_EXCL|O_NOFOLLOW) and a rename. */
int pool_write_file_atomic(int dirfd, const char *name, const char *text, Error **errp);

/* pool_accel.c */
void pool_decide_accel(Pool *p, void (*decided)(Pool *p));
