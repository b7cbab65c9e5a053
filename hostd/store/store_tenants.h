/* Tenants, API tokens, quotas and the guest-seconds ledger (schema version 2; removal: 5).
 *
 *   tenants       id, name (unique among live tenants), the creation-rate bucket (written by
 *                 admission), removed time (0 while live; a removed tenant's row stays for
 *                 the ledger and the records that name it, and its name is free again)
 *   tokens        id, tenant, SHA-256 of the token (never the token), admin flag, revoked time
 *   quotas        one row per tenant that has its own limits (else the configured defaults)
 *   reservations  the ledger: one per admitted session, append-only; it ends exactly once,
 *                 open -> charged | released (a trigger refuses a second end or a delete)
 *
 * Same threading rules as store.h: the loop thread's writer for every change; readers on
 * HTTP threads for token lookups and usage. Writes join the writer's open transaction
 * (store_begin); admission wraps its check and reserve in a savepoint so that a failure
 * undoes exactly its own rows and nothing of the batch around it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "admit.h"
#include "store.h"

#define STORE_TENANT_DEFAULT "default" /* sessions of unix-socket operators; made by the schema */
#define STORE_TENANT_NAME_MAX_BYTES 64

/* 1..STORE_TENANT_NAME_MAX_BYTES bytes of name[0..len), no NUL or control character: what
 * the API lets an operator name a tenant, and what a cluster's copy must hold. Pure. */
bool store_tenant_name_is_valid(const char *name, size_t len);

typedef struct TenantRecord {
    char id[STORE_ID_MAX_BYTES];
    char name[STORE_TENANT_NAME_MAX_BYTES + 1];
    int64_t created_usec;
    int64_t removed_usec; /* 0: live */
} TenantRecord;

typedef struct TokenRecord {
    char id[STORE_ID_MAX_BYTES];
    char tenant_id[STORE_ID_MAX_BYTES];
    uint8_t hash[SHA256_BYTES];
    bool admin;
    int64_t created_usec, revoked_usec; /* revoked_usec 0 = valid */
} TokenRecord;

typedef enum { RESERVATION_OPEN, RESERVATION_CHARGED, RESERVATION_RELEASED } ReservationState;

typedef struct ReservationRecord {
    int64_t id; /* ledger id, assigned by the store, never reused */
    char tenant_id[STORE_ID_MAX_BYTES];
    char session_id[STORE_ID_MAX_BYTES];
    uint64_t vcpus;
    uint64_t reserved_guest_s;
    uint64_t output_bytes, workspace_bytes; /* the session's caps, kept for a restart */
    ReservationState state;
    uint64_t charged_guest_s;
    int64_t created_usec, ended_usec;
} ReservationRecord;

const char *reservation_state_name(ReservationState st);

/* Savepoints nest inside the writer's transaction (open one with store_begin first). */
int store_savepoint(Store *s, Error **errp);
int store_savepoint_release(Store *s, Error **errp);
/* Undoes everything since store_savepoint and ends it. Best effort (returns nothing). */
void store_savepoint_rollback(Store *s);

/* E_CONFLICT if the id is taken, or the name by a live tenant. q (may be NULL) is written as
 * its quota row. t->removed_usec is written as given (a cluster's copy of a removed one). */
int store_tenant_insert(Store *s, const TenantRecord *t, const AdmitQuota *q, Error **errp);
/* Removed tenants too (removed_usec says so). E_NOT_FOUND for no such id. */
int store_tenant_get(Store *s, const char *id, TenantRecord *ret, Error **errp);
/* Every tenant, by name (removed ones only with with_removed). *ret is malloc'd (free()). */
int store_tenant_list(Store *s, bool with_removed, TenantRecord **ret, size_t *ret_n, Error **errp);
/* Removes a tenant: removed_usec set once (a second removal keeps the first time) and every
 * token of it not yet revoked revoked at now_usec (*ret_revoked: how many; may be NULL). Its
 * quota row, reservations and sessions stay. E_NOT_FOUND for no such tenant, E_CONFLICT for
 * the built-in one. Joins the writer's transaction (store_begin first). */
int store_tenant_remove(Store *s, const char *id, int64_t now_usec, size_t *ret_revoked,
                        Error **errp);

/* The tenant's quota row, or *defaults when it has none. E_NOT_FOUND for no such tenant. */
int store_quota_get(Store *s, const char *tenant_id, const AdmitQuota *defaults, AdmitQuota *ret,
                    Error **errp);
int store_quota_put(Store *s, const char *tenant_id, const AdmitQuota *q, Error **errp);

/* Open reservations, their sum, charged so far, and the bucket. E_NOT_FOUND: no tenant. */
int store_usage_get(Store *s, const char *tenant_id, AdmitUsage *ret, Error **errp);
int store_bucket_put(Store *s, const char *tenant_id, const AdmitBucket *b, Error **errp);
/* Reservations of a tenant by state (for the usage report). */
int store_reservation_counts(Store *s, const char *tenant_id, uint64_t ret[3], Error **errp);

/* Written as given, revoked_usec included (0 for a new token). */
int store_token_insert(Store *s, const TokenRecord *t, Error **errp);
/* The token with this hash (E_NOT_FOUND if none), compared in constant time after the
 * indexed lookup. Revoked tokens are returned too: the caller decides. */
int store_token_by_hash(Store *s, const uint8_t hash[SHA256_BYTES], TokenRecord *ret, Error **errp);
/* The same on a reader (any thread), for a caller's credentials: E_NOT_FOUND for an unknown
 * or a revoked token, or one of a removed tenant, alike (answer them the same), another
 * category when the store failed. */
int store_readers_live_token(StoreReaders *rd, const uint8_t hash[SHA256_BYTES], TokenRecord *ret,
                             Error **errp);
/* A caller's token as presented (NULL: none), the one lookup both HTTP faces use (the daemon
 * hands it to the HTTP layer as HttpConfig.authenticate): its shape (ADMIT_TOKEN_PREFIX and
 * 64 lowercase hex digits) is checked before anything else happens to it, then its hash is
 * looked up as store_readers_live_token() does. E_UNAUTHORIZED for a missing, malformed,
 * unknown or revoked token, or one of a removed tenant, alike; another category when the
 * store failed. The token is never stored, logged or echoed. */
int store_readers_credential(StoreReaders *rd, const char *token, TokenRecord *ret, Error **errp);
int store_token_get(Store *s, const char *id, TokenRecord *ret, Error **errp);
/* Tokens of a tenant (NULL = admin tokens of every tenant are not special: all of them),
 * oldest first. *ret is malloc'd. */
int store_token_list(Store *s, const char *tenant_id, TokenRecord **ret, size_t *ret_n,
                     Error **errp);
/* Sets revoked_usec once (a second revoke keeps the first time). E_NOT_FOUND if absent. */
int store_token_revoke(Store *s, const char *id, int64_t now_usec, Error **errp);

/* Appends an open reservation; r->id gets the ledger id. E_CONFLICT if the session already
 * has one. */
int store_reservation_insert(Store *s, ReservationRecord *r, Error **errp);
/* The reservation of a session (any state). E_NOT_FOUND if it has none. */
int store_reservation_for_session(Store *s, const char *session_id, ReservationRecord *ret,
                                  Error **errp);
/* Ends an open reservation: state charged or released, the amount charged, the time.
 * E_CONFLICT if it is not open (it ended already: exactly once). */
int store_reservation_end(Store *s, int64_t id, ReservationState state, uint64_t charged_guest_s,
                          int64_t ended_usec, Error **errp);
/* Every open reservation, oldest first (restart reconciliation). *ret is malloc'd. */
int store_reservations_open(Store *s, ReservationRecord **ret, size_t *ret_n, Error **errp);
