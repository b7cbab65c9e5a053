/* A small pool of worker threads for blocking calls (libvirt, libguestfs, disk copies).
 * work() runs on a worker thread and must not touch loop-owned state; done() then runs on
 * the loop thread with the same userdata. Jobs run in submission order per free worker. */
#pragma once

#include "loop.h"

typedef struct WorkQueue WorkQueue;
typedef void (*WorkFn)(void *userdata);

int workq_new(Loop *l, unsigned n_threads, WorkQueue **ret, Error **errp);
/* Waits for running jobs, drops queued ones (their done() is not called), joins threads. */
void workq_free(WorkQueue *q);
/* Returns -1 only on OOM or after workq_free() began. done may be NULL. */
int workq_submit(WorkQueue *q, WorkFn work, WorkFn done, void *userdata);
/* Jobs queued or running (for metrics and bounded concurrency). */
unsigned workq_pending(WorkQueue *q);
