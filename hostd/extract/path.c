/* Name normalisation: see path.h. Works in one pass over the input, writing at most len
 * bytes plus a NUL, so out needs len + 1 bytes. */
#include "path.h"

#include <string.h>

PathVerdict
extract_path_normalize(const char *in, size_t len, uint32_t max_name_bytes, uint32_t max_depth,
                       char *out, size_t *ret_len, uint32_t *ret_depth)
{
    size_t i = 0, o = 0;
    uint32_t depth = 0;

    if (len > 0 && in[0] == '/')
        return PATH_ABSOLUTE;
    while (i < len) {
        size_t start = i;
        while (i < len && in[i] != '/')
            i++;
        size_t clen = i - start;
        if (i < len)
            i++; /* the '/' */
        if (clen == 0 || (clen == 1 && in[start] == '.'))
            continue;
        if (clen == 2 && in[start] == '.' && in[start + 1] == '.')
            return PATH_DOTDOT;
        if (clen > EXTRACT_NAME_MAX_BYTES)
            return PATH_COMPONENT_LONG;
        if (o > 0)
            out[o++] = '/';
        memcpy(out + o, in + start, clen);
        o += clen;
        depth++;
    }
    out[o] = '\0';
    if (o == 0)
        return PATH_ROOT;
    if (o > max_name_bytes)
        return PATH_TOO_LONG;
    if (depth > max_depth)
        return PATH_TOO_DEEP;
    *ret_len = o;
    *ret_depth = depth;
    return PATH_OK;
}
