/* A clean end over the channel (runner.proto "Finalize"): the runner stops the session's
 * processes, flushes its mirror and lists the workspace; the daemon fetches only what its live
 * mirror lacks or holds stale, merges it into the artifact folder and ends the session, then
 * destroys the guest. No disk read, no libguestfs.
 *
 * Everything the runner says here is hostile: manifest frames are checked by proto/ (shape)
 * and by hostd/extract/manifest.h (paths, caps, duplicates, parents, sizes against the disk,
 * totals); fetched data must match the listed size in order; files are written only below
 * <artifacts>/<id>/.finalize through hostd/extract/dest.h (openat2 beneath, no symlink
 * followed, O_EXCL), then merged like a salvage (artifacts.c). Held is decided by size and
 * mtime (ns) against the mirror's copy: the mirror stores both exactly as the runner saw them
 * at close, every process is dead by the time the runner lists, so a file whose content
 * changed has a new mtime; a hash would make the runner read every byte of the workspace
 * under TCG, which is the cost this path exists to avoid.
 * A deadline of finalize_base + finalize_per_mib x MiB moved bounds it all. Only bytes the
 * host keeps move it: mirror records the mirror stored (not ones it ignored: over budget, out
 * of sequence, after the cap) and the planned fetch, whose data is checked byte for byte. It
 * never moves past a ceiling fixed at the start: base + per MiB x the most an honest runner
 * can move (the mirror budget left, the salvage's byte cap within the disk), and never past
 * the session's reserved lifetime unless the end came within base of it (the guest then gets
 * base, no more). A cancel during the finalize stops waiting at once (sessions.c). Any lie,
 * error, runner-side cap, lost guest, cancel or missed deadline falls back to the salvage
 * (session_end.c), which then sees a synced disk. Loop thread; the merge runs on a worker. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dest.h"
#include "fdutil.h"
#include "guest_replies.h"
#include "log.h"
#include "manifest_check.h"
#include "runner_limits.h"
#include "session_internal.h"
#include "timeutil.h"

#define FINALIZE_WORK_DIR ".finalize"
#define MIB (1024.0 * 1024.0)

struct Finalize {
    const SessionFinalizeEnd *end; /* the end path that started it */
    uint32_t req_id;  /* the Finalize: its Manifest frames carry it */
    uint32_t get_req; /* the FileGet in flight, 0 when none */
    Manifest manifest;
    ManifestCaps caps;
    ExtractLimits lim;
    ManifestPlan plan;
    bool listed;       /* the last manifest frame is in */
    bool runner_truncated;
    uint32_t runner_skipped;
    size_t next;       /* manifest index to look at next for a fetch */
    ManifestEntry *cur;
    int cur_fd;
    uint64_t cur_off;
    int dir_fd;   /* <artifacts>/<id>/.finalize */
    int files_fd; /* <artifacts>/<id>/files */
    uint64_t started_usec, deadline_usec;
    uint64_t ceiling_usec; /* the deadline never moves past this (finalize_ceiling) */
    TimerId timer;
    uint32_t fetched_files, failed_files;
    uint64_t fetched_bytes;
    /* the merge job's results */
    Error *err;
    uint64_t merged_bytes;
    uint32_t merged_files;
    bool capped;
};

bool
session_finalize_wanted(const Session *s, SessionEndReason reason)
{
    return s->guest && s->state == ST_RUNNING && s->mgr->cfg.finalize_base_usec > 0 &&
           (reason == SESSION_END_COMPLETED || reason == SESSION_END_CLOSED);
}

void
session_finalize_free(Session *s)
{
    Finalize *f = s->fin;
    if (!f)
        return;
    loop_cancel_timer(s->mgr->loop, f->timer);
    safe_close(f->cur_fd);
    safe_close(f->dir_fd);
    safe_close(f->files_fd);
    manifest_clear(&f->manifest);
    error_free(f->err);
    free(f);
    s->fin = NULL;
}

/* The runner did not cooperate: the end path destroys the guest and salvages its disk. */
static void
finalize_give_way(Session *s, const SessionFinalizeEnd *end, const char *why)
{
    s->mgr->stats.finalize_fallbacks++;
    log_info("session %s: finalize over the channel failed (%s); salvaging the disk", s->rec.id,
             why);
    session_finalize_free(s);
    end->gave_way(s, why);
}

static void
finalize_fail(Session *s, const char *why)
{
    finalize_give_way(s, s->fin->end, why);
}

static void
finalize_on_deadline(Loop *l, void *userdata)
{
    Session *s = userdata;
    (void) l;
    s->fin->timer = 0;
    finalize_fail(s, "deadline");
}

/* What moving `bytes` may take (finalize_per_mib). */
static uint64_t
finalize_usec_for(const Session *s, uint64_t bytes)
{
    return (uint64_t) ((double) bytes / MIB * (double) s->mgr->cfg.finalize_usec_per_mib);
}

/* The latest a finalize may end, fixed at its start. Base, plus what the most an honest runner
 * can move may take: the mirror records it may still flush (the budget left) and the fetch
 * (the salvage's byte cap, within the disk: a manifest listing more is refused). Within the
 * session's reserved lifetime, or base when the end came within base of it. */
static uint64_t
finalize_ceiling(const Session *s, const Finalize *f)
{
    uint64_t budget = session_mirror_budget(s);
    uint64_t mirrored = session_mirror_bytes(s);
    uint64_t mirror_left = budget > mirrored ? budget - mirrored : 0;
    uint64_t fetch_max = MIN(f->lim.max_total_bytes, f->caps.disk_bytes);
    uint64_t base_end = f->started_usec + s->mgr->cfg.finalize_base_usec;
    uint64_t most = base_end + finalize_usec_for(s, mirror_left) + finalize_usec_for(s, fetch_max);
    uint64_t lifetime_end = session_lifetime_end_usec(s);
    return MIN(most, MAX(lifetime_end, base_end));
}

/* Moves the deadline by the time `bytes` more may take, never past the ceiling. */
static void
finalize_extend(Session *s, uint64_t bytes)
{
    Finalize *f = s->fin;
    f->deadline_usec = MIN(f->ceiling_usec, f->deadline_usec + finalize_usec_for(s, bytes));
    loop_cancel_timer(s->mgr->loop, f->timer);
    f->timer = loop_add_timer(s->mgr->loop, f->deadline_usec, finalize_on_deadline, s);
}

static int
finalize_open_dirs(Session *s, Finalize *f)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s/" FINALIZE_WORK_DIR, s->mgr->artifacts_dir, s->rec.id);
    f->dir_fd = mkdir_open_dir(path, 0700);
    snprintf(path, sizeof(path), "%s/%s/files", s->mgr->artifacts_dir, s->rec.id);
    f->files_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return f->dir_fd < 0 || f->files_fd < 0 ? -1 : 0;
}

/* The caps asked of the runner are the salvage's (session_extract_limits), within the wire's. */
static void
finalize_caps(Session *s, Finalize *f)
{
    struct stat st;
    session_extract_limits(s, &f->lim);
    f->caps.max_entries = MIN(f->lim.max_files, (uint32_t) FINALIZE_MAX_ENTRIES);
    f->caps.max_path_bytes = MIN(f->lim.max_name_bytes, (uint32_t) PATH_MAX_BYTES);
    f->caps.max_depth = MIN(f->lim.max_depth, (uint32_t) PATH_MAX_DEPTH);
    f->caps.max_path_bytes_total = FINALIZE_MAX_PATH_BYTES_TOTAL;
    const char *disk = s->mgr->host.ops->workspace_path(s->guest);
    f->caps.disk_bytes = stat(disk, &st) == 0 ? (uint64_t) st.st_size : 0;
}

void
session_finalize_start(Session *s, const SessionFinalizeEnd *end)
{
    Stockade__Runner__Finalize fm = STOCKADE__RUNNER__FINALIZE__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;
    Finalize *f = calloc(1, sizeof(*f));

    if (!f) {
        finalize_give_way(s, end, "out of memory");
        return;
    }
    *f = (Finalize){
        .end = end, .cur_fd = -1, .dir_fd = -1, .files_fd = -1, .started_usec = now_usec()};
    s->fin = f;
    session_egress_stop(s); /* the runner stops its proxy too */
    finalize_caps(s, f);
    if (f->caps.disk_bytes == 0 || finalize_open_dirs(s, f) < 0) {
        finalize_fail(s, "host: artifact folder or disk size");
        return;
    }
    fm.max_entries = f->caps.max_entries;
    fm.max_path_bytes = f->caps.max_path_bytes;
    fm.max_depth = f->caps.max_depth;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FINALIZE;
    m.finalize = &fm;
    if (session_send(s, &m, &f->req_id, NULL) < 0) {
        finalize_fail(s, "send");
        return;
    }
    f->deadline_usec = f->started_usec + s->mgr->cfg.finalize_base_usec;
    f->ceiling_usec = finalize_ceiling(s, f);
    finalize_extend(s, 0);
}

void
session_finalize_lost(Session *s)
{
    finalize_fail(s, "guest lost");
}

bool
session_finalize_cancel(Session *s)
{
    if (!s->fin || s->state != ST_STOPPING || !s->guest)
        return false; /* none, or past the runner (the merge runs): nothing waits on the guest */
    finalize_fail(s, "cancelled");
    return true;
}

/* ------------------------------------------------------------------ the merge and the end */

static void
finalize_merge_work(void *userdata)
{
    Session *s = userdata;
    Finalize *f = s->fin;

    for (size_t i = 0; i < f->manifest.n; i++) { /* a stale mirror copy gives way */
        const ManifestEntry *e = &f->manifest.v[i];
        struct stat st;
        if (e->stale && fstatat(f->files_fd, e->path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode))
            (void) unlinkat(f->files_fd, e->path, 0);
    }
    artifacts_merge_from(s->mgr->artifacts_dir, s->rec.id, FINALIZE_WORK_DIR, f->lim.max_files,
                         &f->merged_bytes, &f->merged_files, &f->capped, &f->err);
}

static void
finalize_merge_done(void *userdata)
{
    Session *s = userdata;
    Sessions *m = s->mgr;
    Finalize *f = s->fin;
    bool truncated = f->plan.truncated || f->capped;
    ExtractStop stop = f->plan.stop != EXTRACT_STOP_NONE ? f->plan.stop
                       : f->capped                      ? EXTRACT_STOP_FILES
                                                        : EXTRACT_STOP_NONE;
    json_t *attrs = json_pack(
        "{s:s,s:I,s:i,s:i,s:b,s:s,s:i,s:I,s:I}", "via", "channel", "bytes",
        (json_int_t) f->merged_bytes, "files", (int) f->merged_files, "skipped",
        (int) (f->plan.skipped + f->failed_files + f->runner_skipped), "truncated", truncated,
        "stop", extract_stop_name(stop), "fetched_files", (int) f->fetched_files, "fetched_bytes",
        (json_int_t) f->fetched_bytes, "finalize_ms",
        (json_int_t) ((now_usec() - f->started_usec) / 1000));

    if (f->err) {
        json_object_set_new(attrs, "error", json_string(f->err->message));
        log_warn("session %s: finalize merge: %s", s->rec.id, f->err->message);
    }
    m->stats.artifacts_channel++;
    s->rec.artifact_bytes = f->merged_bytes;
    s->rec.artifact_files = f->merged_files;
    s->rec.artifacts_truncated = truncated;
    session_event(s, "artifacts", 0, NULL, 0, attrs);
    s->fin->end->ended(s); /* the files are on disk: ended now */
}

static void
finalize_merge(Session *s)
{
    Finalize *f = s->fin;

    loop_cancel_timer(s->mgr->loop, f->timer);
    f->timer = 0;
    if (!f->end->files_in(s)) /* the folder is the worker's now */
        return;
    if (workq_submit(s->mgr->q, finalize_merge_work, finalize_merge_done, s) < 0) {
        error_set(&f->err, E_INTERNAL, ENOMEM, "queue the merge");
        finalize_merge_done(s);
    }
}

/* ------------------------------------------------------------------ fetching */

static void finalize_fetch_next(Session *s);

static int
finalize_send_get(Session *s)
{
    Finalize *f = s->fin;
    Stockade__Runner__FileGet get = STOCKADE__RUNNER__FILE_GET__INIT;
    HostMsg m = STOCKADE__RUNNER__HOST_MSG__INIT;

    get.path = f->cur->path;
    get.offset = f->cur_off;
    get.max_bytes = FILE_CHUNK_MAX_BYTES;
    m.body_case = STOCKADE__RUNNER__HOST_MSG__BODY_FILE_GET;
    m.file_get = &get;
    return session_send(s, &m, &f->get_req, NULL);
}

/* The current file is whole (ok: its mode and mtime as listed, modes as the salvage keeps
 * them), or the runner could not read it (gone, swapped for a symlink: left out, counted). */
static void
finalize_file_end(Session *s, bool ok)
{
    Finalize *f = s->fin;
    int r = ok ? dest_file_finish_ns(TAKE_FD(f->cur_fd), f->cur->mode & 0744, f->cur->mtime_ns)
               : -EIO;
    f->cur_fd = safe_close(f->cur_fd);
    if (r < 0) {
        dest_unlink(f->dir_fd, f->cur->path);
        f->failed_files++;
    } else {
        f->fetched_files++;
    }
    f->cur = NULL;
    f->get_req = 0;
    finalize_fetch_next(s);
}

static void
finalize_fetch_next(Session *s)
{
    Finalize *f = s->fin;
    uint32_t created = 0;

    while (f->next < f->manifest.n) {
        ManifestEntry *e = &f->manifest.v[f->next++];
        if (!e->fetch)
            continue;
        int fd = dest_create_file(f->dir_fd, e->path, &created);
        if (fd < 0 && dest_errno_is_conflict(-fd)) {
            f->failed_files++;
            continue;
        }
        if (fd < 0) {
            finalize_fail(s, "host: cannot write the artifact folder");
            return;
        }
        f->cur = e;
        f->cur_fd = fd;
        f->cur_off = 0;
        if (e->size == 0) {
            finalize_file_end(s, true);
            return;
        }
        if (finalize_send_get(s) < 0)
            finalize_fail(s, "send");
        return;
    }
    finalize_merge(s);
}

static void
finalize_on_data(Session *s, const Stockade__Runner__FileData *d)
{
    Finalize *f = s->fin;
    const ManifestEntry *e = f->cur;

    if (!finalize_chunk_fits(f->cur_off, e->size, d)) {
        finalize_fail(s, "file data does not match the manifest");
        return;
    }
    if (write_all(f->cur_fd, d->data.data, d->data.len) < 0) {
        finalize_fail(s, "host: cannot write the artifact folder");
        return;
    }
    f->cur_off += d->data.len;
    f->fetched_bytes += d->data.len;
    if (d->eof) {
        finalize_file_end(s, true);
        return;
    }
    if (finalize_send_get(s) < 0)
        finalize_fail(s, "send");
}

/* ------------------------------------------------------------------ the manifest */

/* 1: the mirror holds this file as listed; 0: it does not; -1: it holds another copy. */
static int
finalize_held(void *userdata, const ManifestEntry *e)
{
    Finalize *f = userdata;
    struct stat st;
    _cleanup_close_ int fd = openat2_beneath(f->files_fd, e->path, O_PATH);
    if (fd < 0 || fstat(fd, &st) < 0)
        return 0;
    uint64_t mtime_ns = (uint64_t) st.st_mtim.tv_sec * 1000000000u + (uint64_t) st.st_mtim.tv_nsec;
    if (!S_ISREG(st.st_mode))
        return 0; /* a directory where the guest now has a file: the merge skips it */
    return (uint64_t) st.st_size == e->size && mtime_ns == e->mtime_ns ? 1 : -1;
}

static void
finalize_listed(Session *s, const Stockade__Runner__Manifest *mf)
{
    Finalize *f = s->fin;
    uint32_t created = 0;

    f->listed = true;
    f->runner_truncated = mf->truncated;
    f->runner_skipped = mf->skipped;
    if (mf->truncated) { /* the runner left entries out: the disk has them */
        finalize_fail(s, "runner caps");
        return;
    }
    ManifestVerdict v = manifest_finish(&f->manifest, mf->total_entries, mf->total_file_bytes);
    if (v != MANIFEST_OK) {
        finalize_fail(s, manifest_verdict_name(v));
        return;
    }
    manifest_plan(&f->manifest, &f->lim, finalize_held, f, &f->plan);
    for (size_t i = 0; i < f->manifest.n; i++) { /* empty directories come back too */
        const ManifestEntry *e = &f->manifest.v[i];
        if (e->type == MANIFEST_DIR &&
            dest_mkdir(f->dir_fd, e->path, (e->mode & 0755) | 0700, &created) < 0)
            f->failed_files++;
    }
    finalize_extend(s, f->plan.fetch_bytes);
    finalize_fetch_next(s);
}

static void
finalize_on_manifest(Session *s, const Stockade__Runner__Manifest *mf)
{
    Finalize *f = s->fin;

    for (size_t i = 0; i < mf->n_entries; i++) {
        const Stockade__Runner__ManifestEntry *e = mf->entries[i];
        ManifestVerdict v = manifest_add(&f->manifest, &f->caps, e->path, (int) e->type, e->size,
                                         e->mtime_ns, e->mode);
        if (v != MANIFEST_OK) {
            finalize_fail(s, manifest_verdict_name(v));
            return;
        }
    }
    if (mf->last)
        finalize_listed(s, mf);
}

bool
session_finalize_on_message(Session *s, const GuestMsg *m)
{
    Finalize *f = s->fin;
    bool ours = m->req_id != 0 && (m->req_id == f->req_id || m->req_id == f->get_req);

    switch (m->body_case) {
    case STOCKADE__RUNNER__GUEST_MSG__BODY_MANIFEST:
        if (m->req_id != f->req_id || f->listed)
            finalize_fail(s, "unexpected manifest");
        else
            finalize_on_manifest(s, m->manifest);
        return true;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_DATA:
        if (!ours || m->req_id != f->get_req || !f->cur)
            finalize_fail(s, "unexpected file data");
        else
            finalize_on_data(s, m->file_data);
        return true;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_ERROR:
        if (!ours)
            return false;
        if (m->req_id == f->get_req && f->cur)
            finalize_file_end(s, false);
        else
            finalize_fail(s, "runner refused finalize");
        return true;
    case STOCKADE__RUNNER__GUEST_MSG__BODY_FILE_CHANGED:
        if (f->listed)
            return true; /* the runner flushed its mirror before the manifest: a late record lies */
        {
            uint64_t stored = session_mirror_bytes(s);
            session_mirror_on_changed(s, m->file_changed);
            finalize_extend(s, session_mirror_bytes(s) - stored); /* only what the mirror kept */
        }
        return true;
    default:
        return false; /* exits and output of the killed execs: recorded as usual */
    }
}
