/* GET /v1/admin/hosts (issue 16): the hosts of this host's cluster, from the cluster's
 * database, with each one's heartbeat age (by the database's clock), pools and open
 * sessions, and the lease they are judged by (lease_ms: `stockade doctor` compares the ages
 * with it, so it must be this cluster's [cluster] lease_s, not a default).
 * The cluster's connection belongs to the loop thread, so the read runs there. A host
 * without [cluster] answers 404 saying so. */
#include <string.h>

#include "api_internal.h"
#include "render.h"

/* A pools row as the host wrote it; anything but a JSON array is shown as none (the
 * database is another host's word, not ours). */
static json_t *
host_pools(const char *text)
{
    json_t *v = json_loadb(text, strlen(text), JSON_REJECT_DUPLICATES, NULL);
    if (json_is_array(v))
        return v;
    json_decref(v);
    return json_array();
}

static void
hosts_on_loop(ApiCtx *c)
{
    _cleanup_error_ Error *err = NULL;
    ClusterHost *v = NULL;
    size_t n = 0;
    if (cluster_hosts_list(c->api->d.cluster, &v, &n, &err) < 0) {
        api_reply_error(c, err);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_pack(
            "{s:s,s:s,s:s,s:I,s:I,s:o}", "id", v[i].id, "url", v[i].url, "accel", v[i].accel,
            "heartbeat_age_ms", (json_int_t) (v[i].heartbeat_age_usec / 1000), "sessions",
            (json_int_t) v[i].open_sessions, "pools", host_pools(v[i].pools_json));
        char ts[40];
        render_time(v[i].started_usec, ts, sizeof(ts));
        json_object_set_new(o, "started_at", json_string(ts));
        /* lost: another host took its sessions over (cluster_takeover); no place for work */
        json_object_set_new(o, "state", json_string(v[i].lost_usec ? "lost" : "live"));
        if (v[i].lost_usec) {
            render_time(v[i].lost_usec, ts, sizeof(ts));
            json_object_set_new(o, "lost_at", json_string(ts));
            json_object_set_new(o, "lost_by", json_string(v[i].lost_by));
        }
        json_array_append_new(arr, o);
    }
    cluster_hosts_free(v, n);
    api_reply_json(c, 200,
                   json_pack("{s:o,s:I}", "hosts", arr, "lease_ms",
                             (json_int_t) (cluster_lease_usec(c->api->d.cluster) / 1000)));
}

void
route_admin_hosts(ApiCtx *c)
{
    if (!c->api->d.cluster) {
        _cleanup_error_ Error *err = NULL;
        error_set(&err, E_NOT_FOUND, 0, "this host is not in a cluster ([cluster] is not set)");
        api_reply_error(c, err);
        return;
    }
    api_on_loop(c, hosts_on_loop);
}
