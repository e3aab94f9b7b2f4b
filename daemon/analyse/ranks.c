/* SPDX-License-Identifier: MIT */
/*
 * Ranks: per-rank step statistics (count, mean, median, p90, min, max, std of the step time and
 * of its stages), straggler flags and the slowest rank of each pipeline stage. It sits between
 * the step trace (one series per rank) and the web route ranks and the helper's straggler rule;
 * no I/O.
 *
 * Percentiles follow numpy's default (linear interpolation at q * (n - 1)) and the standard
 * deviation is the population one, so a notebook over the same CSV prints the same numbers.
 */
#include "analyse_ranks.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const analyse_rank_metric_names[ANALYSE_RANK_METRIC_COUNT] = {
    "step", "interval", "fp_bp", "tail",
};

/* Sorts v[0..n) ascending, with tmp[n] as room: a least-significant-digit radix sort by bytes
 * of the keys with their sign bit flipped (so that unsigned byte order is signed order), skipping
 * the bytes every key shares (a series of step times differs in its low 3 or 4 bytes). The same
 * order as qsort() gives, at a fraction of its cost: at 64 ranks x 10 k steps the comparison sort
 * was two thirds of /ranks' time (docs/PERFORMANCE.md). */
static void sort_i64(int64_t *v, size_t n, int64_t *tmp)
{
    if (n < 2)
        return;
    const uint64_t flip = UINT64_C(1) << 63;
    uint64_t first = (uint64_t)v[0] ^ flip, differ = 0;
    for (size_t i = 1; i < n; i++)
        differ |= ((uint64_t)v[i] ^ flip) ^ first;
    int64_t *src = v, *dst = tmp;
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if (((differ >> shift) & 0xff) == 0)
            continue; /* every key has the same byte here: the order stands */
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((((uint64_t)src[i] ^ flip) >> shift) & 0xff) + 1]++;
        for (size_t b = 1; b < 257; b++)
            count[b] += count[b - 1];
        for (size_t i = 0; i < n; i++)
            dst[count[(((uint64_t)src[i] ^ flip) >> shift) & 0xff]++] = src[i];
        int64_t *x = src;
        src = dst;
        dst = x;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* Linear interpolation between order statistics of sorted s[0..n), n > 0. */
static double quantile(const int64_t *s, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = pos - (double)lo;
    return (double)s[lo] + frac * ((double)s[hi] - (double)s[lo]);
}

int analyse_dist_compute(const int64_t *v, size_t n, struct analyse_dist *ret)
{
    if (!ret || (!v && n > 0))
        return -EINVAL;
    struct analyse_dist d = {0};
    if (n == 0) {
        *ret = d;
        return 0;
    }
    int64_t *s = n <= SIZE_MAX / (2 * sizeof *s) ? malloc(2 * n * sizeof *s) : NULL;
    if (!s)
        return -ENOMEM;
    memcpy(s, v, n * sizeof *s);
    sort_i64(s, n, s + n);
    /* Sum in long double: int64 sums of long runs can exceed 2^53 and lose the last ns. */
    long double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (long double)s[i];
    long double mean = sum / (long double)n;
    long double ss = 0;
    for (size_t i = 0; i < n; i++) {
        long double dv = (long double)s[i] - mean;
        ss += dv * dv;
    }
    d.count = n;
    d.mean_ns = (double)mean;
    d.median_ns = quantile(s, n, 0.5);
    d.p90_ns = quantile(s, n, 0.9);
    d.std_ns = sqrt((double)(ss / (long double)n));
    d.min_ns = s[0];
    d.max_ns = s[n - 1];
    free(s);
    *ret = d;
    return 0;
}

void analyse_ranks_free(struct analyse_ranks *ranks)
{
    if (!ranks)
        return;
    free(ranks->rows);
    free(ranks->stages);
    free(ranks);
}

static int cmp_stage(const void *a, const void *b)
{
    const struct analyse_rank_stage *x = a, *y = b;
    return (x->stage > y->stage) - (x->stage < y->stage);
}

int analyse_ranks_compute(const struct analyse_rank_steps *in, size_t n, double straggler_ratio,
                          struct analyse_ranks **ret_ranks)
{
    if (!ret_ranks || (!in && n > 0) || !(straggler_ratio >= 0) || isinf(straggler_ratio))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (in[i].n > 0 && !in[i].step_ns)
            return -EINVAL;
    int r = -ENOMEM;
    struct analyse_ranks *res = calloc(1, sizeof *res);
    if (!res)
        goto fail;
    res->straggler_ratio = straggler_ratio;
    if (n > 0) {
        res->rows = calloc(n, sizeof *res->rows);
        res->stages = calloc(n, sizeof *res->stages);
        if (!res->rows || !res->stages)
            goto fail;
    }
    res->n_ranks = n;
    double sum_means = 0;
    size_t n_with = 0;
    for (size_t i = 0; i < n; i++) {
        struct analyse_rank_row *row = &res->rows[i];
        row->rank = in[i].rank;
        row->stage = in[i].stage < 0 ? -1 : in[i].stage;
        const int64_t *series[ANALYSE_RANK_METRIC_COUNT] = {in[i].step_ns, in[i].interval_ns,
                                                             in[i].fp_bp_ns, in[i].tail_ns};
        for (int m = 0; m < ANALYSE_RANK_METRIC_COUNT; m++) {
            if (!series[m])
                continue;
            r = analyse_dist_compute(series[m], in[i].n, &row->stat[m]);
            if (r < 0)
                goto fail;
        }
        if (row->stat[ANALYSE_RANK_STEP].count > 0) {
            sum_means += row->stat[ANALYSE_RANK_STEP].mean_ns;
            n_with++;
        }
    }
    res->mean_of_ranks_ns = n_with ? sum_means / (double)n_with : 0;
    res->threshold_ns = res->mean_of_ranks_ns * (1 + straggler_ratio);
    for (size_t i = 0; i < n; i++) {
        struct analyse_rank_row *row = &res->rows[i];
        if (row->stat[ANALYSE_RANK_STEP].count == 0)
            continue;
        double m = row->stat[ANALYSE_RANK_STEP].mean_ns;
        if (res->mean_of_ranks_ns > 0)
            row->excess_pct = 100 * (m / res->mean_of_ranks_ns - 1);
        row->straggler = m > res->threshold_ns;
        res->n_stragglers += row->straggler;
    }
    /* Stages: one entry per distinct stage, found by a linear scan (rank counts are small). */
    for (size_t i = 0; i < n; i++) {
        const struct analyse_rank_row *row = &res->rows[i];
        struct analyse_rank_stage *st = NULL;
        for (size_t k = 0; k < res->n_stages; k++)
            if (res->stages[k].stage == row->stage)
                st = &res->stages[k];
        if (!st) {
            st = &res->stages[res->n_stages++];
            st->stage = row->stage;
            st->slowest_rank = -1;
        }
        if (row->stat[ANALYSE_RANK_STEP].count == 0)
            continue;
        double m = row->stat[ANALYSE_RANK_STEP].mean_ns;
        /* mean_ns accumulates the sum here and is divided below. */
        st->mean_ns += m;
        if (++st->n_ranks == 1 || m > st->slowest_mean_ns) {
            st->slowest_rank = row->rank;
            st->slowest_mean_ns = m;
        }
    }
    for (size_t k = 0; k < res->n_stages; k++)
        if (res->stages[k].n_ranks)
            res->stages[k].mean_ns /= (double)res->stages[k].n_ranks;
    if (res->n_stages > 1)
        qsort(res->stages, res->n_stages, sizeof *res->stages, cmp_stage);
    *ret_ranks = res;
    return 0;
fail:
    analyse_ranks_free(res);
    return r;
}
