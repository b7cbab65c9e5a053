/* Unit tests of the event loop and the worker queue (hostd/loop). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "loop.h"
#include "timeutil.h"
#include "workq.h"

typedef struct {
    Loop *loop;
    char order[16];
    int n;
} Trace;

static void
mark(Trace *t, char c)
{
    t->order[t->n++] = c;
    t->order[t->n] = '\0';
}

static void on_a(Loop *l, void *ud) { (void) l; mark(ud, 'a'); }
static void on_b(Loop *l, void *ud) { (void) l; mark(ud, 'b'); }
static void on_c(Loop *l, void *ud) { (void) l; mark(ud, 'c'); }
static void on_quit(Loop *l, void *ud) { mark(ud, 'q'); loop_quit(l, 7); }

static void
test_timers_fire_in_deadline_order(void **state)
{
    (void) state;
    Loop *l;
    Trace t = {0};
    assert_int_equal(loop_new(&l, NULL), 0);
    uint64_t now = now_usec();
    loop_add_timer(l, now + 30000, on_c, &t);
    loop_add_timer(l, now + 10000, on_a, &t);
    TimerId b = loop_add_timer(l, now + 20000, on_b, &t);
    loop_add_timer(l, now + 40000, on_quit, &t);
    loop_cancel_timer(l, b);
    loop_cancel_timer(l, 12345); /* unknown: ignored */
    assert_int_equal(loop_run(l), 7);
    assert_string_equal(t.order, "acq");
    /* A loop runs again after a quit (tests and benchmarks run it in slices). */
    loop_add_timer(l, now_usec() + 1000, on_quit, &t);
    assert_int_equal(loop_run(l), 7);
    assert_string_equal(t.order, "acqq");
    loop_free(l);
}

typedef struct {
    LoopSource *src;
    int reads;
} PipeState;

static void
on_pipe(LoopSource *s, int fd, uint32_t events, void *ud)
{
    PipeState *p = ud;
    char c;
    (void) events;
    assert_int_equal(read(fd, &c, 1), 1);
    p->reads++;
    loop_source_free(s); /* freeing itself inside its callback must be safe */
    p->src = NULL;
    loop_quit(loop_source_loop(s), 0);
}

static void
test_fd_source_frees_itself(void **state)
{
    (void) state;
    Loop *l;
    int fds[2];
    PipeState p = {0};
    assert_int_equal(loop_new(&l, NULL), 0);
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(loop_watch_fd(l, fds[0], EPOLLIN, on_pipe, &p, &p.src, NULL), 0);
    assert_int_equal(write(fds[1], "xy", 2), 2); /* two bytes, one callback */
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(p.reads, 1);
    loop_free(l);
    close(fds[0]);
    close(fds[1]);
}

typedef struct {
    Loop *loop;
    int worked;
    int done;
    pthread_t worker_tid;
} WorkState;

static void
work_fn(void *ud)
{
    WorkState *w = ud;
    __atomic_add_fetch(&w->worked, 1, __ATOMIC_SEQ_CST);
}

static void
done_fn(void *ud)
{
    WorkState *w = ud;
    if (++w->done == 20)
        loop_quit(w->loop, 0);
}

static void
test_workq_completes_on_loop(void **state)
{
    (void) state;
    Loop *l;
    WorkQueue *q;
    WorkState w = {0};
    assert_int_equal(loop_new(&l, NULL), 0);
    w.loop = l;
    assert_int_equal(workq_new(l, 3, &q, NULL), 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(workq_submit(q, work_fn, done_fn, &w), 0);
    assert_int_equal(loop_run(l), 0);
    assert_int_equal(w.worked, 20);
    assert_int_equal(w.done, 20);
    assert_int_equal(workq_pending(q), 0);
    workq_free(q);
    loop_free(l);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timers_fire_in_deadline_order),
        cmocka_unit_test(test_fd_source_frees_itself),
        cmocka_unit_test(test_workq_completes_on_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
