/* Defaults of the sessions module's configuration (sessions_config.h). */
#include "sessions_config.h"

#include <string.h>

#include "timeutil.h"

void
sessions_config_defaults(SessionsConfig *c)
{
    memset(c, 0, sizeof(*c));
    c->default_timeout_usec = 10 * 60 * USEC_PER_SEC;
    c->max_timeout_usec = 24 * 3600 * USEC_PER_SEC;
    c->exec_default_timeout_usec = 10 * 60 * USEC_PER_SEC;
    c->pending_timeout_usec = 120 * USEC_PER_SEC;
    c->output_limit_bytes = 64ull << 20;
    c->mirror_budget_bytes = 256ull << 20;
    c->mirror_max_file_bytes = 64ull << 20;
    c->max_guest_events = SESSION_DEFAULT_MAX_GUEST_EVENTS;
    c->finalize_base_usec = SESSIONS_FINALIZE_BASE_USEC;
    c->finalize_usec_per_mib = SESSIONS_FINALIZE_USEC_PER_MIB;
    c->artifact_max_age_usec = 7ull * 24 * 3600 * USEC_PER_SEC;
    c->artifact_max_total_bytes = 10ull << 30;
    c->exec_uid = 1000;
    c->exec_gid = 1000;
    extract_limits_default(&c->extract);
    egress_config_defaults(&c->egress); /* egress off until [egress] allows something */
    c->default_quota = (AdmitQuota){
        .max_sessions = 16,
        .wallet_guest_seconds = 100 * 3600, /* 100 vCPU-hours */
        .max_vcpus = 8,
        .max_memory_mib = 8192,
        .max_timeout_s = 24 * 3600,
        .sessions_per_minute = 120,
        .output_bytes = 64ull << 20,
        .workspace_bytes = 1ull << 30,
    };
}
