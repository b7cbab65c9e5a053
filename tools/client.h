/* The CLI's HTTP client for the daemon's public v1 API (hostd/api/API.md), on libcurl.
 *
 * Endpoint: a unix socket (operators; CURLOPT_UNIX_SOCKET_PATH) or an http(s) base URL; an
 * https one's certificate is verified (name and chain: the system's store, or a CA file).
 * A token, when given, goes out as `Authorization: Bearer <token>`. Every answer is
 * untrusted: JSON bodies are capped at CLIENT_JSON_MAX_BYTES, error bodies at
 * CLIENT_ERROR_BODY_MAX_BYTES, raw downloads at the caller's cap; the API's error body
 * `{"error":{"code","message",...}}` becomes an Error whose category follows the status and
 * whose message is escaped and ends with what to do about it. Nothing here prints. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CLIENT_JSON_MAX_BYTES (16u << 20)       /* one JSON answer */
#define CLIENT_ERROR_BODY_MAX_BYTES (64u << 10) /* an error answer; the rest is dropped */
#define CLIENT_MESSAGE_MAX_BYTES 300            /* of the daemon's message, once escaped */
#define CLIENT_CONNECT_TIMEOUT_S 10
#define CLIENT_REQUEST_TIMEOUT_S 600 /* a whole non-streaming request (64 MiB uploads) */
#define CLIENT_STALL_TIMEOUT_S                                                                     \
    45 /* no byte for this long: the connection is dead (a                                         \
          followed event stream sends a heartbeat every 15 s) */
#define CLIENT_URL_MAX_BYTES 8192
#define CLIENT_TOKEN_MAX_BYTES 4096
#define CLIENT_WHY_BYTES ERROR_MESSAGE_MAX /* a reason: an Error message or libcurl text */
#define CLIENT_WORKSPACE_HEADER_BYTES 16   /* X-Stockade-Workspace's value with its NUL */

/* json_t owned by a variable: _cleanup_json_ json_t *o = NULL; (jansson's json_decrefp) */
#define _cleanup_json_ _cleanup_(json_decrefp)

typedef struct ClientOptions {
    const char *socket_path; /* used when url is NULL */
    const char *url;         /* http://host:port or https://..., optional path prefix */
    const char *token;       /* NULL or "": no Authorization header */
    const char *cacert;      /* an https url's certificate must chain to this CA file (PEM)
                              * alone; NULL: the system's store */
} ClientOptions;

typedef struct Client Client;

/* Checks the options (scheme http/https, no CR/LF in the token) and sets up libcurl. */
int client_new(const ClientOptions *o, Client **ret, Error **errp);
void client_free(Client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Client, client_free)

/* "unix:/var/lib/stockade/api.sock" or the base URL: for messages. */
const char *client_where(const Client *c);
/* The HTTP status of the last request's answer, 0 when none came (or c is NULL): tells a
 * refusal of the daemon (4xx) from the CLI's own checks. */
long client_last_status(const Client *c);
/* True when the last request failed because nothing listens where the daemon should (no
 * socket file, or the connection refused): a daemon not started yet, or still starting. A
 * denied permission or an unknown host is not this. */
bool client_nobody_listens(const Client *c);

/* Hooks for every later transfer until changed. interrupted() is polled about once a second
 * and on each chunk; true ends the transfer (streams report CLIENT_STREAM_INTERRUPTED, other
 * calls fail with E_UNAVAILABLE "interrupted"). progress() gets bytes so far and totals
 * (0 when unknown). */
typedef bool (*ClientInterruptFn)(void *userdata);
typedef void (*ClientProgressFn)(void *userdata, uint64_t down, uint64_t down_total, uint64_t up,
                                 uint64_t up_total);
void client_set_interrupt(Client *c, ClientInterruptFn fn, void *userdata);
void client_set_progress(Client *c, ClientProgressFn fn, void *userdata);

/* A JSON request. body may be NULL (no body). On 2xx, *ret (if ret) gets the parsed answer,
 * or NULL for an empty body; the caller owns it. Other statuses and transport failures fail:
 * E_UNAVAILABLE for "cannot connect" and 503, the status's category otherwise. */
int client_json(Client *c, const char *method, const char *path, json_t *body, json_t **ret,
                Error **errp);

/* POST of raw bytes (an exec's stdin); the JSON answer as for client_json. */
int client_post_bytes(Client *c, const char *path, const void *data, size_t len, json_t **ret,
                      Error **errp);

/* PUT of raw bytes; the JSON answer as for client_json. */
int client_put(Client *c, const char *path, const void *data, size_t len, json_t **ret,
               Error **errp);

typedef enum ClientStreamEnd {
    CLIENT_STREAM_DONE,        /* the answer ended normally */
    CLIENT_STREAM_DROPPED,     /* connection failed or broke (retryable); see *ret_why */
    CLIENT_STREAM_INTERRUPTED, /* the interrupt hook said stop */
} ClientStreamEnd;

/* Gets one chunk of a 2xx body. Return -1 with errp to abort the transfer (the call then fails
 * with that error). */
typedef int (*ClientSinkFn)(void *userdata, const uint8_t *data, size_t len, Error **errp);

typedef struct ClientStreamResult {
    ClientStreamEnd end;
    bool answered;              /* an HTTP status arrived (false: never connected) */
    char why[CLIENT_WHY_BYTES]; /* for DROPPED: libcurl's reason */
    char workspace_header[CLIENT_WORKSPACE_HEADER_BYTES]; /* X-Stockade-Workspace, if sent
                                                           * ("final", "mirror") */
} ClientStreamResult;

/* A GET whose 2xx body goes to sink as it arrives, with no total time limit (a stall of
 * CLIENT_STALL_TIMEOUT_S counts as dropped). Non-2xx answers fail (-1, mapped error). */
int client_stream(Client *c, const char *path, ClientSinkFn sink, void *userdata,
                  ClientStreamResult *ret, Error **errp);

/* A GET of at most max_bytes into memory (E_TOO_LARGE beyond). *ret is NUL-terminated. */
int client_get_bytes(Client *c, const char *path, size_t max_bytes, uint8_t **ret, size_t *ret_len,
                     Error **errp);

/* A 2xx JSON answer of len bytes (at most CLIENT_JSON_MAX_BYTES, as received): *ret gets
 * it parsed (duplicate keys refused), or NULL when empty; E_INTERNAL when it is not JSON.
 * Nothing when ret is NULL. Pure. */
int client_parse_answer(const uint8_t *buf, size_t len, json_t **ret, Error **errp);

/* X-Stockade-Workspace from one response header line as libcurl hands it: ret gets the
 * value when the line is that header and its value is 1..15 lower-case letters; otherwise
 * ret is left as it was. Pure. */
void client_workspace_header(const char *line, size_t n, char ret[CLIENT_WORKSPACE_HEADER_BYTES]);

/* Maps an HTTP error answer to an Error (pure; unit-tested). body may be anything. */
int client_map_error(long status, const char *body, size_t len, Error **errp);

/* Percent-encodes a workspace path for a URL, keeping '/' between segments. NULL on OOM. */
char *client_escape_path(const char *path);
