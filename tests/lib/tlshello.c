/* See tlshello.h. */
#include "tlshello.h"

#include <string.h>

typedef struct B {
    uint8_t *p;
    size_t n, cap;
} B;

static void
put(B *b, const void *data, size_t n)
{
    if (b->n + n <= b->cap)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void
put_be(B *b, size_t v, unsigned bytes)
{
    for (unsigned i = bytes; i-- > 0;)
        put(b, (uint8_t[]){(uint8_t) (v >> (8 * i))}, 1);
}

static void
put_ext(B *b, unsigned type, const uint8_t *data, size_t n)
{
    put_be(b, type, 2);
    put_be(b, n, 2);
    put(b, data, n);
}

static void
put_sni(B *b, const TlsHelloSpec *s)
{
    uint8_t list[1024];
    B l = {list, 2, sizeof(list)};
    for (size_t i = 0; i < 4 && s->names[i]; i++) {
        put_be(&l, 0, 1);
        put_be(&l, strlen(s->names[i]), 2);
        put(&l, s->names[i], strlen(s->names[i]));
    }
    list[0] = (uint8_t) ((l.n - 2) >> 8);
    list[1] = (uint8_t) (l.n - 2);
    put_ext(b, 0x0000, list, l.n);
}

static size_t
hello_message(const TlsHelloSpec *s, uint8_t *out, size_t cap)
{
    static const uint8_t versions[] = {2, 0x03, 0x04};
    static const uint8_t suites[] = {0x13, 0x01, 0x13, 0x02, 0x13, 0x03};
    uint8_t ext[TLSHELLO_MAX_BYTES - 1024], share[2 + 4 + 32] = {0, 36, 0, 0x1d, 0, 32};
    B e = {ext, 0, sizeof(ext)}, m = {out, 0, cap};

    if (s->names[0])
        put_sni(&e, s);
    if (s->names[0] && s->two_sni_exts)
        put_sni(&e, s);
    put_ext(&e, 0x002b, versions, sizeof(versions));
    put_ext(&e, 0x0033, share, sizeof(share));
    if (s->ech)
        put_ext(&e, 0xfe0d, (const uint8_t[]){0, 0, 1, 0, 1, 7}, 6);
    if (s->padding) {
        static uint8_t zeros[TLSHELLO_MAX_BYTES / 2];
        put_ext(&e, 0x0015, zeros, s->padding < sizeof(zeros) ? s->padding : sizeof(zeros));
    }
    size_t body = 2 + 32 + 1 + 32 + 2 + sizeof(suites) + 2 + 2 + e.n;
    put_be(&m, 1, 1);
    put_be(&m, body, 3);
    put_be(&m, 0x0303, 2);
    for (int i = 0; i < 32; i++)
        put_be(&m, (size_t) i * 7, 1); /* random */
    put_be(&m, 32, 1);
    for (int i = 0; i < 32; i++)
        put_be(&m, (size_t) i, 1); /* legacy_session_id */
    put_be(&m, sizeof(suites), 2);
    put(&m, suites, sizeof(suites));
    put_be(&m, 1, 1);
    put_be(&m, 0, 1); /* compression: null */
    put_be(&m, e.n, 2);
    put(&m, ext, e.n);
    return m.n;
}

size_t
tlshello_build(const TlsHelloSpec *spec, uint8_t *out, size_t cap)
{
    uint8_t msg[TLSHELLO_MAX_BYTES];
    size_t n = hello_message(spec, msg, sizeof(msg));
    size_t per = spec->record_bytes ? spec->record_bytes : 16384;
    B b = {out, 0, cap};

    for (size_t off = 0; off < n; off += per) {
        size_t k = n - off < per ? n - off : per;
        put_be(&b, 22, 1);
        put_be(&b, 0x0301, 2);
        put_be(&b, k, 2);
        put(&b, msg + off, k);
    }
    return b.n;
}
