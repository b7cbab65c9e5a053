/* Cluster mode (issue 16): this host's copy of the cluster's tenants and tokens.
 *
 * PostgreSQL holds the cluster's tenants and tokens; every host keeps them in its own store
 * so that authentication stays a local indexed read on the HTTP threads. The daemon pulls
 * what changed (hostd/cluster) and hands it here. What comes from the cluster's database is
 * not trusted: each record is checked with the rules the API's own writes obey (id forms, a
 * name of text, times >= 0) and a record that fails them is skipped, never stored.
 *
 * Merge rules (store_sync_decide_*, pure):
 *   - a record this host lacks is inserted (a token with its revocation time, if any);
 *   - a token revoked in the cluster is revoked here, at the cluster's time; a revocation is
 *     never undone (a token revoked here stays revoked whatever the cluster says);
 *   - a tenant removed in the cluster is removed here, at the cluster's time, its tokens
 *     revoked with it; a removal is never undone either (a removed tenant is inserted as
 *     removed);
 *   - a record that disagrees with the local one on what never changes (a token's tenant or
 *     hash, a tenant's name) is a conflict: skipped, counted, never overwritten;
 *   - a tenant whose name another local tenant has is a conflict too (the insert is refused
 *     by the store's unique name). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "store_tenants.h"

typedef enum {
    STORE_SYNC_SAME,    /* nothing to do */
    STORE_SYNC_INSERT,  /* this host lacks it */
    STORE_SYNC_REVOKE,  /* revoked in the cluster, valid here: revoke at the cluster's time */
    STORE_SYNC_REMOVE,  /* a tenant removed in the cluster, live here: remove it likewise */
    STORE_SYNC_INVALID, /* the record breaks the store's rules: skipped */
    STORE_SYNC_CONFLICT /* it contradicts the local record: skipped */
} StoreSyncAction;

typedef struct StoreSyncCounts {
    size_t inserted, revoked, removed, invalid, conflicts;
} StoreSyncCounts;

/* True for "default" or an id of the tenant form (ADMIT_TENANT_ID_PREFIX + base32). */
bool store_sync_tenant_id_is_valid(const char *id);
/* The decision for one record from the cluster; local is NULL when this host has none.
 * Pure. */
StoreSyncAction store_sync_decide_tenant(const TenantRecord *local, const TenantRecord *remote);
StoreSyncAction store_sync_decide_token(const TokenRecord *local, const TokenRecord *remote);

/* Applies the cluster's records to the writer, tenants first, in one transaction. Skipped
 * records (invalid, conflicts) are counted in *ret and do not fail the call; a store error
 * does (nothing of the batch is kept) and the caller pulls the same changes again later. */
int store_sync_apply(Store *s, const TenantRecord *tenants, size_t n_tenants,
                     const TokenRecord *tokens, size_t n_tokens, StoreSyncCounts *ret,
                     Error **errp);
