/* See prescan.h. Limits: PRESCAN_OUTPUT_MAX_BYTES of names, PRESCAN_EXCLUDES_MAX patterns. */
#include "prescan.h"

#include <stdlib.h>
#include <string.h>

#include "macro.h"

static int
hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Hex pairs separated by blanks/newlines, as `od -An -tx1` prints. */
static uint8_t *
prescan_decode(const char *text, size_t *ret_len)
{
    size_t cap = strlen(text) / 2 + 1, n = 0;
    _cleanup_free_ uint8_t *out = malloc(cap);
    if (!out)
        return NULL;
    for (const char *p = text; *p;) {
        if (*p == ' ' || *p == '\n' || *p == '\t') {
            p++;
            continue;
        }
        int hi = hex_value(p[0]), lo = hi < 0 ? -1 : hex_value(p[1]);
        if (lo < 0 || n >= cap || n >= PRESCAN_OUTPUT_MAX_BYTES)
            return NULL;
        out[n++] = (uint8_t) (hi << 4 | lo);
        p += 2;
    }
    *ret_len = n;
    return TAKE_PTR(out);
}

static char *
prescan_pattern(const uint8_t *name, size_t len)
{
    char *p = malloc(len + 1);
    if (!p)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        char c = (char) name[i];
        p[i] = (c == '\n' || c == '*' || c == '?' || c == '[' || c == '\\') ? '?' : c;
    }
    p[len] = '\0';
    return p;
}

void
prescan_free(char **list)
{
    if (!list)
        return;
    for (char **p = list; *p; p++)
        free(*p);
    free(list);
}

char **
prescan_excludes(const char *od_text, const char *const *fixed, size_t n_fixed, size_t *ret_n,
                 bool *ret_capped)
{
    size_t len = 0, n = 0;
    bool capped = false;
    _cleanup_free_ uint8_t *raw = prescan_decode(od_text, &len);
    char **list = raw ? calloc(n_fixed + PRESCAN_EXCLUDES_MAX + 1, sizeof(char *)) : NULL;

    if (!list)
        return NULL;
    for (; n < n_fixed; n++)
        if (!(list[n] = strdup(fixed[n])))
            goto fail_free;
    for (size_t pos = 0; pos < len;) {
        const uint8_t *end = memchr(raw + pos, '\0', len - pos);
        if (!end || n >= n_fixed + PRESCAN_EXCLUDES_MAX) {
            capped = true;
            break;
        }
        if (end > raw + pos &&
            !(list[n++] = prescan_pattern(raw + pos, (size_t) (end - raw - pos))))
            goto fail_free;
        pos = (size_t) (end - raw) + 1;
    }
    *ret_n = n;
    *ret_capped = capped;
    return list;

fail_free:
    prescan_free(list);
    return NULL;
}
