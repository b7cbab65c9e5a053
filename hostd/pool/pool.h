/* The warm pool: guests restored from snapshots, handed out one per session, never reused.
 *
 * Each shape (image + vcpus + memory) has a fixed number of slots. A slot is one libvirt
 * domain name, one UUID, one workspace disk file and one save image (DESIGN.md "Cloning":
 * libvirt will not restore one save under another name, so every slot boots once and keeps
 * its own save; reset = restore that slot's save again, public API only). A slot cycles:
 *
 *   empty -> [boot cold, sync, save: only when its snapshot is missing or stale]
 *         -> restoring (disk reset in place, virDomainRestore, memory hard limit)
 *         -> syncing (channel) -> idle (pinged every health interval)
 *         -> busy (handed out: no libvirt call on this path)
 *         -> destroying (virDomainDestroy on a worker; "gone" is when QEMU's pid is gone)
 *         -> held (disk kept for extraction until pool_recycle) -> empty
 *
 * Any failure (channel broken, ping unanswered, libvirt error) destroys the domain and the
 * slot comes back empty after a backoff. A busy guest's owner hears of it through
 * GuestOps.lost. On start, every domain whose name starts with the configured prefix is
 * destroyed (leftovers of an earlier run) and stale snapshots are removed.
 *
 * guest_memory = template (issue 15, notes/templating-2026-12.md): instead of one save per
 * slot, each shape boots one template guest whose RAM is a file in template_dir, saves only
 * its device state, and every slot's restore is a clone that maps that file copy-on-write
 * (a guest's private memory is what it wrote since). Everything else a slot has stays its
 * own (name, UUID, VM generation id, channel, disk); the hand-out path is the same. A
 * template is remade like a snapshot (stale key, or a slot's restores failing twice) into a
 * new file, so running clones keep mapping the old one. If the template path fails before
 * it ever worked (libvirt without the qemu namespace, QEMU refusing the capability, files
 * QEMU's user cannot open), the pool falls back to copy and says why (PoolStatus).
 * Loop thread only, except where noted. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "domxml.h"
#include "error.h"
#include "histogram.h"
#include "loop.h"
#include "message.h"
#include "workq.h"

#include "pool_config.h"
#include "pool_status.h"

typedef struct Pool Pool;
typedef struct Guest Guest;

typedef struct GuestOps {
    /* A message from the guest (after the pool took its own Pongs). Borrowed. */
    void (*message)(Guest *g, const GuestMsg *m, void *userdata);
    /* The guest is gone or broken (its domain is being destroyed already). The owner must
     * still call pool_release(). */
    void (*lost)(Guest *g, const Error *why, void *userdata);
} GuestOps;

/* Checks and copies the config; makes (or checks, owndir.h) the state directory's folders and
 * the memory templates' folder, and holds the latter open; opens libvirt. Starts nothing yet.
 * A state folder that is not the daemon's own fails it (E_CONFLICT); a templates' folder that
 * cannot be, drops the pool to copy (pool_template_failed). */
int pool_new(Loop *l, WorkQueue *q, const PoolConfig *cfg, Pool **ret, Error **errp);
/* Asynchronous: reconcile leftovers, decide the accel, make snapshots, fill to warm. */
void pool_start(Pool *p);
/* Asynchronous: destroys every guest, then calls done on the loop thread. */
void pool_stop(Pool *p, void (*done)(void *userdata), void *userdata);
void pool_free(Pool *p);

void pool_status(Pool *p, PoolStatus *ret);
/* True once every shape has `warm` idle guests (for tests and benchmarks). */
bool pool_is_full(Pool *p);

/* Hands out an idle, healthy guest of the shape. No libvirt call. E_NOT_FOUND for an
 * unknown shape, E_UNAVAILABLE when none is idle. */
Guest *pool_take(Pool *p, const char *shape, const GuestOps *ops, void *userdata, Error **errp);

/* Sends Hello (host wall time, 64 fresh random bytes, the session's config). *ret_req_id is
 * the id of the Ack to wait for. */
int guest_hello(Guest *g, const Stockade__Runner__SessionConfig *cfg, uint32_t *ret_req_id,
                Error **errp);
/* Sends a message; sets m->req_id (except for Stdin and tunnel messages, which have none) and
 * returns it in *ret_req_id. */
int guest_send(Guest *g, HostMsg *m, uint32_t *ret_req_id, Error **errp);
/* Bytes queued for the guest and not yet written (bulk senders hold back above a bound). */
size_t guest_send_backlog_bytes(const Guest *g);
void guest_set_reading(Guest *g, bool on);
const char *guest_name(const Guest *g);
const char *guest_workspace_path(const Guest *g);
const char *guest_shape(const Guest *g);

/* The owner is done with a busy guest. The domain is destroyed without the guest's help
 * (if not already). If gone is given, it runs once QEMU's process is gone with the disk kept
 * for extraction; the owner then calls pool_recycle(). Without gone, the slot is recycled
 * as soon as the domain is destroyed. After this call the owner gets no more callbacks. */
typedef void (*GuestGoneFn)(Guest *g, uint64_t destroy_requested_usec, uint64_t gone_usec,
                            void *userdata);
void pool_release(Pool *p, Guest *g, GuestGoneFn gone, void *userdata);
void pool_recycle(Pool *p, Guest *g);

/* fn(userdata) runs on the loop thread whenever a guest becomes idle (pending sessions
 * waiting for one take it then). */
void pool_set_on_idle(Pool *p, void (*fn)(void *userdata), void *userdata);

/* Before pool_start(): keep the disk of slot `domain_name` untouched (a session of an earlier
 * run used it and its files must be salvaged first) until pool_unhold_disk(). Returns the
 * disk index, or -1 when no slot has that name (the pool's shape changed). */
ssize_t pool_hold_disk(Pool *p, const char *domain_name);
void pool_unhold_disk(Pool *p, size_t disk_index);

/* Restart without losing a session (pool_adopt.c). pool_keep: a stop that keeps the session
 * leaves g's domain running; its channel closes, the owner gets no more callbacks, pool_stop
 * and its sweep leave it alone. -1 when g is not busy. */
int pool_keep(Pool *p, Guest *g);
/* Before pool_start(): slot `domain_name` holds an earlier run's live session; the start
 * checks its domain (running, the slot's UUID) instead of destroying it, syncs its channel,
 * then calls done(g, NULL) with g busy and owned by ops/userdata as after pool_take. On any
 * failure done(g, why): g is busy and broken, and the owner must pool_release() it (its disk
 * is then salvaged like a lost guest's). Returns the slot's disk index, or -1 (no such slot,
 * already started) and done is never called. */
typedef void (*GuestAdoptedFn)(Guest *g, const Error *err, void *userdata);
ssize_t pool_adopt(Pool *p, const char *domain_name, const GuestOps *ops, void *userdata,
                   GuestAdoptedFn done);

/* Absolute paths of every slot's workspace disk (for the extraction appliance), in a fixed
 * order; valid for the pool's lifetime. */
size_t pool_workspace_disks(Pool *p, const char *const **ret_paths);
/* Index of g's disk in pool_workspace_disks(). */
size_t guest_disk_index(const Guest *g);

/* Pause and resume of a template clone (issue 27; pool_pause.c, pausefile.h). Blocking:
 * call them from a worker (or a test's own thread), never from the loop. E_UNAVAILABLE when
 * the shape runs no memory template. A template's identity: 32 bytes (pool_template_identity);
 * the first pause against the shape's present template keeps a copy of it in the state
 * directory (templates/kept/), which every resume of a state made against it maps, so a paused
 * guest outlives its template and the daemon.
 *
 * Pauses the running clone `domain` of `shape`, cloned from the template from_template (the
 * shape's present one for a guest the pool handed out; what the resume said for a resumed
 * one), into state_name beneath dir_fd: QEMU's stream less the pages equal to the template's,
 * zstd, a header with the template's identity and a checksum; written as state_name.tmp,
 * fsync'd, renamed, the folder fsync'd; then the domain is destroyed. On failure nothing is
 * left under state_name and the guest is resumed (it goes on running unless it died). The
 * workspace disk is the caller's to keep. */
struct PauseStats;
int pool_pause_domain(Pool *p, const char *shape, const char *domain,
                      const uint8_t from_template[32], int dir_fd, const char *state_name,
                      struct PauseStats *ret_stats, Error **errp);
/* Starts a clone `name` of shape whose workspace disk, channel socket and console log are
 * dir/workspace.raw, channel.sock, console.log, mapping the kept template the state names, and
 * loads state_name (beneath dir_fd) into it, then resumes it. The file is read whole and
 * checked first (size, checksum, the kept template's identity): a missing one is E_NOT_FOUND,
 * a truncated or altered one E_INVALID, one whose template is not kept E_CONFLICT, and QEMU
 * never sees its bytes. ret_template: the template the guest now maps. */
int pool_resume_domain(Pool *p, const char *shape, const char *name, const char *dir, int dir_fd,
                       const char *state_name, uint8_t ret_template[32], Error **errp);
/* The identity of the shape's present template (what a guest the pool hands out maps). */
int pool_template_identity(Pool *p, const char *shape, uint8_t ret[32], Error **errp);
