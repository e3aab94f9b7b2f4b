/* SPDX-License-Identifier: MIT */
/*
 * routes_cluster: /api/v1/jobs/{job}/cluster/step-trace, MindInsight's cluster step trace of
 * every rank of a job (API.md; definition in docs/ANALYSIS.md "Cluster step trace").
 *
 * The parallel layout is the "parallel" object of the ranks' hellos (the importer sends it for a
 * MindSpore cluster folder: mode, stages, rank_size and MindSpore's own average rows); a job
 * without one (any torch, Paddle or protocol job) is data-parallel with one stage. The
 * step-trace figures are each rank's live step trace (the /step-trace of that rank); the
 * model- and pipeline-parallel figures are the phases of the ranks' step records.
 */
#include "routes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analyse/analyse_cluster.h"
#include "../analyse/analyse_helper.h"
#include "json.h"
#include "num.h"
#include "render.h"

struct layout {
    bool found;
    enum analyse_cl_mode mode;
    int64_t stages, rank_size;
};

/* One rank's "parallel" object, read from its hellos (the last one that has it wins). */
struct rank_par {
    int64_t rank;
    bool mindspore; /* its hello names MindSpore: no device communication figures */
    bool found;
    struct layout lay;
    int64_t avg_ns[ANALYSE_CL_N_FIGS];
    bool has_avg[ANALYSE_CL_N_FIGS];
    /* from the step records: the asked step's figures, or the sums for a mean */
    int64_t step_ns[ANALYSE_CL_N_FIGS];
    bool has_step[ANALYSE_CL_N_FIGS];
    int64_t sum_ns[ANALYSE_CL_N_FIGS];
    int64_t n_sum[ANALYSE_CL_N_FIGS];
};

struct gather {
    struct rank_par *r;
    size_t n;
    int64_t step;   /* 0: the average */
    int64_t window; /* the average counts steps up to it (routes_view.c); INT64_MAX: all */
};

static struct rank_par *find_rank(struct gather *g, int64_t rank)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->r[i].rank == rank)
            return &g->r[i];
    return NULL;
}

/* "parallel":{"mode":"...","stages":S,"rank_size":N,"average":{"interval":us,...}} */
static void read_parallel(struct json_reader *j, struct rank_par *p)
{
    struct rank_par t = *p;
    t.lay = (struct layout){.found = true, .mode = ANALYSE_CL_DATA, .stages = 1, .rank_size = 1};
    memset(t.has_avg, 0, sizeof t.has_avg);
    char key[40];
    if (!json_object_begin(j))
        return;
    bool mode_ok = false;
    while (json_member(j, key, sizeof key)) {
        const char *s;
        size_t n;
        if (strcmp(key, "mode") == 0) {
            char m[32];
            size_t ml;
            int k;
            if (json_read_string(j, m, sizeof m, &ml) && ml < sizeof m &&
                (k = analyse_cl_mode_parse(m, ml)) >= 0) {
                t.lay.mode = (enum analyse_cl_mode)k;
                mode_ok = true;
            }
        } else if ((strcmp(key, "stages") == 0 || strcmp(key, "rank_size") == 0) &&
                   json_peek(j) == JSON_NUMBER) {
            int64_t v;
            if (json_read_number_text(j, &s, &n) && num_parse_i64(s, n, &v) == 0 && v >= 1)
                *(key[0] == 's' ? &t.lay.stages : &t.lay.rank_size) = v;
        } else if (strcmp(key, "average") == 0 && json_peek(j) == JSON_OBJECT) {
            json_object_begin(j);
            while (json_member(j, key, sizeof key)) {
                int f = -1;
                for (int k = 0; k < ANALYSE_CL_COMMUNICATION && f < 0; k++) {
                    const char *ph = analyse_cl_fig_phase((enum analyse_cl_fig)k);
                    if (strcmp(key, ph ? ph : analyse_cl_fig_name((enum analyse_cl_fig)k)) == 0)
                        f = k;
                }
                int64_t v;
                if (f >= 0 && json_peek(j) == JSON_NUMBER && json_read_number_text(j, &s, &n) &&
                    num_us_to_ns(s, n, &v) == 0 && v >= 0) {
                    t.avg_ns[f] = v;
                    t.has_avg[f] = true;
                } else if (f < 0 || !j->bad) {
                    json_skip(j);
                }
            }
        } else {
            json_skip(j);
        }
        if (j->bad)
            return;
    }
    if (!j->bad && mode_ok) {
        t.found = true;
        *p = t;
    }
}

static void init_rank(void *elem, const struct store_rank *rank)
{
    struct rank_par *p = elem;
    p->mindspore = analyse_framework_of(rank->framework) == ANALYSE_FW_MINDSPORE;
}

static int on_hello(void *ud, void *elem, const char *line, size_t len)
{
    struct json_reader j;
    (void)ud;
    if (web__hello_object(&j, line, len, "parallel"))
        read_parallel(&j, elem);
    return 0;
}

static int on_step(void *ud, int64_t rank, const struct record *rec)
{
    struct gather *g = ud;
    struct rank_par *p = find_rank(g, rank);
    if (!p || !p->found || rec->phases.len == 0 || (g->step > 0 && rec->step != g->step) ||
        (g->step == 0 && rec->step > g->window))
        return 0;
    struct json_reader j;
    json_reader_init(&j, rec->phases.ptr, rec->phases.len);
    char key[40];
    if (!json_object_begin(&j))
        return 0;
    while (json_member(&j, key, sizeof key)) {
        int f = -1;
        for (int k = ANALYSE_CL_COMPUTATION; k < ANALYSE_CL_COMMUNICATION && f < 0; k++)
            if (strcmp(key, analyse_cl_fig_phase((enum analyse_cl_fig)k)) == 0)
                f = k;
        const char *s;
        size_t n;
        int64_t v;
        if (f >= 0 && json_read_number_text(&j, &s, &n) && num_us_to_ns(s, n, &v) == 0) {
            if (g->step > 0) {
                p->step_ns[f] = v;
                p->has_step[f] = true;
            } else {
                p->sum_ns[f] = num_sat_add(p->sum_ns[f], v);
                p->n_sum[f]++;
            }
        } else if (f < 0 && !json_skip(&j)) {
            return 0;
        }
        if (j.bad)
            return 0;
    }
    return 0;
}

/* A torch job's device communication figures of rank (analyse_breakdown.h: HTA's comm/comp
 * overlap, per step of the rank's breakdown): for step, or the mean over the breakdown's steps
 * (step 0). Returns 1 when the rank has kernels (the figures are set; a step its breakdown does
 * not have leaves them unset), 0 when it has none, or a negative errno. */
static int device_figures(const struct live_snapshot *snap, int64_t rank, int64_t step,
                          struct analyse_cl_rank *row)
{
    struct live_breakdown_view v = {0};
    int r = live_query_breakdown(snap, rank, 0, &v);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    const struct analyse_breakdown *bd = v.bd;
    if (!bd || bd->n_gpus == 0) {
        live_breakdown_view_done(&v);
        return 0;
    }
    int64_t comm = 0, comp = 0, ovl = 0, n = 0;
    for (size_t k = 0; k < bd->n_steps; k++) {
        const struct analyse_bd_step *st = &bd->steps[k];
        if (step > 0 && st->step != step)
            continue;
        comm = num_sat_add(comm, st->comm_ns);
        comp = num_sat_add(comp, st->comp_ns);
        ovl = num_sat_add(ovl, st->overlap_ns);
        n++;
    }
    live_breakdown_view_done(&v);
    if (n == 0)
        return 1;
    const int64_t fig[4][2] = {{ANALYSE_CL_COMPUTATION, comp / n},
                               {ANALYSE_CL_COMM_ALONE, (comm - ovl) / n},
                               {ANALYSE_CL_COMMUNICATION, comm / n},
                               {ANALYSE_CL_OVERLAP, ovl / n}};
    for (int i = 0; i < 4; i++) {
        row->fig_ns[fig[i][0]] = fig[i][1];
        row->has[fig[i][0]] = true;
    }
    return 1;
}

int web__cluster_table(struct web *w, const struct store_job *job,
                       const struct live_snapshot *snap, int64_t step, int64_t stage,
                       struct web_cl_table *ret, const char **what)
{
    memset(ret, 0, sizeof *ret);
    struct gather g = {.step = step};
    /* A job over many nodes averages the steps every node shipped past (routes_view.c). */
    struct web_view view;
    *what = "store_query_ranks";
    int r = web__view_get(w, job->id, snap, &view);
    if (r < 0)
        return r;
    g.window = view.window;
    web__view_free(&view);
    void *v;
    *what = "store_query_ranks/hellos";
    r = web__rank_hellos(w, job, sizeof *g.r, init_rank, on_hello, &g, &v, &g.n);
    if (r < 0)
        return r;
    g.r = v;
    size_t n_ranks = g.n;
    struct analyse_cl_rank *rows = calloc(n_ranks ? n_ranks : 1, sizeof *rows);
    *what = "cluster";
    if (!rows) {
        free(g.r);
        return -ENOMEM;
    }
    /* The layout: the lowest rank's that has one; else data-parallel, one stage. */
    struct layout lay = {.found = false, .mode = ANALYSE_CL_DATA, .stages = 1,
                         .rank_size = (int64_t)(n_ranks ? n_ranks : 1)};
    for (size_t i = 0; i < g.n && !lay.found; i++)
        if (g.r[i].found)
            lay = g.r[i].lay;
    int64_t rs = 0;
    if (lay.found && lay.mode != ANALYSE_CL_DATA)
        rs = store_query_steps(w->store, job->id, on_step, &g);
    if (rs < 0) {
        free(g.r);
        free(rows);
        *what = "store_query_steps";
        return (int)rs;
    }
    size_t n_rows = 0;
    int64_t last_step = 0;
    bool ms_avg = false; /* a figure of the average is MindSpore's own */
    bool device_comm = false; /* a rank has kernels: the device communication figures */
    for (size_t i = 0; i < g.n; i++) {
        const struct rank_par *p = &g.r[i];
        struct analyse_cl_rank *row = &rows[n_rows];
        memset(row, 0, sizeof *row);
        row->rank = p->rank;
        row->stage = analyse_cl_stage(p->rank, lay.stages, lay.rank_size);
        if (stage > 0 && row->stage != stage)
            continue;
        /* The step-trace figures: the rank's live step trace of the step, or its mean. */
        struct analyse_st_trace *t = NULL;
        struct live_step_row pts;
        memset(&pts, 0, sizeof pts);
        size_t by_source[LIVE_POINTS_PHASES + 1];
        int q2 = live_query_steptrace(snap, p->rank, false, 0, ANALYSE_ST_ALL_FIRST,
                                      g.window, 0, LIVE_POINTS_NONE, &t, &pts, by_source);
        if (q2 == 0 && t->last_step > last_step)
            last_step = t->last_step;
        if (q2 == 0 && step > 0) {
            analyse_steptrace_free(t);
            t = NULL;
            q2 = live_query_steptrace(snap, p->rank, true, step, ANALYSE_ST_ALL_FIRST,
                                      ANALYSE_ST_ALL_LAST, 0, LIVE_POINTS_NONE, &t, &pts,
                                      by_source);
        }
        if (q2 < 0 && q2 != -ENOENT) {
            free(g.r);
            free(rows);
            *what = "live_query_steptrace";
            return q2;
        }
        if (q2 == 0) {
            const int64_t st[4] = {t->interval_ns, t->fp_bp_ns, t->tail_ns, t->total_ns};
            for (int f = 0; f < 4; f++) {
                row->fig_ns[f] = st[f];
                row->has[f] = true;
            }
            analyse_steptrace_free(t);
        }
        for (int f = 0; f < ANALYSE_CL_N_FIGS; f++) {
            if (step == 0 && p->found && p->has_avg[f]) {
                /* MindSpore's own average rows, as MindInsight shows them */
                row->fig_ns[f] = p->avg_ns[f];
                row->has[f] = true;
                ms_avg = ms_avg || analyse_cl_mode_has(lay.mode, (enum analyse_cl_fig)f);
            } else if (f >= ANALYSE_CL_COMPUTATION && step > 0 && p->has_step[f]) {
                row->fig_ns[f] = p->step_ns[f];
                row->has[f] = true;
            } else if (f >= ANALYSE_CL_COMPUTATION && step == 0 && p->n_sum[f] > 0) {
                row->fig_ns[f] = p->sum_ns[f] / p->n_sum[f];
                row->has[f] = true;
            }
        }
        for (int f = 0; f < ANALYSE_CL_N_FIGS; f++)
            if (!analyse_cl_mode_has(lay.mode, (enum analyse_cl_fig)f))
                row->has[f] = false;
        /* A job without a parallel layout (torch): its kernels' communication and computation.
         * Not MindSpore's: its timelines' communication ops are not kernels. */
        if (!lay.found && !p->mindspore) {
            int rd = device_figures(snap, p->rank, step, row);
            if (rd < 0) {
                free(g.r);
                free(rows);
                *what = "live_query_breakdown";
                return rd;
            }
            device_comm = device_comm || rd > 0;
        }
        bool any = false;
        for (int f = 0; f < ANALYSE_CL_N_FIGS; f++)
            any = any || row->has[f];
        if (any)
            n_rows++;
    }
    free(g.r);
    *ret = (struct web_cl_table){.layout_found = lay.found, .mode = lay.mode,
                                 .stages = lay.stages, .rank_size = lay.rank_size,
                                 .rows = rows, .n_rows = n_rows, .last_step = last_step,
                                 .ms_avg = ms_avg, .device_comm = device_comm};
    return 0;
}

int web__route_cluster(struct web *w, const struct web_req *q, struct web_answer *a,
                       const struct store_job *job, const struct live_snapshot *snap)
{
    int64_t step, stage;
    enum web_format fmt;
    if (web__param_i64(q, a, "step", 0, INT64_MAX, 0, &step) < 0 ||
        web__param_i64(q, a, "stage", 0, INT32_MAX, 0, &stage) < 0 ||
        web__param_format(q, a, false, &fmt) < 0)
        return 0;
    if (!snap)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "no steps yet");
    struct web_cl_table t;
    const char *what;
    int r = web__cluster_table(w, job, snap, step, stage, &t, &what);
    if (r < 0)
        return web__store_error(a, r, what);
    if (t.n_rows == 0) {
        free(t.rows);
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found",
                          step > 0 ? "no rank has this step" : "no rank has steps yet");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_cluster_steptrace(&b, fmt, analyse_cl_mode_name(t.mode), t.mode, t.stages,
                                  t.rank_size, step, t.last_step, t.ms_avg, t.device_comm, t.rows,
                                  t.n_rows);
    free(t.rows);
    return web__doc_fmt(w, a, &b, fmt);
}
