/* SPDX-License-Identifier: MIT */
/*
 * live_query: answers from one immutable snapshot (live_int.h), on any thread. Steps and step
 * traces go through analyse's step-trace functions, the operator table through analyse's
 * filter/sort/fold/page (analyse_ops_query()), so a live view and an imported trace share every
 * formula. Nothing here touches the loop's state.
 */
#include "live_query.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "live_int.h"

const char *const live_points_source_names[3] = {"none", "trace", "phases"};

static const struct live_snap_rank *find_rank(const struct live_snapshot *s, int64_t rank)
{
    for (size_t i = 0; i < s->n_ranks; i++)
        if (s->ranks[i].rank == rank)
            return &s->ranks[i];
    return NULL;
}

static const char *op_name(const struct live_snapshot *s, uint32_t op)
{
    return op < s->n_ops ? s->ops[op].name : LIVE_OTHER_NAME;
}

static void fill_row(const struct live_snapshot *s, int64_t rank, const struct live_snap_step *st,
                     struct live_step_row *row)
{
    memset(row, 0, sizeof *row);
    row->step = st->step;
    row->rank = rank;
    row->start_ns = st->begin_ns;
    row->end_ns = st->end_ns;
    row->total_ns = st->end_ns - st->begin_ns;
    row->samples = st->samples;
    row->from_record = st->from_record;
    row->spans = st->spans;
    row->source = st->source;
    row->fp_name = "";
    row->bp_name = "";
    if (st->source == LIVE_POINTS_NONE)
        return;
    struct analyse_st_step in = {
        .step = st->step,
        .rank = rank,
        .start_ns = st->begin_ns,
        .fp_ns = st->fp_ns,
        .bp_ns = st->bp_ns,
        .end_ns = st->end_ns,
    };
    struct analyse_st_stage out;
    if (analyse_steptrace_stages(&in, 1, false, &out) == 0) {
        row->interval_ns = out.interval_ns;
        row->fp_bp_ns = out.fp_bp_ns;
        row->tail_ns = out.tail_ns;
    }
    if (st->source == LIVE_POINTS_TRACE) {
        row->fp_name = op_name(s, st->fp_op);
        row->bp_name = op_name(s, st->bp_op);
        row->fp_origin = st->fp_origin;
        row->bp_origin = st->bp_origin;
    }
}

static int cmp_row(const void *a, const void *b)
{
    const struct live_step_row *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return 0;
}

int live_query_steps(const struct live_snapshot *snap, int64_t rank, bool with_spans,
                     size_t offset, size_t limit, struct live_step_row **ret_rows, size_t *ret_n,
                     size_t *ret_total)
{
    size_t total = 0;
    for (size_t i = 0; i < snap->n_ranks; i++)
        if (rank < 0 || snap->ranks[i].rank == rank)
            total += snap->ranks[i].n_steps;
    struct live_step_row *all = malloc((total + 1) * sizeof *all);
    if (!all)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < snap->n_ranks; i++) {
        const struct live_snap_rank *sr = &snap->ranks[i];
        if (rank >= 0 && sr->rank != rank)
            continue;
        for (size_t j = 0; j < sr->n_steps; j++)
            if (!with_spans || sr->steps[j].spans > 0)
                fill_row(snap, sr->rank, &sr->steps[j], &all[k++]);
    }
    total = k;
    qsort(all, total, sizeof *all, cmp_row);
    if (limit == 0)
        limit = LIVE_ROWS_MAX;
    size_t from = offset < total ? offset : total;
    size_t n = total - from < limit ? total - from : limit;
    if (from > 0)
        memmove(all, all + from, n * sizeof *all);
    *ret_rows = all;
    *ret_n = n;
    *ret_total = total;
    return 0;
}

size_t live_query_clock_steps(const struct live_snapshot *snap, int64_t rank, size_t max,
                              struct analyse_clock_step *ret)
{
    const struct live_snap_rank *sr = find_rank(snap, rank);
    if (!sr)
        return 0;
    size_t from = sr->n_steps > max ? sr->n_steps - max : 0;
    for (size_t i = from; i < sr->n_steps; i++)
        ret[i - from] = (struct analyse_clock_step){.rank = rank, .step = sr->steps[i].step,
                                                    .begin_ns = sr->steps[i].begin_ns,
                                                    .end_ns = sr->steps[i].end_ns};
    return sr->n_steps - from;
}

bool live_query_step_window(const struct live_snapshot *snap, int64_t rank, int64_t step,
                            int64_t *ret_begin, int64_t *ret_end)
{
    const struct live_snap_rank *sr = find_rank(snap, rank);
    bool found = false;
    for (size_t i = 0; sr && i < sr->n_steps; i++) {
        const struct live_snap_step *st = &sr->steps[i];
        if (st->step != step)
            continue;
        if (!found || st->begin_ns < *ret_begin)
            *ret_begin = st->begin_ns;
        if (!found || st->end_ns > *ret_end)
            *ret_end = st->end_ns;
        found = true;
    }
    return found;
}

int live_query_steptrace(const struct live_snapshot *snap, int64_t rank, bool single, int64_t step,
                         int64_t first, int64_t last, size_t skip, enum live_points_source source,
                         struct analyse_st_trace **ret_trace, struct live_step_row *ret_points,
                         size_t *ret_by_source)
{
    const struct live_snap_rank *sr = find_rank(snap, rank);
    if (!sr)
        return -ENOENT;
    struct analyse_st_step *in = malloc((sr->n_steps + 1) * sizeof *in);
    struct analyse_st_comm *comm = malloc((sr->n_comm + 1) * sizeof *comm);
    if (!in || !comm) {
        free(in);
        free(comm);
        return -ENOMEM;
    }
    for (size_t i = 0; i < sr->n_comm; i++) {
        const struct live_comm *c = &sr->comm[i];
        const struct live_snap_op *op = &snap->ops[c->op];
        comm[i] = (struct analyse_st_comm){c->stream, op->name, op->name_len, c->ts_ns, c->end_ns};
    }
    size_t n = 0, in_range_seen = 0;
    const struct live_snap_step *lastp = NULL;
    for (size_t i = 0; i < sr->n_steps; i++) {
        const struct live_snap_step *st = &sr->steps[i];
        if (st->source == LIVE_POINTS_NONE || (source != LIVE_POINTS_NONE && st->source != source))
            continue;
        in[n++] = (struct analyse_st_step){
            .step = st->step,
            .rank = rank,
            .start_ns = st->begin_ns,
            .fp_ns = st->fp_ns,
            .bp_ns = st->bp_ns,
            .end_ns = st->end_ns,
            .comm = st->n_comm ? comm + st->first_comm : NULL,
            .n_comm = st->n_comm,
        };
        bool in_range = single ? st->step == step && !lastp : st->step >= first && st->step <= last;
        /* The first `skip` steps in range are left out: the average starts after them. */
        if (in_range && !single && in_range_seen++ < skip) {
            first = st->step + 1;
            in_range = false;
        }
        if (in_range)
            lastp = st;
    }
    if (ret_by_source) { /* the steps the answer is made of, by source */
        memset(ret_by_source, 0, (LIVE_POINTS_PHASES + 1) * sizeof *ret_by_source);
        for (size_t i = 0; i < sr->n_steps; i++) {
            const struct live_snap_step *st = &sr->steps[i];
            bool counted = st->source != LIVE_POINTS_NONE &&
                           (source == LIVE_POINTS_NONE || st->source == source) &&
                           (single ? st == lastp : st->step >= first && st->step <= last);
            if (counted)
                ret_by_source[st->source]++;
        }
    }
    int r = single || first <= last
                ? (single ? analyse_steptrace_step(in, n, step, false, ret_trace)
                          : analyse_steptrace_average(in, n, first, last, false, ret_trace))
                : -ENOENT;
    free(in);
    free(comm);
    if (r == 0 && lastp)
        fill_row(snap, rank, lastp, ret_points);
    return r;
}

/* ---- operators ---- */

static void merge(struct analyse_op_agg *a, const struct analyse_op_agg *b)
{
    if (b->calls == 0)
        return;
    if (a->calls == 0 || b->min_ns < a->min_ns)
        a->min_ns = b->min_ns;
    if (a->calls == 0 || b->max_ns > a->max_ns)
        a->max_ns = b->max_ns;
    a->calls += b->calls;
    a->total_ns += b->total_ns;
    a->self_ns += b->self_ns;
}

/* The table of the ops whose role is in mask; the row of the ops past the cap (whose roles are
 * mixed) only with the host table. */
static int query_table(const struct live_snapshot *snap, int64_t rank, uint32_t mask,
                       bool with_other, enum analyse_op_group group,
                       const struct analyse_op_query *q, struct analyse_op_table **ret_page)
{
    if (rank >= 0 && !find_rank(snap, rank))
        return -ENOENT;
    int r = -ENOMEM;
    struct analyse_op_table *t = NULL;
    struct analyse_op_part *parts = malloc((snap->n_ops + 1) * sizeof *parts);
    if (!parts)
        goto out;
    /* Sum the ranks per operator (host roles only, as key_averages() counts them), plus the row
     * of the operators past the cap; grouping by name or type is analyse's. */
    size_t n = 0;
    for (size_t i = 0; i <= snap->n_ops; i++) {
        bool other = i == snap->n_ops;
        if (other && !with_other)
            break;
        struct analyse_op_agg a = {0};
        for (size_t k = 0; k < snap->n_ranks; k++) {
            const struct live_snap_rank *sr = &snap->ranks[k];
            if (rank >= 0 && sr->rank != rank)
                continue;
            if (other)
                merge(&a, &sr->other);
            else if (i < sr->n_agg)
                merge(&a, &sr->agg[i]);
        }
        if (a.calls == 0)
            continue;
        if (!other && !(mask & ANALYSE_ROLE_BIT(snap->ops[i].role)))
            continue;
        parts[n++] = (struct analyse_op_part){
            .name = other ? LIVE_OTHER_NAME : snap->ops[i].name,
            .name_len = other ? sizeof LIVE_OTHER_NAME - 1 : snap->ops[i].name_len,
            .role = other ? ANALYSE_ROLE_OTHER : snap->ops[i].role,
            .calls = a.calls, .total_ns = a.total_ns, .self_ns = a.self_ns,
            .min_ns = a.min_ns, .max_ns = a.max_ns};
    }
    r = analyse_ops_from_parts(parts, n, group, &t);
    if (r == 0)
        r = analyse_ops_query(t, q, ret_page);
out:
    free(parts);
    analyse_op_table_free(t);
    return r;
}

int live_query_ops(const struct live_snapshot *snap, int64_t rank, enum analyse_op_group group,
                   const struct analyse_op_query *q, struct analyse_op_table **ret_page)
{
    return query_table(snap, rank, ANALYSE_ROLES_HOST, true, group, q, ret_page);
}

int live_query_kernels(const struct live_snapshot *snap, int64_t rank, enum analyse_op_group group,
                       const struct analyse_op_query *q, struct analyse_op_table **ret_page)
{
    return query_table(snap, rank, ANALYSE_ROLES_KERNEL, false, group, q, ret_page);
}

bool live_has_host_ops(const struct live_snapshot *snap, int64_t rank)
{
    for (size_t k = 0; k < snap->n_ranks; k++) {
        const struct live_snap_rank *sr = &snap->ranks[k];
        if (rank >= 0 && sr->rank != rank)
            continue;
        if (sr->other.calls > 0)
            return true;
        for (size_t i = 0; i < sr->n_agg && i < snap->n_ops; i++)
            if (sr->agg[i].calls > 0 &&
                (ANALYSE_ROLES_HOST & ANALYSE_ROLE_BIT(snap->ops[i].role)))
                return true;
    }
    return false;
}

/* ---- data queues ---- */

const char *const live_queue_role_names[3] = {"other", "host", "device"};

static bool name_is(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
        if (x != *b)
            return false;
    }
    return *a == *b;
}

enum live_queue_role live_queue_role_of(const char *name)
{
    static const char *const host[] = {"device_queue", "host_queue", "host", "dataloader"};
    static const char *const device[] = {"get_next", "device"};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        if (name_is(name, host[i]))
            return LIVE_QUEUE_HOST;
    for (size_t i = 0; i < sizeof device / sizeof device[0]; i++)
        if (name_is(name, device[i]))
            return LIVE_QUEUE_DEVICE;
    return LIVE_QUEUE_OTHER;
}

int live_query_pipeline(const struct live_snapshot *snap, int64_t rank,
                        struct live_pipeline_view *ret)
{
    for (size_t k = 0; k < snap->n_ranks; k++) {
        const struct live_snap_rank *sr = &snap->ranks[k];
        if (!sr->pipe || (rank >= 0 && sr->rank != rank))
            continue;
        const struct record_pipeline *pl = &sr->pipe->p;
        *ret = (struct live_pipeline_view){.rank = sr->rank,
                                           .n_ops = pl->n_ops,
                                           .ops = pl->ops,
                                           .children = pl->children,
                                           .values = pl->values,
                                           .has_cpu = pl->has_cpu,
                                           .cpu_interval_ms = pl->cpu_interval_ms,
                                           .processors = pl->processors};
        memcpy(ret->cpu, pl->cpu, sizeof ret->cpu);
        return 0;
    }
    return -ENOENT;
}

void live_queue_rows_free(struct live_queue_row *rows, size_t n)
{
    if (!rows)
        return;
    for (size_t i = 0; i < n; i++)
        free(rows[i].samples);
    free(rows);
}

int live_query_queues(const struct live_snapshot *snap, int64_t rank,
                      struct live_queue_row **ret_rows, size_t *ret_n)
{
    if (rank >= 0 && !find_rank(snap, rank))
        return -ENOENT;
    size_t total = 0;
    for (size_t k = 0; k < snap->n_ranks; k++)
        if ((rank < 0 || snap->ranks[k].rank == rank) && snap->ranks[k].queues)
            total += snap->ranks[k].queues->n;
    struct live_queue_row *rows = calloc(total + 1, sizeof *rows);
    if (!rows)
        return -ENOMEM;
    size_t n = 0;
    for (size_t k = 0; k < snap->n_ranks; k++) {
        const struct live_snap_rank *sr = &snap->ranks[k];
        if ((rank >= 0 && sr->rank != rank) || !sr->queues)
            continue;
        for (size_t i = 0; i < sr->queues->n; i++) {
            const struct live_snap_queue *q = &sr->queues->q[i];
            struct live_queue_row *o = &rows[n++];
            o->rank = sr->rank;
            o->name = q->name;
            o->role = live_queue_role_of(q->name);
            o->capacity = q->n ? q->samples[q->n - 1].capacity : -1;
            o->samples = malloc((q->n + 1) * sizeof *o->samples);
            if (!o->samples || analyse_queue_sort(memcpy(o->samples, q->samples,
                                                         q->n * sizeof *o->samples),
                                                  q->n) < 0) {
                live_queue_rows_free(rows, n);
                return -ENOMEM;
            }
            o->n_samples = q->n;
            analyse_queue_stats(o->samples, o->n_samples, &o->stats);
        }
    }
    *ret_rows = rows;
    *ret_n = n;
    return 0;
}

/* ---- host samples and ranks ---- */

int live_query_host(const struct live_snapshot *snap, int64_t rank, struct live_host_row *ret)
{
    if (rank >= 0 && !find_rank(snap, rank))
        return -ENOENT;
    struct live_host h = {0};
    for (size_t k = 0; k < snap->n_ranks; k++) {
        const struct live_snap_rank *sr = &snap->ranks[k];
        if (rank >= 0 && sr->rank != rank)
            continue;
        h.cpu_sum += sr->host.cpu_sum;
        h.n_cpu += sr->host.n_cpu;
        h.sys_cpu_sum += sr->host.sys_cpu_sum;
        h.n_sys_cpu += sr->host.n_sys_cpu;
    }
    ret->n_cpu = h.n_cpu;
    ret->cpu_pct = h.n_cpu ? h.cpu_sum / (double)h.n_cpu : NAN;
    ret->n_sys_cpu = h.n_sys_cpu;
    ret->sys_cpu_pct = h.n_sys_cpu ? h.sys_cpu_sum / (double)h.n_sys_cpu : NAN;
    return 0;
}

int live_query_ranks(const struct live_snapshot *snap, double straggler_ratio,
                     struct analyse_ranks **ret_ranks)
{
    return live_query_ranks_upto(snap, straggler_ratio, INT64_MAX, ret_ranks);
}

int live_query_ranks_upto(const struct live_snapshot *snap, double straggler_ratio,
                          int64_t max_step, struct analyse_ranks **ret_ranks)
{
    size_t total = 0;
    for (size_t k = 0; k < snap->n_ranks; k++)
        total += snap->ranks[k].n_steps;
    int r = -ENOMEM;
    struct analyse_rank_steps *in = calloc(snap->n_ranks + 1, sizeof *in);
    int64_t *v = malloc((4 * total + 1) * sizeof *v);
    if (!in || !v)
        goto out;
    int64_t *step = v, *interval = v + total, *fp_bp = v + 2 * total, *tail = v + 3 * total;
    size_t off = 0;
    for (size_t k = 0; k < snap->n_ranks; k++) {
        const struct live_snap_rank *sr = &snap->ranks[k];
        bool points = true;
        size_t n = 0;
        for (size_t j = 0; j < sr->n_steps; j++) {
            if (sr->steps[j].step > max_step)
                continue;
            struct live_step_row row;
            fill_row(snap, sr->rank, &sr->steps[j], &row);
            step[off + n] = row.total_ns;
            interval[off + n] = row.interval_ns;
            fp_bp[off + n] = row.fp_bp_ns;
            tail[off + n] = row.tail_ns;
            points &= row.source != LIVE_POINTS_NONE;
            n++;
        }
        points &= n > 0;
        in[k] = (struct analyse_rank_steps){
            .rank = sr->rank,
            .stage = -1,
            .step_ns = step + off,
            .interval_ns = points ? interval + off : NULL,
            .fp_bp_ns = points ? fp_bp + off : NULL,
            .tail_ns = points ? tail + off : NULL,
            .n = n,
        };
        off += n;
    }
    r = analyse_ranks_compute(in, snap->n_ranks, straggler_ratio, ret_ranks);
out:
    free(v);
    free(in);
    return r;
}

size_t live_query_last_steps(const struct live_snapshot *snap, int64_t *ret_ranks,
                             int64_t *ret_last, size_t cap)
{
    size_t n = 0;
    for (size_t k = 0; k < snap->n_ranks && n < cap; k++) {
        const struct live_snap_rank *sr = &snap->ranks[k];
        int64_t last = -1;
        for (size_t j = 0; j < sr->n_steps; j++)
            if (sr->steps[j].step > last)
                last = sr->steps[j].step;
        ret_ranks[n] = sr->rank;
        ret_last[n++] = last;
    }
    return n;
}
