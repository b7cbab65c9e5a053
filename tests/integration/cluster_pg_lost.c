/* A host that dies (issue 16): the takeover transaction (hostd/cluster/cluster_takeover.c)
 * against the real database. Staleness is the database's clock against the heartbeat it
 * stamped, so the test ages rows in place (heartbeat_usec moved back) instead of sleeping.
 *
 *   fresh     a host whose heartbeat is fresh is never taken over
 *   race      several hosts' takeovers at once for one stale host: exactly one ends its
 *             sessions (and no other ends anything); each reservation charged to the
 *             dead host's last heartbeat, not to now; a session ended before is untouched
 *   again     a second takeover finds nothing; the ledger is unchanged
 *   return    the dead host's heartbeat says it was lost; its index says host_lost; its
 *             settlement of those reservations is refused (nothing settled twice); it
 *             rejoins live with a new start
 *   batch     a host with more than CLUSTER_TAKEOVER_MAX_SESSIONS sessions: one bounded
 *             batch per call, each session once
 *   gap       a taker whose own heartbeat had a gap (the database was away) waits a lease
 *             before it takes anyone over */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_pg.h"
#include "testlib.h"
#include "timeutil.h"

#define LEASE_S 6
#define RACERS 4
#define DEAD_SESSIONS 3
#define VCPUS 2
#define LIVED_USEC INT64_C(7500000) /* admission to last heartbeat: 7.5 s, charged as 8 s */

static Cluster *
open_lease(const char *host)
{
    Error *e = NULL;
    Cluster *c = NULL;
    ClusterConfig cfg = config_for(host);
    cfg.lease_s = LEASE_S;
    TEST_CHECK(cluster_open(&cfg, &c, &e) == 0, "open %s: %s", host, e ? e->message : "");
    return c;
}

/* n sessions of tenant t-lost on host c, admitted at created_usec. */
static void
admit_n(Cluster *c, const char *prefix, int n, int64_t created_usec)
{
    AdmitQuota unlimited = {0};
    for (size_t k = 0; k < admit_quota_n_keys; k++)
        *admit_quota_field(&unlimited, &admit_quota_keys[k]) = admit_quota_keys[k].max;
    AdmitRequest rq = {.vcpus = VCPUS, .memory_mib = 256, .timeout_s = 600};
    for (int i = 0; i < n; i++) {
        ReservationRecord res = {0};
        AdmitDecision d;
        Error *e = NULL;
        snprintf(res.tenant_id, sizeof(res.tenant_id), "t-lost");
        snprintf(res.session_id, sizeof(res.session_id), "%s-%03d", prefix, i);
        TEST_CHECK(cluster_admit(c, &unlimited, &rq, 1 << 20, created_usec, &res, &d, &e) == 0 &&
                       d.refusal.limit_id == ADMIT_OK,
                   "admit %s: %s", res.session_id, e ? e->message : "refused");
    }
}

static ClusterTakeover
takeover(Cluster *c)
{
    ClusterTakeover t;
    Error *e = NULL;
    TEST_CHECK(cluster_takeover(c, &t, &e) == 0, "takeover: %s", e ? e->message : "");
    return t;
}

/* The ledger of t-lost as one line: ended count, charged sum, end times. */
static char *
ledger_text(void)
{
    return sql_value("SELECT count(*) FILTER (WHERE state <> 'open') || '/' ||"
                     " coalesce(sum(charged_guest_s), 0) || '/' || coalesce(sum(ended_usec), 0)"
                     " FROM reservations WHERE tenant_id = 't-lost'",
                     false);
}

typedef struct {
    Cluster *c;
    pthread_barrier_t *barrier;
    ClusterTakeover t;
} Racer;

static void *
race_one(void *arg)
{
    Racer *r = arg;
    pthread_barrier_wait(r->barrier);
    r->t = takeover(r->c);
    return NULL;
}

/* The takers may take over: they beat now, and have been alive for longer than a lease. */
static void
make_takers(Cluster **takers)
{
    Error *e = NULL;
    for (int i = 0; i < RACERS; i++)
        TEST_CHECK(cluster_heartbeat(takers[i], "tcg", "[]", &e) == 0, "beat");
    free(sql_value("UPDATE hosts SET alive_since_usec = alive_since_usec - 60000000"
                   " WHERE id LIKE 'taker-%'",
                   false));
}

static void
test_fresh_and_race(Cluster **takers, Cluster *dead)
{
    int64_t created = (int64_t) wall_usec() - 30 * (int64_t) USEC_PER_SEC;
    admit_n(dead, "dead", DEAD_SESSIONS + 1, created);
    Error *e = NULL;
    ReservationRecord done;
    TEST_CHECK(
        cluster_reservation_for_session(dead, "dead-003", &done, &e) == 0 &&
            cluster_reservation_end(dead, done.id, RESERVATION_CHARGED, 2, created + 1, &e) == 0,
        "a session that ended before: %s", e ? e->message : "");
    make_takers(takers);
    ClusterTakeover t = takeover(takers[0]);
    TEST_CHECK(t.host_id[0] == '\0', "a fresh host was taken over: %s", t.host_id);
    TEST_CHECK(sql_long("SELECT count(*) FROM reservations WHERE state = 'open' AND"
                        " session_id LIKE 'dead-%'") == DEAD_SESSIONS,
               "a fresh host's reservations were ended");
    /* dead stops beating: its last heartbeat LIVED_USEC after the admissions */
    char q[256];
    snprintf(q, sizeof(q), "UPDATE hosts SET heartbeat_usec = %lld WHERE id = 'dead'",
             (long long) (created + LIVED_USEC));
    free(sql_value(q, false));

    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, RACERS);
    Racer r[RACERS];
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++) {
        r[i] = (Racer){.c = takers[i], .barrier = &barrier};
        pthread_create(&th[i], NULL, race_one, &r[i]);
    }
    int winners = 0, winner = -1;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(th[i], NULL);
        if (r[i].t.host_id[0]) {
            winners++;
            winner = i;
        }
    }
    pthread_barrier_destroy(&barrier);
    TEST_CHECK(winners == 1, "%d hosts took the dead host over", winners);
    ClusterTakeover *w = &r[winner].t;
    TEST_CHECK(strcmp(w->host_id, "dead") == 0 && w->n_ended == DEAD_SESSIONS &&
                   w->n_settled == DEAD_SESSIONS && w->heartbeat_usec == created + LIVED_USEC,
               "the takeover: %s, %zu ended, %zu settled", w->host_id, w->n_ended, w->n_settled);
    long charge = VCPUS * ((LIVED_USEC + USEC_PER_SEC - 1) / USEC_PER_SEC);
    snprintf(q, sizeof(q),
             "SELECT count(*) FROM reservations WHERE session_id LIKE 'dead-%%' AND"
             " session_id <> 'dead-003' AND state = 'charged' AND charged_guest_s = %ld AND"
             " ended_usec = %lld",
             charge, (long long) (created + LIVED_USEC));
    TEST_CHECK(sql_long(q) == DEAD_SESSIONS, "charged %ld each to the last heartbeat", charge);
    TEST_CHECK(sql_long("SELECT charged_guest_s FROM reservations WHERE session_id = 'dead-003'") ==
                   2,
               "a reservation ended before was touched");
    TEST_CHECK(sql_long("SELECT count(*) FROM sessions WHERE host_id = 'dead' AND"
                        " state = 'ended' AND end_reason = 'host_lost'") == DEAD_SESSIONS,
               "the index: host_lost");
    snprintf(q, sizeof(q),
             "SELECT count(*) FROM hosts WHERE id = 'dead' AND lost_usec > 0 AND"
             " lost_by LIKE 'taker-%%'");
    TEST_CHECK(sql_long(q) == 1, "dead is marked lost, by a taker");
    printf("host_lost race: %d takers at once, one took over %zu sessions, each charged %ld"
           " guest-s (to the last heartbeat)\n",
           RACERS, w->n_ended, charge);
}

static void
test_again_and_return(Cluster **takers, Cluster *dead)
{
    Error *e = NULL;
    char *before = ledger_text();
    for (int i = 0; i < RACERS; i++)
        TEST_CHECK(takeover(takers[i]).host_id[0] == '\0', "a second takeover found work");
    ClusterHost *v;
    size_t n;
    TEST_CHECK(cluster_hosts_list(takers[0], &v, &n, &e) == 0, "list");
    bool shown = false;
    for (size_t i = 0; i < n; i++)
        shown |= strcmp(v[i].id, "dead") == 0 && v[i].lost_usec > 0 &&
                 strncmp(v[i].lost_by, "taker-", 6) == 0;
    cluster_hosts_free(v, n);
    TEST_CHECK(shown, "the hosts list does not show dead lost");

    /* dead comes back: its heartbeat says lost; its own settlement is refused */
    TEST_CHECK(cluster_heartbeat(dead, "tcg", "[]", &e) < 0 && e->category == E_CONFLICT,
               "a lost host's heartbeat was taken");
    error_free(e);
    e = NULL;
    bool lost = false;
    TEST_CHECK(cluster_session_lost(dead, "dead-000", &lost, &e) == 0 && lost, "not host_lost");
    TEST_CHECK(cluster_session_lost(dead, "dead-003", &lost, &e) == 0 && !lost, "ended before");
    ReservationRecord res, *open;
    TEST_CHECK(cluster_reservation_for_session(dead, "dead-001", &res, &e) == 0, "get");
    TEST_CHECK(cluster_reservation_end(dead, res.id, RESERVATION_CHARGED, 30, res.ended_usec + 9,
                                       &e) < 0 &&
                   e->category == E_CONFLICT,
               "a taken-over reservation was settled again");
    error_free(e);
    e = NULL;
    TEST_CHECK(cluster_reservations_open(dead, &open, &n, &e) == 0 && n == 0,
               "the returning host still owns %zu open reservations", n);
    free(open);
    TEST_CHECK(cluster_rejoin(dead, &e) == 0 && cluster_heartbeat(dead, "tcg", "[]", &e) == 0,
               "rejoin: %s", e ? e->message : "");
    TEST_CHECK(sql_long("SELECT count(*) FROM hosts WHERE id = 'dead' AND lost_usec = 0") == 1,
               "dead is not live again");
    char *after = ledger_text();
    TEST_CHECK(strcmp(before, after) == 0, "the ledger moved: %s -> %s", before, after);
    printf("host_lost return: a second takeover finds nothing; the returning host is told,"
           " settles nothing twice (ledger %s), rejoins live\n",
           after);
    free(before);
    free(after);
}

static void
test_batch_and_gap(Cluster **takers)
{
    Cluster *big = open_lease("dead-big");
    int n = CLUSTER_TAKEOVER_MAX_SESSIONS + 5;
    admit_n(big, "big", n, (int64_t) wall_usec());
    make_takers(takers);
    free(sql_value("UPDATE hosts SET heartbeat_usec = heartbeat_usec - 60000000"
                   " WHERE id = 'dead-big'",
                   false));
    /* takers[0] had a gap (the database away): its next beat restarts alive_since */
    free(sql_value("UPDATE hosts SET heartbeat_usec = heartbeat_usec - 10000000"
                   " WHERE id = 'taker-0'",
                   false));
    Error *e = NULL;
    TEST_CHECK(cluster_heartbeat(takers[0], "tcg", "[]", &e) == 0, "beat");
    TEST_CHECK(takeover(takers[0]).host_id[0] == '\0', "a taker just back took over");
    ClusterTakeover a = takeover(takers[1]), b = takeover(takers[2]), c = takeover(takers[3]);
    TEST_CHECK(a.n_ended == CLUSTER_TAKEOVER_MAX_SESSIONS && b.n_ended == 5 && !c.host_id[0],
               "batches of %zu, %zu, then %s", a.n_ended, b.n_ended, c.host_id);
    TEST_CHECK(sql_long("SELECT count(*) FROM reservations WHERE session_id LIKE 'big-%'"
                        " AND state = 'charged'") == n,
               "every session of a big host ended once");
    cluster_free(big);
    printf("host_lost batch: %d sessions in batches of %d; a taker back from a gap waits\n", n,
           CLUSTER_TAKEOVER_MAX_SESSIONS);
}

void
test_host_lost(void)
{
    /* the other scenarios' hosts stopped beating long ago: keep them out of this one */
    free(sql_value("UPDATE hosts SET heartbeat_usec = heartbeat_usec + 3600000000", false));
    Cluster *takers[RACERS], *dead = open_lease("dead");
    for (int i = 0; i < RACERS; i++) {
        char id[16];
        snprintf(id, sizeof(id), "taker-%d", i);
        takers[i] = open_lease(id);
    }
    test_fresh_and_race(takers, dead);
    test_again_and_return(takers, dead);
    test_batch_and_gap(takers);
    for (int i = 0; i < RACERS; i++)
        cluster_free(takers[i]);
    cluster_free(dead);
    free(sql_value("UPDATE hosts SET heartbeat_usec = heartbeat_usec - 3600000000"
                   " WHERE id LIKE 'host-%'",
                   false)); /* back as they were */
}
