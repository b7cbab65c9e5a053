/* Tenant admission: pure accounting. No I/O, no clock reads, no allocation: the caller
 * passes the quota, the usage the ledger holds, the request and the time, and gets back a
 * decision. The store persists what these functions compute; the sessions module runs them
 * on the loop thread inside one SQLite transaction (see hostd/sessions/session_admit.c).
 *
 * Units are in the names. Guest-seconds are vCPUs x seconds. Every quota value is bounded
 * by ADMIT_QUOTA_VALUE_MAX (and the rate by ADMIT_RATE_MAX_PER_MINUTE), so none of the
 * arithmetic below can overflow a uint64_t.
 *
 * Tokens (token.c): "e2b_" + 64 lower-case hex digits = 256 random bits, the shape the E2B
 * SDKs check on the client ("e2b_" then hex) so they take a Stockade token unchanged. Tokens
 * issued before were "stk_" + the same digits; either spelling of the digits is the same
 * token (one hash: that of the "stk_" spelling), so old tokens and their stored hashes keep
 * working. Only the SHA-256 is stored; the hash of a presented token is compared with
 * memcmp_constant_time(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

#define ADMIT_QUOTA_VALUE_MAX (UINT64_C(1) << 50)         /* any quota value (~1.1e15) */
#define ADMIT_RATE_MAX_PER_MINUTE UINT64_C(1000000)       /* sessions_per_minute */
#define ADMIT_BUCKET_MILLI UINT64_C(1000)                 /* bucket tokens are kept x1000 */
#define ADMIT_BUCKET_REFILL_USEC (UINT64_C(60) * 1000000) /* a full bucket refills per minute */
#define ADMIT_RETRY_LIVE_S 5   /* hint when live sessions of the tenant may free the limit */
#define ADMIT_RETRY_NEVER (-1) /* only an operator can lift the limit (JSON null) */

/* Which limit refused a request. The names (admit_limit_name) are the quota keys. */
typedef enum {
    ADMIT_OK = 0,
    ADMIT_MAX_VCPUS,
    ADMIT_MAX_MEMORY,
    ADMIT_MAX_TIMEOUT,
    ADMIT_MAX_SESSIONS,
    ADMIT_WALLET,
    ADMIT_RATE,
    _ADMIT_LIMIT_MAX,
} AdmitLimit;

typedef struct AdmitQuota {
    uint64_t max_sessions;         /* sessions admitted and not yet ended (pending included) */
    uint64_t wallet_guest_seconds; /* total allowance: charged + reserved may not exceed it */
    uint64_t max_vcpus;            /* per session: the pool shape's vcpus */
    uint64_t max_memory_mib;       /* per session: the pool shape's memory */
    uint64_t max_timeout_s;        /* per session: its lifetime */
    uint64_t sessions_per_minute;  /* creation rate: token bucket, burst = this many */
    uint64_t output_bytes;         /* per session: stdout + stderr, then output_limit */
    uint64_t workspace_bytes;      /* per session: live mirror and salvage, each */
} AdmitQuota;

/* The quota's keys, in the order of the struct: the API, the config and the store use it. */
typedef struct AdmitQuotaKey {
    const char *name;
    size_t offset; /* of the uint64_t in AdmitQuota */
    uint64_t max;
} AdmitQuotaKey;
extern const AdmitQuotaKey admit_quota_keys[];
extern const size_t admit_quota_n_keys;
uint64_t *admit_quota_field(AdmitQuota *q, const AdmitQuotaKey *k);
uint64_t admit_quota_get(const AdmitQuota *q, const AdmitQuotaKey *k);

typedef struct AdmitBucket {
    uint64_t level_milli; /* tokens x ADMIT_BUCKET_MILLI at updated_usec */
    int64_t updated_usec; /* wall clock; 0 = never used (a full bucket) */
} AdmitBucket;

/* What the ledger holds for a tenant. */
typedef struct AdmitUsage {
    uint64_t open_sessions;    /* open reservations */
    uint64_t reserved_guest_s; /* sum reserved over open reservations */
    uint64_t charged_guest_s;  /* sum charged over ended reservations */
    AdmitBucket bucket;
} AdmitUsage;

typedef struct AdmitRequest {
    uint64_t vcpus, memory_mib; /* of the pool shape the session asks for */
    uint64_t timeout_s;         /* the session's lifetime (the default applied) */
} AdmitRequest;

typedef struct AdmitRefusal {
    AdmitLimit limit_id;   /* ADMIT_OK = admitted */
    uint64_t limit, used;  /* the quota value, and the usage it was compared with */
    uint64_t requested;    /* what this request would add (or ask for, for caps) */
    int64_t retry_after_s; /* seconds until it may pass, or ADMIT_RETRY_NEVER */
} AdmitRefusal;

typedef struct AdmitDecision {
    AdmitRefusal refusal;     /* refusal.limit_id == ADMIT_OK: admitted */
    uint64_t reserve_guest_s; /* admitted: what to reserve */
    AdmitBucket bucket;       /* admitted: the bucket after taking one token */
} AdmitDecision;

/* Checks, in this order, the per-session caps (vcpus, memory, timeout), then concurrent
 * sessions, the wallet and the creation rate; the first limit that does not pass refuses.
 * Nothing is consumed on a refusal: the caller writes nothing. */
void admit_decide(const AdmitQuota *q, const AdmitUsage *u, const AdmitRequest *rq,
                  int64_t now_usec, AdmitDecision *ret);
const char *admit_limit_name(AdmitLimit l);

/* Token bucket of capacity per_minute tokens, refilled at per_minute per minute. The level
 * (x ADMIT_BUCKET_MILLI) now; a clock that went back refills nothing. */
uint64_t admit_bucket_level(const AdmitBucket *b, uint64_t per_minute, int64_t now_usec);
/* Whole seconds (rounded up) until level reaches one token; ADMIT_RETRY_NEVER at rate 0. */
int64_t admit_bucket_wait_s(uint64_t level_milli, uint64_t per_minute);

/* Wallet. What a session reserves at admission: timeout x vcpus. */
uint64_t admit_reserve_guest_s(uint64_t vcpus, uint64_t timeout_s);
/* What it is charged when it ends: vcpus x (ended - started) in whole seconds rounded up,
 * never more than it reserved; 0 if it never started (started_usec 0) or the clock went
 * back. The rest of the reservation is refunded. */
uint64_t admit_charge_guest_s(uint64_t reserved_guest_s, uint64_t vcpus, int64_t started_usec,
                              int64_t ended_usec);
/* charged + reserved: what the wallet counts as spent. */
uint64_t admit_wallet_used(const AdmitUsage *u);

/* ------------------------------------------------------------------ tokens (token.c) */

#define ADMIT_TOKEN_PREFIX "e2b_"        /* what admit_token_format() issues */
#define ADMIT_TOKEN_LEGACY_PREFIX "stk_" /* the earlier spelling, accepted; the hashed form */
#define ADMIT_TOKEN_RANDOM_BYTES 32      /* 256 bits */
#define ADMIT_TOKEN_TEXT_LEN (4 + 2 * ADMIT_TOKEN_RANDOM_BYTES)
#define ADMIT_TOKEN_TEXT_BYTES (ADMIT_TOKEN_TEXT_LEN + 1)
#define ADMIT_ID_RANDOM_CHARS 26 /* ids: prefix + 26 base32 characters (130 bits) */
#define ADMIT_ID_BYTES 40        /* room for any prefix up to 13 bytes */
#define ADMIT_TENANT_ID_PREFIX "ten_"
/* The caller key both HTTP faces name a tenant's requests by (http_request_set_caller()), so
 * the layer's per-caller shares count one tenant once across the native API and E2B. */
#define ADMIT_TENANT_CALLER_FMT "tenant:%s"
#define ADMIT_TOKEN_ID_PREFIX "tok_"

/* The text form of 32 random bytes. */
void admit_token_format(const uint8_t random[ADMIT_TOKEN_RANDOM_BYTES],
                        char out[ADMIT_TOKEN_TEXT_BYTES]);
/* True if text[0..len) has the token's exact shape (either prefix, 64 lower-case hex digits). */
bool admit_token_is_valid(const char *text, size_t len);
/* The stored form: SHA-256 of the token's text, spelt with ADMIT_TOKEN_LEGACY_PREFIX (an
 * "e2b_" token hashes as its "stk_" spelling, so both name one stored token). */
void admit_token_hash(const char *token, uint8_t out[SHA256_BYTES]);
/* Constant-time equality of two token hashes. */
bool admit_token_hash_equal(const uint8_t a[SHA256_BYTES], const uint8_t b[SHA256_BYTES]);
/* The token of an "Authorization: Bearer <token>" value (scheme case-insensitive, one or
 * more spaces), or NULL when the value is not of that form. Points into header. */
const char *admit_bearer_token(const char *header);
/* prefix (e.g. "ten_") + ADMIT_ID_RANDOM_CHARS base32 characters from random. */
void admit_id_format(const char *prefix, const uint8_t random[ADMIT_ID_RANDOM_CHARS],
                     char out[ADMIT_ID_BYTES]);
/* True for "<prefix>" + ADMIT_ID_RANDOM_CHARS base32 characters. */
bool admit_id_is_valid(const char *prefix, const char *id);
