/* Fuzz target: the guest proxy's request parser (guest/proxyreq.c). Invariants:
 *  - OK: the head is within the input and PROXY_HEAD_MAX_BYTES, every shorter prefix of it
 *    is NEED_MORE and every longer input gives the same decision; the host is 1..255 printable
 *    bytes without space, the port 1..65535; a rewritten head fits its buffer, ends with
 *    CRLFCRLF, carries exactly one Connection header ("close") and no bare CR, LF or NUL;
 *  - BAD: status 400 or 431, with a reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "proxyreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[PROXY_REWRITE_MAX_BYTES];
static uint8_t out2[PROXY_REWRITE_MAX_BYTES];

static size_t
count(const uint8_t *p, size_t n, const char *needle)
{
    size_t k = 0, m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++)
        k += memcmp(p + i, needle, m) == 0;
    return k;
}

static void
check_rewrite(const ProxyRequest *r)
{
    CHECK(r->out_len <= sizeof(out));
    CHECK(r->out_len >= 4 && memcmp(out + r->out_len - 4, "\r\n\r\n", 4) == 0);
    CHECK(memchr(out, '\0', r->out_len) == NULL);
    CHECK(count(out, r->out_len, "\r\n") == count(out, r->out_len, "\n"));
    CHECK(count(out, r->out_len, "\r\n") == count(out, r->out_len, "\r"));
    CHECK(count(out, r->out_len, "\r\nConnection: close\r\n") == 1);
}

static void
check_ok(const uint8_t *data, size_t size, const ProxyRequest *r)
{
    ProxyRequest p;
    size_t n = strlen(r->host);

    CHECK(r->head_len <= size && r->head_len <= PROXY_HEAD_MAX_BYTES);
    CHECK(n >= 1 && n <= TUNNEL_HOST_MAX_BYTES);
    for (size_t i = 0; i < n; i++)
        CHECK(r->host[i] > 0x20 && r->host[i] < 0x7f);
    CHECK(r->port >= 1);
    if (!r->is_connect)
        check_rewrite(r);
    else
        CHECK(r->out_len == 0);
    /* a few prefixes (all would be slow for big inputs) */
    for (size_t cut = 0; cut < r->head_len; cut += 1 + r->head_len / 16)
        CHECK(proxyreq_parse(data, cut, out2, sizeof(out2), &p) == PROXYREQ_NEED_MORE);
    CHECK(proxyreq_parse(data, r->head_len, out2, sizeof(out2), &p) == PROXYREQ_OK);
    CHECK(strcmp(p.host, r->host) == 0 && p.port == r->port && p.out_len == r->out_len);
    CHECK(memcmp(out, out2, r->out_len) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ProxyRequest r;

    switch (proxyreq_parse(data, size, out, sizeof(out), &r)) {
    case PROXYREQ_NEED_MORE:
        CHECK(size < PROXY_HEAD_MAX_BYTES);
        break;
    case PROXYREQ_BAD:
        CHECK((r.status == 400 || r.status == 431) && r.why && r.why[0]);
        break;
    case PROXYREQ_OK:
        check_ok(data, size, &r);
        break;
    }
    return 0;
}
