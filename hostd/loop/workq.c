/* Worker threads: see workq.h. */
#include "workq.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct Job {
    WorkFn work, done;
    void *userdata;
    WorkQueue *q;
    struct Job *next;
} Job;

struct WorkQueue {
    Loop *loop;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    Job *head, **tail;
    unsigned pending;
    bool stopping;
    unsigned n_threads;
    pthread_t threads[];
};

static void
job_done_on_loop(void *userdata)
{
    Job *j = userdata;
    if (j->done)
        j->done(j->userdata);
    free(j);
}

static void *
worker_main(void *arg)
{
    WorkQueue *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (!q->head && !q->stopping)
            pthread_cond_wait(&q->cond, &q->lock);
        if (q->stopping) {
            pthread_mutex_unlock(&q->lock);
            return NULL;
        }
        Job *j = q->head;
        q->head = j->next;
        if (!q->head)
            q->tail = &q->head;
        pthread_mutex_unlock(&q->lock);

        j->work(j->userdata);
        pthread_mutex_lock(&q->lock);
        q->pending--;
        pthread_mutex_unlock(&q->lock);
        if (loop_post(q->loop, job_done_on_loop, j) < 0)
            abort(); /* the completion is the only owner of the job's result */
    }
}

int
workq_new(Loop *l, unsigned n_threads, WorkQueue **ret, Error **errp)
{
    WorkQueue *q = calloc(1, sizeof(*q) + n_threads * sizeof(pthread_t));
    if (!q)
        return error_set(errp, E_INTERNAL, ENOMEM, "work queue");
    q->loop = l;
    q->tail = &q->head;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL);
    for (unsigned i = 0; i < n_threads; i++) {
        int r = pthread_create(&q->threads[i], NULL, worker_main, q);
        if (r != 0) {
            workq_free(q);
            return error_set(errp, E_INTERNAL, r, "start worker thread");
        }
        q->n_threads++;
    }
    *ret = q;
    return 0;
}

void
workq_free(WorkQueue *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->lock);
    q->stopping = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    for (unsigned i = 0; i < q->n_threads; i++)
        pthread_join(q->threads[i], NULL);
    for (Job *j = q->head; j;) {
        Job *next = j->next;
        free(j);
        j = next;
    }
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->cond);
    free(q);
}

int
workq_submit(WorkQueue *q, WorkFn work, WorkFn done, void *userdata)
{
    Job *j = malloc(sizeof(*j));
    if (!j)
        return -1;
    *j = (Job){work, done, userdata, q, NULL};
    pthread_mutex_lock(&q->lock);
    if (q->stopping) {
        pthread_mutex_unlock(&q->lock);
        free(j);
        return -1;
    }
    *q->tail = j;
    q->tail = &j->next;
    q->pending++;
    pthread_cond_signal(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

unsigned
workq_pending(WorkQueue *q)
{
    pthread_mutex_lock(&q->lock);
    unsigned n = q->pending;
    pthread_mutex_unlock(&q->lock);
    return n;
}
