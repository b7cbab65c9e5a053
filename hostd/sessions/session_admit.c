/* Admission and settlement: the sessions module's side of the tenant ledger (issue 5).
 *
 * Admission runs in sessions_create(), before the session is queued for a guest, so a
 * refusal costs no pool_take() and no libvirt call. It is atomic: the loop thread is the
 * only writer and runs one request at a time, and nothing between reading the tenant's usage
 * and writing its reservation returns to the loop, so two concurrent requests (however many
 * HTTP threads carried them) cannot both pass a limit. The writer also holds SQLite's write
 * lock from its BEGIN IMMEDIATE, so not even another process could interleave. The check,
 * the reservation, the bucket and the session's first record are one savepoint in the
 * writer's transaction: all of them or none.
 *
 * Settlement runs when a session reaches ST_ENDED, from session_set_state(), inside the same
 * transaction as the session's final state: a crash keeps both or neither. On restart,
 * sessions_start() first ends the sessions an earlier run left live (each settles as it
 * ends, from its own record), then sessions_admit_reconcile() settles any reservation still
 * open whose session is no longer live. Either way a reservation ends exactly once (the
 * store refuses a second end).
 *
 * Cluster mode (issue 16, hostd/cluster): the ledger, the quota rows and the buckets live in
 * the cluster's PostgreSQL, shared by every host, and the decision runs inside a transaction
 * that holds the tenant's row lock there (cluster_admit), so it is exact across hosts. The
 * session's own record stays in this host's store. The database round trip runs on the loop
 * thread: it is one short transaction on a local network. The cluster commits first; if the
 * local record then cannot be written, the cluster's reservation is released at once. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "session_internal.h"
#include "store_tenants.h"
#include "timeutil.h"

/* What admission granted a session: its reservation's caps, and its lifetime (rec.timeout_usec)
 * from the hand-out of its guest. */
struct SessionGrant {
    uint64_t output_limit_bytes;    /* min(global, tenant quota) */
    uint64_t workspace_limit_bytes; /* tenant cap on the live mirror and on the salvage, each */
    uint64_t lifetime_start_usec;   /* monotonic: when it got its guest; 0 before */
};

int
session_grant_new(Session *s)
{
    return (s->grant = calloc(1, sizeof(*s->grant))) ? 0 : -1;
}

void
session_grant_free(Session *s)
{
    free(s->grant);
    s->grant = NULL;
}

uint64_t
session_output_limit_bytes(const Session *s)
{
    return s->grant->output_limit_bytes;
}

void
session_lifetime_begins(Session *s)
{
    s->grant->lifetime_start_usec = now_usec();
}

void
session_lifetime_resume(Session *s, uint64_t start_usec)
{
    s->grant->lifetime_start_usec = start_usec ? start_usec : 1;
}

uint64_t
session_lifetime_end_usec(const Session *s)
{
    uint64_t start = s->grant->lifetime_start_usec;
    return start ? start + s->rec.timeout_usec : 0;
}

static int
session_shape(Sessions *m, const char *pool, AdmitRequest *rq, Error **errp)
{
    PoolStatus st;
    m->host.ops->status(m->host.pool, &st);
    const PoolShapeStatus *sh = pool_status_shape(&st, pool);
    if (!sh)
        return error_set(errp, E_INVALID, 0, "no pool (image) named '%.32s'", pool);
    rq->vcpus = sh->vcpus;
    rq->memory_mib = sh->memory_mib;
    return 0;
}

static int
admit_refused(Sessions *m, const AdmitDecision *d, AdmitRefusal *ret_refusal, Error **errp)
{
    if (d->refusal.limit_id < _ADMIT_LIMIT_MAX)
        m->stats.admission_refusals[d->refusal.limit_id]++;
    if (ret_refusal)
        *ret_refusal = d->refusal;
    return error_set(errp, E_QUOTA, 0, "quota exceeded: %s (limit %llu, used %llu)",
                     admit_limit_name(d->refusal.limit_id), (unsigned long long) d->refusal.limit,
                     (unsigned long long) d->refusal.used);
}

static void
admit_request(Session *s, AdmitRequest *rq)
{
    *rq = (AdmitRequest){.timeout_s = (s->rec.timeout_usec + USEC_PER_SEC - 1) / USEC_PER_SEC};
}

/* A removed tenant admits nothing (its tokens were revoked with it; an operator acting for
 * it, or a request authenticated just before, still ends here). The loop thread removes
 * tenants too, so nothing comes between this check and the reservation. */
static int
tenant_live(Sessions *m, const char *tenant_id, Error **errp)
{
    TenantRecord t;
    if (store_tenant_get(m->store, tenant_id, &t, errp) < 0)
        return -1;
    return t.removed_usec ? error_set(errp, E_FORBIDDEN, 0, "tenant %.40s was removed", t.id) : 0;
}

/* The check and the reservation in the store; the caller holds a savepoint. */
static int
session_admit(Session *s, AdmitRefusal *ret_refusal, Error **errp)
{
    Sessions *m = s->mgr;
    int64_t now = (int64_t) wall_usec();
    AdmitRequest rq;
    AdmitQuota q;
    AdmitUsage u;
    AdmitDecision d;

    admit_request(s, &rq);
    if (tenant_live(m, s->rec.tenant_id, errp) < 0 ||
        session_shape(m, s->spec.pool, &rq, errp) < 0 ||
        store_quota_get(m->store, s->rec.tenant_id, &m->cfg.default_quota, &q, errp) < 0 ||
        store_usage_get(m->store, s->rec.tenant_id, &u, errp) < 0)
        return -1;
    admit_decide(&q, &u, &rq, now, &d);
    if (d.refusal.limit_id != ADMIT_OK)
        return admit_refused(m, &d, ret_refusal, errp);
    ReservationRecord res = {
        .vcpus = rq.vcpus,
        .reserved_guest_s = d.reserve_guest_s,
        .output_bytes = MIN(m->cfg.output_limit_bytes, q.output_bytes),
        .workspace_bytes = q.workspace_bytes, /* the mirror and the salvage take min() each */
        .created_usec = now,
    };
    memcpy(res.tenant_id, s->rec.tenant_id, sizeof(res.tenant_id));
    memcpy(res.session_id, s->rec.id, sizeof(res.session_id));
    if (store_reservation_insert(m->store, &res, errp) < 0 ||
        store_bucket_put(m->store, s->rec.tenant_id, &d.bucket, errp) < 0)
        return -1;
    s->grant->output_limit_bytes = res.output_bytes;
    s->grant->workspace_limit_bytes = res.workspace_bytes;
    return 0;
}

/* The same in the cluster's database, in its own transaction (committed on success). A
 * tenant without a quota row there falls back to this host's view of it (its own row in the
 * store, else the configured defaults). */
static int
session_admit_cluster(Session *s, AdmitRefusal *ret_refusal, Error **errp)
{
    Sessions *m = s->mgr;
    AdmitRequest rq;
    AdmitQuota fallback;
    AdmitDecision d;
    ReservationRecord res = {0};

    admit_request(s, &rq);
    if (session_shape(m, s->spec.pool, &rq, errp) < 0 ||
        store_quota_get(m->store, s->rec.tenant_id, &m->cfg.default_quota, &fallback, errp) < 0)
        return -1;
    memcpy(res.tenant_id, s->rec.tenant_id, sizeof(res.tenant_id));
    memcpy(res.session_id, s->rec.id, sizeof(res.session_id));
    if (cluster_admit(m->cluster, &fallback, &rq, m->cfg.output_limit_bytes,
                      (int64_t) wall_usec(), &res, &d, errp) < 0)
        return -1;
    if (d.refusal.limit_id != ADMIT_OK)
        return admit_refused(m, &d, ret_refusal, errp);
    s->grant->output_limit_bytes = res.output_bytes;
    s->grant->workspace_limit_bytes = res.workspace_bytes;
    return 0;
}

/* The session's record in the store, under the caller's savepoint. */
static int
session_record_local(Session *s, Error **errp)
{
    return artifacts_prepare(s->mgr, s->rec.id, errp) < 0 ||
                   store_session_insert(s->mgr->store, &s->rec, errp) < 0 ||
                   store_savepoint_release(s->mgr->store, errp) < 0
               ? -1
               : 0;
}

/* The cluster admitted but this host could not record the session: give the slot back. */
static void
cluster_release_now(Session *s)
{
    _cleanup_error_ Error *err = NULL;
    ReservationRecord res;
    Cluster *c = s->mgr->cluster;
    if (cluster_reservation_for_session(c, s->rec.id, &res, &err) < 0 ||
        cluster_reservation_end(c, res.id, RESERVATION_RELEASED, 0, (int64_t) wall_usec(),
                                &err) < 0)
        log_error("session %s: cluster ledger: reservation not released (restart reconciles"
                  " it): %s", s->rec.id, err->message);
}

int
session_admit_record(Session *s, AdmitRefusal *ret_refusal, Error **errp)
{
    Sessions *m = s->mgr;
    if (store_savepoint(m->store, errp) < 0)
        return -1;
    if (m->cluster) {
        if (session_admit_cluster(s, ret_refusal, errp) < 0) {
            store_savepoint_rollback(m->store);
            return -1;
        }
        if (session_record_local(s, errp) < 0) {
            store_savepoint_rollback(m->store);
            cluster_release_now(s);
            return -1;
        }
        return 0;
    }
    if (session_admit(s, ret_refusal, errp) < 0 || session_record_local(s, errp) < 0) {
        store_savepoint_rollback(m->store);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ settlement */

/* The ledger this host settles in: the cluster's when there is one, else the store's. */
static int
ledger_for_session(Sessions *m, const char *session_id, ReservationRecord *ret, Error **errp)
{
    return m->cluster ? cluster_reservation_for_session(m->cluster, session_id, ret, errp)
                      : store_reservation_for_session(m->store, session_id, ret, errp);
}

static int
ledger_end(Sessions *m, int64_t id, ReservationState state, uint64_t charged, int64_t ended,
           Error **errp)
{
    return m->cluster ? cluster_reservation_end(m->cluster, id, state, charged, ended, errp)
                      : store_reservation_end(m->store, id, state, charged, ended, errp);
}

/* Ends an open reservation from its session's record (NULL: the session is gone). The charge
 * is the guest's life: hand-out (started) to the destroy request (stopped), never the queue
 * before it nor the extraction after it. A record without a stop time (ended before the
 * column existed) is charged to its end. */
static int
reservation_settle(Sessions *m, const ReservationRecord *res, const SessionRecord *rec,
                   Error **errp)
{
    bool ran = rec && rec->started_usec > 0;
    int64_t stopped = ran && rec->stopped_usec > 0 ? rec->stopped_usec : ran ? rec->ended_usec : 0;
    uint64_t charged = ran ? admit_charge_guest_s(res->reserved_guest_s, res->vcpus,
                                                  rec->started_usec, stopped)
                           : 0;
    int64_t ended = rec && rec->ended_usec > 0 ? rec->ended_usec : (int64_t) wall_usec();
    return ledger_end(m, res->id, ran ? RESERVATION_CHARGED : RESERVATION_RELEASED, charged, ended,
                      errp);
}

void
session_admit_settle(Session *s)
{
    _cleanup_error_ Error *err = NULL;
    ReservationRecord res;

    if (ledger_for_session(s->mgr, s->rec.id, &res, &err) < 0) {
        if (err->category != E_NOT_FOUND) { /* none: admitted before the ledger existed */
            log_error("session %s: ledger: %s", s->rec.id, err->message);
            s->mgr->settle_retry = s->mgr->cluster != NULL;
        }
        return;
    }
    if (res.state == RESERVATION_OPEN && reservation_settle(s->mgr, &res, &s->rec, &err) < 0) {
        log_error("session %s: ledger: reservation %lld not settled: %s", s->rec.id,
                  (long long) res.id, err->message);
        s->mgr->settle_retry = s->mgr->cluster != NULL; /* the store's: one transaction */
    }
}

void
session_admit_adopt(Session *s)
{
    ReservationRecord res;
    Sessions *m = s->mgr;
    if (ledger_for_session(m, s->rec.id, &res, NULL) == 0) {
        s->grant->output_limit_bytes = res.output_bytes;
        s->grant->workspace_limit_bytes = res.workspace_bytes;
        return;
    }
    s->grant->output_limit_bytes =
        m->cfg.output_limit_bytes; /* admitted before the ledger existed */
    s->grant->workspace_limit_bytes = UINT64_MAX;
}

/* A reservation without a live session: its session ended (settle from the record) or is
 * gone (release). 1 settled; 0 left alone (a record still unfinished was not adopted);
 * -1 on a store error. */
static int
reconcile_one(Sessions *m, const ReservationRecord *res, Error **errp)
{
    _cleanup_error_ Error *get_err = NULL;
    SessionRecord rec;
    int r = 0;

    if (store_session_get(m->store, res->session_id, &rec, &get_err) < 0) {
        if (get_err->category != E_NOT_FOUND)
            return error_set(errp, get_err->category, 0, "%s", get_err->message);
        return reservation_settle(m, res, NULL, errp) < 0 ? -1 : 1;
    }
    if (rec.state == ST_ENDED)
        r = reservation_settle(m, res, &rec, errp) < 0 ? -1 : 1;
    session_record_clear(&rec);
    return r;
}

/* Open reservations: the cluster's of sessions this host owns, or all of the store's. */
static int
ledger_open(Sessions *m, ReservationRecord **ret, size_t *ret_n, Error **errp)
{
    return m->cluster ? cluster_reservations_open(m->cluster, ret, ret_n, errp)
                      : store_reservations_open(m->store, ret, ret_n, errp);
}

/* Cluster mode: a session that ended while the database was away left its reservation open
 * there (session_admit_settle() logged it). Once the database answers, every open reservation
 * of this host whose session has ended is settled from its record: the one in memory while
 * the session is still finalizing, else the store's. A live session's settles when it ends.
 * Each ends exactly once: only an open reservation is ended, and the cluster's triggers
 * refuse a second end. Bounded by this host's open reservations (its live sessions and those
 * that failed). */
void
sessions_settle_retry(Sessions *m)
{
    _cleanup_error_ Error *err = NULL;
    ReservationRecord *v = NULL;
    size_t n = 0, settled = 0;

    if (!m->cluster || !m->settle_retry)
        return;
    if (cluster_reservations_open(m->cluster, &v, &n, &err) < 0)
        return; /* still away: the next heartbeat tries again */
    m->settle_retry = false;
    for (size_t i = 0; i < n; i++) {
        Session *s = sessions_find(m, NULL, v[i].session_id);
        int r;
        if (s && s->state != ST_ENDED)
            continue; /* live: it settles when it ends */
        if (s)
            r = reservation_settle(m, &v[i], &s->rec, &err) < 0 ? -1 : 1;
        else
            r = reconcile_one(m, &v[i], &err);
        if (r < 0) {
            log_error("ledger: reservation %lld: %s", (long long) v[i].id, err->message);
            m->settle_retry = true;
            error_free(err);
            err = NULL;
        }
        settled += r > 0;
    }
    free(v);
    if (settled)
        log_info("ledger: %zu reservation(s) settled now that the cluster's database answers",
                 settled);
}

void
sessions_admit_reconcile(Sessions *m)
{
    _cleanup_error_ Error *err = NULL;
    ReservationRecord *v = NULL;
    size_t n = 0, settled = 0;

    if (ledger_open(m, &v, &n, &err) < 0 || store_begin(m->store, &err) < 0) {
        log_error("restart reconciliation of the ledger: %s", err->message);
        free(v);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (sessions_find(m, NULL, v[i].session_id))
            continue; /* live: it settles when it ends */
        int r = reconcile_one(m, &v[i], &err);
        if (r < 0)
            log_error("ledger: reservation %lld: %s", (long long) v[i].id, err->message);
        settled += r > 0;
        error_free(err);
        err = NULL;
    }
    free(v);
    sessions_commit_now(m);
    if (settled)
        log_info("ledger: %zu open reservation(s) settled from their session records", settled);
}

void
sessions_set_cluster(Sessions *m, Cluster *c)
{
    m->cluster = c;
}

uint64_t
session_mirror_budget(const Session *s)
{
    return MIN(s->mgr->cfg.mirror_budget_bytes, s->grant->workspace_limit_bytes);
}

void
session_extract_limits(const Session *s, ExtractLimits *ret)
{
    *ret = s->mgr->cfg.extract;
    ret->max_total_bytes = MIN(ret->max_total_bytes, s->grant->workspace_limit_bytes);
}
