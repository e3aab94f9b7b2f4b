/* SPDX-License-Identifier: MIT */
/*
 * routes_live: /api/v1/jobs/{job}/steps, /step-trace, /operators, /kernels, /queues, /pipeline,
 * /ranks and /helper, answered from the job's latest live snapshot (daemon/live/live_query.h),
 * which the loop republishes every 100 ms and which the daemon rebuilds from the store at
 * start-up. A handler takes a reference to the
 * snapshot, computes its page with the pure analyses, renders it (render.c) and drops the
 * reference: no handler touches loop state or the store's writer, and none waits for ingest.
 * A job the store knows but live has not published yet answers an empty table (404 for a step
 * trace, which has nothing to average).
 */
#include "web_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#define STEPS_LIMIT_DEFAULT 1000
#define OPS_LIMIT_DEFAULT 100
#define SEARCH_MAX 256 /* bytes of a search term */

static int bad(struct web *w, struct MHD_Connection *c, const char *msg)
{
    return web__send_error(w, c, MHD_HTTP_BAD_REQUEST, "bad_request", msg);
}

int web__param_format(struct web *w, struct MHD_Connection *c, bool *ret_csv, int *ret_mhd)
{
    char buf[8];
    size_t len;
    int r = web__param_str(w, c, "format", buf, sizeof buf, &len, ret_mhd);
    if (r < 0)
        return -1;
    *ret_csv = false;
    if (r == 0 || strcmp(buf, "json") == 0)
        return 0;
    if (strcmp(buf, "csv") == 0) {
        *ret_csv = true;
        return 0;
    }
    *ret_mhd = bad(w, c, "format: json or csv");
    return -1;
}

static int send_doc(struct web *w, struct MHD_Connection *c, struct sbuf *b, bool csv)
{
    return csv ? web__send_csv(w, c, b) : web__send_json(w, c, MHD_HTTP_OK, b, NULL);
}

/* rank (-1 when absent), offset, limit and format of a paged per-step table. Returns 0, or -1
 * (answered; *ret_mhd set). */
static int param_page(struct web *w, struct MHD_Connection *c, int64_t *rank, int64_t *offset,
                      int64_t *limit, bool *csv, int *ret_mhd)
{
    if (web__param_i64(w, c, "rank", -1, INT32_MAX, -1, rank, ret_mhd) < 0 ||
        web__param_i64(w, c, "offset", 0, INT64_MAX, 0, offset, ret_mhd) < 0 ||
        web__param_i64(w, c, "limit", 1, LIVE_ROWS_MAX, STEPS_LIMIT_DEFAULT, limit, ret_mhd) < 0 ||
        web__param_format(w, c, csv, ret_mhd) < 0)
        return -1;
    return 0;
}

/* Folds rows[0, n) into max_points even buckets of consecutive rows, in place: each bucket keeps
 * its first row's step, rank, start, names and source, ends at its last row's end, and has the
 * mean total and samples and the mean stages (over the rows with points; a bucket without any
 * keeps source NONE). Returns the new row count. */
static size_t downsample_steps(struct live_step_row *rows, size_t n, size_t max_points)
{
    if (max_points == 0 || n <= max_points)
        return n;
    for (size_t k = 0; k < max_points; k++) {
        size_t lo = n * k / max_points, hi = n * (k + 1) / max_points;
        struct live_step_row out = rows[lo];
        double total = 0, samples = 0, iv = 0, fb = 0, tail = 0;
        size_t n_samples = 0, n_points = 0;
        for (size_t i = lo; i < hi; i++) {
            const struct live_step_row *r = &rows[i];
            total += (double)r->total_ns;
            if (r->samples >= 0) {
                samples += (double)r->samples;
                n_samples++;
            }
            if (r->source != LIVE_POINTS_NONE) {
                iv += (double)r->interval_ns;
                fb += (double)r->fp_bp_ns;
                tail += (double)r->tail_ns;
                if (n_points++ == 0)
                    out.source = r->source;
            }
        }
        out.end_ns = rows[hi - 1].end_ns;
        out.total_ns = (int64_t)(total / (double)(hi - lo));
        out.samples = n_samples ? (int64_t)(samples / (double)n_samples) : -1;
        if (n_points) {
            out.interval_ns = (int64_t)(iv / (double)n_points);
            out.fp_bp_ns = (int64_t)(fb / (double)n_points);
            out.tail_ns = (int64_t)(tail / (double)n_points);
        }
        rows[k] = out;
    }
    return max_points;
}

static int get_steps(struct web *w, struct MHD_Connection *c, const struct live_snapshot *snap)
{
    int64_t rank, offset, limit, max_points;
    bool csv;
    int mhd;
    if (param_page(w, c, &rank, &offset, &limit, &csv, &mhd) < 0 ||
        web__param_i64(w, c, "max_points", 0, LIVE_ROWS_MAX, 0, &max_points, &mhd) < 0)
        return mhd;
    struct live_step_row *rows = NULL;
    size_t n = 0, total = 0;
    if (snap) {
        int r = live_query_steps(snap, rank, (size_t)offset, (size_t)limit, &rows, &n, &total);
        if (r < 0)
            return web__send_store_error(w, c, r, "live_query_steps");
        n = downsample_steps(rows, n, (size_t)max_points);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_steps(&b, rows, n, total, csv);
    free(rows);
    return send_doc(w, c, &b, csv);
}

static int get_steptrace(struct web *w, struct MHD_Connection *c, const struct live_snapshot *snap)
{
    int64_t rank, step, from, to, skip;
    int mhd;
    if (web__param_i64(w, c, "rank", 0, INT32_MAX, 0, &rank, &mhd) < 0 ||
        web__param_i64(w, c, "step", INT64_MIN, INT64_MAX, INT64_MIN, &step, &mhd) < 0 ||
        web__param_i64(w, c, "from", INT64_MIN, INT64_MAX, ANALYSE_ST_ALL_FIRST, &from, &mhd) < 0 ||
        web__param_i64(w, c, "to", INT64_MIN, INT64_MAX, ANALYSE_ST_ALL_LAST, &to, &mhd) < 0 ||
        web__param_i64(w, c, "skip", 0, INT32_MAX, 0, &skip, &mhd) < 0)
        return mhd;
    bool single = step != INT64_MIN;
    if (single && (from != ANALYSE_ST_ALL_FIRST || to != ANALYSE_ST_ALL_LAST || skip != 0))
        return bad(w, c, "step: not together with from/to/skip");
    if (to < from)
        return bad(w, c, "to: below from");
    if (!snap)
        return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", "no steps yet");
    struct analyse_st_trace *t = NULL;
    struct live_step_row pts;
    memset(&pts, 0, sizeof pts);
    pts.fp_name = pts.bp_name = "";
    int r = live_query_steptrace(snap, rank, single, step, from, to, (size_t)skip, &t, &pts);
    if (r == -ENOENT)
        return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found",
                               single ? "no such step with FP/BP points on this rank"
                                      : "no step with FP/BP points in range on this rank");
    if (r < 0)
        return web__send_store_error(w, c, r, "live_query_steptrace");
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_steptrace(&b, t, &pts, (size_t)skip);
    analyse_steptrace_free(t);
    return web__send_json(w, c, MHD_HTTP_OK, &b, NULL);
}

/* The parameters of the operator and kernel tables. q.search points into search. */
struct table_params {
    int64_t rank;
    bool csv;
    struct analyse_op_query q;
    const char *terms[1];
    char search[SEARCH_MAX + 1];
};

/* rank, offset, limit, top, format, sort, order and search into *p. Kernel tables (ops false)
 * have no type or self column to sort by. Returns 0 or -1 (answered; *ret_mhd set). */
static int param_table(struct web *w, struct MHD_Connection *c, bool ops, struct table_params *p,
                       int *ret_mhd)
{
    const char *cols = ops ? "sort: not a column (name, type, calls, total, self, avg, min, max, "
                             "percent)"
                           : "sort: not a column (name, calls, total, avg, min, max, percent)";
    int64_t offset, limit, top;
    if (web__param_i64(w, c, "rank", -1, INT32_MAX, -1, &p->rank, ret_mhd) < 0 ||
        web__param_i64(w, c, "offset", 0, INT64_MAX, 0, &offset, ret_mhd) < 0 ||
        web__param_i64(w, c, "limit", 1, LIVE_ROWS_MAX, OPS_LIMIT_DEFAULT, &limit, ret_mhd) < 0 ||
        web__param_i64(w, c, "top", 0, LIVE_ROWS_MAX, 0, &top, ret_mhd) < 0 ||
        web__param_format(w, c, &p->csv, ret_mhd) < 0)
        return -1;
    p->q = (struct analyse_op_query){.sort = ANALYSE_OP_COL_NONE, .desc = true,
                                     .top_n = (size_t)top, .offset = (size_t)offset,
                                     .limit = (size_t)limit};
    char sort_s[16], order_s[8];
    size_t len;
    int r = web__param_str(w, c, "sort", sort_s, sizeof sort_s, &len, ret_mhd);
    if (r < 0)
        return -1;
    if (r == 1 && (analyse_op_col_parse(sort_s, &p->q.sort) < 0 ||
                   (!ops && (p->q.sort == ANALYSE_OP_COL_TYPE ||
                             p->q.sort == ANALYSE_OP_COL_SELF)))) {
        *ret_mhd = bad(w, c, cols);
        return -1;
    }
    r = web__param_str(w, c, "order", order_s, sizeof order_s, &len, ret_mhd);
    if (r < 0)
        return -1;
    if (r == 1 && strcmp(order_s, "asc") == 0) {
        p->q.desc = false;
    } else if (r == 1 && strcmp(order_s, "desc") != 0) {
        *ret_mhd = bad(w, c, "order: asc or desc");
        return -1;
    }
    r = web__param_str(w, c, "search", p->search, sizeof p->search, &len, ret_mhd);
    if (r < 0)
        return -1;
    if (r == 1) {
        p->terms[0] = p->search;
        p->q.search = p->terms;
        p->q.n_search = 1;
    }
    return 0;
}

/* ?group=name|type (default name). Returns 0, or -1 with *ret_mhd set (a 400). */
static int param_group(struct web *w, struct MHD_Connection *c, enum analyse_op_group *ret,
                       int *ret_mhd)
{
    char group_s[8];
    size_t len;
    *ret = ANALYSE_OP_GROUP_NAME;
    int r = web__param_str(w, c, "group", group_s, sizeof group_s, &len, ret_mhd);
    if (r < 0)
        return -1;
    if (r == 1 && strcmp(group_s, "type") == 0) {
        *ret = ANALYSE_OP_GROUP_TYPE;
    } else if (r == 1 && strcmp(group_s, "name") != 0) {
        *ret_mhd = bad(w, c, "group: name or type");
        return -1;
    }
    return 0;
}

/* The operator table: the host operators, or with side=device (the default for a rank
 * without host operators: MindSpore on Ascend, whose operators run on the AI Core and arrive
 * as kernel spans) the device operators, which are the kernel table. */
static int get_operators(struct web *w, struct MHD_Connection *c, const struct live_snapshot *snap)
{
    struct table_params p;
    int mhd;
    enum analyse_op_group group;
    if (param_table(w, c, true, &p, &mhd) < 0 || param_group(w, c, &group, &mhd) < 0)
        return mhd;
    char side_s[8];
    size_t len;
    int r = web__param_str(w, c, "side", side_s, sizeof side_s, &len, &mhd);
    if (r < 0)
        return mhd;
    if (r == 1 && strcmp(side_s, "host") != 0 && strcmp(side_s, "device") != 0)
        return bad(w, c, "side: host or device");
    bool device = r == 1 ? strcmp(side_s, "device") == 0
                         : snap && !live_has_host_ops(snap, p.rank);
    struct analyse_op_table empty = {0};
    struct analyse_op_table *page = NULL;
    if (snap) {
        r = device ? live_query_kernels(snap, p.rank, group, &p.q, &page)
                   : live_query_ops(snap, p.rank, group, &p.q, &page);
        if (r == -ENOENT)
            return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        if (r < 0)
            return web__send_store_error(w, c, r, "live_query_ops");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_ops(&b, page ? page : &empty,
                         group == ANALYSE_OP_GROUP_TYPE ? "type" : "name",
                         device ? "device" : "host", p.csv);
    analyse_op_table_free(page);
    return send_doc(w, c, &b, p.csv);
}

static int get_kernels(struct web *w, struct MHD_Connection *c, const struct live_snapshot *snap)
{
    struct table_params p;
    int mhd;
    enum analyse_op_group group;
    if (param_table(w, c, false, &p, &mhd) < 0 || param_group(w, c, &group, &mhd) < 0)
        return mhd;
    struct analyse_op_table empty = {0};
    struct analyse_op_table *page = NULL;
    if (snap) {
        int r = live_query_kernels(snap, p.rank, group, &p.q, &page);
        if (r == -ENOENT)
            return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        if (r < 0)
            return web__send_store_error(w, c, r, "live_query_kernels");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_kernels(&b, page ? page : &empty, p.csv);
    analyse_op_table_free(page);
    return send_doc(w, c, &b, p.csv);
}

static int get_queues(struct web *w, struct MHD_Connection *c, const struct live_snapshot *snap)
{
    int64_t rank;
    bool csv;
    int mhd;
    if (web__param_i64(w, c, "rank", -1, INT32_MAX, -1, &rank, &mhd) < 0 ||
        web__param_format(w, c, &csv, &mhd) < 0)
        return mhd;
    struct live_queue_row *rows = NULL;
    size_t n = 0;
    if (snap) {
        int r = live_query_queues(snap, rank, &rows, &n);
        if (r == -ENOENT)
            return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        if (r < 0)
            return web__send_store_error(w, c, r, "live_query_queues");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_queues(&b, rows, n, csv);
    live_queue_rows_free(rows, n);
    return send_doc(w, c, &b, csv);
}

/* analyse's op array of a pipeline view (children borrowed from the view), or NULL on OOM;
 * *ret_analysed says whether any op has queue figures to judge. Caller frees. */
static struct analyse_pipe_op *pipe_ops(const struct live_pipeline_view *v, bool *ret_analysed)
{
    struct analyse_pipe_op *ops = calloc(v->n_ops + 1, sizeof *ops);
    if (!ops)
        return NULL;
    bool analysed = false;
    for (size_t i = 0; i < v->n_ops; i++) {
        const struct live_pipe_op *o = &v->ops[i];
        ops[i] = (struct analyse_pipe_op){.op_id = o->id, .op_type = o->type,
                                          .num_workers = o->num_workers,
                                          .parent_id = o->parent_id,
                                          .children = v->children + o->first_child,
                                          .n_children = o->n_children, .usage = o->usage};
        analysed |= o->usage >= 0;
    }
    *ret_analysed = analysed;
    return ops;
}

static int get_pipeline(struct web *w, struct MHD_Connection *c, const struct live_snapshot *snap)
{
    int64_t rank, op_id;
    bool csv;
    int mhd;
    if (web__param_i64(w, c, "rank", -1, INT32_MAX, -1, &rank, &mhd) < 0 ||
        web__param_i64(w, c, "op", INT64_MIN + 1, INT64_MAX, INT64_MIN, &op_id, &mhd) < 0 ||
        web__param_format(w, c, &csv, &mhd) < 0)
        return mhd;
    struct live_pipeline_view v;
    if (!snap || live_query_pipeline(snap, rank, &v) < 0)
        return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found",
                               rank >= 0 ? "no pipeline record on this rank"
                                         : "no pipeline record");
    bool analysed;
    struct analyse_pipe_op *ops = pipe_ops(&v, &analysed);
    if (!ops)
        return web__send_store_error(w, c, -ENOMEM, "pipeline");
    struct analyse_pipe_finding *f = NULL;
    size_t nf = 0;
    if (analysed && analyse_pipe_bottlenecks(ops, v.n_ops, ANALYSE_PIPE_HIGH, ANALYSE_PIPE_LOW,
                                             ANALYSE_PIPE_DIFF, &f, &nf) < 0) {
        free(ops);
        return web__send_store_error(w, c, -ENOMEM, "analyse_pipe_bottlenecks");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_pipeline(&b, &v, analysed, f, nf, op_id, csv);
    free(f);
    free(ops);
    return send_doc(w, c, &b, csv);
}

static int get_ranks(struct web *w, struct MHD_Connection *c, const struct live_snapshot *snap)
{
    bool csv;
    int mhd;
    if (web__param_format(w, c, &csv, &mhd) < 0)
        return mhd;
    struct analyse_ranks empty = {.straggler_ratio = w->helper_rules.straggler_ratio};
    struct analyse_ranks *ranks = NULL;
    if (snap) {
        int r = live_query_ranks(snap, w->helper_rules.straggler_ratio, &ranks);
        if (r < 0)
            return web__send_store_error(w, c, r, "live_query_ranks");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_ranks(&b, ranks ? ranks : &empty, csv);
    analyse_ranks_free(ranks);
    return send_doc(w, c, &b, csv);
}

/* The framework the rank's hello named (the store keeps the latest session's), which picks the
 * rule families. Any failure leaves ANALYSE_FW_OTHER: every family, each on its own evidence. */
static enum analyse_framework rank_framework(struct web *w, int64_t job_id, int64_t rank)
{
    struct store_rank *ranks = NULL;
    size_t n = 0;
    enum analyse_framework fw = ANALYSE_FW_OTHER;
    if (!w->store || store_query_ranks(w->store, job_id, &ranks, &n) < 0)
        return fw;
    for (size_t i = 0; i < n; i++)
        if (ranks[i].rank == rank)
            fw = analyse_framework_of(ranks[i].framework);
    free(ranks);
    return fw;
}

/* The helper's evidence for one rank, from what live keeps: the rank's step-trace average, its
 * host and device queues, its pipeline's queue figures, its mean system CPU, its step-time
 * breakdown and GPU utilisation, and the per-rank statistics of the job (when it has more than
 * one rank); and the framework its hello named, which decides the rule families. TF's input
 * percentages are not kept live, so their rules stay silent. */
static int get_helper(struct web *w, struct MHD_Connection *c, const struct store_job *job,
                      const struct live_snapshot *snap)
{
    int64_t rank;
    int mhd;
    if (web__param_i64(w, c, "rank", -1, INT32_MAX, -1, &rank, &mhd) < 0)
        return mhd;
    struct analyse_helper_input in;
    analyse_helper_input_init(&in);
    struct analyse_ranks *ranks = NULL;
    struct analyse_st_trace *t = NULL;
    struct live_queue_row *qrows = NULL;
    size_t nq = 0;
    struct analyse_pipe_op *ops = NULL;
    struct analyse_helper_result *res = NULL;
    struct live_breakdown_view bv = {0};
    const char *what = "live_query_ranks";
    int r = 0;
    if (snap) {
        r = live_query_ranks(snap, w->helper_rules.straggler_ratio, &ranks);
        if (r < 0)
            goto fail;
        /* No rank given: the lowest one, as the job's ranks are listed. */
        if (rank < 0 && ranks->n_ranks > 0)
            rank = ranks->rows[0].rank;
        bool known = false;
        for (size_t i = 0; i < ranks->n_ranks; i++)
            known |= ranks->rows[i].rank == rank;
        if (!known && rank >= 0) {
            analyse_ranks_free(ranks);
            return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        }
        if (ranks->n_ranks > 1)
            in.ranks = ranks;
    }
    if (rank < 0)
        rank = 0;
    in.framework = rank_framework(w, job->id, rank);
    if (snap) {
        what = "live_query_steptrace";
        struct live_step_row pts;
        r = live_query_steptrace(snap, rank, false, 0, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST,
                                 0, &t, &pts);
        if (r < 0 && r != -ENOENT)
            goto fail;
        if (t) {
            in.st_interval_ns = (double)t->interval_ns;
            in.st_fp_bp_ns = (double)t->fp_bp_ns;
            in.st_tail_ns = (double)t->tail_ns;
            in.st_total_ns = (double)t->total_ns;
        }
        what = "live_query_queues";
        r = live_query_queues(snap, rank, &qrows, &nq);
        if (r < 0)
            goto fail;
        for (size_t i = 0; i < nq; i++) {
            if (qrows[i].role == LIVE_QUEUE_HOST && !in.host_queue)
                in.host_queue = &qrows[i].stats;
            else if (qrows[i].role == LIVE_QUEUE_DEVICE && !in.device_queue)
                in.device_queue = &qrows[i].stats;
        }
        what = "pipeline";
        struct live_pipeline_view v;
        if (live_query_pipeline(snap, rank, &v) == 0) {
            bool analysed;
            r = -ENOMEM;
            ops = pipe_ops(&v, &analysed);
            if (!ops)
                goto fail;
            if (analysed) {
                in.pipe_ops = ops;
                in.n_pipe_ops = v.n_ops;
            }
        }
        struct live_host_row h;
        if (live_query_host(snap, rank, &h) == 0)
            in.host_cpu_pct = h.sys_cpu_pct;
        /* torch-tb-profiler's rules: the rank's breakdown averages and GPU utilisation. */
        what = "live_query_breakdown";
        /* A breakdown up to 5 s old will do: the helper rarely computes one itself. */
        r = live_query_breakdown(snap, rank, LIVE_BD_STALE_NS, &bv);
        if (r < 0 && r != -ENOENT)
            goto fail;
        if (r == 0 && bv.bd->n_steps > 0) {
            in.has_breakdown = true;
            for (size_t k = 0; k < ANALYSE_BD_COUNT; k++)
                in.bd_avg_ns[k] = bv.bd->avg_ns[k];
            in.bd_total_ns = bv.bd->avg_total_ns;
            in.gpus = bv.bd->gpus;
            in.n_gpus = bv.bd->n_gpus;
        }
    }
    what = "analyse_helper_run";
    r = analyse_helper_run(&in, &w->helper_rules, &res);
    if (r < 0)
        goto fail;
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_helper(&b, rank, &in, res);
    mhd = web__send_json(w, c, MHD_HTTP_OK, &b, NULL);
    goto out;
fail:
    mhd = web__send_store_error(w, c, r, what);
out:
    live_breakdown_view_done(&bv);
    analyse_helper_result_free(res);
    free(ops);
    live_queue_rows_free(qrows, nq);
    analyse_steptrace_free(t);
    analyse_ranks_free(ranks);
    return mhd;
}

static int get_breakdown(struct web *w, struct MHD_Connection *c, const struct live_snapshot *snap)
{
    int64_t rank, offset, limit;
    bool csv;
    int mhd;
    if (param_page(w, c, &rank, &offset, &limit, &csv, &mhd) < 0)
        return mhd;
    struct live_breakdown_view v = {.rank = rank < 0 ? 0 : rank};
    if (snap) {
        int r = live_query_breakdown(snap, rank, 0, &v);
        if (r == -ENOENT && rank >= 0)
            return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        if (r < 0 && r != -ENOENT)
            return web__send_store_error(w, c, r, "live_query_breakdown");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_breakdown(&b, &v, (size_t)offset, (size_t)limit, csv);
    live_breakdown_view_done(&v);
    return send_doc(w, c, &b, csv);
}

int web__route_live(struct web *w, struct MHD_Connection *c, const struct web_route *rt,
                    const struct store_job *job)
{
    if (!w->live)
        return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                               "no live analysis attached");
    const struct live_snapshot *snap = NULL;
    if (live_snapshot_get(w->live, job->id, &snap) < 0)
        snap = NULL;
    if (snap && web__capture) { /* the answer may be cached under this snapshot (cache.c) */
        web__capture->serial = live_snapshot_serial(snap);
        web__capture->armed = true;
    }
    int mhd;
    switch (rt->id) {
    case WEB_ROUTE_STEPS:
        mhd = get_steps(w, c, snap);
        break;
    case WEB_ROUTE_STEP_TRACE:
        mhd = get_steptrace(w, c, snap);
        break;
    case WEB_ROUTE_KERNELS:
        mhd = get_kernels(w, c, snap);
        break;
    case WEB_ROUTE_QUEUES:
        mhd = get_queues(w, c, snap);
        break;
    case WEB_ROUTE_PIPELINE:
        mhd = get_pipeline(w, c, snap);
        break;
    case WEB_ROUTE_RANKS:
        mhd = get_ranks(w, c, snap);
        break;
    case WEB_ROUTE_HELPER:
        mhd = get_helper(w, c, job, snap);
        break;
    case WEB_ROUTE_BREAKDOWN:
        mhd = get_breakdown(w, c, snap);
        break;
    default:
        mhd = get_operators(w, c, snap);
        break;
    }
    live_snapshot_put(snap);
    return mhd;
}
