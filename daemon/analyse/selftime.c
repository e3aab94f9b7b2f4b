/* SPDX-License-Identifier: MIT */
/*
 * Self time, walked incrementally: the one implementation of torch's nesting rule (autograd
 * profiler_util.py _populate_cpu_children) in the tree. daemon/live runs it on every flush of a
 * rank's batch; tests/unit/test_analyse_ops.c checks it against torch's own key_averages().
 *
 * Torch sorts a thread's spans by (start, -end, input order) and takes as a span's parent the
 * nearest earlier span in that order that still contains it. Per thread the walk keeps the spans
 * it saw in that order, each with its parent's operator; a batch is merged in and the kept spans
 * walked again, so a span of a later batch that nests between two kept ones (a tracer that emits
 * a span when it ends, after its children; Paddle's export, level by level) becomes the child of
 * the one and the parent of the other, and the old parent gets back the time it had given away.
 * The result does not depend on where batches were cut, up to the bound ANALYSE_SELF_KEEP. Pure:
 * no I/O, no clock; the caller owns every buffer through the structures.
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
    free(t->kept);
    free(t->stack);
}

void analyse_self_done(struct analyse_self *w)
{
    for (size_t i = 0; i < w->cap_th; i++)
        thread_done(&w->th[i]);
    free(w->th);
    thread_done(&w->shared);
    free(w->merge);
    free(w->at_cut);
}

static size_t thread_bytes(const struct analyse_self_thread *t)
{
    return t->cap * sizeof *t->kept + t->cap_stack * sizeof *t->stack;
}

size_t analyse_self_bytes(const struct analyse_self *w)
{
    size_t b = w->cap_th * sizeof *w->th + thread_bytes(&w->shared) +
               w->cap_merge * sizeof *w->merge + w->cap_at_cut * sizeof *w->at_cut;
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

/* torch: "if event.start >= parent.end or event.end > parent.end: pop"; o follows p in the walk
 * order, and is its child unless that holds. */
static bool inside(const struct analyse_self_open *o, const struct analyse_self_open *p)
{
    return o->ts_ns < p->end_ns && o->end_ns <= p->end_ns;
}

/* Whether the kept span a comes before the batch's span b in the walk order (of two equal
 * intervals the earlier-fed one, a, first). */
static bool kept_before(const struct analyse_self_open *a, const struct analyse_op_span *b)
{
    return a->ts_ns < b->ts_ns || (a->ts_ns == b->ts_ns && a->end_ns >= b->end_ns);
}

static struct analyse_self_open fresh(const struct analyse_op_span *sp)
{
    return (struct analyse_self_open){.ts_ns = sp->ts_ns, .end_ns = sp->end_ns, .op = sp->op,
                                      .fresh = true};
}

/* A span folded without a parent and without children (no memory, or later than the spans kept
 * for it), counted. */
static void fold_alone(const struct sink *k, const struct analyse_op_span *sp)
{
    agg_add(agg_of(k, sp->op), sp->end_ns - sp->ts_ns, sp->end_ns - sp->ts_ns);
    (*k->dropped)++;
}

/* Torch's walk over t->kept[from, n), the stack t->stack holding the walk's state before
 * kept[from]: each span's parent is the top of the stack once the spans that cannot contain it
 * are popped. A fresh span is folded and its parent's self time loses its duration; a kept span
 * whose parent's op changed moves its duration from the old parent's self time to the new one's.
 * The stack at kept[cut] (before it is walked) goes to at_cut. */
static size_t walk_kept(const struct sink *k, struct analyse_self_thread *t, size_t from,
                        size_t cut, uint32_t *at_cut)
{
    size_t n_at_cut = 0;
    for (size_t i = from; i < t->n; i++) {
        struct analyse_self_open *o = &t->kept[i];
        if (i == cut) {
            memcpy(at_cut, t->stack, t->n_stack * sizeof *at_cut);
            n_at_cut = t->n_stack;
        }
        while (t->n_stack > 0 && !inside(o, &t->kept[t->stack[t->n_stack - 1]]))
            t->n_stack--;
        bool has = t->n_stack > 0;
        uint32_t pop = has ? t->kept[t->stack[t->n_stack - 1]].op : 0;
        int64_t dur = o->end_ns - o->ts_ns;
        if (o->fresh) {
            agg_add(agg_of(k, o->op), dur, dur);
            if (has)
                agg_of(k, pop)->self_ns -= dur;
        } else if (has != o->has_parent || (has && pop != o->parent_op)) {
            if (o->has_parent)
                agg_of(k, o->parent_op)->self_ns += dur;
            if (has)
                agg_of(k, pop)->self_ns -= dur;
        }
        o->fresh = false;
        o->has_parent = has;
        o->parent_op = pop;
        t->stack[t->n_stack++] = (uint32_t)i;
    }
    return n_at_cut;
}

/* Keeps of t's n spans the ones still open at kept[cut] (at most ANALYSE_SELF_KEEP / 4, the
 * innermost: the others are counted dropped) and kept[cut, n); a later span that sorts before
 * kept[cut] is late (fold_alone()). */
static void forget(const struct sink *k, struct analyse_self_thread *t, size_t cut,
                   const uint32_t *at_cut, size_t n_at_cut)
{
    size_t lost = n_at_cut > ANALYSE_SELF_KEEP / 4 ? n_at_cut - ANALYSE_SELF_KEEP / 4 : 0;
    *k->dropped += (int64_t)lost;
    size_t w = 0;
    for (size_t s = lost; s < n_at_cut; s++) /* ascending indexes below cut: w <= at_cut[s] */
        t->kept[w++] = t->kept[at_cut[s]];
    memmove(t->kept + w, t->kept + cut, (t->n - cut) * sizeof *t->kept);
    /* The stack's spans below cut are the bottom of the stack at cut, at the same depths. */
    size_t m = 0;
    for (size_t s = 0; s < t->n_stack; s++) {
        if (t->stack[s] >= cut)
            t->stack[m++] = (uint32_t)(t->stack[s] - cut + w);
        else if (s >= lost)
            t->stack[m++] = (uint32_t)(s - lost);
    }
    t->n_stack = m;
    t->n = w + (t->n - cut);
    t->cut = true;
    t->cut_ts = t->kept[w].ts_ns;
    t->cut_end = t->kept[w].end_ns;
}

/* Walks v[a, b), the nesting spans of one thread (in cmp_walk order), into the aggregates:
 * merged into the spans t keeps, which are walked again from the first that moved (a batch that
 * only comes after them: from its own first span, on the stack they left). */
static void walk_thread(const struct sink *k, struct analyse_self *w,
                        struct analyse_self_thread *t, const struct analyse_op_span *v, size_t a,
                        size_t b)
{
    /* Late: before the first span kept after the older ones went (a prefix of the batch). */
    while (a < b && t->cut &&
           (v[a].ts_ns < t->cut_ts || (v[a].ts_ns == t->cut_ts && v[a].end_ns > t->cut_end)))
        fold_alone(k, &v[a++]);
    if (a == b)
        return;
    size_t old_n = t->n, n = old_n + (b - a);
    if (n >= UINT32_MAX || util_grow((void **)&t->stack, &t->cap_stack, n, sizeof *t->stack) < 0 ||
        util_grow((void **)&w->at_cut, &w->cap_at_cut, n, sizeof *w->at_cut) < 0) {
        for (size_t i = a; i < b; i++)
            fold_alone(k, &v[i]);
        return;
    }
    size_t from;
    if (old_n == 0 || kept_before(&t->kept[old_n - 1], &v[a])) {
        if (util_grow((void **)&t->kept, &t->cap, n, sizeof *t->kept) < 0) {
            for (size_t i = a; i < b; i++)
                fold_alone(k, &v[i]);
            return;
        }
        for (size_t i = a; i < b; i++)
            t->kept[old_n + i - a] = fresh(&v[i]);
        from = old_n;
    } else {
        if (util_grow((void **)&w->merge, &w->cap_merge, n, sizeof *w->merge) < 0) {
            for (size_t i = a; i < b; i++)
                fold_alone(k, &v[i]);
            return;
        }
        struct analyse_self_open *m = w->merge;
        size_t i = 0, j = a, o = 0;
        while (i < old_n || j < b) {
            if (j == b || (i < old_n && kept_before(&t->kept[i], &v[j])))
                m[o++] = t->kept[i++];
            else
                m[o++] = fresh(&v[j++]);
        }
        w->merge = t->kept; /* the buffers trade places */
        t->kept = m;
        size_t c = w->cap_merge;
        w->cap_merge = t->cap;
        t->cap = c;
        from = 0;
    }
    t->n = n;
    size_t cut = n > ANALYSE_SELF_KEEP ? n - ANALYSE_SELF_KEEP / 2 : SIZE_MAX;
    if (cut < from)
        from = 0; /* the stack at cut is needed: walk them all again (changes nothing before) */
    if (from == 0)
        t->n_stack = 0;
    size_t n_at_cut = walk_kept(k, t, from, cut, w->at_cut);
    if (cut != SIZE_MAX)
        forget(k, t, cut, w->at_cut, n_at_cut);
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
        walk_thread(&k, w, th < n_threads ? &w->th[th] : &w->shared, v, a, b);
    }
    for (size_t i = n_nest; i < n; i++)
        agg_add(agg_of(&k, v[i].op), v[i].end_ns - v[i].ts_ns, v[i].end_ns - v[i].ts_ns);
}
