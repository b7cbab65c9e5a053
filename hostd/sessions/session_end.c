/* Every way a session ends. A clean end whose runner still answers (a completed task, a
 * closed session) hands its files over the channel (session_finalize.c) and ends without a
 * disk read. Every other end, and a finalize that fails, stops accepting the guest, destroys
 * it without its help, pulls the workspace out with the warm extraction appliance (or a cold
 * one when none is up: extract/'s service), merges with the live mirror, and ends. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session_internal.h"
#include "timeutil.h"



static void
session_cancel_timers(Session *s)
{
    Loop *l = s->mgr->loop;
    loop_cancel_timer(l, s->timeout_timer);
    loop_cancel_timer(l, s->pending_timer);
    loop_cancel_timer(l, s->hello_timer);
    s->timeout_timer = s->pending_timer = s->hello_timer = 0;
    for (Exec *e = s->execs; e; e = e->next) {
        loop_cancel_timer(l, e->timer);
        e->timer = 0;
    }
}

static void
session_unqueue(Session *s)
{
    Sessions *m = s->mgr;
    Session **pp = &m->pending_head;
    while (*pp && *pp != s)
        pp = &(*pp)->next_pending;
    if (*pp)
        *pp = s->next_pending;
    m->pending_tail = &m->pending_head;
    while (*m->pending_tail)
        m->pending_tail = &(*m->pending_tail)->next_pending;
    s->next_pending = NULL;
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
session_release_guest(Session *s)
{
    s->accepting = false;
    if (s->rec.stopped_usec == 0)
        s->rec.stopped_usec = (int64_t) wall_usec(); /* the guest's life, and its charge, end */
    session_mirror_abort(s);
    session_egress_stop(s); /* every stream closes before the guest goes */
    session_guest_events_summary(s); /* nothing from the guest counts from here on */
    pool_release(s->mgr->pool, s->guest, session_on_gone, s);
}

/* The end is decided (the session is stopping, or ended unbound): nothing waits on it any
 * more. Its operations fail after the move, so that their owners (a task's upload among
 * them) see a session that is stopping and never decide another end. */
static void
session_ending(Session *s, SessionEndReason reason)
{
    Sessions *m = s->mgr;
    session_cancel_timers(s);
    session_ops_fail_all(s, reason);
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
    session_unqueue(s);
    artifacts_drop_work(m, s->rec.id);
    m->stats.ended++;
    session_free(s);
    sessions_check_stopped(m);
}

void
session_end(Session *s, SessionEndReason reason)
{
    if (session_state_is_ending(s->state))
        return; /* the first reason wins */
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
        session_finalize_start(s);
    else
        session_release_guest(s);
}

/* A session an earlier run left live: its guest is gone with that run. It stops (host_restart,
 * or host_lost when another host took it over: sessions_lost.c); then its disk, when the pool
 * still has that slot, is salvaged, and without one it ends at once. */
void
session_end_recorded(Session *s)
{
    Sessions *m = s->mgr;
    ssize_t disk = s->rec.guest[0] ? pool_hold_disk(m->pool, s->rec.guest) : -1;

    if (!session_move(s, ST_STOPPING, session_adopt_reason(s))) {
        if (disk >= 0)
            pool_unhold_disk(m->pool, (size_t) disk);
        session_free(s); /* its record stays unfinished: the next start tries again */
        return;
    }
    if (disk < 0) {
        if (session_move(s, ST_ENDED, SESSION_END_NONE))
            m->stats.ended++;
        session_free(s);
        return;
    }
    s->held_disk = true;
    s->disk_index = (size_t) disk;
    s->extract_started_usec = now_usec();
    if (session_move(s, ST_EXTRACTING, SESSION_END_NONE))
        session_extract(s); /* waits for the appliance */
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

static void
salvage_merge_done(void *userdata, const ExtractStats *stats, const Error *err)
{
    SalvageMerge *j = userdata;
    Session *s = j->s;
    Sessions *m = s->mgr;
    json_t *attrs = json_pack("{s:s,s:I,s:i,s:i,s:b,s:s,s:I}", "via", "salvage", "bytes",
                              (json_int_t) j->merged_bytes,
                              "files", (int) j->merged_files, "skipped", (int) stats->skipped,
                              "truncated", stats->truncated, "stop",
                              extract_stop_name(stats->stop), "salvage_ms",
                              (json_int_t) ((now_usec() - s->extract_started_usec) / 1000));

    if (s->fin_fallback) /* a finalize was tried and failed: say why */
        json_object_set_new(attrs, "finalize_fallback", json_string(s->fin_fallback));
    m->stats.artifacts_salvage++;
    histogram_add(&m->stats.extraction, now_usec() - s->extract_started_usec);
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
    if (s->guest)
        pool_recycle(m->pool, s->guest);
    else if (s->held_disk)
        pool_unhold_disk(m->pool, s->disk_index);
    s->guest = NULL;
    s->rec.guest[0] = '\0';
    free(j);
    if (!session_move(s, ST_ENDED, SESSION_END_NONE))
        return;
    m->stats.ended++;
    session_free(s);
    sessions_check_stopped(m);
}

void
session_extract(Session *s)
{
    Sessions *m = s->mgr;
    SalvageMerge *j = calloc(1, sizeof(*j));
    char dest[1024];

    if (!j)
        abort(); /* the session would never end */
    /* The wait for the appliance counts in salvage_ms: it is part of what the client waits. */
    s->extract_started_usec = s->extract_started_usec ? s->extract_started_usec : now_usec();
    *j = (SalvageMerge){.s = s, .artifacts_dir = m->artifacts_dir,
                        .max_files = m->cfg.extract.max_files};
    snprintf(j->id, sizeof(j->id), "%s", s->rec.id);
    snprintf(dest, sizeof(dest), "%s/%s/.salvage", m->artifacts_dir, s->rec.id);
    ExtractRequest r = {.disk_index = s->disk_index, .dest_dir = dest,
                        .after_work = salvage_merge_work, .done = salvage_merge_done,
                        .userdata = j};
    session_extract_limits(s, &r.limits);
    extract_service_salvage(m->extract, &r);
}
