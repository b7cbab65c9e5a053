/* Turning the appliance's pre-scan output into tar_out exclude patterns. Pure, no I/O.
 *
 * The pre-scan runs `find . -xdev -type f -size +Nc -print0 | head -c CAP | od -An -v -tx1`
 * inside the appliance: names of files over the per-file cap, hex-encoded because names may
 * hold newlines and the debug channel returns text. Each name becomes one GNU tar exclude
 * pattern (tar -X reads one pattern a line, with wildcards): every byte that is a newline or
 * a wildcard metacharacter ('*', '?', '[', '\\') becomes '?'. So the pattern always matches
 * its file, and may also match a sibling whose name differs only in those bytes: that file
 * is left out too (over-excluding is safe; the count is reported). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PRESCAN_OUTPUT_MAX_BYTES (256u * 1024u) /* raw name bytes read from the pre-scan */
#define PRESCAN_EXCLUDES_MAX 512u               /* more oversized files are left to the caps */

/* Decodes od's hex text into names. Returns a NULL-terminated array of patterns (the first
 * n_fixed taken from `fixed`), or NULL on allocation failure or malformed text. A trailing
 * name without its NUL (cut by head -c) is dropped and sets *ret_capped, as does going over
 * PRESCAN_EXCLUDES_MAX. Free with prescan_free(). */
char **prescan_excludes(const char *od_text, const char *const *fixed, size_t n_fixed,
                        size_t *ret_n, bool *ret_capped);
void prescan_free(char **list);
