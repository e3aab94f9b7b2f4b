/* SPDX-License-Identifier: MIT */
/*
 * The operators and kernels of a range of steps (analyse_stepops.h): which spans HTA counts in
 * a set of iterations, each made a part of its own (calls 1, its duration, its self time) for
 * analyse_ops_from_parts() to group by name. tests/unit/test_analyse_stepops.c checks the rule
 * on hand-made spans; tests/integ/test_diff.py checks /api/v1/diff's step ranges against HTA's
 * own TraceDiff and torch's key_averages() on real traces.
 */
#include "analyse_stepops.h"
#include "analyse_summary.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A step in range: [start, end). */
struct step {
    int64_t start, end;
    int64_t reach; /* the latest end of this step and those before it (steps may overlap) */
};

/* A host span's thread, for numbering the threads densely. */
struct thr {
    int64_t pid, tid;
    size_t k; /* the span's index among the host spans in range */
};

static int cmp_step(const void *a, const void *b)
{
    const struct step *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_thr(const void *a, const void *b)
{
    const struct thr *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->tid > y->tid) - (x->tid < y->tid);
}

static bool is_host(enum analyse_role r)
{
    return (ANALYSE_ROLES_HOST & ANALYSE_ROLE_BIT(r)) != 0;
}

/* Whether ts lies in one of steps[0, n) (sorted by start, reach[] the running maximum of end):
 * some step starting at or before ts ends after it. */
static bool in_steps(const struct step *steps, size_t n, int64_t ts)
{
    size_t lo = 0, hi = n; /* the first step starting after ts */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (steps[mid].start <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && ts < steps[lo - 1].reach;
}

size_t analyse_stepops_bytes(size_t n)
{
    /* per span at most: its part (ops or kernels), a walk span, an aggregate, a thread entry, a
     * correlation, a step, and the walk's scratch (a span and an index) */
    return 4096 + n * (sizeof(struct analyse_op_part) + 2 * sizeof(struct analyse_op_span) +
                       sizeof(struct analyse_op_agg) + sizeof(struct thr) + sizeof(int64_t) +
                       sizeof(struct step) + sizeof(size_t));
}

void analyse_stepops_free(struct analyse_stepops *s)
{
    if (!s)
        return;
    free(s->ops);
    free(s->kernels);
    free(s);
}

int analyse_stepops_compute(const struct analyse_span *v, size_t n, int64_t first,
                            int64_t last, struct analyse_stepops **ret)
{
    *ret = NULL;
    int r = -ENOMEM;
    struct analyse_stepops *s = calloc(1, sizeof *s);
    struct step *steps = malloc((n ? n : 1) * sizeof *steps);
    int64_t *corr = malloc((n ? n : 1) * sizeof *corr);
    size_t *host = malloc((n ? n : 1) * sizeof *host); /* indexes into v of host spans in range */
    struct analyse_op_span *walk = NULL;
    struct analyse_op_agg *agg = NULL;
    struct thr *th = NULL;
    struct analyse_self self = {0};
    struct analyse_self_scratch sc = {0};
    if (!s || !steps || !corr || !host)
        goto out;
    s->first_step = s->last_step = -1;
    for (size_t i = 0; i < n; i++) {
        if (v[i].role != ANALYSE_ROLE_STEP)
            continue;
        int64_t num = analyse_sum_step_number(v[i].name, v[i].name_len);
        if (num < 0 || num < first || num > last)
            continue;
        steps[s->n_steps++] = (struct step){v[i].ts_ns, v[i].ts_ns + v[i].dur_ns, 0};
        if (s->first_step < 0 || num < s->first_step)
            s->first_step = num;
        if (num > s->last_step)
            s->last_step = num;
    }
    if (s->n_steps == 0) {
        r = -ENOENT;
        goto out;
    }
    qsort(steps, s->n_steps, sizeof *steps, cmp_step);
    for (size_t i = 0; i < s->n_steps; i++)
        steps[i].reach = i && steps[i - 1].reach > steps[i].end ? steps[i - 1].reach : steps[i].end;

    /* The host spans in range, and the correlations of the runtimes among them. */
    size_t n_host = 0, n_corr = 0, n_dev = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].role == ANALYSE_ROLE_KERNEL) {
            n_dev++;
            continue;
        }
        if (!is_host(v[i].role) || !in_steps(steps, s->n_steps, v[i].ts_ns))
            continue;
        host[n_host++] = i;
        if (v[i].role == ANALYSE_ROLE_RUNTIME && v[i].correlation >= 0)
            corr[n_corr++] = v[i].correlation;
    }
    qsort(corr, n_corr, sizeof *corr, cmp_i64);

    /* Kernels launched in range. */
    s->kernels = malloc((n_dev ? n_dev : 1) * sizeof *s->kernels);
    if (!s->kernels)
        goto out;
    for (size_t i = 0; i < n && n_corr > 0; i++) {
        const struct analyse_span *sp = &v[i];
        if (sp->role != ANALYSE_ROLE_KERNEL || sp->correlation < 0 ||
            !bsearch(&sp->correlation, corr, n_corr, sizeof *corr, cmp_i64))
            continue;
        s->kernels[s->n_kernels++] = (struct analyse_op_part){
            .name = sp->name, .name_len = sp->name_len, .role = sp->role, .calls = 1,
            .total_ns = sp->dur_ns, .self_ns = sp->dur_ns, .min_ns = sp->dur_ns,
            .max_ns = sp->dur_ns};
    }

    /* Self times: every host span its own aggregate (op = its index), threads numbered by
     * (pid, tid). */
    walk = malloc((n_host ? n_host : 1) * sizeof *walk);
    agg = calloc(n_host ? n_host : 1, sizeof *agg);
    th = malloc((n_host ? n_host : 1) * sizeof *th);
    s->ops = malloc((n_host ? n_host : 1) * sizeof *s->ops);
    if (!walk || !agg || !th || !s->ops)
        goto out;
    for (size_t k = 0; k < n_host; k++)
        th[k] = (struct thr){v[host[k]].pid, v[host[k]].tid, k};
    qsort(th, n_host, sizeof *th, cmp_thr);
    size_t n_threads = 0;
    for (size_t k = 0; k < n_host; k++) {
        if (k > 0 && cmp_thr(&th[k - 1], &th[k]) != 0)
            n_threads++;
        const struct analyse_span *sp = &v[host[th[k].k]];
        walk[th[k].k] = (struct analyse_op_span){
            .ts_ns = sp->ts_ns, .end_ns = sp->ts_ns + sp->dur_ns, .op = (uint32_t)th[k].k,
            .thread = (uint32_t)n_threads, .order = (uint32_t)th[k].k, .role = (uint8_t)sp->role};
    }
    if (n_host > 0)
        n_threads++;
    if (n_host > UINT32_MAX - 1 || analyse_self_reserve(&self, n_threads) < 0)
        goto out;
    struct analyse_op_agg other = {0};
    size_t n_nest = analyse_self_order(&sc, walk, n_host, n_threads);
    analyse_self_walk(&self, n_threads, walk, n_nest, n_host, agg, &other, &s->self_dropped);
    for (size_t k = 0; k < n_host; k++) {
        const struct analyse_span *sp = &v[host[k]];
        s->ops[k] = (struct analyse_op_part){
            .name = sp->name, .name_len = sp->name_len, .role = sp->role, .calls = agg[k].calls,
            .total_ns = agg[k].total_ns, .self_ns = agg[k].self_ns, .min_ns = agg[k].min_ns,
            .max_ns = agg[k].max_ns};
    }
    s->n_ops = n_host;
    r = 0;
out:
    free(steps);
    free(corr);
    free(host);
    free(walk);
    free(agg);
    free(th);
    analyse_self_done(&self);
    analyse_self_scratch_done(&sc);
    if (r < 0)
        analyse_stepops_free(s);
    else
        *ret = s;
    return r;
}
