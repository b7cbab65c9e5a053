/* multipart/form-data (RFC 7578) request bodies, as the E2B SDKs upload files: one part per
 * file, field name "file", the destination path in the part's filename. Pure and fuzzable:
 * the reader walks a complete body in memory and hands out parts that point into it; it
 * allocates nothing. Every limit on the hostile input is a named constant below. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MULTIPART_BOUNDARY_MAX_BYTES 70    /* RFC 2046 */
#define MULTIPART_PART_HEAD_MAX_BYTES 8192 /* one part's header block */
#define MULTIPART_PARTS_MAX 64             /* parts in one body */
#define MULTIPART_NAME_MAX_BYTES 64        /* the field name */
#define MULTIPART_FILENAME_MAX_BYTES 4096  /* the filename, decoded */
#define MULTIPART_PREAMBLE_MAX_BYTES 1024  /* bytes before the first delimiter */

typedef struct MultipartPart {
    char name[MULTIPART_NAME_MAX_BYTES + 1];
    char filename[MULTIPART_FILENAME_MAX_BYTES + 1]; /* "" when the part has none */
    bool has_filename;
    const uint8_t *data; /* into the body */
    size_t len;
} MultipartPart;

typedef struct MultipartReader {
    const uint8_t *body;
    size_t len, pos;
    char delim[MULTIPART_BOUNDARY_MAX_BYTES + 5]; /* "\r\n--" + boundary */
    size_t delim_len;
    unsigned parts;
    bool started, done;
    const char *why; /* the reason of the last -1 (a static string) */
} MultipartReader;

/* The boundary parameter of a Content-Type "multipart/form-data; boundary=..." (quoted or
 * not), checked against RFC 2046's alphabet. -1 when the type is not multipart/form-data or
 * the boundary is missing or malformed. */
int multipart_boundary(const char *content_type, char out[MULTIPART_BOUNDARY_MAX_BYTES + 1]);
void multipart_reader_init(MultipartReader *r, const uint8_t *body, size_t len,
                           const char *boundary);
/* 1: *ret is the next part; 0: the closing delimiter was reached (what follows it is
 * ignored); -1: malformed or over a limit (r->why says which), and every later call too. */
int multipart_next(MultipartReader *r, MultipartPart *ret);
