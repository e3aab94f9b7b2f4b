/* SPDX-License-Identifier: MIT */
/*
 * analyse_ranks.h: per-rank step statistics, stragglers and the slowest rank per pipeline
 * stage (ranks.c).
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_RANKS_H
#define STEPSCOPE_ANALYSE_RANKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- Ranks (ranks.c) -----------------------------------------------------------------------
 * Per-rank step statistics and straggler flags (issue 3 item 9). A rank is a straggler when its
 * mean step time is strictly greater than the mean of the ranks' means times (1 + ratio), the
 * strict '>' of MindInsight's cluster proposer (interval / avg - 1 > 0.2). docs/ANALYSIS.md,
 * "Helper and ranks". */

#define ANALYSE_STRAGGLER_RATIO 0.2 /* rank mean > mean of ranks * (1 + 0.2) */

/* The series of one rank, as the step trace gives them. All arrays are borrowed, [n]. */
struct analyse_rank_steps {
    int64_t rank;
    int64_t stage;              /* pipeline stage; -1 when unknown (all such ranks form stage -1) */
    const int64_t *step_ns;     /* total step time per step; required when n > 0 */
    const int64_t *interval_ns; /* NULL when not given */
    const int64_t *fp_bp_ns;    /* NULL when not given */
    const int64_t *tail_ns;     /* NULL when not given */
    size_t n;
};

enum analyse_rank_metric {
    ANALYSE_RANK_STEP,
    ANALYSE_RANK_INTERVAL,
    ANALYSE_RANK_FP_BP,
    ANALYSE_RANK_TAIL,
    ANALYSE_RANK_METRIC_COUNT,
};

/* "step", "interval", "fp_bp", "tail". */
extern const char *const analyse_rank_metric_names[ANALYSE_RANK_METRIC_COUNT];

/* Statistics of one series; count 0 (all zero) when the series was not given or is empty.
 * median and p90 interpolate linearly between order statistics (numpy's default percentile:
 * position q * (count - 1)); std is the population standard deviation (numpy's ddof = 0). */
struct analyse_dist {
    size_t count;
    double mean_ns;
    double median_ns;
    double p90_ns;
    double std_ns;
    int64_t min_ns;
    int64_t max_ns;
};

struct analyse_rank_row {
    int64_t rank;
    int64_t stage;
    struct analyse_dist stat[ANALYSE_RANK_METRIC_COUNT];
    bool straggler;    /* stat[STEP].mean_ns > threshold_ns of the result */
    double excess_pct; /* 100 * (mean / mean of ranks - 1); 0 when the rank has no steps */
};

/* One pipeline stage (or stage -1: ranks without one). */
struct analyse_rank_stage {
    int64_t stage;
    size_t n_ranks;        /* ranks of the stage that have steps */
    int64_t slowest_rank;  /* largest mean step time; the first in input order on a tie; -1 if none */
    double slowest_mean_ns;
    double mean_ns;        /* mean of the stage's rank means */
};

/* Read-only outside ranks.c. */
struct analyse_ranks {
    size_t n_ranks;
    struct analyse_rank_row *rows;      /* [n_ranks], in input order */
    double mean_of_ranks_ns;            /* mean of the rank means over ranks with steps; 0 if none */
    double straggler_ratio;             /* echoed */
    double threshold_ns;                /* mean_of_ranks_ns * (1 + straggler_ratio) */
    size_t n_stragglers;
    size_t n_stages;
    struct analyse_rank_stage *stages;  /* [n_stages], by stage ascending */
};

/* Statistics of v[0..n) into *ret (n may be 0). Returns 0, -EINVAL if v is NULL with n > 0 or
 * ret is NULL, -ENOMEM (it sorts a copy). Pure. */
int analyse_dist_compute(const int64_t *v, size_t n, struct analyse_dist *ret);

/* Per-rank statistics, stragglers and the slowest rank per stage of in[0..n). straggler_ratio
 * < 0 or NaN is -EINVAL. Ranks with no steps are listed but neither averaged nor flagged.
 * Returns 0 and sets *ret_ranks (caller frees with analyse_ranks_free()), -EINVAL, -ENOMEM. */
int analyse_ranks_compute(const struct analyse_rank_steps *in, size_t n, double straggler_ratio,
                          struct analyse_ranks **ret_ranks);

/* Frees a result; NULL is accepted. */
void analyse_ranks_free(struct analyse_ranks *ranks);

#endif
