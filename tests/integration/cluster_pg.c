/* The cluster module (hostd/cluster) against a real, throw-away PostgreSQL (issue 16), run by
 * tests/lib/pgtemp.py, which passes its conninfo in STOCKADE_TEST_PG. No daemon, no guests:
 * many connections at once stand for many hosts.
 *
 *   migrate   several hosts open the cluster at the same instant: the schema is migrated
 *             exactly once, and a second start changes nothing
 *   race      N connections x M admissions at once against max_sessions=1: exactly one
 *   wallet    the same against a wallet of K sessions' worth: exactly K
 *   rate      the same against sessions_per_minute=K at one instant: exactly K
 *   ledger    a reservation ends exactly once; no delete, no truncate, no rewrite of its
 *             terms; open reservations are listed per owning host
 *   hosts     heartbeats (by the database's clock) and the hosts list; a heartbeat that is
 *             not JSON changes nothing
 *   reconnect the server drops every host's connection (as a restart does): the next call
 *             reconnects by itself and succeeds, nothing counted twice
 *   tenancy   writers issuing tokens on several connections while a host pulls: each
 *             tenant and token pulled exactly once; a revoke once (its first time kept)
 *             and pulled; no un-revoke, delete or truncate of tokens; a taken name; rows
 *             over the store's bounds skipped and passed; a sequence put back noticed
 *   remove    a tenant removed: refused with open sessions, then with them; pulled; nothing
 *             admitted after, not even racing (cluster_pg_remove.c)
 *   host_lost a host that dies is taken over (cluster_pg_lost.c)
 *   bounds    100 admissions at one lock, a slow statement, a frozen server: each call
 *             within its bound (cluster_pg_bounds.c)
 *   refuse    a bad token file, a bad conninfo, an unreachable server, an http:// URL
 *             without insecure_hops: clear errors; the token file read again (SIGHUP's
 *             cluster_reload_credential()): a bad one keeps the keys in use, a rotation's
 *             two secrets send the first and accept both */
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster.h"
#include "cluster_pg.h"
#include "cluster_route.h"
#include "testlib.h"
#include "timeutil.h"

#define HOSTS 6 /* connections that stand for hosts */
#define TRIES_PER_HOST 17
#define T0_USEC INT64_C(1800000000000000) /* one fixed instant: no bucket refill, no clock */

static const char *conninfo;
static char token_path[256];
static char *scratch;

static void
cleanup(void)
{
    if (scratch)
        test_rm_rf(scratch);
}
#undef TEST_CLEANUP
#define TEST_CLEANUP() cleanup()

ClusterConfig
config_for(const char *host)
{
    ClusterConfig c = {0};
    snprintf(c.database, sizeof(c.database), "%s", conninfo);
    snprintf(c.host_id, sizeof(c.host_id), "%s", host);
    snprintf(c.advertise_url, sizeof(c.advertise_url), "http://127.0.0.1:1/%s", host);
    snprintf(c.host_token_file, sizeof(c.host_token_file), "%s", token_path);
    c.insecure_hops = true; /* the URL is never used: no hop is made here */
    return c;
}

Cluster *
open_host(const char *host)
{
    Error *e = NULL;
    Cluster *c = NULL;
    ClusterConfig cfg = config_for(host);
    TEST_CHECK(cluster_open(&cfg, &c, &e) == 0, "open %s: %s", host, e ? e->message : "");
    return c;
}

char *
sql_value(const char *sql, bool must_fail)
{
    PGconn *pg = PQconnectdb(conninfo);
    TEST_CHECK(PQstatus(pg) == CONNECTION_OK, "%s", PQerrorMessage(pg));
    PGresult *r = PQexec(pg, sql);
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK;
    TEST_CHECK(ok != must_fail, "%s: %s", sql, must_fail ? "was allowed" : PQerrorMessage(pg));
    char *v = strdup(ok && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : PQerrorMessage(pg));
    PQclear(r);
    PQfinish(pg);
    return v;
}

long
sql_long(const char *sql)
{
    char *v = sql_value(sql, false);
    long n = strtol(v, NULL, 10);
    free(v);
    return n;
}

/* ------------------------------------------------------------------ migrate */

static pthread_barrier_t barrier;

static void *
open_at_once(void *arg)
{
    char host[16];
    snprintf(host, sizeof(host), "host-%d", (int) (long) arg);
    pthread_barrier_wait(&barrier);
    return open_host(host);
}

static void
test_migrate(void)
{
    pthread_t t[HOSTS];
    pthread_barrier_init(&barrier, NULL, HOSTS);
    for (long i = 0; i < HOSTS; i++)
        pthread_create(&t[i], NULL, open_at_once, (void *) i);
    for (int i = 0; i < HOSTS; i++) {
        void *c;
        pthread_join(t[i], &c);
        cluster_free(c);
    }
    pthread_barrier_destroy(&barrier);
    long rows = sql_long("SELECT count(*) FROM schema_version");
    TEST_CHECK(rows == cluster_schema_latest(), "%ld version rows for %d migrations", rows,
               cluster_schema_latest());
    TEST_CHECK(sql_long("SELECT count(*) FROM hosts") == HOSTS, "every host registered once");
    Cluster *c = open_host("host-0"); /* a second start: nothing to do */
    int v = -1;
    Error *e = NULL;
    TEST_CHECK(cluster_schema_version(c, &v, &e) == 0 && v == cluster_schema_latest(), "v%d", v);
    TEST_CHECK(sql_long("SELECT count(*) FROM schema_version") == rows, "second start migrated");
    cluster_free(c);
    printf("migrate: %d hosts at once, schema migrated once (%ld version rows)\n", HOSTS, rows);
}

/* ------------------------------------------------------------------ admission races */

typedef struct Race {
    const char *tenant;
    AdmitRequest rq;
    atomic_int admitted, refused, failed;
    atomic_int seq;
    AdmitLimit refused_by;
} Race;

static void *
admit_many(void *arg)
{
    Race *r = arg;
    char host[16];
    int me = atomic_fetch_add(&r->seq, 1);
    snprintf(host, sizeof(host), "host-%d", me % HOSTS);
    Cluster *c = open_host(host);
    AdmitQuota unlimited = {0};
    for (size_t k = 0; k < admit_quota_n_keys; k++)
        *admit_quota_field(&unlimited, &admit_quota_keys[k]) = admit_quota_keys[k].max;
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < TRIES_PER_HOST; i++) {
        ReservationRecord res = {0};
        AdmitDecision d;
        Error *e = NULL;
        snprintf(res.tenant_id, sizeof(res.tenant_id), "%s", r->tenant);
        snprintf(res.session_id, sizeof(res.session_id), "%s-%d-%d", r->tenant, me, i);
        if (cluster_admit(c, &unlimited, &r->rq, 1 << 20, T0_USEC, &res, &d, &e) < 0) {
            fprintf(stderr, "admit: %s\n", e->message);
            error_free(e);
            atomic_fetch_add(&r->failed, 1);
        } else if (d.refusal.limit_id == ADMIT_OK) {
            atomic_fetch_add(&r->admitted, 1);
        } else {
            TEST_CHECK(d.refusal.limit_id == r->refused_by, "refused by %s",
                       admit_limit_name(d.refusal.limit_id));
            atomic_fetch_add(&r->refused, 1);
        }
    }
    cluster_free(c);
    return NULL;
}

/* HOSTS x TRIES_PER_HOST admissions at once for a tenant whose quota row is q. */
static int
race(const char *tenant, AdmitQuota q, AdmitLimit refused_by)
{
    Error *e = NULL;
    Race r = {.tenant = tenant,
              .rq = {.vcpus = 1, .memory_mib = 256, .timeout_s = 60},
              .refused_by = refused_by};
    Cluster *c = open_host("host-0");
    TEST_CHECK(cluster_quota_put(c, tenant, &q, T0_USEC, &e) == 0, "quota: %s",
               e ? e->message : ""); /* makes the tenant's row too */
    cluster_free(c);
    pthread_t t[HOSTS];
    pthread_barrier_init(&barrier, NULL, HOSTS);
    uint64_t t0 = now_usec(); /* a figure to print, never a pass/fail */
    for (int i = 0; i < HOSTS; i++)
        pthread_create(&t[i], NULL, admit_many, &r);
    for (int i = 0; i < HOSTS; i++)
        pthread_join(t[i], NULL);
    double took_s = (double) (now_usec() - t0) / 1e6; /* connects included */
    pthread_barrier_destroy(&barrier);
    TEST_CHECK(r.failed == 0, "%d admissions failed", r.failed);
    TEST_CHECK(r.admitted + r.refused == HOSTS * TRIES_PER_HOST, "lost answers");
    char q_open[256];
    snprintf(q_open, sizeof(q_open),
             "SELECT count(*) FROM reservations WHERE tenant_id = '%s' AND state = 'open'", tenant);
    TEST_CHECK(sql_long(q_open) == r.admitted, "ledger holds %ld, %d admitted", sql_long(q_open),
               (int) r.admitted);
    printf("%s: %d creates over %d connections at once: %d admitted, %d refused (%s);"
           " %.0f decisions/s on one tenant's lock\n",
           tenant, HOSTS * TRIES_PER_HOST, HOSTS, (int) r.admitted, (int) r.refused,
           admit_limit_name(refused_by), HOSTS * TRIES_PER_HOST / took_s);
    return r.admitted;
}

static AdmitQuota
roomy(void)
{
    return (AdmitQuota){.max_sessions = 100000,
                        .wallet_guest_seconds = 100000000,
                        .max_vcpus = 8,
                        .max_memory_mib = 8192,
                        .max_timeout_s = 3600,
                        .sessions_per_minute = 1000000,
                        .output_bytes = 1 << 20,
                        .workspace_bytes = 1 << 20};
}

static void
test_races(void)
{
    AdmitQuota q = roomy();
    q.max_sessions = 1;
    TEST_CHECK(race("t-race", q, ADMIT_MAX_SESSIONS) == 1, "max_sessions=1 admitted more");
    q = roomy();
    q.wallet_guest_seconds = 7 * 60; /* each reserves 60 s x 1 vcpu */
    TEST_CHECK(race("t-wallet", q, ADMIT_WALLET) == 7, "wallet of 7 sessions");
    q = roomy();
    q.sessions_per_minute = 5;
    TEST_CHECK(race("t-rate", q, ADMIT_RATE) == 5, "a bucket of 5 at one instant");
}

/* ------------------------------------------------------------------ ledger rules */

static void
test_ledger(void)
{
    Error *e = NULL;
    Cluster *a = open_host("host-1"), *b = open_host("host-2");
    ReservationRecord res, got;
    TEST_CHECK(cluster_reservation_for_session(a, "t-race-missing", &got, &e) < 0 &&
                   e->category == E_NOT_FOUND,
               "a missing reservation");
    error_free(e);
    e = NULL;
    long open_id = sql_long("SELECT r.id FROM reservations r WHERE tenant_id = 't-race'");
    char sid[64];
    char *s = sql_value("SELECT session_id FROM reservations WHERE tenant_id = 't-race'", false);
    snprintf(sid, sizeof(sid), "%s", s);
    free(s);
    TEST_CHECK(cluster_reservation_for_session(b, sid, &res, &e) == 0, "get");
    TEST_CHECK(res.id == open_id && res.state == RESERVATION_OPEN && res.reserved_guest_s == 60,
               "the record");
    /* Only the owner lists it as its own. */
    ReservationRecord *v;
    size_t n, total = 0;
    for (int h = 0; h < HOSTS; h++) {
        char host[16];
        snprintf(host, sizeof(host), "host-%d", h);
        Cluster *c = open_host(host);
        TEST_CHECK(cluster_reservations_open(c, &v, &n, &e) == 0, "list");
        total += n;
        free(v);
        cluster_free(c);
    }
    TEST_CHECK((long) total == sql_long("SELECT count(*) FROM reservations WHERE state='open'"),
               "every open reservation has exactly one owner (%zu)", total);
    TEST_CHECK(cluster_reservation_end(a, res.id, RESERVATION_CHARGED, 61, 1, &e) < 0, "over");
    error_free(e);
    e = NULL;
    TEST_CHECK(cluster_reservation_end(a, res.id, RESERVATION_CHARGED, 42, T0_USEC + 1, &e) == 0,
               "end: %s", e ? e->message : "");
    TEST_CHECK(cluster_reservation_end(b, res.id, RESERVATION_RELEASED, 0, T0_USEC + 2, &e) < 0 &&
                   e->category == E_CONFLICT,
               "a second end from another host");
    error_free(e);
    e = NULL;
    char q[160];
    snprintf(q, sizeof(q), "SELECT state || ' ' || ended_usec FROM sessions WHERE id = '%s'", sid);
    s = sql_value(q, false);
    TEST_CHECK(strncmp(s, "ended ", 6) == 0, "the index ended with the ledger: %s", s);
    free(s);
    free(sql_value("DELETE FROM reservations", true));
    free(sql_value("TRUNCATE reservations CASCADE", true));
    free(sql_value("UPDATE reservations SET reserved_guest_s = reserved_guest_s + 1"
                   " WHERE state = 'open'",
                   true));
    free(sql_value("UPDATE reservations SET state = 'open' WHERE state <> 'open'", true));
    long charged =
        sql_long("SELECT sum(charged_guest_s) FROM reservations WHERE tenant_id='t-race'");
    TEST_CHECK(charged == 42, "charged once: %ld", charged);
    cluster_free(a);
    cluster_free(b);
    printf("ledger: ends once (a second end from another host: E_CONFLICT), no delete,"
           " truncate or rewrite\n");
}

/* ------------------------------------------------------------------ hosts */

static void
test_hosts(void)
{
    Error *e = NULL;
    Cluster *c = open_host("host-3");
    const char *pools = "[{\"name\":\"minimal\",\"warm\":1,\"slots\":2,\"idle\":1,\"busy\":1}]";
    TEST_CHECK(cluster_heartbeat(c, "tcg", pools, &e) == 0, "heartbeat: %s", e ? e->message : "");
    TEST_CHECK(cluster_heartbeat(c, "tcg", "[{not json", &e) < 0, "bad JSON accepted");
    error_free(e);
    e = NULL;
    ClusterHost *v;
    size_t n;
    TEST_CHECK(cluster_hosts_list(c, &v, &n, &e) == 0, "list: %s", e ? e->message : "");
    TEST_CHECK(n == HOSTS, "%zu hosts", n);
    ClusterHost *me = &v[3];
    TEST_CHECK(strcmp(me->id, "host-3") == 0 && strcmp(me->accel, "tcg") == 0, "%s", me->id);
    TEST_CHECK(strstr(me->pools_json, "\"busy\": 1") != NULL, "pools kept: %s", me->pools_json);
    TEST_CHECK(me->heartbeat_age_usec >= 0 && strncmp(me->url, "http://", 7) == 0, "age");
    uint64_t open_total = 0;
    for (size_t i = 0; i < n; i++)
        open_total += v[i].open_sessions;
    TEST_CHECK((long) open_total ==
                   sql_long("SELECT count(*) FROM sessions WHERE state <> 'ended'"),
               "open sessions per host add up");
    cluster_hosts_free(v, n);
    cluster_free(c);
    printf("hosts: %zu listed, heartbeat kept its pools, a non-JSON heartbeat refused\n", n);
}

/* ------------------------------------------------------------------ reconnect */

static void
test_reconnect(void)
{
    Error *e = NULL;
    Cluster *c = open_host("host-4");
    AdmitQuota q = roomy();
    TEST_CHECK(cluster_quota_put(c, "t-reconnect", &q, T0_USEC, &e) == 0, "quota");
    char *killed = sql_value("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                             " WHERE application_name = 'stockaded'",
                             false);
    TEST_CHECK(strcmp(killed, "1") == 0, "terminated %s connections", killed);
    free(killed);
    AdmitRequest rq = {.vcpus = 1, .memory_mib = 256, .timeout_s = 60};
    ReservationRecord res = {.tenant_id = "t-reconnect", .session_id = "t-reconnect-1"};
    AdmitDecision d;
    TEST_CHECK(cluster_admit(c, &q, &rq, 1 << 20, T0_USEC, &res, &d, &e) == 0 &&
                   d.refusal.limit_id == ADMIT_OK,
               "admit after the server dropped us: %s", e ? e->message : "refused");
    TEST_CHECK(sql_long("SELECT count(*) FROM reservations WHERE tenant_id = 't-reconnect'") == 1,
               "one reservation");
    cluster_free(c);
    printf("reconnect: the server dropped the connection; the next admission reconnected and"
           " succeeded, once\n");
}

/* ------------------------------------------------------------------ refusals */

static void
expect_open_fails(ClusterConfig cfg, ErrorCategory cat, const char *needle)
{
    Error *e = NULL;
    Cluster *c = NULL;
    TEST_CHECK(cluster_open(&cfg, &c, &e) < 0, "opened with %s", needle);
    TEST_CHECK(e->category == cat && strstr(e->message, needle), "%s (want '%s')", e->message,
               needle);
    error_free(e);
}

static void
write_token_file(const char *text)
{
    int fd = open(token_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    TEST_CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t) strlen(text), "write");
    close(fd);
}

/* The token file read again: a refused file keeps the keys; two secrets: the first sent,
 * both accepted; the secret itself is never a credential. */
static void
test_reload(void)
{
    static const char s1[] = "0123456789abcdef0123456789abcdef0123456789abcdef";
    static const char s2[] = "fedcba9876543210fedcba9876543210";
    char first[CLUSTER_HOP_AUTH_HEX_BYTES + 1], now[CLUSTER_HOP_AUTH_HEX_BYTES + 1];
    Error *e = NULL;
    Cluster *c = open_host("host-reload");

    cluster_hop_credential(c, first);
    TEST_CHECK(cluster_hop_credential_ok(c, first) && !cluster_hop_credential_ok(c, s1),
               "the hop key, not the secret");
    write_token_file("short\n");
    TEST_CHECK(cluster_reload_credential(c, &e) < 0 && e && strstr(e->message, "host.token"),
               "a refused file is named");
    error_free(e);
    e = NULL;
    cluster_hop_credential(c, now);
    TEST_CHECK(strcmp(first, now) == 0, "the keys in use stay");
    char two[256];
    snprintf(two, sizeof(two), "%s\n%s\n", s2, s1);
    write_token_file(two);
    TEST_CHECK(cluster_reload_credential(c, &e) == 0, "reload: %s", e ? e->message : "");
    cluster_hop_credential(c, now);
    TEST_CHECK(strcmp(first, now) != 0, "the first secret's key is sent");
    TEST_CHECK(cluster_hop_credential_ok(c, now) && cluster_hop_credential_ok(c, first),
               "both accepted during the rotation");
    uint8_t keys[CLUSTER_SECRETS_MAX][CLUSTER_KEY_BYTES];
    TEST_CHECK(cluster_envd_keys(c, keys) == 2, "two envd keys");
    snprintf(two, sizeof(two), "%s\n", s1);
    write_token_file(two); /* back to the one every other test's host uses */
    TEST_CHECK(cluster_reload_credential(c, &e) == 0, "reload back");
    TEST_CHECK(!cluster_hop_credential_ok(c, now), "a dropped secret is refused");
    cluster_free(c);
    printf("reload: a refused file keeps the keys; a rotation's two secrets send the first, "
           "accept both; a dropped one is refused\n");
}

static void
test_refuse(void)
{
    ClusterConfig cfg = config_for("host-x");
    TEST_CHECK(chmod(token_path, 0640) == 0, "chmod");
    expect_open_fails(cfg, E_INVALID, "mode 0600");
    TEST_CHECK(chmod(token_path, 0600) == 0, "chmod");
    char short_path[300];
    snprintf(short_path, sizeof(short_path), "%s/short", scratch);
    int fd = open(short_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    TEST_CHECK(fd >= 0 && write(fd, "abc\n", 4) == 4, "write");
    close(fd);
    snprintf(cfg.host_token_file, sizeof(cfg.host_token_file), "%s", short_path);
    expect_open_fails(cfg, E_INVALID, "a secret must be");
    cfg = config_for("host-x");
    cfg.insecure_hops = false;
    expect_open_fails(cfg, E_INVALID, "insecure_hops");
    cfg = config_for("host-x");
    snprintf(cfg.database, sizeof(cfg.database), "host=/x nonsense_key=1");
    expect_open_fails(cfg, E_INVALID, "nonsense_key");
    snprintf(cfg.database, sizeof(cfg.database), "host=%s/nowhere dbname=postgres", scratch);
    expect_open_fails(cfg, E_UNAVAILABLE, "cluster database");
    printf("refuse: token file mode and length, http:// without insecure_hops, bad conninfo, "
           "unreachable server\n");
    test_reload();
}

/* ------------------------------------------------------------------ tenancy */

#define TENANCY_WRITERS 4
#define TENANCY_TOKENS_PER_WRITER 40

static atomic_bool writers_done;

static TokenRecord
token_for(const char *tenant_id, int writer, int i)
{
    uint8_t idr[ADMIT_ID_RANDOM_CHARS] = {(uint8_t) writer, (uint8_t) (i >> 5), (uint8_t) i};
    char text[64];
    TokenRecord t = {.created_usec = T0_USEC};
    admit_id_format(ADMIT_TOKEN_ID_PREFIX, idr, t.id);
    snprintf(t.tenant_id, sizeof(t.tenant_id), "%s", tenant_id);
    snprintf(text, sizeof(text), "stk_%d_%d", writer, i);
    admit_token_hash(text, t.hash);
    return t;
}

static TenantRecord
tenant_for(int writer)
{
    uint8_t idr[ADMIT_ID_RANDOM_CHARS] = {(uint8_t) writer, 0xff};
    TenantRecord t = {.created_usec = T0_USEC};
    admit_id_format(ADMIT_TENANT_ID_PREFIX, idr, t.id);
    snprintf(t.name, sizeof(t.name), "tenant-%d", writer);
    return t;
}

/* One host issuing tokens as fast as it can: a tenant with its first token, then the rest. */
static void *
tenancy_writer(void *arg)
{
    int w = (int) (long) arg;
    char host[32];
    Error *e = NULL;
    snprintf(host, sizeof(host), "writer-%d", w);
    Cluster *c = open_host(host);
    TenantRecord t = tenant_for(w);
    TokenRecord first = token_for(t.id, w, 0);
    TEST_CHECK(cluster_tenant_create(c, &t, NULL, &first, &e) == 0, "create: %s",
               e ? e->message : "");
    for (int i = 1; i < TENANCY_TOKENS_PER_WRITER; i++) {
        TokenRecord k = token_for(t.id, w, i);
        TEST_CHECK(cluster_token_insert(c, &t, &k, &e) == 0, "issue: %s", e ? e->message : "");
    }
    cluster_free(c);
    return NULL;
}

static void *
tenancy_join(void *arg)
{
    pthread_t *t = arg;
    for (int i = 0; i < TENANCY_WRITERS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&writers_done, true);
    return NULL;
}

/* One pull after *cursor; adds what it saw; true when it was empty. */
static bool
tenancy_pull(Cluster *c, int64_t *cursor, size_t *tenants, size_t *tokens, ClusterTenancy *keep)
{
    ClusterTenancy t;
    Error *e = NULL;
    TEST_CHECK(cluster_tenancy_pull(c, *cursor, &t, &e) == 0, "pull: %s", e ? e->message : "");
    TEST_CHECK(t.rewound || t.last_seq >= *cursor, "a pull went back");
    *tenants += t.n_tenants;
    *tokens += t.n_tokens;
    *cursor = t.last_seq;
    bool empty = t.n_tenants + t.n_tokens + t.n_invalid == 0;
    if (keep)
        *keep = t;
    else
        cluster_tenancy_clear(&t);
    return empty;
}

/* Writers on several connections while one host pulls with its cursor: every tenant and
 * token is seen exactly once (numbers commit in order: a pull never skips one). */
static void
test_tenancy_race(Cluster *reader, int64_t *cursor)
{
    pthread_t t[TENANCY_WRITERS], joiner;
    size_t tenants = 0, tokens = 0;
    atomic_store(&writers_done, false);
    for (long i = 0; i < TENANCY_WRITERS; i++)
        pthread_create(&t[i], NULL, tenancy_writer, (void *) i);
    pthread_create(&joiner, NULL, tenancy_join, t);
    for (bool done = false;;) {
        bool empty = tenancy_pull(reader, cursor, &tenants, &tokens, NULL);
        if (done && empty)
            break;
        done = atomic_load(&writers_done);
    }
    pthread_join(joiner, NULL);
    TEST_CHECK(tokens == TENANCY_WRITERS * TENANCY_TOKENS_PER_WRITER && tenants == TENANCY_WRITERS,
               "racing %d writers, the puller saw %zu tokens and %zu tenants, not %d and %d",
               TENANCY_WRITERS, tokens, tenants, TENANCY_WRITERS * TENANCY_TOKENS_PER_WRITER,
               TENANCY_WRITERS);
}

/* Revocation: once, its first time kept, sent to the pullers; never undone, never deleted. */
static void
test_tenancy_revoke(Cluster *a, Cluster *b, int64_t *cursor)
{
    Error *e = NULL;
    TokenRecord k = token_for(tenant_for(0).id, 0, 3), got;
    ClusterTenancy t;
    size_t tenants = 0, tokens = 0;
    TEST_CHECK(cluster_token_revoke(b, k.id, T0_USEC + 5, &got, &e) == 0, "revoke: %s",
               e ? e->message : "");
    TEST_CHECK(got.revoked_usec == T0_USEC + 5 && strcmp(got.tenant_id, k.tenant_id) == 0,
               "revoke answered %s at %lld", got.tenant_id, (long long) got.revoked_usec);
    TEST_CHECK(cluster_token_revoke(a, k.id, T0_USEC + 9, &got, &e) == 0 &&
                   got.revoked_usec == T0_USEC + 5,
               "a second revoke moved the time");
    tenancy_pull(a, cursor, &tenants, &tokens, &t);
    TEST_CHECK(t.n_tokens == 1 && strcmp(t.tokens[0].id, k.id) == 0 &&
                   t.tokens[0].revoked_usec == T0_USEC + 5 &&
                   memcmp(t.tokens[0].hash, k.hash, SHA256_BYTES) == 0,
               "the pull after a revoke: %zu tokens", t.n_tokens);
    cluster_tenancy_clear(&t);
    TEST_CHECK(cluster_token_revoke(a, "tok_nonexistentnonexistentno", T0_USEC, &got, &e) < 0 &&
                   e->category == E_NOT_FOUND,
               "revoke of an unknown token");
    error_free(e);
    e = NULL;
    char sql[256];
    snprintf(sql, sizeof(sql), "UPDATE tokens SET revoked_usec = 0 WHERE id = '%s'", k.id);
    free(sql_value(sql, true));
    free(sql_value("DELETE FROM tokens", true));
    free(sql_value("TRUNCATE tokens CASCADE", true));
    TenantRecord dup = tenant_for(7);
    snprintf(dup.name, sizeof(dup.name), "tenant-1"); /* taken */
    TokenRecord dk = token_for(dup.id, 7, 0);
    TEST_CHECK(cluster_tenant_create(a, &dup, NULL, &dk, &e) < 0 && e->category == E_CONFLICT,
               "a taken name");
    error_free(e);
}

/* Rows the store could not hold are counted and skipped, and the cursor moves past them. */
static void
test_tenancy_hostile(Cluster *a, int64_t *cursor)
{
    size_t tenants = 0, tokens = 0;
    ClusterTenancy t;
    free(sql_value("INSERT INTO tenants (id, name, created_usec, changed_seq) VALUES"
                   " ('ten_long', repeat('x', 300), 0, nextval('tenancy_changes'))",
                   false));
    free(sql_value("INSERT INTO tokens (id, tenant_id, hash, created_usec, changed_seq) VALUES"
                   " (repeat('t', 80), 'default', sha256('x'), 0, nextval('tenancy_changes'))",
                   false));
    tenancy_pull(a, cursor, &tenants, &tokens, &t);
    TEST_CHECK(t.n_invalid == 2 && t.n_tenants + t.n_tokens == 0, "hostile rows: %zu invalid",
               t.n_invalid);
    cluster_tenancy_clear(&t);
    TEST_CHECK(tenancy_pull(a, cursor, &tenants, &tokens, NULL), "the cursor moved past them");
    /* the database put back (its numbers went back): the next pull starts from nothing */
    free(sql_value("SELECT setval('tenancy_changes', 3)", false));
    tenancy_pull(a, cursor, &tenants, &tokens, &t);
    TEST_CHECK(t.rewound && *cursor == 0, "a rewound sequence was not noticed");
    cluster_tenancy_clear(&t);
    tokens = 0;
    while (!tenancy_pull(a, cursor, &tenants, &tokens, NULL))
        ;
    TEST_CHECK(tokens == TENANCY_WRITERS * TENANCY_TOKENS_PER_WRITER,
               "after a rewind %zu tokens were pulled again", tokens);
}

static void
test_tenancy(void)
{
    Cluster *a = open_host("host-0"), *b = open_host("host-1");
    int64_t cursor = 0;
    test_tenancy_race(a, &cursor);
    test_tenancy_revoke(a, b, &cursor);
    test_tenancy_hostile(a, &cursor);
    cluster_free(a);
    cluster_free(b);
    printf("tenancy: %d writers x %d tokens, each pulled exactly once; a revoke once, kept, "
           "pulled; never undone or deleted; hostile rows skipped\n",
           TENANCY_WRITERS, TENANCY_TOKENS_PER_WRITER);
}

int
main(void)
{
    conninfo = getenv("STOCKADE_TEST_PG");
    if (!conninfo)
        test_skip("STOCKADE_TEST_PG is not set (run through tests/lib/pgtemp.py)");
    scratch = test_mkdtemp("cluster-pg");
    TEST_CHECK(scratch, "mkdtemp");
    snprintf(token_path, sizeof(token_path), "%s/host.token", scratch);
    int fd = open(token_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const char tok[] = "0123456789abcdef0123456789abcdef0123456789abcdef\n";
    TEST_CHECK(fd >= 0 && write(fd, tok, sizeof(tok) - 1) == (ssize_t) sizeof(tok) - 1, "token");
    close(fd);
    test_migrate();
    test_races();
    test_ledger();
    test_hosts();
    test_reconnect();
    test_tenancy();
    test_tenant_remove();
    test_host_lost();
    test_place();
    test_bounds();
    test_refuse();
    cleanup();
    printf("PASS\n");
    return 0;
}
