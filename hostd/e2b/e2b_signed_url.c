/* See e2b_signed_url.h. */
#include "e2b_signed_url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "macro.h"
#include "sha256.h"

int
e2b_signed_url_parts(const char *sig, const char *exp, const char *path, const char *user,
                     bool write, int64_t now_sec, char **ret_prefix, char **ret_suffix)
{
    char *end = NULL, *prefix = NULL, *suffix = NULL;
    long long x = exp ? strtoll(exp, &end, 10) : 0;

    if (!sig || strlen(sig) > E2B_SIGNATURE_MAX_BYTES || (exp && (!*exp || *end)) ||
        (exp && x < now_sec))
        return -1; /* none, malformed or expired */
    if (user && strchr(user, ':'))
        return -1; /* the prefix would read two ways (e2b_signed_url.h) */
    if (asprintf(&prefix, "%s:%s:%s:", path ? path : "", write ? "write" : "read",
                 user ? user : "") < 0)
        return -1;
    if (asprintf(&suffix, "%s%s", exp ? ":" : "", exp ? exp : "") < 0) {
        free(prefix);
        return -1;
    }
    *ret_prefix = prefix;
    *ret_suffix = suffix;
    return 0;
}

bool
e2b_signature_matches(const char *signature, const char *prefix, const char *suffix,
                      const char *token)
{
    uint8_t hash[SHA256_BYTES];
    Sha256 h;
    char want[E2B_SIGNATURE_MAX_BYTES + 1];

    if (!signature || !signature[0] || !prefix || !suffix || !token)
        return false;
    sha256_init(&h);
    sha256_update(&h, prefix, strlen(prefix));
    sha256_update(&h, token, strlen(token));
    sha256_update(&h, suffix, strlen(suffix));
    sha256_final(&h, hash);
    _cleanup_free_ char *b64 = base64_encode(hash, sizeof(hash));
    if (!b64)
        return false;
    b64[strcspn(b64, "=")] = '\0';
    snprintf(want, sizeof(want), "v1_%s", b64);
    return strlen(want) == strlen(signature) &&
           memcmp_constant_time(want, signature, strlen(want)) == 0;
}
