/* Locale-free ASCII character helpers (the C library's are locale-dependent). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 0..15 for [0-9a-fA-F], -1 for anything else. */
static inline int
ascii_hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Every byte of s is in [A-Za-z0-9] or in extra. */
static inline bool
ascii_charset_ok(const char *s, const char *extra)
{
    for (; *s; s++) {
        char c = *s;
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && !strchr(extra, c))
            return false;
    }
    return true;
}

/* s[0..len) as a decimal uint32_t: digits only (no sign, no blank), 1 to 10 of them, at most
 * UINT32_MAX. A uid or gid as /etc/passwd and an image's config write it. */
static inline bool
ascii_parse_u32(const char *s, size_t len, uint32_t *ret)
{
    uint64_t v = 0;
    if (len == 0 || len > 10)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t) (s[i] - '0');
    }
    if (v > UINT32_MAX)
        return false;
    *ret = (uint32_t) v;
    return true;
}
