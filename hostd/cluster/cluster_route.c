/* The session index read for forwarding: which host owns a session. See cluster_route.h. */
#include <stdio.h>
#include <string.h>

#include "cluster_internal.h"
#include "cluster_route.h"

/* A column copied only when it fits: a longer value is not ours to truncate into another
 * id or another URL. */
static bool
copy_col(const PGresult *r, int col, char *dst, size_t cap)
{
    if (PQgetisnull(r, 0, col) || (size_t) PQgetlength(r, 0, col) >= cap)
        return false;
    snprintf(dst, cap, "%s", PQgetvalue(r, 0, col));
    return true;
}

int
cluster_session_owner(Cluster *c, const char *session_id, ClusterOwner *ret, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {session_id};
    ClusterOwner o = {0};

    if (cluster_query(c,
                      "SELECT s.tenant_id, s.host_id, coalesce(h.url, '') FROM sessions s"
                      " LEFT JOIN hosts h ON h.id = s.host_id WHERE s.id = $1",
                      1, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1 || !copy_col(r, 0, o.tenant_id, sizeof(o.tenant_id)) ||
        !copy_col(r, 1, o.host_id, sizeof(o.host_id)) || !copy_col(r, 2, o.url, sizeof(o.url)))
        return error_set(errp, E_NOT_FOUND, 0, "no session %.64s", session_id);
    *ret = o;
    return 0;
}

const char *
cluster_host_id(const Cluster *c)
{
    return c->cfg.host_id;
}

const char *
cluster_host_token(const Cluster *c)
{
    return c->host_token;
}
