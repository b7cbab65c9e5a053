/* [cluster] in stockaded.conf: its type and pure checks (the config parser and its fuzzer
 * link only this, not libpq). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CLUSTER_CONNINFO_MAX_BYTES 1024
#define CLUSTER_HOST_ID_MAX_BYTES 63 /* [a-z0-9-], also used in logs and URLs */
#define CLUSTER_URL_MAX_BYTES 255
#define CLUSTER_PATH_MAX_BYTES 1024
#define CLUSTER_TOKEN_MIN_BYTES 32 /* the host-to-host credential: at least 256 bits of text */
#define CLUSTER_TOKEN_MAX_BYTES 4096
#define CLUSTER_HOP_ADDRESS_MAX_BYTES 63 /* a numeric IPv4 or IPv6 address */
#define CLUSTER_HOP_ADDRESS_DEFAULT "127.0.0.1"
/* The pg_advisory_lock key of schema migrations ("StckClus"). */
#define CLUSTER_SCHEMA_LOCK_KEY INT64_C(0x5374636b436c7573)
/* A host whose heartbeat is older than its lease (the database's clock) is taken over. */
#define CLUSTER_LEASE_DEFAULT_S 10
#define CLUSTER_LEASE_MIN_S 6 /* three heartbeats (2 s): one late beat is not a death */
#define CLUSTER_LEASE_MAX_S 3600
/* The pg_advisory_xact_lock key every write of tenants and tokens holds ("StckTnnt"). */
#define CLUSTER_TENANCY_LOCK_KEY INT64_C(0x5374636b546e6e74)

/* [cluster] in stockaded.conf (hostd/config.c). database "" = not a cluster. */
typedef struct ClusterConfig {
    char database[CLUSTER_CONNINFO_MAX_BYTES + 1]; /* libpq conninfo or postgresql:// URI */
    char host_id[CLUSTER_HOST_ID_MAX_BYTES + 1];
    char advertise_url[CLUSTER_URL_MAX_BYTES + 1]; /* how the other hosts reach this one */
    char host_token_file[CLUSTER_PATH_MAX_BYTES + 1];
    unsigned lease_s; /* 0 = CLUSTER_LEASE_DEFAULT_S */
    /* Hops to other hosts: an https:// peer's certificate must chain to this CA (PEM file;
     * "": the system's store), and an http:// peer is refused unless insecure_hops (then the
     * hop's credential, identity and bodies cross the network in clear). */
    char tls_ca[CLUSTER_PATH_MAX_BYTES + 1];
    bool insecure_hops;
    /* The host-to-host listener (issue 25): where the other hosts' hops arrive, apart from
     * every client's listener and limits; advertise_url must reach it. "" = 127.0.0.1. */
    char hop_address[CLUSTER_HOP_ADDRESS_MAX_BYTES + 1];
    unsigned hop_port; /* required in cluster mode */
} ClusterConfig;

/* Pure checks of a [cluster] section: E_INVALID naming the key. An empty database with any
 * other key set is an error (a half-configured cluster must not run as a single host). */
int cluster_config_check(const ClusterConfig *c, Error **errp);
bool cluster_config_enabled(const ClusterConfig *c);
bool cluster_host_id_is_valid(const char *id);
/* The address the host-to-host listener binds ([cluster] hop_address, else the default). */
const char *cluster_hop_address(const ClusterConfig *c);

/* A host's E2B listener as the others reach it (issue 16): "http://" ("https://" when tls:
 * the listener serves TLS) + the host part of advertise_url (its authority without userinfo
 * and port; an IPv6 literal keeps its brackets) + ":" + port, into buf. -1 if advertise_url
 * has no usable host, port is 0 or over 65535, or it does not fit. Pure. */
int cluster_e2b_url(const char *advertise_url, unsigned port, bool tls, char *buf, size_t cap);
/* Whether url has exactly the form cluster_e2b_url() writes (a value read back from the
 * database is another host's: anything else is not used). Pure. */
bool cluster_e2b_url_is_valid(const char *url);
/* Whether url (an advertise_url or an E2B URL) is plain http://: a hop there is refused
 * unless insecure_hops. Pure. */
bool cluster_url_is_plain_http(const char *url);
