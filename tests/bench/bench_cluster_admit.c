/* Benchmark of admission (issue 16): admissions per second through the cluster's PostgreSQL
 * against a single host's SQLite, for one tenant and for many. Prints figures, never passes
 * or fails on time. The last line is one JSON object.
 *
 * One admission is the ledger part of a create, as the daemon runs it:
 *   pg      cluster_admit(): one transaction with the tenant's row locked (quota, usage,
 *           the pure decision, the reservation, the session's index row, the bucket).
 *           K connections at once, each its own Cluster (K hosts, one loop thread each);
 *           also one connection alone (one host).
 *   sqlite  what session_admit() does on a host without [cluster]: a savepoint, the quota,
 *           the usage, admit_decide(), the reservation and the bucket, committed (a create
 *           commits at once). One writer: the daemon's loop thread is the store's only one.
 * One tenant: every admission takes the same row lock. Many: admission j of connection i
 * goes to tenant (i + j*K) mod T, so connections rarely meet on a row. Each case has its own
 * tenants with a roomy quota row, so every admission is admitted and each case starts on an
 * empty ledger (a tenant's usage is summed over its ledger: it grows with the run).
 *
 * PostgreSQL: run through tests/lib/pgtemp.py, which passes its conninfo in STOCKADE_TEST_PG
 * (tests/bench/bench_cluster.py does). SQLite: a real file in a temp folder, WAL,
 * synchronous=NORMAL (the store's own settings).
 *
 *   bench_cluster_admit [--admissions N] [--connections K] [--tenants T] [--quick] */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "store_tenants.h"
#include "testlib.h"
#include "timeutil.h"

#define TARGET_ADMIT_PER_S 500 /* issue 16: admission >= 500/s on this machine */
#define HOST_TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef\n"
#define MAX_CONNECTIONS 64
#define OUTPUT_CAP_BYTES (UINT64_C(1) << 20) /* the host's own output limit */

typedef struct Case {
    const char *name;     /* "pg", "pg_1conn", "sqlite" */
    unsigned connections; /* 0: SQLite, one writer */
    bool many;            /* many tenants, else one */
    unsigned tenants;     /* T when many */
    size_t admissions;    /* in all */
    uint64_t *took_usec;  /* one per admission */
    double per_s, p50_ms, p99_ms;
} Case;

typedef struct Worker {
    Case *k;
    unsigned index;
    Cluster *cluster;
} Worker;

static const char *conninfo;
static char *scratch;
static char token_path[512];
static unsigned case_seq; /* keeps tenant and session ids of the cases apart */
static pthread_barrier_t gate;

/* atexit: also when a TEST_CHECK fails (it exits) */
static void
scratch_remove(void)
{
    test_rm_rf(scratch);
    free(scratch);
}

static AdmitQuota
roomy(void)
{
    AdmitQuota q = {0};
    for (size_t i = 0; i < admit_quota_n_keys; i++)
        *admit_quota_field(&q, &admit_quota_keys[i]) = admit_quota_keys[i].max;
    return q;
}

static const AdmitRequest REQUEST = {.vcpus = 1, .memory_mib = 256, .timeout_s = 60};

static unsigned
n_workers(const Case *k)
{
    return k->connections ? k->connections : 1;
}

/* Tenant t of the running case. */
static void
tenant_name(unsigned t, char ret[STORE_ID_MAX_BYTES])
{
    snprintf(ret, STORE_ID_MAX_BYTES, "bench-%u-t%u", case_seq, t);
}

static unsigned
n_tenants(const Case *k)
{
    return k->many ? k->tenants : 1;
}

static void
fail_error(const char *what, Error *e)
{
    TEST_CHECK(false, "%s: %s", what, e ? e->message : "(no message)");
}

/* ------------------------------------------------------------------ PostgreSQL */

static Cluster *
cluster_connect(unsigned index)
{
    ClusterConfig cfg = {0};
    Cluster *c = NULL;
    Error *e = NULL;
    snprintf(cfg.database, sizeof(cfg.database), "%s", conninfo);
    snprintf(cfg.host_id, sizeof(cfg.host_id), "bench-%u", index);
    snprintf(cfg.advertise_url, sizeof(cfg.advertise_url), "http://127.0.0.1:1/bench-%u", index);
    snprintf(cfg.host_token_file, sizeof(cfg.host_token_file), "%s", token_path);
    if (cluster_open(&cfg, &c, &e) < 0)
        fail_error("cluster_open", e);
    return c;
}

static void
pg_admit(Worker *w, size_t j, ReservationRecord *res)
{
    AdmitQuota fallback = roomy();
    AdmitDecision d;
    Error *e = NULL;
    if (cluster_admit(w->cluster, &fallback, &REQUEST, OUTPUT_CAP_BYTES, (int64_t) wall_usec(), res,
                      &d, &e) < 0)
        fail_error("cluster_admit", e);
    TEST_CHECK(d.refusal.limit_id == ADMIT_OK, "admission %zu refused: %s", j,
               admit_limit_name(d.refusal.limit_id));
}

/* The tenants' rows and roomy quota rows, before the clock starts. */
static void
pg_tenants(const Case *k)
{
    Cluster *c = cluster_connect(0);
    AdmitQuota q = roomy();
    Error *e = NULL;
    for (unsigned t = 0; t < n_tenants(k); t++) {
        char tenant[STORE_ID_MAX_BYTES];
        tenant_name(t, tenant);
        if (cluster_quota_put(c, tenant, &q, (int64_t) wall_usec(), &e) < 0)
            fail_error("cluster_quota_put", e);
    }
    cluster_free(c);
}

/* ------------------------------------------------------------------ SQLite */

static void
sqlite_admit(Store *s, const ReservationRecord *want)
{
    AdmitQuota q, defaults = roomy();
    AdmitUsage u;
    AdmitDecision d;
    Error *e = NULL;
    int64_t now = (int64_t) wall_usec();
    if (store_savepoint(s, &e) < 0 || store_quota_get(s, want->tenant_id, &defaults, &q, &e) < 0 ||
        store_usage_get(s, want->tenant_id, &u, &e) < 0)
        fail_error("sqlite admission (read)", e);
    admit_decide(&q, &u, &REQUEST, now, &d);
    TEST_CHECK(d.refusal.limit_id == ADMIT_OK, "refused: %s", admit_limit_name(d.refusal.limit_id));
    ReservationRecord res = *want;
    res.vcpus = REQUEST.vcpus;
    res.reserved_guest_s = d.reserve_guest_s;
    res.output_bytes = MIN(OUTPUT_CAP_BYTES, q.output_bytes);
    res.workspace_bytes = q.workspace_bytes;
    res.created_usec = now;
    if (store_reservation_insert(s, &res, &e) < 0 ||
        store_bucket_put(s, res.tenant_id, &d.bucket, &e) < 0 ||
        store_savepoint_release(s, &e) < 0 || store_commit(s, &e) < 0)
        fail_error("sqlite admission (write)", e);
}

static Store *
sqlite_open(const Case *k)
{
    char path[600];
    Store *s = NULL;
    Error *e = NULL;
    AdmitQuota q = roomy();
    snprintf(path, sizeof(path), "%s/case-%u.db", scratch, case_seq);
    if (store_open(path, &s, &e) < 0)
        fail_error("store_open", e);
    for (unsigned t = 0; t < n_tenants(k); t++) {
        TenantRecord rec = {.created_usec = (int64_t) wall_usec()};
        tenant_name(t, rec.id);
        snprintf(rec.name, sizeof(rec.name), "%s", rec.id);
        if (store_tenant_insert(s, &rec, &q, &e) < 0)
            fail_error("store_tenant_insert", e);
    }
    return s;
}

/* ------------------------------------------------------------------ the runs */

/* Worker i's share of the admissions: those j with j % K == i, admission j for tenant
 * j % T (K connections at one step ask for K different tenants when T >= K). */
static void
run_share(Worker *w, Store *sqlite)
{
    Case *k = w->k;
    for (size_t j = w->index; j < k->admissions; j += n_workers(k)) {
        ReservationRecord res = {0};
        tenant_name((unsigned) (j % n_tenants(k)), res.tenant_id);
        snprintf(res.session_id, sizeof(res.session_id), "bench-%u-%zu", case_seq, j);
        uint64_t t0 = now_usec();
        if (sqlite)
            sqlite_admit(sqlite, &res);
        else
            pg_admit(w, j, &res);
        k->took_usec[j] = now_usec() - t0;
    }
}

static void *
pg_worker(void *arg)
{
    Worker *w = arg;
    w->cluster = cluster_connect(w->index); /* connecting is not timed */
    pthread_barrier_wait(&gate);
    run_share(w, NULL);
    return NULL;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static void
case_figures(Case *k, uint64_t wall_took_usec)
{
    qsort(k->took_usec, k->admissions, sizeof(uint64_t), cmp_u64);
    k->per_s = (double) k->admissions * 1e6 / (double) (wall_took_usec ? wall_took_usec : 1);
    k->p50_ms = (double) k->took_usec[(k->admissions - 1) / 2] / 1000.0;
    k->p99_ms = (double) k->took_usec[(size_t) ((double) (k->admissions - 1) * 0.99)] / 1000.0;
    printf("%-9s %-12s %2u connection(s): %6zu admissions, %7.0f/s, each p50 %.2f ms p99 %.2f"
           " ms\n",
           k->name, k->many ? "many tenants" : "one tenant", n_workers(k), k->admissions, k->per_s,
           k->p50_ms, k->p99_ms);
    fflush(stdout);
}

static void
run_case(Case *k)
{
    Worker w[MAX_CONNECTIONS] = {{0}};
    pthread_t t[MAX_CONNECTIONS];
    uint64_t t0;

    case_seq++;
    k->took_usec = calloc(k->admissions, sizeof(uint64_t));
    TEST_CHECK(k->took_usec, "calloc");
    if (!k->connections) {
        Store *s = sqlite_open(k);
        w[0] = (Worker){.k = k};
        t0 = now_usec();
        run_share(&w[0], s);
        case_figures(k, now_usec() - t0);
        store_close(s);
        return;
    }
    pg_tenants(k);
    pthread_barrier_init(&gate, NULL, k->connections + 1);
    for (unsigned i = 0; i < k->connections; i++) {
        w[i] = (Worker){.k = k, .index = i};
        TEST_CHECK(pthread_create(&t[i], NULL, pg_worker, &w[i]) == 0, "pthread_create");
    }
    pthread_barrier_wait(&gate);
    t0 = now_usec();
    for (unsigned i = 0; i < k->connections; i++)
        pthread_join(t[i], NULL);
    case_figures(k, now_usec() - t0);
    pthread_barrier_destroy(&gate);
    for (unsigned i = 0; i < k->connections; i++)
        cluster_free(w[i].cluster);
}

static void
json_case(const Case *k, const char *tenancy, bool last)
{
    printf("\"%s_%s\":{\"connections\":%u,\"per_s\":%.0f,\"p50_ms\":%.3f,\"p99_ms\":%.3f}%s",
           k->name, tenancy, n_workers(k), k->per_s, k->p50_ms, k->p99_ms, last ? "" : ",");
}

static void
write_token_file(void)
{
    snprintf(token_path, sizeof(token_path), "%s/host.token", scratch);
    int fd = open(token_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, HOST_TOKEN, strlen(HOST_TOKEN)) == (ssize_t) strlen(HOST_TOKEN);
    if (fd >= 0)
        close(fd);
    TEST_CHECK(ok, "write %s", token_path);
}

int
main(int argc, char **argv)
{
    size_t admissions = 2000;
    unsigned connections = 8, tenants = 64;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            admissions = 200;
            connections = 4;
        } else if (strcmp(argv[i], "--admissions") == 0 && i + 1 < argc)
            admissions = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--connections") == 0 && i + 1 < argc)
            connections = (unsigned) strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--tenants") == 0 && i + 1 < argc)
            tenants = (unsigned) strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr,
                    "usage: %s [--admissions N] [--connections K] [--tenants T] [--quick]\n",
                    argv[0]);
            return 2;
        }
    }
    if (admissions < 2 || connections < 1 || connections > MAX_CONNECTIONS || tenants < 1) {
        fprintf(stderr, "admissions >= 2, connections 1..%d, tenants >= 1\n", MAX_CONNECTIONS);
        return 2;
    }
    conninfo = getenv("STOCKADE_TEST_PG");
    if (!conninfo)
        test_skip("STOCKADE_TEST_PG is not set (run through tests/lib/pgtemp.py)");
    scratch = test_mkdtemp("bench-cluster-admit");
    TEST_CHECK(scratch, "mkdtemp");
    atexit(scratch_remove);
    write_token_file();

    /* [tenancy][sqlite, pg alone, pg K] */
    Case cases[2][3];
    for (int m = 0; m < 2; m++) {
        const char *names[3] = {"sqlite", "pg_1conn", "pg"};
        const unsigned conns[3] = {0, 1, connections};
        for (int c = 0; c < 3; c++) {
            cases[m][c] = (Case){.name = names[c],
                                 .connections = conns[c],
                                 .many = m == 1,
                                 .tenants = tenants,
                                 .admissions = admissions};
            run_case(&cases[m][c]);
        }
    }
    const char *tenancy[2] = {"one_tenant", "many_tenants"};
    for (int m = 0; m < 2; m++)
        printf("%s: PostgreSQL (%u connections) %.0f/s, one connection %.0f/s, SQLite (one"
               " writer) %.0f/s: PG/SQLite %.2f (target >= %d/s)\n",
               tenancy[m], connections, cases[m][2].per_s, cases[m][1].per_s, cases[m][0].per_s,
               cases[m][2].per_s / cases[m][0].per_s, TARGET_ADMIT_PER_S);
    printf("{\"admissions\":%zu,\"admit_connections\":%u,\"admit_tenants\":%u,", admissions,
           connections, tenants);
    for (int m = 0; m < 2; m++)
        printf("\"admit_pg_%s_per_s\":%.0f,\"admit_sqlite_%s_per_s\":%.0f,"
               "\"admit_pg_over_sqlite_%s\":%.2f,",
               tenancy[m], cases[m][2].per_s, tenancy[m], cases[m][0].per_s, tenancy[m],
               cases[m][2].per_s / cases[m][0].per_s);
    printf("\"admit_target_per_s\":%d,\"admit_cases\":{", TARGET_ADMIT_PER_S);
    for (int m = 0; m < 2; m++)
        for (int c = 0; c < 3; c++)
            json_case(&cases[m][c], tenancy[m], m == 1 && c == 2);
    printf("}}\n");
    for (int m = 0; m < 2; m++)
        for (int c = 0; c < 3; c++)
            free(cases[m][c].took_usec);
    return 0;
}
