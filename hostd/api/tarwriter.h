/* A tar (ustar, with GNU long-name records for paths over 100 bytes) of a directory tree,
 * produced in pieces for a streaming response. Only directories and regular files are
 * included (the artifact folders hold nothing else); symlinks are never followed (every open
 * is O_NOFOLLOW beneath the root). Entries are listed first, bounded by TARW_MAX_ENTRIES;
 * file contents are read as they are sent. A file that shrank meanwhile is padded with zeros
 * to the size its header announced, so the archive stays well-formed. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define TARW_MAX_ENTRIES 200000

typedef struct TarWriter TarWriter;

/* Lists root_dir (an absolute path). */
int tarw_new(const char *root_dir, TarWriter **ret, Error **errp);
/* Writes up to cap bytes; returns bytes written, 0 at the end, -1 on error. */
ssize_t tarw_read(TarWriter *t, void *buf, size_t cap);
void tarw_free(TarWriter *t);
