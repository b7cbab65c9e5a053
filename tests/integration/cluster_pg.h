/* What the cluster_pg test files share: the throw-away database (tests/lib/pgtemp.py) and
 * raw queries for what the module does not expose. */
#pragma once

#include <stdbool.h>

#include "cluster.h"

/* A host's [cluster] config against the test's database and token file. */
ClusterConfig config_for(const char *host);
/* cluster_open() of that host; fails the test if it cannot. */
Cluster *open_host(const char *host);
/* One value of a raw query as text (malloc'd); must_fail: the statement must be refused. */
char *sql_value(const char *sql, bool must_fail);
long sql_long(const char *sql);

/* cluster_pg_lost.c: a host that dies (takeover, charge, return). */
void test_host_lost(void);
/* cluster_pg_place.c: where a create goes (cluster_place). */
void test_place(void);
/* cluster_pg_bounds.c: how long a call may take (a crowd at one lock, a slow statement, a
 * frozen server). */
void test_bounds(void);
/* cluster_pg_remove.c: removing a tenant (refused with open sessions, then with them; the
 * pull; admission and tokens refused after; a race with admissions). */
void test_tenant_remove(void);
