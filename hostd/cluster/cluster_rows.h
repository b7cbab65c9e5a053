/* Rows other hosts wrote, decoded from the text PostgreSQL hands back: tenants and tokens
 * (the pull), hosts (the list `stockade hosts` shows). Pure: no libpq, so the fuzz target
 * (tests/fuzz/fuzz_cluster_rows.c) and unit tests feed rows as values; cluster.c turns a
 * PGresult row into a ClusterRow (cluster_row_at()).
 *
 * What comes from the database is another host's, or anyone's who can write to it: every
 * field is bounded before it is kept. A tenant or token whose value is over its bound is
 * never truncated into another id: the row is skipped and counted. The forms (id syntax, a
 * name of text) are checked later by store_sync. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"

#define CLUSTER_ROW_MAX_COLS 12 /* the widest row read here: a token of the pull (8) */

/* One row as text, the way libpq gives it: per column its bytes, NUL-terminated at len
 * (value[len] == '\0'; a NUL before len is possible in a fed row and is refused where text
 * is kept), or NULL for SQL NULL. Columns past n_cols read as NULL. */
typedef struct ClusterRow {
    int n_cols;
    const char *value[CLUSTER_ROW_MAX_COLS];
    size_t len[CLUSTER_ROW_MAX_COLS];
} ClusterRow;

/* The column as a BIGINT, strtoll()'s reading of its text: 0 for NULL or a missing column
 * (the columns read this way are BIGINT). */
int64_t cluster_row_i64(const ClusterRow *r, int col);
/* Copies the column into dst (cap bytes with its NUL) when it fits and holds no NUL (NULL
 * reads as "", as libpq's text of it); false otherwise (dst then holds ""). */
bool cluster_row_text(const ClusterRow *r, int col, char *dst, size_t cap);
/* Whether the column is exactly the text s ("t" for a boolean true). */
bool cluster_row_is(const ClusterRow *r, int col, const char *s);

/* One row of the tenancy pull: column 0 't' (a tenant: 1 id, 2 name, 5 created, 6 removed)
 * or 'k' (a
 * token: 1 id, 2 tenant, 3 hash in hex, 4 admin, 5 created, 6 revoked). Appends to
 * t->tenants or t->tokens (the caller sized both for every row) and returns true; false
 * when a field is over its bound, NUL-bearing, not 64 hex digits (the hash) or column 0 is
 * neither: nothing is appended. Column 7 (the change number) is the caller's. */
bool cluster_tenancy_row_decode(const ClusterRow *r, ClusterTenancy *t);

/* One row of the hosts list: 0 id, 1 url, 2 accel, 3 started, 4 heartbeat age, 5 open
 * sessions, 6 pools (JSON text), 7 lost, 8 lost by. The text fields are for display: each is
 * cut at its bound (and at a NUL); open sessions below 0 read as 0. E_INTERNAL when the pools
 * are over CLUSTER_POOLS_JSON_MAX_BYTES or without memory; ret->pools_json is
 * malloc'd (free it with cluster_hosts_free(), also after a failure). */
int cluster_host_row_decode(const ClusterRow *r, ClusterHost *ret, Error **errp);
