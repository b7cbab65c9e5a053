/* The session index and the hosts read for forwarding: which host owns a session, and which
 * host a create goes to. See cluster_route.h. */
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

/* A published E2B listener read back: only the form cluster_e2b_url() writes counts. */
static bool
e2b_col(const PGresult *r, int col)
{
    char url[CLUSTER_URL_MAX_BYTES + 1];
    return copy_col(r, col, url, sizeof(url)) && cluster_e2b_url_is_valid(url);
}

int
cluster_session_owner(Cluster *c, const char *session_id, ClusterOwner *ret, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    const char *p[] = {session_id};
    ClusterOwner o = {0};

    if (cluster_query(c,
                      "SELECT s.tenant_id, s.host_id, coalesce(h.url, ''), s.state = 'ended',"
                      " coalesce(h.e2b_api_url, ''), coalesce(h.e2b_envd_url, '')"
                      " FROM sessions s LEFT JOIN hosts h ON h.id = s.host_id WHERE s.id = $1",
                      1, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1 || !copy_col(r, 0, o.tenant_id, sizeof(o.tenant_id)) ||
        !copy_col(r, 1, o.host_id, sizeof(o.host_id)) || !copy_col(r, 2, o.url, sizeof(o.url)))
        return error_set(errp, E_NOT_FOUND, 0, "no session %.64s", session_id);
    o.ended = strcmp(PQgetvalue(r, 0, 3), "t") == 0;
    o.e2b_api = e2b_col(r, 4);
    o.e2b_envd = e2b_col(r, 5);
    *ret = o;
    return 0;
}

int
cluster_e2b_publish(Cluster *c, unsigned api_port, unsigned envd_port, bool tls, Error **errp)
{
    char api[CLUSTER_URL_MAX_BYTES + 1] = "", envd[CLUSTER_URL_MAX_BYTES + 1] = "";
    const char *adv = c->cfg.advertise_url;

    if ((api_port && cluster_e2b_url(adv, api_port, tls, api, sizeof(api)) < 0) ||
        (envd_port && cluster_e2b_url(adv, envd_port, tls, envd, sizeof(envd)) < 0))
        return error_set(errp, E_INVALID, 0, "[cluster] advertise_url has no host for E2B URLs");
    const char *p[] = {c->cfg.host_id, api, envd};
    return cluster_query(c, "UPDATE hosts SET e2b_api_url = $2, e2b_envd_url = $3 WHERE id = $1", 3,
                         p, NULL, errp);
}

/* One candidate per (host, pool entry named $2): its estimated idle guests ("est") and its
 * open sessions. Everything read from pools is checked for its JSON type first: a host
 * that wrote something else has no idle guest here, and the statement never fails on it. A
 * pool entry with "accepting": false (its host is draining) is no candidate. */
static const char place_sql[] =
    "WITH cand AS ("
    " SELECT h.id, h.url,"
    "  (SELECT count(*) FROM sessions s WHERE s.host_id = h.id AND s.state <> 'ended') AS open,"
    "  (CASE WHEN jsonb_typeof(p -> 'idle') = 'number' THEN (p ->> 'idle')::numeric ELSE 0 END)"
    "  - (SELECT count(*) FROM sessions s WHERE s.host_id = h.id AND s.state <> 'ended'"
    "     AND s.created_usec > h.heartbeat_usec) AS est"
    " FROM hosts h, jsonb_array_elements(CASE WHEN jsonb_typeof(h.pools) = 'array'"
    "  THEN h.pools ELSE '[]'::jsonb END) p"
    " WHERE h.id <> $1 AND h.lost_usec = 0 AND " DB_NOW_USEC " - h.heartbeat_usec < $3"
    "  AND jsonb_typeof(p) = 'object' AND p ->> 'name' = $2"
    "  AND p -> 'accepting' IS DISTINCT FROM 'false'::jsonb)"
    " SELECT id, url FROM cand WHERE est > 0 OR NOT $4::boolean"
    " ORDER BY est > 0 DESC, open, est DESC, id LIMIT 1";

int
cluster_place(Cluster *c, const char *pool, bool need_idle, ClusterOwner *ret, Error **errp)
{
    _cleanup_pgresult_ PGresult *r = NULL;
    char fresh[CLUSTER_NUM_BYTES];
    const char *p[] = {c->cfg.host_id, pool, cluster_num(fresh, CLUSTER_PLACE_FRESH_USEC),
                       need_idle ? "true" : "false"};
    ClusterOwner o = {0};

    if (cluster_query(c, place_sql, 4, p, &r, errp) < 0)
        return -1;
    if (PQntuples(r) != 1)
        return 0;
    if (!copy_col(r, 0, o.host_id, sizeof(o.host_id)) || !copy_col(r, 1, o.url, sizeof(o.url)))
        return 0; /* over its bound: not a host this one can name */
    *ret = o;
    return 1;
}

const char *
cluster_host_id(const Cluster *c)
{
    return c->cfg.host_id;
}

void
cluster_hop_credential(Cluster *c, char ret[CLUSTER_HOP_AUTH_HEX_BYTES + 1])
{
    pthread_mutex_lock(&c->keys_lock);
    cluster_hop_auth_hex(c->keys.hop[0], ret);
    pthread_mutex_unlock(&c->keys_lock);
}

bool
cluster_hop_credential_ok(Cluster *c, const char *presented)
{
    pthread_mutex_lock(&c->keys_lock);
    bool ok = cluster_keys_hop_matches(&c->keys, presented);
    pthread_mutex_unlock(&c->keys_lock);
    return ok;
}

size_t
cluster_envd_keys(Cluster *c, uint8_t ret[CLUSTER_SECRETS_MAX][CLUSTER_KEY_BYTES])
{
    pthread_mutex_lock(&c->keys_lock);
    size_t n = c->keys.n;
    memcpy(ret, c->keys.envd, n * CLUSTER_KEY_BYTES);
    pthread_mutex_unlock(&c->keys_lock);
    return n;
}

const char *
cluster_tls_ca(const Cluster *c)
{
    return c->cfg.tls_ca[0] ? c->cfg.tls_ca : NULL;
}

bool
cluster_insecure_hops(const Cluster *c)
{
    return c->cfg.insecure_hops;
}
