/* SPDX-License-Identifier: MIT */
/*
 * Golden and table tests of the data queues and the dataset pipeline (queues.c). The golden
 * test parses $TEST_DATA/mindspore/04_minddata_queues (tests/data) on the test side, so the
 * module stays free of I/O, and checks every key of its expected.json (what MindInsight returns
 * for those files, mi_golden.h).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse_queues.h"
#include "mi_golden.h"

/* ===== data queues golden ================================================================= */

START_TEST(test_queues_golden)
{
    static struct golden g;
    gold_load(&g, "04_minddata_queues");
    char path[640], line[256], k[160];

    /* minddata_aicpu_<r>.txt: "GetNext_dequeue_wait <start_us> <end_us> <queue_size>". */
    struct analyse_queue_sample dev[64];
    struct analyse_queue_time dev_t[64];
    size_t n_dev = 0;
    snprintf(path, sizeof path, "%s/minddata_aicpu_1.txt", g.dir);
    FILE *fp = fopen(path, "r");
    ck_assert(fp != NULL);
    while (fgets(line, sizeof line, fp)) {
        char name[64];
        long long st, en, size;
        if (sscanf(line, "%63s %lld %lld %lld", name, &st, &en, &size) != 4 ||
            strncmp(name, "GetNext", 7) != 0)
            continue;
        ck_assert(n_dev < 64);
        dev[n_dev] = (struct analyse_queue_sample){(int64_t)n_dev + 1, size, -1};
        dev_t[n_dev] = (struct analyse_queue_time){(int64_t)n_dev + 1, ANALYSE_QUEUE_TIME_GETNEXT,
                                                   (en - st) * 1000};
        n_dev++;
    }
    fclose(fp);

    /* device_queue_profiling_<r>.txt: "type extra batch value ts"; the host queue (MindInsight
     * calls it device_queue); type 1: extra = capacity, value = size; type 0: times in ms. */
    struct analyse_queue_sample host[64];
    struct analyse_queue_time host_t[64];
    size_t n_host = 0, n_host_t = 0;
    snprintf(path, sizeof path, "%s/device_queue_profiling_1.txt", g.dir);
    fp = fopen(path, "r");
    ck_assert(fp != NULL);
    while (fgets(line, sizeof line, fp)) {
        int type, extra;
        long long batch;
        double value;
        if (sscanf(line, "%d %d %lld %lf", &type, &extra, &batch, &value) != 4)
            continue;
        if (type == 1)
            host[n_host++] = (struct analyse_queue_sample){batch, (int64_t)value, extra};
        else if (type == 0 && extra >= 0 && extra <= 2)
            host_t[n_host_t++] = (struct analyse_queue_time){
                batch,
                extra == 0   ? ANALYSE_QUEUE_TIME_GET
                : extra == 1 ? ANALYSE_QUEUE_TIME_PUSH
                             : ANALYSE_QUEUE_TIME_TOTAL,
                llround(value * 1e6)};
    }
    fclose(fp);

    ck_assert_int_eq(analyse_queue_sort(dev, n_dev), 0);
    ck_assert_int_eq(analyse_queue_sort(host, n_host), 0);
    struct analyse_queue_stats ds, hs;
    analyse_queue_stats(dev, n_dev, &ds);
    analyse_queue_stats(host, n_host, &hs);
    struct analyse_queue_time_stats dts, hts;
    analyse_queue_time_stats(dev_t, n_dev, &dts);
    analyse_queue_time_stats(host_t, n_host_t, &hts);

    /* queue_info?type=get_next (the device queue) */
    gold_num(&g, "queue_info?type=get_next/size", (double)ds.n_samples, (double)n_dev, false);
    for (size_t i = 0; i < n_dev; i++) {
        snprintf(k, sizeof k, "queue_info?type=get_next/info/queue/%zu", i);
        gold_num(&g, k, (double)dev[i].size, (double)dev[i].size, false);
    }
    gold_num(&g, "queue_info?type=get_next/summary/queue_summary/empty_queue",
             (double)ds.n_empty, (double)ds.n_empty, false);
    /* minddata_op?type=get_next: ms per GetNext; avg_cost is a string in MindInsight. */
    gold_num(&g, "minddata_op?type=get_next/size", (double)dts.n[ANALYSE_QUEUE_TIME_GETNEXT],
             (double)n_dev, false);
    for (size_t i = 0; i < n_dev; i++) {
        snprintf(k, sizeof k, "minddata_op?type=get_next/info/get_next/%zu", i);
        double ms = (double)dev_t[i].dur_ns / 1e6;
        gold_num(&g, k, ms, ms, false);
    }
    struct gold_entry *e = gold_find(&g, "minddata_op?type=get_next/summary/time_summary/avg_cost");
    ck_assert_msg(e->val[0] == 's', "avg_cost is a string in MindInsight (quirk)");
    gold_num(&g, e->key, dts.avg_ns[ANALYSE_QUEUE_TIME_GETNEXT] / 1e6,
             dts.avg_ns[ANALYSE_QUEUE_TIME_GETNEXT] / 1e6, false);

    /* queue_info?type=device_queue (the host queue) */
    gold_num(&g, "queue_info?type=device_queue/size", (double)hs.n_samples, (double)n_host,
             false);
    for (size_t i = 0; i < n_host; i++) {
        snprintf(k, sizeof k, "queue_info?type=device_queue/info/queue/%zu", i);
        gold_num(&g, k, (double)host[i].size, (double)host[i].size, false);
    }
    gold_num(&g, "queue_info?type=device_queue/summary/queue_summary/empty_queue",
             (double)hs.n_empty, (double)hs.n_empty, false);
    gold_num(&g, "queue_info?type=device_queue/summary/queue_summary/full_queue",
             (double)hs.n_full, (double)hs.n_full, false);
    ck_assert_double_eq(hs.empty_ratio, 1.0);

    /* minddata_op?type=device_queue: per-kind series sorted by batch, and the averages. */
    static const char *const kind_name[] = {"get_cost", "push_cost", "total_cost"};
    gold_num(&g, "minddata_op?type=device_queue/size", (double)hts.n[ANALYSE_QUEUE_TIME_TOTAL],
             (double)hts.n[ANALYSE_QUEUE_TIME_TOTAL], false);
    for (int kind = 0; kind < 3; kind++) {
        size_t idx = 0;
        for (size_t i = 0; i < n_host_t; i++) {
            if ((int)host_t[i].kind != kind)
                continue;
            snprintf(k, sizeof k, "minddata_op?type=device_queue/info/%s/%zu", kind_name[kind],
                     idx++);
            double ms = (double)host_t[i].dur_ns / 1e6;
            gold_num(&g, k, ms, ms, false);
        }
    }
    gold_num(&g, "minddata_op?type=device_queue/summary/time_summary/avg_cost",
             hts.avg_ns[ANALYSE_QUEUE_TIME_TOTAL] / 1e6, hts.avg_ns[ANALYSE_QUEUE_TIME_TOTAL] / 1e6,
             false);
    gold_num(&g, "minddata_op?type=device_queue/summary/time_summary/get_cost",
             hts.avg_ns[ANALYSE_QUEUE_TIME_GET] / 1e6, hts.avg_ns[ANALYSE_QUEUE_TIME_GET] / 1e6,
             false);
    gold_num(&g, "minddata_op?type=device_queue/summary/time_summary/push_cost",
             hts.avg_ns[ANALYSE_QUEUE_TIME_PUSH] / 1e6, hts.avg_ns[ANALYSE_QUEUE_TIME_PUSH] / 1e6,
             false);

    /* process_summary: both queues, and the host queue only. */
    struct analyse_queue_verdict v;
    analyse_queue_verdict(&hs, &ds, ANALYSE_QUEUE_EMPTY_THRESHOLD, &v);
    ck_assert_int_eq(v.status, ANALYSE_QUEUE_STATUS_DATA_PROCESS);
    ck_assert_int_eq(v.empty_rate_pct, 100);
    const struct {
        const char *key;
        enum analyse_queue_status st;
    } status_keys[] = {
        {"data_process", ANALYSE_QUEUE_STATUS_DATA_PROCESS},
        {"device_queue_warning", ANALYSE_QUEUE_STATUS_DEVICE_QUEUE},
        {"data_transmission", ANALYSE_QUEUE_STATUS_TRANSMISSION},
        {"get_next", ANALYSE_QUEUE_STATUS_NONE}, /* always "normal" in MindInsight */
    };
    for (size_t i = 0; i < 4; i++) {
        snprintf(k, sizeof k, "process_summary/%s/status", status_keys[i].key);
        gold_str(&g, k, v.status == status_keys[i].st ? "warning" : "normal");
    }
    gold_num(&g, "process_summary/get_next_queue_info/summary/empty_batch_count",
             (double)v.device_empty, (double)ds.n_empty, false);
    gold_num(&g, "process_summary/get_next_queue_info/summary/total_batch",
             (double)v.device_total, (double)n_dev, false);
    gold_num(&g, "process_summary/device_queue_info/summary/empty_batch_count",
             (double)v.host_empty, (double)hs.n_empty, false);
    gold_num(&g, "process_summary/device_queue_info/summary/full_batch_count",
             (double)v.host_full, (double)hs.n_full, false);
    gold_num(&g, "process_summary/device_queue_info/summary/total_batch", (double)v.host_total,
             (double)n_host, false);

    analyse_queue_verdict(&hs, NULL, ANALYSE_QUEUE_EMPTY_THRESHOLD, &v);
    ck_assert_int_eq(v.status, ANALYSE_QUEUE_STATUS_DATA_PROCESS);
    gold_str(&g, "process_summary_device_queue_only/data_process/status", "warning");
    gold_str(&g, "process_summary_device_queue_only/device_queue_warning/status",
             v.status == ANALYSE_QUEUE_STATUS_DEVICE_QUEUE ? "warning" : "normal");
    gold_str(&g, "process_summary_device_queue_only/fpbp/status", "normal");
    gold_num(&g, "process_summary_device_queue_only/device_queue_info/summary/empty_batch_count",
             (double)v.host_empty, (double)hs.n_empty, false);
    gold_num(&g, "process_summary_device_queue_only/device_queue_info/summary/full_batch_count",
             (double)v.host_full, (double)hs.n_full, false);
    gold_num(&g, "process_summary_device_queue_only/device_queue_info/summary/total_batch",
             (double)v.host_total, (double)n_host, false);
    gold_done(&g);
}
END_TEST

/* ===== verdict rules (table-driven) ======================================================= */

static const struct verdict_case {
    size_t host_empty, host_total, dev_empty, dev_total; /* total 0 = queue absent */
    enum analyse_queue_status want;
    int rate;
} verdict_cases[] = {
    {0, 0, 0, 10, ANALYSE_QUEUE_STATUS_NONE, 0},
    {4, 10, 0, 10, ANALYSE_QUEUE_STATUS_DATA_PROCESS, 40},
    {3, 10, 0, 10, ANALYSE_QUEUE_STATUS_DEVICE_QUEUE, 30}, /* 3 > 3.0 is false: strict */
    {3, 10, 1, 10, ANALYSE_QUEUE_STATUS_TRANSMISSION, 30},
    {1, 3, 2, 3, ANALYSE_QUEUE_STATUS_DATA_PROCESS, 34}, /* 33.3 % > 30 %; ceil to 34 */
    {0, 5, 0, 0, ANALYSE_QUEUE_STATUS_DEVICE_QUEUE, 0},  /* host only */
    {2, 5, 0, 0, ANALYSE_QUEUE_STATUS_DATA_PROCESS, 40},
};

START_TEST(test_queue_verdict_table)
{
    const struct verdict_case *c = &verdict_cases[_i];
    struct analyse_queue_stats h = {.n_samples = c->host_total, .n_empty = c->host_empty};
    struct analyse_queue_stats d = {.n_samples = c->dev_total, .n_empty = c->dev_empty};
    struct analyse_queue_verdict v;
    analyse_queue_verdict(&h, c->dev_total ? &d : NULL, ANALYSE_QUEUE_EMPTY_THRESHOLD, &v);
    ck_assert_int_eq(v.status, c->want);
    ck_assert_int_eq(v.empty_rate_pct, c->rate);
    ck_assert_ptr_nonnull(v.message);
    ck_assert_double_eq(v.threshold, ANALYSE_QUEUE_EMPTY_THRESHOLD);
}
END_TEST

START_TEST(test_queue_stats_and_sort)
{
    struct analyse_queue_sample s[] = {{3, 4, 4}, {1, 0, 4}, {2, 2, 4}, {1, 1, 4}, {0, 0, -1}};
    ck_assert_int_eq(analyse_queue_sort(s, 5), 0);
    static const int64_t steps[] = {0, 1, 1, 2, 3}, sizes[] = {0, 0, 1, 2, 4};
    for (size_t i = 0; i < 5; i++) {
        ck_assert_int_eq(s[i].step, steps[i]);
        ck_assert_int_eq(s[i].size, sizes[i]); /* stable: step 1's (0) stays before (1) */
    }
    struct analyse_queue_stats st;
    analyse_queue_stats(s, 5, &st);
    ck_assert_uint_eq(st.n_empty, 2);
    ck_assert_uint_eq(st.n_full, 1); /* capacity -1 never counts as full */
    ck_assert_double_eq_tol(st.empty_ratio, 0.4, 1e-12);
    ck_assert_double_eq_tol(st.avg_size, 7.0 / 5, 1e-12);
    ck_assert_int_eq(st.max_size, 4);
    analyse_queue_stats(NULL, 0, &st);
    ck_assert_uint_eq(st.n_samples, 0);
    ck_assert_double_eq(st.empty_ratio, 0);
}
END_TEST

/* ===== pipeline bottlenecks (table-driven) ================================================ */

static const int64_t ch1[] = {1}, ch2[] = {2}, ch3[] = {3}, ch23[] = {2, 3};

#define OP(id, type, parent, ch, nch, u)                                                          \
    {.op_id = (id), .op_type = (type), .num_workers = 4, .parent_id = (parent), .children = (ch), \
     .n_children = (nch), .usage = (u)}

static const struct pipe_case {
    const char *what;
    struct analyse_pipe_op ops[4];
    size_t n;
    size_t n_find;
    size_t op[3];
    enum analyse_pipe_reason reason[3];
    enum analyse_pipe_advice advice[3];
} pipe_cases[] = {
    {"batch slower than map",
     {OP(0, "DeviceQueueOp", -1, ch1, 1, -1), OP(1, "BatchOp", 0, ch2, 1, 0.2),
      OP(2, "MapOp", 1, ch3, 1, 0.9), OP(3, "ImageFolderOp", 2, NULL, 0, 0.95)},
     4, 1, {1}, {ANALYSE_PIPE_CHILD_FULLER}, {ANALYSE_PIPE_ADVICE_BATCH_OP}},
    {"slow reader too",
     {OP(0, "DeviceQueueOp", -1, ch1, 1, -1), OP(1, "BatchOp", 0, ch2, 1, 0.2),
      OP(2, "MapOp", 1, ch3, 1, 0.9), OP(3, "TFReaderOp", 2, NULL, 0, 0.3)},
     4, 2, {1, 3}, {ANALYSE_PIPE_CHILD_FULLER, ANALYSE_PIPE_LEAF_LOW},
     {ANALYSE_PIPE_ADVICE_BATCH_OP, ANALYSE_PIPE_ADVICE_DATASET_OP}},
    {"map slower than its two sources",
     {OP(0, "DeviceQueueOp", -1, ch1, 1, -1), OP(1, "MapOp", 0, ch23, 2, 0.5),
      OP(2, "GeneratorOp", 1, NULL, 0, 0.55), OP(3, "MindRecordOp", 1, NULL, 0, 0.7)},
     4, 2, {1, 2}, {ANALYSE_PIPE_CHILD_FULLER, ANALYSE_PIPE_LEAF_LOW},
     {ANALYSE_PIPE_ADVICE_MAP_OP, ANALYSE_PIPE_ADVICE_GENERATOR_OP}},
    {"all queues full: consumer",
     {OP(0, "DeviceQueueOp", -1, ch1, 1, -1), OP(1, "BatchOp", 0, ch2, 1, 0.8),
      OP(2, "MapOp", 1, ch3, 1, 0.95), OP(3, "ImageFolderOp", 2, NULL, 0, 1.0)},
     4, 1, {0}, {ANALYSE_PIPE_ALL_HIGH}, {ANALYSE_PIPE_ADVICE_CONSUMER}},
    {"missing metrics count as 0",
     {OP(0, "DeviceQueueOp", -1, ch1, 1, -1), OP(1, "ShuffleOp", 0, ch2, 1, -1),
      OP(2, "CelebAOp", 1, NULL, 0, 0.65)},
     3, 1, {1}, {ANALYSE_PIPE_CHILD_FULLER}, {ANALYSE_PIPE_ADVICE_GENERAL}},
    {"balanced", {OP(0, "DeviceQueueOp", -1, ch1, 1, -1), OP(1, "MapOp", 0, ch2, 1, 0.7),
                  OP(2, "TFReaderOp", 1, NULL, 0, 0.75)},
     3, 0, {0}, {0}, {0}},
    {"lone root", {OP(0, "DeviceQueueOp", -1, NULL, 0, -1)}, 1, 0, {0}, {0}, {0}},
};

START_TEST(test_pipe_bottlenecks_table)
{
    const struct pipe_case *c = &pipe_cases[_i];
    struct analyse_pipe_finding *f = NULL;
    size_t nf = 99;
    ck_assert_int_eq(analyse_pipe_bottlenecks(c->ops, c->n, ANALYSE_PIPE_HIGH, ANALYSE_PIPE_LOW,
                                              ANALYSE_PIPE_DIFF, &f, &nf),
                     0);
    ck_assert_msg(nf == c->n_find, "%s: %zu findings", c->what, nf);
    for (size_t i = 0; i < nf; i++) {
        ck_assert_msg(f[i].op == c->op[i], "%s: finding %zu is op %zu", c->what, i, f[i].op);
        ck_assert_int_eq(f[i].reason, c->reason[i]);
        ck_assert_int_eq(f[i].advice, c->advice[i]);
        ck_assert_ptr_nonnull(f[i].message);
        ck_assert_ptr_nonnull(f[i].code);
        if (f[i].reason == ANALYSE_PIPE_CHILD_FULLER)
            ck_assert(f[i].child_usage - f[i].usage > ANALYSE_PIPE_DIFF);
        if (f[i].reason == ANALYSE_PIPE_LEAF_LOW)
            ck_assert(f[i].usage < ANALYSE_PIPE_LOW);
    }
    if (nf == 0)
        ck_assert_ptr_null(f);
    free(f);
}
END_TEST

START_TEST(test_pipe_usage)
{
    static const int64_t sizes[] = {0, 2, 4, 6};
    ck_assert_double_eq_tol(analyse_pipe_usage(sizes, 4, 8), 3.0 / 8, 1e-12);
    ck_assert_double_eq(analyse_pipe_usage(sizes, 0, 8), -1.0);
    ck_assert_double_eq(analyse_pipe_usage(sizes, 4, 0), -1.0);
}
END_TEST

static Suite *analyse_queues_suite(void)
{
    Suite *s = suite_create("analyse_queues");
    TCase *tc = tcase_create("queues");
    tcase_add_test(tc, test_queues_golden);
    tcase_add_loop_test(tc, test_queue_verdict_table, 0,
                        (int)(sizeof verdict_cases / sizeof verdict_cases[0]));
    tcase_add_test(tc, test_queue_stats_and_sort);
    suite_add_tcase(s, tc);
    tc = tcase_create("pipeline");
    tcase_add_loop_test(tc, test_pipe_bottlenecks_table, 0,
                        (int)(sizeof pipe_cases / sizeof pipe_cases[0]));
    tcase_add_test(tc, test_pipe_usage);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(analyse_queues_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
