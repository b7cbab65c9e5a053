/* This host's copy of the cluster's tenants and tokens: the checks, the merge decision (pure)
 * and its application to the writer. See store_sync.h. */
#include <string.h>

#include "store_sync.h"

bool
store_sync_tenant_id_is_valid(const char *id)
{
    return strcmp(id, STORE_TENANT_DEFAULT) == 0 || admit_id_is_valid(ADMIT_TENANT_ID_PREFIX, id);
}

bool
store_tenant_name_is_valid(const char *name, size_t len)
{
    if (len == 0 || len > STORE_TENANT_NAME_MAX_BYTES || strnlen(name, len + 1) != len)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char) name[i] < 0x20 || name[i] == 0x7f)
            return false;
    return true;
}

static bool
tenant_is_valid(const TenantRecord *t)
{
    return memchr(t->id, '\0', sizeof(t->id)) && memchr(t->name, '\0', sizeof(t->name)) &&
           store_sync_tenant_id_is_valid(t->id) &&
           store_tenant_name_is_valid(t->name, strlen(t->name)) && t->created_usec >= 0 &&
           t->removed_usec >= 0 &&
           (t->removed_usec == 0 || strcmp(t->id, STORE_TENANT_DEFAULT) != 0);
}

static bool
token_is_valid(const TokenRecord *t)
{
    return memchr(t->id, '\0', sizeof(t->id)) && memchr(t->tenant_id, '\0', sizeof(t->tenant_id)) &&
           admit_id_is_valid(ADMIT_TOKEN_ID_PREFIX, t->id) &&
           store_sync_tenant_id_is_valid(t->tenant_id) && t->created_usec >= 0 &&
           t->revoked_usec >= 0;
}

StoreSyncAction
store_sync_decide_tenant(const TenantRecord *local, const TenantRecord *remote)
{
    if (!tenant_is_valid(remote))
        return STORE_SYNC_INVALID;
    if (!local)
        return STORE_SYNC_INSERT;
    if (strcmp(local->name, remote->name) != 0)
        return STORE_SYNC_CONFLICT;
    /* Removal is one way, as revocation: removed here stays removed. */
    return remote->removed_usec != 0 && local->removed_usec == 0 ? STORE_SYNC_REMOVE
                                                                 : STORE_SYNC_SAME;
}

StoreSyncAction
store_sync_decide_token(const TokenRecord *local, const TokenRecord *remote)
{
    if (!token_is_valid(remote))
        return STORE_SYNC_INVALID;
    if (!local)
        return STORE_SYNC_INSERT;
    if (strcmp(local->tenant_id, remote->tenant_id) != 0 ||
        !admit_token_hash_equal(local->hash, remote->hash) || local->admin != remote->admin)
        return STORE_SYNC_CONFLICT;
    /* Revocation is one way: revoked here stays revoked, whatever the cluster says. */
    return remote->revoked_usec != 0 && local->revoked_usec == 0 ? STORE_SYNC_REVOKE
                                                                 : STORE_SYNC_SAME;
}

/* A statement the store refused for what it holds (a taken name, a tenant it lacks) is a
 * conflict to count; any other failure is the store's and ends the batch. */
static int
count_refusal(Error *err, StoreSyncCounts *n, Error **errp)
{
    if (err->category != E_CONFLICT)
        return error_set(errp, err->category, 0, "%s", err->message);
    n->conflicts++;
    return 0;
}

/* *ret_have: the local lookup (returning r, failing with err) found the record; its
 * E_NOT_FOUND means none, any other failure is the store's. */
static int
local_lookup(int r, const Error *err, bool *ret_have, Error **errp)
{
    *ret_have = r == 0;
    if (r < 0 && err->category != E_NOT_FOUND)
        return error_set(errp, err->category, 0, "%s", err->message);
    return 0;
}

/* Counts a decision that writes nothing and returns true; false for one that writes. */
static bool
skipped(StoreSyncAction a, StoreSyncCounts *n)
{
    n->invalid += a == STORE_SYNC_INVALID;
    n->conflicts += a == STORE_SYNC_CONFLICT;
    return a != STORE_SYNC_INSERT && a != STORE_SYNC_REVOKE && a != STORE_SYNC_REMOVE;
}

static int
apply_tenant(Store *s, const TenantRecord *remote, StoreSyncCounts *n, Error **errp)
{
    _cleanup_error_ Error *err = NULL, *refused = NULL;
    TenantRecord local;
    bool have;
    int r = store_tenant_get(s, remote->id, &local, &err);
    if (local_lookup(r, err, &have, errp) < 0)
        return -1;
    StoreSyncAction a = store_sync_decide_tenant(have ? &local : NULL, remote);
    if (skipped(a, n))
        return 0;
    if (a == STORE_SYNC_REMOVE) { /* its tokens with it: they come revoked too, later */
        if (store_tenant_remove(s, remote->id, remote->removed_usec, NULL, errp) < 0)
            return -1;
        n->removed++;
        return 0;
    }
    if (store_tenant_insert(s, remote, NULL, &refused) < 0)
        return count_refusal(refused, n, errp);
    n->inserted++;
    return 0;
}

static int
apply_token(Store *s, const TokenRecord *remote, StoreSyncCounts *n, Error **errp)
{
    _cleanup_error_ Error *err = NULL, *refused = NULL;
    TokenRecord local;
    bool have;
    int r = store_token_get(s, remote->id, &local, &err);
    if (local_lookup(r, err, &have, errp) < 0)
        return -1;
    StoreSyncAction a = store_sync_decide_token(have ? &local : NULL, remote);
    if (skipped(a, n))
        return 0;
    if (a == STORE_SYNC_REVOKE) {
        if (store_token_revoke(s, remote->id, remote->revoked_usec, errp) < 0)
            return -1;
        n->revoked++;
        return 0;
    }
    if (store_token_insert(s, remote, &refused) < 0) /* with its revocation time, if any */
        return count_refusal(refused, n, errp);
    n->inserted++;
    return 0;
}

int
store_sync_apply(Store *s, const TenantRecord *tenants, size_t n_tenants, const TokenRecord *tokens,
                 size_t n_tokens, StoreSyncCounts *ret, Error **errp)
{
    StoreSyncCounts n = {0};
    int r = 0;
    if (store_savepoint(s, errp) < 0) {
        (void) store_commit(s, NULL); /* ends the transaction store_begin may have opened */
        return -1;
    }
    for (size_t i = 0; r == 0 && i < n_tenants; i++)
        r = apply_tenant(s, &tenants[i], &n, errp);
    for (size_t i = 0; r == 0 && i < n_tokens; i++)
        r = apply_token(s, &tokens[i], &n, errp);
    if (r == 0 && store_savepoint_release(s, errp) < 0)
        r = -1;
    if (r < 0)
        store_savepoint_rollback(s);
    int committed = store_commit(s, r < 0 ? NULL : errp); /* the first error wins */
    if (r < 0 || committed < 0)
        return -1;
    *ret = n;
    return 0;
}
