/* SPDX-License-Identifier: MIT */
/*
 * benchmark: paddle.profiler's benchmark timer (analyse_benchmark.h; docs/ANALYSIS.md,
 * "Paddle's summaries"). The formulas follow python/paddle/profiler/timer.py; where Paddle's own
 * arithmetic is off (the min and its off-by-one average), the correct value is computed here and
 * the difference is documented.
 */
#include "analyse_benchmark.h"

#include <errno.h>
#include <string.h>

static void stat_add(struct analyse_bench_stat *st, double v, bool first)
{
    if (first || v > st->max)
        st->max = v;
    if (first || v < st->min)
        st->min = v;
}

int analyse_benchmark_compute(const struct analyse_bench_step *steps, size_t n, size_t skip,
                              struct analyse_benchmark *ret)
{
    if ((!steps && n > 0) || !ret)
        return -EINVAL;
    memset(ret, 0, sizeof *ret);
    for (size_t i = 0; i < n; i++)
        ret->n_steps += steps[i].batch_ns > 0;
    ret->n_skipped = skip < ret->n_steps ? skip : ret->n_steps;
    ret->n_counted = ret->n_steps - ret->n_skipped;
    if (ret->n_counted == 0)
        return 0;
    ret->has_reader = ret->samples_mode = true;
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (steps[i].batch_ns <= 0 || seen++ < ret->n_skipped)
            continue;
        ret->has_reader &= steps[i].reader_ns >= 0;
        ret->samples_mode &= steps[i].samples >= 0;
    }
    double batch_s = 0, reader_s = 0, samples = 0;
    bool first = true;
    seen = 0;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_bench_step *s = &steps[i];
        if (s->batch_ns <= 0 || seen++ < ret->n_skipped)
            continue;
        double b = (double)s->batch_ns / 1e9;
        batch_s += b;
        stat_add(&ret->batch_cost, b, first);
        if (ret->has_reader) {
            double rd = (double)s->reader_ns / 1e9;
            reader_s += rd;
            stat_add(&ret->reader_cost, rd, first);
        }
        double k = ret->samples_mode ? (double)s->samples : 1.0;
        samples += k;
        stat_add(&ret->ips, k / b, first);
        first = false;
    }
    double c = (double)ret->n_counted;
    ret->batch_cost.avg = batch_s / c;
    ret->reader_cost.avg = ret->has_reader ? reader_s / c : 0;
    ret->ips.avg = batch_s > 0 ? samples / batch_s : 0;
    ret->reader_ratio_pct = ret->batch_cost.avg > 0 ? 100 * ret->reader_cost.avg /
                                                          ret->batch_cost.avg
                                                    : 0;
    return 0;
}
