/* SHA-256 (FIPS 180-4) for content keys, derived ids and token hashes. No allocation.
 * Written by hand because the static guest runner links base (README.md: what stays
 * hand-written and why); keyed crypto (HMAC, HKDF) is GnuTLS's, in the modules that need it. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
#define SHA256_HEX_BYTES 64

typedef struct {
    uint32_t h[8];
    uint64_t total_bytes;
    uint8_t block[64];
    size_t used;
} Sha256;

void sha256_init(Sha256 *s);
void sha256_update(Sha256 *s, const void *data, size_t len);
void sha256_final(Sha256 *s, uint8_t out[SHA256_BYTES]);
/* One-shot helpers. hex gets 64 lower-case digits and a NUL. */
void sha256(const void *data, size_t len, uint8_t out[SHA256_BYTES]);
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_BYTES + 1]);
void hex_encode(const uint8_t *in, size_t len, char *out /* 2*len+1 */);
/* Constant-time comparison of two equal-length buffers. */
int memcmp_constant_time(const void *a, const void *b, size_t len);
