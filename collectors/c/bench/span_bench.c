/* SPDX-License-Identifier: MIT */
/* The hot-path cost of ss_span(), as a ratio against a baseline measured in the same run.
 *
 *   span_bench [BATCHES_PER_RUN] [RUNS]      (defaults 20 and 7)
 *
 * The baseline loop does what any recorder must do at the least: take the lengths of the two
 * names and copy the same bytes ss_span() stores (an 8-byte header, the two times, the names,
 * 8-aligned) into a thread-local 1 MiB array. The span loop calls ss_span() with the same
 * arguments on a client with the default 1 MiB rings and no daemon (the hot path never talks to
 * it). Both are timed in batches of 16384 calls with an untimed pause between batches (25 ms per
 * recording thread), in which the flush thread drains the rings, so nothing is dropped (drops
 * are counted and printed).
 * Each figure is the median over RUNS of (timed loop time / calls), for 1 thread and for 2
 * threads recording at once (per thread). Prints
 * "threads=T span_ns=X baseline_ns=Y ratio=R dropped=D" per thread count, then the single-thread
 * figures as "span_ns=<x> baseline_ns=<y>".
 */
#include "stepscope.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BASE_BYTES (1u << 20) /* the same size as the client's default ring */
#define BATCH 16384L          /* spans per timed batch: ~768 KiB, fits the ring */
#define MAX_RUNS 31

static const char *volatile span_name = "aten::conv2d";
static const char *volatile span_cat = "cpu_op";

static _Thread_local unsigned char base_buf[BASE_BYTES];
static _Thread_local size_t base_pos;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void baseline_record(const char *name, const char *cat, int64_t b, int64_t e)
{
    size_t nl = strlen(name), cl = strlen(cat);
    size_t need = (8 + 24 + nl + cl + 7) & ~(size_t)7;
    if (base_pos + need > BASE_BYTES)
        base_pos = 0;
    unsigned char *p = base_buf + base_pos;
    uint32_t hdr[2] = {(uint32_t)need, (uint32_t)nl};
    int64_t f[3] = {b, e, (int64_t)cl};
    memcpy(p, hdr, sizeof hdr);
    memcpy(p + 8, f, sizeof f);
    memcpy(p + 32, name, nl);
    memcpy(p + 32 + nl, cat, cl);
    base_pos += need;
}

struct job {
    struct ss_client *c; /* NULL: baseline */
    long batches;
    long pause_ms;
    pthread_barrier_t *bar;
    double ns;
};

static void *run(void *p)
{
    struct job *j = p;
    if (j->c) /* the thread's first call makes its ring: not part of the hot path */
        ss_span(j->c, "warm", "warm", 0, 0);
    double spent = 0;
    for (long b = 0; b < j->batches; b++) {
        /* Between batches the flush thread drains the ring (untimed): each batch fits in the
         * ring, as a training step's records do, so no record is dropped. */
        struct timespec pause = {0, j->pause_ms * 1000000L};
        nanosleep(&pause, NULL);
        pthread_barrier_wait(j->bar);
        double t0 = now_s();
        if (j->c) {
            for (long i = 0; i < BATCH; i++)
                ss_span(j->c, span_name, span_cat, i, i + 1000);
        } else {
            for (long i = 0; i < BATCH; i++)
                baseline_record(span_name, span_cat, i, i + 1000);
        }
        spent += now_s() - t0;
    }
    j->ns = spent * 1e9 / (double)(BATCH * j->batches);
    return NULL;
}

/* One run with nthreads threads; returns the mean of the per-thread ns per op. */
static double one_run(struct ss_client *c, int nthreads, long batches)
{
    pthread_t th[2];
    struct job jobs[2];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    for (int i = 0; i < nthreads; i++) {
        jobs[i] = (struct job){c, batches, 25L * nthreads, &bar, 0};
        pthread_create(&th[i], NULL, run, &jobs[i]);
    }
    double sum = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        sum += jobs[i].ns;
    }
    pthread_barrier_destroy(&bar);
    return sum / nthreads;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20;
    int runs = argc > 2 ? atoi(argv[2]) : 7;
    if (n < 1 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "usage: %s [BATCHES_PER_RUN >= 1] [RUNS 1..%d]\n", argv[0], MAX_RUNS);
        return 2;
    }
    struct ss_options o;
    ss_options_init(&o);
    o.socket_path = "/nonexistent/stepscope-bench.sock";
    o.job = "span_bench";
    o.buffer_bytes = (size_t)16 << 20; /* no daemon: past this the flush thread drops */
    o.close_timeout_ms = 1;
    double s1 = 0, b1 = 0;
    for (int t = 1; t <= 2; t++) {
        double span[MAX_RUNS], base[MAX_RUNS];
        uint64_t dropped = 0;
        for (int r = 0; r < runs; r++) {
            struct ss_client *c = ss_client_new(&o); /* fresh rings every run */
            if (!c)
                return 1;
            base[r] = one_run(NULL, t, n);
            span[r] = one_run(c, t, n);
            struct ss_client_stats st;
            ss_stats(c, &st);
            dropped += st.dropped_ring_full;
            ss_client_free(c);
        }
        double sm = median(span, runs), bm = median(base, runs);
        printf("threads=%d span_ns=%.1f baseline_ns=%.1f ratio=%.2f dropped=%llu\n", t, sm, bm,
               sm / bm, (unsigned long long)dropped);
        if (t == 1) {
            s1 = sm;
            b1 = bm;
        }
    }
    printf("span_ns=%.1f baseline_ns=%.1f\n", s1, b1);
    return 0;
}
