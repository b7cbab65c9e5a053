/* stockaded's configuration: embedded defaults, then the config file, then flags.
 *
 * The file is INI-like and hostile-tolerant: at most CONFIG_MAX_BYTES, lines of at most
 * CONFIG_LINE_MAX_BYTES, known sections and keys only (an unknown key is an error, so a typo
 * never silently keeps a default), every number range-checked. Errors name the line.
 * Comments: a line whose first non-blank is '#' or ';', and the rest of a line from a '#' or
 * ';' that follows a blank ("lease_s = 10   # seconds": the value is "10"); a '#' inside a
 * value ("password=a#b") stays. Sizes and durations follow units.h: the key's name says its
 * unit, and a value may carry a unit of the same kind ("lease_s = 2m", "memory_mib = 1GiB").
 *
 *   [daemon]            state_dir, image_dir, libvirt_uri, domain_prefix, accel,
 *                       kvm_probe_append, log_level, log_format (text | json),
 *                       shutdown (keep | end: what a stop does to running sessions),
 *                       workspace_mib, refill_concurrency,
 * refill_holdoff_ms, workers, guest_memory (template | copy), template_dir [limits] tb_cache_mib,
 * memory_overhead_mib, cpu_quota_percent, disk_bytes_per_sec, disk_iops, rng_bytes_per_sec
 *   [timeouts]          boot_s, kvm_probe_s, sync_s, health_interval_s, ping_timeout_s
 *   [api]               tcp_address ("none" disables TCP), tcp_port, unix_socket, max_body_mib,
 *                       request_timeout_s, idle_timeout_s, max_connections, max_per_ip,
 *                       head_timeout_s, max_pending, body_budget_mib, body_share_mib,
 *                       body_min_bytes_per_s, body_rate_window_s, max_per_caller,
 *                       tls_cert, tls_key
 *   [sessions]          default_timeout_s, max_timeout_s, exec_timeout_s, pending_timeout_s,
 *                       output_limit_mib, mirror_budget_mib, mirror_max_file_mib,
 *                       artifact_max_age_h, artifact_max_total_gib, extract_max_mib,
 *                       extract_max_files, extract_timeout_s, finalize_timeout_s,
 *                       finalize_ms_per_mib
 *   [quota]             max_sessions, wallet_guest_seconds, max_vcpus, max_memory_mib,
 *                       max_timeout_s, sessions_per_minute, output_bytes, workspace_bytes:
 *                       the limits of tenants without their own (a new tenant gets a copy)
 *   [egress]            allow_hosts (names, "*.suffix", "*"), allow_cidrs (operator mirrors:
 *                       exempt from the private-range refusal): comma-separated, repeatable;
 *                       each entry allows ports 80 and 443 unless it names ":N" or ":*";
 *                       max_streams, max_streams_total, max_bytes_in_mib, max_bytes_out_mib,
 *                       connect_timeout_s, max_denied_events (per session; hostd/egress)
 *   [e2b]               enabled, address, api_port, envd_port, domain, template_map,
 *                       lifetime_s, create_wait_s, tls_cert, tls_key (E2B SDK
 *                       compatibility: hostd/e2b/e2b.h)
 *   [pool NAME]         image, vcpus, memory_mib, warm, slots   (one section per pool)
 *   [cluster]           database (libpq conninfo), host_id, advertise_url, host_token_file,
 *                       lease_s, tls_ca, insecure_hops, hop_address, hop_port (the
 *                       host-to-host listener):
 *                       many hosts sharing one PostgreSQL (hostd/cluster/cluster.h); absent,
 *                       the host is alone and keeps everything in its SQLite
 *
 * Parsing is pure (text in, struct out) so it can be fuzzed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster_config.h"
#include "e2b_config.h"
#include "error.h"
#include "http_config.h"
#include "policy.h"
#include "pool_config.h"
#include "sessions_config.h"

#define CONFIG_MAX_BYTES (256u * 1024u)
#define CONFIG_LINE_MAX_BYTES 1024
#define CONFIG_PATH_MAX_BYTES 1024
#define CONFIG_ORIGINS_MAX 512        /* distinct settings made by a file and flags */
#define CONFIG_ORIGIN_FLAG UINT32_MAX /* ConfigOrigin.line of a command-line flag */
#define CONFIG_SECTION_MAX_BYTES (8 + POOL_SHAPE_NAME_MAX_BYTES) /* "pool " + a pool name */
#define CONFIG_KEY_MAX_BYTES 48

/* Where one setting came from (what --check-config prints beside it). */
typedef struct ConfigOrigin {
    char section[CONFIG_SECTION_MAX_BYTES + 1]; /* "api", "pool python" */
    char key[CONFIG_KEY_MAX_BYTES + 1];
    uint32_t line; /* in DaemonConfig.source_path, or CONFIG_ORIGIN_FLAG */
} ConfigOrigin;

typedef struct DaemonConfig {
    char state_dir[CONFIG_PATH_MAX_BYTES];
    char image_dir[CONFIG_PATH_MAX_BYTES]; /* images live in <image_dir>/<image>/ */
    char libvirt_uri[256];
    char domain_prefix[POOL_PREFIX_MAX_BYTES + 1];
    char kvm_probe_append[POOL_PROBE_APPEND_MAX_BYTES + 1]; /* accel=auto probe only */
    char template_dir[POOL_TEMPLATE_DIR_MAX_BYTES + 1];     /* "": the pool chooses */
    char log_level[8];
    char log_format[8]; /* text (journal priorities when stderr is the journal) or json */
    char shutdown[8];   /* keep: a stop leaves running sessions' guests for the next start */
    bool shutdown_keeps_sessions; /* derived by config_finish() */
    unsigned workers;                        /* worker threads for blocking calls */
    char tcp_address[64];                    /* "none" = no TCP listener */
    char unix_socket[CONFIG_PATH_MAX_BYTES]; /* "" = <state_dir>/api.sock */
    char tls_cert[CONFIG_PATH_MAX_BYTES];    /* [api] HTTPS: PEM certificate (chain); "" none */
    char tls_key[CONFIG_PATH_MAX_BYTES];     /* [api] its private key (PEM) */
    HttpConfig http;                         /* strings point into this struct */
    unsigned max_body_mib;
    unsigned body_budget_mib;                /* request bodies in memory, all listeners */
    unsigned body_share_mib;                 /* of them, one caller's; 0: the layer's default */
    unsigned body_min_bytes_per_s;           /* a body in flight: at least this, per window */
    SessionsConfig sessions;
    E2bConfig e2b;
    ClusterConfig cluster; /* database "" = a single host (SQLite) */
    unsigned output_limit_mib, mirror_budget_mib, mirror_max_file_mib, extract_max_mib;
    unsigned finalize_ms_per_mib;
    unsigned artifact_max_age_h, artifact_max_total_gib;
    PoolConfig pool; /* string fields point into this struct */
    PoolShapeConfig shapes[POOL_SHAPES_MAX];
    char shape_names[POOL_SHAPES_MAX][POOL_SHAPE_NAME_MAX_BYTES + 1];
    char shape_images[POOL_SHAPES_MAX][64];
    char shape_image_dirs[POOL_SHAPES_MAX][CONFIG_PATH_MAX_BYTES + 64];
    bool pools_from_file;                     /* a [pool] section replaces the default pools */
    bool data_pool_added;                     /* config_add_data_pool() added the data pool */
    char source_path[CONFIG_PATH_MAX_BYTES];  /* the file config_load_file() read, or "" */
    ConfigOrigin origins[CONFIG_ORIGINS_MAX]; /* every setting not left at its default */
    size_t n_origins;
} DaemonConfig;

/* Embedded defaults: state in /var/lib/stockade, images from the build/install default, a
 * `python` pool (2 warm of 4) and a `minimal` pool (1 warm of 2). */
void config_defaults(DaemonConfig *c, const char *default_image_dir);
/* Applies a config file's text on top of c. E_INVALID with "line N: ..." on error. */
int config_parse(DaemonConfig *c, const char *text, size_t len, Error **errp);
int config_load_file(DaemonConfig *c, const char *path, Error **errp);
/* Sets one key of a plain section ("daemon", "api", ...) as a command-line flag would:
 * checked like the file's value, recorded as coming from the command line. */
int config_set_flag(DaemonConfig *c, const char *section, const char *key, const char *value,
                    Error **errp);
/* The effective configuration after config_finish(), as a config file that parses back to
 * the same settings: every key of every section with its value, and beside it where it came
 * from ("default", "<file>:<line>", "command line"); a key with no value set is a comment.
 * Malloc'd text, or NULL on ENOMEM. */
char *config_dump(const DaemonConfig *c);
/* Resolves image directories and string pointers; call after the last change to c. */
int config_finish(DaemonConfig *c, Error **errp);
/* The default pools include "data" (stateful code contexts, issue 18) only when its image is
 * built: the caller checks <image_dir>/data/manifest.json (config.c stays free of I/O). Does
 * nothing when the config file has [pool] sections: they replace the defaults. */
#define CONFIG_DATA_POOL "data"
void config_add_data_pool(DaemonConfig *c);
int config_parse_accel(const char *s, AccelMode *ret);
int config_parse_guest_memory(const char *s, PoolGuestMemory *ret);
