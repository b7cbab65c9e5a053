/* Fuzz target: uploads to the envd face (hostd/e2b/multipart.c) and the path mapping each
 * part's filename goes through (e2b_wire.c). Input: a Content-Type line, '\n', then the body.
 * Invariants: every part points inside the body, in order, without overlap; names and
 * filenames are NUL-terminated within their caps; at most MULTIPART_PARTS_MAX parts; once
 * the reader fails it keeps failing; a filename that maps is a clean workspace path. Also
 * runs the Host router and the list filters on the first line. */
#include <stdlib.h>
#include <string.h>

#include "e2b_wire.h"
#include "multipart.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_part(const MultipartReader *r, const MultipartPart *p, const uint8_t **prev_end)
{
    E2bPath path;
    const char *why;

    CHECK(p->data >= *prev_end && p->data + p->len <= r->body + r->len);
    *prev_end = p->data + p->len;
    CHECK(strlen(p->name) <= MULTIPART_NAME_MAX_BYTES);
    CHECK(strlen(p->filename) <= MULTIPART_FILENAME_MAX_BYTES);
    CHECK(p->has_filename || !p->filename[0]);
    if (e2b_path_map(p->filename, false, &path, &why) == 0) {
        CHECK(path.rel[0] && path.rel[0] != '/' && strlen(path.rel) <= PATH_MAX_BYTES);
        CHECK(!strstr(path.rel, "//") && strcmp(path.rel, "..") != 0 &&
              strncmp(path.rel, "../", 3) != 0 && !strstr(path.rel, "/../"));
    } else {
        CHECK(why && why[0]);
    }
}

static void
check_first_line(const char *line)
{
    char id[E2B_SANDBOX_ID_BYTES];
    unsigned port;
    json_t *m = NULL;
    int64_t t;
    if (e2b_host_route(line, "stockade.local", &port, id) == 0)
        CHECK(port >= 1 && port <= 65535 && e2b_sandbox_id_is_valid(id));
    if (e2b_metadata_query(line, &m) == 0) {
        CHECK(json_object_size(m) <= E2B_METADATA_MAX);
        json_decref(m);
    }
    (void) e2b_time_parse(line, &t);
    (void) e2b_page_token_parse(line, &t, id);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    char ctype[512], boundary[MULTIPART_BOUNDARY_MAX_BYTES + 1];
    size_t clen = nl ? (size_t) (nl - data) : size;

    if (clen >= sizeof(ctype) || memchr(data, '\0', clen))
        return 0;
    memcpy(ctype, data, clen);
    ctype[clen] = '\0';
    check_first_line(ctype);
    if (multipart_boundary(ctype, boundary) < 0)
        return 0;
    CHECK(boundary[0] && strlen(boundary) <= MULTIPART_BOUNDARY_MAX_BYTES);
    const uint8_t *body = nl ? nl + 1 : data + size;
    MultipartReader r;
    MultipartPart p;
    const uint8_t *prev_end = body;
    unsigned parts = 0;
    int k;
    multipart_reader_init(&r, body, size - (size_t) (body - data), boundary);
    while ((k = multipart_next(&r, &p)) > 0) {
        CHECK(++parts <= MULTIPART_PARTS_MAX);
        check_part(&r, &p, &prev_end);
    }
    CHECK(k == 0 || (r.why && r.why[0]));
    CHECK(multipart_next(&r, &p) == k); /* the end, or the failure, sticks */
    return 0;
}
