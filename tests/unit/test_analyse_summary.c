/* SPDX-License-Identifier: MIT */
/*
 * Tests of analyse's Paddle summaries and benchmark (summary.c). Small hand-built traces whose
 * expected figures are worked out in the comments with Paddle's rules
 * (python/paddle/profiler/profiler_statistic.py, timer.py). The comparison with Paddle's own
 * summary() on a real run is tests/frameworks/test_paddle_summary.py.
 */
#include "analyse_benchmark.h"
#include "analyse_roles.h"
#include "analyse_steptrace.h"
#include "analyse_memsum.h"
#include "analyse_summary.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct analyse_span mk(int64_t ts, int64_t dur, int64_t pid, int64_t tid, const char *cat,
                              const char *name)
{
    struct analyse_span s = {
        .ts_ns = ts, .dur_ns = dur, .name = name, .name_len = strlen(name), .cat = cat,
        .cat_len = strlen(cat), .pid = pid, .tid = tid, .correlation = -1, .external_id = -1,
    };
    s.role = analyse_role_of(&s, NULL);
    return s;
}

static const struct analyse_sum_type_row *type_row(const struct analyse_summary *s,
                                                   enum analyse_sum_type t, bool device)
{
    for (size_t i = 0; i < s->n_types; i++)
        if (s->types[i].type == t && s->types[i].device == device)
            return &s->types[i];
    return NULL;
}

static const struct analyse_sum_row *find_row(const struct analyse_sum_row *rows, size_t n,
                                              const char *name, size_t parent_or_any)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].name_len == strlen(name) && memcmp(rows[i].name, name, rows[i].name_len) == 0 &&
            (parent_or_any == SIZE_MAX - 1 || rows[i].parent == parent_or_any))
            return &rows[i];
    return NULL;
}

#define ANY (SIZE_MAX - 1)

START_TEST(test_summary_name_suffix)
{
    static const struct {
        const char *in;
        size_t want;
    } c[] = {
        {"ProfileStep#1[1.090 ms]", 13}, {"gaussian dygraph[3.1 us]", 16}, {"x [12 ns]", 1},
        {"op[5 s]", 2}, {"op[5 ks]", 8}, {"op[ms]", 6}, {"op[1.0ms]", 9}, {"a[1 us]b", 8},
        {"plain", 5}, {"[1 us]", 0}, {"", 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        ck_assert_msg(analyse_sum_name_len(c[i].in, strlen(c[i].in)) == c[i].want, "%s", c[i].in);
}
END_TEST

START_TEST(test_summary_types)
{
    struct analyse_span a = mk(0, 1, 1, 1, "OperatorInner", "x");
    ck_assert_int_eq(analyse_sum_type_of(&a), ANALYSE_SUM_OPERATOR_INNER);
    a = mk(0, 1, 1, 1, "cpu_op", "aten::mm");
    ck_assert_int_eq(analyse_sum_type_of(&a), ANALYSE_SUM_OPERATOR);
    a = mk(0, 1, 1, 1, "kernel", "volta_sgemm");
    ck_assert_int_eq(analyse_sum_type_of(&a), ANALYSE_SUM_KERNEL);
    a = mk(0, 1, 1, 1, "cuda_runtime", "cudaLaunchKernel");
    ck_assert_int_eq(analyse_sum_type_of(&a), ANALYSE_SUM_CUDA_RUNTIME);
    a = mk(0, 1, 1, 1, "user_annotation", "my_range");
    ck_assert_int_eq(analyse_sum_type_of(&a), ANALYSE_SUM_PYTHON_USER_DEFINED);
    a = mk(0, 1, 1, 1, "", "ProfilerStep#3");
    ck_assert_int_eq(analyse_sum_type_of(&a), ANALYSE_SUM_PROFILE_STEP);
    ck_assert_str_eq(analyse_sum_type_names[ANALYSE_SUM_DYGRAPH_KERNEL_LAUNCH],
                     "DygraphKernelLaunch");
}
END_TEST

START_TEST(test_summary_union)
{
    int64_t s[] = {10, 0, 5, 40, 50};
    int64_t e[] = {20, 8, 12, 45, 50};
    /* [0,20) ∪ [40,45) = 25; the empty [50,50) adds nothing. */
    ck_assert_int_eq(analyse_sum_union_ns(s, e, 5), 25);
    ck_assert_int_eq(analyse_sum_union_ns(NULL, NULL, 0), 0);
}
END_TEST

/* Two steps on the Python thread, operators on the C++ thread of the same process (Paddle's
 * export names them "29559(Python)" and "29559(C++)"; the caller maps both to tid 7 here, so
 * they nest), a second thread with an overlapping operator, and one GPU. */
static size_t paddle_like(struct analyse_span *sp)
{
    size_t n = 0;
    /* Steps: [0,1000) and [1000,1600): total 1600. */
    sp[n++] = mk(0, 1000, 1, 7, "ProfileStep", "ProfileStep#1[1.000 us]");
    sp[n++] = mk(1000, 600, 1, 7, "ProfileStep", "ProfileStep#2[600 ns]");
    /* Step 1: dataloader 0-100, forward 100-400 with a nested Forward 150-300, backward
     * 400-700, optimisation 700-900. */
    sp[n++] = mk(0, 100, 1, 7, "Dataloader", "_DataLoaderIterSingleProcess[100 ns]");
    sp[n++] = mk(100, 300, 1, 7, "Forward", "Sequential");
    sp[n++] = mk(150, 150, 1, 7, "Forward", "Linear");
    sp[n++] = mk(400, 300, 1, 7, "Backward", "Gradient Backward");
    sp[n++] = mk(700, 200, 1, 7, "Optimization", "Optimization Step");
    /* Operators: matmul 160-260 with inner infer_meta 160-170 and kernel launch 170-250; add
     * 420-460 with kernel launch 430-450; on thread 8 a matmul 200-300 (overlaps thread 7's). */
    sp[n++] = mk(160, 100, 1, 7, "Operator", "matmul dygraph[100 ns]");
    sp[n++] = mk(160, 10, 1, 7, "OperatorInner", "matmul infer_meta");
    sp[n++] = mk(170, 80, 1, 7, "DygraphKernelLaunch", "matmul kernel launch");
    sp[n++] = mk(420, 40, 1, 7, "Operator", "add dygraph");
    sp[n++] = mk(430, 20, 1, 7, "DygraphKernelLaunch", "add kernel launch");
    sp[n++] = mk(200, 100, 1, 8, "Operator", "matmul dygraph");
    /* Step 2: dataloader 1000-1300, a record_function range holding a memcpy range. */
    sp[n++] = mk(1000, 300, 1, 7, "Dataloader", "_DataLoaderIterSingleProcess");
    sp[n++] = mk(1300, 200, 1, 7, "PythonUserDefined", "my_range[200 ns]");
    sp[n++] = mk(1350, 50, 1, 7, "UserDefined", "Memcpy HtoD");
    sp[n++] = mk(1320, 10, 1, 7, "UserDefined", "pybind_imperative_func");
    /* GPU 0: kernels 200-300 and 250-350 (busy 150), an nccl kernel 340-400; a memcpy. */
    sp[n++] = mk(200, 100, 0, 20, "Kernel", "gemm");
    sp[n++] = mk(250, 100, 0, 21, "Kernel", "gemm");
    sp[n++] = mk(340, 60, 0, 22, "Kernel", "ncclAllReduceKernel");
    sp[n++] = mk(500, 10, 0, 20, "Memcpy", "MEMCPY_HtoD");
    return n;
}

START_TEST(test_summary_paddle_like)
{
    struct analyse_span sp[64];
    size_t n = paddle_like(sp);
    struct analyse_summary *s = NULL;
    ck_assert_int_eq(analyse_summary_compute(sp, n, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST, &s), 0);
    ck_assert_int_eq(s->total_ns, 1600);
    ck_assert_int_eq((int)s->n_steps, 2);
    ck_assert_int_eq(s->first_step, 1);
    ck_assert_int_eq(s->last_step, 2);
    /* Overview: Operator = [160,300) ∪ [420,460) = 180 over 3 calls. */
    const struct analyse_sum_type_row *r = type_row(s, ANALYSE_SUM_OPERATOR, false);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->calls, 3);
    ck_assert_int_eq(r->time_ns, 180);
    ck_assert_double_eq_tol(r->ratio, 180.0 / 1600, 1e-12);
    /* Forward: the model row (the outermost Forward only): 1 call, 300. */
    r = type_row(s, ANALYSE_SUM_FORWARD, false);
    ck_assert_int_eq(r->calls, 1);
    ck_assert_int_eq(r->time_ns, 300);
    r = type_row(s, ANALYSE_SUM_DATALOADER, false);
    ck_assert_int_eq(r->calls, 2);
    ck_assert_int_eq(r->time_ns, 400);
    /* Host rows come first, by time desc: ProfileStep leads. */
    ck_assert_int_eq(s->types[0].type, ANALYSE_SUM_PROFILE_STEP);
    ck_assert(!s->types[0].device);
    for (size_t i = 1; i < s->n_types; i++)
        if (s->types[i].device == s->types[i - 1].device)
            ck_assert(s->types[i].time_ns <= s->types[i - 1].time_ns);
    /* Device: Kernel = [200,400) = 200 over 3 calls; Memcpy 10. */
    r = type_row(s, ANALYSE_SUM_KERNEL, true);
    ck_assert_int_eq(r->calls, 3);
    ck_assert_int_eq(r->time_ns, 200);
    r = type_row(s, ANALYSE_SUM_MEMCPY, true);
    ck_assert_int_eq(r->time_ns, 10);
    /* Model: stages and Others = 1600 - (400 + 300 + 300 + 200) = 400. */
    ck_assert(s->has_model);
    ck_assert_int_eq(s->model[ANALYSE_SUM_MODEL_PROFILE_STEP].calls, 2);
    ck_assert_int_eq(s->model[ANALYSE_SUM_MODEL_PROFILE_STEP].max_ns, 1000);
    ck_assert_int_eq(s->model[ANALYSE_SUM_MODEL_PROFILE_STEP].min_ns, 600);
    ck_assert_int_eq(s->model[ANALYSE_SUM_MODEL_DATALOADER].total_ns, 400);
    ck_assert_double_eq_tol(s->model[ANALYSE_SUM_MODEL_DATALOADER].avg_ns, 200, 1e-9);
    ck_assert_int_eq(s->model[ANALYSE_SUM_MODEL_FORWARD].calls, 1);
    ck_assert_int_eq(s->model[ANALYSE_SUM_MODEL_OTHERS].total_ns, 400);
    ck_assert_double_eq_tol(s->model[ANALYSE_SUM_MODEL_OTHERS].ratio, 0.25, 1e-12);
    /* Distributed: comm = nccl [340,400) = 60; computation = [200,350) = 150; overlap
     * [340,350) = 10. */
    ck_assert_int_eq(s->comm_ns, 60);
    ck_assert_int_eq(s->comp_ns, 150);
    ck_assert_int_eq(s->overlap_ns, 10);
    ck_assert_int_eq(s->comm_gpu_calls, 1);
    ck_assert_int_eq(s->comm_cpu_calls, 0);
    /* Operators: matmul (2 calls, 200) first, then its inner rows, then add. Ratio of the
     * operator total 240; inner ratios of matmul's 200. */
    ck_assert_int_eq((int)s->n_ops, 5);
    ck_assert_int_eq((int)s->ops[0].name_len, 14);
    ck_assert(memcmp(s->ops[0].name, "matmul dygraph", 14) == 0);
    ck_assert_int_eq(s->ops[0].calls, 2);
    ck_assert_int_eq(s->ops[0].total_ns, 200);
    ck_assert_double_eq_tol(s->ops[0].ratio, 200.0 / 240, 1e-12);
    ck_assert_uint_eq(s->ops[0].parent, ANALYSE_SUM_TOP);
    const struct analyse_sum_row *in = find_row(s->ops, s->n_ops, "matmul kernel launch", 0);
    ck_assert_ptr_nonnull(in);
    ck_assert_int_eq(in->total_ns, 80);
    ck_assert_double_eq_tol(in->ratio, 0.4, 1e-12);
    in = find_row(s->ops, s->n_ops, "matmul infer_meta", 0);
    ck_assert_ptr_nonnull(in);
    const struct analyse_sum_row *add = find_row(s->ops, s->n_ops, "add dygraph", ANALYSE_SUM_TOP);
    ck_assert_ptr_nonnull(add);
    ck_assert(add == &s->ops[3]);
    in = find_row(s->ops, s->n_ops, "add kernel launch", 3);
    ck_assert_ptr_nonnull(in);
    ck_assert_double_eq_tol(in->ratio, 0.5, 1e-12);
    /* Kernels: gemm 2 calls 200, nccl 60; ratio of the kernel sum 260. */
    ck_assert_int_eq((int)s->n_kernels, 2);
    ck_assert(memcmp(s->kernels[0].name, "gemm", 4) == 0);
    ck_assert_int_eq(s->kernels[0].total_ns, 200);
    ck_assert_double_eq_tol(s->kernels[0].ratio, 200.0 / 260, 1e-12);
    /* Memory manipulation: "Memcpy HtoD"; user-defined: my_range only (not the UserDefined
     * pybind span). */
    ck_assert_int_eq((int)s->n_memory, 1);
    ck_assert_int_eq(s->memory[0].total_ns, 50);
    ck_assert_int_eq((int)s->n_user, 1);
    ck_assert_int_eq((int)s->user[0].name_len, 8);
    ck_assert_double_eq_tol(s->user[0].ratio, 200.0 / 1600, 1e-12);
    /* GPU 0: kernel busy [200,400) = 200 of 1600. */
    ck_assert_int_eq((int)s->n_gpus, 1);
    ck_assert_int_eq(s->gpus[0].busy_ns, 200);
    ck_assert_double_eq_tol(s->gpus[0].utilization, 0.125, 1e-12);
    analyse_summary_free(s);
}
END_TEST

START_TEST(test_summary_step_range)
{
    struct analyse_span sp[64];
    size_t n = paddle_like(sp);
    struct analyse_summary *s = NULL;
    ck_assert_int_eq(analyse_summary_compute(sp, n, 2, 2, &s), 0);
    ck_assert_int_eq(s->total_ns, 600);
    ck_assert_int_eq(s->window_start_ns, 1000);
    ck_assert_int_eq(s->window_end_ns, 1600);
    ck_assert_int_eq(s->first_step, 2);
    ck_assert_int_eq((int)s->n_ops, 0);
    ck_assert_int_eq(s->model[ANALYSE_SUM_MODEL_DATALOADER].total_ns, 300);
    ck_assert_int_eq(s->model[ANALYSE_SUM_MODEL_OTHERS].total_ns, 300);
    analyse_summary_free(s);
    ck_assert_int_eq(analyse_summary_compute(sp, n, 5, 9, &s), -ENOENT);
    ck_assert_int_eq(analyse_summary_compute(NULL, 1, 0, 1, &s), -EINVAL);
    /* No spans at all: an empty summary, every ratio 0. */
    ck_assert_int_eq(analyse_summary_compute(NULL, 0, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST, &s), 0);
    ck_assert_int_eq(s->total_ns, 0);
    ck_assert_int_eq((int)s->n_types, 0);
    ck_assert(!s->has_model);
    analyse_summary_free(s);
}
END_TEST

/* Host communication: a Communication span and an Operator named like c_allreduce; two
 * identical ranges count once in calls (Paddle's len(set(...))). */
START_TEST(test_summary_host_communication)
{
    struct analyse_span sp[8];
    size_t n = 0;
    sp[n++] = mk(0, 1000, 1, 1, "ProfileStep", "ProfileStep#0");
    sp[n++] = mk(100, 100, 1, 1, "Communication", "ProcessGroupNCCL::AllReduce");
    sp[n++] = mk(150, 100, 1, 2, "Operator", "c_allreduce_sum dygraph");
    sp[n++] = mk(150, 100, 1, 3, "Operator", "c_allreduce_sum dygraph");
    sp[n++] = mk(600, 100, 0, 9, "Kernel", "gemm");
    struct analyse_summary *s = NULL;
    ck_assert_int_eq(analyse_summary_compute(sp, n, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST, &s), 0);
    ck_assert_int_eq(s->comm_cpu_calls, 2);
    ck_assert_int_eq(s->comm_ns, 150);
    ck_assert_int_eq(s->comp_ns, 100);
    ck_assert_int_eq(s->overlap_ns, 0);
    const struct analyse_sum_type_row *r = type_row(s, ANALYSE_SUM_COMMUNICATION, false);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->time_ns, 150);
    ck_assert_int_eq(r->calls, 2);
    analyse_summary_free(s);
}
END_TEST

/* Hostile times never overflow: spans at both ends of int64, negative durations, huge sums. */
START_TEST(test_summary_extremes)
{
    struct analyse_span sp[8];
    size_t n = 0;
    sp[n++] = mk(INT64_MIN, INT64_MAX, 1, 1, "ProfileStep", "ProfileStep#1");
    sp[n++] = mk(INT64_MAX - 5, INT64_MAX, 1, 1, "ProfileStep", "ProfileStep#2");
    sp[n++] = mk(-5, INT64_MAX, 1, 1, "Operator", "a");
    sp[n++] = mk(0, INT64_MAX, 1, 2, "Operator", "a");
    sp[n++] = mk(10, -7, 1, 1, "Operator", "b");
    sp[n++] = mk(INT64_MIN, INT64_MAX, 0, 3, "Kernel", "k");
    sp[n++] = mk(0, INT64_MAX, 0, 3, "Kernel", "k");
    sp[n++] = mk(0, INT64_MAX, 1, 1, "Dataloader", "d");
    struct analyse_summary *s = NULL;
    ck_assert_int_eq(analyse_summary_compute(sp, n, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST, &s), 0);
    ck_assert(s->total_ns > 0);
    ck_assert(s->ops[0].total_ns == INT64_MAX);
    ck_assert(s->kernels[0].total_ns == INT64_MAX);
    for (size_t i = 0; i < s->n_types; i++)
        ck_assert(s->types[i].time_ns >= 0);
    ck_assert(s->model[ANALYSE_SUM_MODEL_OTHERS].total_ns <= s->total_ns);
    analyse_summary_free(s);
    ck_assert_int_eq(analyse_summary_compute(sp, n, 1, 2, &s), 0);
    analyse_summary_free(s);
}
END_TEST

START_TEST(test_benchmark)
{
    /* 13 steps; the first 10 are warm-up. Counted: 0.1 s / 20 samples (reader 0.02),
     * 0.2 s / 20 (reader 0.05), 0.1 s / 40 (reader 0.02). */
    struct analyse_bench_step st[13];
    for (int i = 0; i < 10; i++)
        st[i] = (struct analyse_bench_step){i, 900000000, 800000000, 1};
    st[10] = (struct analyse_bench_step){10, 100000000, 20000000, 20};
    st[11] = (struct analyse_bench_step){11, 200000000, 50000000, 20};
    st[12] = (struct analyse_bench_step){12, 100000000, 20000000, 40};
    struct analyse_benchmark b;
    ck_assert_int_eq(analyse_benchmark_compute(st, 13, ANALYSE_BENCH_SKIP_DEFAULT, &b), 0);
    ck_assert_uint_eq(b.n_steps, 13);
    ck_assert_uint_eq(b.n_skipped, 10);
    ck_assert_uint_eq(b.n_counted, 3);
    ck_assert(b.has_reader);
    ck_assert(b.samples_mode);
    ck_assert_double_eq_tol(b.batch_cost.avg, 0.4 / 3, 1e-12);
    ck_assert_double_eq_tol(b.batch_cost.max, 0.2, 1e-12);
    ck_assert_double_eq_tol(b.batch_cost.min, 0.1, 1e-12);
    ck_assert_double_eq_tol(b.reader_cost.avg, 0.03, 1e-12);
    ck_assert_double_eq_tol(b.reader_cost.min, 0.02, 1e-12);
    /* ips: 80 samples / 0.4 s = 200; per step 200, 100, 400. */
    ck_assert_double_eq_tol(b.ips.avg, 200, 1e-9);
    ck_assert_double_eq_tol(b.ips.max, 400, 1e-9);
    ck_assert_double_eq_tol(b.ips.min, 100, 1e-9);
    ck_assert_double_eq_tol(b.reader_ratio_pct, 100 * 0.03 / (0.4 / 3), 1e-9);
    /* No samples on one counted step: steps/s; no reader on one: no reader figures. */
    st[11].samples = -1;
    st[12].reader_ns = -1;
    ck_assert_int_eq(analyse_benchmark_compute(st, 13, 10, &b), 0);
    ck_assert(!b.samples_mode);
    ck_assert(!b.has_reader);
    ck_assert_double_eq_tol(b.ips.avg, 3 / 0.4, 1e-9);
    ck_assert_double_eq_tol(b.reader_ratio_pct, 0, 1e-12);
    /* Fewer steps than the warm-up: nothing counted. */
    ck_assert_int_eq(analyse_benchmark_compute(st, 5, 10, &b), 0);
    ck_assert_uint_eq(b.n_counted, 0);
    ck_assert_uint_eq(b.n_skipped, 5);
    ck_assert_int_eq(analyse_benchmark_compute(NULL, 2, 10, &b), -EINVAL);
}
END_TEST

/* Issue 18: the operator table cost the square of its distinct names (order_ops() scanned every
 * row for each top-level row: 80 k names took 5 s, 1 M held an HTTP worker for minutes). 150 k
 * operators of distinct names, each with one inner row of its own name, under one step: before
 * the fix that was 4.5e10 row visits (minutes of CPU); now it takes half a second. The bound is
 * on CPU time (the machine may be shared), SUM_SCALE_CPU_S, more under a sanitizer. The order
 * and the parents stay Paddle's: each operator by total desc, then its inner row. */
#if defined(__SANITIZE_ADDRESS__)
#define SUM_SCALE_CPU_S 20.0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SUM_SCALE_CPU_S 20.0
#endif
#endif
#ifndef SUM_SCALE_CPU_S
#define SUM_SCALE_CPU_S 3.0
#endif
/* This process's CPU time in seconds (the scale tests bound CPU, not wall time: the machine may
 * be shared). */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The summary of spans[0..n), bounded by SUM_SCALE_CPU_S of CPU time. */
static struct analyse_summary *timed_summary(const struct analyse_span *sp, size_t n,
                                             const char *what)
{
    double t0 = cpu_s();
    struct analyse_summary *sum = NULL;
    ck_assert_int_eq(analyse_summary_compute(sp, n, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST,
                                             &sum), 0);
    double s = cpu_s() - t0;
    ck_assert_msg(s < SUM_SCALE_CPU_S, "%s took %.2f s of CPU", what, s);
    return sum;
}

/* One step holding n operators op_K of distinct names, each with an inner row inner_K; operator
 * K lasts 5 + K % 4 ns, so the sort by total has ties to keep stable. 2n + 1 spans into *sp,
 * their names in *names (the caller frees both). */
static void names_tree(int n, struct analyse_span **ret_sp, char (**ret_names)[24])
{
    struct analyse_span *sp = calloc(2 * (size_t)n + 1, sizeof *sp);
    char (*names)[24] = calloc(2 * (size_t)n, sizeof *names);
    ck_assert_ptr_nonnull(sp);
    ck_assert_ptr_nonnull(names);
    sp[0] = mk(0, 10 * (int64_t)n + 10, 1, 1, "ProfileStep", "ProfileStep#0");
    for (int i = 0; i < n; i++) {
        snprintf(names[2 * i], sizeof names[0], "op_%d", i);
        snprintf(names[2 * i + 1], sizeof names[0], "inner_%d", i);
        sp[1 + 2 * i] = mk(10 * (int64_t)i + 1, 5 + i % 4, 1, 1, "Operator", names[2 * i]);
        sp[2 + 2 * i] = mk(10 * (int64_t)i + 2, 2, 1, 1, "OperatorInner", names[2 * i + 1]);
    }
    *ret_sp = sp;
    *ret_names = names;
}

START_TEST(test_summary_operator_rows_scale)
{
    enum { N = 150000 };
    struct analyse_span *sp;
    char (*names)[24];
    names_tree(N, &sp, &names);
    struct analyse_summary *sum = timed_summary(sp, 2 * N + 1, "150 k operator names");
    ck_assert_uint_eq(sum->n_ops, 2 * N);
    int64_t prev = INT64_MAX;
    for (size_t i = 0; i < sum->n_ops; i += 2) {
        const struct analyse_sum_row *op = &sum->ops[i], *in = &sum->ops[i + 1];
        ck_assert(op->parent == ANALYSE_SUM_TOP);
        ck_assert_uint_eq(in->parent, i);
        ck_assert_int_le(op->total_ns, prev);
        prev = op->total_ns;
        /* inner_K belongs to op_K. */
        ck_assert_int_eq(memcmp(in->name, "inner_", 6), 0);
        ck_assert_int_eq(in->name_len - 6, op->name_len - 3);
        ck_assert_int_eq(memcmp(in->name + 6, op->name + 3, op->name_len - 3), 0);
        ck_assert_double_eq_tol(in->ratio, 2.0 / (double)op->total_ns, 1e-12);
    }
    analyse_summary_free(sum);
    free(names);
    free(sp);
}
END_TEST

/* The operator rows' order equals the order of the quadratic order_ops() it replaced (issue 18):
 * top-level rows by total desc (ties: first appearance), each followed by its inner rows in
 * first-appearance order, an inner name under two operators being two rows. The tree is crafted
 * so that this is visible: 3 000 calls of 60 operator names (totals with ties), each holding 0 to
 * 3 inner calls drawn from 25 names shared by every operator, in an order that interleaves the
 * parents' first appearances. The expected rows are computed here as the old code did, by
 * scanning every row for each top-level row. */
struct oracle_row {
    char name[16];
    int parent; /* -1: top-level */
    int64_t calls, total;
};

static int oracle_find(struct oracle_row *r, int n, const char *name, int parent)
{
    for (int i = 0; i < n; i++)
        if (r[i].parent == parent && strcmp(r[i].name, name) == 0)
            return i;
    return -1;
}

START_TEST(test_summary_operator_order_equals_the_old_order)
{
    enum { CALLS = 3000, OPS = 60, INNERS = 25, ROWS = OPS + OPS * INNERS };
    struct analyse_span *sp = calloc(1 + 4 * CALLS, sizeof *sp);
    char (*names)[16] = calloc(4 * CALLS, sizeof *names);
    struct oracle_row *rows = calloc(ROWS, sizeof *rows);
    ck_assert_ptr_nonnull(sp);
    ck_assert_ptr_nonnull(names);
    ck_assert_ptr_nonnull(rows);
    uint32_t seed = 18;
    size_t n = 1, nn = 0;
    int nr = 0;
    int64_t t = 100;
    for (int c = 0; c < CALLS; c++) {
        seed = seed * 1103515245u + 12345u;
        int op = (int)((seed >> 8) % OPS);
        int64_t dur = 40 + 10 * (int64_t)((seed >> 20) % 3); /* ties in the totals */
        snprintf(names[nn], sizeof names[0], "op_%d", op);
        sp[n++] = mk(t, dur, 1, 1, "Operator", names[nn]);
        int top = oracle_find(rows, nr, names[nn], -1);
        if (top < 0) {
            top = nr++;
            snprintf(rows[top].name, sizeof rows[top].name, "%s", names[nn]);
            rows[top].parent = -1;
        }
        rows[top].calls++;
        rows[top].total += dur;
        nn++;
        int kids = (int)((seed >> 4) % 4);
        for (int k = 0; k < kids; k++) {
            seed = seed * 1103515245u + 12345u;
            snprintf(names[nn], sizeof names[0], "in_%u", (seed >> 9) % INNERS);
            sp[n++] = mk(t + 1 + 10 * k, 5, 1, 1, "OperatorInner", names[nn]);
            int r = oracle_find(rows, nr, names[nn], top);
            if (r < 0) {
                r = nr++;
                snprintf(rows[r].name, sizeof rows[r].name, "%s", names[nn]);
                rows[r].parent = top;
            }
            rows[r].calls++;
            rows[r].total += 5;
            nn++;
        }
        t += dur + 7;
    }
    sp[0] = mk(0, t + 100, 1, 1, "ProfileStep", "ProfileStep#0");
    /* The old order: tops by total desc, ties by first appearance (a stable selection), each
     * followed by a scan of every row for its inner rows. */
    int *order = calloc(ROWS, sizeof *order), *pos = calloc(ROWS, sizeof *pos);
    ck_assert_ptr_nonnull(order);
    ck_assert_ptr_nonnull(pos);
    bool *taken = calloc(ROWS, sizeof *taken);
    ck_assert_ptr_nonnull(taken);
    int m = 0;
    for (;;) {
        int best = -1;
        for (int i = 0; i < nr; i++)
            if (rows[i].parent < 0 && !taken[i] && (best < 0 || rows[i].total > rows[best].total))
                best = i;
        if (best < 0)
            break;
        taken[best] = true;
        pos[best] = m;
        order[m++] = best;
        for (int i = 0; i < nr; i++)
            if (rows[i].parent == best)
                order[m++] = i;
    }
    ck_assert_int_eq(m, nr);
    struct analyse_summary *sum = NULL;
    ck_assert_int_eq(analyse_summary_compute(sp, n, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST,
                                             &sum), 0);
    ck_assert_uint_eq(sum->n_ops, (size_t)nr);
    int tops = 0;
    for (int i = 0; i < nr; i++) {
        const struct analyse_sum_row *got = &sum->ops[i];
        const struct oracle_row *want = &rows[order[i]];
        ck_assert_uint_eq(got->name_len, strlen(want->name));
        ck_assert_int_eq(memcmp(got->name, want->name, got->name_len), 0);
        ck_assert_int_eq(got->calls, want->calls);
        ck_assert_int_eq(got->total_ns, want->total);
        if (want->parent < 0) {
            ck_assert(got->parent == ANALYSE_SUM_TOP);
            tops++;
        } else {
            ck_assert_uint_eq(got->parent, (size_t)pos[want->parent]);
        }
    }
    ck_assert_int_eq(tops, OPS);
    ck_assert_int_gt(nr, 2 * OPS); /* inner names do repeat under several operators */
    analyse_summary_free(sum);
    free(taken);
    free(order);
    free(pos);
    free(rows);
    free(names);
    free(sp);
}
END_TEST

/* Issue 18: the devices' busy time scanned every kernel for each new device (pid), so a trace of
 * 80 k kernel pids kept /summary/overview past 30 s (over its deadline, which only the read
 * checked). 150 k kernels on 75 k devices (two overlapping kernels each, the pids in
 * descending order): the devices come sorted by pid, each busy for the union of its two, in
 * SUM_SCALE_CPU_S of CPU. */
START_TEST(test_summary_devices_scale)
{
    enum { DEV = 75000 };
    struct analyse_span *sp = calloc(2 * DEV + 1, sizeof *sp);
    ck_assert_ptr_nonnull(sp);
    sp[0] = mk(0, 20 * (int64_t)DEV + 20, 1, 1, "ProfileStep", "ProfileStep#0");
    for (int p = 0; p < DEV; p++) {
        int64_t pid = DEV - 1 - p;
        sp[1 + 2 * p] = mk(20 * (int64_t)p, 8, pid, 7, "Kernel", "k");
        sp[2 + 2 * p] = mk(20 * (int64_t)p + 4, 8, pid, 7, "Kernel", "k");
    }
    struct analyse_summary *sum = timed_summary(sp, 2 * DEV + 1, "75 k devices");
    ck_assert_uint_eq(sum->n_gpus, DEV);
    for (size_t g = 0; g < sum->n_gpus; g++) {
        ck_assert_int_eq(sum->gpus[g].pid, (int64_t)g);
        ck_assert_int_eq(sum->gpus[g].busy_ns, 12);
    }
    ck_assert_uint_eq(sum->n_kernels, 1);
    ck_assert_int_eq(sum->kernels[0].calls, 2 * DEV);
    analyse_summary_free(sum);
    free(sp);
}
END_TEST

/* analyse_summary_compute_until(): a stop asked for stops the computation early (-ECANCELED,
 * nothing returned, nothing leaked): a server stopping no longer waits for a whole summary
 * (issue 18; 1 M spans: SIGTERM waited 1.8 s once). 400 k operators of distinct names, each
 * with an inner row; the stop is set 2 ms after the computation begins, by another thread. */
struct stopper {
    _Atomic bool stop;
    struct timespec at;
};

static void *stop_soon(void *arg)
{
    struct stopper *s = arg;
    nanosleep(&(struct timespec){0, 2000000}, NULL);
    clock_gettime(CLOCK_MONOTONIC, &s->at);
    atomic_store(&s->stop, true);
    return NULL;
}

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

START_TEST(test_summary_compute_stops_when_asked)
{
    enum { N = 400000 };
    struct analyse_span *sp;
    char (*names)[24];
    names_tree(N, &sp, &names);
    struct analyse_summary *sum = NULL;
    /* Already stopped: nothing is computed. */
    _Atomic bool yes = true;
    ck_assert_int_eq(analyse_summary_compute_until(sp, 2 * N + 1, ANALYSE_ST_ALL_FIRST,
                                                   ANALYSE_ST_ALL_LAST, &yes, &sum), -ECANCELED);
    ck_assert_ptr_null(sum);
    /* The whole computation, for the figure. */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    _Atomic bool no = false;
    ck_assert_int_eq(analyse_summary_compute_until(sp, 2 * N + 1, ANALYSE_ST_ALL_FIRST,
                                                   ANALYSE_ST_ALL_LAST, &no, &sum), 0);
    double whole = since(&t0);
    ck_assert_uint_eq(sum->n_ops, 2 * N);
    analyse_summary_free(sum);
    sum = NULL;
    /* Stopped while it runs. */
    struct stopper st = {.stop = false};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, stop_soon, &st), 0);
    int r = analyse_summary_compute_until(sp, 2 * N + 1, ANALYSE_ST_ALL_FIRST,
                                          ANALYSE_ST_ALL_LAST, &st.stop, &sum);
    double after = since(&st.at);
    pthread_join(th, NULL);
    ck_assert_int_eq(r, -ECANCELED);
    ck_assert_ptr_null(sum);
    ck_assert_msg(after < whole, "stopped %.3f s after the stop; the whole takes %.3f s", after,
                  whole);
    free(names);
    free(sp);
}
END_TEST

static struct analyse_mem_event mev(int64_t ts, const char *owner, int64_t owner_ns,
                                    enum analyse_mem_kind kind, int64_t bytes, int64_t peak)
{
    return (struct analyse_mem_event){.pid = 1, .tid = 1, .ts_ns = ts, .owner_ns = owner_ns,
                                      .owner = owner, .owner_len = owner ? strlen(owner) : 0,
                                      .place = "Place(cpu)", .place_len = 10, .kind = kind,
                                      .bytes = bytes, .peak_allocated = peak, .peak_reserved = peak};
}

/* Paddle's MemorySummary on a small tree: an Operator counts its direct children's events, an
 * OperatorInner none of its own, nodes are visited from a stack (the later sibling first), so
 * ties keep that order; events without a host event are not counted, nor are their peaks. */
START_TEST(test_memsum_paddle_rules)
{
    struct analyse_span sp[] = {
        mk(0, 1000, 1, 1, "ProfileStep", "ProfileStep#1"),
        mk(100, 200, 1, 1, "Operator", "add dygraph"),
        mk(110, 20, 1, 1, "OperatorInner", "add infer_meta"),
        mk(150, 100, 1, 1, "DygraphKernelLaunch", "add kernel launch"),
        mk(400, 200, 1, 1, "Operator", "relu dygraph"),
        mk(450, 100, 1, 1, "DygraphKernelLaunch", "relu kernel launch"),
        mk(550, 40, 1, 1, "OperatorInner", "relu infer_meta"), /* rebuilt ts: 0 ns overlap */
    };
    struct analyse_mem_event m[] = {
        mev(200, "add kernel launch", 150, ANALYSE_MEM_ALLOCATE, 64, 100),
        mev(210, "add kernel launch", 150, ANALYSE_MEM_RESERVED_ALLOCATE, 128, 150),
        mev(500, "relu kernel launch", 450, ANALYSE_MEM_ALLOCATE, 64, 200),
        mev(570, "relu infer_meta", 550, ANALYSE_MEM_ALLOCATE, 8, 120),
        mev(900, "ProfileStep#1", 0, ANALYSE_MEM_FREE, -32, 180),
        mev(1500, NULL, INT64_MIN, ANALYSE_MEM_ALLOCATE, 4, 999),        /* Paddle's root */
        mev(950, "no such op", 0, ANALYSE_MEM_ALLOCATE, 4, 999),         /* not found */
    };
    struct analyse_memsum *ms = NULL;
    ck_assert_int_eq(analyse_memsum_compute(sp, 7, m, 7, 0, 0, &ms), 0);
    ck_assert_uint_eq(ms->n_events, 7);
    ck_assert_uint_eq(ms->n_counted, 5);
    ck_assert_uint_eq(ms->n_unowned, 2);
    ck_assert_uint_eq(ms->n_places, 1);
    ck_assert_int_eq(ms->places[0].peak_allocated, 200);
    ck_assert_int_eq(ms->places[0].peak_reserved, 200);
    static const struct {
        const char *name;
        bool reserved;
        int64_t ac, fc, as, fs, inc;
    } want[] = {
        {"relu dygraph", false, 2, 0, 72, 0, 72},
        {"relu kernel launch", false, 1, 0, 64, 0, 64},
        {"add dygraph", false, 1, 0, 64, 0, 64},
        {"add kernel launch", false, 1, 0, 64, 0, 64},
        {"ProfileStep#1", false, 0, 1, 0, 32, -32},
        {"add dygraph", true, 1, 0, 128, 0, 128},
        {"add kernel launch", true, 1, 0, 128, 0, 128},
    };
    ck_assert_uint_eq(ms->n_rows, 7);
    ck_assert_uint_eq(ms->places[0].first_row, 0);
    ck_assert_uint_eq(ms->places[0].n_rows, 7);
    for (size_t i = 0; i < 7; i++) {
        const struct analyse_mem_row *r = &ms->rows[i];
        ck_assert_msg(r->name_len == strlen(want[i].name) &&
                          memcmp(r->name, want[i].name, r->name_len) == 0,
                      "row %zu: %.*s", i, (int)r->name_len, r->name);
        ck_assert(r->reserved == want[i].reserved);
        ck_assert_int_eq(r->alloc_count, want[i].ac);
        ck_assert_int_eq(r->free_count, want[i].fc);
        ck_assert_int_eq(r->alloc_size, want[i].as);
        ck_assert_int_eq(r->free_size, want[i].fs);
        ck_assert_int_eq(r->increase, want[i].inc);
    }
    analyse_memsum_free(ms);
    /* A step window leaving the step out leaves every event out. */
    ck_assert_int_eq(analyse_memsum_compute(sp, 7, m, 7, 2000, 3000, &ms), 0);
    ck_assert_uint_eq(ms->n_places, 0);
    ck_assert_uint_eq(ms->n_unowned, 7);
    analyse_memsum_free(ms);
    ck_assert_int_eq(analyse_memsum_compute(NULL, 1, m, 0, 0, 0, &ms), -EINVAL);
    ck_assert_int_eq(analyse_memsum_compute(sp, 0, NULL, 0, 0, 0, &ms), 0);
    ck_assert_uint_eq(ms->n_rows, 0);
    analyse_memsum_free(ms);
}
END_TEST

/* Issue 18: the Memory Summary found a place by scanning every place seen, and built its rows by
 * scanning every item for each place, so its cost was the square of the distinct places. 60 k
 * memory events, each on a place of its own (Place(gpu:K)), under one operator: one place and
 * one row each, in the order the places were first allocated on, in SUM_SCALE_CPU_S of CPU. */
START_TEST(test_memsum_places_scale)
{
    enum { N = 60000 };
    struct analyse_span sp[] = {
        mk(0, 10 * (int64_t)N + 100, 1, 1, "ProfileStep", "ProfileStep#1"),
        mk(10, 10 * (int64_t)N, 1, 1, "Operator", "op"),
    };
    struct analyse_mem_event *m = calloc(N, sizeof *m);
    char (*places)[24] = calloc(N, sizeof *places);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(places);
    for (int i = 0; i < N; i++) {
        snprintf(places[i], sizeof places[0], "Place(gpu:%d)", N - 1 - i);
        m[i] = mev(20 + 10 * (int64_t)i, "op", 10, i % 3 ? ANALYSE_MEM_ALLOCATE
                                                         : ANALYSE_MEM_RESERVED_ALLOCATE, 64, 64);
        m[i].place = places[i];
        m[i].place_len = strlen(places[i]);
    }
    double t0 = cpu_s();
    struct analyse_memsum *ms = NULL;
    ck_assert_int_eq(analyse_memsum_compute(sp, 2, m, N, 0, 0, &ms), 0);
    double s = cpu_s() - t0;
    ck_assert_msg(s < SUM_SCALE_CPU_S, "60 k places took %.2f s of CPU", s);
    /* A place with reserved events only is not printed (Paddle's rule): every third. */
    ck_assert_uint_eq(ms->n_places, N - (N + 2) / 3);
    ck_assert_uint_eq(ms->n_rows, ms->n_places);
    size_t p = 0;
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0)
            continue;
        const struct analyse_mem_place *pl = &ms->places[p];
        ck_assert_uint_eq(pl->place_len, strlen(places[i]));
        ck_assert_int_eq(memcmp(pl->place, places[i], pl->place_len), 0);
        ck_assert_uint_eq(pl->first_row, p);
        ck_assert_uint_eq(pl->n_rows, 1);
        ck_assert_int_eq(ms->rows[p].alloc_size, 64);
        ck_assert(!ms->rows[p].reserved);
        p++;
    }
    analyse_memsum_free(ms);
    free(places);
    free(m);
}
END_TEST

static Suite *summary_suite(void)
{
    Suite *s = suite_create("analyse_summary");
    TCase *tc = tcase_create("summary");
    tcase_add_test(tc, test_summary_name_suffix);
    tcase_add_test(tc, test_summary_types);
    tcase_add_test(tc, test_summary_union);
    tcase_add_test(tc, test_summary_paddle_like);
    tcase_add_test(tc, test_summary_step_range);
    tcase_add_test(tc, test_summary_operator_order_equals_the_old_order);
    tcase_add_test(tc, test_summary_host_communication);
    tcase_add_test(tc, test_summary_extremes);
    tcase_add_test(tc, test_benchmark);
    tcase_add_test(tc, test_memsum_paddle_rules);
    suite_add_tcase(s, tc);
    TCase *big = tcase_create("scale");
    tcase_set_timeout(big, 120); /* wall time; the test bounds its CPU time itself */
    tcase_add_test(big, test_summary_operator_rows_scale);
    tcase_add_test(big, test_summary_devices_scale);
    tcase_add_test(big, test_memsum_places_scale);
    tcase_add_test(big, test_summary_compute_stops_when_asked);
    suite_add_tcase(s, big);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(summary_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
