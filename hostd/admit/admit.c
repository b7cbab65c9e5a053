/* Quota arithmetic: the admission decision, the token bucket and the wallet. See admit.h.
 * Pure: every input is an argument, nothing is read from the clock or the disk. */
#include "admit.h"

#include <string.h>

#include "macro.h"

#define USEC_PER_S UINT64_C(1000000)

#define QK(field, limit)                                                                           \
    {                                                                                              \
#field, offsetof(AdmitQuota, field), limit                                                 \
    }
const AdmitQuotaKey admit_quota_keys[] = {
    QK(max_sessions, ADMIT_QUOTA_VALUE_MAX),  QK(wallet_guest_seconds, ADMIT_QUOTA_VALUE_MAX),
    QK(max_vcpus, ADMIT_QUOTA_VALUE_MAX),     QK(max_memory_mib, ADMIT_QUOTA_VALUE_MAX),
    QK(max_timeout_s, ADMIT_QUOTA_VALUE_MAX), QK(sessions_per_minute, ADMIT_RATE_MAX_PER_MINUTE),
    QK(output_bytes, ADMIT_QUOTA_VALUE_MAX),  QK(workspace_bytes, ADMIT_QUOTA_VALUE_MAX),
};
const size_t admit_quota_n_keys = ELEMENTSOF(admit_quota_keys);

static const char *const limit_names[_ADMIT_LIMIT_MAX] = {
    [ADMIT_OK] = "ok",
    [ADMIT_MAX_VCPUS] = "max_vcpus",
    [ADMIT_MAX_MEMORY] = "max_memory_mib",
    [ADMIT_MAX_TIMEOUT] = "max_timeout_s",
    [ADMIT_MAX_SESSIONS] = "max_sessions",
    [ADMIT_WALLET] = "wallet_guest_seconds",
    [ADMIT_RATE] = "sessions_per_minute",
};

const char *
admit_limit_name(AdmitLimit l)
{
    return l < _ADMIT_LIMIT_MAX ? limit_names[l] : "unknown";
}

uint64_t *
admit_quota_field(AdmitQuota *q, const AdmitQuotaKey *k)
{
    return (uint64_t *) ((char *) q + k->offset);
}

uint64_t
admit_quota_get(const AdmitQuota *q, const AdmitQuotaKey *k)
{
    return *(const uint64_t *) ((const char *) q + k->offset);
}

/* ------------------------------------------------------------------ token bucket */

uint64_t
admit_bucket_level(const AdmitBucket *b, uint64_t per_minute, int64_t now_usec)
{
    uint64_t cap = MIN(per_minute, ADMIT_RATE_MAX_PER_MINUTE) * ADMIT_BUCKET_MILLI;
    if (b->updated_usec == 0)
        return cap;
    uint64_t level = MIN(b->level_milli, cap);
    if (now_usec <= b->updated_usec)
        return level; /* the clock went back (or no time passed): no refill */
    uint64_t elapsed = (uint64_t) (now_usec - b->updated_usec);
    if (elapsed >= ADMIT_BUCKET_REFILL_USEC)
        return cap;
    /* elapsed < 6e7, per_minute <= 1e6, x1000: at most 6e16, no overflow */
    uint64_t add = elapsed * MIN(per_minute, ADMIT_RATE_MAX_PER_MINUTE) * ADMIT_BUCKET_MILLI /
                   ADMIT_BUCKET_REFILL_USEC;
    return MIN(cap, level + add);
}

int64_t
admit_bucket_wait_s(uint64_t level_milli, uint64_t per_minute)
{
    if (level_milli >= ADMIT_BUCKET_MILLI)
        return 0;
    if (per_minute == 0)
        return ADMIT_RETRY_NEVER;
    uint64_t rate = MIN(per_minute, ADMIT_RATE_MAX_PER_MINUTE) * ADMIT_BUCKET_MILLI;
    uint64_t need = ADMIT_BUCKET_MILLI - level_milli;
    uint64_t usec = (need * ADMIT_BUCKET_REFILL_USEC + rate - 1) / rate;
    return (int64_t) ((usec + USEC_PER_S - 1) / USEC_PER_S);
}

/* ------------------------------------------------------------------ wallet */

uint64_t
admit_reserve_guest_s(uint64_t vcpus, uint64_t timeout_s)
{
    return vcpus * timeout_s; /* both bounded by the caps they passed */
}

uint64_t
admit_charge_guest_s(uint64_t reserved_guest_s, uint64_t vcpus, int64_t started_usec,
                     int64_t ended_usec)
{
    if (started_usec <= 0 || ended_usec <= started_usec)
        return 0;
    uint64_t secs = ((uint64_t) (ended_usec - started_usec) + USEC_PER_S - 1) / USEC_PER_S;
    if (vcpus && secs > reserved_guest_s / vcpus)
        return reserved_guest_s; /* never more than reserved (also keeps vcpus*secs small) */
    return MIN(reserved_guest_s, vcpus * secs);
}

uint64_t
admit_wallet_used(const AdmitUsage *u)
{
    return u->charged_guest_s + u->reserved_guest_s;
}

/* ------------------------------------------------------------------ the decision */

static void
refuse(AdmitDecision *d, AdmitLimit id, uint64_t limit, uint64_t used, uint64_t requested,
       int64_t retry_after_s)
{
    d->refusal = (AdmitRefusal){.limit_id = id,
                                .limit = limit,
                                .used = used,
                                .requested = requested,
                                .retry_after_s = retry_after_s};
}

/* Per-session caps: no amount of waiting lifts them. */
static bool
admit_caps(const AdmitQuota *q, const AdmitRequest *rq, AdmitDecision *d)
{
    if (rq->vcpus > q->max_vcpus)
        refuse(d, ADMIT_MAX_VCPUS, q->max_vcpus, rq->vcpus, rq->vcpus, ADMIT_RETRY_NEVER);
    else if (rq->memory_mib > q->max_memory_mib)
        refuse(d, ADMIT_MAX_MEMORY, q->max_memory_mib, rq->memory_mib, rq->memory_mib,
               ADMIT_RETRY_NEVER);
    else if (rq->timeout_s > q->max_timeout_s)
        refuse(d, ADMIT_MAX_TIMEOUT, q->max_timeout_s, rq->timeout_s, rq->timeout_s,
               ADMIT_RETRY_NEVER);
    else
        return true;
    return false;
}

void
admit_decide(const AdmitQuota *q, const AdmitUsage *u, const AdmitRequest *rq, int64_t now_usec,
             AdmitDecision *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!admit_caps(q, rq, ret))
        return;
    int64_t live_retry = u->open_sessions ? ADMIT_RETRY_LIVE_S : ADMIT_RETRY_NEVER;
    if (u->open_sessions >= q->max_sessions) {
        refuse(ret, ADMIT_MAX_SESSIONS, q->max_sessions, u->open_sessions, 1, live_retry);
        return;
    }
    uint64_t reserve = admit_reserve_guest_s(rq->vcpus, rq->timeout_s);
    uint64_t used = admit_wallet_used(u);
    if (reserve > q->wallet_guest_seconds || used > q->wallet_guest_seconds - reserve) {
        refuse(ret, ADMIT_WALLET, q->wallet_guest_seconds, used, reserve, live_retry);
        return;
    }
    uint64_t level = admit_bucket_level(&u->bucket, q->sessions_per_minute, now_usec);
    if (level < ADMIT_BUCKET_MILLI) {
        uint64_t per_minute = MIN(q->sessions_per_minute, ADMIT_RATE_MAX_PER_MINUTE);
        refuse(ret, ADMIT_RATE, q->sessions_per_minute, per_minute - level / ADMIT_BUCKET_MILLI, 1,
               admit_bucket_wait_s(level, q->sessions_per_minute));
        return;
    }
    ret->reserve_guest_s = reserve;
    ret->bucket =
        (AdmitBucket){.level_milli = level - ADMIT_BUCKET_MILLI, .updated_usec = now_usec};
}
