/* epoll + timer heap + posted callbacks. See loop.h. Limits: none beyond memory; the timer
 * heap grows by doubling and cancellation is a linear scan (hundreds of timers, not millions). */
#include "loop.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "timeutil.h"

#define LOOP_MAX_EVENTS 64

struct LoopSource {
    Loop *loop;
    int fd;
    LoopFdFn fn;
    void *userdata;
    bool dead;
    LoopSource *next_dead;
};

typedef struct {
    uint64_t deadline_usec;
    TimerId id;
    LoopTimerFn fn;
    void *userdata;
} Timer;

typedef struct Post {
    LoopPostFn fn;
    void *userdata;
    struct Post *next;
} Post;

struct Loop {
    int epfd;
    int wakefd;
    Timer *timers;
    size_t n_timers, cap_timers;
    TimerId next_timer_id;
    LoopSource *dead; /* freed after the current dispatch round */
    pthread_mutex_t post_lock;
    Post *posts, **posts_tail;
    bool quit;
    int quit_code;
};

int
loop_new(Loop **ret, Error **errp)
{
    Loop *l = calloc(1, sizeof(*l));
    if (!l)
        return error_set(errp, E_INTERNAL, ENOMEM, "loop");
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&l->post_lock, NULL);
    l->posts_tail = &l->posts;
    l->next_timer_id = 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL}; /* NULL = the wake fd */
    if (l->epfd < 0 || l->wakefd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &ev) < 0) {
        int e = errno;
        loop_free(l);
        return error_set(errp, E_INTERNAL, e, "create event loop");
    }
    *ret = l;
    return 0;
}

static void
loop_reap_dead(Loop *l)
{
    while (l->dead) {
        LoopSource *s = l->dead;
        l->dead = s->next_dead;
        free(s);
    }
}

void
loop_free(Loop *l)
{
    if (!l)
        return;
    loop_reap_dead(l);
    for (Post *p = l->posts; p;) {
        Post *next = p->next;
        free(p);
        p = next;
    }
    free(l->timers);
    safe_close(l->epfd);
    safe_close(l->wakefd);
    pthread_mutex_destroy(&l->post_lock);
    free(l);
}

int
loop_watch_fd(Loop *l, int fd, uint32_t events, LoopFdFn fn, void *userdata, LoopSource **ret,
              Error **errp)
{
    LoopSource *s = calloc(1, sizeof(*s));
    if (!s)
        return error_set(errp, E_INTERNAL, ENOMEM, "loop source");
    *s = (LoopSource){.loop = l, .fd = fd, .fn = fn, .userdata = userdata};
    struct epoll_event ev = {.events = events, .data.ptr = s};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int e = errno;
        free(s);
        return error_set(errp, E_INTERNAL, e, "epoll add fd %d", fd);
    }
    *ret = s;
    return 0;
}

int
loop_source_set_events(LoopSource *s, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = s};
    return epoll_ctl(s->loop->epfd, EPOLL_CTL_MOD, s->fd, &ev);
}

Loop *
loop_source_loop(LoopSource *s)
{
    return s->loop;
}

void
loop_source_free(LoopSource *s)
{
    if (!s || s->dead)
        return;
    (void) epoll_ctl(s->loop->epfd, EPOLL_CTL_DEL, s->fd, NULL);
    s->dead = true;
    s->next_dead = s->loop->dead; /* events already fetched may still point at it */
    s->loop->dead = s;
}

/* ------------------------------------------------------------------ timers (min-heap) */

static void
heap_swap(Timer *a, Timer *b)
{
    Timer t = *a;
    *a = *b;
    *b = t;
}

static void
heap_sift_up(Timer *h, size_t i)
{
    while (i > 0 && h[(i - 1) / 2].deadline_usec > h[i].deadline_usec) {
        heap_swap(&h[(i - 1) / 2], &h[i]);
        i = (i - 1) / 2;
    }
}

static void
heap_sift_down(Timer *h, size_t n, size_t i)
{
    for (;;) {
        size_t m = i, a = 2 * i + 1, b = 2 * i + 2;
        if (a < n && h[a].deadline_usec < h[m].deadline_usec)
            m = a;
        if (b < n && h[b].deadline_usec < h[m].deadline_usec)
            m = b;
        if (m == i)
            return;
        heap_swap(&h[m], &h[i]);
        i = m;
    }
}

static void
heap_remove_at(Loop *l, size_t i)
{
    l->timers[i] = l->timers[--l->n_timers];
    if (i < l->n_timers) {
        heap_sift_down(l->timers, l->n_timers, i);
        heap_sift_up(l->timers, i);
    }
}

TimerId
loop_add_timer(Loop *l, uint64_t deadline_usec, LoopTimerFn fn, void *userdata)
{
    if (l->n_timers == l->cap_timers) {
        size_t cap = l->cap_timers ? l->cap_timers * 2 : 64;
        Timer *t = realloc(l->timers, cap * sizeof(*t));
        if (!t)
            abort(); /* a daemon that cannot arm its deadlines cannot keep its promises */
        l->timers = t;
        l->cap_timers = cap;
    }
    TimerId id = l->next_timer_id++;
    l->timers[l->n_timers] = (Timer){deadline_usec, id, fn, userdata};
    heap_sift_up(l->timers, l->n_timers++);
    return id;
}

void
loop_cancel_timer(Loop *l, TimerId id)
{
    if (id == 0)
        return;
    for (size_t i = 0; i < l->n_timers; i++)
        if (l->timers[i].id == id) {
            heap_remove_at(l, i);
            return;
        }
}

static void
loop_fire_timers(Loop *l)
{
    uint64_t now = now_usec();
    while (l->n_timers > 0 && l->timers[0].deadline_usec <= now && !l->quit) {
        Timer t = l->timers[0];
        heap_remove_at(l, 0);
        t.fn(l, t.userdata);
    }
}

static int
loop_next_timeout_ms(Loop *l)
{
    if (l->n_timers == 0)
        return -1;
    uint64_t now = now_usec();
    if (l->timers[0].deadline_usec <= now)
        return 0;
    uint64_t ms = (l->timers[0].deadline_usec - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC;
    return ms > 60000 ? 60000 : (int) ms;
}

/* ------------------------------------------------------------------ posts */

int
loop_post(Loop *l, LoopPostFn fn, void *userdata)
{
    Post *p = malloc(sizeof(*p));
    if (!p)
        return -1;
    *p = (Post){fn, userdata, NULL};
    pthread_mutex_lock(&l->post_lock);
    *l->posts_tail = p;
    l->posts_tail = &p->next;
    pthread_mutex_unlock(&l->post_lock);
    uint64_t one = 1;
    (void) !write(l->wakefd, &one, sizeof(one));
    return 0;
}

static void
loop_run_posts(Loop *l)
{
    uint64_t v;
    (void) !read(l->wakefd, &v, sizeof(v));
    pthread_mutex_lock(&l->post_lock);
    Post *p = l->posts;
    l->posts = NULL;
    l->posts_tail = &l->posts;
    pthread_mutex_unlock(&l->post_lock);
    while (p) {
        Post *next = p->next;
        p->fn(p->userdata);
        free(p);
        p = next;
    }
}

void
loop_quit(Loop *l, int code)
{
    l->quit_code = code;
    __atomic_store_n(&l->quit, true, __ATOMIC_SEQ_CST);
    uint64_t one = 1;
    (void) !write(l->wakefd, &one, sizeof(one));
}

int
loop_run(Loop *l)
{
    struct epoll_event evs[LOOP_MAX_EVENTS];

    __atomic_store_n(&l->quit, false, __ATOMIC_SEQ_CST); /* each run waits for its own quit */
    while (!__atomic_load_n(&l->quit, __ATOMIC_SEQ_CST)) {
        int n = epoll_wait(l->epfd, evs, LOOP_MAX_EVENTS, loop_next_timeout_ms(l));
        if (n < 0 && errno != EINTR)
            return -1;
        for (int i = 0; i < n && !l->quit; i++) {
            LoopSource *s = evs[i].data.ptr;
            if (!s)
                loop_run_posts(l);
            else if (!s->dead)
                s->fn(s, s->fd, evs[i].events, s->userdata);
        }
        loop_fire_timers(l);
        loop_reap_dead(l);
    }
    return l->quit_code;
}
