/* The hosts table: heartbeats and the list `stockade hosts` shows. See cluster.h.
 * Times of liveness are the database's (clock_timestamp()), so a host whose clock is off
 * neither looks dead nor immortal to the others. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"

int
cluster_heartbeat(Cluster *c, const char *accel, const char *pools_json, Error **errp)
{
    if (strlen(pools_json) > CLUSTER_POOLS_JSON_MAX_BYTES ||
        strlen(accel) > CLUSTER_ACCEL_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "cluster: heartbeat over its size limits");
    char gap[CLUSTER_NUM_BYTES];
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {c->cfg.host_id, accel, pools_json,
                       cluster_num(gap, cluster_lease_usec(c) / 2)};
    /* A beat after a gap of half a lease starts alive_since again: this host (or the
     * database) was away, so it has not watched the others for a whole lease. A lost host's
     * row is not touched: it learns it here (no row) and rejoins. */
    if (cluster_query(c,
                      "UPDATE hosts SET alive_since_usec = CASE WHEN " DB_NOW_USEC
                      " - heartbeat_usec > $4 THEN " DB_NOW_USEC " ELSE alive_since_usec END,"
                      " heartbeat_usec = " DB_NOW_USEC ", accel = $2, pools = $3::jsonb"
                      " WHERE id = $1 AND lost_usec = 0 RETURNING id",
                      4, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1)
        return error_set(errp, E_CONFLICT, 0, "cluster: host %s was declared lost", c->cfg.host_id);
    return 0;
}

int
cluster_hosts_list(Cluster *c, ClusterHost **ret, size_t *ret_n, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    if (cluster_query(c,
                      "SELECT h.id, h.url, h.accel, h.started_usec,"
                      " " DB_NOW_USEC " - h.heartbeat_usec, (SELECT count(*) FROM sessions s"
                      " WHERE s.host_id = h.id AND s.state <> 'ended'), h.pools::text, h.lost_usec,"
                      " h.lost_by"
                      " FROM hosts h ORDER BY h.id",
                      0, NULL, &r, errp) < 0)
        return -1;
    size_t n = (size_t) PQntuples(r);
    ClusterHost *v = calloc(n ? n : 1, sizeof(*v));
    if (!v)
        return error_set(errp, E_INTERNAL, ENOMEM, "cluster: hosts");
    for (size_t i = 0; i < n; i++) {
        ClusterRow row;
        cluster_row_at(r, (int) i, &row);
        if (cluster_host_row_decode(&row, &v[i], errp) < 0) {
            cluster_hosts_free(v, i + 1);
            return -1;
        }
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

void
cluster_hosts_free(ClusterHost *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].pools_json);
    free(v);
}
