/* See jsonscan.h. */
#include "jsonscan.h"

bool
jsonscan_depth_within(const void *text, size_t len, unsigned max_depth)
{
    const unsigned char *p = text;
    bool in_string = false, escaped = false;
    unsigned depth = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                return false;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return true;
}
