/* SPDX-License-Identifier: MIT */
/*
 * Self time, walked incrementally: the one implementation of torch's nesting rule (autograd
 * profiler_util.py _populate_cpu_children) in the tree. daemon/live runs it on every flush of a
 * rank's batch; tests/unit/test_analyse_ops.c checks it against torch's own key_averages().
 *
 * Torch sorts a thread's spans by (start, -end, input order) and takes as a span's parent the
 * nearest earlier span in that order that still contains it. Spans that arrive in that order
 * after everything their thread had (a legacy torch export, stepscope's streams, the importer)
 * are walked exactly so, with the walk's stack (`spine`) kept across batches, so the result
 * does not depend on where batches were cut. Spans that reach back before that (a tracer that
 * emits a span when it ends, after its children) are walked by end instead, each span taking as
 * children the spans it contains that had no parent yet (`open`): exact for spans that nest
 * properly. Pure: no I/O, no clock; the caller owns every buffer through the structures.
 */
#include "analyse_ops.h"
#include "../../lib/num.h"
#include "../../lib/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int analyse_self_reserve(struct analyse_self *w, size_t n_threads)
{
    return util_grow_zero((void **)&w->th, &w->cap_th, n_threads + 1, sizeof *w->th);
}

static void thread_done(struct analyse_self_thread *t)
{
    free(t->open);
    free(t->spine);
}

void analyse_self_done(struct analyse_self *w)
{
    for (size_t i = 0; i < w->cap_th; i++)
        thread_done(&w->th[i]);
    free(w->th);
    thread_done(&w->shared);
}

static size_t thread_bytes(const struct analyse_self_thread *t)
{
    return t->cap * sizeof *t->open + t->cap_spine * sizeof *t->spine;
}

size_t analyse_self_bytes(const struct analyse_self *w)
{
    size_t b = w->cap_th * sizeof *w->th + thread_bytes(&w->shared);
    for (size_t i = 0; i < w->cap_th; i++)
        b += thread_bytes(&w->th[i]);
    return b;
}

void analyse_self_scratch_done(struct analyse_self_scratch *sc)
{
    free(sc->by_thread);
    free(sc->thread_at);
}

static bool role_nests(unsigned role)
{
    return (ANALYSE_ROLES_HOST & ANALYSE_ROLE_BIT(role)) != 0;
}

/* Walk order: by thread, then torch's nesting order: start ascending, end descending, arrival
 * (of two equal intervals the earlier-fed one is the parent). */
static int cmp_walk(const void *a, const void *b)
{
    const struct analyse_op_span *x = a, *y = b;
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

/* Sorts v[0, n) as qsort with cmp_walk would: grouped by thread (a counting pass; the threads
 * past n_threads in one slot), then each thread's run sorted unless it already is, which is the
 * usual case (tracers and the importer send a thread's spans in that order; only threads
 * interleave). cmp_walk is a total order (order is unique in a batch), so the result is the
 * same. */
static void sort_walk(struct analyse_self_scratch *sc, struct analyse_op_span *v, size_t n,
                      size_t n_threads)
{
    size_t nt = n_threads + 1; /* the last slot holds the threads past n_threads */
    if (n < 2)
        return;
    if (util_grow((void **)&sc->thread_at, &sc->cap_thread_at, nt + 1, sizeof *sc->thread_at) < 0 ||
        util_grow((void **)&sc->by_thread, &sc->cap_by_thread, n, sizeof *v) < 0) {
        qsort(v, n, sizeof *v, cmp_walk);
        return;
    }
    size_t *at = sc->thread_at;
    memset(at, 0, (nt + 1) * sizeof *at);
    for (size_t i = 0; i < n; i++)
        at[(v[i].thread < nt - 1 ? v[i].thread : nt - 1) + 1]++;
    for (size_t k = 1; k <= nt; k++)
        at[k] += at[k - 1];
    struct analyse_op_span *w = sc->by_thread;
    for (size_t i = 0; i < n; i++)
        w[at[v[i].thread < nt - 1 ? v[i].thread : nt - 1]++] = v[i];
    /* at[k] is now the end of slot k's run. */
    for (size_t k = 0, a = 0; k < nt; a = at[k++]) {
        for (size_t i = a + 1; i < at[k]; i++) {
            if (cmp_walk(&w[i - 1], &w[i]) > 0) {
                qsort(w + a, at[k] - a, sizeof *w, cmp_walk);
                break;
            }
        }
    }
    memcpy(v, w, n * sizeof *v);
}

size_t analyse_self_order(struct analyse_self_scratch *sc, struct analyse_op_span *v, size_t n,
                          size_t n_threads)
{
    /* Only spans that nest (host operators, torch's self-time rule) need the thread order;
     * kernels and the like, most of a GPU trace, are aggregated as they came. */
    size_t n_nest = 0;
    for (size_t i = 0; i < n; i++) {
        if (!role_nests(v[i].role))
            continue;
        if (i != n_nest) {
            struct analyse_op_span tmp = v[n_nest];
            v[n_nest] = v[i];
            v[i] = tmp;
        }
        n_nest++;
    }
    sort_walk(sc, v, n_nest, n_threads);
    return n_nest;
}

static void agg_add(struct analyse_op_agg *a, int64_t dur, int64_t self)
{
    if (a->calls == 0 || dur < a->min_ns)
        a->min_ns = dur;
    if (a->calls == 0 || dur > a->max_ns)
        a->max_ns = dur;
    a->calls++;
    a->total_ns = num_sat_add(a->total_ns, dur);
    a->self_ns = num_sat_add(a->self_ns, self);
}

/* Where the walk folds spans: the caller's aggregates. */
struct sink {
    struct analyse_op_agg *agg;
    struct analyse_op_agg *other;
    int64_t *dropped;
};

static struct analyse_op_agg *agg_of(const struct sink *k, uint32_t op)
{
    return op == ANALYSE_OP_OTHER ? k->other : &k->agg[op];
}

/* Pushes o on a bounded stack (past ANALYSE_SELF_STACK_MAX its older half goes, counted). */
static void stack_push(struct analyse_self_open **v, size_t *n, size_t *cap,
                       struct analyse_self_open o, int64_t *dropped)
{
    if (*n >= ANALYSE_SELF_STACK_MAX) {
        size_t drop = ANALYSE_SELF_STACK_MAX / 2;
        memmove(*v, *v + drop, (*n - drop) * sizeof **v);
        *n -= drop;
        *dropped += (int64_t)drop;
    }
    if (util_grow((void **)v, cap, *n + 1, sizeof **v) == 0)
        (*v)[(*n)++] = o;
    else
        (*dropped)++;
}

/* Torch's walk, forward: sp comes after every span walked on t so far. Its parent is the top of
 * the spine once the spans that cannot contain it are popped; the parent's self time loses sp's
 * duration. A span without a parent waits in `open` for a container that arrives later. */
static void nest_forward(const struct sink *k, struct analyse_self_thread *t,
                         const struct analyse_op_span *sp)
{
    int64_t dur = sp->end_ns - sp->ts_ns;
    struct analyse_self_open o = {sp->ts_ns, sp->end_ns, sp->op};
    while (t->n_spine > 0) {
        const struct analyse_self_open *p = &t->spine[t->n_spine - 1];
        /* torch: "if event.start >= parent.end or event.end > parent.end: pop". */
        if (sp->ts_ns >= p->end_ns || sp->end_ns > p->end_ns)
            t->n_spine--;
        else
            break;
    }
    if (t->n_spine > 0)
        agg_of(k, t->spine[t->n_spine - 1].op)->self_ns -= dur;
    else
        stack_push(&t->open, &t->n, &t->cap, o, k->dropped);
    stack_push(&t->spine, &t->n_spine, &t->cap_spine, o, k->dropped);
    agg_add(agg_of(k, sp->op), dur, dur);
}

/* Inserts o at v[at] of a bounded stack, the spans above it moving up one (past
 * ANALYSE_SELF_STACK_MAX its older half goes, counted, as in stack_push()). */
static void stack_insert(struct analyse_self_open **v, size_t *n, size_t *cap, size_t at,
                         struct analyse_self_open o, int64_t *dropped)
{
    if (*n >= ANALYSE_SELF_STACK_MAX) {
        size_t drop = ANALYSE_SELF_STACK_MAX / 2;
        memmove(*v, *v + drop, (*n - drop) * sizeof **v);
        *n -= drop;
        *dropped += (int64_t)drop;
        if (at < drop) {
            (*dropped)++;
            return;
        }
        at -= drop;
    }
    if (util_grow((void **)v, cap, *n + 1, sizeof **v) < 0) {
        (*dropped)++;
        return;
    }
    memmove(*v + at + 1, *v + at, (*n - at) * sizeof **v);
    (*v)[at] = o;
    (*n)++;
}

/* Self time of sp on its thread t, which becomes an open span there. The open spans lie in
 * time order; those that start at or after sp's end (a batch walked before this one may reach
 * past sp: a tracer's batches are cut anywhere) stay above it, and below them the spans sp
 * contains are its children. sp takes their place, so the order holds for the next span. */
static int64_t nest(struct analyse_self_thread *t, const struct analyse_op_span *sp,
                    int64_t *dropped)
{
    size_t top = t->n;
    while (top > 0 && t->open[top - 1].ts_ns >= sp->end_ns)
        top--;
    size_t at = top;
    int64_t children = 0;
    while (at > 0) {
        const struct analyse_self_open *o = &t->open[at - 1];
        if (o->ts_ns < sp->ts_ns || o->end_ns > sp->end_ns || o->ts_ns >= sp->end_ns)
            break;
        children += o->end_ns - o->ts_ns;
        at--;
    }
    if (at < top) { /* the children go: the spans after sp move down to just above it */
        memmove(t->open + at, t->open + top, (t->n - top) * sizeof *t->open);
        t->n -= top - at;
    }
    stack_insert(&t->open, &t->n, &t->cap, at,
                 (struct analyse_self_open){sp->ts_ns, sp->end_ns, sp->op}, dropped);
    return sp->end_ns - sp->ts_ns - children;
}

/* The order a tracer emits complete spans in: by end (a parent that ends with its child comes
 * after it), of two equal intervals the later-fed one first (it is the child). */
static int cmp_end_order(const void *a, const void *b)
{
    const struct analyse_op_span *x = a, *y = b;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns > y->ts_ns ? -1 : 1;
    if (x->order != y->order)
        return x->order > y->order ? -1 : 1;
    return 0;
}

/* Walks v[a, b), the nesting spans of one thread (in cmp_walk order), into the aggregates. In
 * order after what t walked before: torch's walk, forward. Otherwise by end, each span taking as
 * children the open spans it contains (exact for spans that nest properly). */
static void walk_thread(const struct sink *k, struct analyse_self_thread *t,
                        struct analyse_op_span *v, size_t a, size_t b)
{
    const struct analyse_op_span *first = &v[a];
    struct analyse_op_span last = v[b - 1];
    bool in_order = !t->seen || first->ts_ns > t->last_ts ||
                    (first->ts_ns == t->last_ts && first->end_ns <= t->last_end);
    if (in_order) {
        for (size_t i = a; i < b; i++)
            nest_forward(k, t, &v[i]);
    } else {
        qsort(v + a, b - a, sizeof *v, cmp_end_order);
        for (size_t i = a; i < b; i++) {
            const struct analyse_op_span *sp = &v[i];
            agg_add(agg_of(k, sp->op), sp->end_ns - sp->ts_ns, nest(t, sp, k->dropped));
        }
        t->n_spine = 0; /* the walk's stack is no longer known: later spans start afresh */
    }
    if (in_order || last.ts_ns > t->last_ts ||
        (last.ts_ns == t->last_ts && last.end_ns < t->last_end)) {
        t->last_ts = last.ts_ns;
        t->last_end = last.end_ns;
    }
    t->seen = true;
}

void analyse_self_walk(struct analyse_self *w, size_t n_threads, struct analyse_op_span *v,
                       size_t n_nest, size_t n, struct analyse_op_agg *agg,
                       struct analyse_op_agg *other, int64_t *ret_dropped)
{
    const struct sink k = {agg, other, ret_dropped};
    for (size_t a = 0, b; a < n_nest; a = b) {
        uint32_t th = v[a].thread;
        for (b = a + 1; b < n_nest && v[b].thread == th; b++)
            ;
        walk_thread(&k, th < n_threads ? &w->th[th] : &w->shared, v, a, b);
    }
    for (size_t i = n_nest; i < n; i++)
        agg_add(agg_of(&k, v[i].op), v[i].end_ns - v[i].ts_ns, v[i].end_ns - v[i].ts_ns);
}
