/* Cluster mode (README.md, "Cluster"): any host's E2B faces answer for any sandbox of the
 * cluster. A request naming a sandbox this host's store does not hold (as its caller may see
 * it) is looked up in the cluster's session index (E2bDeps.owner: on the connection thread,
 * on the API's lookup connection and cache, never the loop's) and then carried unchanged to
 * the owner's host-to-host listener for that face (E2bDeps.forward: the native API's hop,
 * hostd/api/api_forward_hop.c), which hands it to its own face and answers it as if it had
 * come there: the owner authenticates X-API-KEY (tokens are the cluster's), X-Access-Token
 * and E2B-Traffic-Access-Token (the sandbox's token is the owner's) itself, so the hop's
 * credential (the hop key, never the host secret) opens the listener and nothing else: a
 * forged request gains nothing. The control plane checks the key's tenant against the index
 * first: another tenant's sandbox is 404 here as an unknown one. Never twice: a request that
 * came as a hop is answered here, and a row naming this host is an unknown sandbox. */
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <string.h>

#include "e2b_internal.h"
#include "sha256.h" /* hex_encode() only: the HMAC is GnuTLS's */

#define ENVD_TOKEN_CONTEXT "stockade-e2b-envd-v1:"

/* The client's headers the owner needs to answer as it would directly; everything else
 * (cookies, proxies' headers, Accept-Encoding: the hop asks for no compression) stays. */
static const char *const pass_headers[] = {
    E2B_API_KEY_HEADER,
    E2B_ACCESS_TOKEN_HEADER,
    E2B_TRAFFIC_TOKEN_HEADER,
    E2B_SANDBOX_ID_HEADER,
    E2B_SANDBOX_PORT_HEADER,
    "Host",
    "Authorization",
    "Content-Encoding",
    "Connect-Protocol-Version",
    "Connect-Timeout-Ms",
    "Connect-Content-Encoding",
    "Keepalive-Ping-Interval",
    NULL,
};

/* Whether this host's store holds the sandbox's session (tenant's, when given). */
static bool
sandbox_is_here(E2b *e, const char *sid, const char *tenant)
{
    SessionRecord rec;
    Store *s = store_reader_acquire(e->d.readers);
    int r = store_session_get(s, sid, &rec, NULL);
    store_reader_release(e->d.readers, s);
    if (r < 0)
        return false;
    bool here = !tenant || strcmp(rec.tenant_id, tenant) == 0;
    session_record_clear(&rec);
    return here;
}

int
e2b_elsewhere(E2b *e, HttpRequest *req, const char *id, const char *tenant, bool envd,
              E2bRemote *ret, Error **errp)
{
    _cleanup_error_ Error *err = NULL;
    char sid[E2B_SESSION_ID_BYTES], scope[64];
    E2bOwner o = {0};

    if (!e->d.owner || http_request_from_peer(req) || !e2b_sandbox_id_is_valid(id))
        return 0;
    e2b_session_id_from_sandbox(id, sid);
    if (sandbox_is_here(e, sid, tenant))
        return 0;
    /* envd: the caller holds this sandbox's token, so it may know where it lives; its
     * lookups are its own, apart from every tenant's. */
    snprintf(scope, sizeof(scope), "%s%s", tenant ? "" : "sbx:", tenant ? tenant : id);
    if (e->d.owner(e->d.cluster_userdata, scope, sid, &o, &err) < 0)
        return err->category == E_NOT_FOUND ? 0
                                            : error_set(errp, err->category, 0, "%s", err->message);
    if (!e2b_forward_target(o.tenant, o.here, o.ended, envd ? o.envd_face : o.api_face, tenant))
        return 0;
    *ret = (E2bRemote){.envd = envd};
    snprintf(ret->host_id, sizeof(ret->host_id), "%s", o.host_id);
    snprintf(ret->url, sizeof(ret->url), "%s", o.url);
    snprintf(ret->tenant, sizeof(ret->tenant), "%s", o.tenant);
    return 1;
}

int
e2b_envd_token_for(const uint8_t key[E2B_ENVD_KEY_BYTES], const char *sandbox_id,
                   char token[E2B_TOKEN_BYTES], Error **errp)
{
    char msg[sizeof(ENVD_TOKEN_CONTEXT) + E2B_SANDBOX_ID_BYTES];
    uint8_t mac[SHA256_BYTES];
    _Static_assert(2 * SHA256_BYTES + 1 == E2B_TOKEN_BYTES, "a token is one MAC in hex");
    int n = snprintf(msg, sizeof(msg), "%s%s", ENVD_TOKEN_CONTEXT, sandbox_id);
    int r = gnutls_hmac_fast(GNUTLS_MAC_SHA256, key, E2B_ENVD_KEY_BYTES, msg, (size_t) n, mac);
    if (r < 0)
        return error_set(errp, E_INTERNAL, 0, "envd token: %s", gnutls_strerror(r));
    hex_encode(mac, sizeof(mac), token);
    gnutls_memset(mac, 0, sizeof(mac));
    return 0;
}

int
e2b_envd_token_derived_check(E2b *e, const E2bEnvdAuth *auth, Error **errp)
{
    uint8_t keys[E2B_ENVD_KEYS_MAX][E2B_ENVD_KEY_BYTES];
    char token[E2B_TOKEN_BYTES];
    size_t n = e->d.envd_keys ? e->d.envd_keys(e->d.cluster_userdata, keys) : 0;
    int r = -1;

    for (size_t i = 0; i < n && r < 0; i++) /* the current key first, then a rotation's other */
        if (e2b_envd_token_for(keys[i], auth->id, token, NULL) == 0)
            r = e2b_envd_token_check(auth, token, NULL);
    gnutls_memset(keys, 0, sizeof(keys));
    gnutls_memset(token, 0, sizeof(token));
    if (r < 0)
        return error_set(errp, E_UNAUTHORIZED, 0,
                         "X-Access-Token is not this sandbox's envdAccessToken");
    return 0;
}

void
e2b_forward(E2b *e, HttpRequest *req, const E2bRemote *r)
{
    e->d.forward(e->d.cluster_userdata, req, r->host_id, r->url, r->envd, r->tenant, pass_headers);
}
