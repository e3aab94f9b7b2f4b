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

static int query(const struct live_snapshot *snap, int64_t rank, const struct analyse_gpu_opts *opts,
                 enum gpu_view view, struct live_gpu_row **ret_rows, size_t *ret_n)
{
    *ret_rows = NULL;
    *ret_n = 0;
    size_t n = 0;
    for (size_t i = 0; i < snap->n_ranks; i++)
        n += rank < 0 || snap->ranks[i].rank == rank;
    if (n == 0 && rank >= 0)
        return -ENOENT;
    struct live_gpu_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < snap->n_ranks; i++) {
        const struct live_snap_rank *sr = &snap->ranks[i];
        if (rank >= 0 && sr->rank != rank)
            continue;
        struct live_bd_spans sp;
        int r = live__bd_spans(snap, &sr->bd, &sp);
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
        int r = live__bd_spans(snap, &sr->bd, &sp);
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
