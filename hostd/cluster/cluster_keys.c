/* See cluster_keys.h. HKDF and the comparison are GnuTLS's (its nettle underneath), the one
 * crypto library of the daemon's own code; nothing here is hand-written cryptography. */
#include "cluster_keys.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <string.h>

#include "sha256.h" /* hex_encode() only */

#define HKDF_HASH_BYTES 32

int
cluster_hkdf_sha256(const void *salt, size_t salt_len, const void *ikm, size_t ikm_len,
                    const void *info, size_t info_len, uint8_t *out, size_t out_len, Error **errp)
{
    uint8_t prk[HKDF_HASH_BYTES];
    static const uint8_t none; /* a non-NULL pointer for an empty salt or info */
    gnutls_datum_t k = {.data = (unsigned char *) ikm, .size = (unsigned) ikm_len};
    gnutls_datum_t s = {.data = (unsigned char *) (salt_len ? salt : &none),
                        .size = (unsigned) salt_len};
    gnutls_datum_t i = {.data = (unsigned char *) (info_len ? info : &none),
                        .size = (unsigned) info_len};

    if (out_len == 0 || out_len > 255 * HKDF_HASH_BYTES || ikm_len > UINT32_MAX ||
        salt_len > UINT32_MAX || info_len > UINT32_MAX)
        return error_set(errp, E_INTERNAL, 0, "hkdf: lengths out of range");
    int r = gnutls_hkdf_extract(GNUTLS_MAC_SHA256, &k, &s, prk);
    if (r == 0) {
        gnutls_datum_t p = {.data = prk, .size = sizeof(prk)};
        r = gnutls_hkdf_expand(GNUTLS_MAC_SHA256, &p, &i, out, out_len);
    }
    gnutls_memset(prk, 0, sizeof(prk));
    if (r != 0)
        return error_set(errp, E_INTERNAL, 0, "hkdf: %s", gnutls_strerror(r));
    return 0;
}

/* One secret: one word of printable ASCII within the bounds. */
static int
secret_check(const char *s, size_t n, size_t line, Error **errp)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char) s[i] <= ' ' || (unsigned char) s[i] >= 0x7f)
            return error_set(errp, E_INVALID, 0,
                             "line %zu: not one word of printable text (one secret a line)", line);
    if (n < CLUSTER_TOKEN_MIN_BYTES || n > CLUSTER_TOKEN_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "line %zu: a secret must be %d..%d bytes", line,
                         CLUSTER_TOKEN_MIN_BYTES, CLUSTER_TOKEN_MAX_BYTES);
    return 0;
}

static int
secret_derive(const char *s, size_t n, ClusterKeys *k, size_t i, Error **errp)
{
    static const char hop[] = CLUSTER_KEY_LABEL_HOP, envd[] = CLUSTER_KEY_LABEL_ENVD;
    if (cluster_hkdf_sha256(NULL, 0, s, n, hop, sizeof(hop) - 1, k->hop[i], CLUSTER_KEY_BYTES,
                            errp) < 0 ||
        cluster_hkdf_sha256(NULL, 0, s, n, envd, sizeof(envd) - 1, k->envd[i], CLUSTER_KEY_BYTES,
                            errp) < 0)
        return -1;
    return 0;
}

int
cluster_keys_parse(const char *text, size_t len, ClusterKeys *ret, Error **errp)
{
    ClusterKeys k = {0};
    size_t pos = 0;
    int r = 0;

    if (len > 0 && text[len - 1] == '\n')
        len--; /* one final newline */
    if (len == 0)
        return error_set(errp, E_INVALID, 0, "empty: it must hold the current secret");
    while (pos <= len && r == 0) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t) (nl - (text + pos)) : len - pos;
        if (k.n == CLUSTER_SECRETS_MAX) {
            r = error_set(errp, E_INVALID, 0,
                          "more than %d lines (the current secret, then "
                          "at most one more)",
                          CLUSTER_SECRETS_MAX);
            break;
        }
        if (secret_check(text + pos, n, k.n + 1, errp) < 0 ||
            secret_derive(text + pos, n, &k, k.n, errp) < 0)
            r = -1;
        k.n++;
        pos += n + 1;
    }
    if (r == 0)
        *ret = k;
    cluster_keys_wipe(&k);
    return r;
}

void
cluster_hop_auth_hex(const uint8_t key[CLUSTER_KEY_BYTES], char ret[CLUSTER_HOP_AUTH_HEX_BYTES + 1])
{
    hex_encode(key, CLUSTER_KEY_BYTES, ret);
}

bool
cluster_keys_hop_matches(const ClusterKeys *k, const char *presented)
{
    char want[CLUSTER_HOP_AUTH_HEX_BYTES + 1];
    bool match = false;

    if (strlen(presented) != CLUSTER_HOP_AUTH_HEX_BYTES) /* the length is no secret */
        return false;
    for (size_t i = 0; i < k->n; i++) { /* every key, whichever matched */
        cluster_hop_auth_hex(k->hop[i], want);
        match |= gnutls_memcmp(want, presented, CLUSTER_HOP_AUTH_HEX_BYTES) == 0;
    }
    gnutls_memset(want, 0, sizeof(want));
    return match;
}

void
cluster_keys_wipe(ClusterKeys *k)
{
    gnutls_memset(k, 0, sizeof(*k));
}
