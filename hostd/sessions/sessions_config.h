/* The sessions module's configuration ([sessions], [quota], [egress] in stockaded.conf): plain
 * types over admit's quotas, extract's limits and egress's policy, so the config parser and
 * its fuzzer use them without linking the sessions (or the pool, or libvirt). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "admit.h"
#include "extract.h"
#include "policy.h"

/* A finalize (clean end over the channel) must end by base + per MiB moved: the runner's kill
 * wait (2 s) and walk under TCG fit the base; the channel moves ~10+ MiB/s under TCG. */
#define SESSIONS_FINALIZE_BASE_USEC (10ull * 1000000)
#define SESSIONS_FINALIZE_USEC_PER_MIB (100u * 1000u)

/* Events a workload can make as fast as it likes (a file removed, a file over the mirror
 * budget or failing to land, an error the runner reports): the first max_guest_events of a
 * session are recorded, later ones only counted (events.suppressed, the session's
 * events_suppressed), so one session cannot grow the host's event store without limit. */
#define SESSION_DEFAULT_MAX_GUEST_EVENTS 10000

typedef struct SessionsConfig {
    const char *state_dir;            /* artifacts in <state_dir>/artifacts/<id>/ */
    const char *db_path;              /* for the EventHub readers */
    uint64_t default_timeout_usec;    /* a session's lifetime when not asked */
    uint64_t max_timeout_usec;
    uint64_t exec_default_timeout_usec;
    uint64_t pending_timeout_usec;    /* waiting for a warm guest, then fail(no_capacity) */
    uint64_t output_limit_bytes;      /* stdout + stderr of a session, then end(output_limit) */
    uint64_t mirror_budget_bytes;     /* live mirror content per session */
    uint64_t mirror_max_file_bytes;
    unsigned max_guest_events;        /* per session, see SESSION_DEFAULT_MAX_GUEST_EVENTS */
    uint64_t finalize_base_usec;      /* a clean end over the channel: base deadline; 0 = off */
    unsigned finalize_usec_per_mib;   /* ... plus this per MiB moved (mirror flush, fetch) */
    uint64_t artifact_max_age_usec;   /* retention: artifacts and records of ended sessions */
    uint64_t artifact_max_total_bytes;
    uint32_t exec_uid, exec_gid;
    ExtractLimits extract;
    EgressConfig egress;              /* the operator's allowed set and per-session limits */
    AdmitQuota default_quota;         /* of tenants without their own ([quota] in the config) */
} SessionsConfig;

void sessions_config_defaults(SessionsConfig *c);
