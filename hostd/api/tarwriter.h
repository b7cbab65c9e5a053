/* A tar (ustar, with GNU long-name records for paths over 100 bytes) of a directory tree,
 * produced in pieces for a streaming response. Only directories and regular files are
 * included (the artifact folders hold nothing else); symlinks are never followed (every open
 * is beneath the root with RESOLVE_NO_SYMLINKS). Entries are listed first, bounded by
 * TARW_MAX_ENTRIES; file contents are read as they are sent. A file that shrank meanwhile is
 * padded with zeros to the size its header announced, so the archive stays well-formed.
 *
 * Names are guest-chosen bytes. A long name travels whole in its GNU 'L' record, every
 * 512-byte block of it: a record that announced more than it carried would make a reader
 * take the file's first bytes as the next header (a guest could then forge any entry).
 * GNU 'L' rather than a pax `path` record because pax defines `path` as UTF-8 and readers
 * transcode it, while 'L' carries the raw bytes; GNU tar, Python's tarfile and our own
 * reader (hostd/extract/tar.c) read both. Entries whose name is longer than
 * TARW_NAME_MAX_BYTES are left out. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define TARW_MAX_ENTRIES 200000
/* Longest name written, with a directory's trailing '/': the mirror's PATH_MAX_BYTES, and
 * the most hostd/extract/tar.c accepts (TAR_PATH_MAX_BYTES). */
#define TARW_NAME_MAX_BYTES 4096

typedef struct TarWriter TarWriter;

/* Lists root_dir (an absolute path). */
int tarw_new(const char *root_dir, TarWriter **ret, Error **errp);
/* Writes up to cap bytes; returns bytes written, 0 at the end, -1 on error. */
ssize_t tarw_read(TarWriter *t, void *buf, size_t cap);
void tarw_free(TarWriter *t);
