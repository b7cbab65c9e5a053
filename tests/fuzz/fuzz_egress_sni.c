/* Fuzz target: the ClientHello server-name parser and the first-flight inspector
 * (hostd/egress/sni.c, inspect.c). The input is a stream's first bytes. Invariants, not just
 * "no crash":
 *  - the verdict on the whole input does not depend on how it arrived: every prefix either
 *    asks for more or already gives the final verdict (a refusal or a pass never turns into
 *    something else with more bytes, so the engine may decide early);
 *  - a found name is a host name (host.h) that parses to itself; SNI_BAD always says why;
 *  - the inspector passes TLS only when the parser found exactly the stream's name, without ECH,
 *    and every refusal has a known reason and a printable detail. */
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "inspect.h"
#include "sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "a.example" /* the stream's host in the inspector */
#define FUZZ_PORT 443
#define FUZZ_PREFIX_STEP 97 /* prefixes checked: every 97th byte (and the whole) */

static void
check_sni(const uint8_t *data, size_t size)
{
    char again[EGRESS_NAME_MAX_BYTES + 1];
    const char *why;
    EgressAddr a;
    SniResult r;
    SniStatus s = egress_sni_parse(data, size, &r);

    if (s == SNI_FOUND) {
        CHECK(egress_host_parse(r.name, &a, again, &why) == HOST_NAME);
        CHECK(strcmp(again, r.name) == 0);
    } else {
        CHECK(r.name[0] == '\0');
    }
    CHECK((s != SNI_BAD && s != SNI_TOO_LARGE) || (r.why && r.why[0]));
    for (size_t k = 0; k < size; k += FUZZ_PREFIX_STEP) {
        SniResult p;
        SniStatus ps = egress_sni_parse(data, k, &p);
        CHECK(ps == SNI_NEED_MORE || ps == s);
    }
}

static bool
known_reason(const char *r)
{
    return r && (!strcmp(r, "sni_mismatch") || !strcmp(r, "host_mismatch") ||
                 !strcmp(r, "unknown_protocol") || !strcmp(r, "inspect_limit"));
}

static void
check_inspect(const uint8_t *data, size_t size, bool eof)
{
    InspectVerdict v;
    SniResult r;
    InspectStatus s = egress_inspect_first(data, size, eof, FUZZ_NAME, FUZZ_PORT, &v);

    if (s == INSPECT_REFUSE) {
        CHECK(known_reason(v.reason));
        for (const char *p = v.detail; *p; p++)
            CHECK(*p >= 0x20 && *p < 0x7f);
    }
    if (eof)
        CHECK(s != INSPECT_NEED_MORE);
    if (s == INSPECT_PASS && size > 0 && data[0] == TLS_CONTENT_HANDSHAKE) {
        CHECK(egress_sni_parse(data, size, &r) == SNI_FOUND);
        CHECK(strcmp(r.name, FUZZ_NAME) == 0 && !r.ech);
    }
    if (size >= EGRESS_FIRST_FLIGHT_MAX_BYTES)
        CHECK(s != INSPECT_NEED_MORE);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2 * EGRESS_FIRST_FLIGHT_MAX_BYTES)
        size = 2 * EGRESS_FIRST_FLIGHT_MAX_BYTES;
    check_sni(data, size);
    check_inspect(data, size, false);
    check_inspect(data, size, true);
    return 0;
}
