/* Replies to the host, and the mapping from errors to runner.proto Error codes.
 * Short aliases for the generated protobuf-c names live here too. Everything but the
 * reply_* helpers (which append to an OutQueue) is pure. No logging. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "message.h"
#include "outq.h"

typedef Stockade__Runner__Error__Code ErrCode;
#define ERRC(x) STOCKADE__RUNNER__ERROR__CODE__##x
#define GBODY(x) STOCKADE__RUNNER__GUEST_MSG__BODY_##x
#define HBODY(x) STOCKADE__RUNNER__HOST_MSG__BODY_##x

/* Which Error code an error category becomes on the wire. */
ErrCode reply_code_from_category(ErrorCategory c);
/* Which category a failed syscall on the workspace or an exec belongs to. */
ErrorCategory reply_category_from_errno(int e);
/* The req_id (field 1, varint) of a HostMsg payload that did not decode, or 0. Walks the
 * top-level wire fields with bounds checks only. */
uint32_t reply_peek_req_id(const uint8_t *payload, size_t len);
/* Copies in into out[0..cap) as printable ASCII ('?' for anything else), at most
 * ERROR_MESSAGE_MAX_BYTES, so the host's checks accept it. */
void reply_sanitize(char *out, size_t cap, const char *in);

/* Append one reply. -1 when the queue refuses it (see outq.h); callers at the loop edge log. */
int reply_ack(OutQueue *q, uint32_t req_id);
int reply_error(OutQueue *q, uint32_t req_id, ErrCode code, const char *fmt, ...) _printf_(4, 5);
int reply_from_error(OutQueue *q, uint32_t req_id, const Error *e);
/* Ready{nonce, PROTOCOL_VERSION, STOCKADE_VERSION} as a message (not queued). */
void reply_ready_init(GuestMsg *m, Stockade__Runner__Ready *ready, uint64_t nonce);
