/* Decoding with a capped allocator, and encoding. The checks live in check_host.c and
 * check_guest.c. */
#include "message.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t used;
} DecodeBudget;

static void *
budget_alloc(void *data, size_t size)
{
    DecodeBudget *b = data;
    if (size > DECODE_ARENA_MAX_BYTES - b->used)
        return NULL;
    b->used += size;
    return malloc(size);
}

static void
budget_free(void *data, void *ptr)
{
    (void) data;
    free(ptr); /* plain free, so the default allocator can free the result later */
}

static ProtobufCMessage *
msg_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *payload, size_t len,
           char *err, size_t errcap)
{
    DecodeBudget budget = {0};
    ProtobufCAllocator alloc = {budget_alloc, budget_free, &budget};

    if (len == 0 || len > FRAME_MAX_BYTES) {
        snprintf(err, errcap, "payload of %zu bytes is outside 1..%u", len, FRAME_MAX_BYTES);
        return NULL;
    }
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, &alloc, len, payload);
    if (!m)
        snprintf(err, errcap, "not a valid %s (or over the decode budget)", desc->short_name);
    return m;
}

HostMsg *
msg_decode_host(const uint8_t *payload, size_t len, char *err, size_t errcap)
{
    HostMsg *m = (HostMsg *) msg_unpack(&stockade__runner__host_msg__descriptor, payload, len,
                                        err, errcap);
    if (m && msg_check_host(m, err, errcap) < 0) {
        msg_free_host(m);
        return NULL;
    }
    return m;
}

GuestMsg *
msg_decode_guest(const uint8_t *payload, size_t len, char *err, size_t errcap)
{
    GuestMsg *m = (GuestMsg *) msg_unpack(&stockade__runner__guest_msg__descriptor, payload, len,
                                          err, errcap);
    if (m && msg_check_guest(m, err, errcap) < 0) {
        msg_free_guest(m);
        return NULL;
    }
    return m;
}

void
msg_free_host(HostMsg *m)
{
    if (m)
        protobuf_c_message_free_unpacked(&m->base, NULL);
}

void
msg_free_guest(GuestMsg *m)
{
    if (m)
        protobuf_c_message_free_unpacked(&m->base, NULL);
}

static int
msg_encode(const ProtobufCMessage *m, uint8_t *out, size_t cap, size_t *ret_len)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    if (n == 0 || n > FRAME_MAX_BYTES || n + FRAME_HDR_BYTES > cap) {
        errno = EMSGSIZE;
        return -1;
    }
    frame_put_header(out, (uint32_t) n);
    protobuf_c_message_pack(m, out + FRAME_HDR_BYTES);
    *ret_len = n + FRAME_HDR_BYTES;
    return 0;
}

int
msg_encode_host(const HostMsg *m, uint8_t *out, size_t cap, size_t *ret_len)
{
    return msg_encode(&m->base, out, cap, ret_len);
}

int
msg_encode_guest(const GuestMsg *m, uint8_t *out, size_t cap, size_t *ret_len)
{
    return msg_encode(&m->base, out, cap, ret_len);
}

bool
msg_path_is_valid(const char *path, bool allow_empty)
{
    size_t len = strnlen(path, PATH_MAX_BYTES + 1);
    unsigned depth = 0;

    if (len == 0)
        return allow_empty;
    if (len > PATH_MAX_BYTES || path[0] == '/')
        return false;
    for (const char *p = path; *p;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t) (slash - p) : strlen(p);
        if (n == 0 || n > NAME_MAX_BYTES)
            return false; /* empty component ("a//b", trailing "/") or too long */
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (++depth > PATH_MAX_DEPTH)
            return false;
        p += n + (slash ? 1 : 0);
        if (slash && *p == '\0')
            return false;
    }
    return true;
}
