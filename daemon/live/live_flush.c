/* SPDX-License-Identifier: MIT */
/*
 * live_flush: live_flush(), a rank's batch processed at once. The spans that nest (host roles)
 * are grouped by thread and put in torch's walk order (start ascending, end descending,
 * arrival), then walked per thread with a walk state that survives across batches, for self
 * time (analyse_ops.h); every span is folded into the rank's operator aggregates and
 * those the step trace reads are filed under their steps (live_steps.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../analyse/analyse_ops.h"
#include "../analyse/analyse_roles.h"
#include "../../lib/num.h"
#include "live_int.h"

/* Batch order: by thread, then torch's nesting order: start ascending, end descending, arrival
 * (of two equal intervals the earlier-fed one is the parent). */
static int cmp_batch(const void *a, const void *b)
{
    const struct live_span *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns > y->end_ns ? -1 : 1;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return 0;
}

/* Sorts v[0, n), the nesting spans of rk's batch, as qsort with cmp_batch would: grouped by thread
 * (a counting pass), then each thread's run sorted unless it already is, which is the usual case
 * (tracers and the importer send a thread's spans in that order; only threads interleave).
 * cmp_batch is a total order (order is unique in a batch), so the result is the same. */
static void sort_batch(struct live *lv, const struct live_rank *rk, struct live_span *v, size_t n)
{
    size_t nt = rk->threads.n + 1; /* the last slot is the shared thread, LIVE_THREADS_MAX */
    if (n < 2)
        return;
    if (live__grow((void **)&lv->thread_at, &lv->cap_thread_at, nt + 1,
                   sizeof *lv->thread_at) < 0 ||
        live__grow((void **)&lv->by_thread, &lv->cap_by_thread, n, sizeof *v) < 0) {
        qsort(v, n, sizeof *v, cmp_batch);
        return;
    }
    size_t *at = lv->thread_at;
    memset(at, 0, (nt + 1) * sizeof *at);
    for (size_t i = 0; i < n; i++)
        at[(v[i].thread < nt - 1 ? v[i].thread : nt - 1) + 1]++;
    for (size_t k = 1; k <= nt; k++)
        at[k] += at[k - 1];
    struct live_span *w = lv->by_thread;
    for (size_t i = 0; i < n; i++)
        w[at[v[i].thread < nt - 1 ? v[i].thread : nt - 1]++] = v[i];
    /* at[k] is now the end of slot k's run. */
    for (size_t k = 0, a = 0; k < nt; a = at[k++]) {
        for (size_t i = a + 1; i < at[k]; i++) {
            if (cmp_batch(&w[i - 1], &w[i]) > 0) {
                qsort(w + a, at[k] - a, sizeof *w, cmp_batch);
                break;
            }
        }
    }
    memcpy(v, w, n * sizeof *v);
}

static bool role_nests(unsigned role)
{
    return (ANALYSE_ROLES_HOST & ANALYSE_ROLE_BIT(role)) != 0;
}

/* The roles analyse_steptrace_points() looks at. */
static bool role_for_steps(unsigned role)
{
    switch ((enum analyse_role)role) {
    case ANALYSE_ROLE_HOST_OP:
    case ANALYSE_ROLE_KERNEL:
    case ANALYSE_ROLE_FORWARD:
    case ANALYSE_ROLE_BACKWARD:
    case ANALYSE_ROLE_OPTIMIZER:
    case ANALYSE_ROLE_COMMUNICATION:
    case ANALYSE_ROLE_OTHER:
    case ANALYSE_ROLE_DATALOADER:
    case ANALYSE_ROLE_STEP:
        return true;
    default:
        return false;
    }
}

static void agg_add(struct live_agg *a, int64_t dur, int64_t self)
{
    if (a->calls == 0 || dur < a->min_ns)
        a->min_ns = dur;
    if (a->calls == 0 || dur > a->max_ns)
        a->max_ns = dur;
    a->calls++;
    a->total_ns = num_sat_add(a->total_ns, dur);
    a->self_ns = num_sat_add(a->self_ns, self);
}

static struct live_agg *agg_of(struct live_rank *rk, uint32_t op)
{
    return op == LIVE_OP_OTHER ? &rk->other : &rk->agg[op];
}

/* Pushes o on a bounded stack (past LIVE_STACK_MAX its older half goes, counted). */
static void stack_push(struct live_open **v, size_t *n, size_t *cap, struct live_open o,
                       struct live_counters *c)
{
    if (*n >= LIVE_STACK_MAX) {
        size_t drop = LIVE_STACK_MAX / 2;
        memmove(*v, *v + drop, (*n - drop) * sizeof **v);
        *n -= drop;
        c->stack_dropped += (int64_t)drop;
    }
    if (live__grow((void **)v, cap, *n + 1, sizeof **v) == 0)
        (*v)[(*n)++] = o;
    else
        c->stack_dropped++;
}

/* Torch's walk, forward: sp comes after every span walked on t so far. Its parent is the top of
 * the spine once the spans that cannot contain it are popped; the parent's self time loses sp's
 * duration. A span without a parent waits in `open` for a container that arrives later. */
static void nest_forward(struct live_rank *rk, struct live_thread *t, const struct live_span *sp)
{
    int64_t dur = sp->end_ns - sp->ts_ns;
    while (t->n_spine > 0) {
        const struct live_open *p = &t->spine[t->n_spine - 1];
        /* torch: "if event.start >= parent.end or event.end > parent.end: pop". */
        if (sp->ts_ns >= p->end_ns || sp->end_ns > p->end_ns)
            t->n_spine--;
        else
            break;
    }
    if (t->n_spine > 0)
        agg_of(rk, t->spine[t->n_spine - 1].op)->self_ns -= dur;
    else
        stack_push(&t->open, &t->n, &t->cap, (struct live_open){sp->ts_ns, sp->end_ns, sp->op}, &rk->c);
    stack_push(&t->spine, &t->n_spine, &t->cap_spine, (struct live_open){sp->ts_ns, sp->end_ns, sp->op},
               &rk->c);
    agg_add(agg_of(rk, sp->op), dur, dur);
}

/* Self time of sp on its thread t, which becomes an open span there. */
static int64_t nest(struct live_thread *t, const struct live_span *sp, struct live_counters *c)
{
    int64_t children = 0;
    while (t->n > 0) {
        const struct live_open *o = &t->open[t->n - 1];
        if (o->ts_ns < sp->ts_ns || o->end_ns > sp->end_ns || o->ts_ns >= sp->end_ns)
            break;
        children += o->end_ns - o->ts_ns;
        t->n--;
    }
    stack_push(&t->open, &t->n, &t->cap, (struct live_open){sp->ts_ns, sp->end_ns, sp->op}, c);
    return sp->end_ns - sp->ts_ns - children;
}

/* The order a tracer emits complete spans in: by end (a parent that ends with its child comes
 * after it), of two equal intervals the later-fed one first (it is the child). */
static int cmp_end_order(const void *a, const void *b)
{
    const struct live_span *x = a, *y = b;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns > y->ts_ns ? -1 : 1;
    if (x->order != y->order)
        return x->order > y->order ? -1 : 1;
    return 0;
}

/* Walks the nesting spans batch[a, b) of one thread (in cmp_batch order) and adds them to the
 * aggregates. In order after what t walked before: torch's walk, forward. Otherwise by end, each
 * span taking as children the open spans it contains (exact for spans that nest properly). */
static void nest_thread(struct live_rank *rk, struct live_thread *t, struct live_span *batch,
                        size_t a, size_t b)
{
    const struct live_span *first = &batch[a];
    struct live_span last = batch[b - 1];
    bool in_order = !t->seen || first->ts_ns > t->last_ts ||
                    (first->ts_ns == t->last_ts && first->end_ns <= t->last_end);
    if (in_order) {
        for (size_t i = a; i < b; i++)
            nest_forward(rk, t, &batch[i]);
    } else {
        qsort(batch + a, b - a, sizeof *batch, cmp_end_order);
        for (size_t i = a; i < b; i++) {
            const struct live_span *sp = &batch[i];
            agg_add(agg_of(rk, sp->op), sp->end_ns - sp->ts_ns, nest(t, sp, &rk->c));
        }
        t->n_spine = 0; /* the walk's stack is no longer known: later spans start afresh */
    }
    if (in_order || last.ts_ns > t->last_ts || (last.ts_ns == t->last_ts && last.end_ns < t->last_end)) {
        t->last_ts = last.ts_ns;
        t->last_end = last.end_ns;
    }
    t->seen = true;
}

static int zero_grow(void **p, size_t *cap, size_t need, size_t size)
{
    size_t old = *cap;
    if (live__grow(p, cap, need, size) < 0)
        return -ENOMEM;
    if (*cap > old)
        memset((char *)*p + old * size, 0, (*cap - old) * size);
    return 0;
}

static int rank_flush(struct live *lv, struct live_job *j, struct live_rank *rk)
{
    int r = 0;
    if (rk->n_batch > 0) {
        size_t n_agg = rk->n_agg;
        if (zero_grow((void **)&rk->th, &rk->cap_th, rk->threads.n + 1, sizeof *rk->th) < 0 ||
            zero_grow((void **)&rk->agg, &n_agg, j->ops.n + 1, sizeof *rk->agg) < 0) {
            rk->c.dropped += (int64_t)rk->n_batch;
            rk->n_batch = 0;
            return -ENOMEM;
        }
        rk->n_agg = n_agg;
        /* Only spans that nest (host operators, torch's self-time rule) need the thread order;
         * kernels and the like, most of a GPU trace, are aggregated as they came. */
        size_t n_nest = 0;
        for (size_t i = 0; i < rk->n_batch; i++) {
            if (!role_nests(rk->batch[i].role))
                continue;
            if (i != n_nest) {
                struct live_span tmp = rk->batch[n_nest];
                rk->batch[n_nest] = rk->batch[i];
                rk->batch[i] = tmp;
            }
            n_nest++;
        }
        sort_batch(lv, rk, rk->batch, n_nest);
        /* Step spans first, so the spans of this batch find their step. */
        for (size_t i = 0; i < rk->n_batch; i++) {
            const struct live_span *sp = &rk->batch[i];
            if (sp->role != ANALYSE_ROLE_STEP || sp->op == LIVE_OP_OTHER)
                continue;
            const struct kent *e = &j->ops.ents[sp->op];
            if (live__add_span_step(rk, j->ops.text + e->off1, e->len1, sp->ts_ns, sp->end_ns) < 0)
                r = -ENOMEM;
        }
        for (size_t a = 0, b; a < n_nest; a = b) {
            uint32_t th = rk->batch[a].thread;
            for (b = a + 1; b < n_nest && rk->batch[b].thread == th; b++)
                ;
            nest_thread(rk, th == LIVE_THREADS_MAX ? &rk->shared : &rk->th[th], rk->batch, a, b);
        }
        for (size_t i = 0; i < rk->n_batch; i++) {
            const struct live_span *sp = &rk->batch[i];
            if (!role_nests(sp->role))
                agg_add(agg_of(rk, sp->op), sp->end_ns - sp->ts_ns, sp->end_ns - sp->ts_ns);
            if (role_for_steps(sp->role)) {
                live__record_add_span(rk, sp);
                live__list_add_span(&rk->lists[LIST_SPAN], sp, &rk->c);
            }
        }
        rk->n_batch = 0;
    }
    for (int k = 0; k < LIST_COUNT; k++)
        live__settle(lv, j, &rk->lists[k], &rk->c);
    return r;
}

int live_flush(struct live *lv)
{
    int r = 0;
    for (size_t i = 0; i < lv->n_jobs; i++) {
        struct live_job *j = lv->jobs[i];
        if (!j->dirty)
            continue;
        for (size_t k = 0; k < j->n_ranks; k++)
            if (rank_flush(lv, j, j->ranks[k]) < 0)
                r = -ENOMEM;
    }
    return r;
}
