/* SPDX-License-Identifier: MIT */
/*
 * Table tests of HTA's GPU time (gpu.c): kernel types by HTA 0.5.0's patterns, which device events
 * its filter keeps, the kernel-type sweep, and the temporal breakdown's merge, including HTA's microsecond rounding of a
 * nanosecond trace (which can make a duration negative). The figures on real traces are checked
 * against HTA itself by tests/integ/test_gpu.py.
 */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analyse_gpu.h"

static struct analyse_span sp(enum analyse_role role, const char *name, int64_t ts, int64_t dur,
                              int64_t corr)
{
    return (struct analyse_span){.ts_ns = ts, .dur_ns = dur, .name = name,
                                 .name_len = strlen(name), .correlation = corr,
                                 .external_id = -1, .role = role};
}

START_TEST(test_kernel_types_as_hta_0_5_0)
{
    static const struct {
        const char *name;
        enum analyse_gpu_ktype want;
    } cases[] = {
        {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", ANALYSE_GPU_COMMUNICATION},
        {"ncclDevKernel_AllGather_RING_LL", ANALYSE_GPU_COMMUNICATION},
        {"nccl_no_k", ANALYSE_GPU_COMPUTATION}, /* "nccl" without "Kernel" after it */
        {"Memcpy HtoD (Pageable -> Device)", ANALYSE_GPU_MEMORY},
        {"Memset (Device)", ANALYSE_GPU_MEMORY},
        {"dma_copy", ANALYSE_GPU_MEMORY},
        {"void at::native::vectorized_elementwise_kernel<4>", ANALYSE_GPU_COMPUTATION},
        {"cudaStreamSynchronize", ANALYSE_GPU_OTHER}, /* holds "Sync" */
        {"fooMemcpyBar", ANALYSE_GPU_OTHER},          /* holds "Memcpy", does not start with it */
        {"hipMemcpy", ANALYSE_GPU_OTHER},             /* 0.5.0 has no hip patterns */
        {"", ANALYSE_GPU_COMPUTATION},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(analyse_gpu_kernel_type(cases[i].name, strlen(cases[i].name)) ==
                          cases[i].want, "%s", cases[i].name);
}
END_TEST

/* Two steps; kernels launched by runtimes (correlation 1, 2, 3): 3's runtime runs in the last
 * step, so the default leaves its kernel out and last_step=include keeps it. */
START_TEST(test_filter_by_last_step)
{
    struct analyse_span s[] = {
        sp(ANALYSE_ROLE_STEP, "ProfilerStep#1", 0, 1000, -1),
        sp(ANALYSE_ROLE_STEP, "ProfilerStep#2", 1000, 1000, -1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 100, 10, 1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 200, 10, 2),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 1100, 10, 3),
        sp(ANALYSE_ROLE_KERNEL, "gemm", 300, 200, 1),
        sp(ANALYSE_ROLE_MEMCPY, "Memcpy DtoD (Device -> Device)", 400, 200, 2),
        sp(ANALYSE_ROLE_KERNEL, "gemm", 1500, 100, 3),
        sp(ANALYSE_ROLE_KERNEL, "gemm", 1700, 100, 9), /* no host span: never kept */
    };
    struct analyse_gpu_opts o = {0};
    struct analyse_gpu_temporal t;
    ck_assert_int_eq(analyse_gpu_temporal(s, 9, &o, &t), 0);
    ck_assert(t.filter.filtered);
    ck_assert_uint_eq(t.filter.n_step_names, 2);
    ck_assert_int_eq(t.filter.cut_ns, 1000);
    ck_assert_uint_eq(t.filter.n_device, 4);
    ck_assert_uint_eq(t.filter.n_kept, 2);
    ck_assert_int_eq(t.kernel_ns, 300);       /* [300, 600) */
    ck_assert_int_eq(t.idle_ns, 0);
    ck_assert_int_eq(t.compute_ns, 200);      /* the gemm */
    ck_assert_int_eq(t.non_compute_ns, 100);  /* the memcpy alone */
    o.include_last_step = true;
    ck_assert_int_eq(analyse_gpu_temporal(s, 9, &o, &t), 0);
    ck_assert_int_eq(t.filter.cut_ns, 2000);
    ck_assert_uint_eq(t.filter.n_kept, 3);
    ck_assert_int_eq(t.kernel_ns, 1300);      /* [300, 1600) */
    ck_assert_int_eq(t.idle_ns, 1300 - 400);
    ck_assert_int_eq(t.compute_ns, 300);
    ck_assert_int_eq(t.non_compute_ns, 100);
    /* One step name only: HTA keeps every device event. */
    s[1].name = "ProfilerStep#1";
    o.include_last_step = false;
    ck_assert_int_eq(analyse_gpu_temporal(s, 9, &o, &t), 0);
    ck_assert(!t.filter.filtered);
    ck_assert_uint_eq(t.filter.n_kept, 4);
    ck_assert_int_eq(t.kernel_ns, 1500);
}
END_TEST

/* HTA's rounding: start up, end down to a microsecond. A 0.4 us kernel inside one microsecond
 * then lasts -1 us and, alone in its group, takes a microsecond off the busy time, as in HTA. */
START_TEST(test_rounding_and_negative_durations)
{
    struct analyse_span s[] = {
        sp(ANALYSE_ROLE_KERNEL, "gemm", 1500, 2000, 1),  /* [1.5, 3.5) us -> [2, 3) */
        sp(ANALYSE_ROLE_KERNEL, "gemm", 5100, 400, 2),   /* [5.1, 5.5) us -> [6, 5) */
        sp(ANALYSE_ROLE_KERNEL, "gemm", 7000, 3000, 3),  /* whole: [7, 10) */
    };
    struct analyse_gpu_opts o = {.round_us = true};
    struct analyse_gpu_temporal t;
    ck_assert_int_eq(analyse_gpu_temporal(s, 3, &o, &t), 0);
    ck_assert_int_eq(t.start_ns, 2000);
    ck_assert_int_eq(t.end_ns, 10000);
    ck_assert_int_eq(t.kernel_ns, 8000);
    ck_assert_int_eq(t.compute_ns, 1000 - 1000 + 3000);
    ck_assert_int_eq(t.idle_ns, 8000 - 3000);
    ck_assert_int_eq(t.non_compute_ns, 0);
    o.round_us = false;
    ck_assert_int_eq(analyse_gpu_temporal(s, 3, &o, &t), 0);
    ck_assert_int_eq(t.kernel_ns, 8500);
    ck_assert_int_eq(t.compute_ns, 2000 + 400 + 3000);
    ck_assert_int_eq(t.idle_ns, 8500 - 5400);
}
END_TEST

START_TEST(test_no_device_events)
{
    struct analyse_span s[] = {sp(ANALYSE_ROLE_HOST_OP, "aten::add", 0, 10, -1)};
    struct analyse_gpu_opts o = {0};
    struct analyse_gpu_temporal t;
    ck_assert_int_eq(analyse_gpu_temporal(s, 1, &o, &t), 0);
    ck_assert_uint_eq(t.filter.n_kept, 0);
    ck_assert_int_eq(t.kernel_ns, 0);
    ck_assert_int_eq(analyse_gpu_temporal(NULL, 0, &o, &t), 0);
    ck_assert_int_eq(t.kernel_ns, 0);
}
END_TEST

/* Kernel types: computation [0, 100) and [50, 150) merge into [0, 150); communication [100,
 * 300); memory [250, 400). Sets: C [0, 100), C+N [100, 150), N [150, 250), N+M [250, 300),
 * M [300, 400). Without memory the memcpy is no type. */
START_TEST(test_kernel_type_sweep)
{
    struct analyse_span s[] = {
        sp(ANALYSE_ROLE_KERNEL, "gemm", 0, 100, 1),
        sp(ANALYSE_ROLE_KERNEL, "gemm", 50, 100, 2),
        sp(ANALYSE_ROLE_KERNEL, "ncclKernel_AllReduce", 100, 200, 3),
        sp(ANALYSE_ROLE_MEMCPY, "Memcpy HtoD", 250, 150, 4),
        sp(ANALYSE_ROLE_KERNEL, "cudaSync", 0, 1000, 5), /* other: in no set */
    };
    struct analyse_gpu_opts o = {.include_memory = true};
    struct analyse_gpu_ktypes k;
    ck_assert_int_eq(analyse_gpu_kernel_types(s, 5, &o, &k), 0);
    ck_assert_int_eq(k.ns[1], 100);
    ck_assert_int_eq(k.ns[3], 50);
    ck_assert_int_eq(k.ns[2], 100);
    ck_assert_int_eq(k.ns[6], 50);
    ck_assert_int_eq(k.ns[4], 100);
    ck_assert_int_eq(k.ns[5] + k.ns[7], 0);
    ck_assert_int_eq(k.group_ns[0], 150); /* the merged computation */
    ck_assert_int_eq(k.group_ns[1], 200);
    ck_assert_int_eq(k.group_ns[2], 150);
    o.include_memory = false;
    ck_assert_int_eq(analyse_gpu_kernel_types(s, 5, &o, &k), 0);
    ck_assert_int_eq(k.ns[2], 150);
    ck_assert_int_eq(k.ns[4] + k.ns[6], 0);
    char buf[96];
    ck_assert_str_eq(analyse_gpu_mask_name(3, buf, sizeof buf), "COMPUTATION overlapping COMMUNICATION");
    ck_assert_str_eq(analyse_gpu_mask_name(7, buf, sizeof buf),
                     "COMPUTATION overlapping COMMUNICATION overlapping MEMORY");
    ck_assert_str_eq(analyse_gpu_mask_name(4, buf, sizeof buf), "MEMORY");
    ck_assert_str_eq(analyse_gpu_mask_name(6, buf, 12), "COMMUNICATI"); /* cut, NUL-terminated */
}
END_TEST

/* Launches: a launch [0, 20) of a kernel at 30 (delay 10), a memcpy launched at [40, 45) that starts
 * at 44 (delay clipped to 0), a launch by another runtime name (not a launch) and one after the
 * cut (its kernel not kept). */
START_TEST(test_launches)
{
    struct analyse_span s[] = {
        sp(ANALYSE_ROLE_STEP, "ProfilerStep#1", 0, 1000, -1),
        sp(ANALYSE_ROLE_STEP, "ProfilerStep#2", 1000, 1000, -1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 0, 20, 1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaMemcpyAsync", 40, 5, 2),
        sp(ANALYSE_ROLE_RUNTIME, "cuLaunchKernel", 50, 5, 3),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 1100, 5, 4),
        sp(ANALYSE_ROLE_KERNEL, "gemm", 30, 5, 1),
        sp(ANALYSE_ROLE_MEMCPY, "Memcpy HtoD", 44, 100, 2),
        sp(ANALYSE_ROLE_KERNEL, "gemm", 60, 5, 3),
        sp(ANALYSE_ROLE_KERNEL, "gemm", 1200, 5, 4),
    };
    struct analyse_gpu_opts o = {.include_memory = true};
    struct analyse_gpu_launch *l;
    size_t n;
    ck_assert_int_eq(analyse_gpu_launches(s, 10, &o, 10, 8, &l, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(l[0].correlation, 1);
    ck_assert_int_eq(l[0].cpu_dur_ns, 20);
    ck_assert_int_eq(l[0].gpu_dur_ns, 5);
    ck_assert_int_eq(l[0].delay_ns, 10);
    ck_assert(!l[0].is_short && l[0].runtime_outlier && l[0].delay_outlier); /* 20 > 10, 10 > 8 */
    ck_assert_int_eq(l[1].correlation, 2);
    ck_assert_int_eq(l[1].delay_ns, 0);
    ck_assert(!l[1].is_short && !l[1].runtime_outlier && !l[1].delay_outlier);
    ck_assert_uint_eq(l[1].kernel_len, strlen("Memcpy HtoD"));
    free(l);
    o.include_memory = false;
    ck_assert_int_eq(analyse_gpu_launches(s, 10, &o, 50, 100, &l, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(l[0].is_short); /* 5 < 20 <= 50 */
    free(l);
}
END_TEST

/* A device event on a stream. */
static struct analyse_span dev(const char *name, int64_t ts, int64_t dur, int64_t corr, int64_t stream)
{
    struct analyse_span s = sp(ANALYSE_ROLE_KERNEL, name, ts, dur, corr);
    s.tid = stream;
    return s;
}

/* HTA's idle categories: a kernel whose launch began after the previous kernel's end waits on
 * the host; else a gap under the threshold waits on kernels; else other. Streams apart; an event
 * without a stream is left out; the first event of a stream has no interval. */
START_TEST(test_idle_categories)
{
    struct analyse_span s[] = {
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 0, 10, 1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 20, 10, 2),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 150, 10, 3),  /* after k2's end: host */
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 160, 10, 4),
        dev("k1", 50, 50, 1, 7),   /* first: no interval */
        dev("k2", 110, 30, 2, 7),  /* gap 10 < 30: kernel wait */
        dev("k3", 200, 10, 3, 7),  /* gap 60, launch at 150 > 140: host wait */
        dev("k4", 300, 10, 4, 7),  /* gap 90 >= 30, launched before: other */
        dev("k5", 400, 10, -1, 7), /* no launch: gap 90, other */
        dev("x", 100, 10, 1, 9),   /* another stream: one event, no interval */
        dev("y", 500, 10, 2, -1),  /* no stream */
    };
    struct analyse_gpu_opts o = {0};
    struct analyse_gpu_filter f;
    struct analyse_gpu_idle *v;
    size_t n;
    ck_assert_int_eq(analyse_gpu_idle(s, sizeof s / sizeof s[0], &o, 30, &f, &v, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(v[0].stream, 7);
    ck_assert_uint_eq(v[0].n_events, 5);
    ck_assert_int_eq(v[0].ns[ANALYSE_GPU_IDLE_KERNEL_WAIT], 10);
    ck_assert_int_eq(v[0].ns[ANALYSE_GPU_IDLE_HOST_WAIT], 60);
    ck_assert_int_eq(v[0].ns[ANALYSE_GPU_IDLE_OTHER], 180);
    ck_assert_uint_eq(v[0].stats[ANALYSE_GPU_IDLE_OTHER].count, 2);
    ck_assert(v[0].stats[ANALYSE_GPU_IDLE_OTHER].mean == 90);
    ck_assert(v[0].stats[ANALYSE_GPU_IDLE_OTHER].std == 0);
    ck_assert(isnan(v[0].stats[ANALYSE_GPU_IDLE_HOST_WAIT].std)); /* one value */
    ck_assert_int_eq(v[1].stream, 9);
    ck_assert_uint_eq(v[1].n_events, 1);
    ck_assert_uint_eq(v[1].stats[ANALYSE_GPU_IDLE_OTHER].count, 0);
    ck_assert(isnan(v[1].stats[ANALYSE_GPU_IDLE_OTHER].mean));
    free(v);
    /* A higher threshold makes the 60 and 90 gaps kernel waits, but not the host's. */
    ck_assert_int_eq(analyse_gpu_idle(s, sizeof s / sizeof s[0], &o, 100, &f, &v, &n), 0);
    ck_assert_int_eq(v[0].ns[ANALYSE_GPU_IDLE_KERNEL_WAIT], 190);
    ck_assert_int_eq(v[0].ns[ANALYSE_GPU_IDLE_HOST_WAIT], 60);
    ck_assert_int_eq(v[0].ns[ANALYSE_GPU_IDLE_OTHER], 0);
    free(v);
}
END_TEST

/* pandas' describe(): linear quantiles between the closest ranks, the sample deviation. */
START_TEST(test_idle_interval_stats)
{
    struct analyse_span s[] = {dev("a", 0, 10, -1, 1), dev("b", 110, 10, -1, 1),
                               dev("c", 320, 10, -1, 1), dev("d", 630, 10, -1, 1),
                               dev("e", 1040, 10, -1, 1)};
    struct analyse_gpu_opts o = {0};
    struct analyse_gpu_filter f;
    struct analyse_gpu_idle *v;
    size_t n;
    ck_assert_int_eq(analyse_gpu_idle(s, 5, &o, 30, &f, &v, &n), 0);
    const struct analyse_gpu_stats *st = &v[0].stats[ANALYSE_GPU_IDLE_OTHER]; /* 100..400 */
    ck_assert_uint_eq(st->count, 4);
    ck_assert(st->min == 100 && st->max == 400 && st->mean == 250);
    ck_assert(fabs(st->q25 - 175) < 1e-9 && fabs(st->q50 - 250) < 1e-9 && fabs(st->q75 - 325) < 1e-9);
    ck_assert(fabs(st->std - sqrt(50000.0 / 3)) < 1e-9);
    free(v);
}
END_TEST

/* The launch queue: +1 at each launch, -1 at its device event's start, per stream; launches
 * first at one instant; time at or over max_queue; spans not named as launches do not count. */
START_TEST(test_queue_series)
{
    struct analyse_span s[] = {
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 0, 5, 1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 10, 5, 2),
        sp(ANALYSE_ROLE_RUNTIME, "cudaMemcpyAsync", 20, 5, 3),
        sp(ANALYSE_ROLE_RUNTIME, "cudaStreamSynchronize", 25, 5, 4),
        dev("k1", 20, 10, 1, 7), /* at 20: the launch of 3 first (2), then k1 (1) */
        dev("k2", 40, 10, 2, 7),
        dev("m3", 60, 10, 3, 7),
        dev("sync", 70, 1, 4, 7), /* its host span is no launch */
        dev("k9", 30, 10, 1, 8),  /* correlation 1 on stream 8 too: +1 at 0, -1 at 30 */
    };
    struct analyse_gpu_opts o = {0};
    struct analyse_gpu_queues q;
    ck_assert_int_eq(analyse_gpu_queues(s, sizeof s / sizeof s[0], &o, 2, 100, &q), 0);
    ck_assert_uint_eq(q.n_streams, 2);
    const struct analyse_gpu_queue *a = &q.streams[0];
    ck_assert_int_eq(a->stream, 7);
    static const int64_t ts[] = {0, 10, 20, 20, 40, 60}, len[] = {1, 2, 3, 2, 1, 0};
    ck_assert_uint_eq(a->n_points, 6);
    ck_assert_uint_eq(a->n_kept, 6);
    for (size_t i = 0; i < 6; i++) {
        ck_assert_int_eq(a->points[i].ts_ns, ts[i]);
        ck_assert_int_eq(a->points[i].len, len[i]);
    }
    ck_assert_int_eq(a->full_ns, 10 + 0 + 20); /* from 10 (2), 20 (3, lasts 0), 20 (2) to 40 */
    ck_assert(a->stats.max == 3 && a->stats.min == 0 && a->stats.q50 == 1.5);
    ck_assert_int_eq(q.streams[1].stream, 8);
    ck_assert_uint_eq(q.streams[1].n_points, 2);
    ck_assert_int_eq(q.trace_ns, 70); /* the latest start (sync, 70) - the earliest (0) */
    analyse_gpu_queues_done(&q);
}
END_TEST

/* Downsampling keeps the first and last points and each run's least and most, in order. */
START_TEST(test_queue_downsample_keeps_extremes)
{
    enum { N = 1000 };
    struct analyse_span *s = calloc(2 * N, sizeof *s);
    ck_assert_ptr_nonnull(s);
    /* N launches at 0..N-1, then their kernels: the queue climbs to N and drains to 0, with a
     * dip: kernel 0 runs at 500.5 (between launches) */
    for (int i = 0; i < N; i++) {
        s[i] = sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", i * 10, 1, i);
        s[N + i] = dev("k", i == 0 ? 5005 : N * 10 + i * 10, 1, i, 7);
    }
    struct analyse_gpu_opts o = {0};
    struct analyse_gpu_queues q;
    ck_assert_int_eq(analyse_gpu_queues(s, 2 * N, &o, ANALYSE_GPU_MAX_QUEUE, 50, &q), 0);
    const struct analyse_gpu_queue *a = &q.streams[0];
    ck_assert_uint_eq(a->n_points, 2 * N);
    ck_assert_uint_le(a->n_kept, 50);
    ck_assert_int_eq(a->points[0].ts_ns, 0);
    ck_assert_int_eq(a->points[a->n_kept - 1].len, 0);
    int64_t mx = 0;
    bool dip = false;
    for (size_t i = 0; i < a->n_kept; i++) {
        if (i > 0)
            ck_assert_int_ge(a->points[i].ts_ns, a->points[i - 1].ts_ns);
        mx = a->points[i].len > mx ? a->points[i].len : mx;
        dip |= a->points[i].ts_ns == 5005;
    }
    ck_assert_int_eq(mx, N - 1); /* the peak: every launch made, kernel 0 gone */
    ck_assert(a->stats.max == N - 1);
    ck_assert(dip); /* the dip is the least of its run */
    analyse_gpu_queues_done(&q);
    free(s);
}
END_TEST

/* HTA's per-kernel table: per type, names by sum; past num_kernels, HTA's fold into "others"
 * and its re-aggregation over the sums (kept rows: max = min = mean = sum, deviation 0). */
START_TEST(test_kernel_metrics)
{
    struct analyse_span s[] = {
        sp(ANALYSE_ROLE_KERNEL, "k40", 0, 40000, -1), sp(ANALYSE_ROLE_KERNEL, "k30", 50000, 30000, -1),
        sp(ANALYSE_ROLE_KERNEL, "k20", 90000, 20000, -1), sp(ANALYSE_ROLE_KERNEL, "k10", 120000, 10000, -1),
        sp(ANALYSE_ROLE_KERNEL, "ncclKernel_AllReduce", 0, 5000, -1),
        sp(ANALYSE_ROLE_KERNEL, "ncclKernel_AllReduce", 9000, 15000, -1),
    };
    struct analyse_gpu_opts o = {0};
    struct analyse_gpu_kmetric *m = NULL;
    size_t n = 0;
    /* 4 computation names > num_kernels 2: running sums 40 70 90 100, their 0.5 quantile 80 */
    ck_assert_int_eq(analyse_gpu_kernel_metrics(s, 6, &o, 2, 0.5, &m, &n), 0);
    ck_assert_uint_eq(n, 4);
    ck_assert(m[0].type == ANALYSE_GPU_COMPUTATION && m[0].name_len == 3 && memcmp(m[0].name, "k40", 3) == 0);
    ck_assert_double_eq_tol(m[0].max_us, 40, 1e-9);
    ck_assert(m[1].name && memcmp(m[1].name, "k30", 3) == 0);
    ck_assert(m[2].name == NULL); /* others: k20 and k10 */
    ck_assert_double_eq_tol(m[2].sum_us, 30, 1e-9);
    ck_assert_double_eq_tol(m[2].max_us, 20, 1e-9);
    ck_assert_double_eq_tol(m[2].min_us, 10, 1e-9);
    ck_assert_double_eq_tol(m[2].mean_us, 15, 1e-9);
    ck_assert_double_eq_tol(m[2].std_us, 7.0710678118654755, 1e-9);
    /* communication: one name, two calls, not folded: its own figures */
    ck_assert(m[3].type == ANALYSE_GPU_COMMUNICATION);
    ck_assert_double_eq_tol(m[3].sum_us, 20, 1e-9);
    ck_assert_double_eq_tol(m[3].max_us, 15, 1e-9);
    ck_assert_double_eq_tol(m[3].min_us, 5, 1e-9);
    ck_assert_double_eq_tol(m[3].std_us, 7.0710678118654755, 1e-9);
    free(m);
    ck_assert_int_eq(analyse_gpu_kernel_metrics(s, 6, &o, 10, 0.8, &m, &n), 0);
    ck_assert_uint_eq(n, 5);
    free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("analyse_gpu");
    TCase *tc = tcase_create("gpu");
    tcase_add_test(tc, test_kernel_types_as_hta_0_5_0);
    tcase_add_test(tc, test_filter_by_last_step);
    tcase_add_test(tc, test_rounding_and_negative_durations);
    tcase_add_test(tc, test_no_device_events);
    tcase_add_test(tc, test_kernel_type_sweep);
    tcase_add_test(tc, test_launches);
    tcase_add_test(tc, test_kernel_metrics);
    tcase_add_test(tc, test_idle_categories);
    tcase_add_test(tc, test_idle_interval_stats);
    tcase_add_test(tc, test_queue_series);
    tcase_add_test(tc, test_queue_downsample_keeps_extremes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
