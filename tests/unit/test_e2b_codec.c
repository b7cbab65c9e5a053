/* Unit tests of the E2B face's wire codecs (hostd/e2b): Connect envelopes and error codes
 * (connect.c), multipart/form-data uploads (multipart.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "connect.h"
#include "multipart.h"

/* ------------------------------------------------------------------ envelopes */

static size_t
envelope(uint8_t *out, uint8_t flags, const char *payload)
{
    size_t n = strlen(payload);
    connect_envelope_header(flags, (uint32_t) n, out);
    memcpy(out + CONNECT_ENVELOPE_HDR_BYTES, payload, n);
    return CONNECT_ENVELOPE_HDR_BYTES + n;
}

static void
test_envelope_peek(void **state)
{
    (void) state;
    uint8_t buf[64];
    ConnectEnvelope e;
    size_t n = envelope(buf, 0, "{\"a\":1}");

    assert_int_equal(n, 12);
    assert_memory_equal(buf, "\x00\x00\x00\x00\x07", 5);
    for (size_t avail = 0; avail < n; avail++) /* every partial read asks for more */
        assert_int_equal(connect_envelope_peek(buf, avail, 1024, &e), CONNECT_NEED_MORE);
    assert_int_equal(connect_envelope_peek(buf, n + 3, 1024, &e), CONNECT_OK);
    assert_int_equal(e.flags, 0);
    assert_int_equal(e.len, 7);
    assert_int_equal(e.consumed, 12);
    assert_ptr_equal(e.payload, buf + 5);
    assert_int_equal(connect_envelope_peek(buf, n, 6, &e), CONNECT_BAD); /* over the cap */
    buf[0] = 0x04; /* an unknown flag */
    assert_int_equal(connect_envelope_peek(buf, n, 1024, &e), CONNECT_BAD);
    connect_envelope_header(CONNECT_FLAG_END_STREAM, 0xfffffffe, buf);
    assert_int_equal(connect_envelope_peek(buf, 5, UINT32_MAX, &e), CONNECT_NEED_MORE);
    assert_memory_equal(buf, "\x02\xff\xff\xff\xfe", 5);
}

static void
test_stream_request(void **state)
{
    (void) state;
    uint8_t buf[128];
    const uint8_t *p;
    size_t len, n;
    const char *why;

    n = envelope(buf, 0, "{\"process\":{}}");
    assert_int_equal(connect_stream_request(buf, n, &p, &len, &why), 0);
    assert_int_equal(len, 14);
    assert_memory_equal(p, "{\"process\":{}}", 14);
    n += envelope(buf + n, CONNECT_FLAG_END_STREAM, "{}"); /* a trailing end-stream: fine */
    assert_int_equal(connect_stream_request(buf, n, &p, &len, &why), 0);
    assert_int_equal(connect_stream_request(buf, n - 1, &p, &len, &why), -1); /* cut */
    n = envelope(buf, 0, "{}");
    n += envelope(buf + n, 0, "{}"); /* two messages */
    assert_int_equal(connect_stream_request(buf, n, &p, &len, &why), -1);
    assert_non_null(strstr(why, "exactly one"));
    n = envelope(buf, CONNECT_FLAG_COMPRESSED, "xx");
    assert_int_equal(connect_stream_request(buf, n, &p, &len, &why), -1);
    assert_non_null(strstr(why, "compressed"));
    n = envelope(buf, CONNECT_FLAG_END_STREAM, "{}");
    assert_int_equal(connect_stream_request(buf, n, &p, &len, &why), -1);
    assert_int_equal(connect_stream_request(buf, 0, &p, &len, &why), -1);
    buf[0] = 0;
    connect_envelope_header(0, CONNECT_REQUEST_MAX_BYTES + 1, buf);
    assert_int_equal(connect_stream_request(buf, 5, &p, &len, &why), -1);
}

static void
test_codes(void **state)
{
    (void) state;
    assert_string_equal(connect_code_name(CONNECT_NOT_FOUND), "not_found");
    assert_string_equal(connect_code_name(CONNECT_DEADLINE_EXCEEDED), "deadline_exceeded");
    assert_string_equal(connect_code_name((ConnectCode) 99), "unknown");
    assert_int_equal(connect_code_http_status(CONNECT_UNAVAILABLE), 503);
    assert_int_equal(connect_code_http_status(CONNECT_UNAUTHENTICATED), 401);
    assert_int_equal(connect_code_http_status(CONNECT_ALREADY_EXISTS), 409);
    assert_int_equal(connect_code_http_status(CONNECT_UNIMPLEMENTED), 501);
    assert_int_equal(connect_code_for(E_GUEST), CONNECT_UNAVAILABLE);
    assert_int_equal(connect_code_for(E_INVALID), CONNECT_INVALID_ARGUMENT);
    assert_int_equal(connect_code_for(E_QUOTA), CONNECT_RESOURCE_EXHAUSTED);
    assert_int_equal(connect_code_for(E_TIMEOUT), CONNECT_DEADLINE_EXCEEDED);
    assert_int_equal(connect_code_for(E_UNAUTHORIZED), CONNECT_UNAUTHENTICATED);
}

/* ------------------------------------------------------------------ multipart */

static void
test_boundary(void **state)
{
    (void) state;
    char b[MULTIPART_BOUNDARY_MAX_BYTES + 1];
    assert_int_equal(multipart_boundary("multipart/form-data; boundary=----abc123", b), 0);
    assert_string_equal(b, "----abc123");
    assert_int_equal(multipart_boundary("Multipart/Form-Data;charset=x; BOUNDARY=\"a b:c\"", b), 0);
    assert_string_equal(b, "a b:c");
    assert_int_equal(multipart_boundary("multipart/form-data; boundary=x; y=z", b), 0);
    assert_string_equal(b, "x");
    assert_int_equal(multipart_boundary("multipart/mixed; boundary=x", b), -1);
    assert_int_equal(multipart_boundary("multipart/form-data", b), -1);
    assert_int_equal(multipart_boundary("multipart/form-data; boundary=", b), -1);
    assert_int_equal(multipart_boundary("multipart/form-data; boundary=\"abc", b), -1);
    assert_int_equal(multipart_boundary("multipart/form-data; boundary=a{b", b), -1);
    assert_int_equal(multipart_boundary("multipart/form-data; boundary=\"ab \"", b), -1);
    char longb[128] = "multipart/form-data; boundary=";
    memset(longb + strlen(longb), 'x', 71);
    assert_int_equal(multipart_boundary(longb, b), -1);
    assert_int_equal(multipart_boundary(NULL, b), -1);
}

static int
parse_all(const char *body, MultipartPart *parts, size_t max, const char **why)
{
    MultipartReader r;
    MultipartPart p;
    int k, n = 0;
    multipart_reader_init(&r, (const uint8_t *) body, strlen(body), "XyZ");
    while ((k = multipart_next(&r, &p)) > 0)
        if ((size_t) n < max)
            parts[n++] = p;
    *why = r.why;
    return k < 0 ? -1 : n;
}

static void
test_multipart_undici(void **state)
{
    (void) state;
    /* what undici's FormData sends for files.write() and writeFiles() */
    const char *body = "--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"file\"; "
                       "filename=\"/home/user/a %22q%22.txt\"\r\n"
                       "Content-Type: application/octet-stream\r\n\r\n"
                       "line 1\r\n--XyZ is not a delimiter here\r\n"
                       "\r\n--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"file\"; filename=\"b.bin\"\r\n\r\n"
                       "\r\n--XyZ  \r\n"
                       "Content-Disposition: form-data; name=\"note\"\r\n\r\nhi"
                       "\r\n--XyZ--\r\nepilogue";
    MultipartPart parts[4];
    const char *why;

    /* CRLF "--XyZ" inside a part always ends it: followed by neither "--" nor CRLF, the body
     * is malformed (the SDKs' boundaries are random, so this never happens to them) */
    assert_int_equal(parse_all(body, parts, 4, &why), -1);
    body = "preamble\r\n--XyZ\r\n"
           "Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a %22q%22.txt\"\r\n"
           "Content-Type: application/octet-stream\r\n\r\n"
           "line 1\r\nline 2"
           "\r\n--XyZ\r\n"
           "content-disposition:form-data;name=file;filename=b.bin\r\n\r\n"
           "\r\n--XyZ  \r\n"
           "Content-Disposition: form-data; name=\"note\"\r\n\r\nhi"
           "\r\n--XyZ--\r\nepilogue";
    assert_int_equal(parse_all(body, parts, 4, &why), 3);
    assert_string_equal(parts[0].name, "file");
    assert_true(parts[0].has_filename);
    assert_string_equal(parts[0].filename, "/home/user/a \"q\".txt");
    assert_int_equal(parts[0].len, 14);
    assert_memory_equal(parts[0].data, "line 1\r\nline 2", 14);
    assert_string_equal(parts[1].filename, "b.bin");
    assert_int_equal(parts[1].len, 0);
    assert_string_equal(parts[2].name, "note");
    assert_false(parts[2].has_filename);
    assert_memory_equal(parts[2].data, "hi", 2);
}

static void
test_multipart_encodings(void **state)
{
    (void) state;
    MultipartPart parts[2];
    const char *why;
    const char *body = "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; "
                       "filename*=UTF-8''%C3%A5%20x.txt\r\n\r\nA\r\n--XyZ\r\n"
                       "Content-Disposition: form-data; name=\"file\"; "
                       "filename=\"q\\\"uote%0Ad\"\r\n\r\nB\r\n--XyZ--";
    assert_int_equal(parse_all(body, parts, 2, &why), 2);
    assert_string_equal(parts[0].filename, "\xc3\xa5 x.txt");
    assert_string_equal(parts[1].filename, "q\"uote\nd");
}

static void
test_multipart_rejects(void **state)
{
    (void) state;
    MultipartPart parts[2];
    const char *why;
    static const char *const bad[] = {
        "no boundary here",
        "--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nnever closed",
        "--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--", /* no disposition */
        "--XyZ\r\n\r\nx\r\n--XyZ--",                              /* no headers at all */
        "--XyZ\r\nContent-Disposition: attachment; name=\"f\"\r\n\r\nx\r\n--XyZ--",
        "--XyZ\r\nContent-Disposition: form-data; filename=\"a\"\r\n\r\nx\r\n--XyZ--",
        "--XyZ\r\nContent-Disposition: form-data; name=\"f\r\n\r\nx\r\n--XyZ--",
        "--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename*=latin1''x\r\n\r\n"
        "x\r\n--XyZ--",
        "--XyZgarbage\r\n",
        "--XyZ\r\nno colon\r\n\r\nx\r\n--XyZ--",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        assert_int_equal(parse_all(bad[i], parts, 2, &why), -1);
        assert_non_null(why);
    }
}

static void
test_multipart_limits(void **state)
{
    (void) state;
    static char body[200000];
    MultipartPart parts[1];
    const char *why;
    size_t n = 0;

    for (int i = 0; i <= MULTIPART_PARTS_MAX; i++)
        n += (size_t) snprintf(body + n, sizeof(body) - n,
                               "--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nx\r\n");
    snprintf(body + n, sizeof(body) - n, "--XyZ--");
    assert_int_equal(parse_all(body, parts, 1, &why), -1);
    assert_non_null(strstr(why, "too many parts"));
    /* a header block over 8 KiB */
    n = (size_t) snprintf(body, sizeof(body), "--XyZ\r\nContent-Disposition: form-data; "
                                              "name=\"f\"\r\nX-Pad: ");
    memset(body + n, 'p', MULTIPART_PART_HEAD_MAX_BYTES);
    n += MULTIPART_PART_HEAD_MAX_BYTES;
    snprintf(body + n, sizeof(body) - n, "\r\n\r\nx\r\n--XyZ--");
    assert_int_equal(parse_all(body, parts, 1, &why), -1);
    /* a filename over 4 KiB */
    n = (size_t) snprintf(body, sizeof(body), "--XyZ\r\nContent-Disposition: form-data; "
                                              "name=\"f\"; filename=\"");
    memset(body + n, 'n', MULTIPART_FILENAME_MAX_BYTES + 1);
    n += MULTIPART_FILENAME_MAX_BYTES + 1;
    snprintf(body + n, sizeof(body) - n, "\"\r\n\r\nx\r\n--XyZ--");
    assert_int_equal(parse_all(body, parts, 1, &why), -1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_envelope_peek),     cmocka_unit_test(test_stream_request),
        cmocka_unit_test(test_codes),             cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_multipart_undici),  cmocka_unit_test(test_multipart_encodings),
        cmocka_unit_test(test_multipart_rejects), cmocka_unit_test(test_multipart_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
