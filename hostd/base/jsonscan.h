/* Nesting of JSON text, scanned before any parser sees it. Pure, libc only, any thread.
 * Why: jansson 2.14's parser, json_dumps()/json_dumpb() and json_decref() recurse once per
 * level and parse up to 2 048 levels; the dump costs ~300 bytes of stack a level (measured in
 * docs/hardening.md), so a value of ~1 700 levels overflows a 512 KiB HTTP connection thread.
 * Every JSON text from a client, a guest or the store is checked with this before it is
 * parsed on such a stack; each caller passes its own named bound. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* True when text[0..len) never opens more than max_depth arrays/objects at once (the
 * outermost is 1). Brackets inside strings do not count (escapes are followed); the text need
 * not be valid JSON: the parser that runs next judges that. */
bool jsonscan_depth_within(const void *text, size_t len, unsigned max_depth);
