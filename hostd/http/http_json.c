/* See http_json.h. */
#include "http_json.h"

#include "jsonscan.h"

bool
http_json_depth_within(const void *text, size_t len, unsigned max_depth)
{
    return jsonscan_depth_within(text, len, max_depth);
}

json_t *
http_json_object(const void *text, size_t len, size_t max_bytes, const char *what, Error **errp)
{
    json_error_t jerr;

    if (max_bytes && len > max_bytes) {
        error_set(errp, E_TOO_LARGE, 0, "%s is over %zu bytes", what, max_bytes);
        return NULL;
    }
    if (len == 0)
        return json_object();
    if (!http_json_depth_within(text, len, HTTP_JSON_MAX_DEPTH)) {
        error_set(errp, E_INVALID, 0, "%s nests deeper than %d levels", what, HTTP_JSON_MAX_DEPTH);
        return NULL;
    }
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!o) {
        error_set(errp, E_INVALID, 0, "%s is not JSON: %s (at byte %d)", what, jerr.text,
                  jerr.position);
        return NULL;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        error_set(errp, E_INVALID, 0, "%s must be a JSON object", what);
        return NULL;
    }
    return o;
}
