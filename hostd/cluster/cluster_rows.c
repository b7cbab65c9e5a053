/* Rows other hosts wrote, decoded from their text. See cluster_rows.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ascii.h"
#include "cluster_rows.h"

static const char *
row_value(const ClusterRow *r, int col, size_t *ret_len)
{
    if (col < 0 || col >= r->n_cols || col >= CLUSTER_ROW_MAX_COLS || !r->value[col]) {
        *ret_len = 0;
        return NULL;
    }
    *ret_len = r->len[col];
    return r->value[col];
}

int64_t
cluster_row_i64(const ClusterRow *r, int col)
{
    size_t len;
    const char *v = row_value(r, col, &len);
    return v ? strtoll(v, NULL, 10) : 0;
}

bool
cluster_row_text(const ClusterRow *r, int col, char *dst, size_t cap)
{
    size_t len;
    const char *v = row_value(r, col, &len);
    dst[0] = '\0';
    if (!v)
        return true; /* libpq's text of a NULL */
    if (len >= cap || memchr(v, '\0', len))
        return false;
    memcpy(dst, v, len);
    dst[len] = '\0';
    return true;
}

bool
cluster_row_is(const ClusterRow *r, int col, const char *s)
{
    size_t len;
    const char *v = row_value(r, col, &len);
    return v && len == strlen(s) && memcmp(v, s, len) == 0;
}

/* For display: the column cut at cap - 1 bytes (and at a NUL), "" for NULL. */
static void
row_text_cut(const ClusterRow *r, int col, char *dst, size_t cap)
{
    size_t len;
    const char *v = row_value(r, col, &len);
    snprintf(dst, cap, "%s", v ? v : "");
}

static bool
hash_decode(const ClusterRow *r, int col, uint8_t out[SHA256_BYTES])
{
    size_t len;
    const char *hex = row_value(r, col, &len);
    if (!hex || len != SHA256_HEX_BYTES)
        return false;
    for (size_t i = 0; i < SHA256_BYTES; i++) {
        int hi = ascii_hex_value(hex[2 * i]), lo = ascii_hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t) (hi << 4 | lo);
    }
    return true;
}

bool
cluster_tenancy_row_decode(const ClusterRow *r, ClusterTenancy *t)
{
    size_t len;
    const char *kind = row_value(r, 0, &len);
    if (kind && len >= 1 && kind[0] == 't') {
        TenantRecord x = {.created_usec = cluster_row_i64(r, 5),
                          .removed_usec = cluster_row_i64(r, 6)};
        if (!cluster_row_text(r, 1, x.id, sizeof(x.id)) ||
            !cluster_row_text(r, 2, x.name, sizeof(x.name)))
            return false;
        t->tenants[t->n_tenants++] = x;
        return true;
    }
    TokenRecord k = {.admin = cluster_row_is(r, 4, "t"),
                     .created_usec = cluster_row_i64(r, 5),
                     .revoked_usec = cluster_row_i64(r, 6)};
    if (!cluster_row_text(r, 1, k.id, sizeof(k.id)) ||
        !cluster_row_text(r, 2, k.tenant_id, sizeof(k.tenant_id)) || !hash_decode(r, 3, k.hash))
        return false;
    t->tokens[t->n_tokens++] = k;
    return true;
}

int
cluster_host_row_decode(const ClusterRow *r, ClusterHost *h, Error **errp)
{
    size_t pools_len;
    const char *pools = row_value(r, 6, &pools_len);

    memset(h, 0, sizeof(*h));
    row_text_cut(r, 0, h->id, sizeof(h->id));
    row_text_cut(r, 1, h->url, sizeof(h->url));
    row_text_cut(r, 2, h->accel, sizeof(h->accel));
    h->started_usec = cluster_row_i64(r, 3);
    h->heartbeat_age_usec = cluster_row_i64(r, 4);
    h->open_sessions = (uint64_t) MAX(cluster_row_i64(r, 5), 0);
    h->lost_usec = cluster_row_i64(r, 7);
    row_text_cut(r, 8, h->lost_by, sizeof(h->lost_by));
    if (pools_len > CLUSTER_POOLS_JSON_MAX_BYTES)
        return error_set(errp, E_INTERNAL, 0, "cluster: host %s: pools over %d bytes", h->id,
                         CLUSTER_POOLS_JSON_MAX_BYTES);
    if (!(h->pools_json = strdup(pools ? pools : "")))
        return error_set(errp, E_INTERNAL, ENOMEM, "cluster: hosts");
    return 0;
}
