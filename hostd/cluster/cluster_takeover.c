/* A host that dies (issue 16): another host ends its sessions and settles their
 * reservations. See cluster.h and README.md ("A host that dies").
 *
 * Who: the host whose takeover transaction locks the dead host's row first. The row is
 * picked FOR UPDATE SKIP LOCKED, so of several hosts calling at the same instant one gets
 * it and the others pass it by; once that one commits, the row is marked lost (or its
 * sessions are all ended) and nobody picks it again. A heartbeat of a host that was only
 * slow waits at the same row lock and then finds itself lost (cluster_heartbeat).
 * When: only the database's clock decides (its now() minus the heartbeat it stamped), never
 * a host's own; and only a host that has beaten without a gap for a whole lease may take
 * over, so after the database was away nobody is taken over before it could beat again.
 * What is charged: each reservation from its admission to the dead host's last heartbeat
 * (admit_charge_guest_s, capped at what was reserved), never to now. Each ends exactly once:
 * the statement ends only an open reservation, and the ledger's triggers refuse a second end.
 * Bound: one host and at most CLUSTER_TAKEOVER_MAX_SESSIONS sessions per call; the loop
 * thread calls it once per status tick, as it beats. */
#include <stdio.h>
#include <string.h>

#include "cluster_internal.h"

int64_t
cluster_lease_usec(const Cluster *c)
{
    unsigned s = c->cfg.lease_s ? c->cfg.lease_s : CLUSTER_LEASE_DEFAULT_S;
    return (int64_t) s * (int64_t) USEC_PER_SEC;
}

/* The stalest host past its lease, its row locked; none (0 rows) if this host may not take
 * over now or nobody is stale. A host already marked lost is picked again while sessions of
 * it are open (a takeover of more than one batch); its heartbeat cannot move meanwhile. */
static int
takeover_pick(Cluster *c, ClusterTakeover *ret, bool *ret_lost, Error **errp)
{
    char lease[CLUSTER_NUM_BYTES];
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {c->cfg.host_id, cluster_num(lease, cluster_lease_usec(c))};
    if (cluster_query(c,
                      "SELECT h.id, h.heartbeat_usec, " DB_NOW_USEC " - h.heartbeat_usec,"
                      " h.lost_usec FROM hosts h WHERE h.id <> $1"
                      " AND " DB_NOW_USEC " - h.heartbeat_usec > $2"
                      " AND (h.lost_usec = 0 OR EXISTS (SELECT 1 FROM sessions s"
                      "  WHERE s.host_id = h.id AND s.state <> 'ended'))"
                      " AND EXISTS (SELECT 1 FROM hosts me WHERE me.id = $1 AND me.lost_usec = 0"
                      "  AND " DB_NOW_USEC " - me.heartbeat_usec <= $2"
                      "  AND " DB_NOW_USEC " - me.alive_since_usec >= $2)"
                      " ORDER BY h.heartbeat_usec, h.id LIMIT 1 FOR UPDATE OF h SKIP LOCKED",
                      2, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1)
        return 0;
    if (PQgetlength(r, 0, 0) > CLUSTER_HOST_ID_MAX_BYTES) /* another host's word: bounded */
        return error_set(errp, E_INTERNAL, 0, "cluster: a host id over %d bytes",
                         CLUSTER_HOST_ID_MAX_BYTES);
    snprintf(ret->host_id, sizeof(ret->host_id), "%s", PQgetvalue(r, 0, 0));
    ret->heartbeat_usec = cluster_get_i64(r, 0, 1);
    ret->age_usec = cluster_get_i64(r, 0, 2);
    *ret_lost = cluster_get_i64(r, 0, 3) > 0;
    return 0;
}

/* Ends one session of the dead host: its open reservation (if any) charged to the last
 * heartbeat, and its index row, in one statement. *ret_settled: a reservation was ended. */
static int
takeover_end_one(Cluster *c, const PGresult *r, int row, int64_t heartbeat_usec, bool *ret_settled,
                 Error **errp)
{
    char v[2][CLUSTER_NUM_BYTES];
    _cleanup_pgresult_ PGresult *u = NULL;
    int64_t reserved = MAX(cluster_get_i64(r, row, 1), 0), vcpus = cluster_get_i64(r, row, 2);
    uint64_t charged = admit_charge_guest_s((uint64_t) reserved, (uint64_t) MAX(vcpus, 0),
                                            cluster_get_i64(r, row, 3), heartbeat_usec);
    const char *p[] = {PQgetvalue(r, row, 0), cluster_num(v[0], (int64_t) charged),
                       cluster_num(v[1], heartbeat_usec)};
    if (cluster_query(c,
                      "WITH r AS (UPDATE reservations SET state = 'charged', charged_guest_s = $2,"
                      " ended_usec = $3 WHERE session_id = $1 AND state = 'open' RETURNING id)"
                      " UPDATE sessions SET state = 'ended', ended_usec = $3,"
                      " end_reason = 'host_lost' WHERE id = $1 AND state <> 'ended'"
                      " RETURNING (SELECT count(*) FROM r)",
                      3, p, &u, errp) < 0)
        return -1;
    *ret_settled = PQntuples(u) == 1 && cluster_get_i64(u, 0, 0) == 1;
    return 0;
}

/* Up to CLUSTER_TAKEOVER_MAX_SESSIONS open sessions of the picked host, ended. */
static int
takeover_sessions(Cluster *c, ClusterTakeover *t, Error **errp)
{
    char max[CLUSTER_NUM_BYTES];
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {t->host_id, cluster_num(max, CLUSTER_TAKEOVER_MAX_SESSIONS)};
    if (cluster_query(c,
                      "SELECT s.id, r.reserved_guest_s, r.vcpus, r.created_usec FROM sessions s"
                      " LEFT JOIN reservations r ON r.session_id = s.id AND r.state = 'open'"
                      " WHERE s.host_id = $1 AND s.state <> 'ended' ORDER BY s.id LIMIT $2"
                      " FOR UPDATE OF s",
                      2, p, &r, errp) < 0)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        bool settled = false;
        if (takeover_end_one(c, r, i, t->heartbeat_usec, &settled, errp) < 0)
            return -1;
        t->n_ended++;
        t->n_settled += settled;
    }
    return 0;
}

int
cluster_takeover(Cluster *c, ClusterTakeover *ret, Error **errp)
{
    ClusterTakeover t = {0};
    bool lost = false;
    const char *p[2];

    if (cluster_begin(c, errp) < 0)
        return -1;
    if (takeover_pick(c, &t, &lost, errp) < 0)
        goto fail_rollback;
    if (!t.host_id[0]) {
        cluster_rollback(c);
        *ret = t;
        return 0;
    }
    p[0] = t.host_id;
    p[1] = c->cfg.host_id;
    if (takeover_sessions(c, &t, errp) < 0 ||
        (!lost && cluster_query(c,
                                "UPDATE hosts SET lost_usec = " DB_NOW_USEC ", lost_by = $2"
                                " WHERE id = $1",
                                2, p, NULL, errp) < 0) ||
        cluster_commit(c, errp) < 0)
        goto fail_rollback;
    *ret = t;
    return 0;

fail_rollback:
    cluster_rollback(c);
    return -1;
}

int
cluster_session_lost(Cluster *c, const char *session_id, bool *ret, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {session_id};
    if (cluster_query(c, "SELECT end_reason = 'host_lost' FROM sessions WHERE id = $1", 1, p, &r,
                      errp) < 0)
        return -1;
    *ret = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    return 0;
}
