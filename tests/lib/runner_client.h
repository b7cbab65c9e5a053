/* A small synchronous client of the runner protocol (proto/runner.proto), for tests: the
 * runner's own host-mode test and the daemon's real-guest test.
 *
 * It owns one connected stream fd (a socketpair end, or a unix socket on a guest's
 * virtio-serial channel), sends HostMsg frames and receives GuestMsg frames with timeouts.
 * Every received frame goes through msg_decode_guest(), i.e. the same decode + limit checks
 * the daemon applies, so a test fails if the runner ever sends something the daemon would
 * drop the guest for. While it waits to send, it keeps reading (and queueing what arrives),
 * so a test cannot deadlock against a runner whose outbound queue is full.
 *
 * Messages that are not the reply being waited for are kept in arrival order and returned
 * by runner_client_next(). Returned GuestMsg are owned by the caller (msg_free_guest).
 * Failures return -1 with errno (ETIMEDOUT, ECONNRESET for EOF, EPROTO for a bad frame or
 * message) and a human-readable reason in runner_client_error(). Not thread-safe. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "message.h"

typedef struct RunnerClient RunnerClient;

/* Takes ownership of fd (made non-blocking). NULL on allocation failure (fd is closed). */
RunnerClient *runner_client_new(int fd);
void runner_client_free(RunnerClient *c);
int runner_client_fd(const RunnerClient *c);
const char *runner_client_error(const RunnerClient *c);

/* Sends the sync marker with nonce, drops everything (stale bytes, earlier messages, the
 * stash) until the runner echoes it, and returns the Ready that follows (nonce checked). */
int runner_client_sync(RunnerClient *c, uint64_t nonce, int timeout_ms, GuestMsg **ret_ready);

/* Sends m. A zero req_id is replaced by a fresh one (except for Stdin and the tunnel
 * messages, which have none); *ret_req_id (if not NULL) gets the one used. */
int runner_client_send(RunnerClient *c, HostMsg *m, int timeout_ms, uint32_t *ret_req_id);
/* Sends raw bytes (malformed frames, markers) as they are. */
int runner_client_send_raw(RunnerClient *c, const void *data, size_t len, int timeout_ms);

/* Sends m and waits for the message carrying its req_id (any body: the reply or an Error). */
int runner_client_call(RunnerClient *c, HostMsg *m, int timeout_ms, GuestMsg **ret_reply);
/* The next message not yet returned: kept ones first, then from the wire. */
int runner_client_next(RunnerClient *c, int timeout_ms, GuestMsg **ret);
/* The next message whose body is body_case (others are kept for runner_client_next), e.g.
 * the ExecExit of an exec while its output is still arriving. match_exec_id 0 = any; for
 * tunnel messages it matches the stream id. */
int runner_client_wait_for(RunnerClient *c, int body_case, uint32_t match_exec_id, int timeout_ms,
                           GuestMsg **ret);
