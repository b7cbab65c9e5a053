/* Events and the reader pool. See store.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "jsonscan.h"
#include "store_internal.h"

#define STORE_EVENTS_READ_MAX 4096

int
store_event_append(Store *s, const char *session_id, const EventRecord *e, Error **errp)
{
    sqlite3_stmt *st = store_stmt(s, STMT_EVENT_APPEND, errp);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, session_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64) e->seq);
    sqlite3_bind_int64(st, 3, e->ts_usec);
    sqlite3_bind_text(st, 4, e->type, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, e->exec_id);
    if (e->data)
        sqlite3_bind_blob64(st, 6, e->data, e->data_len, SQLITE_STATIC);
    if (e->attrs)
        sqlite3_bind_text(st, 7, e->attrs, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : store_fail(s, errp, "append event");
}

static int
row_to_event(sqlite3_stmt *st, EventRecord *e)
{
    memset(e, 0, sizeof(*e));
    e->seq = (uint64_t) sqlite3_column_int64(st, 0);
    e->ts_usec = sqlite3_column_int64(st, 1);
    const unsigned char *type = sqlite3_column_text(st, 2);
    snprintf(e->type, sizeof(e->type), "%s", type ? (const char *) type : "");
    e->exec_id = (uint32_t) sqlite3_column_int64(st, 3);
    int n = sqlite3_column_bytes(st, 4);
    const void *blob = sqlite3_column_blob(st, 4);
    if (blob && n > 0) {
        if (!(e->data = malloc((size_t) n)))
            return -1;
        memcpy(e->data, blob, (size_t) n);
        e->data_len = (size_t) n;
    }
    const unsigned char *attrs = sqlite3_column_text(st, 5);
    if (attrs && !(e->attrs = strdup((const char *) attrs)))
        return -1;
    return 0;
}

bool
store_event_attrs_parsable(const EventRecord *e)
{
    return e->attrs &&
           jsonscan_depth_within(e->attrs, strlen(e->attrs), STORE_EVENT_ATTRS_MAX_DEPTH);
}

void
event_records_free(EventRecord *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].data);
        free(v[i].attrs);
    }
    free(v);
}

int
store_events_read(Store *s, const char *session_id, uint64_t after_seq, size_t max,
                  EventRecord **ret, size_t *ret_n, Error **errp)
{
    if (max == 0 || max > STORE_EVENTS_READ_MAX)
        max = STORE_EVENTS_READ_MAX;
    sqlite3_stmt *st = store_stmt(s, STMT_EVENTS_READ, errp);
    EventRecord *v = NULL;
    size_t n = 0;
    int rc;

    if (!st)
        return -1;
    if (!(v = calloc(max, sizeof(*v))))
        return error_set(errp, E_INTERNAL, ENOMEM, "store: read events");
    sqlite3_bind_text(st, 1, session_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64) after_seq);
    sqlite3_bind_int64(st, 3, (sqlite3_int64) max);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (row_to_event(st, &v[n++]) < 0) {
            sqlite3_reset(st);
            event_records_free(v, n);
            return error_set(errp, E_INTERNAL, ENOMEM, "store: read events");
        }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        event_records_free(v, n);
        return store_fail(s, errp, "read events");
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

struct StoreReaders {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned n, free_n;
    Store **all;
    Store **free_list;
};

int
store_readers_new(const char *path, unsigned n, StoreReaders **ret, Error **errp)
{
    StoreReaders *r = calloc(1, sizeof(*r));
    if (!r || !(r->all = calloc(n, sizeof(Store *))) || !(r->free_list = calloc(n, sizeof(Store *)))) {
        store_readers_free(r);
        return error_set(errp, E_INTERNAL, ENOMEM, "store readers");
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    for (; r->n < n; r->n++) {
        if (store_open_conn(path, true, &r->all[r->n], errp) < 0) {
            store_readers_free(r);
            return -1;
        }
        r->free_list[r->free_n++] = r->all[r->n];
    }
    *ret = r;
    return 0;
}

void
store_readers_free(StoreReaders *r)
{
    if (!r)
        return;
    for (unsigned i = 0; r->all && i < r->n; i++)
        store_close(r->all[i]);
    free(r->all);
    free(r->free_list);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
    free(r);
}

Store *
store_reader_acquire(StoreReaders *r)
{
    pthread_mutex_lock(&r->lock);
    while (r->free_n == 0)
        pthread_cond_wait(&r->cond, &r->lock);
    Store *s = r->free_list[--r->free_n];
    pthread_mutex_unlock(&r->lock);
    return s;
}

void
store_reader_release(StoreReaders *r, Store *s)
{
    pthread_mutex_lock(&r->lock);
    r->free_list[r->free_n++] = s;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
}
