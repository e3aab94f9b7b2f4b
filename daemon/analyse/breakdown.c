/* SPDX-License-Identifier: MIT */
/*
 * Step-time breakdown, as torch-tb-profiler computes its overview (tb_plugin event_parser.py
 * StepParser and overall_parser.py, summarised in peers.md §1.3): steps from ProfilerStep#N
 * spans, stretched to cover the device work their runtime calls launched, tail steps with
 * truncated kernels dropped, then every instant of the steps given to the first category, in
 * priority order, that is busy then. The categories of a step therefore sum exactly to its
 * duration. Also the GPU utilisation of peers.md §1.5 (kernel busy time over the step window).
 * Intervals are half-open [start, end) in nanoseconds; every interval list below is kept sorted
 * and merged, so that union, intersection and difference are linear merges.
 */
#include "analyse_breakdown.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const analyse_bd_cat_names[ANALYSE_BD_COUNT] = {
    "kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other",
};

struct range {
    int64_t start, end;
};

struct rlist {
    struct range *v;
    size_t n, cap;
};

static int rl_push(struct rlist *l, int64_t start, int64_t end)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct range *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (struct range){ start, end };
    return 0;
}

static void rl_done(struct rlist *l)
{
    free(l->v);
    *l = (struct rlist){ 0 };
}

static int cmp_range(const void *pa, const void *pb)
{
    const struct range *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->end < b->end ? -1 : a->end > b->end;
}

/* Sorts and merges l in place (tb range_utils.merge_ranges; touching ranges merge too, which
 * changes no sum). */
static void rl_merge(struct rlist *l)
{
    if (l->n == 0)
        return;
    qsort(l->v, l->n, sizeof *l->v, cmp_range);
    size_t w = 0;
    for (size_t i = 1; i < l->n; i++) {
        if (l->v[i].start <= l->v[w].end) {
            if (l->v[i].end > l->v[w].end)
                l->v[w].end = l->v[i].end;
        } else {
            l->v[++w] = l->v[i];
        }
    }
    l->n = w + 1;
}

/* out = a ∩ b (both merged). */
static int rl_intersect(const struct rlist *a, const struct rlist *b, struct rlist *out)
{
    size_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        int64_t s = a->v[i].start > b->v[j].start ? a->v[i].start : b->v[j].start;
        int64_t e = a->v[i].end < b->v[j].end ? a->v[i].end : b->v[j].end;
        if (s < e && rl_push(out, s, e) < 0)
            return -ENOMEM;
        if (a->v[i].end < b->v[j].end)
            i++;
        else
            j++;
    }
    return 0;
}

/* out = a − b (both merged). */
static int rl_subtract(const struct rlist *a, const struct rlist *b, struct rlist *out)
{
    size_t j = 0;
    for (size_t i = 0; i < a->n; i++) {
        int64_t s = a->v[i].start, e = a->v[i].end;
        while (j < b->n && b->v[j].end <= s)
            j++;
        size_t k = j;
        while (s < e && k < b->n && b->v[k].start < e) {
            if (b->v[k].start > s && rl_push(out, s, b->v[k].start) < 0)
                return -ENOMEM;
            if (b->v[k].end > s)
                s = b->v[k].end;
            k++;
        }
        if (s < e && rl_push(out, s, e) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* |[s, e) ∩ l| for a merged l. */
static int64_t rl_covered(const struct rlist *l, int64_t s, int64_t e)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) { /* first range ending after s */
        size_t mid = lo + (hi - lo) / 2;
        if (l->v[mid].end <= s)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t sum = 0;
    for (size_t i = lo; i < l->n && l->v[i].start < e; i++) {
        int64_t a = l->v[i].start > s ? l->v[i].start : s;
        int64_t b = l->v[i].end < e ? l->v[i].end : e;
        if (a < b)
            sum += b - a;
    }
    return sum;
}

static bool is_device(enum analyse_role r)
{
    return r == ANALYSE_ROLE_KERNEL || r == ANALYSE_ROLE_MEMCPY || r == ANALYSE_ROLE_MEMSET;
}

static int cmp_i64p(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return a < b ? -1 : a > b;
}

static bool i64_in(const int64_t *v, size_t n, int64_t x)
{
    return n > 0 && bsearch(&x, v, n, sizeof *v, cmp_i64p) != NULL;
}

/* Index of spans, sorted by a key with the input order as tie-break. */
struct ix {
    int64_t key;
    size_t i;
};

static int cmp_ix(const void *pa, const void *pb)
{
    const struct ix *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The step number of "ProfilerStep#N" (torch trace.py: int(name.split('#')[1])); fallback if
 * there is none. */
static int64_t step_number(const struct analyse_span *sp, int64_t fallback)
{
    const char *hash = sp->name ? memchr(sp->name, '#', sp->name_len) : NULL;
    if (!hash)
        return fallback;
    size_t i = (size_t)(hash - sp->name) + 1;
    bool neg = i < sp->name_len && sp->name[i] == '-';
    if (neg)
        i++;
    int64_t v = 0;
    size_t digits = 0;
    while (i < sp->name_len && sp->name[i] >= '0' && sp->name[i] <= '9' && digits < 18) {
        v = v * 10 + (sp->name[i] - '0');
        i++;
        digits++;
    }
    return digits ? (neg ? -v : v) : fallback;
}

void analyse_breakdown_free(struct analyse_breakdown *bd)
{
    if (!bd)
        return;
    free(bd->steps);
    free(bd->gpus);
    free(bd);
}

/* The state of one analyse_breakdown_compute(), passed from step to step. */
struct work {
    const struct analyse_span *spans;
    size_t n;
    struct rlist role[ANALYSE_BD_COUNT - 1]; /* busy ranges per category, Other excluded */
    struct rlist cost[ANALYSE_BD_COUNT];     /* what each category got, in priority order */
    struct rlist slots, tmp, steps_union;
    struct rlist dcomm, dcomp, dovl;         /* device communication and other kernels, both */
    int64_t *comm_ext;                       /* external ids of host communication spans */
    size_t n_comm;
    struct ix *steps;                        /* the STEP spans, by start */
    size_t n_step_spans;
    int64_t cpu_min, cpu_max;                /* extent of the host spans (the implicit step) */
    struct ix *rt_by_corr;                   /* runtime spans by correlation */
    size_t n_rt;
    struct ix *runtimes;                     /* rt_by_corr slots by runtime start */
    int64_t *rt_dev_min, *rt_dev_max, *rt_dev_n; /* per runtime (rt_by_corr order) */
    bool *rt_inside;                         /* the runtime lies inside a step */
    size_t *dev_rt;                          /* per span: runtime slot + 1, 0 when none */
    int64_t *dev_min, *dev_max;              /* per step: extent of the device work it launched;
                                                INT64_MAX, INT64_MIN when none */
    bool matched;                            /* some step launched device work */
};

static void work_done(struct work *w)
{
    for (size_t c = 0; c < ANALYSE_BD_COUNT - 1; c++)
        rl_done(&w->role[c]);
    for (size_t c = 0; c < ANALYSE_BD_COUNT; c++)
        rl_done(&w->cost[c]);
    rl_done(&w->slots);
    rl_done(&w->tmp);
    rl_done(&w->steps_union);
    rl_done(&w->dcomm);
    rl_done(&w->dcomp);
    rl_done(&w->dovl);
    free(w->comm_ext);
    free(w->steps);
    free(w->runtimes);
    free(w->rt_by_corr);
    free(w->rt_dev_min);
    free(w->rt_dev_max);
    free(w->rt_dev_n);
    free(w->rt_inside);
    free(w->dev_rt);
    free(w->dev_min);
    free(w->dev_max);
}

/* Slot in w->rt_by_corr of the runtime with this correlation (the last one in input order, as a
 * later runtime replaces an earlier one in tb's corrid_to_runtime), or SIZE_MAX. */
static size_t runtime_of(const struct work *w, size_t n_rt, int64_t corr)
{
    size_t lo = 0, hi = n_rt;
    while (lo < hi) { /* first entry with key > corr */
        size_t mid = lo + (hi - lo) / 2;
        if (w->rt_by_corr[mid].key <= corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && w->rt_by_corr[lo - 1].key == corr)
        return lo - 1;
    return SIZE_MAX;
}

/* Communication kernels are recognised by the external id of their host op (tb _parse_step:
 * "if event.external_id in comm_nodes"); device events find their runtime by correlation. */
static void index_comm_and_runtimes(struct work *w)
{
    for (size_t i = 0; i < w->n; i++) {
        const struct analyse_span *sp = &w->spans[i];
        if (sp->role == ANALYSE_ROLE_COMMUNICATION && sp->external_id >= 0)
            w->comm_ext[w->n_comm++] = sp->external_id;
        if (sp->role == ANALYSE_ROLE_RUNTIME)
            w->rt_by_corr[w->n_rt++] = (struct ix){ sp->correlation, i };
    }
    qsort(w->comm_ext, w->n_comm, sizeof *w->comm_ext, cmp_i64p);
    qsort(w->rt_by_corr, w->n_rt, sizeof *w->rt_by_corr, cmp_ix);
}

/* The category whose busy ranges a span adds to, or -1. */
static int category_of(const struct work *w, const struct analyse_span *sp)
{
    switch (sp->role) {
    case ANALYSE_ROLE_KERNEL:
        return i64_in(w->comm_ext, w->n_comm, sp->external_id) ? ANALYSE_BD_COMMUNICATION
                                                               : ANALYSE_BD_KERNEL;
    case ANALYSE_ROLE_MEMCPY:
        return ANALYSE_BD_MEMCPY;
    case ANALYSE_ROLE_MEMSET:
        return ANALYSE_BD_MEMSET;
    case ANALYSE_ROLE_RUNTIME:
        return ANALYSE_BD_RUNTIME;
    case ANALYSE_ROLE_DATALOADER:
        return ANALYSE_BD_DATALOADER;
    case ANALYSE_ROLE_COMMUNICATION:
        return ANALYSE_BD_COMMUNICATION;
    case ANALYSE_ROLE_HOST_OP:
    case ANALYSE_ROLE_USER_ANNOTATION:
    case ANALYSE_ROLE_GPU_ANNOTATION: /* tb-plugin: UserAnnotation, whichever side */
    case ANALYSE_ROLE_FORWARD:
    case ANALYSE_ROLE_BACKWARD:
    case ANALYSE_ROLE_OPTIMIZER:
        return ANALYSE_BD_CPU_EXEC;
    case ANALYSE_ROLE_STEP:   /* the steps themselves */
    case ANALYSE_ROLE_PYTHON: /* tb counts cat "python" but not "python_function": neither here */
    case ANALYSE_ROLE_SCOPE:  /* spans the operators it groups: counting it would count them twice */
    case ANALYSE_ROLE_OTHER:
    case ANALYSE_ROLE_COUNT:
        break;
    }
    return -1;
}

/* HTA's communication kernel names (hta/common/types.py: ^nccl, ^hccl, .*ncclKernel.*). */
static bool comm_kernel_name(const char *s, size_t n)
{
    if (n >= 4 && (memcmp(s, "nccl", 4) == 0 || memcmp(s, "hccl", 4) == 0))
        return true;
    for (size_t i = 0; i + 10 <= n; i++)
        if (memcmp(s + i, "ncclKernel", 10) == 0)
            return true;
    return false;
}

/* Whether a span counts toward the implicit step of a trace without steps, which spans the host
 * operators (tb cpu_min_ts). */
static bool spans_implicit_step(enum analyse_role r)
{
    switch (r) {
    case ANALYSE_ROLE_HOST_OP:
    case ANALYSE_ROLE_STEP:
    case ANALYSE_ROLE_DATALOADER:
    case ANALYSE_ROLE_FORWARD:
    case ANALYSE_ROLE_BACKWARD:
    case ANALYSE_ROLE_OPTIMIZER:
    case ANALYSE_ROLE_COMMUNICATION:
        return true;
    default:
        return false;
    }
}

/* Step 1 of docs/ANALYSIS.md: busy ranges per category (merged later, in attribute()); also
 * collects the step spans and the host extent. */
static int busy_ranges(struct work *w)
{
    w->cpu_min = INT64_MAX;
    w->cpu_max = INT64_MIN;
    for (size_t i = 0; i < w->n; i++) {
        const struct analyse_span *sp = &w->spans[i];
        int64_t s = sp->ts_ns, e = sp->ts_ns + sp->dur_ns;
        if (sp->role == ANALYSE_ROLE_STEP)
            w->steps[w->n_step_spans++] = (struct ix){ sp->ts_ns, i };
        int c = category_of(w, sp);
        if (c >= 0 && rl_push(&w->role[c], s, e) < 0)
            return -ENOMEM;
        if (sp->role == ANALYSE_ROLE_KERNEL &&
            rl_push(c == ANALYSE_BD_COMMUNICATION || comm_kernel_name(sp->name, sp->name_len)
                        ? &w->dcomm
                        : &w->dcomp,
                    s, e) < 0)
            return -ENOMEM;
        if (spans_implicit_step(sp->role) && !is_device(sp->role)) {
            if (s < w->cpu_min)
                w->cpu_min = s;
            if (e > w->cpu_max)
                w->cpu_max = e;
        }
    }
    qsort(w->steps, w->n_step_spans, sizeof *w->steps, cmp_ix);
    return 0;
}

/* Step 2: the steps as the host ran them, by start; without step spans, one step 0 over the
 * host operators (none without host spans). Sets bd->steps and bd->n_steps. */
static int host_steps(const struct work *w, struct analyse_breakdown *bd)
{
    bool implicit = w->n_step_spans == 0;
    size_t n_all = implicit ? (w->cpu_min <= w->cpu_max ? 1 : 0) : w->n_step_spans;
    bd->steps = calloc(n_all ? n_all : 1, sizeof *bd->steps);
    if (!bd->steps)
        return -ENOMEM;
    for (size_t k = 0; k < n_all; k++) {
        struct analyse_bd_step *st = &bd->steps[k];
        if (implicit) {
            st->step = 0;
            st->host_start_ns = w->cpu_min;
            st->host_end_ns = w->cpu_max;
        } else {
            const struct analyse_span *sp = &w->spans[w->steps[k].i];
            st->step = step_number(sp, (int64_t)k);
            st->host_start_ns = sp->ts_ns;
            st->host_end_ns = sp->ts_ns + sp->dur_ns;
        }
        st->start_ns = st->host_start_ns;
        st->end_ns = st->host_end_ns;
    }
    bd->n_steps = n_all;
    return 0;
}

/* Step 3a: device events hang off the runtime call with the same correlation id; per runtime,
 * the extent and count of the device events it launched. */
static int link_devices(struct work *w)
{
    size_t n_rt = w->n_rt ? w->n_rt : 1;
    w->rt_dev_min = malloc(n_rt * sizeof *w->rt_dev_min);
    w->rt_dev_max = malloc(n_rt * sizeof *w->rt_dev_max);
    w->rt_dev_n = calloc(n_rt, sizeof *w->rt_dev_n);
    w->rt_inside = calloc(n_rt, sizeof *w->rt_inside);
    if (!w->rt_dev_min || !w->rt_dev_max || !w->rt_dev_n || !w->rt_inside)
        return -ENOMEM;
    for (size_t k = 0; k < w->n_rt; k++) {
        w->rt_dev_min[k] = INT64_MAX;
        w->rt_dev_max[k] = INT64_MIN;
    }
    for (size_t i = 0; i < w->n; i++) {
        const struct analyse_span *sp = &w->spans[i];
        if (!is_device(sp->role))
            continue;
        if (sp->correlation < 0)
            continue;
        size_t k = runtime_of(w, w->n_rt, sp->correlation);
        if (k == SIZE_MAX)
            continue;
        w->dev_rt[i] = k + 1;
        if (sp->ts_ns < w->rt_dev_min[k])
            w->rt_dev_min[k] = sp->ts_ns;
        if (sp->ts_ns + sp->dur_ns > w->rt_dev_max[k])
            w->rt_dev_max[k] = sp->ts_ns + sp->dur_ns;
        w->rt_dev_n[k]++;
    }
    return 0;
}

/* Step 3b (tb _find_device_steps): a two-way merge of runtimes (by start) against host steps;
 * a runtime lying inside a step gives it its device events. Sets w->dev_min/dev_max per step,
 * steps' n_device, and w->matched when some step launched device work. */
static int device_extents(struct work *w, struct analyse_breakdown *bd)
{
    size_t n_all = bd->n_steps;
    size_t n_runtimes = 0;
    for (size_t k = 0; k < w->n_rt; k++) {
        /* Only the runtime a correlation resolves to carries device events; the others still
         * take part in the walk, with none. */
        w->runtimes[n_runtimes++] = (struct ix){ w->spans[w->rt_by_corr[k].i].ts_ns, k };
    }
    qsort(w->runtimes, n_runtimes, sizeof *w->runtimes, cmp_ix);
    w->dev_min = malloc((n_all ? n_all : 1) * sizeof *w->dev_min);
    w->dev_max = malloc((n_all ? n_all : 1) * sizeof *w->dev_max);
    if (!w->dev_min || !w->dev_max)
        return -ENOMEM;
    size_t is = 0, ir = 0;
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    while (is < n_all && ir < n_runtimes) {
        struct analyse_bd_step *st = &bd->steps[is];
        size_t k = w->runtimes[ir].i;
        const struct analyse_span *rt = &w->spans[w->rt_by_corr[k].i];
        int64_t rs = rt->ts_ns, re = rt->ts_ns + rt->dur_ns;
        if (rs < st->host_start_ns) {
            ir++;
        } else if (re <= st->host_end_ns) {
            /* A duplicate correlation's earlier runtime carries no devices (see runtime_of). */
            bool owner = runtime_of(w, w->n_rt, rt->correlation) == k;
            if (owner && w->rt_dev_n[k] > 0) {
                if (w->rt_dev_min[k] < mn)
                    mn = w->rt_dev_min[k];
                if (w->rt_dev_max[k] > mx)
                    mx = w->rt_dev_max[k];
                st->n_device += w->rt_dev_n[k];
                w->rt_inside[k] = true;
                w->matched = true;
            }
            ir++;
        } else if (rs < st->host_end_ns) {
            ir++;
        } else {
            w->dev_min[is] = mn;
            w->dev_max[is] = mx;
            is++;
            mn = INT64_MAX;
            mx = INT64_MIN;
        }
    }
    for (; is < n_all; is++) {
        w->dev_min[is] = mn;
        w->dev_max[is] = mx;
        mn = INT64_MAX;
        mx = INT64_MIN;
    }
    return 0;
}

/* Step 3c: stretch the steps over their device work. tb: prev_step_end_time starts at step 0's
 * start, pushed to the end of any device event not launched inside a step that ends before step
 * 0's first device event. Only when some step launched device work. */
static void stretch_steps(const struct work *w, struct analyse_breakdown *bd)
{
    int64_t prev = bd->steps[0].host_start_ns;
    if (w->dev_min[0] != INT64_MAX) {
        for (size_t i = 0; i < w->n; i++) {
            const struct analyse_span *sp = &w->spans[i];
            if (!is_device(sp->role))
                continue;
            if (w->dev_rt[i] && w->rt_inside[w->dev_rt[i] - 1])
                continue;
            int64_t e = sp->ts_ns + sp->dur_ns;
            if (e < w->dev_min[0] && e > prev)
                prev = e;
        }
    }
    for (size_t k = 0; k < bd->n_steps; k++) {
        struct analyse_bd_step *st = &bd->steps[k];
        int64_t s = prev > st->host_start_ns ? prev : st->host_start_ns;
        int64_t e = st->host_end_ns;
        if (w->dev_min[k] == INT64_MAX) {
            if (s > e)
                e = s;
        } else {
            if (w->dev_max[k] > e)
                e = w->dev_max[k];
            if (e < s)
                e = s;
        }
        st->start_ns = s;
        st->end_ns = e;
        prev = e;
    }
    bd->device_stretched = true;
}

/* Step 4: drop the steps after the last one that launched device work, and that one too if it
 * launched under 80 % of what the step before it did. Sets n_dropped. */
static void trim_tail(struct analyse_breakdown *bd)
{
    size_t n_all = bd->n_steps;
    if (n_all <= 1)
        return;
    size_t last = n_all;
    while (last > 0 && bd->steps[last - 1].n_device == 0)
        last--;
    if (last == 0)
        return;
    size_t keep = last;
    size_t li = last - 1;
    if (li > 0 && (double)bd->steps[li - 1].n_device * 0.8 > (double)bd->steps[li].n_device)
        keep = li;
    bd->n_dropped = n_all - keep;
    bd->n_steps = keep;
}

/* Step 5: priority attribution (tb OverallParser.Statistics.create_from_range), except that
 * every category is intersected with the remaining slots: tb skips the intersection whenever
 * the slots run empty and then restarts from all steps, which can count an instant twice. What
 * no category takes is Other. */
static int attribute(struct work *w, const struct analyse_breakdown *bd)
{
    for (size_t c = 0; c < ANALYSE_BD_COUNT - 1; c++)
        rl_merge(&w->role[c]);
    for (size_t k = 0; k < bd->n_steps; k++)
        if (rl_push(&w->steps_union, bd->steps[k].start_ns, bd->steps[k].end_ns) < 0)
            return -ENOMEM;
    rl_merge(&w->steps_union);
    for (size_t k = 0; k < w->steps_union.n; k++)
        if (rl_push(&w->slots, w->steps_union.v[k].start, w->steps_union.v[k].end) < 0)
            return -ENOMEM;
    for (size_t c = 0; c < ANALYSE_BD_COUNT - 1; c++) {
        if (rl_intersect(&w->slots, &w->role[c], &w->cost[c]) < 0)
            return -ENOMEM;
        w->tmp.n = 0;
        if (rl_subtract(&w->slots, &w->cost[c], &w->tmp) < 0)
            return -ENOMEM;
        struct rlist t = w->slots;
        w->slots = w->tmp;
        w->tmp = t;
    }
    struct rlist t_other = w->cost[ANALYSE_BD_OTHER];
    w->cost[ANALYSE_BD_OTHER] = w->slots;
    w->slots = t_other;
    rl_merge(&w->dcomm);
    rl_merge(&w->dcomp);
    return rl_intersect(&w->dcomm, &w->dcomp, &w->dovl);
}

/* Each step's share of every category, the averages over steps and the window. */
static void step_costs(const struct work *w, struct analyse_breakdown *bd)
{
    for (size_t k = 0; k < bd->n_steps; k++) {
        struct analyse_bd_step *st = &bd->steps[k];
        for (size_t c = 0; c < ANALYSE_BD_COUNT; c++) {
            st->cost_ns[c] = rl_covered(&w->cost[c], st->start_ns, st->end_ns);
            bd->avg_ns[c] += (double)st->cost_ns[c];
        }
        st->comm_ns = rl_covered(&w->dcomm, st->start_ns, st->end_ns);
        st->comp_ns = rl_covered(&w->dcomp, st->start_ns, st->end_ns);
        st->overlap_ns = rl_covered(&w->dovl, st->start_ns, st->end_ns);
        bd->avg_total_ns += (double)(st->end_ns - st->start_ns);
    }
    if (bd->n_steps > 0) {
        for (size_t c = 0; c < ANALYSE_BD_COUNT; c++)
            bd->avg_ns[c] /= (double)bd->n_steps;
        bd->avg_total_ns /= (double)bd->n_steps;
        bd->window_start_ns = bd->steps[0].start_ns;
        bd->window_end_ns = bd->steps[bd->n_steps - 1].end_ns;
    }
}

/* Step 6: per device pid, kernel busy time over the window of the steps. */
static int gpu_utilization(const struct analyse_span *spans, size_t n, struct analyse_breakdown *bd)
{
    if (bd->n_steps == 0)
        return 0;
    size_t nk = 0;
    for (size_t i = 0; i < n; i++)
        nk += spans[i].role == ANALYSE_ROLE_KERNEL;
    struct ix *k = malloc((nk ? nk : 1) * sizeof *k);
    if (!k)
        return -ENOMEM;
    nk = 0;
    for (size_t i = 0; i < n; i++)
        if (spans[i].role == ANALYSE_ROLE_KERNEL)
            k[nk++] = (struct ix){ spans[i].pid, i };
    qsort(k, nk, sizeof *k, cmp_ix);
    size_t n_gpus = 0;
    for (size_t a = 0; a < nk; a++)
        n_gpus += a == 0 || k[a].key != k[a - 1].key;
    bd->gpus = calloc(n_gpus ? n_gpus : 1, sizeof *bd->gpus);
    if (!bd->gpus) {
        free(k);
        return -ENOMEM;
    }
    int64_t window = bd->window_end_ns - bd->window_start_ns;
    struct rlist busy = { 0 };
    for (size_t a = 0; a < nk;) {
        size_t b = a;
        busy.n = 0;
        for (; b < nk && k[b].key == k[a].key; b++) {
            const struct analyse_span *sp = &spans[k[b].i];
            if (rl_push(&busy, sp->ts_ns, sp->ts_ns + sp->dur_ns) < 0) {
                rl_done(&busy);
                free(k);
                return -ENOMEM;
            }
        }
        rl_merge(&busy);
        struct analyse_bd_gpu *g = &bd->gpus[bd->n_gpus++];
        g->pid = k[a].key;
        g->busy_ns = rl_covered(&busy, bd->window_start_ns, bd->window_end_ns);
        g->utilization = window > 0 ? (double)g->busy_ns / (double)window : 0.0;
        a = b;
    }
    rl_done(&busy);
    free(k);
    return 0;
}

int analyse_breakdown_compute(const struct analyse_span *spans, size_t n, struct analyse_breakdown **ret_bd)
{
    int r = -ENOMEM;
    struct work w = { .spans = spans, .n = n };
    struct analyse_breakdown *bd = calloc(1, sizeof *bd);
    size_t cap = n ? n : 1;
    w.comm_ext = malloc(cap * sizeof *w.comm_ext);
    w.steps = malloc(cap * sizeof *w.steps);
    w.runtimes = malloc(cap * sizeof *w.runtimes);
    w.rt_by_corr = malloc(cap * sizeof *w.rt_by_corr);
    w.dev_rt = calloc(cap, sizeof *w.dev_rt);
    if (!bd || !w.comm_ext || !w.steps || !w.runtimes || !w.rt_by_corr || !w.dev_rt)
        goto fail;

    index_comm_and_runtimes(&w);
    if ((r = busy_ranges(&w)) < 0 || (r = host_steps(&w, bd)) < 0 || (r = link_devices(&w)) < 0 ||
        (r = device_extents(&w, bd)) < 0)
        goto fail;
    if (w.matched && bd->n_steps > 0) {
        stretch_steps(&w, bd);
        trim_tail(bd);
    }
    if ((r = attribute(&w, bd)) < 0)
        goto fail;
    step_costs(&w, bd);
    if ((r = gpu_utilization(spans, n, bd)) < 0)
        goto fail;
    *ret_bd = bd;
    bd = NULL;
    r = 0;
fail:
    work_done(&w);
    analyse_breakdown_free(bd);
    return r;
}
