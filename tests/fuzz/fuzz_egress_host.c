/* Fuzz target: the egress numeric-host parser and the address classifier
 * (hostd/egress/host.c, classify.c). Invariants, not just "no crash":
 *  - an IPv4 result agrees with glibc's inet_aton() on the same text (we are stricter, never
 *    different), and text that inet_aton takes as a whole is never treated as a name;
 *  - a name comes back lowercased, 1..253 bytes, and parses again to itself;
 *  - a refusal always says why; the classifier gives the same verdict twice and names the
 *    row of every refusal. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "classify.h"
#include "fuzz_check.h"
#include "host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOST_INPUT_MAX 300

static void
check_classify(const EgressAddr *a)
{
    EgressVerdict v1, v2;
    char why[256];
    egress_classify(a, &v1);
    egress_classify(a, &v2);
    CHECK(v1.allowed == v2.allowed);
    CHECK(v1.allowed || (v1.what && v1.ref));
    egress_verdict_describe(a, &v1, why, sizeof(why));
    CHECK(why[0] != '\0');
}

static bool
only_aton_chars(const char *s)
{
    return s[0] && strspn(s, "0123456789abcdefABCDEFxX.") == strlen(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char host[HOST_INPUT_MAX + 1], name[EGRESS_NAME_MAX_BYTES + 1],
        again[EGRESS_NAME_MAX_BYTES + 1];
    const char *why = NULL;
    EgressAddr a, b;
    struct in_addr in;

    size = size > HOST_INPUT_MAX ? HOST_INPUT_MAX : size;
    memcpy(host, data, size);
    host[size] = '\0';
    HostKind k = egress_host_parse(host, &a, name, &why);
    bool aton = only_aton_chars(host) && inet_aton(host, &in) == 1;
    switch (k) {
    case HOST_NUMERIC:
        CHECK(a.family == AF_INET || a.family == AF_INET6);
        if (a.family == AF_INET) {
            CHECK(aton);
            CHECK(memcmp(&in.s_addr, a.bytes, 4) == 0);
        }
        check_classify(&a);
        break;
    case HOST_NAME:
        CHECK(!aton); /* glibc would read it as an address: it must not pass as a name */
        CHECK(strlen(name) >= 1 && strlen(name) <= EGRESS_NAME_MAX_BYTES);
        for (const char *p = name; *p; p++)
            CHECK(!(*p >= 'A' && *p <= 'Z'));
        CHECK(egress_host_parse(name, &b, again, &why) == HOST_NAME);
        CHECK(strcmp(name, again) == 0);
        break;
    case HOST_BAD:
        CHECK(why && why[0]);
        break;
    }
    if (size >= 4) { /* the raw bytes as an address, both families */
        memset(&b, 0, sizeof(b));
        b.family = data[0] & 1 ? AF_INET6 : AF_INET;
        memcpy(b.bytes, data, size < 16 ? size : 16);
        check_classify(&b);
    }
    return 0;
}
