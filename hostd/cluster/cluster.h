/* Cluster mode (issue 16): many hosts, one PostgreSQL, one set of quotas.
 *
 * The only module that speaks to PostgreSQL (libpq). Without a [cluster] section none of it
 * runs and the single host keeps its SQLite ledger exactly as before. With it, PostgreSQL is
 * the single source of truth for what must be exact across hosts: the tenants' quota rows,
 * the reservation ledger and its rate buckets, a session index (which host owns which
 * session), the hosts themselves, and the tenants and tokens (each host authenticates with
 * its own copy, pulled from here). Events, artifacts and guests stay on the owning host.
 *
 * Threading: a Cluster is one connection, owned by one thread (the loop thread): every call
 * is a blocking round trip to the server. A call that finds the connection broken resets it
 * once; if the server is still away it fails with E_UNAVAILABLE (HTTP 503) and changes
 * nothing, so a caller may simply retry later. No call waits longer than
 * CLUSTER_ANSWER_TIMEOUT_USEC for an answer, nor than connect_timeout for a reconnect
 * (cluster_open's migrations excepted): a server that hangs costs E_UNAVAILABLE, not a
 * stalled loop.
 *
 * Admission is exact across hosts: cluster_admit() is one transaction that locks the
 * tenant's row (SELECT ... FOR UPDATE) before it reads the usage, runs the pure decision of
 * hostd/admit and appends the reservation, so concurrent creates on any number of hosts are
 * serialised per tenant by the database. The ledger has the SQLite store's rules: rows are
 * never deleted and each reservation ends exactly once (triggers refuse anything else). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "admit.h"
#include "cluster_config.h"
#include "error.h"
#include "store_tenants.h"
#include "timeutil.h"

/* The longest the loop thread waits for the answer to one statement. A server that is
 * frozen (SIGSTOP, a hung host: its kernel still takes our bytes) or behind a network that
 * drops packets never answers, and TCP gives up only after minutes: meanwhile the daemon's
 * loop (API answers, streams, heartbeats) would stand still. Past it the connection is cut
 * (its transaction lost: the server rolls it back), the call fails E_UNAVAILABLE and the
 * next call reconnects. 5 s: every statement here is one step of a short transaction
 * (milliseconds); an admission waiting at its tenant's row lock behind 100 concurrent creates
 * waits far less (README.md, "Bounds"). */
#define CLUSTER_ANSWER_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* The server's own bound on a statement (statement_timeout, sent at connect), under the
 * client's: a statement that is slow on a live server (a lock held elsewhere) fails cleanly
 * on a connection that stays usable, and one whose client gave up at its bound does not go
 * on holding locks that every other host's admissions queue behind. */
#define CLUSTER_STATEMENT_TIMEOUT_MS 4000

typedef struct Cluster Cluster;

/* Connects, migrates the schema (once per cluster: under an advisory lock, safe when
 * several hosts start at once) and registers this host (upsert of its hosts row, heartbeat
 * now). E_UNAVAILABLE when the server cannot be reached; E_INVALID for a bad conninfo. */
int cluster_open(const ClusterConfig *cfg, Cluster **ret, Error **errp);
void cluster_free(Cluster *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Cluster, cluster_free)
/* Reads host_token_file again (SIGHUP: a rotation step, hostd/cluster/README.md) and
 * replaces the keys every thread uses from then on; when the file is refused (E_INVALID
 * naming it and why) the keys in use stay. No database round trip; any thread. */
int cluster_reload_credential(Cluster *c, Error **errp);
#define _cleanup_cluster_ _cleanup_(cluster_freep)

/* The schema version the database is at, and the one this build migrates to. */
int cluster_schema_version(Cluster *c, int *ret, Error **errp);
int cluster_schema_latest(void);
/* Runs the migrations this database lacks (also done by cluster_open). Idempotent. */
int cluster_migrate(Cluster *c, Error **errp);

/* One admission, in one transaction with the tenant's row locked: the tenant's row is made
 * if the cluster has not seen it (its quota row, if any, wins over *fallback), the pure
 * decision runs on the ledger's usage at now_usec, and if admitted the reservation (*res:
 * tenant_id, session_id, vcpus, output/workspace caps filled in by the caller; the reserved
 * amount, id and state by this call) and the session's index row (owned by this host) are
 * written and the bucket updated. *ret is always the decision; a refusal writes nothing and
 * returns 0. -1 only on a database error (nothing written). output_cap_bytes bounds the
 * quota's output_bytes (the host's own output limit). */
int cluster_admit(Cluster *c, const AdmitQuota *fallback, const AdmitRequest *rq,
                  uint64_t output_cap_bytes, int64_t now_usec, ReservationRecord *res,
                  AdmitDecision *ret, Error **errp);
/* The reservation of a session (any state). E_NOT_FOUND if none. */
int cluster_reservation_for_session(Cluster *c, const char *session_id, ReservationRecord *ret,
                                    Error **errp);
/* Ends an open reservation (charged or released) and marks its session ended in the index,
 * in one transaction. E_CONFLICT if it ended already (exactly once). */
int cluster_reservation_end(Cluster *c, int64_t id, ReservationState state,
                            uint64_t charged_guest_s, int64_t ended_usec, Error **errp);
/* Open reservations of sessions this host owns, oldest first. *ret is malloc'd. */
int cluster_reservations_open(Cluster *c, ReservationRecord **ret, size_t *ret_n, Error **errp);
/* The tenant's quota in the cluster (its row), E_NOT_FOUND if it has none. */
int cluster_quota_get(Cluster *c, const char *tenant_id, AdmitQuota *ret, Error **errp);
/* Writes the tenant's quota row (making the tenant's row if the cluster has not seen it):
 * from the next admission on, every host uses it. */
int cluster_quota_put(Cluster *c, const char *tenant_id, const AdmitQuota *q, int64_t now_usec,
                      Error **errp);

/* ------------------------------------------------------------------ tenants and tokens
 * (cluster_tenancy.c). The cluster's tenants and tokens; each host keeps a copy in its store
 * (hostd/store/store_sync.h) for authentication, pulled by cluster_tenancy_pull. Every write
 * is one transaction that holds CLUSTER_TENANCY_LOCK_KEY and numbers each row it changes
 * (migration 2): the numbers commit in order, so a pull of "everything after N" never misses
 * a change. E_UNAVAILABLE when the server is away (nothing written). */

#define CLUSTER_TENANCY_PULL_MAX_ROWS 512 /* rows of one pull; more: pull again */

/* A new tenant, its quota row (q) and its first token, together. E_CONFLICT: the name (or
 * an id) is taken. */
int cluster_tenant_create(Cluster *c, const TenantRecord *t, const AdmitQuota *q,
                          const TokenRecord *tok, Error **errp);
/* A new token of an existing tenant (tenant: this host's record of it, published with the
 * token if the cluster only knew it from its ledger rows). E_CONFLICT if the cluster has the
 * tenant removed (this host's copy may not know yet). */
int cluster_token_insert(Cluster *c, const TenantRecord *tenant, const TokenRecord *tok,
                         Error **errp);
/* Revokes a token once (a second revoke keeps the first time); *ret gets the cluster's
 * record of it (its hash left zero). E_NOT_FOUND if the cluster has no such token (one this
 * host made before it joined a cluster: it exists here only). */
int cluster_token_revoke(Cluster *c, const char *id, int64_t now_usec, TokenRecord *ret,
                         Error **errp);

/* Removing a tenant (DELETE /v1/admin/tenants/{id}), one transaction with the tenant's row
 * locked, the lock admission takes: no admission of it slips in between the count and the
 * removal, on any host. open_sessions counts its open reservations in the cluster's ledger
 * (sessions not ended, on every host). With some open and !with_open nothing changes
 * (*removed false); else the tenant is marked removed (the first time stays) and its tokens
 * not yet revoked are revoked, each numbered for the pull: every host drops them. */
typedef struct ClusterTenantRemoval {
    bool removed;
    uint64_t open_sessions;
    size_t tokens_revoked;
    TenantRecord tenant; /* as the cluster has it, removed_usec included */
} ClusterTenantRemoval;
/* E_NOT_FOUND if the cluster has no such tenant (one this host made before it joined a
 * cluster), E_CONFLICT for the built-in one. */
int cluster_tenant_remove(Cluster *c, const char *id, int64_t now_usec, bool with_open,
                          ClusterTenantRemoval *ret, Error **errp);

typedef struct ClusterTenancy {
    TenantRecord *tenants; /* malloc'd: cluster_tenancy_clear() */
    size_t n_tenants;
    TokenRecord *tokens;
    size_t n_tokens;
    size_t n_invalid; /* rows over the store's bounds (a too long id or name, a bad hash) */
    int64_t last_seq; /* the change number to pull after next time */
    bool more;        /* CLUSTER_TENANCY_PULL_MAX_ROWS came: pull again */
    bool rewound;     /* the database's numbers went back (a restore): last_seq is 0 */
} ClusterTenancy;

/* The tenants and tokens changed after after_seq, in change order, one snapshot. Fields are
 * bounded to the store's sizes here; their forms are checked by store_sync. */
int cluster_tenancy_pull(Cluster *c, int64_t after_seq, ClusterTenancy *ret, Error **errp);
void cluster_tenancy_clear(ClusterTenancy *t);

/* ------------------------------------------------------------------ hosts (cluster_hosts.c) */

#define CLUSTER_POOLS_JSON_MAX_BYTES (64 * 1024) /* a host's pools row, as JSON text */
#define CLUSTER_ACCEL_MAX_BYTES 15

typedef struct ClusterHost {
    char id[CLUSTER_HOST_ID_MAX_BYTES + 1];
    char url[CLUSTER_URL_MAX_BYTES + 1];
    char accel[CLUSTER_ACCEL_MAX_BYTES + 1];
    int64_t started_usec;
    int64_t heartbeat_age_usec; /* by the database's clock: no two hosts' clocks compared */
    int64_t lost_usec;          /* when another host took it over (database's clock); 0 live */
    char lost_by[CLUSTER_HOST_ID_MAX_BYTES + 1];
    uint64_t open_sessions; /* in the index, not ended, owned by this host */
    char *pools_json;       /* the pools as the host last wrote them (a JSON array) */
} ClusterHost;

/* This host is alive: heartbeat now (the database's clock), its accel and its pools (a JSON
 * array, at most CLUSTER_POOLS_JSON_MAX_BYTES). E_CONFLICT: another host has declared this
 * one lost (cluster_takeover) and ended its sessions; the caller ends its own records of
 * them (host_lost) and calls cluster_rejoin(). */
int cluster_heartbeat(Cluster *c, const char *accel, const char *pools_json, Error **errp);
/* Every host of the cluster, by id. *ret is malloc'd: cluster_hosts_free(). */
int cluster_hosts_list(Cluster *c, ClusterHost **ret, size_t *ret_n, Error **errp);
void cluster_hosts_free(ClusterHost *v, size_t n);

/* ------------------------------------------------------------------ a host that dies
 * (cluster_takeover.c). A host whose heartbeat is older than the lease by the database's
 * clock is taken over by one other host: its open sessions end host_lost in the index, their
 * reservations are charged up to its last heartbeat, and its row is marked lost. */

#define CLUSTER_TAKEOVER_MAX_SESSIONS 64 /* sessions one call ends; more: the next call */

typedef struct ClusterTakeover {
    char host_id[CLUSTER_HOST_ID_MAX_BYTES + 1]; /* "" = nothing to take over */
    int64_t heartbeat_usec; /* its last heartbeat: what its reservations are charged to */
    int64_t age_usec;       /* how old that heartbeat was, by the database's clock */
    size_t n_ended;         /* index rows ended host_lost by this call */
    size_t n_settled;       /* reservations ended by this call (each exactly once) */
} ClusterTakeover;

/* One bounded takeover, in one transaction: the stalest host past its lease (row locked
 * FOR UPDATE SKIP LOCKED, so of several hosts calling at once one gets it and the others
 * find nothing), up to CLUSTER_TAKEOVER_MAX_SESSIONS of its sessions. Only a host whose own
 * heartbeat is fresh and has had no gap for a whole lease takes over (a database that was
 * away makes everyone stale at once: nobody is taken over until the live hosts have beaten
 * again). *ret->host_id is "" when there was nothing to do. */
int cluster_takeover(Cluster *c, ClusterTakeover *ret, Error **errp);
/* True if the cluster's index says another host ended this session as host_lost. */
int cluster_session_lost(Cluster *c, const char *session_id, bool *ret, Error **errp);
/* This host is live again (after cluster_heartbeat said E_CONFLICT): its row unmarked,
 * started now. */
int cluster_rejoin(Cluster *c, Error **errp);
/* The lease in microseconds ([cluster] lease_s, else the default). */
int64_t cluster_lease_usec(const Cluster *c);
