/* SPDX-License-Identifier: MIT */
/* analyse_cluster: the cluster step trace's figures by mode and a rank's pipeline stage. */
#include "analyse_cluster.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_stage_of_rank)
{
    /* MindInsight's rank // (rank_size / stages) + 1: 8 ranks in 4 stages, 2 a stage */
    static const int64_t want[8] = {1, 1, 2, 2, 3, 3, 4, 4};
    for (int64_t r = 0; r < 8; r++)
        ck_assert_int_eq(analyse_cl_stage(r, 4, 8), want[r]);
    ck_assert_int_eq(analyse_cl_stage(1, 1, 2), 1);
    /* kept within 1..stages: MindInsight would say stage 2 of 1 (09_cluster_modes' data run) */
    ck_assert_int_eq(analyse_cl_stage(1, 1, 1), 1);
    ck_assert_int_eq(analyse_cl_stage(99, 4, 8), 4);
    /* nonsense layouts do not divide by zero */
    ck_assert_int_eq(analyse_cl_stage(3, 0, 0), 1);
    ck_assert_int_eq(analyse_cl_stage(3, 4, 2), 4);
    ck_assert_int_eq(analyse_cl_stage(-1, 2, 4), 1);
}
END_TEST

START_TEST(test_figures_by_mode)
{
    size_t n[3] = {0, 0, 0};
    for (int m = 0; m < 3; m++)
        for (int f = 0; f < ANALYSE_CL_N_FIGS; f++)
            n[m] += analyse_cl_mode_has((enum analyse_cl_mode)m, (enum analyse_cl_fig)f);
    /* MindInsight's list lengths: 4, 3 and 6 */
    ck_assert_uint_eq(n[ANALYSE_CL_DATA], 4);
    ck_assert_uint_eq(n[ANALYSE_CL_MODEL], 3);
    ck_assert_uint_eq(n[ANALYSE_CL_PIPELINE], 6);
    ck_assert(analyse_cl_mode_has(ANALYSE_CL_MODEL, ANALYSE_CL_INTERVAL));
    ck_assert(!analyse_cl_mode_has(ANALYSE_CL_MODEL, ANALYSE_CL_TOTAL));
    ck_assert_str_eq(analyse_cl_fig_phase(ANALYSE_CL_STAGE_TIME), "stage_time");
    ck_assert_ptr_null(analyse_cl_fig_phase(ANALYSE_CL_TAIL));
    ck_assert_str_eq(analyse_cl_fig_name(ANALYSE_CL_STAGE_TIME), "stage");
    ck_assert_int_eq(analyse_cl_mode_parse("pipeline-parallel", 17), ANALYSE_CL_PIPELINE);
    ck_assert_int_eq(analyse_cl_mode_parse("pipeline-parallel", 8), -1);
    ck_assert_int_eq(analyse_cl_mode_parse("tensor-parallel", 15), -1);
    ck_assert_str_eq(analyse_cl_mode_name(ANALYSE_CL_DATA), "data-parallel");
}
END_TEST

START_TEST(test_gb_bytes_and_ratio)
{
    /* MindSpore's GB is 2^30 bytes; rounded to the nearest byte */
    ck_assert_int_eq(analyse_cl_gb_bytes(31.0), 31LL << 30);
    ck_assert_int_eq(analyse_cl_gb_bytes(0.5), 1LL << 29);
    ck_assert_int_eq(analyse_cl_gb_bytes(1e-9), 1);       /* 1.07 bytes */
    ck_assert_int_eq(analyse_cl_gb_bytes(0.4e-9), 0);     /* 0.43 bytes */
    ck_assert_int_eq(analyse_cl_gb_bytes(-1), -1);
    ck_assert_int_eq(analyse_cl_gb_bytes(1e10), -1);      /* past 2^62 bytes */
    ck_assert_int_eq(analyse_cl_gb_bytes(NAN), -1);
    ck_assert_double_eq(analyse_cl_ratio(12.5, 50), 0.25);
    ck_assert_double_eq(analyse_cl_ratio(50, 50), 1);
    ck_assert_double_eq(analyse_cl_ratio(1, 0), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("analyse_cluster");
    TCase *tc = tcase_create("cluster");
    tcase_add_test(tc, test_stage_of_rank);
    tcase_add_test(tc, test_figures_by_mode);
    tcase_add_test(tc, test_gb_bytes_and_ratio);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
