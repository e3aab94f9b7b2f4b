/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of daemon/replay on a real store: one job's protocol lines (a hello whose env names
 * the FP/BP points, nested spans, a step record, a step with phases, a queue sample) are decoded by
 * the record decoder (core/decode.h), appended to the store and fed to a live A as main.c does; after the commit,
 * replay_all() into a fresh live B, and replay_reload() of the job evicted from B, must give the
 * steps, points and operator table A has. Budgets: a zero live_max_bytes replays nothing at start
 * and leaves every job evicted, to load on first use.
 */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/core/decode.h"
#include "../../daemon/live/live.h"
#include "../../daemon/live/live_query.h"
#include "../../daemon/replay/replay.h"
#include "../../daemon/store/store.h"

#define WAIT_NS (10 * 1000000000LL)

static const char *hello_line =
    "{\"hello\":\"stepscope/1\",\"job\":\"replayed\",\"rank\":0,\"world_size\":1,\"host\":\"h\","
    "\"pid\":1,\"env\":{\"STEPSCOPE_FP_POINT\":\"aten::add\",\"STEPSCOPE_BP_POINT\":\"aten::mul\"}}";

/* In arrival order; the spans of step 1 nest (conv2d holds add and mul). */
static const char *lines[] = {
    "{\"ph\":\"X\",\"name\":\"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\","
    "\"cat\":\"cpu_op\",\"ts\":1000000,\"dur\":20,\"pid\":1,\"tid\":1}",
    "{\"ph\":\"X\",\"name\":\"aten::conv2d\",\"cat\":\"cpu_op\",\"ts\":1000030,\"dur\":100,"
    "\"pid\":1,\"tid\":1}",
    "{\"ph\":\"X\",\"name\":\"aten::add\",\"cat\":\"cpu_op\",\"ts\":1000040,\"dur\":20,\"pid\":1,"
    "\"tid\":1}",
    "{\"ph\":\"X\",\"name\":\"aten::mul\",\"cat\":\"cpu_op\",\"ts\":1000070,\"dur\":20,\"pid\":1,"
    "\"tid\":1}",
    "{\"ph\":\"X\",\"name\":\"aten::sgd\",\"cat\":\"cpu_op\",\"ts\":1000150,\"dur\":30,\"pid\":1,"
    "\"tid\":1}",
    "{\"type\":\"step\",\"step\":1,\"begin_us\":1000000,\"end_us\":1000200}",
    "{\"type\":\"step\",\"step\":2,\"begin_us\":1000200,\"end_us\":1000400,"
    "\"phases\":{\"dataloader\":10,\"forward\":50,\"backward\":100}}",
    "{\"type\":\"queue\",\"name\":\"train_loader\",\"ts_us\":1000210,\"size\":3,\"capacity\":8}",
};
#define N_LINES (sizeof lines / sizeof lines[0])

static char data_dir[256];
static struct stats stats;
static struct store *st;
static struct live *live_a; /* fed as the records arrived */
static int64_t job_id;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* A store holding the job, and live_a fed with it as main.c's on_hello and on_records do. */
static void setup(void)
{
    snprintf(data_dir, sizeof data_dir, "/tmp/stepscope-test-replay-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(data_dir));
    memset(&stats, 0, sizeof stats);
    struct store_config scfg = {.data_dir = data_dir, .retention_bytes_per_job = 1 << 30,
                                .max_buffered_bytes = 1 << 26, .stats = &stats};
    char err[STORE_ERR_MAX] = "";
    ck_assert_msg(store_open(&scfg, &st, err) == 0, "store_open: %s", err);
    live_a = live_new();
    ck_assert_ptr_nonnull(live_a);

    struct line_decoder *ld = line_decoder_new(0);
    ck_assert_ptr_nonnull(ld);
    struct record_hello h;
    ck_assert_int_eq(decode_hello_line(ld, hello_line, strlen(hello_line), &h), 0);
    struct record_welcome w;
    ck_assert_msg(store_session_open(st, &h, &w, err) == 0, "store_session_open: %s", err);
    job_id = w.job_id;
    ck_assert_int_eq(replay_hello_env(live_a, job_id, &h), 0);
    for (size_t i = 0; i < N_LINES; i++) {
        struct record rec;
        ck_assert_msg(decode_line(ld, lines[i], strlen(lines[i]), &rec) == 0, "line %zu",
                      i);
        ck_assert_int_eq(store_append(st, w.session_id, &rec, 1, w.next_seq + i + 1), 0);
        ck_assert_int_eq(live_feed(live_a, job_id, h.rank, &rec, 1), 0);
    }
    line_decoder_free(ld);
    store_session_close(st, w.session_id, true);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    ck_assert_int_eq(live_flush(live_a), 0);
    ck_assert_int_eq(live_publish(live_a), 0);
}

static void teardown(void)
{
    live_free(live_a);
    store_close(st);
    (void)nftw(data_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static struct replay_config config(struct live *lv)
{
    return (struct replay_config){.store = st, .live = lv, .stats = &stats,
                                  .max_line_bytes = DECODE_LINE_MAX_DEFAULT,
                                  .live_max_bytes = 1 << 30, .live_max_jobs = 64};
}

/* b answers the job's steps (with their points) and operators exactly as live_a does. */
static void assert_same_as_fed(struct live *b)
{
    const struct live_snapshot *sa, *sb;
    ck_assert_int_eq(live_snapshot_get(live_a, job_id, &sa), 0);
    ck_assert_int_eq(live_snapshot_get(b, job_id, &sb), 0);
    struct live_step_row *ra, *rb;
    size_t na, nb, total;
    ck_assert_int_eq(live_query_steps(sa, -1, false, 0, 0, &ra, &na, &total), 0);
    ck_assert_int_eq(live_query_steps(sb, -1, false, 0, 0, &rb, &nb, &total), 0);
    ck_assert_uint_eq(na, 2);
    ck_assert_uint_eq(nb, na);
    /* the hello's env was replayed before the spans: step 1's points are its FP and BP */
    ck_assert_int_eq(rb[0].source, LIVE_POINTS_TRACE);
    ck_assert_str_eq(rb[0].fp_name, "aten::add");
    ck_assert_str_eq(rb[0].bp_name, "aten::mul");
    for (size_t i = 0; i < na; i++) {
        ck_assert_int_eq(rb[i].step, ra[i].step);
        ck_assert_int_eq(rb[i].total_ns, ra[i].total_ns);
        ck_assert_int_eq(rb[i].spans, ra[i].spans);
        ck_assert_int_eq(rb[i].source, ra[i].source);
        ck_assert_int_eq(rb[i].interval_ns, ra[i].interval_ns);
        ck_assert_int_eq(rb[i].fp_bp_ns, ra[i].fp_bp_ns);
        ck_assert_int_eq(rb[i].tail_ns, ra[i].tail_ns);
        ck_assert_str_eq(rb[i].fp_name, ra[i].fp_name);
        ck_assert_str_eq(rb[i].bp_name, ra[i].bp_name);
    }
    free(ra);
    free(rb);

    struct analyse_op_query q = {.sort = ANALYSE_OP_COL_NONE};
    struct analyse_op_table *oa, *ob;
    ck_assert_int_eq(live_query_ops(sa, -1, ANALYSE_OP_GROUP_NAME, &q, &oa), 0);
    ck_assert_int_eq(live_query_ops(sb, -1, ANALYSE_OP_GROUP_NAME, &q, &ob), 0);
    ck_assert_uint_eq(oa->n_rows, 5);
    ck_assert_uint_eq(ob->n_rows, oa->n_rows);
    ck_assert_int_eq(ob->sum_self_ns, oa->sum_self_ns);
    for (size_t i = 0; i < oa->n_rows; i++) {
        ck_assert_str_eq(ob->rows[i].name, oa->rows[i].name);
        ck_assert_int_eq(ob->rows[i].calls, oa->rows[i].calls);
        ck_assert_int_eq(ob->rows[i].self_ns, oa->rows[i].self_ns);
        ck_assert_int_eq(ob->rows[i].total_ns, oa->rows[i].total_ns);
    }
    analyse_op_table_free(oa);
    analyse_op_table_free(ob);

    struct live_queue_row *qa, *qb;
    size_t nqa, nqb;
    ck_assert_int_eq(live_query_queues(sa, -1, &qa, &nqa), 0);
    ck_assert_int_eq(live_query_queues(sb, -1, &qb, &nqb), 0);
    ck_assert_uint_eq(nqa, 1);
    ck_assert_uint_eq(nqb, nqa);
    live_queue_rows_free(qa, nqa);
    live_queue_rows_free(qb, nqb);
    live_snapshot_put(sa);
    live_snapshot_put(sb);
}

START_TEST(test_replay_all_equals_what_was_fed)
{
    struct live *b = live_new();
    ck_assert_ptr_nonnull(b);
    struct replay_config cfg = config(b);
    ck_assert_int_eq(replay_all(&cfg), 0);
    ck_assert(!live_is_evicted(b, job_id));
    ck_assert_uint_eq(atomic_load(&stats.live_bytes), live_bytes(b));
    assert_same_as_fed(b);
    live_free(b);
}
END_TEST

START_TEST(test_replay_reload_brings_an_evicted_job_back)
{
    struct live *b = live_new();
    ck_assert_ptr_nonnull(b);
    struct replay_config cfg = config(b);
    ck_assert_int_eq(replay_all(&cfg), 0);
    ck_assert_int_eq(live_mark_evicted(b, job_id), 0);
    ck_assert(live_is_evicted(b, job_id));
    ck_assert_int_eq(replay_reload(&cfg, job_id), 0);
    ck_assert(!live_is_evicted(b, job_id));
    ck_assert_uint_eq(atomic_load(&stats.live_reloads), 1);
    assert_same_as_fed(b);
    /* not evicted: nothing to do, nothing counted */
    ck_assert_int_eq(replay_reload(&cfg, job_id), 0);
    ck_assert_uint_eq(atomic_load(&stats.live_reloads), 1);
    live_free(b);
}
END_TEST

START_TEST(test_replay_past_the_budget_loads_on_first_use)
{
    struct live *b = live_new();
    ck_assert_ptr_nonnull(b);
    struct replay_config cfg = config(b);
    cfg.live_max_bytes = 0;
    ck_assert_int_eq(replay_all(&cfg), 0);
    ck_assert(live_is_evicted(b, job_id));
    const struct live_snapshot *s = NULL;
    ck_assert_int_ne(live_snapshot_get(b, job_id, &s), 0);
    ck_assert_int_eq(replay_reload(&cfg, job_id), 0);
    assert_same_as_fed(b);
    live_free(b);
}
END_TEST

static Suite *replay_suite(void)
{
    Suite *s = suite_create("replay");
    TCase *tc = tcase_create("store to live");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_replay_all_equals_what_was_fed);
    tcase_add_test(tc, test_replay_reload_brings_an_evicted_job_back);
    tcase_add_test(tc, test_replay_past_the_budget_loads_on_first_use);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(replay_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
