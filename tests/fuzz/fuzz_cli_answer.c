/* Fuzz target: what the CLI reads from the daemon (or whatever answers at its URL): an event
 * stream followed (tools/events.c: line splitting, event parsing, the resume rule, output
 * data), a JSON answer, an error answer and the X-Stockade-Workspace header
 * (tools/client.c).
 *
 * Input: a byte of chunk steps and the error status, then the body. The body is fed to
 * follow_feed() in odd-sized pieces (a stream arrives in whatever pieces TCP makes), and the
 * same bytes are read as a JSON answer, an error answer and a header line.
 * Invariants, not just "no crash":
 *  - events reach the consumer in strictly increasing seq order, each an object with a seq
 *    >= 1 and a type of 1..EVENT_TYPE_MAX_BYTES of [a-z._]; after follows the last one; the
 *    events handed on are exactly the stream's event lines in order, with those at or below
 *    an earlier seq dropped (the body split here at once, each line judged by event_parse(),
 *    says which: the pieces and the resume rule must not change it);
 *    a line over the splitter's bound (LINE_MAX_BYTES here) fails the stream; an output event's
 * data is at most EVENT_DATA_MAX_BYTES and is its "data" text or the decoding of "data_b64";
 *  - an error answer becomes a message of printable ASCII only (a hostile body can put no
 *    escape sequence or line break on the operator's terminal) within the Error's bound, in
 *    the category of its status;
 *  - a JSON answer parses exactly when jansson takes the whole body (duplicates refused);
 *  - X-Stockade-Workspace is taken only as 1..15 lower-case letters. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "client.h"
#include "events.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EXPECT_MAX 4096
/* The line bound the stream is followed with: EVENT_LINE_MAX_BYTES's code path at a size
 * the fuzzer's inputs reach. */
#define LINE_MAX_BYTES 512

typedef struct {
    uint64_t seqs[EXPECT_MAX];
    size_t n;
} Seen;

static int
on_event(void *userdata, json_t *ev, uint64_t seq, Error **errp)
{
    Seen *s = userdata;
    (void) errp;
    json_t *type = json_object_get(ev, "type");
    CHECK(json_is_object(ev) && json_integer_value(json_object_get(ev, "seq")) == (json_int_t) seq);
    CHECK(seq >= 1 && (s->n == 0 || seq > s->seqs[s->n - 1]));
    size_t tn = json_string_length(type);
    CHECK(json_is_string(type) && tn >= 1 && tn <= EVENT_TYPE_MAX_BYTES &&
          strspn(json_string_value(type), "abcdefghijklmnopqrstuvwxyz._") == tn);
    uint8_t *d = NULL;
    size_t dn = 0;
    if (event_data(ev, &d, &dn, NULL) == 0) {
        json_t *text = json_object_get(ev, "data"), *b64 = json_object_get(ev, "data_b64");
        CHECK(dn <= EVENT_DATA_MAX_BYTES);
        if (json_is_string(text)) {
            CHECK(dn == json_string_length(text) && memcmp(d, json_string_value(text), dn) == 0);
        } else {
            uint8_t *w = NULL;
            size_t wn = 0;
            CHECK(base64_decode(json_string_value(b64), json_string_length(b64), &w, &wn) == 0);
            CHECK(wn == dn && memcmp(w, d, dn) == 0);
            free(w);
        }
        free(d);
    }
    if (s->n < EXPECT_MAX)
        s->seqs[s->n++] = seq;
    return 0;
}

/* What the consumer must see: the seqs of the body's complete event lines in order, those
 * not above the last one taken dropped; stops at the first malformed line, as the stream
 * fails there. *ret_failed: the stream must fail. */
static size_t
expected_seqs(const uint8_t *body, size_t n, uint64_t *out, bool *ret_failed)
{
    size_t k = 0;
    uint64_t after = 0;
    *ret_failed = false;
    for (size_t i = 0; i < n;) {
        const uint8_t *nl = memchr(body + i, '\n', n - i);
        if (!nl)
            break; /* a partial line waits for more */
        size_t len = (size_t) (nl - (body + i));
        if (len > LINE_MAX_BYTES) {
            *ret_failed = true;
            break;
        }
        json_t *ev = NULL;
        uint64_t seq = 0;
        int r = event_parse((const char *) body + i, len, &ev, &seq, NULL);
        i += len + 1;
        if (r < 0) {
            *ret_failed = true;
            break;
        }
        if (r > 0 && seq > after && k < EXPECT_MAX) {
            out[k++] = seq;
            after = seq;
        }
        json_decref(ev);
    }
    const uint8_t *last_nl = n ? memrchr(body, '\n', n) : NULL;
    size_t partial = last_nl ? n - (size_t) (last_nl - body) - 1 : n;
    if (partial > LINE_MAX_BYTES)
        *ret_failed = true;
    return k;
}

static void
check_follow(const uint8_t *body, size_t n, unsigned steps)
{
    static uint64_t want[EXPECT_MAX];
    static Seen seen;
    bool must_fail;
    size_t k = expected_seqs(body, n, want, &must_fail);

    seen.n = 0;
    Follow f = {.on_event = on_event, .userdata = &seen};
    linesplit_init(&f.lines, LINE_MAX_BYTES);
    bool failed = false;
    for (size_t off = 0, i = 0; off < n && !failed; i++) {
        size_t piece = 1 + (steps >> (i % 4) * 2 & 3) * 7 + i % 5;
        piece = piece > n - off ? n - off : piece;
        Error *e = NULL;
        failed = follow_feed(&f, body + off, piece, &e) < 0;
        CHECK(!failed || (e && e->category == E_GUEST));
        error_free(e);
        off += piece;
    }
    CHECK(failed == must_fail);
    CHECK(seen.n == k && memcmp(seen.seqs, want, k * sizeof(*want)) == 0);
    CHECK(f.after == (k ? want[k - 1] : 0));
    follow_free(&f);
}

static ErrorCategory
category_of(long status)
{
    static const struct {
        long status;
        ErrorCategory cat;
    } map[] = {{400, E_INVALID},  {401, E_UNAUTHORIZED}, {403, E_FORBIDDEN}, {404, E_NOT_FOUND},
               {409, E_CONFLICT}, {413, E_TOO_LARGE},    {431, E_TOO_LARGE}, {429, E_QUOTA},
               {502, E_GUEST},    {503, E_UNAVAILABLE},  {504, E_TIMEOUT}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].status == status)
            return map[i].cat;
    return status >= 400 && status < 500 ? E_INVALID : E_INTERNAL;
}

static void
check_error_answer(long status, const uint8_t *body, size_t n)
{
    Error *e = NULL;
    CHECK(client_map_error(status, (const char *) body, n, &e) < 0 && e);
    CHECK(e->category == category_of(status));
    size_t mn = strnlen(e->message, sizeof(e->message));
    CHECK(mn < sizeof(e->message));
    for (size_t i = 0; i < mn; i++)
        CHECK(e->message[i] >= 0x20 && e->message[i] < 0x7f);
    error_free(e);
}

static void
check_json_answer(const uint8_t *body, size_t n)
{
    json_t *o = NULL;
    Error *e = NULL;
    int r = client_parse_answer(body, n, &o, &e);
    json_t *want = n ? json_loadb((const char *) body, n, JSON_REJECT_DUPLICATES, NULL) : NULL;
    CHECK((r == 0) == (n == 0 || want != NULL));
    CHECK(r < 0 ? e && e->category == E_INTERNAL && !o : (n == 0) == (o == NULL));
    CHECK(!o || json_equal(o, want));
    json_decref(o);
    json_decref(want);
    error_free(e);
}

static void
check_header(const uint8_t *body, size_t n)
{
    char h[CLIENT_WORKSPACE_HEADER_BYTES] = "";
    client_workspace_header((const char *) body, n, h);
    size_t hn = strlen(h);
    CHECK(hn < CLIENT_WORKSPACE_HEADER_BYTES && strspn(h, "abcdefghijklmnopqrstuvwxyz") == hn);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    long status = 400 + data[1] % 200;
    const uint8_t *body = data + 2;
    size_t n = size - 2;
    check_follow(body, n, data[0]);
    check_error_answer(status, body, n);
    check_json_answer(body, n);
    check_header(body, n);
    return 0;
}
