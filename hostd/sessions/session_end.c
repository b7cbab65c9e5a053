/* Every way a session ends, the second half of its machine (to stopping, extracting, ended).
 * A clean end whose runner still answers (a completed task, a closed session) hands its files
 * over the channel (session_finalize.c) and ends without a disk read. Every other end, and a
 * finalize that fails, stops accepting the guest, destroys it without its help, pulls the
 * workspace out with the warm extraction appliance (or a cold one when none is up: extract/'s
 * service), merges with the live mirror, and ends. A session an earlier run left live is
 * ended here too, from its record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session_internal.h"
#include "timeutil.h"

struct SessionSalvage {
    bool held_disk; /* an earlier run's disk, held in the pool until salvaged */
    size_t held_disk_index;
    uint64_t started_usec; /* monotonic: the salvage was asked for (0: not yet) */
    const char *fallback;  /* why a finalize gave way to the salvage (static), or NULL */
};

int
session_salvage_new(Session *s)
{
    return (s->salvage = calloc(1, sizeof(*s->salvage))) ? 0 : -1;
}

void
session_salvage_free(Session *s)
{
    free(s->salvage);
    s->salvage = NULL;
}

const char *
session_salvage_fallback(const Session *s)
{
    return s->salvage->fallback;
}

static void session_extract(Session *s);

/* ------------------------------------------------------------------ the end's moves */

void
session_ended(Session *s)
{
    Sessions *m = s->mgr;
    if (!session_move(s, ST_ENDED, SESSION_END_NONE))
        return;
    m->stats.ended++;
    session_free(s);
}

static void
session_on_gone(Guest *g, uint64_t requested_usec, uint64_t gone_usec, void *userdata)
{
    Session *s = userdata;
    (void) g;
    session_event(s, "guest.destroyed", 0, NULL, 0,
                  json_pack("{s:I}", "destroy_ms",
                            (json_int_t) ((gone_usec - requested_usec) / 1000)));
    if (session_move(s, ST_EXTRACTING, SESSION_END_NONE))
        session_extract(s);
}

void
session_release_guest(Session *s, const char *fallback)
{
    s->accepting = false;
    s->salvage->fallback = fallback;
    if (s->rec.stopped_usec == 0)
        s->rec.stopped_usec = (int64_t) wall_usec(); /* the guest's life, and its charge, end */
    session_mirror_abort(s);
    session_egress_stop(s); /* every stream closes before the guest goes */
    session_guest_events_summary(s); /* nothing from the guest counts from here on */
    s->mgr->host.ops->release(s->mgr->host.pool, s->guest, session_on_gone, s);
}

bool
session_release_guest_merged(Session *s)
{
    Guest *g = s->guest;
    s->accepting = false;
    session_mirror_abort(s);
    session_guest_events_summary(s); /* nothing from the guest counts from here on */
    /* Every file is on the host: the guest's life, and its charge, end here (the merge is the
     * host's work); its destroy and the slot's reset run while the merge does. */
    s->rec.stopped_usec = (int64_t) wall_usec();
    s->guest = NULL;
    s->rec.guest[0] = '\0';
    s->mgr->host.ops->release(s->mgr->host.pool, g, NULL, NULL);
    return session_move(s, ST_EXTRACTING, SESSION_END_NONE);
}

/* How a finalize this file started ends. */
static const SessionFinalizeEnd session_finalize_end = {
    .gave_way = session_release_guest,
    .files_in = session_release_guest_merged,
    .ended = session_ended,
};

/* The end is decided (the session is stopping, or ended unbound): nothing waits on it any
 * more. Its operations fail after the move, so that their owners (a task's upload among
 * them) see a session that is stopping and never decide another end. */
static void
session_ending(Session *s, SessionEndReason reason)
{
    Sessions *m = s->mgr;
    session_parts_stop(s, reason); /* the queue, timers; operations fail */
    if (reason == SESSION_END_CANCELLED)
        m->stats.cancels++;
    else if (reason == SESSION_END_TIMED_OUT)
        m->stats.timeouts++;
}

/* A session without a guest ends at once: nothing to destroy, nothing to salvage. */
static void
session_ended_unbound(Session *s)
{
    Sessions *m = s->mgr;
    artifacts_drop_work(m, s->rec.id);
    m->stats.ended++;
    session_free(s);
}

void
session_end(Session *s, SessionEndReason reason)
{
    if (session_state_is_ending(s->state))
        return; /* the first reason wins */
    if (s->state == ST_NEW && !s->guest) { /* its guest being adopted: it ends once it runs */
        s->end_after_adopt = s->end_after_adopt ? s->end_after_adopt : reason;
        return;
    }
    if (s->state == ST_PENDING) {
        if (!session_move(s, ST_ENDED, reason))
            return;
        session_ending(s, reason);
        session_ended_unbound(s);
        return;
    }
    bool finalize = session_finalize_wanted(s, reason);
    if (!session_move(s, ST_STOPPING, reason))
        return;
    s->accepting = finalize; /* the runner's last mirror records and its manifest come */
    session_ending(s, reason);
    if (!s->guest) { /* lost before a guest was bound */
        if (session_move(s, ST_ENDED, SESSION_END_NONE))
            session_ended_unbound(s);
        return;
    }
    if (finalize)
        session_finalize_start(s, &session_finalize_end);
    else
        session_release_guest(s, NULL);
}

/* A session an earlier run left live: its guest is gone with that run. It stops (reason:
 * host_restart, or host_lost when another host took it over); then its disk, when the pool
 * still has that slot, is salvaged, and without one it ends at once. */
static void
session_end_adopted(Session *s, SessionEndReason reason)
{
    Sessions *m = s->mgr;
    const SessionsHostOps *ops = m->host.ops;
    ssize_t disk = s->rec.guest[0] ? ops->hold_disk(m->host.pool, s->rec.guest) : -1;

    if (!session_move(s, ST_STOPPING, reason)) {
        if (disk >= 0)
            ops->unhold_disk(m->host.pool, (size_t) disk);
        session_free(s); /* its record stays unfinished: the next start tries again */
        return;
    }
    if (disk < 0) {
        if (session_move(s, ST_ENDED, SESSION_END_NONE))
            m->stats.ended++;
        session_free(s);
        return;
    }
    s->salvage->held_disk = true;
    s->salvage->held_disk_index = (size_t) disk;
    s->salvage->started_usec = now_usec();
    if (session_move(s, ST_EXTRACTING, SESSION_END_NONE))
        session_extract(s); /* waits for the appliance */
}

void
session_end_recorded(Sessions *m, SessionRecord *r, SessionEndReason reason)
{
    _cleanup_error_ Error *err = NULL;
    Session *s = session_alloc(m);
    if (!s || !(s->spec.pool = strdup(r->pool)) || !(s->spec.tenant_id = strdup(r->tenant_id))) {
        if (s)
            session_free(s);
        log_error("session %s: out of memory during restart reconciliation", r->id);
        return;
    }
    s->rec = *r;
    r->spec = NULL;                                          /* moved */
    if (s->rec.started_usec > 0 && s->rec.stopped_usec == 0) /* its guest ran until now */
        s->rec.stopped_usec = (int64_t) wall_usec();
    session_admit_adopt(s);
    uint64_t seq;
    if (store_event_max_seq(m->store, s->rec.id, &seq, &err) == 0 && seq > s->rec.last_seq)
        s->rec.last_seq = seq; /* events written after the record's last update */
    s->next = m->all;
    m->all = s;
    session_end_adopted(s, reason); /* nothing is accepted from anyone: it has no guest */
}

/* ------------------------------------------------------------------ extraction */

/* One salvage's sessions side: the merge into the artifacts (worker), then the end (loop). */
typedef struct {
    Session *s;
    const char *artifacts_dir;
    uint32_t max_files;
    uint64_t merged_bytes;
    uint32_t merged_files;
    char id[SESSION_ID_BYTES];
} SalvageMerge;

static void
salvage_merge_work(void *userdata, ExtractStats *stats, Error **errp)
{
    SalvageMerge *j = userdata;
    bool capped = false;
    artifacts_merge(j->artifacts_dir, j->id, j->max_files, &j->merged_bytes, &j->merged_files,
                    &capped, *errp ? NULL : errp);
    stats->truncated |= capped;
}

/* The artifacts event of a salvage, and the module's counters. */
static void
salvage_record(Session *s, const SalvageMerge *j, const ExtractStats *stats, const Error *err)
{
    Sessions *m = s->mgr;
    uint64_t took = now_usec() - s->salvage->started_usec;
    json_t *attrs =
        json_pack("{s:s,s:I,s:i,s:i,s:b,s:s,s:I}", "via", "salvage", "bytes",
                  (json_int_t) j->merged_bytes, "files", (int) j->merged_files, "skipped",
                  (int) stats->skipped, "truncated", stats->truncated, "stop",
                  extract_stop_name(stats->stop), "salvage_ms", (json_int_t) (took / 1000));

    if (s->salvage->fallback) /* a finalize was tried and failed: say why */
        json_object_set_new(attrs, "finalize_fallback", json_string(s->salvage->fallback));
    m->stats.artifacts_salvage++;
    histogram_add(&m->stats.extraction, took);
    m->stats.extraction_bytes += stats->bytes;
    if (err) {
        m->stats.extraction_failures++;
        json_object_set_new(attrs, "error", json_string(err->message));
        log_warn("session %s: extraction: %s", s->rec.id, err->message);
    }
    s->rec.artifact_bytes = j->merged_bytes;
    s->rec.artifact_files = j->merged_files;
    s->rec.artifacts_truncated = stats->truncated;
    session_event(s, "artifacts", 0, NULL, 0, attrs);
}

static void
salvage_merge_done(void *userdata, const ExtractStats *stats, const Error *err)
{
    SalvageMerge *j = userdata;
    Session *s = j->s;
    Sessions *m = s->mgr;

    salvage_record(s, j, stats, err);
    free(j);
    if (s->guest)
        m->host.ops->recycle(m->host.pool, s->guest);
    else if (s->salvage->held_disk)
        m->host.ops->unhold_disk(m->host.pool, s->salvage->held_disk_index);
    s->guest = NULL;
    s->rec.guest[0] = '\0';
    session_ended(s);
}

static void
session_extract(Session *s)
{
    Sessions *m = s->mgr;
    SessionSalvage *sv = s->salvage;
    SalvageMerge *j = calloc(1, sizeof(*j));
    char dest[1024];

    if (!j)
        abort(); /* the session would never end */
    /* The wait for the appliance counts in salvage_ms: it is part of what the client waits. */
    sv->started_usec = sv->started_usec ? sv->started_usec : now_usec();
    *j = (SalvageMerge){.s = s, .artifacts_dir = m->artifacts_dir,
                        .max_files = m->cfg.extract.max_files};
    snprintf(j->id, sizeof(j->id), "%s", s->rec.id);
    snprintf(dest, sizeof(dest), "%s/%s/.salvage", m->artifacts_dir, s->rec.id);
    ExtractRequest r = {.disk_index =
                            s->guest ? m->host.ops->disk_index(s->guest) : sv->held_disk_index,
                        .dest_dir = dest,
                        .after_work = salvage_merge_work,
                        .done = salvage_merge_done,
                        .userdata = j};
    session_extract_limits(s, &r.limits);
    m->host.ops->salvage(m->host.extract, &r);
}
