/* Who is asking: bearer tokens to tenants (connection threads), operators acting for a
 * tenant, and the issue of new tokens (loop thread).
 *
 * A presented token goes to the HTTP layer's authenticator (http_authenticate(): the one
 * lookup both faces use, store_readers_credential(): the exact shape "e2b_" (or the earlier
 * "stk_") + 64 hex digits before anything else happens to it, then its SHA-256, compared again in
 * constant time). The token itself is never stored, logged or echoed. Every failure answers the
 * same 401 text, so a caller cannot tell a revoked token from an unknown one. */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "api_internal.h"
#include "timeutil.h"

#define AUTH_FAILED_MESSAGE                                                                        \
    "missing, malformed, unknown or revoked API token "                                            \
    "(Authorization: Bearer e2b_...)"

static int
auth_token(ApiCtx *c, Error **errp)
{
    const char *token = admit_bearer_token(http_header(c->req, "Authorization"));
    _cleanup_error_ Error *err = NULL;
    HttpIdentity id;

    if (http_authenticate(c->req, token, &id, &err) < 0)
        return err->category == E_UNAUTHORIZED /* else the lookup failed: not the caller's */
                   ? error_set(errp, E_UNAUTHORIZED, 0, AUTH_FAILED_MESSAGE)
                   : error_set(errp, err->category, 0, "%s", err->message);
    snprintf(c->tenant, sizeof(c->tenant), "%.*s", (int) sizeof(c->tenant) - 1, id.tenant);
    c->admin = id.admin;
    return 0;
}

/* X-Stockade-Tenant: an operator acts for that tenant; a tenant may only name itself. */
static int
auth_acting(ApiCtx *c, const char *as, Error **errp)
{
    TenantRecord t;
    if (!c->admin) {
        if (strcmp(as, c->tenant) != 0)
            return error_set(errp, E_FORBIDDEN, 0, API_TENANT_HEADER " is for operators");
        return 0;
    }
    if (strlen(as) >= STORE_ID_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, API_TENANT_HEADER " names no tenant");
    Store *s = store_reader_acquire(c->api->d.readers);
    int r = store_tenant_get(s, as, &t, NULL);
    store_reader_release(c->api->d.readers, s);
    if (r < 0)
        return error_set(errp, E_INVALID, 0, API_TENANT_HEADER " names no tenant");
    snprintf(c->tenant, sizeof(c->tenant), "%s", t.id);
    c->acting = true;
    return 0;
}

int
api_authenticate(ApiCtx *c, Error **errp)
{
    const char *as = http_header(c->req, API_TENANT_HEADER);
    int fwd = api_forward_identify(c, errp); /* another host's, checked before any token */

    if (fwd != 0)
        return fwd < 0 ? -1 : 0;
    if (http_peer_is_unix(c->req)) { /* the socket's file mode decides who gets here */
        snprintf(c->tenant, sizeof(c->tenant), "%s", API_TENANT_DEFAULT);
        c->admin = true;
    } else if (auth_token(c, errp) < 0) {
        return -1;
    }
    return as ? auth_acting(c, as, errp) : 0;
}

json_t *
api_refusal_json(const AdmitRefusal *r)
{
    json_t *o = json_pack("{s:s,s:I,s:I,s:I}", "quota", admit_limit_name(r->limit_id), "limit",
                          (json_int_t) r->limit, "used", (json_int_t) r->used, "requested",
                          (json_int_t) r->requested);
    json_object_set_new(o, "retry_after",
                        r->retry_after_s == ADMIT_RETRY_NEVER
                            ? json_null()
                            : json_integer((json_int_t) r->retry_after_s));
    return o;
}

int
api_token_mint(const char *tenant_id, bool admin, char ret_token[ADMIT_TOKEN_TEXT_BYTES],
               TokenRecord *ret, Error **errp)
{
    uint8_t secret[ADMIT_TOKEN_RANDOM_BYTES], idr[ADMIT_ID_RANDOM_CHARS];
    char id[ADMIT_ID_BYTES];
    TokenRecord t = {.admin = admin, .created_usec = (int64_t) wall_usec()};

    if (getrandom(secret, sizeof(secret), 0) != (ssize_t) sizeof(secret) ||
        getrandom(idr, sizeof(idr), 0) != (ssize_t) sizeof(idr))
        return error_set(errp, E_INTERNAL, errno, "getrandom");
    admit_token_format(secret, ret_token);
    explicit_bzero(secret, sizeof(secret));
    admit_id_format(API_TOKEN_ID_PREFIX, idr, id);
    snprintf(t.id, sizeof(t.id), "%s", id);
    snprintf(t.tenant_id, sizeof(t.tenant_id), "%s", tenant_id);
    admit_token_hash(ret_token, t.hash);
    *ret = t;
    return 0;
}

int
api_token_issue(Store *store, const char *tenant_id, bool admin,
                char ret_token[ADMIT_TOKEN_TEXT_BYTES], TokenRecord *ret, Error **errp)
{
    char token[ADMIT_TOKEN_TEXT_BYTES];
    TokenRecord t;

    if (api_token_mint(tenant_id, admin, token, &t, errp) < 0)
        return -1;
    if (store_begin(store, errp) < 0 || store_token_insert(store, &t, errp) < 0 ||
        store_commit(store, errp) < 0) {
        (void) store_commit(store, NULL); /* end the transaction: it holds the write lock */
        explicit_bzero(token, sizeof(token));
        return -1;
    }
    memcpy(ret_token, token, sizeof(token));
    explicit_bzero(token, sizeof(token));
    if (ret)
        *ret = t;
    return 0;
}
