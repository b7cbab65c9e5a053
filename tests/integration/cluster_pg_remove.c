/* Removing a tenant in the cluster (issue 30, cluster_tenant_remove) against the real
 * PostgreSQL of integration_cluster_pg:
 *
 *   refuse    open sessions (in the cluster's ledger, whichever host admitted them) and no
 *             cancel: nothing changes, the count is answered
 *   remove    with them: the tenant marked removed once (its first time kept, never undone),
 *             its live tokens revoked, each numbered: one pull carries the tenant and every
 *             token; the ledger stays and its open reservation still settles
 *   after     admission of it refused on every host, no token issued for it; its name is free
 *             for a new tenant; the built-in tenant cannot be removed, an unknown one is 404
 *   race      admissions on several connections while it is removed: every admission that
 *             succeeded is counted by the removal (none slips in after it) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_pg.h"
#include "testlib.h"

#define RM_T0_USEC INT64_C(1800000000000000)
#define RM_TOKENS 5
#define RM_RACERS 4

/* Ids from tags: each byte becomes one base32 character (its low 5 bits): tags < 32. */
static TenantRecord
rm_tenant(uint8_t tag, const char *name)
{
    uint8_t idr[ADMIT_ID_RANDOM_CHARS] = {0xee, tag};
    TenantRecord t = {.created_usec = RM_T0_USEC};
    admit_id_format(ADMIT_TENANT_ID_PREFIX, idr, t.id);
    snprintf(t.name, sizeof(t.name), "%s", name);
    return t;
}

static TokenRecord
rm_token(const TenantRecord *t, uint8_t tag, int i)
{
    uint8_t idr[ADMIT_ID_RANDOM_CHARS] = {0xee, tag, (uint8_t) i};
    char text[64];
    TokenRecord k = {.created_usec = RM_T0_USEC};
    admit_id_format(ADMIT_TOKEN_ID_PREFIX, idr, k.id);
    snprintf(k.tenant_id, sizeof(k.tenant_id), "%s", t->id);
    snprintf(text, sizeof(text), "stk_rm_%d_%d", tag, i);
    admit_token_hash(text, k.hash);
    return k;
}

/* A tenant with RM_TOKENS tokens, made through c. */
static TenantRecord
rm_make(Cluster *c, uint8_t tag, const char *name)
{
    Error *e = NULL;
    TenantRecord t = rm_tenant(tag, name);
    TokenRecord first = rm_token(&t, tag, 0);
    TEST_CHECK(cluster_tenant_create(c, &t, NULL, &first, &e) == 0, "create: %s",
               e ? e->message : "");
    for (int i = 1; i < RM_TOKENS; i++) {
        TokenRecord k = rm_token(&t, tag, i);
        TEST_CHECK(cluster_token_insert(c, &t, &k, &e) == 0, "issue: %s", e ? e->message : "");
    }
    return t;
}

/* One admission of a session for tenant through c: 1 admitted, 0 refused, -1 failed (*ret_e). */
static int
rm_admit(Cluster *c, const char *tenant, const char *session, Error **ret_e)
{
    AdmitQuota unlimited = {0};
    AdmitRequest rq = {.vcpus = 1, .memory_mib = 256, .timeout_s = 60};
    ReservationRecord res = {0};
    AdmitDecision d;
    for (size_t k = 0; k < admit_quota_n_keys; k++)
        *admit_quota_field(&unlimited, &admit_quota_keys[k]) = admit_quota_keys[k].max;
    snprintf(res.tenant_id, sizeof(res.tenant_id), "%s", tenant);
    snprintf(res.session_id, sizeof(res.session_id), "%s", session);
    if (cluster_admit(c, &unlimited, &rq, 1 << 20, RM_T0_USEC, &res, &d, ret_e) < 0)
        return -1;
    return d.refusal.limit_id == ADMIT_OK;
}

/* SELECT count(*) of WHAT's rows whose tenant is id (WHERE: the rest of the condition). */
static long
rm_count(const char *what, const char *id, const char *where)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE %s = '%s' AND %s", what,
             strcmp(what, "tenants") == 0 ? "id" : "tenant_id", id, where);
    return sql_long(sql);
}

/* Everything pulled after *cursor, until a pull comes back empty. */
static void
rm_pull_all(Cluster *c, int64_t *cursor, ClusterTenancy *ret)
{
    Error *e = NULL;
    TEST_CHECK(cluster_tenancy_pull(c, *cursor, ret, &e) == 0, "pull: %s", e ? e->message : "");
    TEST_CHECK(!ret->more, "more than one pull of changes");
    *cursor = ret->last_seq;
}

static void
rm_refuse_then_remove(Cluster *a, Cluster *b, const TenantRecord *t, int64_t *cursor)
{
    Error *e = NULL;
    ClusterTenantRemoval x;
    ClusterTenancy pulled;
    TEST_CHECK(rm_admit(b, t->id, "ses-rm-open", &e) == 1, "admit: %s", e ? e->message : "");
    rm_pull_all(a, cursor, &pulled); /* up to date before the removal */
    cluster_tenancy_clear(&pulled);

    TEST_CHECK(cluster_tenant_remove(a, t->id, RM_T0_USEC + 10, false, &x, &e) == 0, "%s",
               e ? e->message : "");
    TEST_CHECK(!x.removed && x.open_sessions == 1, "an open session (on b): removed %d, open %llu",
               x.removed, (unsigned long long) x.open_sessions);
    TEST_CHECK(rm_count("tokens", t->id, "revoked_usec = 0") == RM_TOKENS &&
                   rm_count("tenants", t->id, "removed_usec = 0") == 1,
               "a refused removal changed something");

    TEST_CHECK(cluster_tenant_remove(a, t->id, RM_T0_USEC + 20, true, &x, &e) == 0, "%s",
               e ? e->message : "");
    TEST_CHECK(x.removed && x.open_sessions == 1 && x.tokens_revoked == RM_TOKENS &&
                   x.tenant.removed_usec == RM_T0_USEC + 20 && strcmp(x.tenant.name, t->name) == 0,
               "removal: removed %d, open %llu, revoked %zu, at %lld", x.removed,
               (unsigned long long) x.open_sessions, x.tokens_revoked,
               (long long) x.tenant.removed_usec);
    rm_pull_all(a, cursor, &pulled);
    bool tenant_ok = pulled.n_tenants == 1 && pulled.tenants[0].removed_usec == RM_T0_USEC + 20;
    size_t revoked = 0;
    for (size_t i = 0; i < pulled.n_tokens; i++)
        revoked += pulled.tokens[i].revoked_usec == RM_T0_USEC + 20 &&
                   strcmp(pulled.tokens[i].tenant_id, t->id) == 0;
    TEST_CHECK(tenant_ok && revoked == RM_TOKENS && pulled.n_tokens == RM_TOKENS,
               "the pull after a removal: %zu tenants, %zu tokens (%zu revoked)", pulled.n_tenants,
               pulled.n_tokens, revoked);
    cluster_tenancy_clear(&pulled);

    /* again: the first time stays, nothing more to revoke */
    TEST_CHECK(cluster_tenant_remove(b, t->id, RM_T0_USEC + 30, false, &x, &e) == 0 && x.removed &&
                   x.tokens_revoked == 0 && x.tenant.removed_usec == RM_T0_USEC + 20,
               "a second removal");
    /* the ledger stays: its open reservation still settles once */
    ReservationRecord res;
    TEST_CHECK(
        cluster_reservation_for_session(b, "ses-rm-open", &res, &e) == 0 &&
            cluster_reservation_end(b, res.id, RESERVATION_CHARGED, 1, RM_T0_USEC + 40, &e) == 0,
        "settle a removed tenant's session: %s", e ? e->message : "");
}

static void
rm_after(Cluster *a, Cluster *b, const TenantRecord *t)
{
    Error *e = NULL;
    ClusterTenantRemoval x;
    TEST_CHECK(rm_admit(b, t->id, "ses-rm-late", &e) < 0 && e->category == E_FORBIDDEN,
               "admission of a removed tenant");
    error_free(e);
    e = NULL;
    TokenRecord k = rm_token(t, 4, 9);
    TEST_CHECK(cluster_token_insert(a, t, &k, &e) < 0 && e->category == E_CONFLICT,
               "a token for a removed tenant");
    error_free(e);
    e = NULL;
    char sql[256];
    snprintf(sql, sizeof(sql), "UPDATE tenants SET removed_usec = 0 WHERE id = '%s'", t->id);
    free(sql_value(sql, true));                  /* never undone */
    TenantRecord again = rm_make(a, 2, t->name); /* the name is free again */
    TEST_CHECK(rm_admit(b, again.id, "ses-rm-new", &e) == 1, "the new tenant of that name");
    TEST_CHECK(cluster_tenant_remove(a, "default", RM_T0_USEC, true, &x, &e) < 0 &&
                   e->category == E_CONFLICT,
               "the built-in tenant");
    error_free(e);
    e = NULL;
    TEST_CHECK(cluster_tenant_remove(a, "ten_nonenonenonenonenonenone", RM_T0_USEC, true, &x, &e) <
                       0 &&
                   e->category == E_NOT_FOUND,
               "an unknown tenant");
    error_free(e);
}

typedef struct {
    const char *tenant;
    atomic_int admitted, seq;
    atomic_bool go;
} RmRace;

/* Admits for the tenant until the removal refuses it. */
static void *
rm_racer(void *arg)
{
    RmRace *r = arg;
    int me = atomic_fetch_add(&r->seq, 1);
    char host[24], session[64];
    snprintf(host, sizeof(host), "host-%d", 2 + me); /* hosts the other tests know */
    Cluster *c = open_host(host);
    while (!atomic_load(&r->go))
        ;
    for (int i = 0;; i++) {
        Error *e = NULL;
        snprintf(session, sizeof(session), "ses-race-%d-%d", me, i);
        int ok = rm_admit(c, r->tenant, session, &e);
        if (ok < 0) {
            TEST_CHECK(e->category == E_FORBIDDEN, "racing admission: %s", e->message);
            error_free(e);
            break;
        }
        atomic_fetch_add(&r->admitted, ok);
    }
    cluster_free(c);
    return NULL;
}

static void
rm_race(Cluster *a)
{
    Error *e = NULL;
    ClusterTenantRemoval x;
    TenantRecord t = rm_make(a, 3, "rm-race");
    RmRace r = {.tenant = t.id};
    pthread_t th[RM_RACERS];
    for (int i = 0; i < RM_RACERS; i++)
        pthread_create(&th[i], NULL, rm_racer, &r);
    atomic_store(&r.go, true);
    while (atomic_load(&r.admitted) < 2 * RM_RACERS) /* some admitted before, by causality */
        ;
    TEST_CHECK(cluster_tenant_remove(a, t.id, RM_T0_USEC + 50, true, &x, &e) == 0 && x.removed,
               "remove while admitting: %s", e ? e->message : "");
    for (int i = 0; i < RM_RACERS; i++)
        pthread_join(th[i], NULL);
    long open = rm_count("reservations", t.id, "state = 'open'");
    TEST_CHECK(x.open_sessions == (uint64_t) atomic_load(&r.admitted) &&
                   open == (long) x.open_sessions,
               "the removal counted %llu open, %d were admitted, the ledger holds %ld",
               (unsigned long long) x.open_sessions, atomic_load(&r.admitted), open);
    printf("tenant removal race: %d admitting connections, %d admitted before the removal, "
           "each counted by it, none after\n",
           RM_RACERS, atomic_load(&r.admitted));
}

void
test_tenant_remove(void)
{
    Cluster *a = open_host("host-0"), *b = open_host("host-1");
    int64_t cursor = 0;
    ClusterTenancy all;
    /* the tenancy test put the sequence back (a restore): numbers from past every row again */
    free(sql_value("SELECT setval('tenancy_changes', (SELECT max(s) FROM (SELECT changed_seq s"
                   " FROM tenants UNION ALL SELECT changed_seq FROM tokens) x))",
                   false));
    for (bool more = true; more;) { /* start from what the earlier tests left */
        Error *e = NULL;
        TEST_CHECK(cluster_tenancy_pull(a, cursor, &all, &e) == 0, "pull");
        more = all.n_tenants + all.n_tokens + all.n_invalid > 0 || all.rewound;
        cursor = all.last_seq;
        cluster_tenancy_clear(&all);
    }
    TenantRecord t = rm_make(a, 1, "rm-acme");
    rm_refuse_then_remove(a, b, &t, &cursor);
    rm_after(a, b, &t);
    rm_race(a);
    cluster_free(a);
    cluster_free(b);
    printf("tenant removal: refused while a session is open on another host, then removed with "
           "it (tokens revoked, one pull carries all), never undone; admission and new tokens "
           "refused; the name free again\n");
}
