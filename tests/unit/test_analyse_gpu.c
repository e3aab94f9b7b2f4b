/* SPDX-License-Identifier: MIT */
/*
 * Table tests of HTA's GPU time (gpu.c): kernel types by HTA 0.5.0's patterns, which device events
 * its filter keeps, the kernel-type sweep, and the temporal breakdown's merge, including HTA's microsecond rounding of a
 * nanosecond trace (which can make a duration negative). The figures on real traces are checked
 * against HTA itself by tests/integ/test_gpu.py.
 */
#include <check.h>
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
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
