/* SPDX-License-Identifier: MIT */
/* A training loop stand-in for tests/test_c_client.py, run against the real stepscoped.
 *
 *   integ_client SOCKET JOB N_STEPS PAUSE_AT
 *
 * Records N_STEPS steps, each with the phases dataloader/forward/backward/optimizer, two spans,
 * one counter and one queue sample, while a second thread records one span per step. After
 * PAUSE_AT steps (if >= 0) it prints "paused" and waits for a line on stdin, so the test can
 * kill -9 and restart the daemon mid-stream. Then ss_flush() (60 s) and ss_client_free(), and
 * one line "done flush=<r> free=<r> records=<n> dropped=<n> acked=<n> reconnects=<n>
 * errors=<n>". INTEG_STEP_US=<us> sleeps that long after each step (default: 1 ms every 50
 * steps), so that a test can kill the daemon while records are being made. Exit 0 only when
 * the flush and the free succeeded and nothing was dropped.
 * Expected in the daemon: steps N, spans 3N, events 4N, queue_samples N.
 */
#include "stepscope.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct worker {
    struct ss_client *c;
    _Atomic long done_steps; /* the main thread's progress */
    long n;
};

static void *worker_main(void *p)
{
    struct worker *w = p;
    for (long i = 0; i < w->n; i++) {
        while (atomic_load(&w->done_steps) <= i)
            usleep(100);
        int64_t t = ss_now_ns();
        ss_span(w->c, "worker \"copy\"", "data", t, t + 500);
    }
    return NULL;
}

static void phase(struct ss_client *c, const char *name, const char *op)
{
    ss_phase_begin(c, name);
    if (op) {
        int64_t t = ss_now_ns();
        ss_span(c, op, "cpu_op", t, t + 2000);
    }
    ss_phase_end(c);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s SOCKET JOB N_STEPS PAUSE_AT\n", argv[0]);
        return 2;
    }
    long n = atol(argv[3]), pause_at = atol(argv[4]);
    const char *e = getenv("INTEG_STEP_US");
    long step_us = e ? atol(e) : 0;
    struct ss_options o;
    ss_options_init(&o);
    o.socket_path = argv[1];
    o.job = argv[2];
    o.rank = 0;
    o.world_size = 1;
    o.framework = "c";
    struct ss_client *c = ss_client_new(&o);
    if (!c)
        return 3;
    struct worker w = {c, 0, n};
    pthread_t th;
    if (pthread_create(&th, NULL, worker_main, &w))
        return 3;
    for (long i = 0; i < n; i++) {
        if (i == pause_at) {
            printf("paused\n");
            fflush(stdout);
            char line[64];
            if (!fgets(line, sizeof line, stdin))
                return 4;
        }
        ss_step_begin(c, i);
        phase(c, "dataloader", NULL);
        ss_queue(c, "prefetch", i % 4, 4);
        phase(c, "forward", "aten::conv2d");
        phase(c, "backward", "aten::conv2d_backward");
        phase(c, "optimizer", NULL);
        ss_counter(c, "loss", 1.0 / (double)(i + 1));
        ss_step_end(c, 32);
        atomic_store(&w.done_steps, i + 1);
        if (step_us)
            usleep((useconds_t)step_us);
        else if (i % 50 == 0)
            usleep(1000);
    }
    pthread_join(th, NULL);
    int fr = ss_flush(c, 60 * 1000000000LL);
    struct ss_client_stats st;
    ss_stats(c, &st);
    int cr = ss_client_free(c);
    printf("done flush=%d free=%d records=%" PRIu64 " dropped=%" PRIu64 " acked=%" PRIu64
           " reconnects=%" PRIu64 " errors=%" PRIu64 "\n",
           fr, cr, st.records, st.dropped, st.acked, st.reconnects, st.errors_from_daemon);
    return fr == 0 && cr == 0 && st.dropped == 0 ? 0 : 1;
}
