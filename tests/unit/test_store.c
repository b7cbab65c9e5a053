/* Tests of hostd/store on a real SQLite file, of event rendering, and of the event hub. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "eventhub.h"
#include "render.h"
#include "store.h"
#include "testlib.h"
#include "timeutil.h"

static SessionRecord
record(const char *id, const char *tenant, int64_t created)
{
    SessionRecord r = {0};
    snprintf(r.id, sizeof(r.id), "%s", id);
    snprintf(r.tenant_id, sizeof(r.tenant_id), "%s", tenant);
    snprintf(r.kind, sizeof(r.kind), "session");
    snprintf(r.pool, sizeof(r.pool), "python");
    r.state = ST_PENDING;
    r.created_usec = created;
    r.timeout_usec = 60000000;
    return r;
}

static void
test_sessions_roundtrip_and_reopen(void **state)
{
    (void) state;
    Store *s;
    Error *e = NULL;
    assert_int_equal(store_open(test_db, &s, &e), 0);
    SessionRecord a = record("ses_a", "t1", 100), b = record("ses_b", "t2", 200);
    a.spec = "{\"pool\":\"python\"}";
    assert_int_equal(store_session_insert(s, &a, NULL), 0);
    assert_int_equal(store_session_insert(s, &b, NULL), 0);
    assert_int_equal(store_session_insert(s, &a, &e), -1); /* duplicate id */
    error_free(e);
    a.state = ST_ENDED;
    a.end_reason = SESSION_END_CANCELLED;
    a.has_exit_code = true;
    a.exit_code = 3;
    a.artifact_bytes = 1234;
    assert_int_equal(store_session_update(s, &a, NULL), 0);
    store_close(s);

    assert_int_equal(store_open(test_db, &s, NULL), 0); /* migrations are a no-op the second time */
    SessionRecord got;
    assert_int_equal(store_session_get(s, "ses_a", &got, NULL), 0);
    assert_string_equal(session_state_name(got.state), "ended");
    assert_string_equal(session_end_reason_name(got.end_reason), "cancelled");
    assert_true(got.has_exit_code);
    assert_int_equal(got.exit_code, 3);
    assert_string_equal(got.spec, "{\"pool\":\"python\"}");
    session_record_clear(&got);
    e = NULL;
    assert_int_equal(store_session_get(s, "nope", &got, &e), -1);
    assert_int_equal(e->category, E_NOT_FOUND);
    error_free(e);

    SessionRecord *v;
    size_t n;
    assert_int_equal(store_session_list(s, "t1", NULL, 10, 0, &v, &n, NULL), 0);
    assert_int_equal(n, 1); /* tenants never see each other's sessions */
    assert_string_equal(v[0].id, "ses_a");
    session_records_free(v, n);
    assert_int_equal(store_session_unfinished(s, &v, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].id, "ses_b");
    session_records_free(v, n);
    uint64_t total;
    assert_int_equal(store_artifact_bytes_total(s, &total, NULL), 0);
    assert_int_equal(total, 1234);
    store_close(s);
}

/* The column's text, as the database holds it. */
static void
raw_column(const char *sql, char *out, size_t cap)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(test_db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    snprintf(out, cap, "%s", (const char *) sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

/* The names are the wire's and the database's (API.md "Sessions"): each state and end reason
 * goes in and comes out by exactly its name; the list filters by it; a name the daemon does
 * not know reads as ended with no reason; ST_NEW is never a recorded state. */
static void
test_state_and_reason_names(void **state)
{
    (void) state;
    static const char *const states[ST_COUNT_] = {
        [ST_PENDING] = "pending",   [ST_STARTING] = "starting",     [ST_RUNNING] = "running",
        [ST_PAUSING] = "pausing",   [ST_PAUSED] = "paused",         [ST_RESUMING] = "resuming",
        [ST_STOPPING] = "stopping", [ST_EXTRACTING] = "extracting", [ST_ENDED] = "ended"};
    static const char *const reasons[SESSION_END_COUNT_] = {"",
                                                            "closed",
                                                            "cancelled",
                                                            "timed_out",
                                                            "completed",
                                                            "failed",
                                                            "output_limit",
                                                            "guest_error",
                                                            "no_capacity",
                                                            "host_error",
                                                            "host_shutdown",
                                                            "host_restart",
                                                            "host_lost",
                                                            "tenant_removed",
                                                            "resume_failed"};
    Store *s;
    SessionRecord r = record("ses_n", "t1", 1), got, *v;
    SessionState st;
    SessionEndReason why;
    size_t n;
    char text[32];

    assert_int_equal(store_open(test_db, &s, NULL), 0);
    assert_int_equal(store_session_insert(s, &r, NULL), 0);
    for (SessionState i = ST_PENDING; i < ST_COUNT_; i++) {
        r.state = i;
        assert_int_equal(store_session_update(s, &r, NULL), 0);
        raw_column("SELECT state FROM sessions WHERE id = 'ses_n'", text, sizeof(text));
        assert_string_equal(text, states[i]);
        assert_string_equal(session_state_name(i), states[i]);
        assert_true(session_state_from_name(states[i], &st) && st == i);
        assert_int_equal(store_session_get(s, "ses_n", &got, NULL), 0);
        assert_int_equal(got.state, i);
        assert_int_equal(store_session_list(s, NULL, &i, 10, 0, &v, &n, NULL), 0);
        assert_int_equal(n, 1);
        session_records_free(v, n);
    }
    assert_false(session_state_from_name("new", &st)); /* never recorded */
    assert_false(session_state_from_name("", &st));
    for (SessionEndReason i = SESSION_END_NONE; i < SESSION_END_COUNT_; i++) {
        r.end_reason = i;
        assert_int_equal(store_session_update(s, &r, NULL), 0);
        raw_column("SELECT end_reason FROM sessions WHERE id = 'ses_n'", text, sizeof(text));
        assert_string_equal(text, reasons[i]);
        assert_string_equal(session_end_reason_name(i), reasons[i]);
        assert_true(session_end_reason_from_name(reasons[i], &why) && why == i);
        assert_int_equal(store_session_get(s, "ses_n", &got, NULL), 0);
        assert_int_equal(got.end_reason, i);
    }
    store_close(s);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(test_db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE sessions SET state = 'hibernating', end_reason = 'x'",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    assert_int_equal(store_open(test_db, &s, NULL), 0);
    assert_int_equal(store_session_get(s, "ses_n", &got, NULL), 0);
    assert_int_equal(got.state, ST_ENDED);
    assert_int_equal(got.end_reason, SESSION_END_NONE);
    uint64_t counts[ST_COUNT_];
    assert_int_equal(store_count_by_state(s, counts, NULL), 0);
    for (SessionState i = ST_NEW; i < ST_COUNT_; i++)
        assert_int_equal(counts[i], 0); /* counted by name: an unknown one is none of them */
    store_close(s);
}

static void
test_events_batches_and_readers(void **state)
{
    (void) state;
    Store *w;
    StoreReaders *readers;
    assert_int_equal(store_open(test_db, &w, NULL), 0);
    SessionRecord r = record("ses_e", "t1", 1);
    assert_int_equal(store_session_insert(w, &r, NULL), 0);
    assert_int_equal(store_readers_new(test_db, 2, &readers, NULL), 0);
    assert_int_equal(store_begin(w, NULL), 0);
    for (uint64_t i = 1; i <= 100; i++) {
        EventRecord e = {.seq = i,
                         .ts_usec = (int64_t) i,
                         .exec_id = 1,
                         .data = (uint8_t *) "abc",
                         .data_len = 3,
                         .attrs = "{\"k\":1}"};
        snprintf(e.type, sizeof(e.type), "exec.stdout");
        assert_int_equal(store_event_append(w, "ses_e", &e, NULL), 0);
    }
    Store *rd = store_reader_acquire(readers);
    EventRecord *v;
    size_t n;
    assert_int_equal(store_events_read(rd, "ses_e", 0, 1000, &v, &n, NULL), 0);
    assert_int_equal(n, 0); /* uncommitted events are invisible to readers */
    event_records_free(v, n);
    assert_int_equal(store_commit(w, NULL), 0);
    assert_int_equal(store_events_read(rd, "ses_e", 40, 1000, &v, &n, NULL), 0);
    assert_int_equal(n, 60);
    assert_int_equal(v[0].seq, 41);
    assert_int_equal(v[59].seq, 100);
    assert_int_equal(v[0].data_len, 3);
    assert_memory_equal(v[0].data, "abc", 3);
    event_records_free(v, n);
    uint64_t max;
    assert_int_equal(store_event_max_seq(w, "ses_e", &max, NULL), 0);
    assert_int_equal(max, 100);
    store_reader_release(readers, rd);
    assert_int_equal(store_session_delete(w, "ses_e", NULL), 0);
    assert_int_equal(store_event_max_seq(w, "ses_e", &max, NULL), 0);
    assert_int_equal(max, 0); /* events go with their session */
    store_readers_free(readers);
    store_close(w);
}

static void
adopt_event(Store *w, uint64_t seq, int64_t ts, const char *type, uint32_t exec_id,
            const char *attrs)
{
    EventRecord e = {.seq = seq, .ts_usec = ts, .exec_id = exec_id, .attrs = (char *) attrs};
    snprintf(e.type, sizeof(e.type), "%s", type);
    assert_int_equal(store_event_append(w, "ses_a", &e, NULL), 0);
}

/* What an adopting start reads back (store_adopt.c): the highest exec id, the execs neither
 * exited nor failed with their deadlines, the lifetime's last recorded deadline; attrs that
 * are not JSON, or values out of range, read as absent, never as a deadline. */
static void
test_adopt_facts(void **state)
{
    (void) state;
    Store *w;
    StoreAdoptFacts f;
    assert_int_equal(store_open(test_db, &w, NULL), 0);
    SessionRecord r = record("ses_a", "t1", 1);
    assert_int_equal(store_session_insert(w, &r, NULL), 0);
    assert_int_equal(store_session_adopt_facts(w, "ses_a", &f, NULL), 0);
    assert_int_equal(f.max_exec_id, 0);
    assert_int_equal(f.n_execs, 0);
    assert_int_equal(f.deadline_wall_usec, 0);
    adopt_event(w, 1, 1000000, "exec.requested", 1, "{\"timeout_ms\":5000}");
    adopt_event(w, 2, 1000000, "exec.exited", 1, "{}");
    adopt_event(w, 3, 2000000, "exec.requested", 2, "{\"timeout_ms\":7000}");
    adopt_event(w, 4, 3000000, "exec.requested", 3, "{\"timeout_ms\":1}");
    adopt_event(w, 5, 3000000, "exec.failed", 3, "{}");
    adopt_event(w, 6, 4000000, "exec.requested", 4, "not json");
    adopt_event(w, 7, 4000000, "exec.requested", 5, "{\"timeout_ms\":-3}");
    adopt_event(w, 8, 5000000, "session.timeout_set", 0, "{\"timeout_ms\":2000}");
    assert_int_equal(store_session_adopt_facts(w, "ses_a", &f, NULL), 0);
    assert_int_equal(f.max_exec_id, 5);
    assert_int_equal(f.n_execs, 1); /* 2 only: 1 exited, 3 failed, 4 and 5 unreadable */
    assert_int_equal(f.execs[0].exec_id, 2);
    assert_int_equal(f.execs[0].deadline_wall_usec, 2000000 + 7000 * 1000);
    assert_int_equal(f.deadline_wall_usec, 5000000 + 2000 * 1000);
    adopt_event(w, 9, 6000000, "session.kept", 0, "{\"deadline_unix_ms\":9000}");
    assert_int_equal(store_session_adopt_facts(w, "ses_a", &f, NULL), 0);
    assert_int_equal(f.deadline_wall_usec, 9000 * 1000); /* the last one recorded wins */
    adopt_event(w, 10, 7000000, "session.kept", 0, "{\"deadline_unix_ms\":1e300}");
    assert_int_equal(store_session_adopt_facts(w, "ses_a", &f, NULL), 0);
    assert_int_equal(f.deadline_wall_usec, 0); /* out of range: none, the record's applies */
    store_close(w);
}

static void
test_render(void **state)
{
    (void) state;
    EventRecord e = {.seq = 7,
                     .ts_usec = 1764454200123456,
                     .exec_id = 2,
                     .data = (uint8_t *) "hi\n",
                     .data_len = 3,
                     .attrs = "{\"pid\":5}"};
    snprintf(e.type, sizeof(e.type), "exec.stdout");
    json_t *o = render_event(&e);
    char *text = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(text, "{\"data\":\"hi\\n\",\"exec_id\":2,\"pid\":5,\"seq\":7,"
                              "\"ts\":\"2025-11-29T22:10:00.123Z\",\"type\":\"exec.stdout\"}");
    free(text);
    json_decref(o);
    uint8_t bin[] = {0xff, 0x00, 0x41};
    e.data = bin;
    e.data_len = sizeof(bin);
    e.attrs = "not json";
    o = render_event(&e);
    assert_string_equal(json_string_value(json_object_get(o, "data_b64")), "/wBB");
    assert_null(json_object_get(o, "data"));
    json_decref(o);
}

/* The stack an HTTP connection thread renders events on (hostd/http: HTTP_THREAD_STACK_BYTES). */
#define CONN_STACK_BYTES ((size_t) 512 << 10)

/* A code.result's attrs as session_code.c stores them, application/json nested depth deep
 * (the attrs nest depth + 2). malloc'd. */
static char *
result_attrs(unsigned depth)
{
    static const char head[] =
        "{\"main\":true,\"data\":{\"text/plain\":\"v\",\"application/json\":";
    static const char tail[] = "},\"context\":1,\"run\":1}";
    size_t n = strlen(head) + 2 * depth + 1 + strlen(tail);
    char *t = malloc(n + 1), *p = t;
    assert_non_null(t);
    p = stpcpy(p, head);
    memset(p, '[', depth);
    p[depth] = '0';
    memset(p + depth + 1, ']', depth);
    strcpy(p + 2 * depth + 1, tail);
    return t;
}

typedef struct {
    const EventRecord *e;
    char *line;
} RenderJob;

/* As routes_events.c does on its connection thread: render, then dump. */
static void *
render_main(void *arg)
{
    RenderJob *j = arg;
    json_t *o = render_event(j->e);
    j->line = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return NULL;
}

static json_t *
render_on_conn_stack(const EventRecord *e)
{
    RenderJob j = {.e = e};
    pthread_attr_t attr;
    pthread_t t;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, CONN_STACK_BYTES), 0);
    assert_int_equal(pthread_create(&t, &attr, render_main, &j), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
    assert_non_null(j.line);
    json_t *o = json_loads(j.line, 0, NULL);
    free(j.line);
    assert_non_null(o);
    return o;
}

/* Events stored before the code kernel's lines were bounded may hold a result nested 2 040
 * deep: parsing and dumping that on a connection thread took the daemon down, at every read
 * of the session's events. Read back from a real SQLite file, twice: the deep event comes
 * without its attrs (attrs_withheld), the one at the bound whole. */
static void
test_render_deep_attrs(void **state)
{
    (void) state;
    Store *w;
    StoreReaders *readers;
    assert_int_equal(store_open(test_db, &w, NULL), 0);
    SessionRecord r = record("ses_d", "t1", 1);
    assert_int_equal(store_session_insert(w, &r, NULL), 0);
    assert_int_equal(store_readers_new(test_db, 1, &readers, NULL), 0);
    const unsigned depths[] = {2040, STORE_EVENT_ATTRS_MAX_DEPTH - 2};
    for (size_t i = 0; i < 2; i++) {
        char *attrs = result_attrs(depths[i]);
        EventRecord e = {.seq = i + 1, .ts_usec = 1, .exec_id = 3, .attrs = attrs};
        snprintf(e.type, sizeof(e.type), "code.result");
        assert_int_equal(store_event_append(w, "ses_d", &e, NULL), 0);
        free(attrs);
    }
    Store *rd = store_reader_acquire(readers);
    for (int pass = 0; pass < 2; pass++) {
        EventRecord *v;
        size_t n;
        assert_int_equal(store_events_read(rd, "ses_d", 0, 10, &v, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_false(store_event_attrs_parsable(&v[0]));
        json_t *o = render_on_conn_stack(&v[0]);
        assert_true(json_is_true(json_object_get(o, "attrs_withheld")));
        assert_null(json_object_get(o, "data"));
        assert_string_equal(json_string_value(json_object_get(o, "type")), "code.result");
        assert_int_equal(json_integer_value(json_object_get(o, "seq")), 1);
        json_decref(o);
        assert_true(store_event_attrs_parsable(&v[1]));
        o = render_on_conn_stack(&v[1]);
        assert_null(json_object_get(o, "attrs_withheld"));
        json_t *j = json_object_get(json_object_get(o, "data"), "application/json");
        for (unsigned d = 0; d < STORE_EVENT_ATTRS_MAX_DEPTH - 2; d++) {
            assert_true(json_is_array(j));
            j = json_array_get(j, 0);
        }
        assert_true(json_is_integer(j));
        json_decref(o);
        event_records_free(v, n);
    }
    store_reader_release(readers, rd);
    store_readers_free(readers);
    store_close(w);
}

typedef struct {
    EventHub *hub;
    uint64_t seq;
    bool ended, known;
} Waiter;

static void *
waiter_main(void *arg)
{
    Waiter *w = arg;
    w->known = eventhub_wait(w->hub, "ses_x", 5, now_usec() + 5 * USEC_PER_SEC, &w->seq, &w->ended);
    return NULL;
}

static void
test_eventhub(void **state)
{
    (void) state;
    EventHub *h;
    uint64_t seq;
    bool ended;
    assert_int_equal(eventhub_new(&h, NULL), 0);
    assert_false(eventhub_wait(h, "ses_x", 0, now_usec(), &seq, &ended)); /* unknown */
    eventhub_publish(h, "ses_x", 5, false);
    uint64_t t0 = now_usec();
    assert_true(eventhub_wait(h, "ses_x", 5, t0 + 100000, &seq, &ended)); /* times out */
    assert_true(now_usec() - t0 >= 90000);
    assert_int_equal(seq, 5);
    Waiter w = {.hub = h};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
    usleep(50000);
    eventhub_publish(h, "ses_x", 9, true);
    pthread_join(t, NULL);
    assert_true(w.known);
    assert_int_equal(w.seq, 9);
    assert_true(w.ended);
    eventhub_free(h);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sessions_roundtrip_and_reopen, test_db_setup,
                                        test_db_teardown),
        cmocka_unit_test_setup_teardown(test_state_and_reason_names, test_db_setup,
                                        test_db_teardown),
        cmocka_unit_test_setup_teardown(test_events_batches_and_readers, test_db_setup,
                                        test_db_teardown),
        cmocka_unit_test_setup_teardown(test_adopt_facts, test_db_setup, test_db_teardown),
        cmocka_unit_test(test_render),
        cmocka_unit_test_setup_teardown(test_render_deep_attrs, test_db_setup, test_db_teardown),
        cmocka_unit_test(test_eventhub),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
