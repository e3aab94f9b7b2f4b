/* SPDX-License-Identifier: MIT */
/*
 * routes_diff: GET /api/v1/diff?base=JOB&exp=JOB, two runs side by side (torch-tb-profiler's diff
 * view, HTA's trace diff). Each side is what that job's own /operators, /kernels and /breakdown
 * answer (the same live queries, on the job's latest snapshot); the rows are matched by exact
 * name and carry both sides' calls, total and self time and their differences. Not cached: the
 * answer depends on two snapshots.
 * With a step range on either side (?base_steps=A-B, ?exp_steps=), the live aggregates, which are
 * whole-run, cannot answer: both sides' tables are computed from their ranks' stored spans in
 * range (analyse_stepops.h, HTA's iteration rule), on an analysis thread with the summaries'
 * bounds (routes_summary.c), and each side's step time is its breakdown's mean over the range.
 * Each rank decodes only its steps' time whole (diff_side(): the rest gives its step spans and
 * kernels, and a count), with the answer of a whole read.
 */
#include "routes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "summary.h"

static int bad(struct web_answer *a, const char *msg)
{
    return web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request", msg);
}

/* One side being read: its job, snapshot reference and tables. */
struct side {
    struct web_route rt; /* only .job is used: web__find_live_job() reads it */
    struct store_job job;
    const struct live_snapshot *snap;
    struct analyse_op_table *ops, *kernels;
    struct live_breakdown_view v;
};

static void side_done(struct side *s)
{
    analyse_op_table_free(s->ops);
    analyse_op_table_free(s->kernels);
    live_breakdown_view_done(&s->v);
    live_snapshot_put(s->snap);
}

/* ?name= a job's name into s. Returns 0, or -1 with the answer in a. */
static int side_param(const struct web_req *q, struct web_answer *a, const char *name,
                      struct side *s)
{
    int r = web__param_str(q, a, name, s->rt.job, sizeof s->rt.job, &s->rt.job_len);
    if (r < 0)
        return -1;
    if (r == 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "%s: the name of a job is required", name);
        bad(a, msg);
        return -1;
    }
    return 0;
}

/* Reads one side: the job's operator and kernel tables of rank (every rank merged when < 0), all
 * rows grouped by name, and its breakdown (rank < 0: the lowest rank), as /operators, /kernels
 * and /breakdown read them. Returns 0, or -1 with the answer in a. */
static int side_read(struct web *w, struct web_answer *a, int64_t rank, struct side *s)
{
    if (web__find_live_job(w, &s->rt, &s->job, a) < 0)
        return -1;
    if (live_is_untracked(w->live, s->job.id)) {
        web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "untracked",
                   "a job of the diff is not analysed live (live_max_jobs)");
        return -1;
    }
    s->v.rank = rank < 0 ? 0 : rank;
    if (live_snapshot_get(w->live, s->job.id, &s->snap) < 0) {
        s->snap = NULL; /* known to the store, not published yet: empty tables */
        return 0;
    }
    const struct analyse_op_query all = {.sort = ANALYSE_OP_COL_NONE};
    int r = live_query_ops(s->snap, rank, ANALYSE_OP_GROUP_NAME, &all, &s->ops);
    if (r == 0)
        r = live_query_kernels(s->snap, rank, ANALYSE_OP_GROUP_NAME, &all, &s->kernels);
    if (r == 0) {
        r = live_query_breakdown(s->snap, rank, 0, &s->v);
        if (r == -ENOENT && rank < 0)
            r = 0;
    }
    if (r == -ENOENT) {
        char msg[RECORD_NAME_MAX + 40];
        snprintf(msg, sizeof msg, "rank: job \"%s\" has no such rank", s->rt.job);
        web__error(a, WEB_HTTP_NOT_FOUND, "not_found", msg);
        return -1;
    }
    if (r < 0) {
        web__store_error(a, r, "the diff's tables");
        return -1;
    }
    return 0;
}

static int by_name(const void *x, const void *y)
{
    return strcmp((*(const struct analyse_op_row *const *)x)->name,
                  (*(const struct analyse_op_row *const *)y)->name);
}

static int64_t abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

static int by_change(const void *x, const void *y)
{
    const struct web_diff_row *p = x, *q = y;
    int64_t dp = abs64((p->exp ? p->exp->total_ns : 0) - (p->base ? p->base->total_ns : 0));
    int64_t dq = abs64((q->exp ? q->exp->total_ns : 0) - (q->base ? q->base->total_ns : 0));
    if (dp != dq)
        return dp > dq ? -1 : 1;
    return strcmp(p->name, q->name);
}

/* Sorted row pointers of t (NULL t: none) into *ret. Returns 0 or -ENOMEM. */
static int sorted(const struct analyse_op_table *t, const struct analyse_op_row ***ret, size_t *n)
{
    *n = t ? t->n_rows : 0;
    *ret = calloc(*n ? *n : 1, sizeof **ret);
    if (!*ret)
        return -ENOMEM;
    for (size_t i = 0; i < *n; i++)
        (*ret)[i] = &t->rows[i];
    qsort(*ret, *n, sizeof **ret, by_name);
    return 0;
}

/* The rows of both tables matched by exact name, by |exp total - base total| descending, then
 * name. Sets *ret (free()) and *ret_n. Returns 0 or -ENOMEM. */
static int match(const struct analyse_op_table *base, const struct analyse_op_table *exp,
                 struct web_diff_row **ret, size_t *ret_n)
{
    const struct analyse_op_row **x = NULL, **y = NULL;
    size_t nx, ny, i = 0, j = 0, n = 0;
    if (sorted(base, &x, &nx) < 0 || sorted(exp, &y, &ny) < 0) {
        free(x);
        return -ENOMEM;
    }
    struct web_diff_row *rows = calloc(nx + ny + 1, sizeof *rows);
    if (!rows) {
        free(x);
        free(y);
        return -ENOMEM;
    }
    while (i < nx || j < ny) {
        int c = i == nx ? 1 : j == ny ? -1 : strcmp(x[i]->name, y[j]->name);
        struct web_diff_row *r = &rows[n++];
        r->base = c <= 0 ? x[i++] : NULL;
        r->exp = c >= 0 ? y[j++] : NULL;
        r->name = r->base ? r->base->name : r->exp->name;
    }
    free(x);
    free(y);
    qsort(rows, n, sizeof *rows, by_change);
    *ret = rows;
    *ret_n = n;
    return 0;
}

void web__diff_bd(const struct live_breakdown_view *v, bool ranged, int64_t first,
                  int64_t last, struct web_diff_bd *out)
{
    memset(out, 0, sizeof *out);
    out->rank = v->rank;
    const struct analyse_breakdown *bd = v->bd;
    if (!bd)
        return;
    if (!ranged) { /* the breakdown's own average, as /breakdown answers it */
        out->n_steps = bd->n_steps;
        out->total_ns = bd->avg_total_ns;
        memcpy(out->ns, bd->avg_ns, sizeof out->ns);
        return;
    }
    int64_t sum[ANALYSE_BD_COUNT] = {0}, total = 0;
    for (size_t i = 0; i < bd->n_steps; i++) {
        const struct analyse_bd_step *st = &bd->steps[i];
        if (st->step < first || st->step > last)
            continue;
        out->n_steps++;
        total += st->end_ns - st->start_ns;
        for (size_t c = 0; c < ANALYSE_BD_COUNT; c++)
            sum[c] += st->cost_ns[c];
    }
    if (out->n_steps == 0)
        return;
    out->total_ns = (double)total / (double)out->n_steps;
    for (size_t c = 0; c < ANALYSE_BD_COUNT; c++)
        out->ns[c] = (double)sum[c] / (double)out->n_steps;
}

int web__diff_answer(struct sbuf *b, enum web_format fmt, const struct web_diff_side *base,
                     const struct web_diff_side *exp)
{
    struct web_diff_row *ops = NULL, *kernels = NULL;
    size_t n_ops = 0, n_kernels = 0;
    if (match(base->ops, exp->ops, &ops, &n_ops) < 0 ||
        match(base->kernels, exp->kernels, &kernels, &n_kernels) < 0) {
        free(ops);
        return -ENOMEM;
    }
    if (fmt == WEB_FORMAT_CSV || fmt == WEB_FORMAT_RECORDS)
        web__diff_table(b, fmt, ops, n_ops, kernels, n_kernels);
    else
        web__render_diff(b, base, exp, ops, n_ops, kernels, n_kernels);
    free(ops);
    free(kernels);
    return 0;
}

/* ?NAME=A-B or N into [*first, *last] (*set: present). Returns 0 or -1 (answered). */
static int param_range(const struct web_req *q, struct web_answer *a, const char *name,
                       bool *set, int64_t *first, int64_t *last)
{
    char buf[48];
    size_t len;
    *first = ANALYSE_ST_ALL_FIRST;
    *last = ANALYSE_ST_ALL_LAST;
    int r = web__param_str(q, a, name, buf, sizeof buf, &len);
    *set = r > 0;
    if (r <= 0)
        return r;
    if (web__parse_steps(buf, len, first, last) < 0) {
        char msg[80];
        snprintf(msg, sizeof msg, "%s: A-B (0 <= A <= B) or N", name);
        bad(a, msg);
        return -1;
    }
    return 0;
}

/* The ranks a ranged side reads (its rank, else every rank of its job), from the store, into
 * d; a rank the job lacks is a 404. Returns 0 or -1 (answered). */
static int side_ranks(struct web *w, struct web_answer *a, const struct side *s, int i,
                      struct web_diff_steps *d)
{
    struct store_rank *ranks = NULL;
    size_t n = 0;
    int r = store_query_ranks(w->store, s->job.id, &ranks, &n);
    if (r < 0) {
        web__store_error(a, r, "store_query_ranks");
        return -1;
    }
    d->ranks[i] = calloc(n ? n : 1, sizeof *d->ranks[i]);
    if (!d->ranks[i]) {
        free(ranks);
        web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        if (d->rank[i] >= 0 && ranks[k].rank != d->rank[i])
            continue;
        d->ranks[i][d->n_ranks[i]++] = ranks[k].rank;
        if (ranks[k].events > d->events)
            d->events = ranks[k].events;
    }
    free(ranks);
    if (d->rank[i] >= 0 && d->n_ranks[i] == 0) {
        char msg[RECORD_NAME_MAX + 40];
        snprintf(msg, sizeof msg, "rank: job \"%s\" has no such rank", s->rt.job);
        web__error(a, WEB_HTTP_NOT_FOUND, "not_found", msg);
        return -1;
    }
    d->job[i] = s->job;
    return 0;
}

int web__route_diff(struct web *w, const struct web_req *q, struct web_answer *a)
{
    if (!w->store)
        return web__no_store(a);
    if (!w->live)
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "no live analysis attached");
    enum web_format fmt;
    int64_t rank, ranks[2], first[2], last[2], max_spans;
    bool ranged[2];
    struct side s[2] = {0};
    if (web__param_format(q, a, false, &fmt) < 0 ||
        web__param_i64(q, a, "rank", -1, INT32_MAX, -1, &rank) < 0 ||
        web__param_i64(q, a, "base_rank", -1, INT32_MAX, rank, &ranks[0]) < 0 ||
        web__param_i64(q, a, "exp_rank", -1, INT32_MAX, rank, &ranks[1]) < 0 ||
        side_param(q, a, "base", &s[0]) < 0 || side_param(q, a, "exp", &s[1]) < 0 ||
        param_range(q, a, "base_steps", &ranged[0], &first[0], &last[0]) < 0 ||
        param_range(q, a, "exp_steps", &ranged[1], &first[1], &last[1]) < 0 ||
        web__param_i64(q, a, "max_spans", 1, WEB_SUMMARY_SPANS_MAX, WEB_SUMMARY_SPANS_DEFAULT,
                       &max_spans) < 0)
        return 0;
    if (ranged[0] || ranged[1]) {
        struct web_diff_steps d = {.fmt = fmt, .max_spans = (size_t)max_spans};
        int ok = 0;
        for (int i = 0; i < 2 && ok == 0; i++) {
            d.rank[i] = ranks[i];
            d.first[i] = first[i];
            d.last[i] = last[i];
            ok = web__find_live_job(w, &s[i].rt, &s[i].job, a);
            if (ok == 0)
                ok = side_ranks(w, a, &s[i], i, &d);
        }
        if (ok == 0)
            return web__route_diff_steps(w, q, &d, a); /* takes d.ranks */
        free(d.ranks[0]);
        free(d.ranks[1]);
        return 0;
    }
    if (side_read(w, a, ranks[0], &s[0]) < 0 || side_read(w, a, ranks[1], &s[1]) < 0)
        goto out;
    struct web_diff_side side[2];
    for (int i = 0; i < 2; i++) {
        side[i] = (struct web_diff_side){.job = s[i].job.name, .job_id = s[i].job.id,
                                         .rank = ranks[i], .ops = s[i].ops,
                                         .kernels = s[i].kernels};
        web__diff_bd(&s[i].v, false, 0, 0, &side[i].bd);
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    if (web__diff_answer(&b, fmt, &side[0], &side[1]) < 0) {
        sbuf_done(&b);
        web__store_error(a, -ENOMEM, "diff");
        goto out;
    }
    web__doc_fmt(w, a, &b, fmt);
out:
    side_done(&s[0]);
    side_done(&s[1]);
    return 0;
}
