/* How long a cluster call may keep the daemon's loop thread (hostd/cluster/cluster.c), against
 * the real database: a server that is slow, and one that does not answer at all.
 *
 *   crowd     CROWD connections admit for one tenant at the same instant (the daemon's
 *             worst case is one connection per host, so far fewer): every admission is
 *             decided, none meets the bounds; the slowest wait at the tenant's row lock is
 *             printed against them
 *   slow      the tenant's row held by another transaction: the admission is ended by the
 *             server's statement_timeout (E_UNAVAILABLE, about CLUSTER_STATEMENT_TIMEOUT_MS)
 *             and the same connection admits at once when the row is free
 *   frozen    the postmaster and every backend stopped (SIGSTOP: the kernel still takes our
 *             bytes, nothing answers): the call fails E_UNAVAILABLE within
 *             CLUSTER_ANSWER_TIMEOUT_USEC (+ slack), the next one at once (backoff); thawed,
 *             the next call after the backoff reconnects by itself and succeeds
 * Figures are printed. */
#include <dirent.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_pg.h"
#include "testlib.h"
#include "timeutil.h"

#define CROWD 100
#define FROZEN_PIDS_MAX 64
#define SLACK_USEC (2 * USEC_PER_SEC) /* a loaded CI machine, over each bound */
#define T_USEC INT64_C(1800000000000000)

static pid_t frozen[FROZEN_PIDS_MAX];
static size_t n_frozen;

/* SIGCONT to every process this test stopped; also on a failed check, so the database can
 * be stopped and removed. */
static void
thaw(void)
{
    for (size_t i = 0; i < n_frozen; i++)
        (void) kill(frozen[i], SIGCONT);
    n_frozen = 0;
}
#undef TEST_CLEANUP
#define TEST_CLEANUP() thaw()

static AdmitQuota
unlimited(void)
{
    AdmitQuota q = {0};
    for (size_t k = 0; k < admit_quota_n_keys; k++)
        *admit_quota_field(&q, &admit_quota_keys[k]) = admit_quota_keys[k].max;
    return q;
}

/* One admission for tenant (session id sid); its error category, or -1 when admitted. */
static int
admit_one(Cluster *c, const char *tenant, const char *sid, uint64_t *ret_took_usec)
{
    AdmitQuota q = unlimited();
    AdmitRequest rq = {.vcpus = 1, .memory_mib = 256, .timeout_s = 60};
    ReservationRecord res = {0};
    AdmitDecision d;
    Error *e = NULL;
    snprintf(res.tenant_id, sizeof(res.tenant_id), "%s", tenant);
    snprintf(res.session_id, sizeof(res.session_id), "%s", sid);
    uint64_t t0 = now_usec();
    int r = cluster_admit(c, &q, &rq, 1 << 20, T_USEC, &res, &d, &e);
    *ret_took_usec = now_usec() - t0;
    if (r == 0) {
        TEST_CHECK(d.refusal.limit_id == ADMIT_OK, "refused: %s",
                   admit_limit_name(d.refusal.limit_id));
        return -1;
    }
    int cat = (int) e->category;
    error_free(e);
    return cat;
}

/* ------------------------------------------------------------------ crowd */

static pthread_barrier_t crowd_barrier;
static atomic_uint_fast64_t crowd_slowest_usec;
static atomic_int crowd_failed;

static void *
crowd_one(void *arg)
{
    int me = (int) (long) arg;
    char host[16], sid[32];
    uint64_t took;
    snprintf(host, sizeof(host), "host-%d", me % 6); /* hosts the other tests made */
    snprintf(sid, sizeof(sid), "t-crowd-%d", me);
    Cluster *c = open_host(host);
    pthread_barrier_wait(&crowd_barrier);
    if (admit_one(c, "t-crowd", sid, &took) >= 0)
        atomic_fetch_add(&crowd_failed, 1);
    uint64_t prev = atomic_load(&crowd_slowest_usec);
    while (took > prev && !atomic_compare_exchange_weak(&crowd_slowest_usec, &prev, took))
        ;
    cluster_free(c);
    return NULL;
}

static void
test_crowd(void)
{
    pthread_t t[CROWD];
    uint64_t took;
    Cluster *c = open_host("host-0");
    TEST_CHECK(admit_one(c, "t-crowd", "t-crowd-first", &took) < 0, "the tenant's first");
    cluster_free(c);
    pthread_barrier_init(&crowd_barrier, NULL, CROWD);
    for (long i = 0; i < CROWD; i++)
        TEST_CHECK(pthread_create(&t[i], NULL, crowd_one, (void *) i) == 0, "thread");
    for (int i = 0; i < CROWD; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&crowd_barrier);
    TEST_CHECK(crowd_failed == 0, "%d of %d admissions failed", (int) crowd_failed, CROWD);
    TEST_CHECK(sql_long("SELECT count(*) FROM reservations WHERE tenant_id = 't-crowd'") ==
                   CROWD + 1,
               "every admission written once");
    printf("crowd: %d admissions for one tenant at once on %d connections: all decided; the"
           " slowest took %.0f ms (bounds: %d ms server, %d ms client)\n",
           CROWD, CROWD, (double) crowd_slowest_usec / 1e3, CLUSTER_STATEMENT_TIMEOUT_MS,
           (int) (CLUSTER_ANSWER_TIMEOUT_USEC / USEC_PER_MSEC));
}

/* ------------------------------------------------------------------ slow */

static void
test_slow(void)
{
    uint64_t slow, again;
    Cluster *c = open_host("host-1");
    TEST_CHECK(admit_one(c, "t-slow", "t-slow-1", &slow) < 0, "the tenant's first");
    ClusterConfig cfg = config_for("holder");
    PGconn *holder = PQconnectdb(cfg.database);
    PGresult *r = PQexec(holder, "BEGIN; SELECT id FROM tenants WHERE id = 't-slow' FOR UPDATE");
    TEST_CHECK(PQresultStatus(r) == PGRES_TUPLES_OK, "lock: %s", PQerrorMessage(holder));
    PQclear(r);
    int cat = admit_one(c, "t-slow", "t-slow-2", &slow);
    PQclear(PQexec(holder, "ROLLBACK"));
    PQfinish(holder);
    TEST_CHECK(cat == E_UNAVAILABLE, "a statement past statement_timeout: category %d", cat);
    TEST_CHECK(slow >= (uint64_t) CLUSTER_STATEMENT_TIMEOUT_MS * USEC_PER_MSEC - 100000 &&
                   slow <= (uint64_t) CLUSTER_STATEMENT_TIMEOUT_MS * USEC_PER_MSEC + SLACK_USEC,
               "ended after %.2f s", (double) slow / 1e6);
    TEST_CHECK(admit_one(c, "t-slow", "t-slow-3", &again) < 0, "the row free again");
    TEST_CHECK(again < USEC_PER_SEC, "the same connection at once: %.2f s", (double) again / 1e6);
    cluster_free(c);
    printf("slow: the tenant's row held elsewhere: the admission ended by the server after %.2f s"
           " (E_UNAVAILABLE, statement_timeout %d ms); the row free, the same connection"
           " admitted in %.0f ms\n",
           (double) slow / 1e6, CLUSTER_STATEMENT_TIMEOUT_MS, (double) again / 1e3);
}

/* ------------------------------------------------------------------ frozen */

static pid_t
parent_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *end = strrchr(buf, ')'); /* the name may hold anything */
    int ppid = -1;
    return end && sscanf(end + 1, " %*c %d", &ppid) == 1 ? (pid_t) ppid : -1;
}

/* The postmaster (first line of <data>/postmaster.pid; pgtemp.py keeps the data folder
 * beside the socket's) stopped first, so it starts no one, then each of its children. */
static void
freeze_server(void)
{
    ClusterConfig cfg = config_for("frozen");
    PQconninfoOption *opts = PQconninfoParse(cfg.database, NULL);
    char path[512] = "";
    for (PQconninfoOption *o = opts; o && o->keyword; o++)
        if (strcmp(o->keyword, "host") == 0 && o->val)
            snprintf(path, sizeof(path), "%s/../data/postmaster.pid", o->val);
    PQconninfoFree(opts);
    FILE *f = fopen(path, "r");
    int pm = -1;
    TEST_CHECK(f && fscanf(f, "%d", &pm) == 1 && pm > 1, "postmaster pid from %s", path);
    fclose(f);
    TEST_CHECK(kill(pm, SIGSTOP) == 0, "SIGSTOP postmaster %d", pm);
    frozen[n_frozen++] = pm;
    DIR *d = opendir("/proc");
    for (struct dirent *de; d && (de = readdir(d));) {
        pid_t pid = (pid_t) atoi(de->d_name);
        if (pid > 0 && n_frozen < FROZEN_PIDS_MAX && parent_of(pid) == pm &&
            kill(pid, SIGSTOP) == 0)
            frozen[n_frozen++] = pid;
    }
    if (d)
        closedir(d);
    TEST_CHECK(n_frozen > 1, "no backend of postmaster %d found", pm);
}

static int
hosts_call(Cluster *c, uint64_t *ret_took_usec)
{
    ClusterHost *v = NULL;
    size_t n = 0;
    Error *e = NULL;
    uint64_t t0 = now_usec();
    int r = cluster_hosts_list(c, &v, &n, &e);
    *ret_took_usec = now_usec() - t0;
    cluster_hosts_free(v, n);
    int cat = r < 0 ? (int) e->category : -1;
    error_free(e);
    return cat;
}

static void
test_frozen(void)
{
    uint64_t first, second, back;
    Cluster *c = open_host("host-2");
    TEST_CHECK(hosts_call(c, &first) < 0, "the hosts list before the freeze");
    freeze_server();
    size_t stopped = n_frozen;
    int cat = hosts_call(c, &first);
    TEST_CHECK(cat == E_UNAVAILABLE, "frozen server: category %d", cat);
    TEST_CHECK(first >= CLUSTER_ANSWER_TIMEOUT_USEC - 100000 &&
                   first <= CLUSTER_ANSWER_TIMEOUT_USEC + SLACK_USEC,
               "failed after %.2f s", (double) first / 1e6);
    cat = hosts_call(c, &second);
    TEST_CHECK(cat == E_UNAVAILABLE && second < USEC_PER_SEC / 2,
               "the next call: category %d after %.2f s", cat, (double) second / 1e6);
    thaw();
    usleep(1100 * 1000); /* CLUSTER_RECONNECT_BACKOFF_USEC after the cut */
    cat = hosts_call(c, &back);
    TEST_CHECK(cat < 0, "thawed: category %d", cat);
    cluster_free(c);
    printf("frozen: postmaster and %zu children stopped: the call failed E_UNAVAILABLE after"
           " %.2f s (bound %.0f s), the next at once (%.0f ms); thawed, the next call reconnected"
           " and answered in %.0f ms\n",
           stopped - 1, (double) first / 1e6, (double) CLUSTER_ANSWER_TIMEOUT_USEC / 1e6,
           (double) second / 1e3, (double) back / 1e3);
}

void
test_bounds(void)
{
    test_crowd();
    test_slow();
    test_frozen();
}
