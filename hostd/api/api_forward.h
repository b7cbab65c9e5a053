/* Forwarding (issue 16, "any host answers for any session"): in cluster mode a request for a
 * session another host owns is proxied to that host (api_forward.c); this header also holds
 * the pure rules (api_forward_rules.c: which requests forward, the upstream URL, which
 * headers cross, the host-to-host identity check, the hop's faces, a per-key tally), linked
 * alone by unit_api_forward.
 *
 * Trust: the forwarding host has authenticated the caller from its own copy of the tokens;
 * it sends the owner's host-to-host listener (api_hop.c: never a client's listener, issue
 * 25) the hop credential (API_FORWARD_HOST_HEADER: the hop key derived from the cluster's
 * host secret, hostd/cluster/cluster_keys.h, never the secret), the host the hop is for
 * (API_HOP_TO_HEADER), the face it is for (API_HOP_FACE_HEADER) and, for the native face,
 * the caller's resolved identity (API_FORWARD_TENANT_HEADER, API_FORWARD_ADMIN_HEADER). The
 * owner's listener serves nothing without a credential equal (constant time) to one of its
 * own hop keys (a rotation's two), and refuses a hop for another host (421); a client's
 * listener refuses any of these headers (401), so a client that sends them gets nothing from
 * them. A request that came as a hop is never forwarded again (one hop), on every face. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define API_FORWARD_HOST_HEADER "X-Stockade-Host-Auth"          /* the hop credential */
#define API_FORWARD_TENANT_HEADER "X-Stockade-Forwarded-Tenant" /* the caller's tenant */
#define API_FORWARD_ADMIN_HEADER "X-Stockade-Forwarded-Admin"   /* "1": an operator */
#define API_HOP_TO_HEADER "X-Stockade-Hop-To"                   /* the host it is for */
#define API_HOP_FACE_HEADER "X-Stockade-Hop-Face"               /* api, e2b-api, e2b-envd */
/* On the hop listener's 401 for a refused credential (any face): the forwarding host answers
 * its client 502 naming the owner, never the owner's 401 (the caller's key was not at fault). */
#define API_HOP_REFUSED_HEADER "X-Stockade-Hop-Refused"
#define API_FORWARD_TENANT_MAX_BYTES 63
#define API_TALLY_KEYS 1024 /* distinct keys an ApiTally counts at once */

/* Which of the owner's faces a hop is for: its host-to-host listener hands it to that face's
 * own guard and handler. */
typedef enum {
    API_HOP_FACE_API,
    API_HOP_FACE_E2B_API,
    API_HOP_FACE_E2B_ENVD,
    API_HOP_FACES
} ApiHopFace;
const char *api_hop_face_name(ApiHopFace f);
/* The face a API_HOP_FACE_HEADER value names; -1 for anything else (or NULL). */
int api_hop_face_parse(const char *name);

/* Counts per key (a tenant, a lookup scope) of things held at once, to cap each key's share
 * of a budget every key draws from. No allocation: a fixed table; the caller locks. */
typedef struct {
    char key[API_FORWARD_TENANT_MAX_BYTES + 1];
    unsigned n; /* 0: a free slot */
} ApiTallySlot;
typedef struct {
    ApiTallySlot slot[API_TALLY_KEYS];
} ApiTally;
/* One more for key, unless it holds max already, the key is over
 * API_FORWARD_TENANT_MAX_BYTES or the table has no slot left for a new key: false, nothing
 * counted. */
bool api_tally_enter(ApiTally *t, const char *key, unsigned max);
/* One less for key (a key not counted: nothing). */
void api_tally_leave(ApiTally *t, const char *key);
unsigned api_tally_count(const ApiTally *t, const char *key);
#define API_FORWARD_URL_MAX_BYTES (255 + 4096 + 1 + 4096) /* advertise_url, path, '?', query */

/* Whether a request with these decoded path segments names one session (and so may be
 * forwarded): /v1/sessions/{id}/... and /v1/tasks/{id}/...; the id is segment 2. */
bool api_forward_is_session_path(char *const *seg, size_t n);

/* Whether a request is a create another host may place here (issue 16: a create goes to a
 * host with an idle guest): POST /v1/sessions and POST /v1/tasks. The owner accepts a
 * forwarded identity on these and on session paths only. */
bool api_forward_is_create(const char *method, char *const *seg, size_t n);

/* base (an advertise_url: http:// or https://, a trailing '/' dropped) + raw_path (checked
 * by the HTTP layer, starts with '/') + '?' + raw_query (when not empty; printable ASCII
 * without spaces or '#') into buf. -1 when something is malformed or it does not fit. */
int api_forward_url(const char *base, const char *raw_path, const char *raw_query, char *buf,
                    size_t cap);

/* Which of the owner's response headers are passed back to the client (the layer sets
 * Content-Type, Content-Length, caching and framing headers itself). Case-insensitive. */
bool api_forward_response_header_kept(const char *name);

/* The owner's answer is another host's: the hop reads only these pieces of it (libcurl
 * parses the status line, the length and the framing). */
#define API_FORWARD_HEADER_NAME_MAX_BYTES 63
#define API_FORWARD_HEADER_LINE_MAX_BYTES 1024 /* a response header line the hop keeps */
/* One response header line as libcurl hands it ("Name: value" and its CRLF). 0 and the
 * name, NUL-terminated, and the value's span, without leading blanks or trailing CR, LF and
 * spaces, when the line is at most API_FORWARD_HEADER_LINE_MAX_BYTES, has a name of 1 to
 * API_FORWARD_HEADER_NAME_MAX_BYTES token bytes (RFC 9110) before its ':' and a value of
 * text (no control byte but HTAB, no DEL): what the hop may repeat to its client. -1 for any
 * other line (ignored). */
int api_forward_header_split(const char *line, size_t len,
                             char ret_name[API_FORWARD_HEADER_NAME_MAX_BYTES + 1],
                             const char **ret_value, size_t *ret_value_len);
/* Whether the hop streams the owner's answer to its client as it comes, rather than
 * buffering it whole (at most buffer_bytes) and answering once: not when it is sized and
 * fits, nor while the request body is still going up, nor when the owner refused this host's
 * own credential (refused: its 401 to a hop carrying this host's identity, or marked as the
 * hop's refusal): this host answers that itself. */
bool api_forward_streams(bool chunked, int64_t content_length, uint64_t buffer_bytes, bool refused,
                         bool body_sent);

/* Whether presented is a hop credential this host accepts (in constant time). */
typedef bool (*ApiForwardCredentialFn)(void *userdata, const char *presented);

/* The check of a forwarded identity. credential_ok: this host's check of the hop
 * credential (NULL: not a cluster); hop: the request came in on the host-to-host listener;
 * presented, tenant, admin: the request's three headers (NULL when absent). On a client's
 * listener (!hop): 1 when none of them came (not forwarded), -1 when any did (refuse: only
 * the host-to-host listener takes them). On the host-to-host listener: 0 and
 * ret_tenant/ret_admin filled when the credential is accepted and the tenant is well formed,
 * -1 otherwise (a hop always carries an identity). */
int api_forward_identity(ApiForwardCredentialFn credential_ok, void *userdata, bool hop,
                         const char *presented, const char *tenant, const char *admin,
                         char ret_tenant[API_FORWARD_TENANT_MAX_BYTES + 1], bool *ret_admin);
