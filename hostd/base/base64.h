/* Standard base64 (RFC 4648 §4, with padding). No allocation beyond the result. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Returns a NUL-terminated malloc'd string, NULL on OOM. */
char *base64_encode(const uint8_t *data, size_t len);
/* Strict: only the alphabet, correct padding, no whitespace. Returns a malloc'd buffer (never
 * NULL on success, even for empty input) and its length; -1 on malformed input or OOM. */
int base64_decode(const char *text, size_t text_len, uint8_t **ret, size_t *ret_len);
