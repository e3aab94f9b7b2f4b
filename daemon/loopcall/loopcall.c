/* SPDX-License-Identifier: MIT */
/* Run a function on the loop thread and wait for its answer (loopcall.h). */
#include <errno.h>
#include <time.h>

#include "loopcall.h"

#include "../../lib/clock.h"

/* One waiting call, on its caller's stack: it belongs to the loop from taken until done. */
struct loopcall_req {
    struct loopcall_req *next;
    void *arg;
    int result;
    bool taken; /* the loop took it: its caller waits for done, whatever the time */
    bool done;
};

/* Loop thread: takes the queue under the lock, runs it without, answers under it. */
static void on_async(uv_async_t *h)
{
    struct loopcall *lc = h->data;
    pthread_mutex_lock(&lc->lock);
    struct loopcall_req *list = lc->queue;
    lc->queue = NULL;
    for (struct loopcall_req *q = list; q; q = q->next)
        q->taken = true;
    pthread_mutex_unlock(&lc->lock);
    for (struct loopcall_req *q = list; q; q = q->next)
        q->result = lc->fn(lc->ud, q->arg);
    pthread_mutex_lock(&lc->lock);
    for (struct loopcall_req *q = list, *next; q; q = next) {
        next = q->next; /* q belongs to its caller once done */
        q->done = true;
    }
    pthread_cond_broadcast(&lc->answered);
    pthread_mutex_unlock(&lc->lock);
}

int loopcall_init(struct loopcall *lc, uv_loop_t *loop, loopcall_fn fn, void *ud)
{
    *lc = (struct loopcall){.fn = fn, .ud = ud};
    pthread_condattr_t ca;
    int r = pthread_condattr_init(&ca);
    if (r != 0)
        return -r;
    r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* deadlines by clock_mono_ns() */
    if (r == 0)
        r = pthread_cond_init(&lc->answered, &ca);
    pthread_condattr_destroy(&ca);
    if (r != 0)
        return -r;
    r = pthread_mutex_init(&lc->lock, NULL);
    if (r != 0) {
        pthread_cond_destroy(&lc->answered);
        return -r;
    }
    r = uv_async_init(loop, &lc->async, on_async);
    if (r < 0) {
        pthread_mutex_destroy(&lc->lock);
        pthread_cond_destroy(&lc->answered);
        return r;
    }
    lc->async.data = lc;
    lc->open = true;
    return 0;
}

int loopcall_call(struct loopcall *lc, void *arg, int64_t wait_ns)
{
    struct loopcall_req q = {.arg = arg};
    int64_t deadline = clock_mono_ns() + wait_ns;
    struct timespec ts = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
    pthread_mutex_lock(&lc->lock);
    if (!lc->open) {
        pthread_mutex_unlock(&lc->lock);
        return -ESHUTDOWN;
    }
    q.next = lc->queue;
    lc->queue = &q;
    uv_async_send(&lc->async);
    while (!q.done) {
        if (q.taken) {
            pthread_cond_wait(&lc->answered, &lc->lock);
        } else if (pthread_cond_timedwait(&lc->answered, &lc->lock, &ts) == ETIMEDOUT &&
                   !q.taken && !q.done) {
            /* Still queued: unlink it, so the loop never runs it. */
            struct loopcall_req **p = &lc->queue;
            while (*p != &q)
                p = &(*p)->next;
            *p = q.next;
            q.result = -ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&lc->lock);
    return q.result;
}

void loopcall_close(struct loopcall *lc)
{
    pthread_mutex_lock(&lc->lock);
    bool was_open = lc->open;
    lc->open = false;
    for (struct loopcall_req *q = lc->queue; q; q = q->next) {
        q->result = -ESHUTDOWN;
        q->done = true;
    }
    lc->queue = NULL;
    pthread_cond_broadcast(&lc->answered);
    pthread_mutex_unlock(&lc->lock);
    if (was_open)
        uv_close((uv_handle_t *)&lc->async, NULL);
}

void loopcall_destroy(struct loopcall *lc)
{
    pthread_mutex_destroy(&lc->lock);
    pthread_cond_destroy(&lc->answered);
}
