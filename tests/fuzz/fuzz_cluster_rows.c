/* Fuzz target: rows another host (or anyone who can write the cluster's database) wrote, as
 * this host reads them back (hostd/cluster/cluster_rows.c), and what it does with them: the
 * tenancy pull's rows merged into a real SQLite store (store_sync_apply), the hosts list's
 * rows, and published E2B listener URLs (cluster_e2b_url_is_valid).
 *
 * Input: lines; the first byte of each says what the rest is. 'T' a tenancy row, 'H' a hosts
 * row: columns split by TAB, "\N" is NULL, and "\n" "\t" "\\" "\xHH" stand for their bytes
 * (PostgreSQL's COPY text form, so seeds read like rows). 'U' a URL, the rest of the line.
 * Invariants, not just "no crash":
 *  - a tenancy row is kept exactly when every kept field fits its record with no NUL and the
 *    hash is 64 hex digits (checked here by an independent reading); what is kept equals the
 *    columns byte for byte (never truncated into another id);
 *  - merged twice into a fresh store (the second time with every revocation and removal
 *    taken away): the skipped-as-invalid count is the number of records that break the
 *    store's rules; every tenant and token the store then holds passes those rules and
 *    equals a record of the batch; the second merge inserts, revokes and removes nothing,
 *    and a token revoked or a tenant removed by the first stays so at the same time
 *    (revocation and removal are one way);
 *  - a hosts row: every text field is NUL-terminated within its bound and a prefix of its
 *    column; the pools are the column exactly, or the row is refused when they are over
 *    CLUSTER_POOLS_JSON_MAX_BYTES; open sessions are never "negative";
 *  - a URL is valid exactly when it is what cluster_e2b_url() writes from it (the host part,
 *    its port, its scheme); whatever cluster_e2b_url() writes from any input is valid. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_rows.h"
#include "fuzz_check.h"
#include "store_sync.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ROWS_MAX 256

/* One decoded row: its columns in a buffer of their own (each NUL-terminated). */
typedef struct {
    ClusterRow row;
    char *buf;
} FedRow;

static int
hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* COPY text of one line into columns. */
static void
fed_row(const char *p, size_t n, FedRow *ret)
{
    char *out = malloc(n + CLUSTER_ROW_MAX_COLS + 1), *col = out;
    size_t len = 0;
    *ret = (FedRow){.buf = out};
    ClusterRow *r = &ret->row;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || p[i] == '\t') {
            if (r->n_cols == CLUSTER_ROW_MAX_COLS)
                break;
            col[len] = '\0';
            bool null = len == 2 && col[0] == '\\' && col[1] == 'N';
            r->value[r->n_cols] = null ? NULL : col;
            r->len[r->n_cols++] = null ? 0 : len;
            col += len + 1;
            len = 0;
            continue;
        }
        char c = p[i];
        if (c == '\\' && i + 1 < n && p[i + 1] != 'N') { /* "\N" is NULL as a whole column */
            char e = p[++i];
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
            if (e == 'x' && i + 2 < n && hex_digit(p[i + 1]) >= 0 && hex_digit(p[i + 2]) >= 0) {
                c = (char) (hex_digit(p[i + 1]) << 4 | hex_digit(p[i + 2]));
                i += 2;
            }
        }
        col[len++] = c;
    }
}

/* The column's bytes and length, as the test reads them ("" for NULL, as libpq). */
static const char *
col_of(const ClusterRow *r, int col, size_t *ret_len)
{
    bool have = col < r->n_cols && r->value[col];
    *ret_len = have ? r->len[col] : 0;
    return have ? r->value[col] : "";
}

static bool
col_fits(const ClusterRow *r, int col, size_t cap)
{
    size_t n;
    const char *v = col_of(r, col, &n);
    return n < cap && !memchr(v, '\0', n);
}

static bool
col_equals(const ClusterRow *r, int col, const char *s)
{
    size_t n;
    const char *v = col_of(r, col, &n);
    return strlen(s) == n && memcmp(v, s, n) == 0;
}

static bool
col_hash(const ClusterRow *r, int col, uint8_t out[SHA256_BYTES])
{
    size_t n;
    const char *v = col_of(r, col, &n);
    if (n != 2 * SHA256_BYTES)
        return false;
    for (size_t i = 0; i < SHA256_BYTES; i++) {
        int hi = hex_digit(v[2 * i]), lo = hex_digit(v[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t) (hi * 16 + lo);
    }
    return true;
}

static void
check_tenancy_row(const ClusterRow *r, ClusterTenancy *t)
{
    size_t kn, before_t = t->n_tenants, before_k = t->n_tokens;
    const char *kind = col_of(r, 0, &kn);
    bool tenant = kn > 0 && kind[0] == 't';
    uint8_t hash[SHA256_BYTES];
    bool want = tenant ? col_fits(r, 1, STORE_ID_MAX_BYTES) &&
                             col_fits(r, 2, STORE_TENANT_NAME_MAX_BYTES + 1)
                       : col_fits(r, 1, STORE_ID_MAX_BYTES) && col_fits(r, 2, STORE_ID_MAX_BYTES) &&
                             col_hash(r, 3, hash);
    bool got = cluster_tenancy_row_decode(r, t);
    CHECK(got == want);
    if (!got) {
        CHECK(t->n_tenants == before_t && t->n_tokens == before_k);
        return;
    }
    if (tenant) {
        const TenantRecord *x = &t->tenants[t->n_tenants - 1];
        CHECK(t->n_tenants == before_t + 1 && t->n_tokens == before_k);
        CHECK(col_equals(r, 1, x->id) && col_equals(r, 2, x->name));
        CHECK(x->created_usec == cluster_row_i64(r, 5) && x->removed_usec == cluster_row_i64(r, 6));
        return;
    }
    const TokenRecord *k = &t->tokens[t->n_tokens - 1];
    CHECK(t->n_tokens == before_k + 1 && t->n_tenants == before_t);
    CHECK(col_equals(r, 1, k->id) && col_equals(r, 2, k->tenant_id));
    CHECK(memcmp(k->hash, hash, SHA256_BYTES) == 0);
    CHECK(k->admin == col_equals(r, 4, "t"));
    CHECK(k->created_usec == cluster_row_i64(r, 5) && k->revoked_usec == cluster_row_i64(r, 6));
}

static bool
same_tenant(const TenantRecord *a, const TenantRecord *b)
{
    return strcmp(a->id, b->id) == 0 && strcmp(a->name, b->name) == 0 &&
           a->created_usec == b->created_usec;
}

static bool
same_token(const TokenRecord *a, const TokenRecord *b)
{
    return strcmp(a->id, b->id) == 0 && strcmp(a->tenant_id, b->tenant_id) == 0 &&
           memcmp(a->hash, b->hash, SHA256_BYTES) == 0 && a->admin == b->admin &&
           a->created_usec == b->created_usec;
}

/* Every tenant and token the store holds passes the rules and is one of the batch (the
 * built-in tenant excepted). */
static void
check_store_holds_batch(Store *s, const ClusterTenancy *t)
{
    TenantRecord *tv = NULL;
    TokenRecord *kv = NULL;
    size_t tn = 0, kn = 0;
    CHECK(store_tenant_list(s, true, &tv, &tn, NULL) == 0 &&
          store_token_list(s, NULL, &kv, &kn, NULL) == 0);
    for (size_t i = 0; i < tn; i++) {
        if (strcmp(tv[i].id, STORE_TENANT_DEFAULT) == 0)
            continue;
        CHECK(store_sync_decide_tenant(NULL, &tv[i]) == STORE_SYNC_INSERT);
        bool found = false;
        for (size_t j = 0; j < t->n_tenants && !found; j++)
            found = same_tenant(&tv[i], &t->tenants[j]);
        CHECK(found);
    }
    for (size_t i = 0; i < kn; i++) {
        CHECK(store_sync_decide_token(NULL, &kv[i]) == STORE_SYNC_INSERT);
        bool found = false;
        for (size_t j = 0; j < t->n_tokens && !found; j++)
            found = same_token(&kv[i], &t->tokens[j]);
        CHECK(found);
    }
    free(tv);
    free(kv);
}

static size_t
count_invalid(const ClusterTenancy *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_tenants; i++)
        n += store_sync_decide_tenant(NULL, &t->tenants[i]) == STORE_SYNC_INVALID;
    for (size_t i = 0; i < t->n_tokens; i++)
        n += store_sync_decide_token(NULL, &t->tokens[i]) == STORE_SYNC_INVALID;
    return n;
}

static void
check_merge(ClusterTenancy *t)
{
    Store *s = NULL;
    StoreSyncCounts n;
    CHECK(store_open(":memory:", &s, NULL) == 0);
    CHECK(store_sync_apply(s, t->tenants, t->n_tenants, t->tokens, t->n_tokens, &n, NULL) == 0);
    CHECK(n.invalid == count_invalid(t));
    CHECK(n.inserted + n.revoked + n.removed + n.invalid + n.conflicts <=
          t->n_tenants + t->n_tokens);
    check_store_holds_batch(s, t);

    /* Again, with every revocation and removal taken away (the cluster "undoing" them):
     * nothing new, nothing undone. A negative time stays: it keeps its record invalid. */
    int64_t *revoked = calloc(t->n_tokens + 1, sizeof(*revoked));
    int64_t *removed = calloc(t->n_tenants + 1, sizeof(*removed));
    for (size_t i = 0; i < t->n_tokens; i++) {
        TokenRecord k;
        revoked[i] = store_token_get(s, t->tokens[i].id, &k, NULL) == 0 ? k.revoked_usec : 0;
        if (t->tokens[i].revoked_usec > 0)
            t->tokens[i].revoked_usec = 0;
    }
    for (size_t i = 0; i < t->n_tenants; i++) {
        TenantRecord x;
        removed[i] = store_tenant_get(s, t->tenants[i].id, &x, NULL) == 0 ? x.removed_usec : 0;
        if (t->tenants[i].removed_usec > 0)
            t->tenants[i].removed_usec = 0;
    }
    CHECK(store_sync_apply(s, t->tenants, t->n_tenants, t->tokens, t->n_tokens, &n, NULL) == 0);
    CHECK(n.inserted == 0 && n.revoked == 0 && n.removed == 0);
    for (size_t i = 0; i < t->n_tokens; i++) {
        TokenRecord k;
        if (store_token_get(s, t->tokens[i].id, &k, NULL) == 0)
            CHECK(k.revoked_usec == revoked[i]);
    }
    for (size_t i = 0; i < t->n_tenants; i++) {
        TenantRecord x;
        if (store_tenant_get(s, t->tenants[i].id, &x, NULL) == 0)
            CHECK(x.removed_usec == removed[i]);
    }
    free(removed);
    free(revoked);
    store_close(s);
}

static bool
prefix_of_col(const ClusterRow *r, int col, const char *s, size_t cap)
{
    size_t n, sn = strnlen(s, cap);
    const char *v = col_of(r, col, &n);
    return sn < cap && sn <= n && memcmp(s, v, sn) == 0;
}

static void
check_host_row(const ClusterRow *r)
{
    ClusterHost h;
    Error *e = NULL;
    size_t pn;
    const char *pools = col_of(r, 6, &pn);
    int rc = cluster_host_row_decode(r, &h, &e);
    CHECK(prefix_of_col(r, 0, h.id, sizeof(h.id)) && prefix_of_col(r, 1, h.url, sizeof(h.url)) &&
          prefix_of_col(r, 2, h.accel, sizeof(h.accel)) &&
          prefix_of_col(r, 8, h.lost_by, sizeof(h.lost_by)));
    CHECK(h.open_sessions <= INT64_MAX);
    if (pn > CLUSTER_POOLS_JSON_MAX_BYTES) {
        CHECK(rc < 0 && e && e->category == E_INTERNAL && !h.pools_json);
    } else {
        CHECK(rc == 0 && h.pools_json && strlen(h.pools_json) == strnlen(pools, pn) &&
              memcmp(h.pools_json, pools, strlen(h.pools_json)) == 0);
    }
    error_free(e);
    free(h.pools_json);
}

/* The port and scheme of a URL of the form host:port, for cluster_e2b_url() to rebuild it. */
static void
check_url(const char *url)
{
    char again[CLUSTER_URL_MAX_BYTES + 1];
    const char *colon = strrchr(url, ':');
    bool tls = strncmp(url, "https://", 8) == 0;
    unsigned long port = colon ? strtoul(colon + 1, NULL, 10) : 0;
    bool valid = cluster_e2b_url_is_valid(url);
    bool rebuilt = port <= 65535 &&
                   cluster_e2b_url(url, (unsigned) port, tls, again, sizeof(again)) == 0 &&
                   strcmp(again, url) == 0;
    CHECK(valid == rebuilt);
    /* Whatever is written from this input as an advertise_url is valid. */
    for (unsigned p = 1; p <= 65535; p = p * 7 + 3)
        for (int s = 0; s < 2; s++)
            if (cluster_e2b_url(url, p, s, again, sizeof(again)) == 0)
                CHECK(cluster_e2b_url_is_valid(again));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *) data, *end = p + size;
    ClusterTenancy t = {.tenants = calloc(ROWS_MAX, sizeof(TenantRecord)),
                        .tokens = calloc(ROWS_MAX, sizeof(TokenRecord))};
    size_t rows = 0;

    while (p < end && rows < ROWS_MAX) {
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        size_t len = nl ? (size_t) (nl - p) : (size_t) (end - p);
        if (len > 0 && (p[0] == 'T' || p[0] == 'H')) {
            FedRow fr;
            fed_row(p + 1, len - 1, &fr);
            if (p[0] == 'T')
                check_tenancy_row(&fr.row, &t);
            else
                check_host_row(&fr.row);
            free(fr.buf);
            rows++;
        } else if (len > 0 && p[0] == 'U' && len <= CLUSTER_URL_MAX_BYTES + 2) {
            char url[CLUSTER_URL_MAX_BYTES + 2];
            memcpy(url, p + 1, len - 1);
            url[len - 1] = '\0';
            check_url(url);
        }
        p += len + (nl != NULL);
    }
    if (t.n_tenants + t.n_tokens > 0)
        check_merge(&t);
    free(t.tenants);
    free(t.tokens);
    return 0;
}
