/* SPDX-License-Identifier: MIT */
/*
 * loopcall: run a function on the libuv loop's thread for another thread, which waits for its
 * answer. The loop thread alone feeds live and changes the store's tables, so an HTTP thread that
 * needs either (DELETE of a job, live's reload of an evicted job) hands its request over: it
 * queues it, wakes the loop with a uv_async, and waits on a condition variable. The loop takes
 * every queued request at once, runs each outside the lock (a replay may take a while, and other
 * threads must be able to queue meanwhile), then answers them all.
 *
 * A request the loop has not taken within the caller's wait gives up (-ETIMEDOUT) and is never
 * run; one it took is waited for to the end, so a result is never lost and fn never runs for a
 * caller that has gone. Requests queued together run newest first.
 *
 * Threading: loopcall_init() and loopcall_close() on the loop thread (or before the loop runs);
 * fn runs on the loop thread, without the lock; loopcall_call() on any other thread (on the loop
 * thread it would wait for itself). loopcall_destroy() once no thread can call loopcall_call().
 * The struct is the caller's storage and must not move after loopcall_init().
 */
#ifndef STEPSCOPE_LOOPCALL_H
#define STEPSCOPE_LOOPCALL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

/* Runs one request on the loop thread: returns its result (by convention 0 or a negative errno). */
typedef int (*loopcall_fn)(void *ud, void *arg);

struct loopcall_req;

struct loopcall {
    uv_async_t async;           /* async.data == this */
    loopcall_fn fn;
    void *ud;
    pthread_mutex_t lock;       /* guards queue and open */
    pthread_cond_t answered;    /* a batch of requests was answered (CLOCK_MONOTONIC) */
    struct loopcall_req *queue; /* queued, not yet taken by the loop */
    bool open;                  /* requests are taken; false after loopcall_close() */
};

/* Sets lc up on loop to run fn(ud, arg) for each loopcall_call(). Returns 0 or a negative errno
 * (from libuv or pthreads; nothing is left to undo then). */
int loopcall_init(struct loopcall *lc, uv_loop_t *loop, loopcall_fn fn, void *ud);

/* Queues arg for fn on the loop thread and waits for the answer. Returns fn's result; -ETIMEDOUT
 * if the loop did not take the request within wait_ns (it is then never run); -ESHUTDOWN if lc is
 * closed, or closes before taking the request. */
int loopcall_call(struct loopcall *lc, void *arg, int64_t wait_ns);

/* Stops taking requests: those queued and later ones answer -ESHUTDOWN. Closes the async handle
 * (run the loop once more to finish closing it). Idempotent. Loop thread. */
void loopcall_close(struct loopcall *lc);

/* Frees the mutex and condition variable, after loopcall_close() and once no thread can be in or
 * enter loopcall_call() (e.g. after the HTTP server stopped). */
void loopcall_destroy(struct loopcall *lc);

#endif
