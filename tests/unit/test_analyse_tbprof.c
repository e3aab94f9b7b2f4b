/* SPDX-License-Identifier: MIT */
/*
 * Table tests of torch-tb-profiler's kernel view and communication-operator table (tbprof.c):
 * the tensor-core rule, the launch link (innermost operator of the runtime call's thread), the
 * duration-weighted means, the grouping by operator and launch figures, and the alignment of a
 * collective's intervals across ranks. The figures on real traces are checked against the
 * plugin's own answers by tests/integ/test_tb_kernels.py.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "analyse_tbprof.h"

static struct analyse_span sp(enum analyse_role role, const char *name, int64_t tid, int64_t ts,
                              int64_t dur, int64_t corr)
{
    return (struct analyse_span){.ts_ns = ts, .dur_ns = dur, .name = name,
                                 .name_len = strlen(name), .pid = 1, .tid = tid,
                                 .correlation = corr, .external_id = -1, .role = role};
}

static struct analyse_tbk_args none(void)
{
    return (struct analyse_tbk_args){.blocks_per_sm = -1, .occupancy_pct = -1, .regs = -1,
                                     .smem = -1, .input_bytes = -1};
}

static struct analyse_tbk_args kargs(double bsm, double occ, int32_t grid)
{
    struct analyse_tbk_args a = none();
    a.blocks_per_sm = bsm;
    a.occupancy_pct = occ;
    a.grid[0] = grid;
    a.n_grid = 1;
    return a;
}

START_TEST(test_tensor_core_rule)
{
    static const struct {
        const char *name;
        bool tc;
    } cases[] = {
        {"volta_h884gemm_64x64_ldg8_nn", true},
        {"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32", true},
        {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align1>", true},
        {"ampere_sgemm_128x64_nn", false},
        {"void at::native::vectorized_elementwise_kernel<4>", false},
        {"H884", false}, /* case matters */
        {"", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(analyse_tbk_tensor_core(cases[i].name, strlen(cases[i].name)) == cases[i].tc,
                      "%s", cases[i].name);
    ck_assert_int_eq(analyse_tbk_type_bytes("float", 5), 4);
    ck_assert_int_eq(analyse_tbk_type_bytes("long int", 8), 8);
    ck_assert_int_eq(analyse_tbk_type_bytes("c10::BFloat16", 13), 2);
    ck_assert_int_eq(analyse_tbk_type_bytes("Scalar", 6), 0);
}
END_TEST

/* Thread 1: step ⊃ aten::mm ⊃ launch 1 and aten::add (sibling) ⊃ launch 2; launch 3 outside
 * any operator; kernel 4 has no runtime call. Thread 2's operator overlapping launch 1's time
 * must not take it. */
START_TEST(test_kernels_by_name_and_operator)
{
    struct analyse_span v[] = {
        sp(ANALYSE_ROLE_STEP, "ProfilerStep#1", 1, 0, 1000, -1),
        sp(ANALYSE_ROLE_HOST_OP, "aten::mm", 1, 10, 100, -1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 1, 20, 5, 1),
        sp(ANALYSE_ROLE_HOST_OP, "aten::add", 1, 200, 50, -1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 1, 210, 5, 2),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 1, 2000, 5, 3),
        sp(ANALYSE_ROLE_HOST_OP, "other_thread_op", 2, 0, 5000, -1),
        sp(ANALYSE_ROLE_KERNEL, "h884gemm", 7, 30, 300, 1),
        sp(ANALYSE_ROLE_KERNEL, "h884gemm", 7, 400, 100, 2),
        sp(ANALYSE_ROLE_KERNEL, "relu", 7, 2100, 100, 3),
        sp(ANALYSE_ROLE_KERNEL, "relu", 7, 2300, 300, 4),
    };
    struct analyse_tbk_args a[] = {none(), none(), none(), none(), none(), none(), none(),
                                   kargs(2, 50, 8), kargs(4, 25, 8), kargs(-1, -1, 1),
                                   kargs(1, 10, 1)};
    size_t n = sizeof v / sizeof v[0];
    struct analyse_tbk *t = NULL;
    ck_assert_int_eq(analyse_tbk_compute(v, a, n, ANALYSE_TBK_BY_NAME, &t), 0);
    ck_assert_int_eq(t->kernels, 4);
    ck_assert_int_eq(t->total_ns, 800);
    ck_assert_int_eq(t->tc_ns, 400);
    ck_assert_int_eq(t->launched, 2); /* 3's call is in no operator, 4 has none */
    ck_assert(t->has_blocks_per_sm && t->has_occupancy);
    ck_assert_uint_eq(t->n_rows, 2);
    /* both rows total 400: by name then */
    ck_assert_str_eq(t->rows[0].name, "h884gemm");
    ck_assert(t->rows[0].tensor_core);
    ck_assert_int_eq(t->rows[0].calls, 2);
    ck_assert_int_eq(t->rows[0].min_ns, 100);
    ck_assert_int_eq(t->rows[0].max_ns, 300);
    /* (2 * 300 + 4 * 100) / 400, (50 * 300 + 25 * 100) / 400; absent counts 0 */
    ck_assert_double_eq_tol(t->rows[0].blocks_per_sm, 2.5, 1e-12);
    ck_assert_double_eq_tol(t->rows[0].occupancy_pct, 43.75, 1e-12);
    ck_assert_double_eq_tol(t->rows[1].blocks_per_sm, 0.75, 1e-12);
    analyse_tbk_free(t);

    ck_assert_int_eq(analyse_tbk_compute(v, a, n, ANALYSE_TBK_BY_OPERATOR, &t), 0);
    /* h884gemm under aten::mm, under aten::add; relu (same grid) without an operator */
    ck_assert_uint_eq(t->n_rows, 3);
    int seen = 0;
    for (size_t i = 0; i < t->n_rows; i++) {
        const struct analyse_tbk_row *r = &t->rows[i];
        if (strcmp(r->name, "h884gemm") == 0 && r->op && r->op_len == 8 &&
            memcmp(r->op, "aten::mm", 8) == 0) {
            ck_assert_int_eq(r->total_ns, 300);
            ck_assert_int_eq(r->grid[0], 8);
            seen |= 1;
        } else if (strcmp(r->name, "h884gemm") == 0 && r->op && r->op_len == 9) {
            ck_assert_int_eq(r->total_ns, 100);
            seen |= 2;
        } else if (strcmp(r->name, "relu") == 0 && !r->op) {
            ck_assert_int_eq(r->calls, 2);
            seen |= 4;
        } else {
            seen |= 8;
        }
    }
    ck_assert_int_eq(seen, 4 | 2 | 1);
    analyse_tbk_free(t);
}
END_TEST

/* The same kernel name with two grids under one operator: two rows. */
START_TEST(test_by_operator_splits_launch_figures)
{
    struct analyse_span v[] = {
        sp(ANALYSE_ROLE_HOST_OP, "aten::mm", 1, 0, 100, -1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 1, 10, 5, 1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 1, 20, 5, 2),
        sp(ANALYSE_ROLE_KERNEL, "k", 7, 30, 10, 1),
        sp(ANALYSE_ROLE_KERNEL, "k", 7, 50, 10, 2),
    };
    struct analyse_tbk_args a[] = {none(), none(), none(), kargs(1, 1, 2), kargs(1, 1, 3)};
    struct analyse_tbk *t = NULL;
    ck_assert_int_eq(analyse_tbk_compute(v, a, 5, ANALYSE_TBK_BY_OPERATOR, &t), 0);
    ck_assert_uint_eq(t->n_rows, 2);
    ck_assert_int_eq(t->launched, 2);
    analyse_tbk_free(t);
    ck_assert_int_eq(analyse_tbk_compute(v, a, 5, ANALYSE_TBK_BY_NAME, &t), 0);
    ck_assert_uint_eq(t->n_rows, 1);
    analyse_tbk_free(t);
}
END_TEST

/* Two ranks, one all_reduce each with one kernel: rank 0's kernel [100, 200), rank 1's
 * [150, 200): the transfer is the shorter, 50, ending where each ends; rank 0 waited 50. */
START_TEST(test_comm_alignment)
{
    struct analyse_span r0[] = {
        sp(ANALYSE_ROLE_COMMUNICATION, "nccl:all_reduce", 1, 0, 20, -1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 1, 5, 5, 9),
        sp(ANALYSE_ROLE_KERNEL, "ncclKernel", 7, 100, 100, 9),
    };
    struct analyse_span r1[] = {
        sp(ANALYSE_ROLE_COMMUNICATION, "nccl:all_reduce", 1, 0, 30, -1),
        sp(ANALYSE_ROLE_RUNTIME, "cudaLaunchKernel", 1, 5, 5, 4),
        sp(ANALYSE_ROLE_KERNEL, "ncclKernel", 7, 150, 50, 4),
    };
    struct analyse_tbk_args a[3] = {none(), none(), none()};
    a[0].input_bytes = 400;
    struct analyse_tbc_rank ranks[2];
    ck_assert_int_eq(analyse_tbc_calls(r0, a, 3, ANALYSE_TBC_LAUNCH, 0, &ranks[0]), 0);
    ck_assert_int_eq(analyse_tbc_calls(r1, a, 3, ANALYSE_TBC_LAUNCH, 1, &ranks[1]), 0);
    ck_assert_uint_eq(ranks[0].n_calls, 1);
    ck_assert_uint_eq(ranks[0].calls[0].n, 2); /* host span and kernel */
    struct analyse_tbc *t = NULL;
    ck_assert_int_eq(analyse_tbc_table(ranks, 2, &t), 0);
    ck_assert_uint_eq(t->n_rows, 2);
    ck_assert_int_eq(t->rows[0].rank, 0);
    ck_assert_int_eq(t->rows[0].bytes, 400);
    ck_assert_int_eq(t->rows[0].latency_ns, 20 + 100);
    /* host spans 20 and 30: 20 each; kernels: 50 each */
    ck_assert_int_eq(t->rows[0].transfer_ns, 20 + 50);
    ck_assert_int_eq(t->rows[1].latency_ns, 30 + 50);
    ck_assert_int_eq(t->rows[1].transfer_ns, 20 + 50);
    ck_assert_int_eq(t->rows[0].unmatched, 0);
    analyse_tbc_free(t);
    /* External id linking (tb-profiler 0.4.3): none here, each op is its host span */
    analyse_tbc_rank_done(&ranks[0]);
    analyse_tbc_rank_done(&ranks[1]);
    ck_assert_int_eq(analyse_tbc_calls(r0, a, 3, ANALYSE_TBC_EXTERNAL_ID, 0, &ranks[0]), 0);
    ck_assert_uint_eq(ranks[0].calls[0].n, 1);
    /* a rank alone: nothing to compare with, the transfer is its own interval */
    ck_assert_int_eq(analyse_tbc_table(ranks, 1, &t), 0);
    ck_assert_int_eq(t->rows[0].transfer_ns, t->rows[0].latency_ns);
    analyse_tbc_free(t);
    analyse_tbc_rank_done(&ranks[0]);
}
END_TEST

/* Different call counts: the unpaired call keeps its own interval and is counted. */
START_TEST(test_comm_unmatched)
{
    struct analyse_span r0[] = {
        sp(ANALYSE_ROLE_COMMUNICATION, "nccl:all_reduce", 1, 0, 20, -1),
        sp(ANALYSE_ROLE_COMMUNICATION, "nccl:all_reduce", 1, 100, 40, -1),
    };
    struct analyse_span r1[] = {
        sp(ANALYSE_ROLE_COMMUNICATION, "nccl:all_reduce", 1, 0, 10, -1),
    };
    struct analyse_tbk_args a[2] = {none(), none()};
    struct analyse_tbc_rank ranks[2];
    ck_assert_int_eq(analyse_tbc_calls(r0, a, 2, ANALYSE_TBC_LAUNCH, 0, &ranks[0]), 0);
    ck_assert_int_eq(analyse_tbc_calls(r1, a, 1, ANALYSE_TBC_LAUNCH, 1, &ranks[1]), 0);
    struct analyse_tbc *t = NULL;
    ck_assert_int_eq(analyse_tbc_table(ranks, 2, &t), 0);
    ck_assert_int_eq(t->rows[0].calls, 2);
    ck_assert_int_eq(t->rows[0].unmatched, 1);
    ck_assert_int_eq(t->rows[0].latency_ns, 60);
    ck_assert_int_eq(t->rows[0].transfer_ns, 10 + 40);
    analyse_tbc_free(t);
    analyse_tbc_rank_done(&ranks[0]);
    analyse_tbc_rank_done(&ranks[1]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("analyse_tbprof");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_tensor_core_rule);
    tcase_add_test(tc, test_kernels_by_name_and_operator);
    tcase_add_test(tc, test_by_operator_splits_launch_figures);
    tcase_add_test(tc, test_comm_alignment);
    tcase_add_test(tc, test_comm_unmatched);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
