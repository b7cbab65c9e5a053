/* Fuzz target: signed /files URLs of the E2B envd face (hostd/e2b/e2b_signed_url.c): the
 * parts read from a URL's query and the signature check against the sandbox's token.
 *
 * Input: a flags byte, then fields separated by '\n': token, then a signed tuple A (path,
 * username, expiration) that the token's holder signed, then a request tuple B (path,
 * username, expiration) as a caller sends it with A's signature, then a raw signature.
 * Flags: 1 A writes, 2 B writes, 4 A has an expiration, 8 B has one, 16 A has a username,
 * 32 B has one, 64 the caller sends the raw signature instead of A's.
 * Invariants, not just "no crash":
 *  - the parts are made exactly when a signature of at most E2B_SIGNATURE_MAX_BYTES is there
 *    and the expiration, if any, is a whole decimal number not before now; they are then
 *    "<path>:<read|write>:<user>:" and "" or ":<expiration>";
 *  - a signature matches exactly when it is "v1_" + unpadded base64 of the sha256 of prefix,
 *    token and suffix (computed here with an encoder of the test's own);
 *  - a URL signed for A opens a request only if that request is A: the same path, the same
 *    operation, the same username and the same expiration (a read URL is never a write URL
 *    for another path), and never with another token. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2b_signed_url.h"
#include "fuzz_check.h"
#include "sha256.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW_SEC 1700000000LL
#define FIELDS 8

typedef struct {
    const char *path, *user, *exp;
    bool write;
} Tuple;

static void
b64_nopad(const uint8_t *in, size_t n, char *out)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t) in[i] << 16 | (i + 1 < n ? (uint32_t) in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        size_t chars = i + 2 < n ? 4 : i + 1 < n ? 3 : 2;
        for (size_t k = 0; k < chars; k++)
            out[o++] = abc[(v >> (18 - 6 * k)) & 63];
    }
    out[o] = '\0';
}

/* The v1 signature of what A's holder signs, the test's own way. */
static void
sign(const Tuple *t, const char *token, char out[E2B_SIGNATURE_MAX_BYTES + 1])
{
    Sha256 h;
    uint8_t d[SHA256_BYTES];
    const char *op = t->write ? "write" : "read";
    sha256_init(&h);
    const char *parts[] = {t->path ? t->path : "", ":", op,    ":",
                           t->user ? t->user : "", ":", token, t->exp ? ":" : "",
                           t->exp ? t->exp : ""};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        sha256_update(&h, parts[i], strlen(parts[i]));
    sha256_final(&h, d);
    memcpy(out, "v1_", 3);
    b64_nopad(d, sizeof(d), out + 3);
}

static bool
str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool
exp_ok(const char *exp)
{
    char *end = NULL;
    if (!exp)
        return true;
    long long x = strtoll(exp, &end, 10);
    return *exp && !*end && x >= NOW_SEC;
}

/* The parts of B, checked against what they must be; true when a URL is made. */
static bool
check_parts(const Tuple *b, const char *sig, char **ret_prefix, char **ret_suffix)
{
    char *prefix = NULL, *suffix = NULL;
    int r =
        e2b_signed_url_parts(sig, b->exp, b->path, b->user, b->write, NOW_SEC, &prefix, &suffix);
    bool want = sig && strlen(sig) <= E2B_SIGNATURE_MAX_BYTES && exp_ok(b->exp);
    if (r < 0) {
        CHECK(!prefix && !suffix);
        /* The one refusal beyond the bounds: a username that would make the prefix read two
         * ways (hostd/e2b/e2b_signed_url.h). */
        CHECK(!want || (b->user && strchr(b->user, ':')));
        return false;
    }
    CHECK(want);
    size_t n = strlen(b->path ? b->path : "") + strlen(b->user ? b->user : "") + 16;
    char *p = malloc(n);
    snprintf(p, n, "%s:%s:%s:", b->path ? b->path : "", b->write ? "write" : "read",
             b->user ? b->user : "");
    CHECK(strcmp(prefix, p) == 0);
    CHECK(b->exp ? suffix[0] == ':' && strcmp(suffix + 1, b->exp) == 0 : suffix[0] == '\0');
    free(p);
    *ret_prefix = prefix;
    *ret_suffix = suffix;
    return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned flags = data[0];
    char *buf = malloc(size), *f[FIELDS] = {0};
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    f[0] = buf;
    for (size_t i = 1; i < FIELDS; i++) {
        char *nl = f[i - 1] ? strchr(f[i - 1], '\n') : NULL;
        if (nl)
            *nl = '\0', f[i] = nl + 1;
        else
            f[i] = "";
    }
    const char *token = f[0];
    Tuple a = {f[1], flags & 16 ? f[2] : NULL, flags & 4 ? f[3] : NULL, flags & 1};
    Tuple b = {f[4], flags & 32 ? f[5] : NULL, flags & 8 ? f[6] : NULL, (flags & 2) != 0};
    char signed_a[E2B_SIGNATURE_MAX_BYTES + 1];
    sign(&a, token, signed_a);
    const char *sig = flags & 64 ? f[7] : signed_a;

    char *prefix = NULL, *suffix = NULL;
    if (check_parts(&b, sig, &prefix, &suffix)) {
        char want[E2B_SIGNATURE_MAX_BYTES + 1];
        sign(&b, token, want);
        bool match = e2b_signature_matches(sig, prefix, suffix, token);
        CHECK(match == (strcmp(sig, want) == 0));
        if (match && !(flags & 64))
            CHECK(str_eq(a.path, b.path) && a.write == b.write &&
                  str_eq(a.user ? a.user : "", b.user ? b.user : "") && str_eq(a.exp, b.exp));
        /* never with another token */
        size_t tn = strlen(token);
        char *other = malloc(tn + 2);
        memcpy(other, token, tn);
        other[tn] = 'x', other[tn + 1] = '\0';
        CHECK(!e2b_signature_matches(sig, prefix, suffix, other) || strcmp(sig, want) != 0);
        free(other);
        free(prefix);
        free(suffix);
    }
    free(buf);
    return 0;
}
