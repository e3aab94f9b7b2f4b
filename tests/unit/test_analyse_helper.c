/* SPDX-License-Identifier: MIT */
/*
 * Tests of the helper rule table and the per-rank statistics (helper.c, ranks.c). Every rule is
 * run at, just below and just above its threshold, which pins the comparison the peer uses
 * (MindInsight and torch-tb-profiler use '>' / '<', TF's classes '>='); missing evidence must
 * yield no suggestion at all. No MindSpore fixture in tests/data carries MindInsight's
 * proposer output (no "propose" key in any expected.json), so there is no golden file here.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyse_breakdown.h"
#include "analyse_helper.h"
#include "analyse_queues.h"
#include "analyse_ranks.h"

static struct analyse_helper_result *run(const struct analyse_helper_input *in,
                                         const struct analyse_helper_rules *ru)
{
    struct analyse_helper_result *res = NULL;
    ck_assert_int_eq(analyse_helper_run(in, ru, &res), 0);
    ck_assert_ptr_nonnull(res);
    return res;
}

static const struct analyse_helper_suggestion *find(const struct analyse_helper_result *res,
                                                    const char *code)
{
    for (size_t i = 0; i < res->n; i++)
        if (strcmp(res->s[i].code, code) == 0)
            return &res->s[i];
    return NULL;
}

/* ===== Rules at their boundaries ============================================================ */

static void set_interval(struct analyse_helper_input *in, double v) { in->st_interval_ns = v; }
static void set_cpu(struct analyse_helper_input *in, double v) { in->host_cpu_pct = v; }
static void set_dl(struct analyse_helper_input *in, double v)
{
    in->has_breakdown = true;
    in->bd_total_ns = 1000;
    in->bd_avg_ns[ANALYSE_BD_DATALOADER] = v;
}
static void set_comm(struct analyse_helper_input *in, double v)
{
    in->has_breakdown = true;
    in->bd_total_ns = 1000;
    in->bd_avg_ns[ANALYSE_BD_COMMUNICATION] = v;
}
static struct analyse_bd_gpu one_gpu;
static void set_gpu(struct analyse_helper_input *in, double v)
{
    one_gpu = (struct analyse_bd_gpu){.pid = 3, .busy_ns = 0, .utilization = v};
    in->gpus = &one_gpu;
    in->n_gpus = 1;
}
static void set_input(struct analyse_helper_input *in, double v) { in->input_pct = v; }
static void set_input_other3(struct analyse_helper_input *in, double v)
{
    in->input_pct = v;
    in->all_other_pct = 3;
}
static void set_other(struct analyse_helper_input *in, double v)
{
    in->input_pct = 1;
    in->all_other_pct = v;
}
static struct analyse_queue_stats hq, dq;
static void set_host_empty(struct analyse_helper_input *in, double v)
{
    hq = (struct analyse_queue_stats){.n_samples = 10, .n_empty = (size_t)v};
    in->host_queue = &hq;
}
static void set_dev_empty(struct analyse_helper_input *in, double v)
{
    hq = (struct analyse_queue_stats){.n_samples = 10, .n_empty = 3};
    dq = (struct analyse_queue_stats){.n_samples = 10, .n_empty = (size_t)v};
    in->host_queue = &hq;
    in->device_queue = &dq;
}

static const struct rule_case {
    const char *what;
    void (*set)(struct analyse_helper_input *, double);
    double value;
    const char *expect;     /* code that must be present, NULL for none of want_absent */
    const char *absent;     /* code that must be absent */
    size_t n;               /* exact number of suggestions */
} rule_cases[] = {
    {"interval at 0.5 ms", set_interval, 500000, NULL, "step_interval_long", 0},
    {"interval below", set_interval, 499999, NULL, "step_interval_long", 0},
    {"interval above", set_interval, 500001, "step_interval_long", NULL, 1},
    {"cpu at 80", set_cpu, 80, NULL, "cpu_high", 0},
    {"cpu 80.5 rounds to 80 (half even)", set_cpu, 80.5, NULL, "cpu_high", 0},
    {"cpu 79.9", set_cpu, 79.9, NULL, "cpu_high", 0},
    {"cpu 80.6 rounds to 81", set_cpu, 80.6, "cpu_high", NULL, 1},
    {"cpu 81.5 rounds to 82", set_cpu, 81.5, "cpu_high", NULL, 1},
    {"dataloader at 5 %", set_dl, 50, NULL, "dataloader_high", 0},
    {"dataloader below", set_dl, 49.999, NULL, "dataloader_high", 0},
    {"dataloader above", set_dl, 50.001, "dataloader_high", NULL, 1},
    {"communication at 10 %", set_comm, 100, NULL, "communication_high", 0},
    {"communication below", set_comm, 99.999, NULL, "communication_high", 0},
    {"communication above", set_comm, 100.001, "communication_high", NULL, 1},
    {"gpu at 0.5", set_gpu, 0.5, NULL, "gpu_util_low", 0},
    {"gpu above", set_gpu, 0.50001, NULL, "gpu_util_low", 0},
    {"gpu below", set_gpu, 0.49999, "gpu_util_low", NULL, 1},
    {"gpu unknown", set_gpu, NAN, NULL, "gpu_util_low", 0},
    {"input at 20", set_input, 20, "input_bound_high", NULL, 1},
    {"input just above 20", set_input, 20.001, "input_bound_high", NULL, 1},
    {"input just below 20", set_input, 19.999, "input_bound_moderate", NULL, 1},
    {"input at 5", set_input, 5, "input_bound_moderate", NULL, 1},
    {"input just above 5", set_input, 5.001, "input_bound_moderate", NULL, 1},
    {"input just below 5, no all-other", set_input, 4.999, NULL, "input_bound_moderate", 0},
    {"input below 5, all-other 3", set_input_other3, 4.999, "input_bound_potential", NULL, 1},
    {"all-other at 3", set_other, 3, "input_bound_potential", NULL, 1},
    {"all-other just above 3", set_other, 3.001, "input_bound_potential", NULL, 1},
    {"all-other just below 3", set_other, 2.999, NULL, "input_bound_potential", 0},
    {"host queue empty 3/10 (= 30 %)", set_host_empty, 3, "queue_ok", "queue_host_empty", 1},
    {"host queue empty 4/10", set_host_empty, 4, "queue_host_empty", NULL, 1},
    {"host queue empty 2/10", set_host_empty, 2, "queue_ok", "queue_host_empty", 1},
    {"chip queue empty 1/10", set_dev_empty, 1, "queue_device_empty", "queue_ok", 1},
    {"chip queue empty 0/10", set_dev_empty, 0, "queue_ok", "queue_device_empty", 1},
};

START_TEST(test_helper_run_rule_boundaries)
{
    const struct rule_case *c = &rule_cases[_i];
    struct analyse_helper_rules ru;
    analyse_helper_rules_default(&ru);
    ru.mindinsight_gate = false; /* each rule alone; the gate has its own test */
    struct analyse_helper_input in;
    analyse_helper_input_init(&in);
    c->set(&in, c->value);
    struct analyse_helper_result *res = run(&in, &ru);
    ck_assert_msg(res->n == c->n, "%s: %zu suggestions, want %zu", c->what, res->n, c->n);
    if (c->expect) {
        const struct analyse_helper_suggestion *g = find(res, c->expect);
        ck_assert_msg(g != NULL, "%s: no %s", c->what, c->expect);
        ck_assert(g->n_evidence >= 1);
        ck_assert_ptr_nonnull(g->view);
        ck_assert_ptr_nonnull(g->source);
        ck_assert(g->message[0] != '\0');
    }
    if (c->absent)
        ck_assert_msg(find(res, c->absent) == NULL, "%s: unexpected %s", c->what, c->absent);
    analyse_helper_result_free(res);
}
END_TEST

START_TEST(test_helper_run_evidence_and_wording)
{
    struct analyse_helper_rules ru;
    analyse_helper_rules_default(&ru);
    struct analyse_helper_input in;
    analyse_helper_input_init(&in);
    in.st_interval_ns = 800000;
    set_dl(&in, 120);
    struct analyse_helper_result *res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 2);
    /* Rule-table order: MindInsight first, then torch-tb-profiler. */
    ck_assert_str_eq(res->s[0].code, "step_interval_long");
    ck_assert_str_eq(res->s[0].view, "step-trace");
    ck_assert_str_eq(res->s[0].evidence[0].name, "interval_ms");
    ck_assert_double_eq_tol(res->s[0].evidence[0].value, 0.8, 1e-12);
    ck_assert_str_eq(res->s[0].evidence[0].op, ">");
    ck_assert_double_eq(res->s[0].evidence[0].threshold, 0.5);
    ck_assert_ptr_nonnull(strstr(res->s[0].message, "greater than 0.5 ms"));
    ck_assert_str_eq(res->s[1].code, "dataloader_high");
    ck_assert_str_eq(res->s[1].view, "timeline");
    ck_assert_str_eq(res->s[1].message,
                     "This run has high time cost on input data loading. 12.0% of the step time "
                     "is in DataLoader. You could try to set num_workers on DataLoader's "
                     "construction and enable multi-processes on data loading.");
    ck_assert_int_eq(res->s[1].subject, -1);
    analyse_helper_result_free(res);
}
END_TEST

/* Each peer's rules for its own framework (issue 13 item 4): a torch job hears nothing of
 * MindInsight's graph mode, dataset sink mode or queues, a MindSpore job nothing of DataLoader. */
START_TEST(test_helper_run_rules_follow_the_framework)
{
    struct analyse_helper_rules ru;
    analyse_helper_rules_default(&ru);
    struct analyse_queue_stats host = {.n_samples = 10, .n_empty = 1};
    struct analyse_helper_input in;
    analyse_helper_input_init(&in);
    in.st_interval_ns = 40e6; /* 40 ms of a 100 ms step */
    in.st_total_ns = 100e6;
    in.host_queue = &host;    /* not often empty: MindInsight's "device_queue_warning" */
    set_dl(&in, 120);
    static const struct {
        const char *name;
        const char *codes; /* the codes, space-separated, in order */
    } want[] = {
        {"other", "step_interval_long queue_ok dataloader_high"},
        {"torch", "dataloader_high"},
        {"paddle", ""},
        {"mindspore", "step_interval_long queue_ok"},
    };
    ru.mindinsight_gate = false;
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        in.framework = analyse_framework_of(want[k].name);
        ck_assert_str_eq(analyse_framework_names[in.framework], want[k].name);
        struct analyse_helper_result *res = run(&in, &ru);
        char got[256] = "";
        for (size_t i = 0; i < res->n; i++) {
            strcat(got, i ? " " : "");
            strcat(got, res->s[i].code);
            ck_assert_str_ne(res->s[i].view, "overview");
        }
        ck_assert_msg(strcmp(got, want[k].codes) == 0, "%s: \"%s\", want \"%s\"",
                      want[k].name, got, want[k].codes);
        analyse_helper_result_free(res);
    }
    ck_assert_int_eq(analyse_framework_of("PyTorch"), ANALYSE_FW_TORCH);
    ck_assert_int_eq(analyse_framework_of("PaddlePaddle"), ANALYSE_FW_PADDLE);
    ck_assert_int_eq(analyse_framework_of(""), ANALYSE_FW_OTHER);
    ck_assert_int_eq(analyse_framework_of(NULL), ANALYSE_FW_OTHER);
    ck_assert_int_eq(analyse_framework_of("jax"), ANALYSE_FW_OTHER);
}
END_TEST

/* The step interval must be material: over 0.5 ms (MindInsight) and >= step_interval_ratio of
 * the step. 1.28 ms of a 215 ms step (0.6 %, the torch job) says nothing. */
START_TEST(test_helper_run_step_interval_must_be_material)
{
    struct analyse_helper_rules ru;
    analyse_helper_rules_default(&ru);
    ck_assert_double_eq(ru.step_interval_ratio, 0.05);
    struct analyse_helper_input in;
    analyse_helper_input_init(&in);
    in.framework = ANALYSE_FW_MINDSPORE;
    in.st_interval_ns = 1.28e6;
    in.st_total_ns = 215e6;
    struct analyse_helper_result *res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 0);
    analyse_helper_result_free(res);
    /* At the share's boundary (>=) it fires, naming both numbers; just below it does not. */
    in.st_total_ns = 1.28e6 / 0.05;
    res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 1);
    ck_assert_uint_eq(res->s[0].n_evidence, 2);
    ck_assert_str_eq(res->s[0].evidence[1].name, "interval_share");
    ck_assert_double_eq_tol(res->s[0].evidence[1].value, 0.05, 1e-12);
    ck_assert_str_eq(res->s[0].evidence[1].op, ">=");
    analyse_helper_result_free(res);
    in.st_total_ns = 1.28e6 / 0.0499;
    res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 0);
    analyse_helper_result_free(res);
    /* step_interval_ratio = 0 is MindInsight's rule alone. */
    ru.step_interval_ratio = 0;
    in.st_total_ns = 215e6;
    res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 1);
    analyse_helper_result_free(res);
}
END_TEST

START_TEST(test_helper_run_missing_evidence_is_silent)
{
    struct analyse_helper_rules ru;
    analyse_helper_rules_default(&ru);
    ru.mindinsight_gate = false;
    struct analyse_helper_input in;
    analyse_helper_input_init(&in);
    struct analyse_helper_result *res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 0);
    analyse_helper_result_free(res);
    /* A breakdown without a total, empty queues, an empty rank set: still nothing. */
    in.has_breakdown = true;
    in.bd_avg_ns[ANALYSE_BD_DATALOADER] = 1e9;
    struct analyse_queue_stats empty = {0};
    in.host_queue = &empty;
    in.device_queue = &empty;
    struct analyse_ranks *rk = NULL;
    ck_assert_int_eq(analyse_ranks_compute(NULL, 0, 0.2, &rk), 0);
    in.ranks = rk;
    res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 0);
    analyse_helper_result_free(res);
    analyse_ranks_free(rk);
    ck_assert_int_eq(analyse_helper_run(NULL, &ru, &res), -EINVAL);
}
END_TEST

/* root 0 <- MapOp 1 <- GeneratorOp 2: the map's input queue is much fuller than its output. */
static const int64_t ch0[] = {1}, ch1[] = {2};
static const struct analyse_pipe_op pipe[] = {
    {.op_id = 0, .op_type = "DeviceQueueOp", .num_workers = 1, .parent_id = -1, .children = ch0,
     .n_children = 1, .usage = -1},
    {.op_id = 1, .op_type = "MapOp", .num_workers = 4, .parent_id = 0, .children = ch1,
     .n_children = 1, .usage = 0.2},
    {.op_id = 2, .op_type = "GeneratorOp", .num_workers = 1, .parent_id = 1, .n_children = 0,
     .usage = 0.9},
};

START_TEST(test_helper_run_mindinsight_gate)
{
    struct analyse_helper_rules ru;
    analyse_helper_rules_default(&ru);
    struct analyse_helper_input in;
    analyse_helper_input_init(&in);
    in.pipe_ops = pipe;
    in.n_pipe_ops = 3;
    in.host_cpu_pct = 90;
    set_host_empty(&in, 4);
    /* Long interval and a bottleneck: everything shows, in the proposer's order. */
    in.st_interval_ns = 600000;
    struct analyse_helper_result *res = run(&in, &ru);
    const char *want[] = {"step_interval_long", "queue_host_empty", "cpu_high",
                          "pipeline_bottleneck", "pipeline_map_op"};
    ck_assert_uint_eq(res->n, 5);
    for (size_t i = 0; i < 5; i++)
        ck_assert_str_eq(res->s[i].code, want[i]);
    ck_assert_str_eq(res->s[3].message,
                     "The MapOp_1 operator in the pipeline may have performance bottlenecks.");
    ck_assert_str_eq(res->s[3].view, "pipeline");
    ck_assert_str_eq(res->s[1].message, "The ratio of empty queues on a host is 40%, and the "
                                        "threshold is 30%. The data processing stage can be "
                                        "optimized.");
    analyse_helper_result_free(res);
    /* Short interval: MindInsight hides every data suggestion. */
    in.st_interval_ns = 400000;
    res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 0);
    analyse_helper_result_free(res);
    /* Host queue fine (30 % empty is not > 30 %): the pipeline proposals go. */
    in.st_interval_ns = 600000;
    set_host_empty(&in, 3);
    res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 3);
    ck_assert_str_eq(res->s[0].code, "step_interval_long");
    ck_assert_str_eq(res->s[1].code, "queue_ok");
    ck_assert_str_eq(res->s[2].code, "cpu_high");
    analyse_helper_result_free(res);
    /* Gate off: the pipeline proposals come back. */
    ru.mindinsight_gate = false;
    res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 5);
    analyse_helper_result_free(res);
}
END_TEST

/* ===== Overrides ============================================================================ */

START_TEST(test_helper_rules_parse_applies)
{
    struct analyse_helper_rules ru, def;
    analyse_helper_rules_default(&ru);
    def = ru;
    static const char text[] = "# helper thresholds\n"
                               "step_interval_ms = 1\n"
                               "\n"
                               "  gpu_util=0.3  \r\n"
                               "mindinsight_gate = false\n"
                               "straggler_ratio = 0.5\n"
                               "straggler_ratio = 0.25"; /* last wins, no final newline */
    size_t bad = 0;
    ck_assert_int_eq(analyse_helper_rules_parse(text, strlen(text), &ru, &bad), 0);
    ck_assert_double_eq(ru.step_interval_ms, 1);
    ck_assert_double_eq(ru.gpu_util, 0.3);
    ck_assert(!ru.mindinsight_gate);
    ck_assert_double_eq(ru.straggler_ratio, 0.25);
    ck_assert_double_eq(ru.cpu_pct, def.cpu_pct);
    /* And they apply: 0.8 ms no longer fires, 0.4 GPU utilisation no longer does. */
    struct analyse_helper_input in;
    analyse_helper_input_init(&in);
    in.st_interval_ns = 800000;
    set_gpu(&in, 0.4);
    struct analyse_helper_result *res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 0);
    analyse_helper_result_free(res);
    in.st_interval_ns = 1000001;
    set_gpu(&in, 0.29);
    res = run(&in, &ru);
    ck_assert_uint_eq(res->n, 2);
    ck_assert_int_eq(res->s[1].subject, 3);
    analyse_helper_result_free(res);
}
END_TEST

static const struct {
    const char *text;
    size_t line;
} bad_cases[] = {
    {"cpu_pct = 70\nbogus = 1\n", 2},
    {"cpu_pct = -1", 1},
    {"cpu_pct 80", 1},
    {"\n\n# x\ncpu_pct = 8x\n", 4},
    {"cpu_pct = nan", 1},
    {"cpu_pct = inf", 1},
    {"cpu_pct =", 1},
    {"= 3", 1},
    {"mindinsight_gate = yes", 1},
    {"cpu_pct = 1\ngpu_util = 0.1\nCPU_PCT = 2", 3},
};

START_TEST(test_helper_rules_parse_rejects)
{
    struct analyse_helper_rules ru, def;
    analyse_helper_rules_default(&ru);
    def = ru;
    size_t bad = 0;
    const char *t = bad_cases[_i].text;
    ck_assert_int_eq(analyse_helper_rules_parse(t, strlen(t), &ru, &bad), -EINVAL);
    ck_assert_uint_eq(bad, bad_cases[_i].line);
    ck_assert(memcmp(&ru, &def, sizeof ru) == 0); /* untouched */
    ck_assert_int_eq(analyse_helper_rules_parse("", 0, &ru, NULL), 0);
}
END_TEST

/* ===== Ranks ================================================================================ */

START_TEST(test_ranks_compute_statistics)
{
    static const int64_t s0[] = {40, 10, 30, 20}, i0[] = {4, 1, 3, 2};
    static const int64_t s1[] = {10, 10, 10};
    static const int64_t s2[] = {100};
    const struct analyse_rank_steps in[] = {
        {.rank = 0, .stage = 1, .step_ns = s0, .interval_ns = i0, .n = 4},
        {.rank = 1, .stage = 0, .step_ns = s1, .n = 3},
        {.rank = 2, .stage = 1, .step_ns = s2, .n = 1},
        {.rank = 3, .stage = -5, .n = 0},
    };
    struct analyse_ranks *rk = NULL;
    ck_assert_int_eq(analyse_ranks_compute(in, 4, ANALYSE_STRAGGLER_RATIO, &rk), 0);
    ck_assert_uint_eq(rk->n_ranks, 4);
    const struct analyse_dist *d = &rk->rows[0].stat[ANALYSE_RANK_STEP];
    ck_assert_uint_eq(d->count, 4);
    ck_assert_double_eq(d->mean_ns, 25);
    ck_assert_double_eq(d->median_ns, 25);
    ck_assert_double_eq_tol(d->p90_ns, 37, 1e-9); /* numpy.percentile([10,20,30,40], 90) */
    ck_assert_double_eq_tol(d->std_ns, sqrt(125.0), 1e-12);
    ck_assert_int_eq(d->min_ns, 10);
    ck_assert_int_eq(d->max_ns, 40);
    d = &rk->rows[0].stat[ANALYSE_RANK_INTERVAL];
    ck_assert_uint_eq(d->count, 4);
    ck_assert_double_eq(d->mean_ns, 2.5);
    ck_assert_double_eq_tol(d->p90_ns, 3.7, 1e-12);
    ck_assert_uint_eq(rk->rows[0].stat[ANALYSE_RANK_FP_BP].count, 0);
    d = &rk->rows[2].stat[ANALYSE_RANK_STEP];
    ck_assert_double_eq(d->median_ns, 100);
    ck_assert_double_eq(d->p90_ns, 100);
    ck_assert_double_eq(d->std_ns, 0);
    ck_assert_double_eq(rk->rows[1].stat[ANALYSE_RANK_STEP].std_ns, 0);
    /* Means 25, 10, 100 (rank 3 has none): mean 45, threshold 54. */
    ck_assert_double_eq(rk->mean_of_ranks_ns, 45);
    ck_assert_double_eq_tol(rk->threshold_ns, 54, 1e-9);
    ck_assert_uint_eq(rk->n_stragglers, 1);
    ck_assert(!rk->rows[0].straggler && !rk->rows[1].straggler && rk->rows[2].straggler);
    ck_assert(!rk->rows[3].straggler);
    ck_assert_double_eq_tol(rk->rows[2].excess_pct, 100 * (100.0 / 45 - 1), 1e-9);
    ck_assert_int_eq(rk->rows[3].stage, -1);
    /* Stages -1, 0, 1; the slowest rank of stage 1 is rank 2. */
    ck_assert_uint_eq(rk->n_stages, 3);
    ck_assert_int_eq(rk->stages[0].stage, -1);
    ck_assert_int_eq(rk->stages[0].slowest_rank, -1);
    ck_assert_uint_eq(rk->stages[0].n_ranks, 0);
    ck_assert_int_eq(rk->stages[1].stage, 0);
    ck_assert_int_eq(rk->stages[1].slowest_rank, 1);
    ck_assert_int_eq(rk->stages[2].stage, 1);
    ck_assert_int_eq(rk->stages[2].slowest_rank, 2);
    ck_assert_double_eq(rk->stages[2].slowest_mean_ns, 100);
    ck_assert_double_eq(rk->stages[2].mean_ns, 62.5);
    analyse_ranks_free(rk);
    ck_assert_int_eq(analyse_ranks_compute(in, 4, -0.1, &rk), -EINVAL);
    ck_assert_int_eq(analyse_ranks_compute(in, 4, NAN, &rk), -EINVAL);
}
END_TEST

/* Two ranks, ratio 0.5: means 100 and x; threshold (100 + x) / 2 * 1.5 equals x at x = 300. */
static const struct {
    int64_t x;
    bool straggler;
} strag_cases[] = {{299, false}, {300, false}, {301, true}};

START_TEST(test_ranks_compute_straggler_boundary)
{
    const int64_t a[] = {100}, b[] = {strag_cases[_i].x};
    const struct analyse_rank_steps in[] = {
        {.rank = 0, .stage = -1, .step_ns = a, .interval_ns = a, .n = 1},
        {.rank = 1, .stage = -1, .step_ns = b, .interval_ns = b, .n = 1},
    };
    struct analyse_ranks *rk = NULL;
    ck_assert_int_eq(analyse_ranks_compute(in, 2, 0.5, &rk), 0);
    ck_assert(rk->rows[1].straggler == strag_cases[_i].straggler);
    ck_assert(!rk->rows[0].straggler);
    ck_assert_uint_eq(rk->n_stages, 1);
    ck_assert_int_eq(rk->stages[0].slowest_rank, 1);
    /* The helper applies its own ratio to the same rows. */
    struct analyse_helper_rules ru;
    analyse_helper_rules_default(&ru);
    ru.straggler_ratio = 0.5;
    ru.cluster_interval_ratio = 0.5;
    struct analyse_helper_input hin;
    analyse_helper_input_init(&hin);
    hin.ranks = rk;
    struct analyse_helper_result *res = run(&hin, &ru);
    if (strag_cases[_i].straggler) {
        ck_assert_uint_eq(res->n, 2);
        ck_assert_str_eq(res->s[0].code, "rank_straggler");
        ck_assert_int_eq(res->s[0].subject, 1);
        ck_assert_str_eq(res->s[0].view, "ranks");
        ck_assert_str_eq(res->s[1].code, "rank_step_interval_high");
        ck_assert_int_eq(res->s[1].subject, 1);
    } else {
        ck_assert_uint_eq(res->n, 0);
    }
    analyse_helper_result_free(res);
    analyse_ranks_free(rk);
}
END_TEST

START_TEST(test_ranks_compute_default_ratio)
{
    /* Means 100, 100, 100, x: threshold 0.3 * (300 + x), crossed between 128 and 129. */
    const int64_t a[] = {100}, lo[] = {128}, hi[] = {129};
    for (int k = 0; k < 2; k++) {
        const struct analyse_rank_steps in[] = {
            {.rank = 0, .stage = -1, .step_ns = a, .n = 1},
            {.rank = 1, .stage = -1, .step_ns = a, .n = 1},
            {.rank = 2, .stage = -1, .step_ns = a, .n = 1},
            {.rank = 7, .stage = -1, .step_ns = k ? hi : lo, .n = 1},
        };
        struct analyse_ranks *rk = NULL;
        ck_assert_int_eq(analyse_ranks_compute(in, 4, ANALYSE_STRAGGLER_RATIO, &rk), 0);
        ck_assert_uint_eq(rk->n_stragglers, (size_t)k);
        struct analyse_helper_rules ru;
        analyse_helper_rules_default(&ru);
        struct analyse_helper_input hin;
        analyse_helper_input_init(&hin);
        hin.ranks = rk;
        struct analyse_helper_result *res = run(&hin, &ru);
        ck_assert_uint_eq(res->n, (size_t)k);
        if (k)
            ck_assert_int_eq(res->s[0].subject, 7);
        analyse_helper_result_free(res);
        analyse_ranks_free(rk);
    }
}
END_TEST


static int cmp_i64_ref(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* analyse_dist_compute() sorts with a radix sort of its own: its figures equal those of the
 * same formulas over a qsort()ed copy, to the bit, on series of every shape (negative and huge
 * values, ties, constant runs, lengths 1 to 5000). */
START_TEST(test_dist_compute_equals_a_comparison_sort)
{
    uint64_t state = 99;
    static int64_t v[5000], ref[5000];
    const size_t lens[] = {1, 2, 3, 7, 100, 4999, 5000};
    for (int shape = 0; shape < 5; shape++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            size_t n = lens[li];
            for (size_t i = 0; i < n; i++) {
                state = state * 6364136223846793005ULL + 1442695040888963407ULL;
                int64_t r = (int64_t)(state >> 1);
                v[i] = shape == 0   ? 100000000 + r % 5000000          /* step times, ns */
                       : shape == 1 ? r % 7 - 3                         /* ties around 0 */
                       : shape == 2 ? (int64_t)(state ^ (state << 7))   /* the whole range */
                       : shape == 3 ? 42                                /* constant */
                                    : (i % 2 ? INT64_MIN + (r % 9) : INT64_MAX - (r % 9));
            }
            memcpy(ref, v, n * sizeof *v);
            qsort(ref, n, sizeof *ref, cmp_i64_ref);
            struct analyse_dist d;
            ck_assert_int_eq(analyse_dist_compute(v, n, &d), 0);
            ck_assert_uint_eq(d.count, n);
            ck_assert_int_eq(d.min_ns, ref[0]);
            ck_assert_int_eq(d.max_ns, ref[n - 1]);
            long double sum = 0, ss = 0;
            for (size_t i = 0; i < n; i++)
                sum += (long double)ref[i];
            long double mean = sum / (long double)n;
            for (size_t i = 0; i < n; i++)
                ss += ((long double)ref[i] - mean) * ((long double)ref[i] - mean);
            ck_assert(d.mean_ns == (double)mean);
            ck_assert(d.std_ns == sqrt((double)(ss / (long double)n)));
            for (int qi = 0; qi < 2; qi++) {
                double q = qi ? 0.9 : 0.5, pos = q * (double)(n - 1);
                size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
                double want = (double)ref[lo] + (pos - (double)lo) *
                                                    ((double)ref[hi] - (double)ref[lo]);
                ck_assert(memcmp(qi ? &d.p90_ns : &d.median_ns, &want, sizeof want) == 0);
            }
        }
}
END_TEST
static Suite *analyse_helper_suite(void)
{
    Suite *s = suite_create("analyse_helper");
    TCase *tc = tcase_create("helper_run");
    tcase_add_loop_test(tc, test_helper_run_rule_boundaries, 0,
                        (int)(sizeof rule_cases / sizeof rule_cases[0]));
    tcase_add_test(tc, test_helper_run_evidence_and_wording);
    tcase_add_test(tc, test_helper_run_rules_follow_the_framework);
    tcase_add_test(tc, test_helper_run_step_interval_must_be_material);
    tcase_add_test(tc, test_helper_run_missing_evidence_is_silent);
    tcase_add_test(tc, test_helper_run_mindinsight_gate);
    suite_add_tcase(s, tc);
    tc = tcase_create("helper_rules_parse");
    tcase_add_test(tc, test_helper_rules_parse_applies);
    tcase_add_loop_test(tc, test_helper_rules_parse_rejects, 0,
                        (int)(sizeof bad_cases / sizeof bad_cases[0]));
    suite_add_tcase(s, tc);
    tc = tcase_create("ranks_compute");
    tcase_add_test(tc, test_ranks_compute_statistics);
    tcase_add_loop_test(tc, test_ranks_compute_straggler_boundary, 0,
                        (int)(sizeof strag_cases / sizeof strag_cases[0]));
    tcase_add_test(tc, test_ranks_compute_default_ratio);
    tcase_add_test(tc, test_dist_compute_equals_a_comparison_sort);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(analyse_helper_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
