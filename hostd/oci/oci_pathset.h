/* A set of paths (the entries one layer wrote), for whiteouts: an OCI whiteout hides what
 * lower layers had, never what its own layer wrote, whatever the order in the tar. Strings
 * are copied; the caller bounds the count (the import's entry cap). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct OciPathSet {
    char **slots; /* open addressing; NULL = empty */
    size_t cap, n;
} OciPathSet;

/* Adds path[0..len); 0, or -1 (ENOMEM). Adding one already there is a no-op. */
int oci_pathset_add(OciPathSet *s, const char *path, size_t len);
bool oci_pathset_has(const OciPathSet *s, const char *path, size_t len);
void oci_pathset_clear(OciPathSet *s);
