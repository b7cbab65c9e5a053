/* Decode, check and encode channel messages. Pure: no I/O.
 *
 * msg_decode_*() unpacks one frame payload with an allocator capped at
 * DECODE_ARENA_MAX_BYTES, then checks every limit of runner.proto. On failure it returns
 * NULL and writes a printable reason into err[0..errcap). The result is freed with
 * msg_free_*(). Both ends use the same code: the runner decodes HostMsg, the daemon GuestMsg. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "runner.pb-c.h"

typedef Stockade__Runner__HostMsg HostMsg;
typedef Stockade__Runner__GuestMsg GuestMsg;

/* A TunnelOpenResult code, and one by its short name: OPEN_CODE(DENIED). */
typedef Stockade__Runner__TunnelOpenResult__Code OpenCode;
#define OPEN_CODE(x) STOCKADE__RUNNER__TUNNEL_OPEN_RESULT__CODE__##x

HostMsg *msg_decode_host(const uint8_t *payload, size_t len, char *err, size_t errcap);
GuestMsg *msg_decode_guest(const uint8_t *payload, size_t len, char *err, size_t errcap);
void msg_free_host(HostMsg *m);
void msg_free_guest(GuestMsg *m);

/* Check an already-unpacked message (also used on what we are about to send, in tests). */
int msg_check_host(const HostMsg *m, char *err, size_t errcap);
int msg_check_guest(const GuestMsg *m, char *err, size_t errcap);

/* False for the host messages that carry no req_id (Stdin and the tunnel messages). */
bool msg_host_needs_req_id(int body_case);

/* Encodes header + message into out[0..cap). Returns -1 (errno EMSGSIZE) when the message
 * is over FRAME_MAX_BYTES or does not fit in cap. */
int msg_encode_host(const HostMsg *m, uint8_t *out, size_t cap, size_t *ret_len);
int msg_encode_guest(const GuestMsg *m, uint8_t *out, size_t cap, size_t *ret_len);

/* A workspace-relative path as defined in runner.proto ("Paths"). Empty is allowed only
 * when allow_empty (meaning /workspace itself). */
bool msg_path_is_valid(const char *path, bool allow_empty);
