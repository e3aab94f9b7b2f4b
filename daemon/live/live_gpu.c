/* SPDX-License-Identifier: MIT */
/*
 * live_gpu: HTA's GPU views (analyse_gpu.h) of a snapshot's ranks, computed on an HTTP thread
 * from the spans the breakdown keeps (live_breakdown.c): no state of its own, the answer is
 * cached by snapshot in daemon/web.
 */
#include "live_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum gpu_view { GPU_TEMPORAL, GPU_KERNEL_TYPES };

/* Zeroed rows of size bytes, one per rank of snap that rank selects (rank < 0: all), in *rows;
 * clears the caller's *ret_rows and *ret_n. Returns 0, -ENOENT (rank >= 0 and no such rank),
 * -ENOMEM. */
static int rows_for(const struct live_snapshot *snap, int64_t rank, size_t size, void **rows,
                    void *ret_rows, size_t *ret_n)
{
    *(void **)ret_rows = NULL;
    *ret_n = 0;
    size_t n = 0;
    for (size_t i = 0; i < snap->n_ranks; i++)
        n += rank < 0 || snap->ranks[i].rank == rank;
    if (n == 0 && rank >= 0)
        return -ENOENT;
    *rows = calloc(n ? n : 1, size);
    return *rows ? 0 : -ENOMEM;
}

static int query(const struct live_snapshot *snap, int64_t rank, const struct analyse_gpu_opts *opts,
                 enum gpu_view view, struct live_gpu_row **ret_rows, size_t *ret_n)
{
    struct live_gpu_row *rows;
    int e = rows_for(snap, rank, sizeof *rows, (void **)&rows, ret_rows, ret_n);
    if (e < 0)
        return e;
    size_t k = 0;
    for (size_t i = 0; i < snap->n_ranks; i++) {
        const struct live_snap_rank *sr = &snap->ranks[i];
        if (rank >= 0 && sr->rank != rank)
            continue;
        struct live_bd_spans sp;
        int r = live__bd_spans(snap, sr, &sp);
        if (r == 0)
            r = view == GPU_TEMPORAL
                    ? analyse_gpu_temporal(sp.v, sp.n, opts, &rows[k].temporal)
                    : analyse_gpu_kernel_types(sp.v, sp.n, opts, &rows[k].ktypes);
        live__bd_spans_done(&sp);
        if (r < 0) {
            free(rows);
            return r;
        }
        rows[k].rank = sr->rank;
        rows[k].n_spans = sr->bd.n_spans;
        rows[k].n_evicted = sr->bd.n_evicted;
        k++;
    }
    *ret_rows = rows;
    *ret_n = k;
    return 0;
}

int live_query_gpu_temporal(const struct live_snapshot *snap, int64_t rank,
                            const struct analyse_gpu_opts *opts,
                            struct live_gpu_row **ret_rows, size_t *ret_n)
{
    return query(snap, rank, opts, GPU_TEMPORAL, ret_rows, ret_n);
}

int live_query_gpu_kernel_types(const struct live_snapshot *snap, int64_t rank,
                                const struct analyse_gpu_opts *opts,
                                struct live_gpu_row **ret_rows, size_t *ret_n)
{
    return query(snap, rank, opts, GPU_KERNEL_TYPES, ret_rows, ret_n);
}

int live_query_gpu_launches(const struct live_snapshot *snap, int64_t rank,
                            const struct analyse_gpu_opts *opts, int64_t runtime_cutoff_ns,
                            int64_t delay_cutoff_ns, struct live_gpu_launch_row **ret_rows,
                            size_t *ret_n)
{
    *ret_rows = NULL;
    *ret_n = 0;
    bool found = false;
    struct live_gpu_launch_row *rows = NULL;
    size_t n = 0;
    for (size_t i = 0; i < snap->n_ranks; i++) {
        const struct live_snap_rank *sr = &snap->ranks[i];
        if (rank >= 0 && sr->rank != rank)
            continue;
        found = true;
        struct live_bd_spans sp;
        struct analyse_gpu_launch *l = NULL;
        size_t m = 0;
        int r = live__bd_spans(snap, sr, &sp);
        if (r == 0)
            r = analyse_gpu_launches(sp.v, sp.n, opts, runtime_cutoff_ns, delay_cutoff_ns, &l, &m);
        live__bd_spans_done(&sp);
        struct live_gpu_launch_row *v = r == 0 && m ? realloc(rows, (n + m) * sizeof *v) : rows;
        if (r < 0 || (m && !v)) { /* a rank without launches leaves rows as it was, maybe NULL */
            free(l);
            free(rows);
            return r < 0 ? r : -ENOMEM;
        }
        rows = v;
        for (size_t j = 0; j < m; j++)
            rows[n + j] = (struct live_gpu_launch_row){sr->rank, l[j]};
        n += m;
        free(l);
    }
    if (!found && rank >= 0)
        return -ENOENT;
    *ret_rows = rows;
    *ret_n = n;
    return 0;
}

void live_gpu_stream_ranks_free(struct live_gpu_stream_rank *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++) {
        free(rows[i].idle);
        analyse_gpu_queues_done(&rows[i].queues);
    }
    free(rows);
}

static int query_streams(const struct live_snapshot *snap, int64_t rank,
                         const struct analyse_gpu_opts *opts, bool idle, int64_t consecutive_ns,
                         int64_t max_queue, size_t max_points,
                         struct live_gpu_stream_rank **ret_rows, size_t *ret_n)
{
    struct live_gpu_stream_rank *rows;
    int e = rows_for(snap, rank, sizeof *rows, (void **)&rows, ret_rows, ret_n);
    if (e < 0)
        return e;
    size_t k = 0;
    for (size_t i = 0; i < snap->n_ranks; i++) {
        const struct live_snap_rank *sr = &snap->ranks[i];
        if (rank >= 0 && sr->rank != rank)
            continue;
        struct live_gpu_stream_rank *row = &rows[k++];
        row->rank = sr->rank;
        row->n_spans = sr->bd.n_spans;
        row->n_evicted = sr->bd.n_evicted;
        row->n_stream_folded = sr->bd.n_stream_folded;
        struct live_bd_spans sp;
        int r = live__bd_spans(snap, sr, &sp);
        if (r == 0 && idle)
            r = analyse_gpu_idle(sp.v, sp.n, opts, consecutive_ns, &row->filter, &row->idle,
                                 &row->n_idle);
        else if (r == 0) {
            r = analyse_gpu_queues(sp.v, sp.n, opts, max_queue, max_points, &row->queues);
            row->filter = row->queues.filter;
        }
        live__bd_spans_done(&sp);
        if (r < 0) {
            live_gpu_stream_ranks_free(rows, k);
            return r;
        }
    }
    *ret_rows = rows;
    *ret_n = k;
    return 0;
}

int live_query_gpu_idle(const struct live_snapshot *snap, int64_t rank,
                        const struct analyse_gpu_opts *opts, int64_t consecutive_ns,
                        struct live_gpu_stream_rank **ret_rows, size_t *ret_n)
{
    return query_streams(snap, rank, opts, true, consecutive_ns, 0, 0, ret_rows, ret_n);
}

int live_query_gpu_queue(const struct live_snapshot *snap, int64_t rank,
                         const struct analyse_gpu_opts *opts, int64_t max_queue, size_t max_points,
                         struct live_gpu_stream_rank **ret_rows, size_t *ret_n)
{
    return query_streams(snap, rank, opts, false, 0, max_queue, max_points, ret_rows, ret_n);
}

int live_query_gpu_kernel_metrics(const struct live_snapshot *snap, int64_t rank,
                                  const struct analyse_gpu_opts *opts, size_t num_kernels,
                                  double duration_ratio, struct live_gpu_kmetric_row **ret_rows,
                                  size_t *ret_n)
{
    *ret_rows = NULL;
    *ret_n = 0;
    bool found = false;
    struct live_gpu_kmetric_row *rows = NULL;
    size_t n = 0;
    for (size_t i = 0; i < snap->n_ranks; i++) {
        const struct live_snap_rank *sr = &snap->ranks[i];
        if (rank >= 0 && sr->rank != rank)
            continue;
        found = true;
        struct live_bd_spans sp;
        struct analyse_gpu_kmetric *m = NULL;
        size_t k = 0;
        int r = live__bd_spans(snap, sr, &sp);
        if (r == 0)
            r = analyse_gpu_kernel_metrics(sp.v, sp.n, opts, num_kernels, duration_ratio, &m, &k);
        live__bd_spans_done(&sp);
        struct live_gpu_kmetric_row *v = r == 0 && k ? realloc(rows, (n + k) * sizeof *v) : rows;
        if (r < 0 || (k && !v)) {
            free(m);
            free(rows);
            return r < 0 ? r : -ENOMEM;
        }
        rows = v;
        for (size_t j = 0; j < k; j++)
            rows[n + j] = (struct live_gpu_kmetric_row){sr->rank, m[j]};
        n += k;
        free(m);
    }
    if (!found && rank >= 0)
        return -ENOENT;
    *ret_rows = rows;
    *ret_n = n;
    return 0;
}
