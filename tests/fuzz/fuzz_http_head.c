/* Fuzz target: the TCP front door's head scan (hostd/http/http_hello.c, http_head_complete(),
 * called by http_accept.c on what it peeks). Input: a connection's first bytes, peeked in
 * growing prefixes whose steps come from the input's first byte (1..13 bytes a step, as
 * segments arrive). Invariants, not just "no crash":
 *  - at every step the verdict is what a plain search of the whole prefix for LF LF or
 *    LF CR LF says: the incremental scan never misses a blank line that straddles two peeks,
 *    and never sees one that is not there;
 *  - the scan position only grows and never passes the bytes peeked;
 *  - the same bytes peeked all at once give the same final verdict. */
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "http_hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
has_blank_line(const uint8_t *buf, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++)
        if (buf[i] == '\n' &&
            (buf[i + 1] == '\n' || (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')))
            return true;
    return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t steps[] = {1, 2, 3, 5, 8, 13, 1, 1, 4, 7};
    if (size == 0)
        return 0;
    size_t k = data[0] % (sizeof(steps) / sizeof(steps[0])), scanned = 0, len = 0;
    const uint8_t *buf = data + 1;
    size_t n = size - 1;
    bool done = false;

    while (!done && len < n) {
        len += steps[k++ % (sizeof(steps) / sizeof(steps[0]))];
        if (len > n)
            len = n;
        size_t before = scanned;
        done = http_head_complete(&scanned, buf, len);
        CHECK(done == has_blank_line(buf, len));
        CHECK(scanned >= before && scanned <= len);
    }
    size_t all = 0;
    CHECK(http_head_complete(&all, buf, n) == has_blank_line(buf, n));
    return 0;
}
