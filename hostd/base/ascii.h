/* Locale-free ASCII character helpers (the C library's are locale-dependent). */
#pragma once

#include <stdbool.h>
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
