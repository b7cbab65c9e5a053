/* Who owns a session, and where a create goes, for the API's forwarding (issue 16: any
 * host answers for any session, and a create is placed on a host with an idle guest;
 * hostd/api/api_forward.c). Apart from cluster.h so the host-loss work on the same module
 * merges without touching the same lines. */
#pragma once

#include "cluster.h"
#include "cluster_keys.h"

typedef struct ClusterOwner {
    char tenant_id[64];
    char host_id[CLUSTER_HOST_ID_MAX_BYTES + 1];
    char url[CLUSTER_URL_MAX_BYTES + 1]; /* the owner's advertise_url ("" if it has no row) */
    bool ended;                          /* the index says the session ended */
    /* The owner runs these E2B faces (it published a cluster_e2b_url() form for each; a value
     * of another form is another host's and counts as none). */
    bool e2b_api, e2b_envd;
} ClusterOwner;

/* The session's tenant, owning host, its advertise_url, whether it ended and which E2B faces
 * the owner runs, from the index: one statement for the native and the E2B forwarding.
 * E_NOT_FOUND if the index has no such session (or a field read back is over its bound: the
 * row is treated as absent); E_UNAVAILABLE when the server is away. A blocking round trip:
 * the connection's thread. */
int cluster_session_owner(Cluster *c, const char *session_id, ClusterOwner *ret, Error **errp);

/* Publishes this host's E2B listeners: http://<advertise_url's host>:<port> (https:// when
 * tls: they serve TLS) for each port that is not 0, '' for 0 (none: a host restarted
 * without [e2b] takes back what an earlier run published). Other hosts read only whether a
 * face runs here (ClusterOwner.e2b_api, e2b_envd): their hops for it come to the host-to-host
 * listener. E_INVALID if advertise_url has no host to build them from. A blocking round
 * trip: the connection's thread. */
int cluster_e2b_publish(Cluster *c, unsigned api_port, unsigned envd_port, bool tls, Error **errp);

/* A heartbeat younger than this makes a host a place for a create: three beats (2 s each),
 * so one late beat does not take a host out, and never a host about to be declared lost
 * (the lease is at least 6 s). */
#define CLUSTER_PLACE_FRESH_USEC (6 * USEC_PER_SEC)

/* Another host for a create of `pool` (issue 16: "placed on a host with an idle guest of that
 * pool, prefer itself, then the least loaded"; the caller has seen that this host has no
 * idle guest of it). Candidates: every other host not lost, with a heartbeat younger than
 * CLUSTER_PLACE_FRESH_USEC, whose last heartbeat lists the pool. A host's idle guests are
 * estimated as the idle count of its last heartbeat (at most 2 s old) less the sessions the
 * index gave it since that beat, so a burst of creates does not all land on one guest.
 * need_idle: only hosts with an estimated idle guest; else (this host has no such pool) any
 * host with the pool, those with an idle guest first. Ranked by open sessions (fewest
 * first), then more idle guests, then id. The pools JSON is another host's: a value that is
 * not what heartbeats write counts as no idle guest. Returns 1 and fills ret->host_id and
 * ret->url (tenant_id ""); 0 when no host fits; -1 (E_UNAVAILABLE when the server is away).
 * A blocking round trip: the connection's thread. */
int cluster_place(Cluster *c, const char *pool, bool need_idle, ClusterOwner *ret, Error **errp);

/* This host's id. Fixed once cluster_open() returned: any thread may read it while the
 * Cluster lives. */
const char *cluster_host_id(const Cluster *c);

/* The host credential's keys (cluster_keys.h), for any thread while the Cluster lives; they
 * change only by cluster_reload_credential().
 * The value this host sends as X-Stockade-Host-Auth on a hop: the current secret's hop key
 * in hex (never the secret). */
void cluster_hop_credential(Cluster *c, char ret[CLUSTER_HOP_AUTH_HEX_BYTES + 1]);
/* Whether presented is the hop key of one of this host's secrets (current or the other one
 * of a rotation), compared in constant time. */
bool cluster_hop_credential_ok(Cluster *c, const char *presented);
/* The E2B envd token keys, current first, into ret; returns how many (1 or 2). */
size_t cluster_envd_keys(Cluster *c, uint8_t ret[CLUSTER_SECRETS_MAX][CLUSTER_KEY_BYTES]);

/* How hops reach other hosts ([cluster] tls_ca, insecure_hops): the CA file an https://
 * peer's certificate must chain to (NULL: the system's store), and whether an http:// peer
 * may be used at all (the hop's credential and bodies would cross the network in clear). */
const char *cluster_tls_ca(const Cluster *c);
bool cluster_insecure_hops(const Cluster *c);
