/* What a guest's file records do on the host, decided without I/O so the fuzz target
 * (tests/fuzz/fuzz_guest_replies.c) drives them with frames that passed proto/'s checks:
 * the live mirror's step for each FileChanged record (mirror.c does the step), the
 * reassembly of a file fetched in FileData chunks (session_ops.c), and a finalize's check of
 * each chunk of a file its manifest listed (session_finalize.c).
 *
 * Every record is the guest's: proto/ has bounded its fields (a chunk at most
 * FILE_CHUNK_MAX_BYTES and within its announced size, a valid relative path); what spans
 * records (the order of chunks, the session's budget, the file caps) is held here. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "message.h"

/* What the mirror holds when a record comes. */
typedef struct MirrorView {
    bool receiving;          /* a file is being received (its temp file is open) */
    const char *path;        /* that file's path (NULL when none) */
    uint64_t size, received; /* its announced size and the bytes stored so far */
    uint64_t mirror_bytes;   /* what this session's mirror stored, all files */
    uint64_t budget_bytes;   /* the session's mirror budget */
    uint64_t max_file_bytes; /* [sessions] mirror_max_file_bytes */
    uint32_t files;          /* files stored */
    uint32_t max_files;      /* the salvage's cap on files */
} MirrorView;

typedef enum {
    MIRROR_REMOVE,      /* remove the path in files/ (event "removed") */
    MIRROR_OVER_BUDGET, /* a file's first record over a cap: nothing stored, one event */
    MIRROR_SKIP,        /* nothing stored, no event: a later chunk over a cap, or a chunk out
                         * of sequence (the salvage or finalize brings the file) */
    MIRROR_WRITE,       /* store the chunk: first begin a new file when .begin (dropping an
                         * unfinished one), then append; install it when .finish */
} MirrorAction;

typedef struct MirrorStep {
    MirrorAction action;
    bool begin, finish;
} MirrorStep;

/* The step for record c. A chunk is stored only in sequence (offset == bytes so far, same
 * path and size as the file begun at offset 0), within the session's budget and while the
 * file is within max_file_bytes; a new file begins only while fewer than max_files are
 * stored. A last chunk installs the file with what came (a file that shrank in the guest
 * ends early; its next write sends it again). */
MirrorStep mirror_plan(const MirrorView *v, const Stockade__Runner__FileChanged *c);

/* A file fetched in FileData chunks into *buf (malloc'd, *alloc bytes, grown geometrically
 * but never past cap), *got bytes so far. */
typedef enum {
    FILE_GET_MORE,            /* stored: ask for the next chunk */
    FILE_GET_DONE,            /* stored, and the guest said end of file */
    FILE_GET_OUT_OF_SEQUENCE, /* offset is not *got: nothing stored */
    FILE_GET_TOO_LARGE,       /* past cap: nothing stored */
    FILE_GET_EMPTY_CHUNK,     /* nothing and no end: the guest would loop for ever */
    FILE_GET_NO_MEMORY,
} FileGetStep;

FileGetStep file_get_take(uint8_t **buf, size_t *alloc, size_t *got, size_t cap,
                          const Stockade__Runner__FileData *d);

/* Whether chunk d continues a finalize's fetch of a file its manifest listed at listed_size
 * bytes, got bytes in: in sequence, the listed size, not past it, not empty unless it ends
 * the file, and an end exactly at the listed size. */
bool finalize_chunk_fits(uint64_t got, uint64_t listed_size, const Stockade__Runner__FileData *d);
