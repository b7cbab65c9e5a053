/* Artifact folders: <state>/artifacts/<id>/files holds what a session left (the live mirror,
 * then merged with the salvage, or with what a finalize fetched over the channel); .mirror/,
 * .salvage/ and .finalize/ are work areas removed at the end.
 *
 * Merge rule, per file: the salvaged copy (from the disk, after the kill) replaces the
 * mirrored one only when its mtime is newer. A file closed just before the kill may be on
 * the disk with its metadata but not yet its data (ext4 delayed allocation): same mtime, so
 * the mirror's complete copy wins; a file appended after its last close is newer on disk.
 * Everything here was written by the daemon itself (extract_untar and the mirror only make
 * regular files and directories), and lookups still never follow symlinks.
 * Retention: ended sessions older than artifact_max_age, then the oldest until the total is
 * under artifact_max_total_bytes, lose their folder and then their records; a folder that
 * could not be removed entirely keeps its records (and its bytes counted) for the next pass. */
#include <dirent.h>
#include <pthread.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dest.h"
#include "fdutil.h"
#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

#define RETENTION_INTERVAL_USEC (10ull * 60 * 1000000)
#define RETENTION_BATCH 64

int
sessions_artifact_dir(const char *state_dir, const char *id, char **ret_path, Error **errp)
{
    if (!sessions_id_is_valid(id))
        return error_set(errp, E_INVALID, 0, "not a session id");
    if (asprintf(ret_path, "%s/artifacts/%s/files", state_dir, id) < 0)
        return error_set(errp, E_INTERNAL, ENOMEM, "path");
    return 0;
}

int
artifacts_prepare(Sessions *m, const char *id, Error **errp)
{
    const char *subs[] = {"", "/files", "/.mirror"};
    for (size_t i = 0; i < ELEMENTSOF(subs); i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s%s", m->artifacts_dir, id, subs[i]);
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
            return error_set(errp, E_IO, errno, "create %s", path);
    }
    return 0;
}

/* A session that ends before a guest was bound never reaches the merge: its work area goes
 * here (files/ stays, empty, so the session still has its folder). */
void
artifacts_drop_work(Sessions *m, const char *id)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s/.mirror", m->artifacts_dir, id);
    rm_rf(path);
}

static struct {
    uint64_t bytes;
    uint32_t files;
} tally;

static int
count_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void) path;
    (void) ftw;
    if (type == FTW_F && S_ISREG(st->st_mode)) {
        tally.bytes += (uint64_t) st->st_size;
        tally.files++;
    }
    return 0;
}

/* State of one merge walk (nftw has no user pointer). One merge at a time per process. */
static struct {
    int files_fd;
    size_t prefix_len;
    int err;
    uint32_t files, max_files; /* files in the folder; new ones stop at max_files */
    bool capped;
} merge;

static int
merge_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void) ftw;
    if (strlen(path) <= merge.prefix_len)
        return 0; /* the .salvage root itself */
    const char *rel = path + merge.prefix_len + 1;
    uint32_t created = 0;
    if (type == FTW_D) {
        int r = dest_mkdir(merge.files_fd, rel, st->st_mode & 0755, &created);
        if (r < 0 && !dest_errno_is_conflict(-r))
            merge.err = -r;
        return 0;
    }
    if (type != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    struct stat cur;
    if (fstatat(merge.files_fd, rel, &cur, AT_SYMLINK_NOFOLLOW) == 0) {
        bool disk_newer = st->st_mtim.tv_sec > cur.st_mtim.tv_sec ||
                          (st->st_mtim.tv_sec == cur.st_mtim.tv_sec &&
                           st->st_mtim.tv_nsec > cur.st_mtim.tv_nsec);
        if (!S_ISREG(cur.st_mode) || !disk_newer)
            return 0; /* the mirror's copy stays */
    } else if (merge.files >= merge.max_files) {
        merge.capped = true; /* a new file past the folder's cap */
        return 0;
    } else {
        merge.files++;
    }
    if (renameat(AT_FDCWD, path, merge.files_fd, rel) < 0 && !dest_errno_is_conflict(errno) &&
        errno != ENOENT)
        merge.err = errno;
    return 0;
}

int
artifacts_merge(const char *artifacts_dir, const char *id, uint32_t max_files,
                uint64_t *ret_bytes, uint32_t *ret_files, bool *ret_capped, Error **errp)
{
    return artifacts_merge_from(artifacts_dir, id, ".salvage", max_files, ret_bytes, ret_files,
                                ret_capped, errp);
}

int
artifacts_merge_from(const char *artifacts_dir, const char *id, const char *work,
                     uint32_t max_files, uint64_t *ret_bytes, uint32_t *ret_files,
                     bool *ret_capped, Error **errp)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static const char *const work_areas[] = {".salvage", ".finalize", ".mirror"};
    char salvage[1024], files[1024], other[1024];
    int r = 0;

    snprintf(salvage, sizeof(salvage), "%s/%s/%s", artifacts_dir, id, work);
    snprintf(files, sizeof(files), "%s/%s/files", artifacts_dir, id);
    pthread_mutex_lock(&lock);
    merge.files_fd = open(files, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    merge.prefix_len = strlen(salvage);
    merge.err = 0;
    merge.max_files = max_files;
    merge.capped = false;
    tally.bytes = 0;
    tally.files = 0;
    (void) nftw(files, count_entry, 16, FTW_PHYS | FTW_MOUNT); /* what the mirror holds */
    merge.files = tally.files;
    if (merge.files_fd < 0)
        r = error_set(errp, E_IO, errno, "open %s", files);
    else if (access(salvage, F_OK) == 0)
        (void) nftw(salvage, merge_entry, 16, FTW_PHYS | FTW_MOUNT);
    if (!r && merge.err)
        r = error_set(errp, E_IO, merge.err, "merge salvaged files into %s", files);
    safe_close(merge.files_fd);
    tally.bytes = 0;
    tally.files = 0;
    (void) nftw(files, count_entry, 16, FTW_PHYS | FTW_MOUNT);
    *ret_bytes = tally.bytes;
    *ret_files = tally.files;
    *ret_capped = merge.capped;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < ELEMENTSOF(work_areas); i++) { /* a failed finalize's leftovers too */
        snprintf(other, sizeof(other), "%s/%s/%s", artifacts_dir, id, work_areas[i]);
        rm_rf(other);
    }
    return r;
}

/* ------------------------------------------------------------------ retention */

void
artifacts_removal_work(void *userdata)
{
    ArtifactsRemoval *j = userdata;
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", j->artifacts_dir, j->id);
    if (rm_rf(path) < 0)
        error_set(&j->err, E_IO, errno, "remove %s", path);
}

void
artifacts_removal_done(void *userdata)
{
    ArtifactsRemoval *j = userdata;
    _cleanup_error_ Error *err = NULL;
    if (j->err)
        log_warn("retention: %s (the records stay until it is gone)", j->err->message);
    else if (store_session_delete(j->store, j->id, &err) < 0)
        log_warn("retention: %s", err->message);
    error_free(j->err);
    free(j);
}

size_t
artifacts_retention_pick(const SessionsConfig *c, uint64_t now, uint64_t total_bytes,
                         const SessionRecord *v, const bool *live, size_t n, bool *ret_remove)
{
    size_t picked = 0;
    for (size_t i = 0; i < n; i++)
        ret_remove[i] = false;
    for (size_t i = 0; i < n; i++) {
        int64_t age = (int64_t) now - v[i].ended_usec; /* < 0: the clock stepped back */
        bool too_old = age > 0 && (uint64_t) age > c->artifact_max_age_usec;
        bool too_big = total_bytes > c->artifact_max_total_bytes;
        if (!too_old && !too_big)
            break; /* every later one ended later: none is older, and the total fits */
        if (live && live[i])
            continue; /* still in memory (should not happen for an ended one): keep */
        ret_remove[i] = true;
        picked++;
        total_bytes -= MIN(total_bytes, v[i].artifact_bytes);
    }
    return picked;
}

static void
artifacts_remove(Sessions *m, const char *id)
{
    ArtifactsRemoval *j = calloc(1, sizeof(*j));
    if (!j)
        return; /* the next pass tries again */
    j->store = m->store;
    j->artifacts_dir = m->artifacts_dir;
    snprintf(j->id, sizeof(j->id), "%s", id);
    if (workq_submit(m->q, artifacts_removal_work, artifacts_removal_done, j) < 0)
        free(j);
}

static void
retention_on_timer(Loop *l, void *userdata)
{
    Sessions *m = userdata;
    (void) l;
    m->retention_timer = 0;
    artifacts_retention_tick(m);
}

void
artifacts_retention_start(Sessions *m, uint64_t first_usec)
{
    loop_cancel_timer(m->loop, m->retention_timer);
    m->retention_timer = loop_add_timer(m->loop, now_usec() + first_usec, retention_on_timer, m);
}

void
artifacts_retention_stop(Sessions *m)
{
    loop_cancel_timer(m->loop, m->retention_timer);
    m->retention_timer = 0;
}

void
artifacts_retention_tick(Sessions *m)
{
    SessionRecord *v = NULL;
    size_t n = 0;
    uint64_t total = 0;
    _cleanup_error_ Error *err = NULL;

    if (m->stopping)
        return;
    sessions_commit_now(m);
    if (store_artifact_bytes_total(m->store, &total, &err) < 0 ||
        store_session_oldest_ended(m->store, RETENTION_BATCH, &v, &n, &err) < 0) {
        log_warn("retention: %s", err->message);
    } else {
        bool live[RETENTION_BATCH], remove[RETENTION_BATCH];
        n = MIN(n, (size_t) RETENTION_BATCH);
        for (size_t i = 0; i < n; i++)
            live[i] = sessions_find(m, NULL, v[i].id) != NULL;
        artifacts_retention_pick(&m->cfg, wall_usec(), total, v, live, n, remove);
        for (size_t i = 0; i < n; i++)
            if (remove[i])
                artifacts_remove(m, v[i].id);
    }
    session_records_free(v, n);
    m->retention_timer = loop_add_timer(m->loop, now_usec() + RETENTION_INTERVAL_USEC,
                                        retention_on_timer, m);
}
