/* [cluster] checks: pure, unit-tested (tests/unit/test_cluster.c) and reached by the config
 * fuzzer through config_finish(). See cluster.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster_config.h"

bool
cluster_config_enabled(const ClusterConfig *c)
{
    return c->database[0] != '\0';
}

bool
cluster_host_id_is_valid(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > CLUSTER_HOST_ID_MAX_BYTES || id[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '-'))
            return false;
    return true;
}

/* http(s)://authority[/path]: what another host puts in front of a request path. No
 * whitespace, quotes or control bytes: it is written into headers and the database. */
static bool
url_is_valid(const char *u)
{
    const char *rest = strncmp(u, "http://", 7) == 0    ? u + 7
                       : strncmp(u, "https://", 8) == 0 ? u + 8
                                                        : NULL;
    if (!rest || rest[0] == '\0' || rest[0] == '/')
        return false;
    for (const char *p = u; *p; p++)
        if ((unsigned char) *p <= ' ' || *p == 0x7f || *p == '"' || *p == '\'' || *p == '\\')
            return false;
    return true;
}

int
cluster_config_check(const ClusterConfig *c, Error **errp)
{
    if (!cluster_config_enabled(c)) {
        if (c->host_id[0] || c->advertise_url[0] || c->host_token_file[0] || c->lease_s ||
            c->tls_ca[0] || c->insecure_hops || c->hop_address[0] || c->hop_port)
            return error_set(errp, E_INVALID, 0, "[cluster] needs database (a libpq conninfo)");
        return 0;
    }
    if (!cluster_host_id_is_valid(c->host_id))
        return error_set(errp, E_INVALID, 0,
                         "[cluster] host_id must be 1..%d of [a-z0-9-], not starting with '-'",
                         CLUSTER_HOST_ID_MAX_BYTES);
    if (!url_is_valid(c->advertise_url))
        return error_set(errp, E_INVALID, 0,
                         "[cluster] advertise_url must be http://HOST[:PORT] or https://...");
    if (c->host_token_file[0] != '/')
        return error_set(errp, E_INVALID, 0, "[cluster] host_token_file must be an absolute path");
    if (c->lease_s && (c->lease_s < CLUSTER_LEASE_MIN_S || c->lease_s > CLUSTER_LEASE_MAX_S))
        return error_set(errp, E_INVALID, 0, "[cluster] lease_s must be %d..%d",
                         CLUSTER_LEASE_MIN_S, CLUSTER_LEASE_MAX_S);
    if (c->tls_ca[0] && c->tls_ca[0] != '/')
        return error_set(errp, E_INVALID, 0, "[cluster] tls_ca must be an absolute path");
    /* The others would refuse to hop here (and the credential would cross in clear). */
    if (cluster_url_is_plain_http(c->advertise_url) && !c->insecure_hops)
        return error_set(errp, E_INVALID, 0,
                         "[cluster] advertise_url is http://: hops carry the host credential "
                         "and bodies in clear, so other hosts refuse it; advertise https:// "
                         "(with [api] tls_cert and tls_key) or set insecure_hops = true");
    if (c->hop_port == 0 || c->hop_port > 65535)
        return error_set(errp, E_INVALID, 0,
                         "[cluster] hop_port must be 1..65535: the host-to-host listener, which "
                         "advertise_url reaches");
    return 0;
}

bool
cluster_url_is_plain_http(const char *url)
{
    return strncasecmp(url, "http://", 7) == 0; /* curl reads the scheme in any case */
}

const char *
cluster_hop_address(const ClusterConfig *c)
{
    return c->hop_address[0] ? c->hop_address : CLUSTER_HOP_ADDRESS_DEFAULT;
}

/* A host name or IPv4 address, or a bracketed IPv6 literal: what may stand before ":port". */
static bool
url_host_is_valid(const char *h, size_t n)
{
    if (n == 0 || n > CLUSTER_URL_MAX_BYTES)
        return false;
    bool v6 = h[0] == '[';
    if (v6 && (n < 3 || h[n - 1] != ']'))
        return false;
    for (size_t i = v6; i < n - v6; i++) {
        char ch = h[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') ||
                  (v6 ? ch == ':' || ch == '.' : ch == '.' || ch == '-');
        if (!ok)
            return false;
    }
    return true;
}

int
cluster_e2b_url(const char *advertise_url, unsigned port, bool tls, char *buf, size_t cap)
{
    const char *a = strncmp(advertise_url, "http://", 7) == 0    ? advertise_url + 7
                    : strncmp(advertise_url, "https://", 8) == 0 ? advertise_url + 8
                                                                 : NULL;
    if (!a || port == 0 || port > 65535)
        return -1;
    size_t n = strcspn(a, "/?#");
    if (memchr(a, '@', n)) /* userinfo: not a host to publish */
        return -1;
    const char *close = a[0] == '[' ? memchr(a, ']', n) : NULL;
    size_t host_n = close ? (size_t) (close - a) + 1 : strcspn(a, ":/?#");
    if (host_n > n || (host_n < n && a[host_n] != ':') || !url_host_is_valid(a, host_n))
        return -1;
    int r = snprintf(buf, cap, "%s://%.*s:%u", tls ? "https" : "http", (int) host_n, a, port);
    return r < 0 || (size_t) r >= cap ? -1 : 0;
}

bool
cluster_e2b_url_is_valid(const char *url)
{
    const char *h = strncmp(url, "http://", 7) == 0    ? url + 7
                    : strncmp(url, "https://", 8) == 0 ? url + 8
                                                       : NULL;
    if (!h || strlen(url) > CLUSTER_URL_MAX_BYTES)
        return false;
    const char *colon = strrchr(h, ':');
    if (!colon || !url_host_is_valid(h, (size_t) (colon - h)) || colon[1] == '0')
        return false;
    char *end = NULL;
    unsigned long port = strtoul(colon + 1, &end, 10);
    return colon[1] >= '1' && colon[1] <= '9' && *end == '\0' && port <= 65535 &&
           end - (colon + 1) <= 5;
}
