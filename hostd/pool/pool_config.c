/* Defaults of the pool's configuration (pool_config.h). */
#include "pool_config.h"

#include "timeutil.h"

void
pool_config_defaults(PoolConfig *c)
{
    *c = (PoolConfig){
        .libvirt_uri = "qemu:///system",
        .domain_prefix = "stockade-",
        .accel = ACCEL_MODE_AUTO,
        .workspace_mib = 1024,
        .exec_uid = 1000,
        .exec_gid = 1000,
        .refill_concurrency = 2,
        .refill_holdoff_ms = 100,
        .tb_cache_mib = 64,
        .memory_overhead_mib = 192,
        .cpu_quota_percent = 100,
        .disk_bytes_per_sec = 200ull * 1024 * 1024,
        .disk_iops = 4000,
        .rng_bytes_per_sec = 4096,
        .boot_timeout_usec = 120 * USEC_PER_SEC,
        .kvm_probe_timeout_usec = 20 * USEC_PER_SEC,
        .sync_timeout_usec = 15 * USEC_PER_SEC,
        .health_interval_usec = 15 * USEC_PER_SEC,
        .ping_timeout_usec = 10 * USEC_PER_SEC,
        .guest_memory = POOL_GUEST_MEMORY_DEFAULT,
    };
}

const char *
pool_guest_memory_to_string(PoolGuestMemory m)
{
    return m == POOL_MEMORY_TEMPLATE ? "template" : "copy";
}
