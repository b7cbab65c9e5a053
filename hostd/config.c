/* See config.h. Table-driven: every key has a type, a place and a range. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdutil.h"
#include "runner_limits.h"
#include "timeutil.h"
#include "units.h"

typedef enum {
    SEC_NONE,
    SEC_DAEMON,
    SEC_LIMITS,
    SEC_TIMEOUTS,
    SEC_API,
    SEC_E2B,
    SEC_SESSIONS,
    SEC_QUOTA,
    SEC_EGRESS,
    SEC_POOL,
    SEC_CLUSTER,
} Section;
/* As written in a file's section header, by Section. */
static const char *const section_names[] = {
    [SEC_NONE] = "",
    [SEC_DAEMON] = "daemon",
    [SEC_LIMITS] = "limits",
    [SEC_TIMEOUTS] = "timeouts",
    [SEC_API] = "api",
    [SEC_E2B] = "e2b",
    [SEC_SESSIONS] = "sessions",
    [SEC_QUOTA] = "quota",
    [SEC_EGRESS] = "egress",
    [SEC_POOL] = "pool",
    [SEC_CLUSTER] = "cluster",
};

/* K_MIB: a number of MiB stored as bytes (uint64_t); K_HOSTS, K_CIDRS: a comma-separated list
 * appended to an EgressPolicy (a key may repeat). */
typedef enum {
    K_STR,
    K_UINT,
    K_U64,
    K_USEC,
    K_ACCEL,
    K_MEMORY,
    K_MIB,
    K_HOSTS,
    K_CIDRS,
    K_BOOL, /* true | false */
} KeyType;

typedef struct {
    Section section;
    const char *name;
    KeyType type;
    size_t offset; /* in DaemonConfig, or in PoolShapeConfig for SEC_POOL (see pool_key) */
    size_t size;   /* K_STR: buffer size */
    uint64_t min, max;
} Key;

#define DC(field) offsetof(DaemonConfig, field)
#define PC(field) offsetof(DaemonConfig, pool.field)
#define GIB (1024ull * 1024 * 1024)
#define HC(field) offsetof(DaemonConfig, http.field)
#define SC(field) offsetof(DaemonConfig, sessions.field)
#define QC(field) offsetof(DaemonConfig, sessions.default_quota.field)
#define EC(field) offsetof(DaemonConfig, sessions.egress.field)
#define CC(field) offsetof(DaemonConfig, cluster.field)

static const Key keys[] = {
    {SEC_DAEMON, "state_dir", K_STR, DC(state_dir), CONFIG_PATH_MAX_BYTES, 0, 0},
    {SEC_DAEMON, "image_dir", K_STR, DC(image_dir), CONFIG_PATH_MAX_BYTES, 0, 0},
    {SEC_DAEMON, "libvirt_uri", K_STR, DC(libvirt_uri), 256, 0, 0},
    {SEC_DAEMON, "domain_prefix", K_STR, DC(domain_prefix), POOL_PREFIX_MAX_BYTES + 1, 0, 0},
    {SEC_DAEMON, "log_level", K_STR, DC(log_level), 8, 0, 0},
    {SEC_DAEMON, "log_format", K_STR, DC(log_format), 8, 0, 0},
    {SEC_DAEMON, "shutdown", K_STR, DC(shutdown), 8, 0, 0},
    {SEC_DAEMON, "accel", K_ACCEL, PC(accel), 0, 0, 0},
    {SEC_DAEMON, "kvm_probe_append", K_STR, DC(kvm_probe_append), POOL_PROBE_APPEND_MAX_BYTES + 1,
     0, 0},
    {SEC_DAEMON, "guest_memory", K_MEMORY, PC(guest_memory), 0, 0, 0},
    {SEC_DAEMON, "template_dir", K_STR, DC(template_dir), POOL_TEMPLATE_DIR_MAX_BYTES + 1, 0, 0},
    {SEC_DAEMON, "workspace_mib", K_UINT, PC(workspace_mib), 0, 16, 1024 * 1024},
    {SEC_DAEMON, "refill_concurrency", K_UINT, PC(refill_concurrency), 0, 1, 64},
    {SEC_DAEMON, "refill_holdoff_ms", K_UINT, PC(refill_holdoff_ms), 0, 0, 10000},
    {SEC_DAEMON, "workers", K_UINT, DC(workers), 0, 1, 256},
    {SEC_LIMITS, "tb_cache_mib", K_UINT, PC(tb_cache_mib), 0, 0, 4096},
    {SEC_LIMITS, "memory_overhead_mib", K_UINT, PC(memory_overhead_mib), 0, 32, 65536},
    {SEC_LIMITS, "cpu_quota_percent", K_UINT, PC(cpu_quota_percent), 0, 0, 100},
    {SEC_LIMITS, "disk_bytes_per_sec", K_U64, PC(disk_bytes_per_sec), 0, 0, 100 * GIB},
    {SEC_LIMITS, "disk_iops", K_U64, PC(disk_iops), 0, 0, 10000000},
    {SEC_LIMITS, "rng_bytes_per_sec", K_UINT, PC(rng_bytes_per_sec), 0, 0, 1 << 24},
    {SEC_TIMEOUTS, "boot_s", K_USEC, PC(boot_timeout_usec), 0, 1, 3600},
    {SEC_TIMEOUTS, "kvm_probe_s", K_USEC, PC(kvm_probe_timeout_usec), 0, 1, 600},
    {SEC_TIMEOUTS, "sync_s", K_USEC, PC(sync_timeout_usec), 0, 1, 600},
    {SEC_TIMEOUTS, "health_interval_s", K_USEC, PC(health_interval_usec), 0, 1, 3600},
    {SEC_TIMEOUTS, "ping_timeout_s", K_USEC, PC(ping_timeout_usec), 0, 1, 600},
    {SEC_API, "tcp_address", K_STR, DC(tcp_address), 64, 0, 0},
    {SEC_API, "tcp_port", K_UINT, HC(tcp_port), 0, 1, 65535},
    {SEC_API, "unix_socket", K_STR, DC(unix_socket), CONFIG_PATH_MAX_BYTES, 0, 0},
    {SEC_API, "max_body_mib", K_UINT, DC(max_body_mib), 0, 1, 1024},
    {SEC_API, "request_timeout_s", K_UINT, HC(request_timeout_s), 0, 1, 3600},
    {SEC_API, "idle_timeout_s", K_UINT, HC(idle_timeout_s), 0, 1, 3600},
    {SEC_API, "max_connections", K_UINT, HC(max_connections), 0, 1, 4096},
    {SEC_API, "max_per_ip", K_UINT, HC(max_per_ip), 0, 1, 65536},
    {SEC_API, "head_timeout_s", K_UINT, HC(head_timeout_s), 0, 1, 3600},
    {SEC_API, "max_pending", K_UINT, HC(max_pending), 0, 1, HTTP_MAX_PENDING_CEILING},
    {SEC_API, "body_budget_mib", K_UINT, DC(body_budget_mib), 0, 1, 16384},
    {SEC_API, "body_share_mib", K_UINT, DC(body_share_mib), 0, 0, 16384},
    {SEC_API, "body_min_bytes_per_s", K_UINT, DC(body_min_bytes_per_s), 0, 0,
     HTTP_BODY_MIN_BYTES_PER_S_CEILING},
    {SEC_API, "body_rate_window_s", K_UINT, HC(body_rate_window_s), 0, 1, 3600},
    {SEC_API, "max_per_caller", K_UINT, HC(max_per_caller), 0, 0, HTTP_MAX_CONNECTIONS_CEILING},
    {SEC_API, "tls_cert", K_STR, DC(tls_cert), CONFIG_PATH_MAX_BYTES, 0, 0},
    {SEC_API, "tls_key", K_STR, DC(tls_key), CONFIG_PATH_MAX_BYTES, 0, 0},
    {SEC_SESSIONS, "default_timeout_s", K_USEC, SC(default_timeout_usec), 0, 1, 86400},
    {SEC_SESSIONS, "max_timeout_s", K_USEC, SC(max_timeout_usec), 0, 1, 86400},
    {SEC_SESSIONS, "exec_timeout_s", K_USEC, SC(exec_default_timeout_usec), 0, 1, 86400},
    {SEC_SESSIONS, "pending_timeout_s", K_USEC, SC(pending_timeout_usec), 0, 1, 3600},
    {SEC_SESSIONS, "output_limit_mib", K_UINT, DC(output_limit_mib), 0, 1, 65536},
    {SEC_SESSIONS, "mirror_budget_mib", K_UINT, DC(mirror_budget_mib), 0, 0, 1024},
    {SEC_SESSIONS, "mirror_max_file_mib", K_UINT, DC(mirror_max_file_mib), 0, 0, 1024},
    {SEC_SESSIONS, "artifact_max_age_h", K_UINT, DC(artifact_max_age_h), 0, 1, 24 * 365},
    {SEC_SESSIONS, "artifact_max_total_gib", K_UINT, DC(artifact_max_total_gib), 0, 1, 65536},
    {SEC_SESSIONS, "extract_max_mib", K_UINT, DC(extract_max_mib), 0, 1, 65536},
    {SEC_SESSIONS, "max_guest_events", K_UINT, SC(max_guest_events), 0, 0, 10000000},
    {SEC_SESSIONS, "extract_max_files", K_UINT, SC(extract.max_files), 0, 1, 10000000},
    {SEC_SESSIONS, "extract_timeout_s", K_USEC, SC(extract.max_usec), 0, 1, 3600},
    {SEC_SESSIONS, "finalize_timeout_s", K_USEC, SC(finalize_base_usec), 0, 0, 600},
    {SEC_SESSIONS, "finalize_ms_per_mib", K_UINT, DC(finalize_ms_per_mib), 0, 0, 60000},
    /* [quota]: the limits of tenants that have none of their own (admit.h) */
    {SEC_QUOTA, "max_sessions", K_U64, QC(max_sessions), 0, 0, ADMIT_QUOTA_VALUE_MAX},
    {SEC_QUOTA, "wallet_guest_seconds", K_U64, QC(wallet_guest_seconds), 0, 0,
     ADMIT_QUOTA_VALUE_MAX},
    {SEC_QUOTA, "max_vcpus", K_U64, QC(max_vcpus), 0, 0, ADMIT_QUOTA_VALUE_MAX},
    {SEC_QUOTA, "max_memory_mib", K_U64, QC(max_memory_mib), 0, 0, ADMIT_QUOTA_VALUE_MAX},
    {SEC_QUOTA, "max_timeout_s", K_U64, QC(max_timeout_s), 0, 0, ADMIT_QUOTA_VALUE_MAX},
    {SEC_QUOTA, "sessions_per_minute", K_U64, QC(sessions_per_minute), 0, 0,
     ADMIT_RATE_MAX_PER_MINUTE},
    {SEC_QUOTA, "output_bytes", K_U64, QC(output_bytes), 0, 0, ADMIT_QUOTA_VALUE_MAX},
    {SEC_QUOTA, "workspace_bytes", K_U64, QC(workspace_bytes), 0, 0, ADMIT_QUOTA_VALUE_MAX},
    /* [egress]: the allowed set sessions may ask for, and per-session limits (policy.h) */
    {SEC_EGRESS, "allow_hosts", K_HOSTS, EC(allowed), 0, 0, 0},
    {SEC_EGRESS, "allow_cidrs", K_CIDRS, EC(allowed), 0, 0, 0},
    {SEC_EGRESS, "max_streams", K_UINT, EC(limits.max_streams), 0, 1, TUNNEL_STREAMS_MAX},
    {SEC_EGRESS, "max_streams_total", K_UINT, EC(limits.max_streams_total), 0, 1, 10000000},
    {SEC_EGRESS, "max_bytes_in_mib", K_MIB, EC(limits.max_bytes_in), 0, 1, 1024 * 1024},
    {SEC_EGRESS, "max_bytes_out_mib", K_MIB, EC(limits.max_bytes_out), 0, 1, 1024 * 1024},
    {SEC_EGRESS, "connect_timeout_s", K_USEC, EC(limits.connect_timeout_usec), 0, 1, 300},
    {SEC_EGRESS, "max_denied_events", K_UINT, EC(limits.max_denied_events), 0, 0, 10000000},
    /* [cluster]: one PostgreSQL shared by many hosts (hostd/cluster/cluster.h) */
    {SEC_CLUSTER, "database", K_STR, CC(database), CLUSTER_CONNINFO_MAX_BYTES + 1, 0, 0},
    {SEC_CLUSTER, "host_id", K_STR, CC(host_id), CLUSTER_HOST_ID_MAX_BYTES + 1, 0, 0},
    {SEC_CLUSTER, "advertise_url", K_STR, CC(advertise_url), CLUSTER_URL_MAX_BYTES + 1, 0, 0},
    {SEC_CLUSTER, "host_token_file", K_STR, CC(host_token_file), CLUSTER_PATH_MAX_BYTES + 1, 0, 0},
    {SEC_CLUSTER, "lease_s", K_UINT, CC(lease_s), 0, CLUSTER_LEASE_MIN_S, CLUSTER_LEASE_MAX_S},
    {SEC_CLUSTER, "tls_ca", K_STR, CC(tls_ca), CLUSTER_PATH_MAX_BYTES + 1, 0, 0},
    {SEC_CLUSTER, "insecure_hops", K_BOOL, CC(insecure_hops), 0, 0, 0},
    {SEC_CLUSTER, "hop_address", K_STR, CC(hop_address), CLUSTER_HOP_ADDRESS_MAX_BYTES + 1, 0, 0},
    {SEC_CLUSTER, "hop_port", K_UINT, CC(hop_port), 0, 1, 65535},
};

/* [pool NAME] keys write into shapes[i] / shape_images[i]. */
typedef enum { PK_IMAGE, PK_VCPUS, PK_MEMORY, PK_WARM, PK_SLOTS, PK_CODE_KERNEL } PoolKey;
static const struct {
    const char *name;
    PoolKey key;
    unsigned min, max;
} pool_keys[] = {
    {"image", PK_IMAGE, 0, 0},
    {"vcpus", PK_VCPUS, 1, 64},
    {"memory_mib", PK_MEMORY, 64, 65536},
    {"warm", PK_WARM, 0, POOL_SLOTS_MAX},
    {"slots", PK_SLOTS, 1, POOL_SLOTS_MAX},
    {"code_kernel", PK_CODE_KERNEL, 0, 0},
};

int
config_parse_accel(const char *s, AccelMode *ret)
{
    if (strcmp(s, "auto") == 0)
        *ret = ACCEL_MODE_AUTO;
    else if (strcmp(s, "kvm") == 0)
        *ret = ACCEL_MODE_KVM;
    else if (strcmp(s, "tcg") == 0)
        *ret = ACCEL_MODE_TCG;
    else
        return -1;
    return 0;
}

int
config_parse_guest_memory(const char *s, PoolGuestMemory *ret)
{
    if (strcmp(s, "template") == 0)
        *ret = POOL_MEMORY_TEMPLATE;
    else if (strcmp(s, "copy") == 0)
        *ret = POOL_MEMORY_COPY;
    else
        return -1;
    return 0;
}

static void
add_default_pool(DaemonConfig *c, const char *name, unsigned mem, unsigned warm, unsigned slots)
{
    size_t i = c->pool.n_shapes++;
    snprintf(c->shape_names[i], sizeof(c->shape_names[i]), "%s", name);
    snprintf(c->shape_images[i], sizeof(c->shape_images[i]), "%s", name);
    c->shapes[i] = (PoolShapeConfig){.vcpus = 1, .memory_mib = mem, .warm = warm, .slots = slots};
}

void
config_defaults(DaemonConfig *c, const char *default_image_dir)
{
    memset(c, 0, sizeof(*c));
    pool_config_defaults(&c->pool);
    snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/stockade");
    snprintf(c->image_dir, sizeof(c->image_dir), "%s", default_image_dir);
    snprintf(c->libvirt_uri, sizeof(c->libvirt_uri), "%s", c->pool.libvirt_uri);
    snprintf(c->domain_prefix, sizeof(c->domain_prefix), "%s", c->pool.domain_prefix);
    snprintf(c->log_level, sizeof(c->log_level), "info");
    snprintf(c->log_format, sizeof(c->log_format), "text");
    snprintf(c->shutdown, sizeof(c->shutdown), "keep"); /* an upgrade keeps the sessions */
    c->workers = 6;
    http_config_defaults(&c->http);
    snprintf(c->tcp_address, sizeof(c->tcp_address), "%s", HTTP_DEFAULT_TCP_ADDRESS);
    c->max_body_mib = (unsigned) (c->http.max_body_bytes >> 20);
    c->body_budget_mib = (unsigned) (c->http.body_budget_bytes >> 20);
    c->body_min_bytes_per_s = (unsigned) c->http.body_min_bytes_per_s;
    sessions_config_defaults(&c->sessions);
    e2b_config_defaults(&c->e2b);
    c->output_limit_mib = (unsigned) (c->sessions.output_limit_bytes >> 20);
    c->mirror_budget_mib = (unsigned) (c->sessions.mirror_budget_bytes >> 20);
    c->mirror_max_file_mib = (unsigned) (c->sessions.mirror_max_file_bytes >> 20);
    c->extract_max_mib = (unsigned) (c->sessions.extract.max_total_bytes >> 20);
    c->finalize_ms_per_mib = c->sessions.finalize_usec_per_mib / 1000;
    c->artifact_max_age_h = (unsigned) (c->sessions.artifact_max_age_usec / 3600000000ull);
    c->artifact_max_total_gib = (unsigned) (c->sessions.artifact_max_total_bytes >> 30);
    add_default_pool(c, "python", 512, 2, 4);
    add_default_pool(c, "minimal", 256, 1, 2);
}

void
config_add_data_pool(DaemonConfig *c)
{
    /* The data image is large (numpy, pandas, matplotlib, scipy): its pool holds one warm
     * guest, and a guest needs more memory for the imports than a python one. */
    if (!c->pools_from_file && c->pool.n_shapes < POOL_SHAPES_MAX) {
        add_default_pool(c, CONFIG_DATA_POOL, 1024, 1, 2);
        c->shapes[c->pool.n_shapes - 1].code_kernel = true; /* its kernel, imports done */
        c->data_pool_added = true;
    }
    /* The code interpreter SDK's default template runs there (hostd/e2b/README.md). */
    for (size_t i = 0; i < c->pool.n_shapes; i++)
        if (strcmp(c->shape_names[i], CONFIG_DATA_POOL) == 0)
            e2b_config_default_template(&c->e2b, E2B_CODE_TEMPLATE, CONFIG_DATA_POOL);
}

static char *
trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

/* A number of the unit key's name declares (units.h), in min..max. */
static int
parse_number(const char *key, const char *v, uint64_t min, uint64_t max, uint64_t *ret)
{
    uint64_t n;
    if (!unit_parse(v, unit_of_key(key), &n) || n < min || n > max)
        return -1;
    *ret = n;
    return 0;
}

/* "must be a number of seconds in 1..600 (or with a unit: ms, s, m, h, d)" */
static int
number_error(Error **errp, const char *key, uint64_t min, uint64_t max)
{
    Unit u = unit_of_key(key);
    if (u.kind == UNIT_COUNT)
        return error_set(errp, E_INVALID, 0, "%s must be a number in %llu..%llu", key,
                         (unsigned long long) min, (unsigned long long) max);
    return error_set(errp, E_INVALID, 0,
                     "%s must be a number of %s in %llu..%llu (or with a unit: %s)", key, u.name,
                     (unsigned long long) min, (unsigned long long) max, unit_suffixes(u.kind));
}

static int
set_key(DaemonConfig *c, const Key *k, const char *v, Error **errp)
{
    char *field = (char *) c + k->offset;
    uint64_t n;

    switch (k->type) {
    case K_STR:
        if (strlen(v) == 0 || strlen(v) >= k->size)
            return error_set(errp, E_INVALID, 0, "%s must be 1..%zu bytes", k->name, k->size - 1);
        memcpy(field, v, strlen(v) + 1);
        return 0;
    case K_ACCEL:
        if (config_parse_accel(v, (AccelMode *) field) < 0)
            return error_set(errp, E_INVALID, 0, "accel must be auto, kvm or tcg");
        return 0;
    case K_MEMORY:
        if (config_parse_guest_memory(v, (PoolGuestMemory *) field) < 0)
            return error_set(errp, E_INVALID, 0, "guest_memory must be template or copy");
        return 0;
    case K_HOSTS:
    case K_CIDRS:
        if (egress_policy_add_list((EgressPolicy *) field, v, k->type == K_CIDRS, errp) < 0)
            return error_prefix(errp, "%s", k->name);
        return 0;
    case K_BOOL:
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
            return error_set(errp, E_INVALID, 0, "%s must be true or false", k->name);
        *(bool *) field = strcmp(v, "true") == 0;
        return 0;
    default:
        break;
    }
    if (parse_number(k->name, v, k->min, k->max, &n) < 0)
        return number_error(errp, k->name, k->min, k->max);
    if (k->type == K_UINT)
        *(unsigned *) field = (unsigned) n;
    else if (k->type == K_U64)
        *(uint64_t *) field = n;
    else if (k->type == K_MIB)
        *(uint64_t *) field = n << 20;
    else
        *(uint64_t *) field = n * USEC_PER_SEC;
    return 0;
}

static int
set_pool_key(DaemonConfig *c, size_t i, const char *name, const char *v, Error **errp)
{
    for (size_t k = 0; k < ELEMENTSOF(pool_keys); k++) {
        if (strcmp(pool_keys[k].name, name) != 0)
            continue;
        if (pool_keys[k].key == PK_IMAGE) {
            size_t n = strlen(v);
            if (n == 0 || n >= sizeof(c->shape_images[i]) ||
                strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-_") != n)
                return error_set(errp, E_INVALID, 0, "image must be a simple name");
            memcpy(c->shape_images[i], v, n + 1);
            return 0;
        }
        if (pool_keys[k].key == PK_CODE_KERNEL) { /* true and false: the names before prestart */
            bool prestart = strcmp(v, "prestart") == 0 || strcmp(v, "true") == 0;
            if (!prestart && strcmp(v, "fresh") != 0 && strcmp(v, "false") != 0)
                return error_set(errp, E_INVALID, 0,
                                 "code_kernel must be prestart or fresh");
            c->shapes[i].code_kernel = prestart;
            return 0;
        }
        uint64_t n;
        if (parse_number(name, v, pool_keys[k].min, pool_keys[k].max, &n) < 0)
            return number_error(errp, name, pool_keys[k].min, pool_keys[k].max);
        unsigned *dst[] = {NULL, &c->shapes[i].vcpus, &c->shapes[i].memory_mib, &c->shapes[i].warm,
                           &c->shapes[i].slots};
        *dst[pool_keys[k].key] = (unsigned) n;
        return 0;
    }
    return error_set(errp, E_INVALID, 0, "unknown key '%.64s' in a [pool] section", name);
}

static int
open_pool_section(DaemonConfig *c, const char *name, unsigned line, Error **errp)
{
    size_t n = strlen(name);
    if (!c->pools_from_file) { /* the first [pool] replaces the embedded ones */
        c->pools_from_file = true;
        c->pool.n_shapes = 0;
    }
    if (n == 0 || n > POOL_SHAPE_NAME_MAX_BYTES ||
        strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
        return error_set(errp, E_INVALID, 0, "line %u: pool name must be 1..%d of [a-z0-9-]", line,
                         POOL_SHAPE_NAME_MAX_BYTES);
    for (size_t i = 0; i < c->pool.n_shapes; i++)
        if (strcmp(c->shape_names[i], name) == 0)
            return error_set(errp, E_INVALID, 0, "line %u: pool %s defined twice", line, name);
    if (c->pool.n_shapes == POOL_SHAPES_MAX)
        return error_set(errp, E_INVALID, 0, "line %u: at most %d pools", line, POOL_SHAPES_MAX);
    size_t i = c->pool.n_shapes++;
    memcpy(c->shape_names[i], name, n + 1);
    memcpy(c->shape_images[i], name, n + 1); /* image defaults to the pool's name */
    c->shapes[i] = (PoolShapeConfig){.vcpus = 1, .memory_mib = 512, .warm = 1, .slots = 2};
    return 0;
}

static int
parse_section(DaemonConfig *c, char *s, unsigned line, Section *ret, Error **errp)
{
    char *end = strchr(s, ']');
    if (!end || trim(end + 1)[0] != '\0')
        return error_set(errp, E_INVALID, 0, "line %u: malformed section header", line);
    *end = '\0';
    s = trim(s + 1);
    static const struct {
        const char *name;
        Section sec;
    } plain[] = {{"daemon", SEC_DAEMON}, {"limits", SEC_LIMITS},     {"timeouts", SEC_TIMEOUTS},
                 {"api", SEC_API},       {"sessions", SEC_SESSIONS}, {"quota", SEC_QUOTA},
                 {"egress", SEC_EGRESS}, {"cluster", SEC_CLUSTER}};
    for (size_t i = 0; i < ELEMENTSOF(plain); i++)
        if (strcmp(s, plain[i].name) == 0) {
            *ret = plain[i].sec;
            return 0;
        }
    if (strcmp(s, "e2b") == 0) {
        *ret = SEC_E2B;
        return 0;
    }
    if (strncmp(s, "pool ", 5) == 0) {
        *ret = SEC_POOL;
        return open_pool_section(c, trim(s + 5), line, errp);
    }
    return error_set(errp, E_INVALID, 0, "line %u: unknown section [%.64s]", line, s);
}

/* Cuts a comment off the line: from a '#' or ';' that follows a blank. A '#' inside a value
 * ("password=a#b") is part of it; a comment is never part of one. */
static void
cut_comment(char *s)
{
    for (char *p = s; *p; p++)
        if ((*p == '#' || *p == ';') && p > s && (p[-1] == ' ' || p[-1] == '\t')) {
            *p = '\0';
            return;
        }
}

/* Records that section/key was set at line (the last setting wins, as for the value). */
static int
note_origin(DaemonConfig *c, const char *section, const char *key, uint32_t line, Error **errp)
{
    ConfigOrigin *o = NULL;
    for (size_t i = 0; i < c->n_origins && !o; i++)
        if (strcmp(c->origins[i].section, section) == 0 && strcmp(c->origins[i].key, key) == 0)
            o = &c->origins[i];
    if (!o && c->n_origins == CONFIG_ORIGINS_MAX)
        return error_set(errp, E_INVALID, 0, "more than %d distinct settings", CONFIG_ORIGINS_MAX);
    if (!o) {
        o = &c->origins[c->n_origins++];
        snprintf(o->section, sizeof(o->section), "%s", section);
        snprintf(o->key, sizeof(o->key), "%s", key);
    }
    o->line = line;
    return 0;
}

/* Sets name = value in section sec (the last pool for SEC_POOL). The error names the key,
 * not the line: the caller says where. */
static int
set_in_section(DaemonConfig *c, Section sec, const char *name, const char *value, Error **errp)
{
    if (sec == SEC_POOL)
        return set_pool_key(c, c->pool.n_shapes - 1, name, value, errp);
    if (sec == SEC_E2B)
        return e2b_config_set(&c->e2b, name, value, errp);
    for (size_t i = 0; i < ELEMENTSOF(keys); i++)
        if (keys[i].section == sec && strcmp(keys[i].name, name) == 0)
            return set_key(c, &keys[i], value, errp);
    return error_set(errp, E_INVALID, 0, "unknown key '%.64s' in [%s]", name, section_names[sec]);
}

static int
parse_line(DaemonConfig *c, char *s, unsigned line, Section *sec, Error **errp)
{
    char section[CONFIG_SECTION_MAX_BYTES + 1];

    s = trim(s);
    if (s[0] == '\0' || s[0] == '#' || s[0] == ';')
        return 0;
    cut_comment(s);
    s = trim(s);
    if (s[0] == '[')
        return parse_section(c, s, line, sec, errp);
    char *eq = strchr(s, '=');
    if (!eq)
        return error_set(errp, E_INVALID, 0, "line %u: expected key = value", line);
    *eq = '\0';
    char *name = trim(s), *value = trim(eq + 1);
    if (*sec == SEC_NONE)
        return error_set(errp, E_INVALID, 0, "line %u: key outside a section", line);
    if (set_in_section(c, *sec, name, value, errp) < 0)
        return error_prefix(errp, "line %u", line);
    if (*sec == SEC_POOL)
        snprintf(section, sizeof(section), "pool %s", c->shape_names[c->pool.n_shapes - 1]);
    else
        snprintf(section, sizeof(section), "%s", section_names[*sec]);
    return note_origin(c, section, name, line, errp);
}

int
config_parse(DaemonConfig *c, const char *text, size_t len, Error **errp)
{
    char buf[CONFIG_LINE_MAX_BYTES + 1];
    Section sec = SEC_NONE;
    unsigned line = 0;

    if (len > CONFIG_MAX_BYTES)
        return error_set(errp, E_INVALID, 0, "config is over %u bytes", CONFIG_MAX_BYTES);
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t) (nl - (text + pos)) : len - pos;
        line++;
        if (n > CONFIG_LINE_MAX_BYTES)
            return error_set(errp, E_INVALID, 0, "line %u: longer than %u bytes", line,
                             CONFIG_LINE_MAX_BYTES);
        memcpy(buf, text + pos, n);
        buf[n] = '\0';
        if (strlen(buf) != n)
            return error_set(errp, E_INVALID, 0, "line %u: contains a NUL byte", line);
        if (parse_line(c, buf, line, &sec, errp) < 0)
            return -1;
        pos += n + 1;
    }
    return 0;
}

int
config_load_file(DaemonConfig *c, const char *path, Error **errp)
{
    _cleanup_free_ char *text = NULL;
    size_t len;
    if (read_file_bounded(path, CONFIG_MAX_BYTES, &text, &len) < 0)
        return error_set(errp, E_INVALID, errno, "read config %s", path);
    if (config_parse(c, text, len, errp) < 0)
        return error_prefix(errp, "%s", path);
    snprintf(c->source_path, sizeof(c->source_path), "%s", path);
    return 0;
}

int
config_set_flag(DaemonConfig *c, const char *section, const char *key, const char *value,
                Error **errp)
{
    for (size_t i = 1; i < ELEMENTSOF(section_names); i++)
        if (i != SEC_POOL && strcmp(section_names[i], section) == 0) {
            if (set_in_section(c, (Section) i, key, value, errp) < 0)
                return -1;
            return note_origin(c, section, key, CONFIG_ORIGIN_FLAG, errp);
        }
    return error_set(errp, E_INVALID, 0, "unknown section [%.64s]", section);
}

/* [section] tls_cert and tls_key: both or neither, absolute paths (read at start). */
static int
tls_pair_check(const char *section, const char *cert, const char *key, Error **errp)
{
    if (!cert[0] != !key[0])
        return error_set(errp, E_INVALID, 0, "[%s] tls_cert and tls_key go together: set both",
                         section);
    if ((cert[0] && cert[0] != '/') || (key[0] && key[0] != '/'))
        return error_set(errp, E_INVALID, 0, "[%s] tls_cert and tls_key must be absolute paths",
                         section);
    return 0;
}

int
config_finish(DaemonConfig *c, Error **errp)
{
    if (c->state_dir[0] != '/' || c->image_dir[0] != '/')
        return error_set(errp, E_INVALID, 0, "state_dir and image_dir must be absolute paths");
    if (strcmp(c->shutdown, "keep") != 0 && strcmp(c->shutdown, "end") != 0)
        return error_set(errp, E_INVALID, 0, "[daemon] shutdown must be keep or end");
    c->shutdown_keeps_sessions = strcmp(c->shutdown, "keep") == 0;
    c->pool.state_dir = c->state_dir;
    c->pool.libvirt_uri = c->libvirt_uri;
    c->pool.domain_prefix = c->domain_prefix;
    c->pool.kvm_probe_append = c->kvm_probe_append;
    c->pool.template_dir = c->template_dir; /* "": chosen at start */
    if (c->template_dir[0] && (c->template_dir[0] != '/' || strchr(c->template_dir, ',')))
        return error_set(errp, E_INVALID, 0, "template_dir must be an absolute path without ','");
    c->pool.shapes = c->shapes;
    if (!c->unix_socket[0] && snprintf(c->unix_socket, sizeof(c->unix_socket), "%.1000s/api.sock",
                                       c->state_dir) >= (int) sizeof(c->unix_socket))
        return error_set(errp, E_INVALID, 0, "state_dir is too long");
    if (c->unix_socket[0] != '/')
        return error_set(errp, E_INVALID, 0, "unix_socket must be an absolute path");
    c->http.tcp_address = strcmp(c->tcp_address, "none") == 0 ? NULL : c->tcp_address;
    c->http.unix_path = c->unix_socket;
    c->http.max_body_bytes = (size_t) c->max_body_mib << 20;
    c->http.body_budget_bytes = (size_t) c->body_budget_mib << 20;
    c->http.body_share_bytes = (size_t) c->body_share_mib << 20;
    c->http.body_min_bytes_per_s = c->body_min_bytes_per_s;
    if (c->body_budget_mib < c->max_body_mib)
        return error_set(errp, E_INVALID, 0,
                         "[api] body_budget_mib must hold one largest body (max_body_mib)");
    if (c->body_share_mib && (c->body_share_mib < c->max_body_mib ||
                              c->body_share_mib > c->body_budget_mib))
        return error_set(errp, E_INVALID, 0,
                         "[api] body_share_mib must hold one largest body (max_body_mib) and be "
                         "at most body_budget_mib");
    if (c->http.max_per_caller > c->http.max_connections)
        return error_set(errp, E_INVALID, 0, "[api] max_per_caller is over max_connections");
    if (tls_pair_check("api", c->tls_cert, c->tls_key, errp) < 0 ||
        tls_pair_check("e2b", c->e2b.tls_cert, c->e2b.tls_key, errp) < 0)
        return -1;
    c->http.tls_cert_file = c->tls_cert[0] ? c->tls_cert : NULL;
    c->http.tls_key_file = c->tls_key[0] ? c->tls_key : NULL;
    SessionsConfig *sc = &c->sessions;
    sc->state_dir = c->state_dir;
    sc->output_limit_bytes = (uint64_t) c->output_limit_mib << 20;
    sc->mirror_budget_bytes = (uint64_t) c->mirror_budget_mib << 20;
    sc->mirror_max_file_bytes = (uint64_t) c->mirror_max_file_mib << 20;
    sc->extract.max_total_bytes = (uint64_t) c->extract_max_mib << 20;
    sc->finalize_usec_per_mib = c->finalize_ms_per_mib * 1000u;
    sc->artifact_max_age_usec = (uint64_t) c->artifact_max_age_h * 3600000000ull;
    sc->artifact_max_total_bytes = (uint64_t) c->artifact_max_total_gib << 30;
    sc->exec_uid = c->pool.exec_uid;
    sc->exec_gid = c->pool.exec_gid;
    if (c->mirror_max_file_mib > c->mirror_budget_mib)
        sc->mirror_max_file_bytes = sc->mirror_budget_bytes; /* a file cannot exceed the total */
    if (sc->default_timeout_usec > sc->max_timeout_usec)
        return error_set(errp, E_INVALID, 0, "default_timeout_s is over max_timeout_s");
    if (cluster_config_check(&c->cluster, errp) < 0)
        return -1;
    for (size_t i = 0; i < c->pool.n_shapes; i++) {
        snprintf(c->shape_image_dirs[i], sizeof(c->shape_image_dirs[i]), "%s/%s", c->image_dir,
                 c->shape_images[i]);
        c->shapes[i].name = c->shape_names[i];
        c->shapes[i].image_dir = c->shape_image_dirs[i];
    }
    return 0;
}

/* ---- config_dump: the effective configuration, as a file that parses back ---- */

/* Entry i of a policy's patterns (hosts) or CIDRs as allow_hosts / allow_cidrs write it. */
static void
format_policy_entry(const EgressPolicy *p, bool cidrs, size_t i, FILE *f)
{
    char ports[EGRESS_PORT_TEXT_BYTES], addr[64];
    if (cidrs)
        fprintf(f, "%s/%u%s", egress_addr_format(&p->cidrs[i].addr, addr, sizeof(addr)),
                p->cidrs[i].bits, egress_ports_format(p->cidrs[i].ports, ports));
    else
        fprintf(f, "%s%s", p->patterns[i].name, egress_ports_format(p->patterns[i].ports, ports));
}

/* A duration or size in the key's own unit (exact: the defaults are whole units). Nothing
 * for a number left at 0 below its range: not set, the module chooses ([cluster] lease_s). */
static void
format_key(const DaemonConfig *c, const Key *k, FILE *f)
{
    const char *field = (const char *) c + k->offset;
    if (k->min > 0 && (k->type == K_UINT ? *(const unsigned *) field == 0
                       : k->type == K_U64 || k->type == K_MIB || k->type == K_USEC
                           ? *(const uint64_t *) field == 0
                           : false))
        return;
    switch (k->type) {
    case K_STR:
        fputs(field, f);
        return;
    case K_UINT:
        fprintf(f, "%u", *(const unsigned *) field);
        return;
    case K_U64:
        fprintf(f, "%llu", (unsigned long long) *(const uint64_t *) field);
        return;
    case K_MIB:
        fprintf(f, "%llu", (unsigned long long) (*(const uint64_t *) field >> 20));
        return;
    case K_USEC:
        fprintf(f, "%llu", (unsigned long long) (*(const uint64_t *) field / USEC_PER_SEC));
        return;
    case K_ACCEL: {
        AccelMode m = *(const AccelMode *) field;
        fputs(m == ACCEL_MODE_KVM ? "kvm" : m == ACCEL_MODE_TCG ? "tcg" : "auto", f);
        return;
    }
    case K_MEMORY:
        fputs(*(const PoolGuestMemory *) field == POOL_MEMORY_COPY ? "copy" : "template", f);
        return;
    case K_HOSTS:
    case K_CIDRS:
        return; /* dump_policy(): a line each */
    case K_BOOL:
        fputs(*(const bool *) field ? "true" : "false", f);
        return;
    }
}

/* "default", "FILE:LINE" or "command line", for section/key. */
static void
format_origin(const DaemonConfig *c, const char *section, const char *key, const char *dflt,
              FILE *f)
{
    for (size_t i = 0; i < c->n_origins; i++) {
        const ConfigOrigin *o = &c->origins[i];
        if (strcmp(o->section, section) != 0 || strcmp(o->key, key) != 0)
            continue;
        if (o->line == CONFIG_ORIGIN_FLAG)
            fputs("command line", f);
        else
            fprintf(f, "%s:%u", c->source_path, o->line);
        return;
    }
    fputs(dflt, f);
}

/* One "key = value   # origin" line; a key without a value is written as a comment. */
static void
dump_line(const DaemonConfig *c, const char *section, const char *key, const char *value,
          const char *dflt, FILE *f)
{
    int n = fprintf(f, "%s%s = %s", value[0] ? "" : "# ", key, value);
    fprintf(f, "%*s# ", n < 40 ? 40 - n : 1, "");
    format_origin(c, section, key, value[0] ? dflt : "default (not set)", f);
    fputc('\n', f);
}

/* allow_hosts / allow_cidrs: one line per entry (the key repeats), so no line of the dump
 * is longer than the file's lines were. */
static bool
dump_policy(const DaemonConfig *c, const Key *k, FILE *f)
{
    const EgressPolicy *p = (const EgressPolicy *) ((const char *) c + k->offset);
    bool cidrs = k->type == K_CIDRS;
    size_t n = cidrs ? p->n_cidrs : p->n_patterns;
    _cleanup_free_ char *value = NULL;
    size_t len;

    for (size_t i = 0; i < n; i++) {
        FILE *v = open_memstream(&value, &len);
        if (!v)
            return false;
        format_policy_entry(p, cidrs, i, v);
        fclose(v);
        dump_line(c, section_names[k->section], k->name, value, "default", f);
        free(TAKE_PTR(value));
    }
    if (n == 0)
        dump_line(c, section_names[k->section], k->name, "", "default", f);
    return true;
}

static void
dump_plain(const DaemonConfig *c, Section sec, FILE *f)
{
    _cleanup_free_ char *value = NULL;
    size_t len;
    fprintf(f, "\n[%s]\n", section_names[sec]);
    for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
        if (keys[i].section != sec)
            continue;
        if (keys[i].type == K_HOSTS || keys[i].type == K_CIDRS) {
            if (!dump_policy(c, &keys[i], f))
                return;
            continue;
        }
        FILE *v = open_memstream(&value, &len);
        if (!v)
            return;
        format_key(c, &keys[i], v);
        fclose(v);
        dump_line(c, section_names[sec], keys[i].name, value, "default", f);
        free(TAKE_PTR(value));
    }
}

static void
dump_pools(const DaemonConfig *c, FILE *f)
{
    char section[CONFIG_SECTION_MAX_BYTES + 1], v[6][64];
    for (size_t i = 0; i < c->pool.n_shapes; i++) {
        const PoolShapeConfig *s = &c->shapes[i];
        const char *dflt = !c->pools_from_file && c->data_pool_added &&
                                   strcmp(c->shape_names[i], CONFIG_DATA_POOL) == 0
                               ? "default (the data image is built)"
                               : "default";
        snprintf(section, sizeof(section), "pool %s", c->shape_names[i]);
        fprintf(f, "\n[%s]\n", section);
        snprintf(v[0], sizeof(v[0]), "%s", c->shape_images[i]);
        snprintf(v[1], sizeof(v[1]), "%u", s->vcpus);
        snprintf(v[2], sizeof(v[2]), "%u", s->memory_mib);
        snprintf(v[3], sizeof(v[3]), "%u", s->warm);
        snprintf(v[4], sizeof(v[4]), "%u", s->slots);
        snprintf(v[5], sizeof(v[5]), "%s", s->code_kernel ? "true" : "false");
        for (size_t k = 0; k < ELEMENTSOF(pool_keys); k++)
            dump_line(c, section, pool_keys[k].name, v[pool_keys[k].key], dflt, f);
    }
}

char *
config_dump(const DaemonConfig *c)
{
    char *text = NULL, value[2048];
    size_t len;
    const char *key;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fprintf(f,
            "# stockaded's effective configuration: the embedded defaults, then %s%s, then "
            "the command line.\n# Each value says where it came from.\n",
            c->source_path[0] ? "" : "no file", c->source_path);
    for (Section sec = SEC_DAEMON; sec <= SEC_CLUSTER; sec++) {
        if (sec == SEC_POOL)
            continue;
        if (sec != SEC_E2B) {
            dump_plain(c, sec, f);
            continue;
        }
        fputs("\n[e2b]\n", f);
        for (size_t i = 0; e2b_config_format(&c->e2b, i, &key, value, sizeof(value)); i++)
            dump_line(c, "e2b", key, value, "default", f);
    }
    dump_pools(c, f);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
