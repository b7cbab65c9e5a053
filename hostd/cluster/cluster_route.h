/* Who owns a session, for the API's forwarding (issue 16: any host answers for any
 * session; hostd/api/api_forward.c). Apart from cluster.h so the host-loss work on the
 * same module merges without touching the same lines. */
#pragma once

#include "cluster.h"

typedef struct ClusterOwner {
    char tenant_id[64];
    char host_id[CLUSTER_HOST_ID_MAX_BYTES + 1];
    char url[CLUSTER_URL_MAX_BYTES + 1]; /* the owner's advertise_url ("" if it has no row) */
} ClusterOwner;

/* The session's tenant and owning host, from the index. E_NOT_FOUND if the index has no
 * such session (or a field read back is over its bound: the row is treated as absent);
 * E_UNAVAILABLE when the server is away. A blocking round trip: the connection's thread. */
int cluster_session_owner(Cluster *c, const char *session_id, ClusterOwner *ret, Error **errp);

/* This host's id and its host-to-host credential (host_token_file). Fixed once
 * cluster_open() returned: any thread may read them while the Cluster lives. */
const char *cluster_host_id(const Cluster *c);
const char *cluster_host_token(const Cluster *c);
