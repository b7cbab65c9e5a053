/* See http_json.h. */
#include "http_json.h"

#include "jsonscan.h"

bool
http_json_depth_within(const void *text, size_t len, unsigned max_depth)
{
    return jsonscan_depth_within(text, len, max_depth);
}
