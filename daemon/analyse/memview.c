/* SPDX-License-Identifier: MIT */
/*
 * memview.c: torch-tb-profiler's memory view (analyse_memview.h; docs/ANALYSIS.md "Memory view").
 *
 * The operator table follows torch-tb-profiler 0.4.3: per thread, the host nodes (cats cpu_op,
 * operator, user_annotation, gpu_user_annotation, python; compared case-insensitively) make a
 * tree by start, the longer first at equal starts; a node that starts inside the one above it
 * but ends after it is left out (the plugin logs "ranges on the same thread should not
 * intersect" and skips it); an operator whose only child is an operator of its name is one node
 * with it (the plugin's remove_dup_nodes). A memory event belongs to the innermost node whose
 * [start, end) holds its ts; when that node is an operator (not a ProfilerStep#, not
 * DataParallel.forward / DistributedDataParallel.forward, not Optimizer.*) the event is the
 * operator's own ("self"), and counts in the totals of every operator above it; otherwise it
 * counts nowhere.
 */
#include "analyse_memview.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyse_summary.h" /* analyse_sum_step_number() */

enum { NODE_OP = 1, NODE_TYPE_OP = 2 }; /* operator (counted), of the plugin's OPERATOR type */

static bool name_is(const struct analyse_span *s, const char *p)
{
    return s->name_len == strlen(p) && memcmp(s->name, p, s->name_len) == 0;
}

/* 0: not a host node; else NODE_* flags (a node that is neither is a pass-through node). */
static int node_kind(const struct analyse_span *s, bool *node)
{
    *node = false;
    bool op_cat = analyse_span_cat_is(s, "cpu_op") || analyse_span_cat_is(s, "operator");
    if (!op_cat && !analyse_span_cat_is(s, "user_annotation") &&
        !analyse_span_cat_is(s, "gpu_user_annotation") && !analyse_span_cat_is(s, "python"))
        return 0;
    *node = true;
    if (!op_cat || analyse_span_starts(s, "ProfilerStep#"))
        return 0;
    int k = NODE_TYPE_OP;
    if (!name_is(s, "DataParallel.forward") && !name_is(s, "DistributedDataParallel.forward") &&
        !analyse_span_starts(s, "Optimizer."))
        k |= NODE_OP;
    return k;
}

struct node {
    const struct analyse_span *s;
    int64_t end;
    long parent; /* index into the nodes, -1: the thread's root */
    long rep;    /* the node it is one with (itself, or a same-named parent) */
    size_t name; /* index into the distinct names */
    int kind;
    unsigned nchild;
    bool dropped;
};

static int64_t span_end(const struct analyse_span *s)
{
    return s->dur_ns > INT64_MAX - s->ts_ns ? INT64_MAX : s->ts_ns + s->dur_ns;
}

static int cmp_node(const void *a, const void *b)
{
    const struct node *x = a, *y = b;
    if (x->s->pid != y->s->pid)
        return x->s->pid < y->s->pid ? -1 : 1;
    if (x->s->tid != y->s->tid)
        return x->s->tid < y->s->tid ? -1 : 1;
    if (x->s->ts_ns != y->s->ts_ns)
        return x->s->ts_ns < y->s->ts_ns ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return 0;
}

static int cmp_text(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

static int cmp_name_ptr(const void *a, const void *b)
{
    const struct node *x = *(const struct node *const *)a, *y = *(const struct node *const *)b;
    return cmp_text(x->s->name, x->s->name_len, y->s->name, y->s->name_len);
}

/* Events in series order: device, source, then ts (the given order at equal ts). */
struct evref {
    const struct analyse_mv_event *e;
    size_t i;
};

static int cmp_evref(const void *a, const void *b)
{
    const struct evref *x = a, *y = b;
    int c = cmp_text(x->e->device, x->e->device_len, y->e->device, y->e->device_len);
    if (c)
        return c;
    if (x->e->source != y->e->source)
        return x->e->source < y->e->source ? -1 : 1;
    if (x->e->ts_ns != y->e->ts_ns)
        return x->e->ts_ns < y->e->ts_ns ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The innermost kept node of nodes[lo, hi) (one thread, by start) whose [start, end) holds ts;
 * -1 when none. */
static long innermost(const struct node *nd, size_t lo, size_t hi, int64_t ts)
{
    size_t a = lo, b = hi; /* the first node starting after ts */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (nd[m].s->ts_ns <= ts)
            a = m + 1;
        else
            b = m;
    }
    long k = (long)a - 1;
    while (k >= (long)lo && nd[k].dropped)
        k--;
    if (k < (long)lo)
        return -1;
    while (k >= 0 && !(ts < nd[k].end))
        k = nd[k].parent;
    return k;
}

struct agg {
    int64_t v[6]; /* increase, self increase, count, self count, size, self size */
};

static void series_peak_step(struct analyse_mv_series *sr, const struct analyse_span *spans,
                             size_t n)
{
    for (size_t i = 0; i < n && sr->peak_step < 0; i++) {
        const struct analyse_span *s = &spans[i];
        if (s->role == ANALYSE_ROLE_STEP && s->ts_ns <= sr->peak_ts_ns &&
            sr->peak_ts_ns < span_end(s))
            sr->peak_step = analyse_sum_step_number(s->name, s->name_len);
    }
}

/* Keeps at most max points of p[0..n) in place (buckets of equal counts: first, last, lowest
 * and highest allocated, highest reserved), in time order. Returns the count kept. */
static size_t downsample(struct analyse_mv_point *p, size_t n, size_t max)
{
    if (n <= max)
        return n;
    size_t nb = max / 5, k = (n + nb - 1) / nb, out = 0;
    for (size_t b0 = 0; b0 < n; b0 += k) {
        size_t b1 = b0 + k < n ? b0 + k : n;
        size_t lo = b0, hi = b0, hr = b0;
        for (size_t i = b0; i < b1; i++) {
            if (p[i].allocated < p[lo].allocated)
                lo = i;
            if (p[i].allocated > p[hi].allocated)
                hi = i;
            if (p[i].reserved > p[hr].reserved)
                hr = i;
        }
        size_t keep[5] = {b0, lo, hi, hr, b1 - 1};
        /* in time order, each once */
        for (int i = 1; i < 5; i++)
            for (int j = i; j > 0 && keep[j] < keep[j - 1]; j--) {
                size_t t = keep[j];
                keep[j] = keep[j - 1];
                keep[j - 1] = t;
            }
        for (int i = 0; i < 5; i++)
            if (i == 0 || keep[i] != keep[i - 1])
                p[out++] = p[keep[i]];
    }
    return out;
}

int analyse_memview_compute(const struct analyse_span *spans, size_t n,
                            const struct analyse_mv_event *ev, size_t n_ev, size_t max_points,
                            struct analyse_memview **ret)
{
    if ((!spans && n) || (!ev && n_ev) || !ret || max_points < ANALYSE_MV_POINTS_MIN)
        return -EINVAL;
    *ret = NULL;
    struct analyse_memview *m = calloc(1, sizeof *m);
    struct node *nd = NULL;
    struct node **byname = NULL;
    struct evref *er = NULL;
    struct agg *agg = NULL;
    int64_t *calls = NULL;
    size_t *devof = NULL, *thr = NULL;
    int r = -ENOMEM;
    if (!m)
        goto out;
    m->n_events = n_ev;

    /* The host nodes, by thread and start. */
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        bool node;
        (void)node_kind(&spans[i], &node);
        nn += node && spans[i].dur_ns >= 0;
    }
    nd = calloc(nn + 1, sizeof *nd);
    byname = calloc(nn + 1, sizeof *byname);
    if (!nd || !byname)
        goto out;
    nn = 0;
    for (size_t i = 0; i < n; i++) {
        bool node;
        int k = node_kind(&spans[i], &node);
        if (node && spans[i].dur_ns >= 0)
            nd[nn++] = (struct node){.s = &spans[i], .end = span_end(&spans[i]), .kind = k};
    }
    qsort(nd, nn, sizeof *nd, cmp_node);

    /* The trees: a stack per thread (the root never closes). */
    long *stack = calloc(nn + 1, sizeof *stack);
    if (!stack)
        goto out;
    size_t depth = 0;
    for (size_t i = 0; i < nn; i++) {
        if (i > 0 && (nd[i].s->pid != nd[i - 1].s->pid || nd[i].s->tid != nd[i - 1].s->tid))
            depth = 0;
        nd[i].parent = -1;
        for (;;) {
            if (depth == 0) {
                stack[depth++] = (long)i;
                break;
            }
            struct node *t = &nd[stack[depth - 1]];
            if (nd[i].s->ts_ns < t->end) {
                if (nd[i].end <= t->end) {
                    nd[i].parent = stack[depth - 1];
                    t->nchild++;
                    stack[depth++] = (long)i;
                } else {
                    nd[i].dropped = true;
                }
                break;
            }
            depth--;
        }
    }
    free(stack);
    /* One node with a same-named only child (parents come first). */
    for (size_t i = 0; i < nn; i++) {
        long p = nd[i].parent;
        nd[i].rep = (long)i;
        if (nd[i].dropped || p < 0)
            continue;
        const struct node *pr = &nd[nd[p].rep];
        if (nd[p].nchild == 1 && (pr->kind & NODE_TYPE_OP) && (nd[i].kind & NODE_TYPE_OP) &&
            pr->s->name_len == nd[i].s->name_len &&
            memcmp(pr->s->name, nd[i].s->name, pr->s->name_len) == 0)
            nd[i].rep = nd[p].rep;
    }
    /* Distinct operator names. */
    size_t nop = 0;
    for (size_t i = 0; i < nn; i++)
        if (!nd[i].dropped && (nd[i].kind & NODE_OP))
            byname[nop++] = &nd[i];
    qsort(byname, nop, sizeof *byname, cmp_name_ptr);
    size_t names = 0;
    for (size_t i = 0; i < nop; i++) {
        if (i > 0 && cmp_name_ptr(&byname[i - 1], &byname[i]) != 0)
            names++;
        byname[i]->name = names;
    }
    if (nop)
        names++;

    /* The series: events by device, source and time. */
    er = malloc((n_ev + 1) * sizeof *er);
    devof = malloc((n_ev + 1) * sizeof *devof);
    if (!er || !devof)
        goto out;
    for (size_t i = 0; i < n_ev; i++)
        er[i] = (struct evref){&ev[i], i};
    qsort(er, n_ev, sizeof *er, cmp_evref);
    size_t ns = 0, ndev = 0;
    for (size_t i = 0; i < n_ev; i++) {
        bool newdev = i == 0 || cmp_text(er[i].e->device, er[i].e->device_len,
                                         er[i - 1].e->device, er[i - 1].e->device_len) != 0;
        ndev += newdev;
        ns += newdev || er[i].e->source != er[i - 1].e->source;
    }
    m->series = calloc(ns + 1, sizeof *m->series);
    m->points = malloc((n_ev + 1) * sizeof *m->points);
    if (!m->series || !m->points)
        goto out;
    const char **devname = calloc(ndev + 1, sizeof *devname);
    size_t *devlen = calloc(ndev + 1, sizeof *devlen);
    if (!devname || !devlen) {
        free(devname);
        free(devlen);
        goto out;
    }
    size_t d = 0;
    for (size_t i = 0; i < n_ev;) {
        const struct analyse_mv_event *e0 = er[i].e;
        if (i > 0 && cmp_text(e0->device, e0->device_len, er[i - 1].e->device,
                              er[i - 1].e->device_len) != 0)
            d++;
        devname[d] = e0->device;
        devlen[d] = e0->device_len;
        struct analyse_mv_series *sr = &m->series[m->n_series++];
        *sr = (struct analyse_mv_series){.device = e0->device, .device_len = e0->device_len,
                                         .source = e0->source, .peak_allocated = -1,
                                         .peak_ts_ns = INT64_MIN, .peak_step = -1,
                                         .peak_reserved = -1, .first_ts_ns = INT64_MIN,
                                         .last_ts_ns = INT64_MIN, .first_kept = m->n_points};
        size_t j = i;
        for (; j < n_ev && er[j].e->source == e0->source &&
               cmp_text(er[j].e->device, er[j].e->device_len, e0->device, e0->device_len) == 0;
             j++) {
            const struct analyse_mv_event *e = er[j].e;
            devof[er[j].i] = d;
            if (e->allocated < 0 || (e->source == ANALYSE_MV_TRACE && e->reserved < 0))
                continue;
            m->points[m->n_points++] = (struct analyse_mv_point){e->ts_ns, e->allocated,
                                                                 e->reserved};
            if (sr->n_points++ == 0)
                sr->first_ts_ns = e->ts_ns;
            sr->last_ts_ns = e->ts_ns;
            int64_t pk = e->allocated;
            if (e->source == ANALYSE_MV_ALLOCATOR && e->peak_allocated > pk)
                pk = e->peak_allocated;
            if (pk > sr->peak_allocated) {
                sr->peak_allocated = pk;
                sr->peak_ts_ns = e->ts_ns;
                sr->peak_step = e->source == ANALYSE_MV_ALLOCATOR ? e->step : -1;
            }
            int64_t pr = e->reserved;
            if (e->peak_reserved > pr)
                pr = e->peak_reserved;
            if (pr > sr->peak_reserved)
                sr->peak_reserved = pr;
        }
        if (sr->source == ANALYSE_MV_TRACE && sr->n_points > 0)
            series_peak_step(sr, spans, n);
        sr->n_kept = downsample(&m->points[sr->first_kept], sr->n_points, max_points);
        m->n_points = sr->first_kept + sr->n_kept;
        i = j;
    }

    /* The operators' allocations per device. */
    agg = calloc(names * (ndev ? ndev : 1) + 1, sizeof *agg);
    calls = calloc(names + 1, sizeof *calls);
    if (!agg || !calls) {
        free(devname);
        free(devlen);
        goto out;
    }
    for (size_t i = 0; i < nn; i++)
        if (!nd[i].dropped && (nd[i].kind & NODE_OP) && nd[i].rep == (long)i)
            calls[nd[i].name]++;
    /* The threads' ranges of nodes, [thr[t], thr[t + 1]), found by a binary search. */
    size_t nthr = 0;
    for (size_t i = 0; i < nn; i++)
        nthr += i == 0 || nd[i].s->pid != nd[i - 1].s->pid || nd[i].s->tid != nd[i - 1].s->tid;
    thr = malloc((nthr + 1) * sizeof *thr);
    if (!thr) {
        free(devname);
        free(devlen);
        goto out;
    }
    nthr = 0;
    for (size_t i = 0; i < nn; i++)
        if (i == 0 || nd[i].s->pid != nd[i - 1].s->pid || nd[i].s->tid != nd[i - 1].s->tid)
            thr[nthr++] = i;
    thr[nthr] = nn;
    for (size_t x = 0; x < n_ev; x++) {
        const struct analyse_mv_event *e = &ev[x];
        if (e->source != ANALYSE_MV_TRACE || e->bytes == INT64_MIN)
            continue;
        size_t t = 0, tb = nthr; /* the first thread not before the event's */
        while (t < tb) {
            size_t mid = t + (tb - t) / 2;
            const struct analyse_span *s = nd[thr[mid]].s;
            if (s->pid < e->pid || (s->pid == e->pid && s->tid < e->tid))
                t = mid + 1;
            else
                tb = mid;
        }
        bool found = t < nthr && nd[thr[t]].s->pid == e->pid && nd[thr[t]].s->tid == e->tid;
        size_t lo = found ? thr[t] : 0, end = found ? thr[t + 1] : 0;
        long k = innermost(nd, lo, end, e->ts_ns);
        if (k < 0 || !(nd[k].kind & NODE_OP)) {
            m->n_unattributed++;
            continue;
        }
        m->n_attributed++;
        size_t dv = devof[x];
        int64_t b = e->bytes, c = b > 0, sz = b > 0 ? b : 0;
        struct agg *self = &agg[nd[nd[k].rep].name * ndev + dv];
        self->v[1] += b;
        self->v[3] += c;
        self->v[5] += sz;
        for (long a = k; a >= 0; a = nd[a].parent)
            if ((nd[a].kind & NODE_OP) && nd[a].rep == a) {
                struct agg *tot = &agg[nd[a].name * ndev + dv];
                tot->v[0] += b;
                tot->v[2] += c;
                tot->v[4] += sz;
            }
    }
    /* Rows: by device, then name; only those with a figure (as the plugin's). */
    size_t nrows = 0;
    for (size_t i = 0; i < names * ndev; i++) {
        const int64_t *v = agg[i].v;
        nrows += (v[0] | v[1] | v[2] | v[3] | v[4] | v[5]) != 0;
    }
    m->rows = calloc(nrows + 1, sizeof *m->rows);
    if (!m->rows) {
        free(devname);
        free(devlen);
        goto out;
    }
    const struct node **first = calloc(names + 1, sizeof *first);
    if (!first) {
        free(devname);
        free(devlen);
        goto out;
    }
    for (size_t i = nop; i-- > 0;)
        first[byname[i]->name] = byname[i];
    for (size_t dv = 0; dv < ndev; dv++)
        for (size_t nm = 0; nm < names; nm++) {
            const int64_t *v = agg[nm * ndev + dv].v;
            if ((v[0] | v[1] | v[2] | v[3] | v[4] | v[5]) == 0)
                continue;
            m->rows[m->n_rows++] = (struct analyse_mv_row){
                .name = first[nm]->s->name, .name_len = first[nm]->s->name_len,
                .device = devname[dv], .device_len = devlen[dv], .calls = calls[nm],
                .increase = v[0], .self_increase = v[1], .alloc_count = v[2],
                .self_alloc_count = v[3], .alloc_size = v[4], .self_alloc_size = v[5]};
        }
    free(first);
    free(devname);
    free(devlen);
    r = 0;
out:
    free(nd);
    free(byname);
    free(er);
    free(devof);
    free(agg);
    free(calls);
    free(thr);
    if (r < 0)
        analyse_memview_free(m);
    else
        *ret = m;
    return r;
}

void analyse_memview_free(struct analyse_memview *m)
{
    if (!m)
        return;
    free(m->series);
    free(m->points);
    free(m->rows);
    free(m);
}

size_t analyse_memview_bytes(size_t n)
{
    /* per span: a node and its name pointer; per event: a reference, its device, a point, a
     * row's aggregate */
    return 65536 + n * (sizeof(struct node) + sizeof(struct node *) + sizeof(struct evref) +
                        sizeof(size_t) + sizeof(struct analyse_mv_point) + sizeof(struct agg) +
                        sizeof(struct analyse_mv_row));
}
