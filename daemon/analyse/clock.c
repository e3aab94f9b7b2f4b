/* SPDX-License-Identifier: MIT */
/* clock: the offsets of a job's hosts' clocks against the reference host (analyse_clock.h). */
#include "analyse_clock.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const reason_text[ANALYSE_CLOCK_REASON_COUNT] = {
    [ANALYSE_CLOCK_REFERENCE] = "reference",
    [ANALYSE_CLOCK_ALIGNED] = "aligned",
    [ANALYSE_CLOCK_NO_STEPS] = "no steps",
    [ANALYSE_CLOCK_NO_SHARED] = "no step in common with the reference",
    [ANALYSE_CLOCK_FEW_STEPS] = "too few steps in common with the reference",
    [ANALYSE_CLOCK_NOT_LOCKSTEP] = "not in lockstep with the reference: spread above the threshold",
};

const char *analyse_clock_reason_text(enum analyse_clock_reason reason)
{
    return (unsigned)reason < ANALYSE_CLOCK_REASON_COUNT ? reason_text[reason] : "unknown";
}

/* One host's end of one step: the median of its ranks' ends. */
struct step_end {
    int64_t step;
    int64_t end_ns;
};

/* A host's steps, reduced: ends[n] by step ascending, one per step number. */
struct host_ends {
    struct step_end *ends;
    size_t n;
    size_t ranks;
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_step_end(const void *a, const void *b)
{
    const struct step_end *x = a, *y = b;
    if (x->step != y->step)
        return (x->step > y->step) - (x->step < y->step);
    return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

/* The median of sorted v[0..n), n > 0: the middle one, or the two middle ones' mean rounded
 * toward zero (exact in integers; no overflow: half the gap is added to the lower). */
static int64_t median_sorted(const int64_t *v, size_t n)
{
    if (n % 2)
        return v[n / 2];
    int64_t lo = v[n / 2 - 1], hi = v[n / 2];
    /* hi >= lo; the gap may exceed INT64_MAX only for values no clock gives: halve as unsigned */
    uint64_t gap = (uint64_t)hi - (uint64_t)lo;
    return (int64_t)((uint64_t)lo + gap / 2);
}

/* Reduces h's rows into *ret: per step number the median end over its rows. tmp holds h->n. */
static int host_reduce(const struct analyse_clock_host *h, struct step_end *tmp, int64_t *vals,
                       int64_t *ranks, struct host_ends *ret)
{
    size_t m = 0, nr = 0;
    for (size_t i = 0; i < h->n; i++) {
        const struct analyse_clock_step *s = &h->steps[i];
        if (s->end_ns < s->begin_ns)
            continue;
        tmp[m++] = (struct step_end){.step = s->step, .end_ns = s->end_ns};
        ranks[nr++] = s->rank;
    }
    qsort(tmp, m, sizeof *tmp, cmp_step_end);
    qsort(ranks, nr, sizeof *ranks, cmp_i64);
    ret->ranks = 0;
    for (size_t i = 0; i < nr; i++)
        ret->ranks += i == 0 || ranks[i] != ranks[i - 1];
    ret->n = 0;
    ret->ends = malloc((m ? m : 1) * sizeof *ret->ends);
    if (!ret->ends)
        return -ENOMEM;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && tmp[j].step == tmp[i].step) {
            vals[j - i] = tmp[j].end_ns; /* sorted by end within the step */
            j++;
        }
        ret->ends[ret->n++] = (struct step_end){.step = tmp[i].step,
                                                .end_ns = median_sorted(vals, j - i)};
        i = j;
    }
    return 0;
}

/* The median step time (end - begin) of h's valid rows; 0 without any. vals holds h->n. */
static int64_t host_step_median(const struct analyse_clock_host *h, int64_t *vals)
{
    size_t m = 0;
    for (size_t i = 0; i < h->n; i++) {
        const struct analyse_clock_step *s = &h->steps[i];
        if (s->end_ns < s->begin_ns)
            continue;
        uint64_t d = (uint64_t)s->end_ns - (uint64_t)s->begin_ns;
        vals[m++] = d > INT64_MAX ? INT64_MAX : (int64_t)d;
    }
    if (m == 0)
        return 0;
    qsort(vals, m, sizeof *vals, cmp_i64);
    return median_sorted(vals, m);
}

/* a - b, or false when it does not fit in int64. */
static bool sub_i64(int64_t a, int64_t b, int64_t *ret)
{
    return !__builtin_sub_overflow(a, b, ret);
}

/* Compares host h against the reference r into *row. d holds min(h.n, r.n) values. */
static void host_compare(const struct host_ends *h, const struct host_ends *r, int64_t *d,
                         const struct analyse_clock *c, struct analyse_clock_row *row)
{
    size_t n = 0;
    for (size_t i = 0, k = 0; i < h->n && k < r->n;) {
        if (h->ends[i].step < r->ends[k].step) {
            i++;
        } else if (h->ends[i].step > r->ends[k].step) {
            k++;
        } else {
            int64_t v;
            if (sub_i64(h->ends[i].end_ns, r->ends[k].end_ns, &v))
                d[n++] = v;
            i++;
            k++;
        }
    }
    row->steps = n;
    if (h->n == 0) {
        row->reason = ANALYSE_CLOCK_NO_STEPS;
        return;
    }
    if (n == 0) {
        row->reason = ANALYSE_CLOCK_NO_SHARED;
        return;
    }
    qsort(d, n, sizeof *d, cmp_i64);
    int64_t est = median_sorted(d, n);
    for (size_t i = 0; i < n; i++) {
        /* |d - est|, saturated: a deviation past INT64_MAX is simply huge */
        int64_t v;
        d[i] = sub_i64(d[i], est, &v) ? (v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v)
                                      : INT64_MAX;
    }
    qsort(d, n, sizeof *d, cmp_i64);
    row->estimate_ns = est;
    row->spread_ns = median_sorted(d, n);
    if (n < c->min_steps) {
        row->reason = ANALYSE_CLOCK_FEW_STEPS;
    } else if (row->spread_ns > c->max_spread_ns) {
        row->reason = ANALYSE_CLOCK_NOT_LOCKSTEP;
    } else {
        row->reason = ANALYSE_CLOCK_ALIGNED;
        row->aligned = true;
        row->offset_ns = est;
    }
}

/* Whether a host of n steps named name makes a better reference than one of n_r named name_r:
 * min_steps or more beats fewer; among hosts with enough, the lowest name (stable while hosts
 * progress: it does not change with which host listed a step last); among hosts with too few,
 * the most steps, then the lowest name. */
static bool better_reference(size_t n, const char *name, size_t n_r, const char *name_r,
                             size_t min_steps)
{
    bool enough = n >= min_steps, r_enough = n_r >= min_steps;
    if (enough != r_enough)
        return enough;
    if (!enough && n != n_r)
        return n > n_r;
    return strcmp(name, name_r) < 0;
}

int analyse_clock_compute(const struct analyse_clock_host *hosts, size_t n,
                          const struct analyse_clock_params *params, struct analyse_clock **ret)
{
    struct analyse_clock_params p = params ? *params
                                           : (struct analyse_clock_params){
                                                 .max_spread_ratio = ANALYSE_CLOCK_MAX_SPREAD_RATIO};
    if (!ret || (!hosts && n > 0) || isnan(p.max_spread_ratio) || p.max_spread_ratio < 0)
        return -EINVAL;
    size_t most = 0;
    for (size_t i = 0; i < n; i++) {
        if (!hosts[i].name || (!hosts[i].steps && hosts[i].n > 0))
            return -EINVAL;
        most = hosts[i].n > most ? hosts[i].n : most;
    }
    int err = -ENOMEM;
    struct analyse_clock *c = calloc(1, sizeof *c);
    struct host_ends *he = calloc(n ? n : 1, sizeof *he);
    struct step_end *tmp = malloc((most ? most : 1) * sizeof *tmp);
    int64_t *vals = malloc((most ? most : 1) * sizeof *vals);
    int64_t *aux = malloc((most ? most : 1) * sizeof *aux);
    if (!c || !he || !tmp || !vals || !aux ||
        !(c->hosts = calloc(n ? n : 1, sizeof *c->hosts)))
        goto fail;
    c->n_hosts = n;
    c->reference = -1;
    c->min_steps = p.min_steps ? p.min_steps : ANALYSE_CLOCK_MIN_STEPS;
    for (size_t i = 0; i < n; i++) {
        if (host_reduce(&hosts[i], tmp, vals, aux, &he[i]) < 0)
            goto fail;
        c->hosts[i] = (struct analyse_clock_row){.name = hosts[i].name, .ranks = he[i].ranks,
                                                 .steps = he[i].n};
    }
    /* The reference: the lowest name among the hosts with min_steps distinct steps; without
     * such a host, the most steps (then the lowest name). */
    for (size_t i = 0; i < n; i++) {
        ptrdiff_t r = c->reference;
        if (he[i].n > 0 && (r < 0 || better_reference(he[i].n, hosts[i].name, he[r].n,
                                                      hosts[r].name, c->min_steps)))
            c->reference = (ptrdiff_t)i;
    }
    if (c->reference >= 0) {
        size_t r = (size_t)c->reference;
        c->ref_step_ns = host_step_median(&hosts[r], vals);
        double t = p.max_spread_ratio * (double)c->ref_step_ns;
        c->max_spread_ns = t >= 9.2e18 ? INT64_MAX : (int64_t)t;
    }
    for (size_t i = 0; i < n; i++) {
        struct analyse_clock_row *row = &c->hosts[i];
        if (c->reference < 0) {
            row->reason = ANALYSE_CLOCK_NO_STEPS;
        } else if (i == (size_t)c->reference) {
            row->reason = ANALYSE_CLOCK_REFERENCE;
            row->aligned = true;
        } else {
            host_compare(&he[i], &he[c->reference], vals, c, row);
        }
    }
    err = 0;
    *ret = c;
    c = NULL;
fail:
    for (size_t i = 0; he && i < n; i++)
        free(he[i].ends);
    free(he);
    free(tmp);
    free(vals);
    free(aux);
    analyse_clock_free(c);
    return err;
}

const struct analyse_clock_row *analyse_clock_find(const struct analyse_clock *c, const char *name)
{
    for (size_t i = 0; c && name && i < c->n_hosts; i++)
        if (strcmp(c->hosts[i].name, name) == 0)
            return &c->hosts[i];
    return NULL;
}

void analyse_clock_free(struct analyse_clock *c)
{
    if (!c)
        return;
    free(c->hosts);
    free(c);
}
