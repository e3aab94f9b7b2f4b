/* SPDX-License-Identifier: MIT */
/*
 * routes_live: /api/v1/jobs/{job}/steps, /step-trace, /operators, /kernels, /queues, /pipeline,
 * /ranks, /helper, /breakdown and the GPU views (gpu/...), answered from the job's latest live snapshot (daemon/live/live_query.h),
 * which the loop republishes every 100 ms and which the daemon rebuilds from the store at
 * start-up. A handler takes a reference to the
 * snapshot, computes its page with the pure analyses, renders it (render.c) and drops the
 * reference: no handler touches loop state or the store's writer, and none waits for ingest.
 * A job the store knows but live has not published yet answers an empty table (404 for a step
 * trace, which has nothing to average).
 */
#include "routes.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/num.h"
#include "render.h"

#define STEPS_LIMIT_DEFAULT 1000
#define OPS_LIMIT_DEFAULT 100
#define SEARCH_MAX 256 /* bytes of a search term */

static int bad(struct web_answer *a, const char *msg)
{
    return web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request", msg);
}

/* What a streamed table holds until its answer is done: the rows' memory and the snapshot their
 * names borrow from. */
struct rows_ctx {
    const struct live_snapshot *snap; /* a reference, or NULL */
    struct live_step_row *steps;      /* steps */
    struct analyse_op_table *ops;     /* operators, kernels */
    struct live_queue_row *queues;    /* queues: [n_queues] */
    size_t n_queues, q, k;            /* queues: the next sample is queues[q].samples[k] */
    struct live_breakdown_view bd;    /* breakdown */
    size_t bd_from;
    struct live_gpu_row *gpu;         /* gpu/temporal */
    struct web_gpu_ktype_row *kt;     /* gpu/kernel-types */
    struct live_gpu_kmetric_row *km;  /* gpu/kernel-types?table=kernels */
    struct live_gpu_launch_row *launches; /* gpu/launches, from launch_from */
    size_t launch_from;
    struct live_gpu_stream_rank *sranks;  /* gpu/idle, gpu/queue: the rows borrow from them */
    size_t n_sranks;
    struct web_gpu_idle_row *idle;        /* gpu/idle */
    struct web_gpu_queue_row *queue;      /* gpu/queue */
};

static void rows_ctx_free(void *p)
{
    struct rows_ctx *x = p;
    if (!x)
        return;
    free(x->steps);
    analyse_op_table_free(x->ops);
    live_queue_rows_free(x->queues, x->n_queues);
    live_breakdown_view_done(&x->bd);
    free(x->gpu);
    free(x->kt);
    free(x->km);
    free(x->launches);
    free(x->idle);
    free(x->queue);
    live_gpu_stream_ranks_free(x->sranks, x->n_sranks);
    live_snapshot_put(x->snap);
    free(x);
}

/* A rows_ctx that takes over *snap (the handler's reference: web__route_live() then does not
 * drop it), or NULL (out of memory; *snap left to the caller). */
static struct rows_ctx *rows_ctx_new(const struct live_snapshot **snap)
{
    struct rows_ctx *x = calloc(1, sizeof *x);
    if (x) {
        x->snap = *snap;
        *snap = NULL;
    }
    return x;
}

static void steps_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    web__steps_row(b, fmt, &((struct rows_ctx *)ctx)->steps[i]);
}

static void ops_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    web__op_row(b, fmt, &((struct rows_ctx *)ctx)->ops->rows[i], true);
}

static void kernels_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    web__op_row(b, fmt, &((struct rows_ctx *)ctx)->ops->rows[i], false);
}

static void queues_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    (void)i; /* rows come in order: the cursor (q, k) is the i-th sample */
    struct rows_ctx *x = ctx;
    while (x->q < x->n_queues && x->k >= x->queues[x->q].n_samples) {
        x->q++;
        x->k = 0;
    }
    if (x->q < x->n_queues) {
        const struct live_queue_row *q = &x->queues[x->q];
        web__queue_sample_row(b, fmt, q, &q->samples[x->k++]);
    }
}

static void gpu_idle_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    web__gpu_idle_row(b, fmt, &((struct rows_ctx *)ctx)->idle[i]);
}

static void gpu_queue_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    web__gpu_queue_row(b, fmt, &((struct rows_ctx *)ctx)->queue[i]);
}

static void bd_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    struct rows_ctx *x = ctx;
    web__bd_row(b, fmt, x->bd.rank, &x->bd.bd->steps[x->bd_from + i]);
}

static void gpu_temporal_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    web__gpu_temporal_row(b, fmt, &((struct rows_ctx *)ctx)->gpu[i]);
}

static void gpu_kmetric_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    web__gpu_kmetric_row(b, fmt, &((struct rows_ctx *)ctx)->km[i]);
}

static void gpu_ktype_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    web__gpu_ktype_row(b, fmt, &((struct rows_ctx *)ctx)->kt[i]);
}

static void gpu_overlap_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    web__gpu_overlap_row(b, fmt, &((struct rows_ctx *)ctx)->gpu[i]);
}

static void gpu_launch_row(struct sbuf *b, enum web_format fmt, void *ctx, size_t i)
{
    struct rows_ctx *x = ctx;
    web__gpu_launch_row(b, fmt, &x->launches[x->launch_from + i]);
}

/* Streams x's rows; x is freed in every case. */
static int send_rows(struct web *w, struct web_answer *a, enum web_format fmt,
                     struct rows_ctx *x, const char *header,
                     void (*row)(struct sbuf *, enum web_format, void *, size_t), size_t n,
                     size_t offset, size_t total)
{
    struct web_rows rows = {.fmt = fmt, .csv_header = header, .n = n, .offset = offset,
                            .total = total, .row = row, .ctx = x, .free = rows_ctx_free};
    return web__rows(w, a, &rows);
}

/* ?limit=: the JSON default def, and for CSV and records (tables that are downloaded whole)
 * no limit (0) unless one is given. */
static int param_limit(const struct web_req *q, struct web_answer *a, enum web_format fmt,
                       int64_t def, int64_t *ret)
{
    return web__param_i64(q, a, "limit", 1, LIVE_ROWS_MAX, fmt == WEB_FORMAT_JSON ? def : 0, ret);
}

/* rank (-1 when absent), offset, limit (0: none) and format of a paged per-step table. Returns
 * 0, or -1 (the 400 in a). */
static int param_page(const struct web_req *q, struct web_answer *a, int64_t *rank, int64_t *offset,
                      int64_t *limit, enum web_format *fmt)
{
    if (web__param_format(q, a, false, fmt) < 0 ||
        web__param_i64(q, a, "rank", -1, INT32_MAX, -1, rank) < 0 ||
        web__param_i64(q, a, "offset", 0, INT64_MAX, 0, offset) < 0 ||
        param_limit(q, a, *fmt, STEPS_LIMIT_DEFAULT, limit) < 0)
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

/* The steps of a job whose ranks are on more than one host's clock, moved onto the reference
 * host's clock (the hosts' offsets as ranks_detail and the timeline export use them: a time on
 * the rank's own clock less its host's offset; docs/API.md, docs/ANALYSIS.md "Clocks of
 * different hosts"). rows are in (step, rank) order; the job's ranks come ordered by rank.
 * Returns 0 or a negative errno. */
static int align_steps(struct web *w, int64_t job_id, struct live_step_row *rows, size_t n)
{
    if (!w->store || n == 0)
        return 0;
    struct store_rank *ranks = NULL;
    size_t nr = 0;
    int r = store_query_ranks(w->store, job_id, &ranks, &nr);
    if (r < 0)
        return r;
    struct web_clocks clocks;
    r = web__clocks(w, job_id, ranks, nr, &clocks);
    if (r == 0 && clocks.table) {
        for (size_t i = 0; i < n; i++) {
            size_t lo = 0, hi = nr; /* the row's rank among the job's */
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ranks[mid].rank < rows[i].rank)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            int64_t off = lo < nr && ranks[lo].rank == rows[i].rank
                              ? web__clocks_offset(&clocks, lo)
                              : 0;
            rows[i].start_ns = num_sat_add(rows[i].start_ns, -off);
            rows[i].end_ns = num_sat_add(rows[i].end_ns, -off);
        }
    }
    web__clocks_done(&clocks);
    free(ranks);
    return r;
}

static int get_steps(struct web *w, const struct web_req *q, struct web_answer *a,
                     const struct store_job *job, const struct live_snapshot **snapp)
{
    const struct live_snapshot *snap = *snapp;
    int64_t rank, offset, limit, max_points, with_spans, align;
    enum web_format fmt;
    if (param_page(q, a, &rank, &offset, &limit, &fmt) < 0 ||
        web__param_i64(q, a, "max_points", 0, LIVE_ROWS_MAX, 0, &max_points) < 0 ||
        web__param_i64(q, a, "with_spans", 0, 1, 0, &with_spans) < 0 ||
        web__param_i64(q, a, "align_clocks", 0, 1, 1, &align) < 0)
        return 0;
    struct live_step_row *rows = NULL;
    size_t n = 0, total = 0;
    if (snap) {
        int r = live_query_steps(snap, rank, with_spans != 0, (size_t)offset,
                                 limit ? (size_t)limit : SIZE_MAX, &rows, &n, &total);
        if (r == 0 && align)
            r = align_steps(w, job->id, rows, n);
        if (r < 0) {
            free(rows);
            return web__store_error(a, r, "live_query_steps");
        }
        n = downsample_steps(rows, n, (size_t)max_points);
    }
    if (fmt != WEB_FORMAT_JSON) {
        struct rows_ctx *x = rows_ctx_new(snapp);
        if (!x) {
            free(rows);
            return web__store_error(a, -ENOMEM, "steps");
        }
        x->steps = rows;
        return send_rows(w, a, fmt, x, web__steps_csv_header, steps_row, n, (size_t)offset,
                         total);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_steps(&b, rows, n, total);
    free(rows);
    return web__doc_fmt(w, a, &b, fmt);
}

/* ?name= one of words[0, n) (absent: dflt): *ret = its index. Returns 0, or -1 with a 400 saying
 * msg in a. */
static int param_word(const struct web_req *q, struct web_answer *a, const char *name,
                      const char *const *words, size_t n, size_t dflt, const char *msg, size_t *ret)
{
    char s[16];
    size_t len;
    *ret = dflt;
    int r = web__param_str(q, a, name, s, sizeof s, &len);
    if (r < 0)
        return -1;
    if (r == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, words[i]) == 0) {
            *ret = i;
            return 0;
        }
    bad(a, msg);
    return -1;
}

/* ?group=name|type (default name). Returns 0, or -1 with the answer in a (a 400). */
static int param_group(const struct web_req *q, struct web_answer *a, enum analyse_op_group *ret)
{
    static const char *const words[] = {"name", "type"};
    size_t i;
    if (param_word(q, a, "group", words, 2, 0, "group: name or type", &i) < 0)
        return -1;
    *ret = i == 1 ? ANALYSE_OP_GROUP_TYPE : ANALYSE_OP_GROUP_NAME;
    return 0;
}

/* ?source=trace|phases (default: either, LIVE_POINTS_NONE). Returns 0, or -1 with the answer in a
 * (a 400). */
static int param_points_source(const struct web_req *q, struct web_answer *a,
                               enum live_points_source *ret)
{
    static const char *const words[] = {"trace", "phases"};
    size_t i;
    if (param_word(q, a, "source", words, 2, SIZE_MAX, "source: trace or phases", &i) < 0)
        return -1;
    *ret = i == 0 ? LIVE_POINTS_TRACE : i == 1 ? LIVE_POINTS_PHASES : LIVE_POINTS_NONE;
    return 0;
}

static int get_steptrace(struct web *w, const struct web_req *q, struct web_answer *a,
                         const struct live_snapshot *snap)
{
    int64_t rank, step, from, to, skip;
    if (web__param_i64(q, a, "rank", 0, INT32_MAX, 0, &rank) < 0 ||
        web__param_i64(q, a, "step", INT64_MIN, INT64_MAX, INT64_MIN, &step) < 0 ||
        web__param_i64(q, a, "from", INT64_MIN, INT64_MAX, ANALYSE_ST_ALL_FIRST, &from) < 0 ||
        web__param_i64(q, a, "to", INT64_MIN, INT64_MAX, ANALYSE_ST_ALL_LAST, &to) < 0 ||
        web__param_i64(q, a, "skip", 0, INT32_MAX, 0, &skip) < 0)
        return 0;
    enum live_points_source source;
    if (param_points_source(q, a, &source) < 0)
        return 0;
    bool single = step != INT64_MIN;
    if (single && (from != ANALYSE_ST_ALL_FIRST || to != ANALYSE_ST_ALL_LAST || skip != 0))
        return bad(a, "step: not together with from/to/skip");
    if (to < from)
        return bad(a, "to: below from");
    if (!snap)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "no steps yet");
    struct analyse_st_trace *t = NULL;
    struct live_step_row pts;
    memset(&pts, 0, sizeof pts);
    pts.fp_name = pts.bp_name = "";
    size_t by_source[LIVE_POINTS_PHASES + 1];
    int r = live_query_steptrace(snap, rank, single, step, from, to, (size_t)skip, source, &t, &pts,
                                 by_source);
    if (r == -ENOENT)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found",
                               single ? "no such step with FP/BP points on this rank"
                                      : "no step with FP/BP points in range on this rank");
    if (r < 0)
        return web__store_error(a, r, "live_query_steptrace");
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_steptrace(&b, t, &pts, (size_t)skip, by_source);
    analyse_steptrace_free(t);
    return web__json(w, a, WEB_HTTP_OK, &b);
}

/* The parameters of the operator and kernel tables. q.search points into search. */
struct table_params {
    int64_t rank;
    enum web_format fmt;
    struct analyse_op_query q;
    const char *terms[1];
    char search[SEARCH_MAX + 1];
};

/* rank, offset, limit, top, format, sort, order and search into *p. Kernel tables (ops false)
 * have no type or self column to sort by. Returns 0 or -1 (the 400 in a). */
static int param_table(const struct web_req *q, struct web_answer *a, bool ops,
                       struct table_params *p)
{
    const char *cols = ops ? "sort: not a column (name, type, calls, total, self, avg, min, max, "
                             "percent)"
                           : "sort: not a column (name, calls, total, avg, min, max, percent)";
    int64_t offset, limit, top;
    if (web__param_format(q, a, false, &p->fmt) < 0 ||
        web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &p->rank) < 0 ||
        web__param_i64(q, a, "offset", 0, INT64_MAX, 0, &offset) < 0 ||
        param_limit(q, a, p->fmt, OPS_LIMIT_DEFAULT, &limit) < 0 ||
        web__param_i64(q, a, "top", 0, LIVE_ROWS_MAX, 0, &top) < 0)
        return -1;
    p->q = (struct analyse_op_query){.sort = ANALYSE_OP_COL_NONE, .desc = true,
                                     .top_n = (size_t)top, .offset = (size_t)offset,
                                     .limit = (size_t)limit};
    char sort_s[16], order_s[8];
    size_t len;
    int r = web__param_str(q, a, "sort", sort_s, sizeof sort_s, &len);
    if (r < 0)
        return -1;
    if (r == 1 && (analyse_op_col_parse(sort_s, &p->q.sort) < 0 ||
                   (!ops && (p->q.sort == ANALYSE_OP_COL_TYPE ||
                             p->q.sort == ANALYSE_OP_COL_SELF)))) {
        bad(a, cols);
        return -1;
    }
    r = web__param_str(q, a, "order", order_s, sizeof order_s, &len);
    if (r < 0)
        return -1;
    if (r == 1 && strcmp(order_s, "asc") == 0) {
        p->q.desc = false;
    } else if (r == 1 && strcmp(order_s, "desc") != 0) {
        bad(a, "order: asc or desc");
        return -1;
    }
    r = web__param_str(q, a, "search", p->search, sizeof p->search, &len);
    if (r < 0)
        return -1;
    if (r == 1) {
        p->terms[0] = p->search;
        p->q.search = p->terms;
        p->q.n_search = 1;
    }
    return 0;
}



/* Answers an operator or kernel page in p's format; takes page. side: the operators' side
 * ("host" or "device"), NULL for the kernel table. */
static int send_op_page(struct web *w, const struct web_req *q, struct web_answer *a,
                        const struct live_snapshot **snapp,
                        const struct table_params *p, struct analyse_op_table *page, bool ops,
                        const char *group, const char *side)
{
    struct analyse_op_table empty = {0};
    if (p->fmt != WEB_FORMAT_JSON) {
        struct rows_ctx *x = rows_ctx_new(snapp);
        if (!x) {
            analyse_op_table_free(page);
            return web__store_error(a, -ENOMEM, "operators");
        }
        x->ops = page;
        const struct analyse_op_table *t = page ? page : &empty;
        return send_rows(w, a, p->fmt, x, ops ? web__ops_csv_header : web__kernels_csv_header,
                         ops ? ops_row : kernels_row, t->n_rows, p->q.offset, t->total);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    if (ops)
        web__render_live_ops(&b, page ? page : &empty, group, side);
    else
        web__render_live_kernels(&b, page ? page : &empty);
    analyse_op_table_free(page);
    return web__doc_fmt(w, a, &b, WEB_FORMAT_JSON);
}

/* The operator table: the host operators, or with side=device (the default for a rank
 * without host operators: MindSpore on Ascend, whose operators run on the AI Core and arrive
 * as kernel spans) the device operators, which are the kernel table. */
static int get_operators(struct web *w, const struct web_req *q, struct web_answer *a,
                         const struct live_snapshot **snapp)
{
    const struct live_snapshot *snap = *snapp;
    struct table_params p;
    enum analyse_op_group group;
    if (param_table(q, a, true, &p) < 0 || param_group(q, a, &group) < 0)
        return 0;
    char side_s[8];
    size_t len;
    int r = web__param_str(q, a, "side", side_s, sizeof side_s, &len);
    if (r < 0)
        return 0;
    if (r == 1 && strcmp(side_s, "host") != 0 && strcmp(side_s, "device") != 0)
        return bad(a, "side: host or device");
    bool device = r == 1 ? strcmp(side_s, "device") == 0
                         : snap && !live_has_host_ops(snap, p.rank);
    struct analyse_op_table *page = NULL;
    if (snap) {
        r = device ? live_query_kernels(snap, p.rank, group, &p.q, &page)
                   : live_query_ops(snap, p.rank, group, &p.q, &page);
        if (r == -ENOENT)
            return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        if (r < 0)
            return web__store_error(a, r, "live_query_ops");
    }
    return send_op_page(w, q, a, snapp, &p, page, true,
                        group == ANALYSE_OP_GROUP_TYPE ? "type" : "name",
                        device ? "device" : "host");
}

static int get_kernels(struct web *w, const struct web_req *q, struct web_answer *a,
                       const struct live_snapshot **snapp)
{
    const struct live_snapshot *snap = *snapp;
    struct table_params p;
    enum analyse_op_group group;
    if (param_table(q, a, false, &p) < 0 || param_group(q, a, &group) < 0)
        return 0;
    struct analyse_op_table *page = NULL;
    if (snap) {
        int r = live_query_kernels(snap, p.rank, group, &p.q, &page);
        if (r == -ENOENT)
            return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        if (r < 0)
            return web__store_error(a, r, "live_query_kernels");
    }
    return send_op_page(w, q, a, snapp, &p, page, false, NULL, NULL);
}

static int get_queues(struct web *w, const struct web_req *q, struct web_answer *a,
                      const struct live_snapshot **snapp)
{
    const struct live_snapshot *snap = *snapp;
    int64_t rank;
    enum web_format fmt;
    if (web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &rank) < 0 ||
        web__param_format(q, a, false, &fmt) < 0)
        return 0;
    struct live_queue_row *rows = NULL;
    size_t n = 0;
    if (snap) {
        int r = live_query_queues(snap, rank, &rows, &n);
        if (r == -ENOENT)
            return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        if (r < 0)
            return web__store_error(a, r, "live_query_queues");
    }
    if (fmt != WEB_FORMAT_JSON) {
        struct rows_ctx *x = rows_ctx_new(snapp);
        if (!x) {
            live_queue_rows_free(rows, n);
            return web__store_error(a, -ENOMEM, "queues");
        }
        x->queues = rows;
        x->n_queues = n;
        size_t samples = 0;
        for (size_t i = 0; i < n; i++)
            samples += rows[i].n_samples;
        return send_rows(w, a, fmt, x, web__queues_csv_header, queues_row, samples, 0, samples);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_queues(&b, rows, n);
    live_queue_rows_free(rows, n);
    return web__doc_fmt(w, a, &b, fmt);
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
        const struct record_pipe_op *o = &v->ops[i];
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

static int get_pipeline(struct web *w, const struct web_req *q, struct web_answer *a,
                        const struct live_snapshot *snap)
{
    int64_t rank, op_id;
    enum web_format fmt;
    if (web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &rank) < 0 ||
        web__param_i64(q, a, "op", INT64_MIN + 1, INT64_MAX, INT64_MIN, &op_id) < 0 ||
        web__param_format(q, a, false, &fmt) < 0)
        return 0;
    struct live_pipeline_view v;
    if (!snap || live_query_pipeline(snap, rank, &v) < 0)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found",
                               rank >= 0 ? "no pipeline record on this rank"
                                         : "no pipeline record");
    bool analysed;
    struct analyse_pipe_op *ops = pipe_ops(&v, &analysed);
    if (!ops)
        return web__store_error(a, -ENOMEM, "pipeline");
    struct analyse_pipe_finding *f = NULL;
    size_t nf = 0;
    if (analysed && analyse_pipe_bottlenecks(ops, v.n_ops, ANALYSE_PIPE_HIGH, ANALYSE_PIPE_LOW,
                                             ANALYSE_PIPE_DIFF, &f, &nf) < 0) {
        free(ops);
        return web__store_error(a, -ENOMEM, "analyse_pipe_bottlenecks");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_pipeline(&b, &v, analysed, f, nf, op_id, fmt);
    free(f);
    free(ops);
    return web__doc_fmt(w, a, &b, fmt);
}

static int get_ranks(struct web *w, const struct web_req *q, struct web_answer *a,
                     const struct store_job *job, const struct live_snapshot *snap)
{
    enum web_format fmt;
    if (web__param_format(q, a, false, &fmt) < 0)
        return 0;
    struct analyse_ranks empty = {.straggler_ratio = w->helper_rules.straggler_ratio};
    struct analyse_ranks *ranks = NULL;
    /* A job of many nodes counts the steps every node shipped past (routes_view.c). */
    struct web_view v;
    int r = web__view_get(w, job->id, snap, &v);
    if (r < 0)
        return web__store_error(a, r, "store_query_ranks");
    if (snap) {
        r = live_query_ranks_upto(snap, w->helper_rules.straggler_ratio, v.window, &ranks);
        if (r < 0) {
            web__view_free(&v);
            return web__store_error(a, r, "live_query_ranks");
        }
    }
    /* Each rank's node and host, for a job over many nodes. */
    const struct analyse_ranks *rk = ranks ? ranks : &empty;
    const char **node = NULL, **host = NULL;
    if (v.pulled && rk->n_ranks > 0) {
        node = calloc(rk->n_ranks, sizeof *node);
        host = calloc(rk->n_ranks, sizeof *host);
        for (size_t i = 0; node && host && i < rk->n_ranks; i++) {
            node[i] = host[i] = "";
            for (size_t k = 0; k < v.n_ranks; k++)
                if (v.ranks[k].rank == rk->rows[i].rank) {
                    node[i] = v.ranks[k].node;
                    host[i] = v.ranks[k].host;
                }
        }
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_ranks(&b, rk, fmt, node, host);
    free(node);
    free(host);
    if (fmt == WEB_FORMAT_JSON && v.pulled)
        web__append_member(&b, "step_window", &v, true);
    web__view_free(&v);
    analyse_ranks_free(ranks);
    return web__doc_fmt(w, a, &b, fmt);
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
/* MindInsight's cluster proposals' evidence (analyse_helper.h): the cluster step trace's average
 * rows, the FLOPs summary and the hccl_raw average row's links of every rank of a job whose
 * hellos have a parallel layout, a FLOPs summary or communication figures (*ret and *ret_links
 * malloc'd, the caller frees both); 0 with *ret NULL for any other job. */
static int cluster_input(struct web *w, const struct store_job *job,
                         const struct live_snapshot *snap, const struct analyse_ranks *ranks,
                         struct analyse_helper_cluster *c, struct analyse_helper_cl_rank **ret,
                         struct analyse_comm_link **ret_links, const char **what)
{
    *ret = NULL;
    *ret_links = NULL;
    struct web_cl_table t;
    int r = web__cluster_table(w, job, snap, 0, 0, &t, what);
    if (r < 0)
        return r;
    struct web_cl_sum_row *fl = NULL;
    int64_t *miss = NULL;
    size_t nfl = 0, nmiss = 0;
    *what = "cluster summary";
    r = web__cluster_summary_rows(w, job, false, &fl, &nfl, &miss, &nmiss);
    free(miss);
    struct analyse_comm_link *links = NULL;
    int64_t *hccl = NULL;
    size_t n_links = 0, n_hccl = 0;
    if (r >= 0) {
        *what = "cluster links";
        r = web__cluster_links(w, job, &links, &n_links, &hccl, &n_hccl);
    }
    if (r < 0 || (!t.layout_found && nfl == 0 && n_hccl == 0) || ranks->n_ranks == 0) {
        free(t.rows);
        free(fl);
        free(links);
        free(hccl);
        return r < 0 ? r : 0;
    }
    struct analyse_helper_cl_rank *v = calloc(ranks->n_ranks, sizeof *v);
    if (!v) {
        free(t.rows);
        free(fl);
        free(links);
        free(hccl);
        return -ENOMEM;
    }
    bool data = t.mode == ANALYSE_CL_DATA;
    for (size_t i = 0; i < ranks->n_ranks; i++) {
        struct analyse_helper_cl_rank *o = &v[i];
        o->rank = ranks->rows[i].rank;
        o->stage = analyse_cl_stage(o->rank, t.stages, t.rank_size);
        o->interval_ns = o->computation_ns = o->comm_alone_ns = NAN;
        o->receive_alone_ns = o->collective_ns = o->flops_m = o->flops_per_second_g = NAN;
        for (size_t k = 0; k < t.n_rows; k++) {
            const struct analyse_cl_rank *x = &t.rows[k];
            if (x->rank != o->rank)
                continue;
#define FIG(f) (x->has[f] ? (double)x->fig_ns[f] : NAN)
            o->interval_ns = FIG(ANALYSE_CL_INTERVAL);
            o->computation_ns = FIG(data ? ANALYSE_CL_FP_BP : ANALYSE_CL_COMPUTATION);
            o->comm_alone_ns = FIG(data ? ANALYSE_CL_TAIL : ANALYSE_CL_COMM_ALONE);
            o->receive_alone_ns = FIG(ANALYSE_CL_RECEIVE_ALONE);
            o->collective_ns = FIG(ANALYSE_CL_COLLECTIVE_ALONE);
#undef FIG
        }
        for (size_t k = 0; k < nfl; k++)
            if (fl[k].rank == o->rank) {
                o->flops_m = fl[k].v[0];
                o->flops_per_second_g = fl[k].v[1];
            }
        for (size_t k = 0; k < n_hccl; k++)
            o->has_links = o->has_links || hccl[k] == o->rank;
    }
    *c = (struct analyse_helper_cluster){.mode = (enum analyse_cl_mode)t.mode,
                                         .stages = t.stages, .ranks = v, .n = ranks->n_ranks,
                                         .links = links, .n_links = n_links};
    free(t.rows);
    free(fl);
    free(hccl);
    *ret = v;
    *ret_links = links;
    return 0;
}

static int get_helper(struct web *w, const struct web_req *q, struct web_answer *a,
                      const struct store_job *job, const struct live_snapshot *snap)
{
    int64_t rank;
    if (web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &rank) < 0)
        return 0;
    struct analyse_helper_input in;
    analyse_helper_input_init(&in);
    struct analyse_ranks *ranks = NULL;
    struct analyse_st_trace *t = NULL;
    struct live_queue_row *qrows = NULL;
    size_t nq = 0;
    struct analyse_pipe_op *ops = NULL;
    struct analyse_helper_result *res = NULL;
    struct live_breakdown_view bv = {0};
    struct analyse_helper_cluster cl;
    struct analyse_helper_cl_rank *cl_ranks = NULL;
    struct analyse_comm_link *cl_links = NULL;
    const char *what = "live_query_ranks";
    int r = 0;
    if (snap) {
        struct web_view v;
        r = web__view_get(w, job->id, snap, &v);
        int64_t window = v.window;
        if (r == 0)
            web__view_free(&v);
        if (r == 0)
            r = live_query_ranks_upto(snap, w->helper_rules.straggler_ratio, window, &ranks);
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
            return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
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
                                 0, LIVE_POINTS_NONE, &t, &pts, NULL);
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
        /* An answer from an older breakdown is not this snapshot's: answer it, keep it not
         * (a job that has gone quiet publishes no newer snapshot to replace it). */
        if (r == 0 && bv.stale)
            a->keep = false;
        if (r == 0 && bv.bd->n_steps > 0) {
            in.has_breakdown = true;
            for (size_t k = 0; k < ANALYSE_BD_COUNT; k++)
                in.bd_avg_ns[k] = bv.bd->avg_ns[k];
            in.bd_total_ns = bv.bd->avg_total_ns;
            in.gpus = bv.bd->gpus;
            in.n_gpus = bv.bd->n_gpus;
        }
    }
    if (snap && ranks) {
        r = cluster_input(w, job, snap, ranks, &cl, &cl_ranks, &cl_links, &what);
        if (r < 0)
            goto fail;
        if (cl_ranks)
            in.cluster = &cl;
    }
    what = "analyse_helper_run";
    r = analyse_helper_run(&in, &w->helper_rules, &res);
    if (r < 0)
        goto fail;
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_helper(&b, rank, &in, in.has_breakdown ? &bv : NULL, res);
    web__json(w, a, WEB_HTTP_OK, &b);
    goto out;
fail:
    web__store_error(a, r, what);
out:
    live_breakdown_view_done(&bv);
    free(cl_ranks);
    free(cl_links);
    analyse_helper_result_free(res);
    free(ops);
    live_queue_rows_free(qrows, nq);
    analyse_steptrace_free(t);
    analyse_ranks_free(ranks);
    return 0;
}

static int get_breakdown(struct web *w, const struct web_req *q, struct web_answer *a,
                         const struct live_snapshot **snapp)
{
    const struct live_snapshot *snap = *snapp;
    int64_t rank, offset, limit;
    enum web_format fmt;
    if (param_page(q, a, &rank, &offset, &limit, &fmt) < 0)
        return 0;
    struct live_breakdown_view v = {.rank = rank < 0 ? 0 : rank};
    if (snap) {
        int r = live_query_breakdown(snap, rank, 0, &v);
        if (r == -ENOENT && rank >= 0)
            return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        if (r < 0 && r != -ENOENT)
            return web__store_error(a, r, "live_query_breakdown");
    }
    if (fmt != WEB_FORMAT_JSON) {
        size_t total = v.bd ? v.bd->n_steps : 0;
        size_t from = (size_t)offset < total ? (size_t)offset : total;
        size_t n = limit && (size_t)limit < total - from ? (size_t)limit : total - from;
        struct rows_ctx *x = rows_ctx_new(snapp);
        if (!x) {
            live_breakdown_view_done(&v);
            return web__store_error(a, -ENOMEM, "breakdown");
        }
        x->bd = v;
        x->bd_from = from;
        return send_rows(w, a, fmt, x, web__breakdown_csv_header, bd_row, n, from, total);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_live_breakdown(&b, &v, (size_t)offset, (size_t)limit);
    live_breakdown_view_done(&v);
    return web__doc_fmt(w, a, &b, fmt);
}

enum gpu_view { GPU_TEMPORAL, GPU_KERNEL_TYPES, GPU_OVERLAP, GPU_LAUNCHES, GPU_IDLE, GPU_QUEUE };

/* /gpu/queue's ?points= at most: the kept points of a stream's series. */
#define GPU_QUEUE_POINTS_MAX 100000

/* HTA's reading: ?last_step=exclude|include (default exclude, as HTA's TraceAnalysis),
 * ?rounding=ns|us (default ns: exact; us reads a nanosecond trace as HTA does by default) and,
 * for kernel types, ?memory=include|exclude (HTA's include_memory_kernels, default include as in
 * its TraceAnalysis; the overlap never counts memory, as HTA). Returns 0, or -1 with the answer
 * in a (a 400). */
static int param_gpu_opts(const struct web_req *q, struct web_answer *a, enum gpu_view view,
                          struct analyse_gpu_opts *ret)
{
    static const char *const last[] = {"exclude", "include"}, *const rnd[] = {"ns", "us"};
    size_t i, j, m = 0;
    if (param_word(q, a, "last_step", last, 2, 0, "last_step: exclude or include", &i) < 0 ||
        param_word(q, a, "rounding", rnd, 2, 0, "rounding: ns or us", &j) < 0 ||
        ((view == GPU_KERNEL_TYPES || view == GPU_LAUNCHES) &&
         param_word(q, a, "memory", last, 2, 1, "memory: exclude or include", &m) < 0))
        return -1;
    *ret = (struct analyse_gpu_opts){.include_last_step = i == 1, .round_us = j == 1,
                                     .include_memory = m == 1};
    return 0;
}

/* A GPU view's request: its parameters and its rows per rank (the temporal breakdown, else the
 * kernel-type split; free() *rows). Returns 0, or -1 with the answer in a. */
static int gpu_ranks(const struct web_req *q, struct web_answer *a, const struct live_snapshot *snap,
                     enum gpu_view view, enum web_format *fmt, struct analyse_gpu_opts *opts,
                     struct live_gpu_row **rows, size_t *n)
{
    int64_t rank;
    *rows = NULL;
    *n = 0;
    if (web__param_format(q, a, false, fmt) < 0 ||
        web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &rank) < 0 ||
        param_gpu_opts(q, a, view, opts) < 0)
        return -1;
    bool ktypes = view != GPU_TEMPORAL;
    int r = !snap ? (rank >= 0 ? -ENOENT : 0)
            : ktypes ? live_query_gpu_kernel_types(snap, rank, opts, rows, n)
                     : live_query_gpu_temporal(snap, rank, opts, rows, n);
    if (r == -ENOENT) {
        web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
        return -1;
    }
    if (r < 0) {
        web__store_error(a, r, ktypes ? "live_query_gpu_kernel_types" : "live_query_gpu_temporal");
        return -1;
    }
    return 0;
}

/* A GPU view with one row per rank (or the one ?rank=): HTA's temporal breakdown, or its
 * communication-computation overlap. */
static int get_gpu_per_rank(struct web *w, const struct web_req *q, struct web_answer *a,
                            const struct live_snapshot **snapp, enum gpu_view view)
{
    enum web_format fmt;
    struct analyse_gpu_opts opts;
    struct live_gpu_row *rows;
    size_t n;
    if (gpu_ranks(q, a, *snapp, view, &fmt, &opts, &rows, &n) < 0)
        return 0;
    bool temporal = view == GPU_TEMPORAL;
    if (fmt != WEB_FORMAT_JSON) {
        struct rows_ctx *x = rows_ctx_new(snapp);
        if (!x) {
            free(rows);
            return web__store_error(a, -ENOMEM, "gpu");
        }
        x->gpu = rows;
        return send_rows(w, a, fmt, x,
                         temporal ? web__gpu_temporal_csv_header : web__gpu_overlap_csv_header,
                         temporal ? gpu_temporal_row : gpu_overlap_row, n, 0, n);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    if (temporal)
        web__render_gpu_temporal(&b, rows, n, &opts);
    else
        web__render_gpu_overlap(&b, rows, n, &opts);
    free(rows);
    return web__doc_fmt(w, a, &b, fmt);
}

/* HTA's per-kernel table (?table=kernels of /gpu/kernel-types): ?num_kernels= (default 10)
 * and ?duration_ratio= (default 0.8), get_gpu_kernel_breakdown()'s. */
static int get_gpu_kernel_metrics(struct web *w, const struct web_req *q, struct web_answer *a,
                                  const struct live_snapshot **snapp)
{
    enum web_format fmt;
    struct analyse_gpu_opts opts;
    int64_t rank, num;
    char buf[32];
    size_t len;
    double ratio = 0.8;
    if (web__param_format(q, a, false, &fmt) < 0 ||
        web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &rank) < 0 ||
        param_gpu_opts(q, a, GPU_KERNEL_TYPES, &opts) < 0 ||
        web__param_i64(q, a, "num_kernels", 1, 100000, 10, &num) < 0)
        return 0;
    int r = web__param_str(q, a, "duration_ratio", buf, sizeof buf, &len);
    if (r < 0)
        return 0;
    if (r > 0) {
        char *end;
        ratio = strtod(buf, &end);
        if (*end != '\0' || !(ratio >= 0 && ratio <= 1))
            return web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request",
                              "duration_ratio: a number from 0 to 1");
    }
    struct live_gpu_kmetric_row *rows = NULL;
    size_t n = 0;
    r = !*snapp ? (rank >= 0 ? -ENOENT : 0)
                : live_query_gpu_kernel_metrics(*snapp, rank, &opts, (size_t)num, ratio, &rows, &n);
    if (r == -ENOENT)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
    if (r < 0)
        return web__store_error(a, r, "live_query_gpu_kernel_metrics");
    if (fmt != WEB_FORMAT_JSON) {
        struct rows_ctx *x = rows_ctx_new(snapp);
        if (!x) {
            free(rows);
            return web__store_error(a, -ENOMEM, "gpu_kernel_metrics");
        }
        x->km = rows;
        return send_rows(w, a, fmt, x, web__gpu_kmetrics_csv_header, gpu_kmetric_row, n, 0, n);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_gpu_kernel_metrics(&b, rows, n, &opts, num, ratio);
    free(rows);
    return web__doc_fmt(w, a, &b, fmt);
}

/* HTA's kernel-type split, a row per rank and set of types running (or the one ?rank=);
 * ?table=kernels: its per-kernel table. */
static int get_gpu_kernel_types(struct web *w, const struct web_req *q, struct web_answer *a,
                                const struct live_snapshot **snapp)
{
    enum web_format fmt;
    struct analyse_gpu_opts opts;
    struct live_gpu_row *ranks;
    size_t n;
    static const char *const tables[] = {"types", "kernels"};
    size_t table;
    if (param_word(q, a, "table", tables, 2, 0, "table: types or kernels", &table) < 0)
        return 0;
    if (table == 1)
        return get_gpu_kernel_metrics(w, q, a, snapp);
    if (gpu_ranks(q, a, *snapp, GPU_KERNEL_TYPES, &fmt, &opts, &ranks, &n) < 0)
        return 0;
    struct web_gpu_ktype_row *rows = calloc(n * (ANALYSE_GPU_MASKS - 1) + 1, sizeof *rows);
    if (!rows) {
        free(ranks);
        return web__store_error(a, -ENOMEM, "gpu_kernel_types");
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t *ns = ranks[i].ktypes.ns;
        int64_t sum = 0;
        for (unsigned m = 1; m < ANALYSE_GPU_MASKS; m++)
            sum += ns[m] > 0 ? ns[m] : 0;
        for (unsigned m = 1; m < ANALYSE_GPU_MASKS; m++)
            if (ns[m] > 0)
                rows[k++] = (struct web_gpu_ktype_row){ranks[i].rank, m, ns[m], sum};
    }
    free(ranks);
    if (fmt != WEB_FORMAT_JSON) {
        struct rows_ctx *x = rows_ctx_new(snapp);
        if (!x) {
            free(rows);
            return web__store_error(a, -ENOMEM, "gpu_kernel_types");
        }
        x->kt = rows;
        return send_rows(w, a, fmt, x, web__gpu_ktypes_csv_header, gpu_ktype_row, k, 0, k);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_gpu_kernel_types(&b, rows, k, &opts);
    free(rows);
    return web__doc_fmt(w, a, &b, fmt);
}

/* HTA's kernel launch statistics, a row per launch, paged (?offset, ?limit). */
static int get_gpu_launches(struct web *w, const struct web_req *q, struct web_answer *a,
                            const struct live_snapshot **snapp)
{
    const struct live_snapshot *snap = *snapp;
    int64_t rank, offset, limit, rt_cut, delay_cut;
    enum web_format fmt;
    struct analyse_gpu_opts opts;
    if (param_page(q, a, &rank, &offset, &limit, &fmt) < 0 ||
        param_gpu_opts(q, a, GPU_LAUNCHES, &opts) < 0 ||
        web__param_us(q, a, "runtime_cutoff_us", 0, INT64_MAX / 2, INT64_C(50000), &rt_cut) < 0 ||
        web__param_us(q, a, "delay_cutoff_us", 0, INT64_MAX / 2, INT64_C(100000), &delay_cut) < 0)
        return 0;
    struct live_gpu_launch_row *rows = NULL;
    size_t n = 0;
    int r = !snap ? (rank >= 0 ? -ENOENT : 0)
                  : live_query_gpu_launches(snap, rank, &opts, rt_cut, delay_cut, &rows, &n);
    if (r == -ENOENT)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
    if (r < 0)
        return web__store_error(a, r, "live_query_gpu_launches");
    if (fmt != WEB_FORMAT_JSON) {
        size_t from = (size_t)offset < n ? (size_t)offset : n;
        size_t m = limit && (size_t)limit < n - from ? (size_t)limit : n - from;
        struct rows_ctx *x = rows_ctx_new(snapp);
        if (!x) {
            free(rows);
            return web__store_error(a, -ENOMEM, "gpu_launches");
        }
        x->launches = rows;
        x->launch_from = from;
        return send_rows(w, a, fmt, x, web__gpu_launches_csv_header, gpu_launch_row, m, from, n);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_gpu_launches(&b, rows, n, &opts, rt_cut, delay_cut, (size_t)offset, (size_t)limit);
    free(rows);
    return web__doc_fmt(w, a, &b, fmt);
}

/* Streams a per-stream GPU table (CSV, records): x takes ranks and rows (and *snapp). */
static int gpu_streams_rows(struct web *w, struct web_answer *a, enum web_format fmt,
                            const struct live_snapshot **snapp, struct live_gpu_stream_rank *ranks,
                            size_t n_ranks, struct web_gpu_idle_row *idle,
                            struct web_gpu_queue_row *queue, const char *header, size_t n)
{
    struct rows_ctx *x = rows_ctx_new(snapp);
    if (!x) {
        free(idle);
        free(queue);
        live_gpu_stream_ranks_free(ranks, n_ranks);
        return web__store_error(a, -ENOMEM, "gpu");
    }
    x->sranks = ranks;
    x->n_sranks = n_ranks;
    x->idle = idle;
    x->queue = queue;
    return send_rows(w, a, fmt, x, header, idle ? gpu_idle_row : gpu_queue_row, n, 0, n);
}

/* HTA's idle time breakdown: a row per rank, stream and category (?rank=,
 * ?consecutive_kernel_delay_us=, HTA's, default 30). */
static int get_gpu_idle(struct web *w, const struct web_req *q, struct web_answer *a,
                        const struct live_snapshot **snapp)
{
    enum web_format fmt;
    struct analyse_gpu_opts opts;
    int64_t rank, delay;
    if (web__param_format(q, a, false, &fmt) < 0 ||
        web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &rank) < 0 ||
        param_gpu_opts(q, a, GPU_IDLE, &opts) < 0 ||
        web__param_us(q, a, "consecutive_kernel_delay_us", 0, INT64_MAX / 2,
                      ANALYSE_GPU_CONSECUTIVE_NS, &delay) < 0)
        return 0;
    struct live_gpu_stream_rank *ranks = NULL;
    size_t n_ranks = 0;
    int r = !*snapp ? (rank >= 0 ? -ENOENT : 0)
                    : live_query_gpu_idle(*snapp, rank, &opts, delay, &ranks, &n_ranks);
    if (r == -ENOENT)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
    if (r < 0)
        return web__store_error(a, r, "live_query_gpu_idle");
    size_t n = 0;
    for (size_t i = 0; i < n_ranks; i++)
        n += ranks[i].n_idle * ANALYSE_GPU_IDLE_COUNT;
    struct web_gpu_idle_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        live_gpu_stream_ranks_free(ranks, n_ranks);
        return web__store_error(a, -ENOMEM, "gpu_idle");
    }
    size_t k = 0;
    for (size_t i = 0; i < n_ranks; i++)
        for (size_t j = 0; j < ranks[i].n_idle; j++) {
            const struct analyse_gpu_idle *s = &ranks[i].idle[j];
            int64_t total = 0;
            for (unsigned c = 0; c < ANALYSE_GPU_IDLE_COUNT; c++)
                total += s->ns[c];
            for (unsigned c = 0; c < ANALYSE_GPU_IDLE_COUNT; c++)
                rows[k++] = (struct web_gpu_idle_row){ranks[i].rank, s, c, total};
        }
    if (fmt != WEB_FORMAT_JSON)
        return gpu_streams_rows(w, a, fmt, snapp, ranks, n_ranks, rows, NULL,
                                web__gpu_idle_csv_header, k);
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_gpu_idle(&b, ranks, n_ranks, rows, k, &opts, delay);
    free(rows);
    live_gpu_stream_ranks_free(ranks, n_ranks);
    return web__doc_fmt(w, a, &b, fmt);
}

/* HTA's CUDA launch queues: a summary row per rank and stream with its downsampled series
 * (?rank=, ?max_queue= default HTA's 1024, ?points= default 1000; CSV and records: the summary,
 * or ?table=series the kept points). */
static int get_gpu_queue(struct web *w, const struct web_req *q, struct web_answer *a,
                         const struct live_snapshot **snapp)
{
    static const char *const tables[] = {"summary", "series"};
    enum web_format fmt;
    struct analyse_gpu_opts opts;
    int64_t rank, max_queue, points;
    size_t table;
    if (web__param_format(q, a, false, &fmt) < 0 ||
        web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &rank) < 0 ||
        param_gpu_opts(q, a, GPU_QUEUE, &opts) < 0 ||
        web__param_i64(q, a, "max_queue", 1, INT32_MAX, ANALYSE_GPU_MAX_QUEUE, &max_queue) < 0 ||
        web__param_i64(q, a, "points", 4, GPU_QUEUE_POINTS_MAX, 1000, &points) < 0 ||
        param_word(q, a, "table", tables, 2, 0, "table: summary or series", &table) < 0)
        return 0;
    struct live_gpu_stream_rank *ranks = NULL;
    size_t n_ranks = 0;
    int r = !*snapp ? (rank >= 0 ? -ENOENT : 0)
                    : live_query_gpu_queue(*snapp, rank, &opts, max_queue, (size_t)points, &ranks,
                                           &n_ranks);
    if (r == -ENOENT)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
    if (r < 0)
        return web__store_error(a, r, "live_query_gpu_queue");
    bool series = table == 1 && fmt != WEB_FORMAT_JSON;
    size_t n = 0;
    for (size_t i = 0; i < n_ranks; i++)
        for (size_t j = 0; j < ranks[i].queues.n_streams; j++)
            n += series ? ranks[i].queues.streams[j].n_kept : 1;
    struct web_gpu_queue_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        live_gpu_stream_ranks_free(ranks, n_ranks);
        return web__store_error(a, -ENOMEM, "gpu_queue");
    }
    size_t k = 0;
    for (size_t i = 0; i < n_ranks; i++)
        for (size_t j = 0; j < ranks[i].queues.n_streams; j++) {
            const struct analyse_gpu_queue *s = &ranks[i].queues.streams[j];
            struct web_gpu_queue_row row = {ranks[i].rank, ranks[i].queues.trace_ns, s, NULL};
            if (!series)
                rows[k++] = row;
            for (size_t p = 0; series && p < s->n_kept; p++) {
                row.p = &s->points[p];
                rows[k++] = row;
            }
        }
    if (fmt != WEB_FORMAT_JSON)
        return gpu_streams_rows(w, a, fmt, snapp, ranks, n_ranks, NULL, rows,
                                series ? web__gpu_queue_series_csv_header
                                       : web__gpu_queue_csv_header, k);
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    web__render_gpu_queue(&b, ranks, n_ranks, rows, k, &opts, max_queue, (size_t)points);
    free(rows);
    live_gpu_stream_ranks_free(ranks, n_ranks);
    return web__doc_fmt(w, a, &b, fmt);
}

int web__route_live(struct web *w, const struct web_req *q, const struct web_route *rt,
                    const struct store_job *job, struct web_answer *a)
{
    if (!w->live)
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "no live analysis attached");
    const struct live_snapshot *snap = NULL;
    if (live_snapshot_get(w->live, job->id, &snap) < 0)
        snap = NULL;
    /* The answer may be kept under this snapshot (cache.h) unless the handler says otherwise
     * (one that answers from older figures than the snapshot's clears keep). */
    a->keep = snap != NULL;
    a->job_id = job->id;
    a->serial = snap ? live_snapshot_serial(snap) : 0;
    switch (rt->id) {
    case WEB_ROUTE_STEPS:
        get_steps(w, q, a, job, &snap);
        break;
    case WEB_ROUTE_STEP_TRACE:
        get_steptrace(w, q, a, snap);
        break;
    case WEB_ROUTE_KERNELS:
        get_kernels(w, q, a, &snap);
        break;
    case WEB_ROUTE_QUEUES:
        get_queues(w, q, a, &snap);
        break;
    case WEB_ROUTE_PIPELINE:
        get_pipeline(w, q, a, snap);
        break;
    case WEB_ROUTE_RANKS:
        get_ranks(w, q, a, job, snap);
        break;
    case WEB_ROUTE_HELPER:
        get_helper(w, q, a, job, snap);
        break;
    case WEB_ROUTE_BREAKDOWN:
        get_breakdown(w, q, a, &snap);
        break;
    case WEB_ROUTE_GPU_TEMPORAL:
        get_gpu_per_rank(w, q, a, &snap, GPU_TEMPORAL);
        break;
    case WEB_ROUTE_GPU_KERNEL_TYPES:
        get_gpu_kernel_types(w, q, a, &snap);
        break;
    case WEB_ROUTE_GPU_OVERLAP:
        get_gpu_per_rank(w, q, a, &snap, GPU_OVERLAP);
        break;
    case WEB_ROUTE_GPU_LAUNCHES:
        get_gpu_launches(w, q, a, &snap);
        break;
    case WEB_ROUTE_GPU_IDLE:
        get_gpu_idle(w, q, a, &snap);
        break;
    case WEB_ROUTE_GPU_QUEUE:
        get_gpu_queue(w, q, a, &snap);
        break;
    case WEB_ROUTE_CLUSTER_STEP_TRACE:
        web__route_cluster(w, q, a, job, snap);
        break;
    case WEB_ROUTE_CLUSTER_FLOPS:
    case WEB_ROUTE_CLUSTER_MEMORY:
        web__route_cluster_summary(w, q, a, job, rt->id == WEB_ROUTE_CLUSTER_MEMORY);
        break;
    case WEB_ROUTE_CLUSTER_COMM:
    case WEB_ROUTE_CLUSTER_LINKS:
        web__route_cluster_comm(w, q, a, job, rt->id == WEB_ROUTE_CLUSTER_LINKS);
        break;
    default:
        get_operators(w, q, a, &snap);
        break;
    }
    live_snapshot_put(snap); /* NULL when a streamed answer took the reference */
    return 0;
}
