/* The host-to-host listener (issue 25, finding 6): where every other host's hops arrive.
 *
 * Why a listener of its own: a hop from host A to host B comes from A's one address. On B's
 * client listeners it shared the per-address limit (64 native, 256 E2B) and the connection
 * slots with every client, so one tenant holding 64 event streams through A took every slot
 * A had on B: every other tenant's request through A for B's sessions answered 502, creates
 * placed on B failed, and any client behind A's address was refused. Exempting credentialed
 * heads on the client listener was the other way; it was not taken, because (measured, see
 * hostd/api/README.md) the hops would still share the client listener's connection slots
 * (512, filled by any crowd of clients from many addresses), and because the exemption would
 * read the head before TLS is terminated (the front door sees only ciphertext on HTTPS).
 *
 * Here: one HttpServer with peer_listener set (faces read http_request_from_peer() and never
 * pass such a request on: one hop), serving HTTPS with the API's certificate when [api]
 * tls_cert is set (the same front door: a whole ClientHello before a thread), no per-address
 * limit beyond its own connection cap (each peer is one address; a peer's own inbound limits
 * and the per-tenant hop cap bound what it sends), and a guard that, before a body byte is
 * read, wants the hop key of one of this host's secrets (cluster_hop_credential_ok(): the
 * current or a rotation's other, constant time; never the secret itself: 401 with
 * API_HOP_REFUSED_HEADER), this host's id in X-Stockade-Hop-To (421 otherwise: two hosts
 * reached through one URL, a load balancer in front of several, would otherwise pass requests
 * between each other), a face (400) that this host runs (404), and a Content-Length within
 * that face's own body cap (413); then the face's own guard decides as for a client, and its
 * handler answers.
 * Hops never leave a client waiting on this listener: nothing here logs or waits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_forward_internal.h"

#define HOP_MAX_CONNECTIONS 1024 /* connection threads for the other hosts' hops, together */
#define HOP_MAX_PENDING 1024     /* TCP connections waiting for their head */

static void
hop_refuse(HttpRequest *req, unsigned status, const char *code, const char *message)
{
    http_respond_json(req, status,
                      json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", message));
}

/* The face the hop names, when this host runs it; else answered and -1. */
static int
hop_face(Api *a, HttpRequest *req)
{
    int f = api_hop_face_parse(http_header(req, API_HOP_FACE_HEADER));
    if (f < 0) {
        hop_refuse(req, 400, "invalid", API_HOP_FACE_HEADER " must be api, e2b-api or e2b-envd");
        return -1;
    }
    if (!a->hop_faces[f].guard) {
        hop_refuse(req, 404, "not_found", "this host runs no such face");
        return -1;
    }
    return f;
}

/* A Content-Length over the face's own cap (the hop server takes the largest of them). */
static bool
hop_body_fits(HttpRequest *req, size_t max)
{
    const char *cl = http_header(req, "Content-Length");
    char *end = NULL;
    unsigned long long n = cl ? strtoull(cl, &end, 10) : 0;
    return !cl || !*cl || *end || n <= max; /* malformed or chunked: the layer's checks */
}

static bool
hop_guard(HttpRequest *req, void *userdata)
{
    Api *a = userdata;
    const char *cred = http_header(req, API_FORWARD_HOST_HEADER);
    const char *to = http_header(req, API_HOP_TO_HEADER);

    if (!cred || !cluster_hop_credential_ok(a->d.cluster, cred)) {
        (void) http_response_header(req, API_HOP_REFUSED_HEADER, "credential");
        hop_refuse(req, 401, "unauthorized",
                   "the host-to-host listener needs the hop key of a host secret this host "
                   "holds");
        return false;
    }
    if (!to || strcmp(to, cluster_host_id(a->d.cluster)) != 0) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "this is host %s, not %.64s: does another host's advertise_url lead here?",
                 cluster_host_id(a->d.cluster), to ? to : "(none named)");
        hop_refuse(req, 421, "misdirected_hop", msg);
        return false;
    }
    int f = hop_face(a, req);
    if (f < 0)
        return false;
    if (!hop_body_fits(req, a->hop_faces[f].max_body_bytes)) {
        hop_refuse(req, 413, "too_large", "the body is over this face's cap");
        return false;
    }
    return a->hop_faces[f].guard(req, a->hop_faces[f].userdata);
}

static void
hop_handle(HttpRequest *req, void *userdata)
{
    Api *a = userdata;
    /* The guard checked the same header: it names a face this host runs. */
    const ApiHopFaceSpec *f =
        &a->hop_faces[api_hop_face_parse(http_header(req, API_HOP_FACE_HEADER))];
    f->handler(req, f->userdata);
}

int
api_hop_start(Api *a, const ApiHopConfig *cfg, Error **errp)
{
    if (!a->d.cluster)
        return error_set(errp, E_INVALID, 0, "the host-to-host listener is for cluster mode");
    a->hop_faces[API_HOP_FACE_API] = (ApiHopFaceSpec){.guard = api_guard,
                                                      .handler = api_handle,
                                                      .userdata = a,
                                                      .max_body_bytes = cfg->http->max_body_bytes};
    a->hop_faces[API_HOP_FACE_E2B_API] = cfg->e2b_api;
    a->hop_faces[API_HOP_FACE_E2B_ENVD] = cfg->e2b_envd;
    HttpConfig hc = *cfg->http;
    hc.tcp_address = cfg->address;
    hc.tcp_port = cfg->port;
    hc.unix_path = NULL;
    hc.max_connections = HOP_MAX_CONNECTIONS;
    /* A tenant's share of these threads is the API's ([api] max_per_caller; 0: half of this
     * listener's), never over the listener's own cap: a share the API may take above it
     * (its max_connections reaches 4096) would refuse the start. */
    hc.max_per_caller = MIN(hc.max_per_caller, HOP_MAX_CONNECTIONS);
    hc.max_per_ip = HOP_MAX_CONNECTIONS;
    hc.max_pending = HOP_MAX_PENDING;
    hc.guard = hop_guard;
    hc.peer_listener = true;
    for (int f = 0; f < API_HOP_FACES; f++)
        hc.max_body_bytes = MAX(hc.max_body_bytes, a->hop_faces[f].max_body_bytes);
    if (http_server_start(&hc, hop_handle, a, &a->hop, errp) < 0)
        return error_prefix(errp, "the host-to-host listener on %s port %u", cfg->address,
                            cfg->port);
    return 0;
}

uint16_t
api_hop_port(const Api *a)
{
    return a && a->hop ? http_server_tcp_port(a->hop) : 0;
}

void
api_hop_server_stop(Api *a)
{
    http_server_stop(a->hop);
    a->hop = NULL;
}
