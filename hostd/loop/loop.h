/* The daemon's event loop: one thread owns all mutable daemon state and runs here.
 *
 * epoll for fds, a min-heap of monotonic timers, and loop_post() for other threads (the
 * worker queue, libvirt event thread) to hand work back to the loop thread through an
 * eventfd. Nothing in a callback may block: blocking libvirt/libguestfs calls go to WorkQueue.
 * Only loop_post() and loop_quit() may be called from other threads. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "error.h"

typedef struct Loop Loop;
typedef struct LoopSource LoopSource;
typedef uint64_t TimerId; /* 0 is never a valid id */

typedef void (*LoopFdFn)(LoopSource *s, int fd, uint32_t events, void *userdata);
typedef void (*LoopTimerFn)(Loop *l, void *userdata);
typedef void (*LoopPostFn)(void *userdata);

int loop_new(Loop **ret, Error **errp);
/* Frees the loop; sources still registered are freed too (their fds are not closed). */
void loop_free(Loop *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(Loop, loop_free)

/* Watches fd for events (EPOLLIN/EPOLLOUT/...). The loop does not own fd. */
int loop_watch_fd(Loop *l, int fd, uint32_t events, LoopFdFn fn, void *userdata,
                  LoopSource **ret, Error **errp);
int loop_source_set_events(LoopSource *s, uint32_t events);
Loop *loop_source_loop(LoopSource *s);
/* Stops watching and frees the source; safe from inside any callback, including its own. */
void loop_source_free(LoopSource *s);

/* Calls fn once at the monotonic time deadline_usec (see timeutil.h now_usec()). */
TimerId loop_add_timer(Loop *l, uint64_t deadline_usec, LoopTimerFn fn, void *userdata);
/* Cancels a pending timer; a timer that already fired or was cancelled is ignored. */
void loop_cancel_timer(Loop *l, TimerId id);

/* Thread-safe: runs fn(userdata) on the loop thread soon. Returns -1 only on OOM. */
int loop_post(Loop *l, LoopPostFn fn, void *userdata);

/* Runs until loop_quit() is called during this run (a loop may be run again, e.g. in slices);
 * returns the code given to it. */
int loop_run(Loop *l);
/* Thread-safe. */
void loop_quit(Loop *l, int code);
