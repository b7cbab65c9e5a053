/* Tar streams built in memory, for tests of the two tar readers (hostd/extract's salvage and
 * the CLI's download): ustar or GNU headers of any type, files, GNU long names, pax records,
 * padding and the end marker. Every header has mode/uid/gid as given or 0 and mtime TB_MTIME.
 * Aborts when memory runs out. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_BLOCK 512u
#define TB_MTIME 1700000000u

typedef struct TarBuf {
    uint8_t *buf;
    size_t len, cap;
} TarBuf;

void tb_free(TarBuf *t);
void tb_put(TarBuf *t, const void *p, size_t n);
/* Zeroes up to the next block boundary. */
void tb_pad(TarBuf *t);
/* One header block: `link` (NULL: none) for hard and symbolic links; gnu: GNU's magic
 * "ustar  " instead of POSIX "ustar\0" "00". The size field holds 11 octal digits. */
void tb_header(TarBuf *t, const char *name, char type, uint32_t mode, uint64_t size,
               const char *link, bool gnu);
/* A regular file with its data, padded. */
void tb_file(TarBuf *t, const char *name, uint32_t mode, const void *data, size_t len);
void tb_text(TarBuf *t, const char *name, uint32_t mode, const char *text);
/* A header without data (directories, devices, FIFOs). */
void tb_entry(TarBuf *t, const char *name, char type, uint32_t mode);
/* A GNU long-name record ('L') for the next header. */
void tb_longname(TarBuf *t, const char *name, size_t len);
/* A pax extended header ('x') with one record "key=value". */
void tb_pax(TarBuf *t, const char *key, const char *value, size_t value_len);
/* The two zero blocks that end an archive. */
void tb_end(TarBuf *t);
/* A memfd holding the stream, at offset 0; -1 with errno on failure. */
int tb_memfd(const TarBuf *t);
