/* SPDX-License-Identifier: MIT */
/*
 * Golden and property tests of the step trace (steptrace.c); the data queues' are in
 * test_analyse_queues.c. The MindSpore fixtures in $TEST_DATA/mindspore/ (tests/data) are parsed here, on the test side, so the
 * module stays free of I/O; each folder's expected.json (what MindInsight returns for those
 * files) is flattened by python3 into "key<TAB>value" lines and every one of its keys must be
 * checked by some test, or the folder's test fails.
 *
 * Each numeric value is checked twice: against an emulation of MindInsight's arithmetic (ms
 * rounded to 4 places before subtracting, stages read from the average row's own columns) to
 * prove we read the fixture as MindInsight does, and against our own result (exact ns,
 * rounded once), which must agree within one unit of the 4th decimal unless the key is a
 * documented quirk (docs/ANALYSIS.md).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyse_roles.h"
#include "analyse_steptrace.h"
#include "mi_golden.h"

static double ns_ms(int64_t ns)
{
    return gold_r4((double)ns / 1e6);
}

/* ===== step_trace_raw_<rank>_detail_time.csv ============================================== */

#define ST_MAXC 64
#define ST_MAXR 64
#define ST_CNT_NS 10 /* one Ascend system count */

struct st_fixture {
    char cols[ST_MAXC][64];
    size_t n_cols;
    char step_num[ST_MAXR][16];
    int64_t v[ST_MAXR][ST_MAXC]; /* counts */
    size_t n_rows;               /* data rows + the average row (last) */
    struct analyse_st_comm comm[ST_MAXR][ST_MAXC];
    struct analyse_st_step steps[ST_MAXR]; /* rows 0..n_rows-2 */
    struct analyse_st_step avg;            /* the last row */
};

static int st_col(const struct st_fixture *f, const char *name)
{
    for (size_t c = 0; c < f->n_cols; c++)
        if (strcmp(f->cols[c], name) == 0)
            return (int)c;
    return -1;
}

static int64_t st_get(const struct st_fixture *f, size_t row, const char *name)
{
    int c = st_col(f, name);
    ck_assert_msg(c >= 0, "no column %s", name);
    return f->v[row][c];
}

static bool is_event_col(const char *name)
{
    size_t l = strlen(name);
    return strncmp(name, "stream_", 7) == 0 && !(l >= 5 && strcmp(name + l - 5, "point") == 0);
}

static void st_build_row(struct st_fixture *f, size_t r, struct analyse_st_step *s)
{
    const char *num = f->step_num[r];
    *s = (struct analyse_st_step){
        .step = num[0] == '-' ? -1 : strtoll(num, NULL, 10),
        .start_ns = st_get(f, r, "start_point") * ST_CNT_NS,
        .fp_ns = st_get(f, r, "fp_point") * ST_CNT_NS,
        .bp_ns = st_col(f, "bp_point") >= 0 ? st_get(f, r, "bp_point") * ST_CNT_NS : 0,
        .end_ns = st_get(f, r, "end_point") * ST_CNT_NS,
        .comm = f->comm[r],
    };
    for (size_t c = 0; c < f->n_cols; c++) {
        if (!is_event_col(f->cols[c]))
            continue;
        char k[96];
        snprintf(k, sizeof k, "%s_start_point", f->cols[c]);
        int64_t st = st_get(f, r, k);
        snprintf(k, sizeof k, "%s_end_point", f->cols[c]);
        int64_t en = st_get(f, r, k);
        f->comm[r][s->n_comm++] = (struct analyse_st_comm){
            strtoll(f->cols[c] + 7, NULL, 10), f->cols[c], strlen(f->cols[c]),
            st * ST_CNT_NS, en * ST_CNT_NS};
    }
}

static void st_load(struct st_fixture *f, const char *dir, const char *file)
{
    memset(f, 0, sizeof *f);
    char path[640];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *fp = fopen(path, "r");
    ck_assert_msg(fp != NULL, "open %s", path);
    char line[8192];
    bool header = true;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0])
            continue;
        size_t c = 0;
        for (char *save = NULL, *tok = strtok_r(line, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save), c++) {
            ck_assert(c < ST_MAXC);
            if (header)
                snprintf(f->cols[c], sizeof f->cols[c], "%s", tok);
            else if (c == 0)
                snprintf(f->step_num[f->n_rows], sizeof f->step_num[0], "%s", tok);
            else
                f->v[f->n_rows][c] = strtoll(tok, NULL, 10);
        }
        if (header) {
            f->n_cols = c;
            header = false;
        } else {
            ck_assert_uint_eq(c, f->n_cols);
            ck_assert(++f->n_rows < ST_MAXR);
        }
    }
    fclose(fp);
    ck_assert_uint_ge(f->n_rows, 2);
    for (size_t r = 0; r + 1 < f->n_rows; r++)
        st_build_row(f, r, &f->steps[r]);
    st_build_row(f, f->n_rows - 1, &f->avg);
}

/* MindInsight's ms: every count rounded to 4 places first (to_millisecond). */
static double mi_ms(int64_t cnt)
{
    return gold_r4((double)cnt / 1e5);
}

/* One graph point as MindInsight builds it from a CSV row, and as we do. */
struct pt {
    const char *name;
    double mi_start, mi_dur;
    double our_start, our_dur;
};

/* MindInsight's reduce events of a row: (stream order, sorted by end), from the columns. */
struct mi_ev {
    int64_t stream, start, end, dur;
    const char *name;
};

static int cmp_mi_ev_end(const void *a, const void *b)
{
    const struct mi_ev *x = a, *y = b;
    return (x->end > y->end) - (x->end < y->end);
}

/* Checks training_trace_graph (and size, point_info) of one row against expected key prefix. */
static void check_graph(struct golden *g, const struct st_fixture *f, size_t row,
                        const char *prefix, const struct analyse_st_trace *t, bool quirk_ok,
                        const char *fp_start, const char *bp_end)
{
    char k[256];
    int64_t s0 = st_get(f, row, "start_point");
    double ms_start = mi_ms(s0);
    snprintf(k, sizeof k, "%s/size", prefix);
    gold_num(g, k, (double)(f->n_rows - 1), (double)(f->n_rows - 1), false);

    /* line 0: total; line 1: the stages. */
    struct pt main_line[3] = {
        {"iteration_interval", 0, mi_ms(st_get(f, row, "iteration_interval")), 0,
         ns_ms(t->interval_ns)},
        {"fp_and_bp", gold_r4(mi_ms(st_get(f, row, "fp_point")) - ms_start),
         mi_ms(st_get(f, row, "fp_and_bp")), ns_ms(t->fp_rel_ns), ns_ms(t->fp_bp_ns)},
        {"tail", gold_r4(mi_ms(st_get(f, row, "bp_point")) - ms_start), mi_ms(st_get(f, row, "tail")),
         ns_ms(t->bp_rel_ns), ns_ms(t->tail_ns)},
    };
    snprintf(k, sizeof k, "%s/training_trace_graph/0/0/name", prefix);
    gold_str(g, k, "");
    snprintf(k, sizeof k, "%s/training_trace_graph/0/0/start", prefix);
    gold_num(g, k, 0, 0, false);
    snprintf(k, sizeof k, "%s/training_trace_graph/0/0/duration", prefix);
    gold_num(g, k, ns_ms(t->total_ns), mi_ms(st_get(f, row, "total")), quirk_ok);
    for (size_t i = 0; i < 3; i++) {
        snprintf(k, sizeof k, "%s/training_trace_graph/1/%zu/name", prefix, i);
        gold_str(g, k, main_line[i].name);
        snprintf(k, sizeof k, "%s/training_trace_graph/1/%zu/start", prefix, i);
        gold_num(g, k, main_line[i].our_start, main_line[i].mi_start, quirk_ok);
        snprintf(k, sizeof k, "%s/training_trace_graph/1/%zu/duration", prefix, i);
        gold_num(g, k, main_line[i].our_dur, main_line[i].mi_dur, quirk_ok);
    }

    /* Reduce lines, MindInsight's way from the columns, next to ours. */
    struct mi_ev ev[ST_MAXC];
    int64_t streams[ST_MAXC];
    size_t n_ev = 0, n_streams = 0;
    for (size_t c = 0; c < f->n_cols; c++) {
        if (!is_event_col(f->cols[c]))
            continue;
        char kk[96];
        struct mi_ev e = {.stream = strtoll(f->cols[c] + 7, NULL, 10), .name = f->cols[c]};
        snprintf(kk, sizeof kk, "%s_start_point", f->cols[c]);
        e.start = st_get(f, row, kk);
        snprintf(kk, sizeof kk, "%s_end_point", f->cols[c]);
        e.end = st_get(f, row, kk);
        e.dur = f->v[row][c];
        if (!e.start || !e.end || !e.dur)
            continue;
        ev[n_ev++] = e;
        size_t s = 0;
        while (s < n_streams && streams[s] != e.stream)
            s++;
        if (s == n_streams)
            streams[n_streams++] = e.stream;
    }
    ck_assert_uint_eq(t->n_lines, n_streams);
    for (size_t s = 0; s < n_streams; s++) {
        struct mi_ev line[ST_MAXC];
        size_t m = 0;
        for (size_t i = 0; i < n_ev; i++)
            if (ev[i].stream == streams[s])
                line[m++] = ev[i];
        /* qsort is not stable, but the fixture's end points on one stream are distinct. */
        qsort(line, m, sizeof *line, cmp_mi_ev_end);
        const struct analyse_st_line *ours = &t->lines[s];
        ck_assert_int_eq(ours->stream, streams[s]);
        ck_assert_uint_eq(ours->n_seg, 2 * m + 1);
        double prev = mi_ms(st_get(f, row, "fp_point"));
        for (size_t i = 0; i <= 2 * m; i++) {
            const struct analyse_st_seg *seg = &ours->seg[i];
            double mstart, mdur;
            const char *mname = "";
            if (i % 2 == 0) {
                double to = i / 2 < m ? mi_ms(line[i / 2].start) : mi_ms(st_get(f, row, "end_point"));
                mstart = gold_r4(prev - ms_start);
                mdur = gold_r4(to - prev);
            } else {
                mname = line[i / 2].name;
                mstart = gold_r4(mi_ms(line[i / 2].start) - ms_start);
                mdur = mi_ms(line[i / 2].dur);
                prev = mi_ms(line[i / 2].end);
            }
            char name[96];
            snprintf(name, sizeof name, "%.*s", (int)seg->name_len, seg->name ? seg->name : "");
            ck_assert_str_eq(name, mname);
            snprintf(k, sizeof k, "%s/training_trace_graph/%zu/%zu/name", prefix, s + 2, i);
            gold_str(g, k, name);
            snprintf(k, sizeof k, "%s/training_trace_graph/%zu/%zu/start", prefix, s + 2, i);
            gold_num(g, k, ns_ms(seg->start_ns), mstart, quirk_ok);
            snprintf(k, sizeof k, "%s/training_trace_graph/%zu/%zu/duration", prefix, s + 2, i);
            gold_num(g, k, ns_ms(seg->dur_ns), mdur, quirk_ok);
        }
    }
    if (fp_start) {
        snprintf(k, sizeof k, "%s/point_info/fp_start", prefix);
        gold_str(g, k, fp_start);
        snprintf(k, sizeof k, "%s/point_info/bp_end", prefix);
        gold_str(g, k, bp_end);
    } else {
        snprintf(k, sizeof k, "%s/point_info", prefix);
        gold_raw(g, k, "{}");
    }
}

/* MindInsight's "<round(x/total*100, 2)>%" as a number. */
static double mi_pct(double part, double total)
{
    if (total == 0)
        return 0;
    char b[64];
    snprintf(b, sizeof b, "%.2f", part / total * 100);
    return strtod(b, NULL);
}

static void check_pct(struct golden *g, const char *key, double ours, double mi, bool quirk_ok)
{
    struct gold_entry *e = gold_find(g, key);
    size_t l = strlen(e->val);
    ck_assert_msg(l > 3 && e->val[l - 1] == '%', "%s: not a percent string: %s", key, e->val);
    double want = strtod(e->val + 2, NULL);
    e->checked = true;
    ck_assert_msg(fabs(want - mi) <= 1e-9, "%s: emulation %g != %g", key, mi, want);
    char b[64];
    snprintf(b, sizeof b, "%.2f", ours);
    if (fabs(strtod(b, NULL) - want) <= 0.005 + 1e-9) {
        g->n_match++;
        return;
    }
    ck_assert_msg(quirk_ok, "%s: ours %.2f != expected %s", key, ours, e->val);
    g->n_quirk++;
    printf("  quirk %s: MindInsight %s, stepscope %.2f%%\n", key, e->val, ours);
}

/* summary from the average row (MindInsight) vs our mean trace. */
static void check_summary(struct golden *g, const struct st_fixture *f,
                          const struct analyse_st_trace *avg, bool quirk_ok)
{
    size_t r = f->n_rows - 1;
    double total = mi_ms(st_get(f, r, "total"));
    double ii = mi_ms(st_get(f, r, "iteration_interval"));
    double fb = mi_ms(st_get(f, r, "fp_and_bp"));
    double tail = mi_ms(st_get(f, r, "tail"));
    gold_num(g, "summary/total_time", ns_ms(avg->total_ns), total, quirk_ok);
    gold_num(g, "summary/iteration_interval", ns_ms(avg->interval_ns), ii, quirk_ok);
    gold_num(g, "summary/fp_and_bp", ns_ms(avg->fp_bp_ns), fb, quirk_ok);
    gold_num(g, "summary/tail", ns_ms(avg->tail_ns), tail, quirk_ok);
    check_pct(g, "summary/iteration_interval_percent", avg->interval_pct, mi_pct(ii, total),
              quirk_ok);
    check_pct(g, "summary/fp_and_bp_percent", avg->fp_bp_pct, mi_pct(fb, total), quirk_ok);
    check_pct(g, "summary/tail_percent", avg->tail_pct, mi_pct(tail, total), quirk_ok);
    gold_num(g, "summary/total_steps", (double)(f->n_rows - 1), (double)(f->n_rows - 1), false);
}

/* proc_<stage>_all_steps and proc_<stage>_step0_average. */
static void check_proc(struct golden *g, const struct st_fixture *f,
                       const struct analyse_st_trace *avg, bool quirk_ok)
{
    size_t n = f->n_rows - 1;
    struct analyse_st_stage rows[ST_MAXR];
    ck_assert_int_eq(analyse_steptrace_stages(f->steps, n, false, rows), 0);
    static const char *const stage[] = {"iteration_interval", "fp_and_bp", "tail"};
    char k[160];
    for (size_t s = 0; s < 3; s++) {
        snprintf(k, sizeof k, "proc_%s_all_steps/size", stage[s]);
        gold_num(g, k, (double)n, (double)n, false);
        for (size_t i = 0; i < n; i++) {
            int64_t ours = s == 0 ? rows[i].interval_ns : s == 1 ? rows[i].fp_bp_ns : rows[i].tail_ns;
            snprintf(k, sizeof k, "proc_%s_all_steps/info/%s/%zu", stage[s], stage[s], i);
            gold_num(g, k, ns_ms(ours), mi_ms(st_get(f, i, stage[s])), false);
        }
        snprintf(k, sizeof k, "proc_%s_step0_average/size", stage[s]);
        gold_num(g, k, (double)n, (double)n, false);
        int64_t ours = s == 0 ? avg->interval_ns : s == 1 ? avg->fp_bp_ns : avg->tail_ns;
        snprintf(k, sizeof k, "proc_%s_step0_average/info/%s/0", stage[s], stage[s]);
        gold_num(g, k, ns_ms(ours), mi_ms(st_get(f, n, stage[s])), quirk_ok);
    }
}

/* ===== step trace goldens ================================================================= */

START_TEST(test_steptrace_golden_small)
{
    static struct golden g;
    static struct st_fixture f;
    gold_load(&g, "01_step_trace_small");
    st_load(&f, g.dir, "step_trace_raw_0_detail_time.csv");
    size_t n = f.n_rows - 1;
    ck_assert_uint_eq(n, 20);

    static const int64_t pick[] = {1, 2, 20};
    for (size_t i = 0; i < sizeof pick / sizeof pick[0]; i++) {
        struct analyse_st_trace *t = NULL;
        ck_assert_int_eq(analyse_steptrace_step(f.steps, n, pick[i], false, &t), 0);
        ck_assert(t->ordered);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "graph_step_%lld", (long long)pick[i]);
        check_graph(&g, &f, (size_t)pick[i] - 1, prefix, t, false, NULL, NULL);
        analyse_steptrace_free(t);
    }

    /* Step 0 is MindSpore's average row: round(mean) over steps 2..20 (step 1 excluded). Our
     * real mean over the same steps must give the same graph and summary. */
    struct analyse_st_trace *avg = NULL;
    ck_assert_int_eq(analyse_steptrace_average(f.steps, n, 2, ANALYSE_ST_ALL_LAST, false, &avg), 0);
    ck_assert_uint_eq(avg->n_steps, 19);
    ck_assert_int_eq(avg->first_step, 2);
    ck_assert_int_eq(avg->last_step, 20);
    check_graph(&g, &f, n, "graph_step_0", avg, false, NULL, NULL);
    check_summary(&g, &f, avg, false);
    check_proc(&g, &f, avg, false);

    /* The average row read as a step gives the same numbers (the fixture's interpretation). */
    struct analyse_st_trace *row = NULL;
    ck_assert_int_eq(analyse_steptrace_step(&f.avg, 1, -1, false, &row), 0);
    ck_assert(llabs(row->interval_ns - avg->interval_ns) <= ST_CNT_NS);
    ck_assert(llabs(row->fp_bp_ns - avg->fp_bp_ns) <= 2 * ST_CNT_NS);
    ck_assert(llabs(row->tail_ns - avg->tail_ns) <= 2 * ST_CNT_NS);
    ck_assert(llabs(row->total_ns - avg->total_ns) <= ST_CNT_NS);
    analyse_steptrace_free(row);
    analyse_steptrace_free(avg);

    /* Over all 20 steps the mean differs: step 1 has no interval (start = fp). */
    ck_assert_int_eq(analyse_steptrace_average(f.steps, n, ANALYSE_ST_ALL_FIRST,
                                               ANALYSE_ST_ALL_LAST, false, &avg),
                     0);
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += f.steps[i].fp_ns - f.steps[i].start_ns;
    ck_assert(llabs(avg->interval_ns - sum / (int64_t)n) <= 1);
    ck_assert(ns_ms(avg->interval_ns) < 86.0 && ns_ms(avg->interval_ns) > 85.0);
    analyse_steptrace_free(avg);
    gold_done(&g);
}
END_TEST

START_TEST(test_steptrace_golden_single_step)
{
    static struct golden g;
    static struct st_fixture f;
    gold_load(&g, "02_step_trace_single_step");
    st_load(&f, g.dir, "step_trace_raw_1_detail_time.csv");
    ck_assert_uint_eq(f.n_rows - 1, 1);

    /* step_trace_point_info.json names the FP/BP ops; we select by those names. */
    char path[640], buf[512];
    snprintf(path, sizeof path, "%s/step_trace_point_info.json", g.dir);
    FILE *fp = fopen(path, "r");
    ck_assert(fp != NULL);
    size_t len = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[len] = '\0';
    char fp_name[128], bp_name[128];
    ck_assert_int_eq(sscanf(buf, "{\"fp_start\": \"%127[^\"]\", \"bp_end\": \"%127[^\"]\"}",
                            fp_name, bp_name),
                     2);
    /* A step's ops in execution order: the override names pick the same ops MindSpore did. */
    struct analyse_span sp[] = {
        {.ts_ns = 0, .dur_ns = 10, .name = "Default/GetNext-op1", .name_len = 19,
         .role = ANALYSE_ROLE_KERNEL},
        {.ts_ns = 20, .dur_ns = 10, .name = "Default/Cast-op2", .name_len = 16,
         .role = ANALYSE_ROLE_KERNEL},
        {.ts_ns = 40, .dur_ns = 10, .name = fp_name, .name_len = strlen(fp_name),
         .role = ANALYSE_ROLE_KERNEL},
        {.ts_ns = 60, .dur_ns = 10, .name = bp_name, .name_len = strlen(bp_name),
         .role = ANALYSE_ROLE_KERNEL},
    };
    struct analyse_st_overrides o = {.profiling_fp = fp_name, .profiling_bp = bp_name};
    struct analyse_st_points pts;
    ck_assert_int_eq(analyse_steptrace_points(sp, 4, &o, &pts), 0);
    char got_fp[128], got_bp[128];
    snprintf(got_fp, sizeof got_fp, "%.*s", (int)pts.fp_name_len, pts.fp_name);
    snprintf(got_bp, sizeof got_bp, "%.*s", (int)pts.bp_name_len, pts.bp_name);
    ck_assert_int_eq(pts.fp_origin, ANALYSE_ST_ORIGIN_ENV_PROFILING);

    struct analyse_st_trace *t = NULL;
    ck_assert_int_eq(analyse_steptrace_step(f.steps, 1, 1, false, &t), 0);
    check_graph(&g, &f, 0, "graph_step_1", t, false, got_fp, got_bp);
    analyse_steptrace_free(t);

    /* The fixture's average row is "0,0,0,0,0,0,1243211,0,0": all points 0, an interval of
     * 12.4321 ms. MindInsight shows it as is (total 0, interval 12.43 ms); the real mean of the
     * one step is the step itself. These keys are documented quirks. */
    struct analyse_st_trace *avg = NULL;
    ck_assert_int_eq(analyse_steptrace_average(f.steps, 1, ANALYSE_ST_ALL_FIRST,
                                               ANALYSE_ST_ALL_LAST, false, &avg),
                     0);
    ck_assert_int_eq(avg->total_ns, f.steps[0].end_ns - f.steps[0].start_ns);
    check_graph(&g, &f, 1, "graph_step_0", avg, true, got_fp, got_bp);
    check_summary(&g, &f, avg, true);
    check_proc(&g, &f, avg, true);
    analyse_steptrace_free(avg);
    gold_done(&g);
}
END_TEST

/* ===== step trace properties ============================================================== */

static void assert_tiles(const struct analyse_st_trace *t)
{
    if (t->inference)
        ck_assert_int_eq(t->interval_ns + t->fp_ns, t->total_ns);
    else
        ck_assert_int_eq(t->interval_ns + t->fp_bp_ns + t->tail_ns, t->total_ns);
    for (size_t l = 0; l < t->n_lines; l++) {
        const struct analyse_st_line *line = &t->lines[l];
        ck_assert_uint_eq(line->n_seg % 2, 1);
        int64_t at = t->fp_rel_ns;
        for (size_t s = 0; s < line->n_seg; s++) {
            ck_assert_int_eq(line->seg[s].start_ns, at);
            ck_assert((s % 2 == 1) == (line->seg[s].name != NULL));
            at += line->seg[s].dur_ns;
        }
        ck_assert_int_eq(at, t->total_ns);
    }
}

START_TEST(test_steptrace_stages_sum_and_lines_tile)
{
    static struct st_fixture f;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/mindspore/01_step_trace_small", gold_test_data());
    st_load(&f, dir, "step_trace_raw_0_detail_time.csv");
    size_t n = f.n_rows - 1;
    struct analyse_st_stage rows[ST_MAXR];
    ck_assert_int_eq(analyse_steptrace_stages(f.steps, n, false, rows), 0);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(rows[i].interval_ns + rows[i].fp_bp_ns + rows[i].tail_ns,
                         rows[i].total_ns);
        /* The CSV's own stage columns, in counts. */
        ck_assert_int_eq(rows[i].total_ns, st_get(&f, i, "total") * ST_CNT_NS);
        ck_assert_int_eq(rows[i].interval_ns, st_get(&f, i, "iteration_interval") * ST_CNT_NS);
        ck_assert_int_eq(rows[i].fp_bp_ns, st_get(&f, i, "fp_and_bp") * ST_CNT_NS);
        ck_assert_int_eq(rows[i].tail_ns, st_get(&f, i, "tail") * ST_CNT_NS);
        struct analyse_st_trace *t = NULL;
        ck_assert_int_eq(analyse_steptrace_step(f.steps, n, f.steps[i].step, false, &t), 0);
        assert_tiles(t);
        analyse_steptrace_free(t);
        ck_assert_int_eq(analyse_steptrace_step(f.steps, n, f.steps[i].step, true, &t), 0);
        assert_tiles(t);
        ck_assert_int_eq(t->fp_ns, rows[i].fp_bp_ns + rows[i].tail_ns);
        analyse_steptrace_free(t);
    }
    /* Averages over ranges tile too, and one-step ranges equal the step. */
    for (int64_t a = 1; a <= (int64_t)n; a += 3) {
        for (int64_t b = a; b <= (int64_t)n; b += 4) {
            struct analyse_st_trace *t = NULL;
            ck_assert_int_eq(analyse_steptrace_average(f.steps, n, a, b, false, &t), 0);
            ck_assert_uint_eq(t->n_steps, (size_t)(b - a + 1));
            assert_tiles(t);
            if (a == b)
                ck_assert_int_eq(t->total_ns, rows[a - 1].total_ns);
            analyse_steptrace_free(t);
        }
    }
    /* ANALYSE_ST_UNSET start: previous end, fp for the first: the same as the CSV's start. */
    struct analyse_st_step unset[ST_MAXR];
    memcpy(unset, f.steps, n * sizeof *unset);
    for (size_t i = 0; i < n; i++)
        unset[i].start_ns = ANALYSE_ST_UNSET;
    struct analyse_st_stage rows2[ST_MAXR];
    ck_assert_int_eq(analyse_steptrace_stages(unset, n, false, rows2), 0);
    ck_assert_mem_eq(rows, rows2, n * sizeof *rows);
}
END_TEST

START_TEST(test_steptrace_average_matches_repeated_ops)
{
    /* Two steps, one stream with the same op name twice: matched by occurrence. */
    struct analyse_st_comm c1[] = {{7, "nccl", 4, 150, 160}, {7, "nccl", 4, 120, 130}};
    struct analyse_st_comm c2[] = {{7, "nccl", 4, 1120, 1140}, {7, "nccl", 4, 1160, 1180},
                                   {9, "x", 1, 1150, 1150}};
    struct analyse_st_step s[] = {
        {.step = 1, .start_ns = 0, .fp_ns = 100, .bp_ns = 170, .end_ns = 200, .comm = c1,
         .n_comm = 2},
        {.step = 2, .start_ns = ANALYSE_ST_UNSET, .fp_ns = 1100, .bp_ns = 1190, .end_ns = 1200,
         .comm = c2, .n_comm = 3},
    };
    struct analyse_st_trace *t = NULL;
    ck_assert_int_eq(analyse_steptrace_average(s, 2, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST,
                                               false, &t),
                     0);
    /* step 2 starts at step 1's end (200): fp_rel 900 */
    ck_assert_int_eq(t->fp_rel_ns, 500);
    ck_assert_int_eq(t->total_ns, 600);
    ck_assert_uint_eq(t->n_comm_skipped, 1);
    ck_assert_uint_eq(t->n_lines, 1);
    ck_assert_uint_eq(t->lines[0].n_seg, 5);
    ck_assert_int_eq(t->lines[0].seg[1].start_ns, (120 + 920) / 2);
    ck_assert_int_eq(t->lines[0].seg[1].dur_ns, (130 + 940) / 2 - (120 + 920) / 2);
    ck_assert_int_eq(t->lines[0].seg[3].start_ns, (150 + 960) / 2);
    assert_tiles(t);
    analyse_steptrace_free(t);
    ck_assert_int_eq(analyse_steptrace_step(s, 2, 3, false, &t), -ENOENT);
    ck_assert_int_eq(analyse_steptrace_average(s, 2, 5, 9, false, &t), -ENOENT);
}
END_TEST

/* ===== FP/BP point derivation (table-driven) ============================================== */

#define SPAN(ts, dur, nm, rl)                                                                      \
    {.ts_ns = (ts), .dur_ns = (dur), .name = (nm), .name_len = sizeof(nm) - 1, .role = (rl),     \
     .tid = 1, .correlation = -1, .external_id = -1}

static const struct analyse_span torch_step[] = {
    SPAN(0, 1000, "ProfilerStep#3", ANALYSE_ROLE_STEP),
    SPAN(10, 90, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
         ANALYSE_ROLE_DATALOADER),
    SPAN(20, 10, "aten::stack", ANALYSE_ROLE_HOST_OP), /* inside the fetch: not FP */
    SPAN(120, 50, "aten::conv2d", ANALYSE_ROLE_HOST_OP),
    SPAN(200, 300, "autograd::engine::evaluate_function: ConvolutionBackward0",
         ANALYSE_ROLE_BACKWARD),
    SPAN(510, 40, "aten::mul_", ANALYSE_ROLE_HOST_OP),
    SPAN(560, 100, "nccl:all_reduce", ANALYSE_ROLE_COMMUNICATION),
    SPAN(700, 200, "Optimizer.step#SGD.step", ANALYSE_ROLE_OPTIMIZER),
};

static const struct analyse_span ms_step[] = {
    SPAN(0, 5, "Default/Cast-op0", ANALYSE_ROLE_KERNEL),
    SPAN(10, 5, "Default/GetNext-op1", ANALYSE_ROLE_KERNEL),
    SPAN(20, 5, "Default/network/Conv2D-op2", ANALYSE_ROLE_KERNEL),
    SPAN(30, 5, "Gradients/Conv2DBackpropFilter-op3", ANALYSE_ROLE_KERNEL),
    SPAN(40, 5, "Default/AllReduce-op4", ANALYSE_ROLE_KERNEL),
    SPAN(50, 5, "Gradients/AddN-op5", ANALYSE_ROLE_KERNEL),
    SPAN(60, 5, "Default/AllReduce-op6", ANALYSE_ROLE_KERNEL),
    SPAN(70, 5, "Default/ApplyMomentum-op7", ANALYSE_ROLE_KERNEL),
};

static const struct analyse_span plain_step[] = {
    SPAN(5, 5, "matmul", ANALYSE_ROLE_KERNEL),
    SPAN(15, 5, "relu", ANALYSE_ROLE_KERNEL),
    SPAN(25, 5, "softmax", ANALYSE_ROLE_KERNEL),
};

static const struct point_case {
    const char *what;
    const struct analyse_span *spans;
    size_t n;
    struct analyse_st_overrides o;
    size_t fp_index, bp_index;
    enum analyse_st_origin fp_origin, bp_origin;
    bool fp_missed, bp_missed;
    int64_t end_ns;
} point_cases[] = {
    {"torch auto", torch_step, 8, {0}, 3, 5, ANALYSE_ST_ORIGIN_AFTER_DATA,
     ANALYSE_ST_ORIGIN_BEFORE_COMM, false, false, 1000},
    {"mindspore auto", ms_step, 8, {0}, 2, 5, ANALYSE_ST_ORIGIN_AFTER_DATA,
     ANALYSE_ST_ORIGIN_BEFORE_COMM, false, false, 75},
    {"no fetch, no comm", plain_step, 3, {0}, 0, 2, ANALYSE_ST_ORIGIN_FIRST_OP,
     ANALYSE_ST_ORIGIN_LAST_OP, false, false, 30},
    {"config override", ms_step, 8,
     {.config_fp = "Default/Cast-op0", .config_bp = "Gradients/Conv2DBackpropFilter-op3"}, 0, 3,
     ANALYSE_ST_ORIGIN_CONFIG, ANALYSE_ST_ORIGIN_CONFIG, false, false, 75},
    {"env beats config", ms_step, 8,
     {.config_fp = "Default/Cast-op0", .stepscope_fp = "Default/network/Conv2D-op2",
      .mindspore_bp = "Default/ApplyMomentum-op7", .config_bp = "Default/Cast-op0"},
     2, 7, ANALYSE_ST_ORIGIN_ENV_STEPSCOPE, ANALYSE_ST_ORIGIN_ENV_MINDSPORE, false, false, 75},
    {"profiling beats FP_POINT", ms_step, 8,
     {.profiling_fp = "Default/Cast-op0", .mindspore_fp = "Default/network/Conv2D-op2",
      .profiling_bp = "Gradients/AddN-op5", .mindspore_bp = "Default/ApplyMomentum-op7"},
     0, 5, ANALYSE_ST_ORIGIN_ENV_PROFILING, ANALYSE_ST_ORIGIN_ENV_PROFILING, false, false, 75},
    {"missed override falls back", torch_step, 8,
     {.stepscope_fp = "aten::nothing", .stepscope_bp = ""}, 3, 5, ANALYSE_ST_ORIGIN_AFTER_DATA,
     ANALYSE_ST_ORIGIN_BEFORE_COMM, true, false, 1000},
};

START_TEST(test_steptrace_points_table)
{
    const struct point_case *c = &point_cases[_i];
    struct analyse_st_points p;
    ck_assert_int_eq(analyse_steptrace_points(c->spans, c->n, &c->o, &p), 0);
    ck_assert_msg(p.fp_index == c->fp_index, "%s: fp %zu", c->what, p.fp_index);
    ck_assert_msg(p.bp_index == c->bp_index, "%s: bp %zu", c->what, p.bp_index);
    ck_assert_msg(p.fp_origin == c->fp_origin, "%s: fp origin %s", c->what,
                  analyse_st_origin_names[p.fp_origin]);
    ck_assert_msg(p.bp_origin == c->bp_origin, "%s: bp origin %s", c->what,
                  analyse_st_origin_names[p.bp_origin]);
    ck_assert(p.fp_override_missed == c->fp_missed);
    ck_assert(p.bp_override_missed == c->bp_missed);
    ck_assert_int_eq(p.fp_ns, c->spans[c->fp_index].ts_ns);
    ck_assert_int_eq(p.bp_ns, c->spans[c->bp_index].ts_ns + c->spans[c->bp_index].dur_ns);
    ck_assert_int_eq(p.end_ns, c->end_ns);
    ck_assert_ptr_eq(p.fp_name, c->spans[c->fp_index].name);

    /* With the name bits computed once per span (live's per-op cache): the same points. */
    uint8_t bits[8];
    ck_assert_uint_le(c->n, 8);
    for (size_t i = 0; i < c->n; i++)
        bits[i] = (uint8_t)analyse_steptrace_name_bits(c->spans[i].name, c->spans[i].name_len);
    struct analyse_st_points q;
    ck_assert_int_eq(analyse_steptrace_points_bits(c->spans, bits, c->n, &c->o, &q), 0);
    ck_assert_uint_eq(q.fp_index, p.fp_index);
    ck_assert_uint_eq(q.bp_index, p.bp_index);
    ck_assert_int_eq(q.fp_origin, p.fp_origin);
    ck_assert_int_eq(q.bp_origin, p.bp_origin);
    ck_assert(q.fp_override_missed == p.fp_override_missed);
    ck_assert(q.bp_override_missed == p.bp_override_missed);
    ck_assert_int_eq(q.fp_ns, p.fp_ns);
    ck_assert_int_eq(q.bp_ns, p.bp_ns);
    ck_assert_int_eq(q.end_ns, p.end_ns);
}
END_TEST

START_TEST(test_steptrace_name_bits)
{
    static const struct {
        const char *name;
        unsigned bits;
    } names[] = {
        {"aten::conv2d", 0},
        {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ANALYSE_ST_NAME_FETCH},
        {"Default/GetNext-op1", ANALYSE_ST_NAME_FETCH},
        {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
         ANALYSE_ST_NAME_COMM},
        {"c10d::allreduce_", ANALYSE_ST_NAME_COMM},
        {"all_reduce", ANALYSE_ST_NAME_COMM},
        {"Default/hcom_allReduce-op9", ANALYSE_ST_NAME_COMM},
        {"GetNext then AllReduce", ANALYSE_ST_NAME_FETCH | ANALYSE_ST_NAME_COMM},
        {"Allreduce", 0}, /* case-sensitive, as the substrings are */
        {"nccGetNex", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(analyse_steptrace_name_bits(names[i].name, strlen(names[i].name)) ==
                          names[i].bits,
                      "%s", names[i].name);
    ck_assert_uint_eq(analyse_steptrace_name_bits(NULL, 0), 0);

    /* The bits are what the points read: spans all claimed to be data fetches hold no operator. */
    uint8_t fetch[8];
    memset(fetch, ANALYSE_ST_NAME_FETCH, sizeof fetch);
    struct analyse_st_points p;
    ck_assert_int_eq(analyse_steptrace_points_bits(plain_step, fetch, 3, NULL, &p), -ENOENT);
    ck_assert_int_eq(analyse_steptrace_points_bits(plain_step, NULL, 3, NULL, &p), 0);
}
END_TEST

START_TEST(test_steptrace_points_edges)
{
    struct analyse_st_points p;
    static const struct analyse_span only_meta[] = {
        SPAN(0, 10, "ProfilerStep#1", ANALYSE_ROLE_STEP),
        SPAN(0, 5, "enumerate(DataLoader)", ANALYSE_ROLE_DATALOADER),
    };
    ck_assert_int_eq(analyse_steptrace_points(only_meta, 2, NULL, &p), -ENOENT);
    ck_assert_int_eq(analyse_steptrace_points(NULL, 1, NULL, &p), -EINVAL);
    enum analyse_st_origin o;
    ck_assert_ptr_null(analyse_steptrace_pick_override(NULL, true, &o));
    ck_assert_int_eq(o, ANALYSE_ST_ORIGIN_NONE);
    struct analyse_st_comm comm[8];
    size_t n;
    ck_assert_int_eq(analyse_steptrace_comm_from_spans(ms_step, 8, comm, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(comm[1].start_ns, 60);
    ck_assert_int_eq(comm[1].end_ns, 65);
    /* Derived points feed the step trace: the stages still sum. */
    ck_assert_int_eq(analyse_steptrace_points(torch_step, 8, NULL, &p), 0);
    ck_assert_int_eq(analyse_steptrace_comm_from_spans(torch_step, 8, comm, &n), 0);
    struct analyse_st_step s = {.step = 3, .start_ns = 0, .fp_ns = p.fp_ns, .bp_ns = p.bp_ns,
                                .end_ns = p.end_ns, .comm = comm, .n_comm = n};
    struct analyse_st_trace *t = NULL;
    ck_assert_int_eq(analyse_steptrace_step(&s, 1, 3, false, &t), 0);
    ck_assert_int_eq(t->interval_ns, 120);
    ck_assert_int_eq(t->fp_bp_ns, 550 - 120);
    ck_assert_int_eq(t->tail_ns, 1000 - 550);
    assert_tiles(t);
    analyse_steptrace_free(t);
}
END_TEST

static Suite *analyse_steptrace_suite(void)
{
    Suite *s = suite_create("analyse_steptrace");
    TCase *tc = tcase_create("steptrace_golden");
    tcase_add_test(tc, test_steptrace_golden_small);
    tcase_add_test(tc, test_steptrace_golden_single_step);
    suite_add_tcase(s, tc);
    tc = tcase_create("steptrace_properties");
    tcase_add_test(tc, test_steptrace_stages_sum_and_lines_tile);
    tcase_add_test(tc, test_steptrace_average_matches_repeated_ops);
    suite_add_tcase(s, tc);
    tc = tcase_create("steptrace_points");
    tcase_add_loop_test(tc, test_steptrace_points_table, 0,
                        (int)(sizeof point_cases / sizeof point_cases[0]));
    tcase_add_test(tc, test_steptrace_name_bits);
    tcase_add_test(tc, test_steptrace_points_edges);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(analyse_steptrace_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
