/* TLS ClientHello builder for tests of hostd/egress/sni.c and the egress engine: a plausible
 * TLS 1.3 ClientHello (version, random, session id, cipher suites, compression, then
 * supported_versions, a key share and the server names asked for), cut into records of a
 * chosen size. Test code only: inputs are trusted, buffers are the caller's. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLSHELLO_MAX_BYTES 32768

typedef struct TlsHelloSpec {
    const char *names[4]; /* server_name entries, NULL-terminated; none: no extension */
    bool two_sni_exts;    /* the server_name extension twice */
    bool ech;             /* an encrypted_client_hello extension */
    size_t padding;       /* a padding extension of this many bytes (0: none) */
    size_t record_bytes;  /* payload per record; 0: one record */
} TlsHelloSpec;

/* The records into out[0..cap); returns their length. */
size_t tlshello_build(const TlsHelloSpec *spec, uint8_t *out, size_t cap);
