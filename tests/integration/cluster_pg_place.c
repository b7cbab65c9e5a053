/* Where a create goes (issue 16: "placed on a host with an idle guest of that pool, prefer
 * itself, then the least loaded"): cluster_place() (hostd/cluster/cluster_route.c) against
 * the real database, with hosts whose heartbeats carry made-up pool counts. The API's side
 * (this host first, the forwarded create) runs in integration_cluster_route.
 *
 *   idle      of two hosts with an idle guest, the one with fewer open sessions, then more
 *             idle guests; never this host itself; a pool nobody lists: nobody
 *   estimate  sessions the index gave a host after its last heartbeat use up its idle
 *             guests (a burst does not land on one guest); fewer open sessions wins a tie
 *   any       need_idle false: a host that has the pool though no idle guest
 *   not-live  a lost host and one whose heartbeat is older than CLUSTER_PLACE_FRESH_USEC
 *             are no place for work
 *   hostile   pools rows that are not what heartbeats write (not an array, idle as text,
 *             entries that are not objects) never fail the statement and count as no idle
 *             guest
 *   draining  an entry with "accepting": false (its host drains) is no place at all */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_pg.h"
#include "cluster_route.h"
#include "testlib.h"

static Cluster *
open_beating(const char *host, const char *pools_json)
{
    Error *e = NULL;
    Cluster *c = NULL;
    ClusterConfig cfg = config_for(host);
    TEST_CHECK(cluster_open(&cfg, &c, &e) == 0, "open %s: %s", host, e ? e->message : "");
    TEST_CHECK(cluster_heartbeat(c, "tcg", pools_json, &e) == 0, "beat %s: %s", host,
               e ? e->message : "");
    return c;
}

/* The host cluster_place() picks for pool ("" when none). */
static const char *
placed(Cluster *c, const char *pool, bool need_idle)
{
    static char host[CLUSTER_HOST_ID_MAX_BYTES + 1];
    Error *e = NULL;
    ClusterOwner o;
    int r = cluster_place(c, pool, need_idle, &o, &e);
    TEST_CHECK(r >= 0, "place %s: %s", pool, e ? e->message : "");
    snprintf(host, sizeof(host), "%s", r == 1 ? o.host_id : "");
    if (r == 1)
        TEST_CHECK(o.tenant_id[0] == '\0' && strncmp(o.url, "http://127.0.0.1:1/", 19) == 0,
                   "place %s: owner %s at %s", pool, o.host_id, o.url);
    return host;
}

static void
expect_place(Cluster *c, const char *pool, bool need_idle, const char *want)
{
    const char *got = placed(c, pool, need_idle);
    TEST_CHECK(strcmp(got, want) == 0, "place %s (need_idle %d): %s, want %s", pool, need_idle,
               got[0] ? got : "nobody", want[0] ? want : "nobody");
}

/* n open sessions of host in the index, admitted now (after its last heartbeat). */
static void
open_sessions(const char *host, int n)
{
    static int batch;
    char sql[320];
    snprintf(sql, sizeof(sql),
             "INSERT INTO sessions (id, tenant_id, host_id, state, created_usec)"
             " SELECT '%s-%d-' || g, 'default', '%s', 'pending',"
             " (extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
             " FROM generate_series(1, %d) g",
             host, ++batch, host, n);
    free(sql_value(sql, false));
}

void
test_place(void)
{
    Cluster *self = open_beating("pl-self", "[{\"name\":\"m\",\"idle\":3,\"busy\":0}]");
    Cluster *one = open_beating("pl-one", "[{\"name\":\"m\",\"idle\":1,\"busy\":0}]");
    Cluster *two = open_beating("pl-two", "[{\"name\":\"x\",\"idle\":4},"
                                          "{\"name\":\"m\",\"idle\":2,\"busy\":1}]");
    Cluster *other = open_beating("pl-other", "[{\"name\":\"o\",\"idle\":5}]");

    /* idle: both have one, neither has open sessions: more idle guests; never self */
    expect_place(self, "m", true, "pl-two");
    expect_place(two, "m", true, "pl-self");
    expect_place(self, "o", true, "pl-other");
    expect_place(self, "nope", true, "");
    expect_place(self, "nope", false, "");
    expect_place(other, "o", true, ""); /* only itself has it */

    /* estimate: two admissions on pl-two since its beat use up its 2 idle guests */
    open_sessions("pl-two", 2);
    expect_place(self, "m", true, "pl-one");
    /* a beat that says one idle again: pl-one has fewer open sessions (0 < 2) */
    Error *e = NULL;
    TEST_CHECK(cluster_heartbeat(two, "tcg", "[{\"name\":\"m\",\"idle\":1}]", &e) == 0, "beat");
    expect_place(self, "m", true, "pl-one");
    open_sessions("pl-one", 1);
    expect_place(self, "m", true, "pl-two"); /* pl-one's only guest went to that session */

    /* any: nobody idle for m from pl-self's view once pl-two's is taken too */
    open_sessions("pl-two", 1);
    expect_place(self, "m", true, "");
    expect_place(self, "m", false, "pl-one"); /* has the pool; fewer open sessions (1 < 3) */

    /* not-live: lost, then stale */
    free(sql_value("UPDATE hosts SET lost_usec = 1, lost_by = 'pl-self' WHERE id = 'pl-one'",
                   false));
    expect_place(self, "m", false, "pl-two");
    free(sql_value("UPDATE hosts SET heartbeat_usec = heartbeat_usec - 7000000"
                   " WHERE id = 'pl-other'",
                   false));
    expect_place(self, "o", true, "");
    expect_place(self, "o", false, "");

    /* hostile pools rows: the statement still answers, nothing counts as idle */
    Cluster *bad1 = open_beating("pl-bad1", "{\"name\":\"h\",\"idle\":9}");
    Cluster *bad2 = open_beating("pl-bad2", "[1,\"h\",null,[{\"name\":\"h\",\"idle\":9}],"
                                            "{\"name\":\"h\",\"idle\":\"9\"},"
                                            "{\"name\":7,\"idle\":9},{\"idle\":9}]");
    expect_place(self, "h", true, "");
    expect_place(self, "h", false, "pl-bad2"); /* it does list a pool named h */
    Cluster *good = open_beating("pl-good", "[{\"name\":\"h\",\"idle\":1e3}]");
    expect_place(self, "h", true, "pl-good");

    /* draining: a host whose entries say "accepting": false is no place, idle or not; one
     * that says true (or, as older hosts, nothing) is */
    Cluster *drained = open_beating("pl-drained", "[{\"name\":\"d\",\"idle\":5,"
                                                  "\"accepting\":false}]");
    expect_place(self, "d", true, "");
    expect_place(self, "d", false, "");
    Cluster *willing = open_beating("pl-open", "[{\"name\":\"d\",\"idle\":1,\"accepting\":true}]");
    expect_place(self, "d", true, "pl-open");
    TEST_CHECK(cluster_heartbeat(willing, "tcg",
                                 "[{\"name\":\"d\",\"idle\":1,\"accepting\":\"no\"}]", &e) == 0,
               "beat");
    expect_place(self, "d", true, "pl-open"); /* only JSON false refuses */
    TEST_CHECK(cluster_heartbeat(drained, "tcg", "[{\"name\":\"d\",\"idle\":5}]", &e) == 0, "beat");
    expect_place(self, "d", true, "pl-drained"); /* the drain ended: more idle guests wins */

    cluster_free(willing);
    cluster_free(drained);
    cluster_free(good);
    cluster_free(bad2);
    cluster_free(bad1);
    cluster_free(other);
    cluster_free(two);
    cluster_free(one);
    cluster_free(self);
    printf("place: idle first, then fewer open sessions and more idle guests; admissions "
           "since a beat use its guests up; lost and stale hosts skipped; hostile pools "
           "rows answered; draining hosts skipped\n");
}
