/* SPDX-License-Identifier: MIT */
/* analyse_cluster: the cluster step trace's figures by mode and a rank's pipeline stage. */
#include "analyse_cluster.h"
#include "analyse_helper.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
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

/* ---- MindInsight's cluster proposals (helper.c rules_cluster(), mindinsight.md §4.3) ---- */

static struct analyse_helper_cl_rank cl_rank(int64_t rank, int64_t stage)
{
    /* with its hccl_raw (has_links), whose links each test gives */
    return (struct analyse_helper_cl_rank){rank, stage, NAN, NAN, NAN, NAN, NAN, NAN, NAN, true};
}

/* Runs the helper on a cluster alone; the suggestion of code, or NULL. */
static const struct analyse_helper_suggestion *run_cl(const struct analyse_helper_cluster *c,
                                                      struct analyse_helper_result **res,
                                                      const char *code)
{
    struct analyse_helper_input in;
    struct analyse_helper_rules ru;
    analyse_helper_input_init(&in);
    analyse_helper_rules_default(&ru);
    in.framework = ANALYSE_FW_MINDSPORE;
    in.cluster = c;
    ck_assert_int_eq(analyse_helper_run(&in, &ru, res), 0);
    for (size_t i = 0; i < (*res)->n; i++)
        if (strcmp((*res)->s[i].code, code) == 0)
            return &(*res)->s[i];
    return NULL;
}

START_TEST(test_cluster_step_interval_threshold)
{
    /* avg of 10, 10, 14.4 ms = 11.4667; 14.4 / 11.4667 - 1 = 0.2558 > 0.2: rank 2 */
    struct analyse_helper_cl_rank r[3] = {cl_rank(0, 1), cl_rank(1, 1), cl_rank(2, 1)};
    const double iv[3] = {10e6, 10e6, 14.4e6};
    for (int i = 0; i < 3; i++)
        r[i].interval_ns = iv[i];
    struct analyse_helper_cluster c = {.mode = ANALYSE_CL_MODEL, .stages = 1, .ranks = r, .n = 3};
    struct analyse_helper_result *res;
    const struct analyse_helper_suggestion *g = run_cl(&c, &res, "cluster_step_interval");
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(g->subject, 2);
    ck_assert_double_eq(g->evidence[0].value, 14.4);
    ck_assert_double_eq(g->evidence[1].value, 25.58);
    analyse_helper_result_free(res);
    /* exactly 20 % above (12, 9, 9: avg 10) does not fire: MindInsight's > 0.2 */
    r[0].interval_ns = 12e6;
    r[1].interval_ns = r[2].interval_ns = 9e6;
    ck_assert_ptr_null(run_cl(&c, &res, "cluster_step_interval"));
    analyse_helper_result_free(res);
    /* a rank without its step trace: skipped, the reason said */
    r[1].interval_ns = NAN;
    g = run_cl(&c, &res, "cluster_proposal_skipped");
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_nonnull(strstr(g->message, "step_interval is not analysed, rank(s) 1 have no "
                                             "step_trace_raw"));
    analyse_helper_result_free(res);
    ck_assert_ptr_null(run_cl(&c, &res, "cluster_step_interval"));
    analyse_helper_result_free(res);
}
END_TEST

START_TEST(test_cluster_rates_and_flops)
{
    /* data-parallel: computation FP+BP, communication the tail; rate 3 / (27 + 3) = 0.1 does
     * not fire, 3.1 / 30.1 = 0.10299 does (10.3 %) */
    struct analyse_helper_cl_rank r[2] = {cl_rank(0, 1), cl_rank(1, 2)};
    r[0].computation_ns = 13e6;
    r[1].computation_ns = 14e6;
    r[0].comm_alone_ns = 1e6;
    r[1].comm_alone_ns = 2e6;
    r[0].interval_ns = r[1].interval_ns = 1e6;
    struct analyse_helper_cluster c = {.mode = ANALYSE_CL_DATA, .stages = 1, .ranks = r, .n = 2};
    struct analyse_helper_result *res;
    ck_assert_ptr_null(run_cl(&c, &res, "cluster_data_parallel_communication_rate"));
    analyse_helper_result_free(res);
    r[1].comm_alone_ns = 2.1e6;
    const struct analyse_helper_suggestion *g =
        run_cl(&c, &res, "cluster_data_parallel_communication_rate");
    ck_assert_ptr_nonnull(g);
    ck_assert_double_eq(g->evidence[0].value, 10.3);
    ck_assert_double_eq(g->evidence[0].threshold, 10);
    analyse_helper_result_free(res);
    /* no flops_summary at all: flops_per_second is skipped */
    ck_assert_ptr_nonnull(run_cl(&c, &res, "cluster_proposal_skipped"));
    analyse_helper_result_free(res);
    /* FLOPS 100 and 60: avg 80, (80 - 60) / 80 = 0.25 > 0.2: rank 1, 25 % */
    r[0].flops_per_second_g = 100;
    r[1].flops_per_second_g = 60;
    r[0].flops_m = 300;
    r[1].flops_m = 100;
    g = run_cl(&c, &res, "cluster_flops_per_second");
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(g->subject, 1);
    ck_assert_double_eq(g->evidence[1].value, 25);
    analyse_helper_result_free(res);
    /* pipeline, 2 stages of one rank: stage FLOPs 300 and 100, avg 200, stage 1 is 50 % above;
     * between stages 5 / (27 + 3.1) = 16.61 %; within: stage 1 4 / 14 = 28.57 % (stage 2 0) */
    c.mode = ANALYSE_CL_PIPELINE;
    c.stages = 2;
    r[0].receive_alone_ns = r[1].receive_alone_ns = 2.5e6;
    r[0].collective_ns = 4e6;
    r[1].collective_ns = 0;
    g = run_cl(&c, &res, "cluster_pipeline_stage_flops");
    ck_assert_ptr_nonnull(g);
    ck_assert_double_eq(g->evidence[0].value, 1);
    ck_assert_double_eq(g->evidence[2].value, 50);
    analyse_helper_result_free(res);
    g = run_cl(&c, &res, "cluster_pipeline_between_stage_communication_rate");
    ck_assert_ptr_nonnull(g);
    ck_assert_double_eq(g->evidence[0].value, 16.61);
    analyse_helper_result_free(res);
    g = run_cl(&c, &res, "cluster_pipeline_within_stage_communication_rate");
    ck_assert_ptr_nonnull(g);
    ck_assert_double_eq(g->evidence[0].value, 28.57);
    ck_assert_double_eq(g->evidence[1].value, 1);
    analyse_helper_result_free(res);
    /* no cluster: none of these */
    struct analyse_helper_input in;
    struct analyse_helper_rules ru;
    analyse_helper_input_init(&in);
    analyse_helper_rules_default(&ru);
    ck_assert_int_eq(analyse_helper_run(&in, &ru, &res), 0);
    ck_assert_uint_eq(res->n, 0);
    analyse_helper_result_free(res);
}
END_TEST

static struct analyse_comm_link cl_ln(int64_t rank, int64_t src, int64_t dst, const char *type,
                                      int64_t bw)
{
    struct analyse_comm_link l = {.rank = rank, .src = src, .dst = dst, .bw_bytes_per_s = bw};
    snprintf(l.type, sizeof l.type, "%s", type);
    return l;
}

/* The i-th cluster_link suggestion of res, or NULL. */
static const struct analyse_helper_suggestion *nth_link(const struct analyse_helper_result *res,
                                                        size_t i)
{
    for (size_t k = 0; k < res->n; k++)
        if (strcmp(res->s[k].code, "cluster_link") == 0 && i-- == 0)
            return &res->s[k];
    return NULL;
}

START_TEST(test_cluster_link)
{
    /* MindInsight's _rank_link_analyze: per type, the links of every rank's average row but a
     * rank's own (0-0's 1 B/s would otherwise be the outlier), mean bandwidth; the link below
     * it by the largest share > 0.2. The links come in hello order (rank 2's first): the rule
     * reads them in the ranks' order. */
    struct analyse_helper_cl_rank r[3] = {cl_rank(0, 1), cl_rank(1, 1), cl_rank(2, 1)};
    struct analyse_comm_link l[] = {
        cl_ln(2, 2, 0, "RDMA", 100), cl_ln(2, 2, 1, "RDMA", 80),
        cl_ln(1, 1, 0, "SDMA", 100), cl_ln(1, 0, 1, "SDMA", 60),
        cl_ln(0, 0, 0, "SDMA", 1),   cl_ln(0, 1, 0, "SDMA", 100),
    };
    struct analyse_helper_cluster c = {.mode = ANALYSE_CL_DATA, .stages = 1, .ranks = r, .n = 3,
                                       .links = l, .n_links = 6};
    struct analyse_helper_result *res;
    /* SDMA: 100, 100, 60: mean 86.667, (86.667 - 60) / 86.667 = 30.77 %; RDMA: 100, 80:
     * mean 90, 11.1 % is not above 20 % */
    run_cl(&c, &res, "cluster_link");
    const struct analyse_helper_suggestion *g = nth_link(res, 0);
    ck_assert_ptr_nonnull(g);
    ck_assert_str_eq(g->view, "cluster-links");
    ck_assert_double_eq(g->evidence[0].value, 0);
    ck_assert_double_eq(g->evidence[1].value, 1);
    ck_assert_double_eq(g->evidence[2].value, 60);
    ck_assert_double_eq(g->evidence[3].value, 30.77);
    ck_assert_double_eq(g->evidence[3].threshold, 20);
    ck_assert_ptr_nonnull(strstr(g->message, "SDMA link 0-1 is 60 B/s, which is 30.77% lower"));
    ck_assert_ptr_null(nth_link(res, 1));
    analyse_helper_result_free(res);
    /* RDMA 2-1 at 60: mean 80, 25 %: a second suggestion, after SDMA (rank 0's type first) */
    l[1].bw_bytes_per_s = 60;
    run_cl(&c, &res, "cluster_link");
    ck_assert_ptr_nonnull(nth_link(res, 0));
    ck_assert_ptr_nonnull(strstr(nth_link(res, 0)->message, "SDMA"));
    g = nth_link(res, 1);
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_nonnull(strstr(g->message, "RDMA link 2-1"));
    ck_assert_double_eq(g->evidence[3].value, 25);
    analyse_helper_result_free(res);
    /* exactly 20 % below (120 and 80: mean 100) does not fire: MindInsight's > 0.2 */
    l[0].bw_bytes_per_s = 120;
    l[1].bw_bytes_per_s = 80;
    run_cl(&c, &res, "cluster_link");
    ck_assert_ptr_null(nth_link(res, 1));
    ck_assert_ptr_nonnull(strstr(nth_link(res, 0)->message, "SDMA"));
    analyse_helper_result_free(res);
    /* a tie keeps the first in the ranks' order: 0-1 (rank 1's) before 2-0 (rank 2's) at 60 */
    l[0] = cl_ln(2, 2, 0, "SDMA", 60);
    l[1] = cl_ln(2, 2, 1, "SDMA", 200);
    run_cl(&c, &res, "cluster_link");
    g = nth_link(res, 0);
    ck_assert_ptr_nonnull(g);
    ck_assert_double_eq(g->evidence[0].value, 0);
    ck_assert_double_eq(g->evidence[1].value, 1);
    ck_assert_ptr_null(nth_link(res, 1));
    analyse_helper_result_free(res);
    /* a rank without hccl_raw: not analysed, the reason said */
    r[1].has_links = false;
    ck_assert_ptr_null(run_cl(&c, &res, "cluster_link"));
    bool said = false; /* among the skipped analyses (these ranks have no step trace either) */
    for (size_t k = 0; k < res->n; k++)
        said = said || (strcmp(res->s[k].code, "cluster_proposal_skipped") == 0 &&
                         strstr(res->s[k].message, "cluster_link is not analysed, rank(s) 1 "
                                                   "have no hccl_raw"));
    ck_assert(said);
    analyse_helper_result_free(res);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("analyse_cluster");
    TCase *tc = tcase_create("cluster");
    tcase_add_test(tc, test_stage_of_rank);
    tcase_add_test(tc, test_figures_by_mode);
    tcase_add_test(tc, test_gb_bytes_and_ratio);
    tcase_add_test(tc, test_cluster_step_interval_threshold);
    tcase_add_test(tc, test_cluster_rates_and_flops);
    tcase_add_test(tc, test_cluster_link);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
