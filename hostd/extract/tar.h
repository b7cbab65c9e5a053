/* A pull parser for tar streams as GNU tar writes them: ustar, GNU long names ('L'/'K'),
 * pax extended headers ('x'/'g'), old V7 headers. Pure: no I/O beyond the read callback,
 * no allocation, no logging, so the fuzzer drives it from memory.
 *
 * The stream is hostile. Header numbers are bounded (octal or base-256, never negative),
 * the checksum must match, long names are capped at TAR_PATH_MAX_BYTES (a longer name
 * marks the entry bad rather than failing the stream), pax headers at TAR_PAX_MAX_BYTES
 * (over that the stream is malformed: a lost `size` record would desynchronise it).
 * Data of every entry is consumed by its size, whatever its type. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TAR_BLOCK_BYTES 512u
#define TAR_PATH_MAX_BYTES 4096u               /* longest name accepted from 'L' or pax `path` */
#define TAR_PAX_MAX_BYTES 65536u               /* largest pax extended header parsed */
#define TAR_SIZE_MAX_BYTES (UINT64_C(1) << 62) /* larger sizes are malformed */

/* Reads up to len bytes; *ret_got = 0 means end of stream. 0 / -1 with errno set. */
typedef int (*TarReadFn)(void *ctx, void *buf, size_t len, size_t *ret_got);

typedef enum TarType {
    TAR_TYPE_FILE,     /* '0', '\0', '7' */
    TAR_TYPE_DIR,      /* '5' */
    TAR_TYPE_HARDLINK, /* '1' */
    TAR_TYPE_SYMLINK,  /* '2' */
    TAR_TYPE_CHAR,     /* '3' */
    TAR_TYPE_BLOCK,    /* '4' */
    TAR_TYPE_FIFO,     /* '6' */
    TAR_TYPE_OTHER,    /* anything else, and pax-sparse files: never written */
} TarType;

typedef struct TarEntry {
    char path[TAR_PATH_MAX_BYTES + 1]; /* NUL-terminated, path_len bytes (may hold no NUL) */
    size_t path_len;
    bool path_bad; /* the name held a NUL or was longer than TAR_PATH_MAX_BYTES */
    /* The link target of a symlink or hard link (header linkname, GNU 'K', pax linkpath),
     * as written: never resolved here. Same bounds and NUL rule as path. */
    char link[TAR_PATH_MAX_BYTES + 1];
    size_t link_len;
    bool link_bad;
    uint32_t uid, gid; /* owner from the header or pax uid/gid; over UINT32_MAX: owner_bad */
    bool owner_bad;
    TarType type;
    char typeflag;
    uint32_t mode; /* low 12 bits of the header's mode */
    uint64_t size; /* data bytes that follow */
    int64_t mtime_sec;
} TarEntry;

typedef enum TarStatus {
    TAR_ENTRY = 1,      /* *ret_entry filled */
    TAR_END = 0,        /* end-of-archive marker (a zero block) */
    TAR_IO_ERROR = -1,  /* the read callback failed; errno kept */
    TAR_MALFORMED = -2, /* format violation or early end of stream; reader unusable */
} TarStatus;

typedef struct TarReader {
    TarReadFn read;
    void *ctx;
    uint64_t data_left; /* unread data bytes of the current entry */
    uint32_t pad_left;  /* padding after them */
    uint64_t offset;    /* bytes consumed from the stream */
    bool broken;
    const char *why; /* static text for TAR_MALFORMED */
    /* Pending overrides from 'L' / 'x' headers, applied to the next real header. */
    bool pend_path_set, pend_path_bad, pend_size_set, pend_mtime_set, pend_sparse;
    bool pend_link_set, pend_link_bad, pend_uid_set, pend_gid_set, pend_owner_bad;
    size_t pend_path_len, pend_link_len;
    uint64_t pend_size;
    int64_t pend_mtime;
    uint32_t pend_uid, pend_gid;
    char pend_path[TAR_PATH_MAX_BYTES + 1];
    char pend_link[TAR_PATH_MAX_BYTES + 1];
    uint8_t block[TAR_BLOCK_BYTES];
    char pax[TAR_PAX_MAX_BYTES];
} TarReader;

void tar_reader_init(TarReader *r, TarReadFn read, void *ctx);

/* Skips what is left of the current entry, then parses the next header. */
TarStatus tar_reader_next(TarReader *r, TarEntry *ret_entry);

/* Reads data of the current entry; *ret_got = 0 once it is all read. Returns TAR_ENTRY (1)
 * on progress, TAR_IO_ERROR, or TAR_MALFORMED if the stream ends inside the data. */
TarStatus tar_reader_read(TarReader *r, void *buf, size_t len, size_t *ret_got);

/* Parses a tar number field (octal, space/NUL padded, or GNU base-256). Pure. */
bool tar_parse_number(const uint8_t *field, size_t len, uint64_t *ret);
