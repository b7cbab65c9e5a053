/* See base64.h. */
#include "base64.h"

#include <stdbool.h>

#include <stdlib.h>
#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
base64_encode(const uint8_t *data, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t) data[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t) data[i + 1] << 8;
        if (i + 2 < len)
            v |= data[i + 2];
        *o++ = alphabet[(v >> 18) & 63];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        *o++ = i + 2 < len ? alphabet[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static int
b64_value(char c)
{
    const char *p = c ? strchr(alphabet, c) : NULL;
    return p ? (int) (p - alphabet) : -1;
}

int
base64_decode(const char *text, size_t n, uint8_t **ret, size_t *ret_len)
{
    if (n % 4 != 0)
        return -1;
    size_t pad = n && text[n - 1] == '=' ? (n > 1 && text[n - 2] == '=' ? 2 : 1) : 0;
    uint8_t *out = malloc(n / 4 * 3 + 1);
    size_t o = 0;
    if (!out)
        return -1;
    for (size_t i = 0; i < n; i += 4) {
        bool last = i + 4 == n;
        int v[4];
        for (int k = 0; k < 4; k++) {
            bool is_pad = last && k >= 4 - (int) pad;
            v[k] = is_pad ? 0 : b64_value(text[i + (size_t) k]);
            if (v[k] < 0 || (is_pad && text[i + (size_t) k] != '=')) {
                free(out);
                return -1;
            }
        }
        uint32_t w = (uint32_t) v[0] << 18 | (uint32_t) v[1] << 12 | (uint32_t) v[2] << 6 |
                     (uint32_t) v[3];
        out[o++] = (uint8_t) (w >> 16);
        if (!last || pad < 2)
            out[o++] = (uint8_t) (w >> 8);
        if (!last || pad < 1)
            out[o++] = (uint8_t) w;
    }
    *ret = out;
    *ret_len = o;
    return 0;
}
