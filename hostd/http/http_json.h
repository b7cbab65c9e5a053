/* Nesting bound on JSON request bodies, checked on the raw text before jansson parses it
 * (the scan is base's jsonscan.c, shared with the code kernel's lines and stored events).
 * Pure (no I/O, no allocation, no MHD). Why: jansson's parser, json_dumpb() and json_decref()
 * recurse once per level and allow 2048 levels; a handler thread has a 512 KiB stack, so a
 * deep body kept by the daemon and dumped back later overflowed it (docs/hardening.md).
 * No body the API or the E2B faces accept nests anywhere near HTTP_JSON_MAX_DEPTH. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define HTTP_JSON_MAX_DEPTH 32 /* arrays and objects inside one another, the outermost is 1 */

/* jsonscan_depth_within() (jsonscan.h) for a request body. */
bool http_json_depth_within(const void *text, size_t len, unsigned max_depth);
