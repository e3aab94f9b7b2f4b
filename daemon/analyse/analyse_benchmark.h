/* SPDX-License-Identifier: MIT */
/*
 * analyse_benchmark.h: paddle.profiler's benchmark timer (benchmark.c).
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_BENCHMARK_H
#define STEPSCOPE_ANALYSE_BENCHMARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- Benchmark (benchmark.c) -------------------------------------------------------------------
 * paddle.profiler's benchmark timer (python/paddle/profiler/timer.py): per step the batch cost
 * (the step's time), the reader cost (its data loading) and the samples; the first `skip`
 * steps are warm-up and not counted (Paddle skips 10). */

#define ANALYSE_BENCH_SKIP_DEFAULT 10

struct analyse_bench_step {
    int64_t step;
    int64_t batch_ns;  /* > 0, else the step is ignored */
    int64_t reader_ns; /* < 0: unknown */
    int64_t samples;   /* < 0: unknown (ips is then steps/s) */
};

struct analyse_bench_stat {
    double avg, max, min; /* seconds (costs) or samples/s, steps/s (ips) */
};

struct analyse_benchmark {
    size_t n_steps;       /* steps given with batch_ns > 0 */
    size_t n_skipped;     /* warm-up steps skipped (min(skip, n_steps)) */
    size_t n_counted;     /* n_steps - n_skipped */
    bool has_reader;      /* every counted step has a reader cost */
    bool samples_mode;    /* every counted step has samples: ips in samples/s, else steps/s */
    struct analyse_bench_stat reader_cost; /* zero when !has_reader */
    struct analyse_bench_stat batch_cost;
    struct analyse_bench_stat ips;        /* avg = samples (or steps) / total batch time */
    double reader_ratio_pct;              /* 100 * reader avg / batch avg */
};

/* Computes the benchmark of steps[0..n) in execution order. Returns 0 and fills *ret (all zero
 * when no step is counted), -EINVAL on NULL arguments. Pure. */
int analyse_benchmark_compute(const struct analyse_bench_step *steps, size_t n, size_t skip,
                              struct analyse_benchmark *ret);

#endif
