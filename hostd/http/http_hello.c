/* See http_hello.h. RFC 8446 5.1: a ClientHello travels in handshake records (type 22) whose
 * legacy version is 0x0301..0x0304 (0x0300 too, from old clients); a record is at most 2^14
 * bytes of plaintext. Nothing more is judged here: GnuTLS parses the hello on MHD's thread. */
#include "http_hello.h"

#define TLS_CONTENT_HANDSHAKE 22

bool
http_head_complete(size_t *scanned, const uint8_t *buf, size_t len)
{
    for (size_t i = *scanned > 2 ? *scanned - 2 : 0; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        if ((i + 1 < len && buf[i + 1] == '\n') ||
            (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n'))
            return true;
    }
    *scanned = len;
    return false;
}

HttpHelloState
http_tls_hello_state(const uint8_t *buf, size_t len)
{
    if (len >= 1 && buf[0] != TLS_CONTENT_HANDSHAKE)
        return HTTP_HELLO_NOT_TLS;
    if (len >= 2 && buf[1] != 3)
        return HTTP_HELLO_NOT_TLS;
    if (len >= 3 && buf[2] > 4)
        return HTTP_HELLO_NOT_TLS;
    if (len < HTTP_TLS_RECORD_HEADER_BYTES)
        return HTTP_HELLO_MORE;
    size_t body = (size_t) buf[3] << 8 | buf[4];
    if (body == 0 || body > HTTP_TLS_RECORD_MAX_BYTES - HTTP_TLS_RECORD_HEADER_BYTES)
        return HTTP_HELLO_NOT_TLS;
    return len >= HTTP_TLS_RECORD_HEADER_BYTES + body ? HTTP_HELLO_COMPLETE : HTTP_HELLO_MORE;
}
