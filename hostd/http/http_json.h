/* JSON request bodies, for both faces: the one parser of a body (or one message of a body)
 * that must be a JSON object, and the nesting bound it checks on the raw text before jansson
 * parses it (the scan is base's jsonscan.c, shared with the code kernel's lines and stored
 * events). Pure (no I/O, no MHD). Why the bound: jansson's parser, json_dumpb() and
 * json_decref() recurse once per level and allow 2048 levels; a handler thread has a 512 KiB
 * stack, so a deep body kept by the daemon and dumped back later overflowed it
 * (docs/hardening.md). No body the API or the E2B faces accept nests anywhere near
 * HTTP_JSON_MAX_DEPTH. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define HTTP_JSON_MAX_DEPTH 32 /* arrays and objects inside one another, the outermost is 1 */

/* jsonscan_depth_within() (jsonscan.h) for a request body. */
bool http_json_depth_within(const void *text, size_t len, unsigned max_depth);

/* text[0..len) as a JSON object, strictly: at most max_bytes (0: the listener's body bound
 * alone), nesting within HTTP_JSON_MAX_DEPTH (checked before jansson sees a byte), no
 * duplicate keys; an empty text is {}. A new reference, or NULL with one of these, where
 * <what> names the text ("request body", "the body", "the message"):
 *   E_TOO_LARGE "<what> is over <max_bytes> bytes"
 *   E_INVALID   "<what> nests deeper than 32 levels"
 *   E_INVALID   "<what> is not JSON: <jansson's reason> (at byte <n>)"
 *   E_INVALID   "<what> must be a JSON object" */
json_t *http_json_object(const void *text, size_t len, size_t max_bytes, const char *what,
                         Error **errp);
