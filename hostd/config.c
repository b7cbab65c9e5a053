/* See config.h. Table-driven: every key has a type, a place and a range. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdutil.h"
#include "runner_limits.h"
#include "timeutil.h"

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
/* K_MIB: a number of MiB stored as bytes (uint64_t); K_HOSTS, K_CIDRS: a comma-separated list
 * appended to an EgressPolicy (a key may repeat). */
typedef enum { K_STR, K_UINT, K_U64, K_USEC, K_ACCEL, K_MEMORY, K_MIB, K_HOSTS, K_CIDRS } KeyType;

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
    {"image", PK_IMAGE, 0, 0},           {"vcpus", PK_VCPUS, 1, 64},
    {"memory_mib", PK_MEMORY, 64, 65536}, {"warm", PK_WARM, 0, POOL_SLOTS_MAX},
    {"slots", PK_SLOTS, 1, POOL_SLOTS_MAX}, {"code_kernel", PK_CODE_KERNEL, 0, 0},
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
add_default_pool(DaemonConfig *c, const char *name, unsigned mem, unsigned warm,
                 unsigned slots)
{
    size_t i = c->pool.n_shapes++;
    snprintf(c->shape_names[i], sizeof(c->shape_names[i]), "%s", name);
    snprintf(c->shape_images[i], sizeof(c->shape_images[i]), "%s", name);
    c->shapes[i] = (PoolShapeConfig){.vcpus = 1, .memory_mib = mem, .warm = warm,
                                     .slots = slots};
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
    c->workers = 6;
    http_config_defaults(&c->http);
    snprintf(c->tcp_address, sizeof(c->tcp_address), "%s", HTTP_DEFAULT_TCP_ADDRESS);
    c->max_body_mib = (unsigned) (c->http.max_body_bytes >> 20);
    c->body_budget_mib = (unsigned) (c->http.body_budget_bytes >> 20);
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

static int
parse_u64(const char *v, uint64_t min, uint64_t max, uint64_t *ret)
{
    char *end;
    if (v[0] < '0' || v[0] > '9')
        return -1;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || n < min || n > max)
        return -1;
    *ret = n;
    return 0;
}

static int
set_key(DaemonConfig *c, const Key *k, const char *v, unsigned line, Error **errp)
{
    char *field = (char *) c + k->offset;
    uint64_t n;

    switch (k->type) {
    case K_STR:
        if (strlen(v) == 0 || strlen(v) >= k->size)
            return error_set(errp, E_INVALID, 0, "line %u: %s must be 1..%zu bytes", line,
                             k->name, k->size - 1);
        memcpy(field, v, strlen(v) + 1);
        return 0;
    case K_ACCEL:
        if (config_parse_accel(v, (AccelMode *) field) < 0)
            return error_set(errp, E_INVALID, 0, "line %u: accel must be auto, kvm or tcg",
                             line);
        return 0;
    case K_MEMORY:
        if (config_parse_guest_memory(v, (PoolGuestMemory *) field) < 0)
            return error_set(errp, E_INVALID, 0, "line %u: guest_memory must be template or copy",
                             line);
        return 0;
    case K_HOSTS:
    case K_CIDRS:
        if (egress_policy_add_list((EgressPolicy *) field, v, k->type == K_CIDRS, errp) < 0)
            return error_prefix(errp, "line %u: %s", line, k->name);
        return 0;
    default:
        break;
    }
    if (parse_u64(v, k->min, k->max, &n) < 0)
        return error_set(errp, E_INVALID, 0, "line %u: %s must be a number in %llu..%llu", line,
                         k->name, (unsigned long long) k->min, (unsigned long long) k->max);
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
set_pool_key(DaemonConfig *c, size_t i, const char *name, const char *v, unsigned line,
             Error **errp)
{
    for (size_t k = 0; k < ELEMENTSOF(pool_keys); k++) {
        if (strcmp(pool_keys[k].name, name) != 0)
            continue;
        if (pool_keys[k].key == PK_IMAGE) {
            size_t n = strlen(v);
            if (n == 0 || n >= sizeof(c->shape_images[i]) ||
                strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-_") != n)
                return error_set(errp, E_INVALID, 0, "line %u: image must be a simple name",
                                 line);
            memcpy(c->shape_images[i], v, n + 1);
            return 0;
        }
        if (pool_keys[k].key == PK_CODE_KERNEL) {
            if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
                return error_set(errp, E_INVALID, 0, "line %u: code_kernel must be true or false",
                                 line);
            c->shapes[i].code_kernel = strcmp(v, "true") == 0;
            return 0;
        }
        uint64_t n;
        if (parse_u64(v, pool_keys[k].min, pool_keys[k].max, &n) < 0)
            return error_set(errp, E_INVALID, 0, "line %u: %s must be a number in %u..%u", line,
                             name, pool_keys[k].min, pool_keys[k].max);
        unsigned *dst[] = {NULL, &c->shapes[i].vcpus, &c->shapes[i].memory_mib,
                           &c->shapes[i].warm, &c->shapes[i].slots};
        *dst[pool_keys[k].key] = (unsigned) n;
        return 0;
    }
    return error_set(errp, E_INVALID, 0, "line %u: unknown key '%s' in a [pool] section", line,
                     name);
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
        return error_set(errp, E_INVALID, 0, "line %u: pool name must be 1..%d of [a-z0-9-]",
                         line, POOL_SHAPE_NAME_MAX_BYTES);
    for (size_t i = 0; i < c->pool.n_shapes; i++)
        if (strcmp(c->shape_names[i], name) == 0)
            return error_set(errp, E_INVALID, 0, "line %u: pool %s defined twice", line, name);
    if (c->pool.n_shapes == POOL_SHAPES_MAX)
        return error_set(errp, E_INVALID, 0, "line %u: at most %d pools", line,
                         POOL_SHAPES_MAX);
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

static int
parse_line(DaemonConfig *c, char *s, unsigned line, Section *sec, Error **errp)
{
    s = trim(s);
    if (s[0] == '\0' || s[0] == '#' || s[0] == ';')
        return 0;
    if (s[0] == '[')
        return parse_section(c, s, line, sec, errp);
    char *eq = strchr(s, '=');
    if (!eq)
        return error_set(errp, E_INVALID, 0, "line %u: expected key = value", line);
    *eq = '\0';
    char *name = trim(s), *value = trim(eq + 1);
    if (*sec == SEC_NONE)
        return error_set(errp, E_INVALID, 0, "line %u: key outside a section", line);
    if (*sec == SEC_POOL)
        return set_pool_key(c, c->pool.n_shapes - 1, name, value, line, errp);
    if (*sec == SEC_E2B)
        return e2b_config_set(&c->e2b, name, value, errp) < 0 ? error_prefix(errp, "line %u", line)
                                                               : 0;
    for (size_t i = 0; i < ELEMENTSOF(keys); i++)
        if (keys[i].section == *sec && strcmp(keys[i].name, name) == 0)
            return set_key(c, &keys[i], value, line, errp);
    return error_set(errp, E_INVALID, 0, "line %u: unknown key '%.64s'", line, name);
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
    return 0;
}

int
config_finish(DaemonConfig *c, Error **errp)
{
    if (c->state_dir[0] != '/' || c->image_dir[0] != '/')
        return error_set(errp, E_INVALID, 0, "state_dir and image_dir must be absolute paths");
    c->pool.state_dir = c->state_dir;
    c->pool.libvirt_uri = c->libvirt_uri;
    c->pool.domain_prefix = c->domain_prefix;
    c->pool.kvm_probe_append = c->kvm_probe_append;
    c->pool.template_dir = c->template_dir; /* "": chosen at start */
    if (c->template_dir[0] && (c->template_dir[0] != '/' || strchr(c->template_dir, ',')))
        return error_set(errp, E_INVALID, 0, "template_dir must be an absolute path without ','");
    c->pool.shapes = c->shapes;
    if (!c->unix_socket[0] &&
        snprintf(c->unix_socket, sizeof(c->unix_socket), "%.1000s/api.sock", c->state_dir) >=
            (int) sizeof(c->unix_socket))
        return error_set(errp, E_INVALID, 0, "state_dir is too long");
    if (c->unix_socket[0] != '/')
        return error_set(errp, E_INVALID, 0, "unix_socket must be an absolute path");
    c->http.tcp_address = strcmp(c->tcp_address, "none") == 0 ? NULL : c->tcp_address;
    c->http.unix_path = c->unix_socket;
    c->http.max_body_bytes = (size_t) c->max_body_mib << 20;
    c->http.body_budget_bytes = (size_t) c->body_budget_mib << 20;
    if (c->body_budget_mib < c->max_body_mib)
        return error_set(errp, E_INVALID, 0,
                         "[api] body_budget_mib must hold one largest body (max_body_mib)");
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
