/* API tokens and ids: text forms, shape checks and the stored hash. See admit.h. Pure: the
 * random bytes come from the caller (getrandom at the edge). A presented token is checked for
 * its exact shape before it is hashed, so nothing unbounded reaches the hash or the store. */
#include <string.h>
#include <strings.h>

#include "admit.h"

static const char base32[] = "abcdefghijklmnopqrstuvwxyz234567";

void
admit_token_format(const uint8_t random[ADMIT_TOKEN_RANDOM_BYTES], char out[ADMIT_TOKEN_TEXT_BYTES])
{
    memcpy(out, ADMIT_TOKEN_PREFIX, strlen(ADMIT_TOKEN_PREFIX));
    hex_encode(random, ADMIT_TOKEN_RANDOM_BYTES, out + strlen(ADMIT_TOKEN_PREFIX));
}

bool
admit_token_is_valid(const char *text, size_t len)
{
    size_t p = strlen(ADMIT_TOKEN_PREFIX);
    if (len != ADMIT_TOKEN_TEXT_LEN || (memcmp(text, ADMIT_TOKEN_PREFIX, p) != 0 &&
                                        memcmp(text, ADMIT_TOKEN_LEGACY_PREFIX, p) != 0))
        return false;
    for (size_t i = p; i < len; i++)
        if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f')))
            return false;
    return true;
}

void
admit_token_hash(const char *token, uint8_t out[SHA256_BYTES])
{
    size_t p = strlen(ADMIT_TOKEN_PREFIX), len = strlen(token);
    if (len != ADMIT_TOKEN_TEXT_LEN || strncmp(token, ADMIT_TOKEN_PREFIX, p) != 0) {
        sha256(token, len, out);
        return;
    }
    char legacy[ADMIT_TOKEN_TEXT_BYTES]; /* one stored form for both spellings */
    memcpy(legacy, ADMIT_TOKEN_LEGACY_PREFIX, p);
    memcpy(legacy + p, token + p, len - p + 1);
    sha256(legacy, len, out);
    explicit_bzero(legacy, sizeof(legacy));
}

bool
admit_token_hash_equal(const uint8_t a[SHA256_BYTES], const uint8_t b[SHA256_BYTES])
{
    return memcmp_constant_time(a, b, SHA256_BYTES) == 0;
}

const char *
admit_bearer_token(const char *header)
{
    static const char scheme[] = "Bearer";
    if (!header || strncasecmp(header, scheme, strlen(scheme)) != 0 ||
        header[strlen(scheme)] != ' ')
        return NULL;
    const char *t = header + strlen(scheme);
    while (*t == ' ')
        t++;
    return *t ? t : NULL;
}

void
admit_id_format(const char *prefix, const uint8_t random[ADMIT_ID_RANDOM_CHARS],
                char out[ADMIT_ID_BYTES])
{
    size_t p = strnlen(prefix, ADMIT_ID_BYTES - ADMIT_ID_RANDOM_CHARS - 1);
    memcpy(out, prefix, p);
    for (size_t i = 0; i < ADMIT_ID_RANDOM_CHARS; i++)
        out[p + i] = base32[random[i] & 31];
    out[p + ADMIT_ID_RANDOM_CHARS] = '\0';
}

bool
admit_id_is_valid(const char *prefix, const char *id)
{
    size_t p = strlen(prefix), n = strnlen(id, ADMIT_ID_BYTES);
    return n == p + ADMIT_ID_RANDOM_CHARS && strncmp(id, prefix, p) == 0 &&
           strspn(id + p, base32) == ADMIT_ID_RANDOM_CHARS;
}
