/* SPDX-License-Identifier: MIT */
/*
 * opview: torch-tb-profiler's operator view (analyse_opview.h). The plugin's steps, each done
 * here with sorts instead of its dicts, in the same order of precedence:
 *   1. device events to runtime calls by correlation (event_parser.py _parse_node: a device
 *      event goes to the latest runtime call with its correlation before it, else to the first
 *      one after it, which takes the pending ones; with none it is stale: no operator's);
 *   2. runtime calls to operators by External id (parse_nodes: per External id, every runtime
 *      call goes to the first host node with that id, threads in order of first appearance,
 *      nodes in the events' order); a runtime call with External id 0 also to its thread's root;
 *   3. per thread the tree by containment (op_tree.py build_tree_relationship: sorted by start,
 *      longer first; a node that crosses the end of the open one is left out), then
 *      remove_dup_nodes (an operator whose only child is an operator of its name takes the
 *      child's children and runtime calls, and the child is gone), then fill_stats;
 *   4. the operators (node.py is_operator_node) aggregated per group (op_agg.py aggregate_ops).
 */
#include "analyse_opview.h"

#include "../../lib/num.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NONE SIZE_MAX

static bool cat_is(const struct analyse_span *s, const char *alts)
{
    const char *p = alts;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == s->cat_len && strncasecmp(p, s->cat, l) == 0)
            return true;
        p += l + (bar != NULL);
    }
    return false;
}

static bool name_is(const struct analyse_span *s, const char *n)
{
    return strlen(n) == s->name_len && memcmp(s->name, n, s->name_len) == 0;
}

static bool name_starts(const struct analyse_span *s, const char *p)
{
    size_t l = strlen(p);
    return s->name_len >= l && memcmp(s->name, p, l) == 0;
}

static bool name_ends(const struct analyse_span *s, const char *p)
{
    size_t l = strlen(p);
    return s->name_len >= l && memcmp(s->name + s->name_len - l, p, l) == 0;
}

/* The plugin's ten collective names (trace.py NcclOpNameSet, GlooOpNameSet). */
static bool collective(const struct analyse_span *s)
{
    static const char *const names[] = {"broadcast", "reduce", "all_reduce", "all_gather",
                                        "reduce_scatter"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t l = strlen(names[i]);
        if (s->name_len == l + 5 &&
            (memcmp(s->name, "nccl:", 5) == 0 || memcmp(s->name, "gloo:", 5) == 0) &&
            memcmp(s->name + 5, names[i], l) == 0)
            return true;
    }
    return false;
}

enum analyse_opv_type analyse_opv_type_of(const struct analyse_span *s, bool module)
{
    if (cat_is(s, "cpu_op|operator"))
        return name_starts(s, "ProfilerStep#") ? ANALYSE_OPV_STEP : ANALYSE_OPV_OPERATOR;
    if (cat_is(s, "user_annotation|gpu_user_annotation")) {
        if (name_starts(s, "ProfilerStep#"))
            return ANALYSE_OPV_STEP;
        return collective(s) ? ANALYSE_OPV_ANNOTATION : ANALYSE_OPV_NONE;
    }
    if (cat_is(s, "python"))
        return ANALYSE_OPV_PYTHON;
    if (cat_is(s, "python_function"))
        return module ? ANALYSE_OPV_MODULE : ANALYSE_OPV_NONE;
    if (cat_is(s, "runtime|cuda_runtime|xpu_runtime|mtia_runtime|privateuse1_runtime|"
                  "glow_runtime"))
        return ANALYSE_OPV_RUNTIME;
    if (cat_is(s, "kernel|memcpy|gpu_memcpy|memset|gpu_memset"))
        return ANALYSE_OPV_DEVICE;
    return ANALYSE_OPV_NONE;
}

/* An operator the plugin counts (node.py is_operator_node, create_operator_node): an
 * OperatorNode proper (not a DataLoader or Optimizer.step node) of type Operator, not
 * DataParallel.forward / DistributedDataParallel.forward, not Optimizer.*. */
static bool counted(const struct analyse_opv_event *e)
{
    const struct analyse_span *s = e->span;
    if (e->type != ANALYSE_OPV_OPERATOR)
        return false;
    if ((name_starts(s, "enumerate(DataLoader)#") && name_ends(s, ".__next__")) ||
        name_starts(s, "enumerate(DataPipe)#") || name_starts(s, "Optimizer."))
        return false;
    return !name_is(s, "DataParallel.forward") && !name_is(s, "DistributedDataParallel.forward");
}

static bool host(enum analyse_opv_type t)
{
    return t == ANALYSE_OPV_OPERATOR || t == ANALYSE_OPV_STEP || t == ANALYSE_OPV_PYTHON ||
           t == ANALYSE_OPV_MODULE || t == ANALYSE_OPV_ANNOTATION;
}

/* Sort contexts: qsort has none, so the keys are copied into the sorted records. */
struct link {
    int64_t key;   /* correlation or External id (-1: absent, a key of its own as the
                      plugin's None) */
    int64_t order; /* the events' order (runtime to operator: the thread's first index, then) */
    size_t idx;
    int what;      /* sorts runtimes before devices or operators at an equal key and order */
};

static int cmp_link(const void *a, const void *b)
{
    const struct link *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

struct hnode {
    int64_t tid, start, end;
    size_t idx;
};

static int cmp_hnode(const void *a, const void *b)
{
    const struct hnode *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static bool stopped(const _Atomic bool *stop)
{
    return stop && atomic_load_explicit(stop, memory_order_relaxed);
}

size_t analyse_opview_bytes(size_t n)
{
    /* links (2 arrays), nodes, per-event state (8 words), rows and their order */
    return 65536 + n * (2 * sizeof(struct link) + sizeof(struct hnode) + 8 * sizeof(int64_t) +
                        sizeof(struct analyse_opv_row) + 2 * sizeof(size_t));
}

/* Per event state. */
struct state {
    int64_t rt_dev;     /* RUNTIME: its device events' time */
    size_t rt_ndev;     /* RUNTIME: their number */
    size_t rt_owner;    /* RUNTIME: the host node it belongs to (NONE: none) */
    size_t rt_next;     /* RUNTIME: the next runtime of its owner */
    size_t rt_first;    /* host: its first runtime call (NONE) */
    size_t parent;      /* host: its parent node (NONE: the thread's root or out of the tree) */
    size_t first_child, next_sibling, n_children;
    bool in_tree, gone;
    int64_t child_ns, self_ns, dev_total, dev_self;
};

static const char EMPTY_SHAPE[] = "[]";

static void shape_of(const struct analyse_opv_event *e, const char **p, size_t *n)
{
    if (e->shape && e->shape_len) {
        *p = e->shape;
        *n = e->shape_len;
    } else {
        *p = EMPTY_SHAPE;
        *n = 2;
    }
}

static int cmp_text(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* Rows are grouped by sorting the operators by key; the group and events travel along. */
struct keyed {
    const struct analyse_opv_event *ev;
    enum analyse_opv_group group;
    size_t idx;
};

static int cmp_key(const struct keyed *x, const struct keyed *y)
{
    const struct analyse_span *a = x->ev[x->idx].span, *b = y->ev[y->idx].span;
    int c = cmp_text(a->name, a->name_len, b->name, b->name_len);
    if (c)
        return c;
    if (x->group == ANALYSE_OPV_BY_SHAPE || x->group == ANALYSE_OPV_BY_SHAPE_STACK) {
        const char *sa, *sb;
        size_t na, nb;
        shape_of(&x->ev[x->idx], &sa, &na);
        shape_of(&y->ev[y->idx], &sb, &nb);
        if ((c = cmp_text(sa, na, sb, nb)) != 0)
            return c;
    }
    if (x->group == ANALYSE_OPV_BY_STACK || x->group == ANALYSE_OPV_BY_SHAPE_STACK) {
        const struct analyse_opv_event *ea = &x->ev[x->idx], *eb = &y->ev[y->idx];
        if ((c = cmp_text(ea->stack ? ea->stack : "", ea->stack_len, eb->stack ? eb->stack : "",
                          eb->stack_len)) != 0)
            return c;
    }
    return 0;
}

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = cmp_key(x, y);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_row(const void *a, const void *b, bool device)
{
    const struct analyse_opv_row *x = a, *y = b;
    int64_t kx = device ? x->device_self_ns : x->host_self_ns;
    int64_t ky = device ? y->device_self_ns : y->host_self_ns;
    if (kx != ky)
        return kx > ky ? -1 : 1;
    int c = cmp_text(x->name, x->name_len, y->name, y->name_len);
    if (!c)
        c = cmp_text(x->shape, x->shape_len, y->shape, y->shape_len);
    if (!c)
        c = cmp_text(x->stack, x->stack_len, y->stack, y->stack_len);
    return c;
}

static int cmp_row_device(const void *a, const void *b)
{
    return cmp_row(a, b, true);
}

static int cmp_row_host(const void *a, const void *b)
{
    return cmp_row(a, b, false);
}

/* Step 1: each runtime's device time (rt_dev), per correlation in the events' order. */
static int link_devices(const struct analyse_opv_event *ev, size_t n, struct state *st)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += ev[i].type == ANALYSE_OPV_RUNTIME || ev[i].type == ANALYSE_OPV_DEVICE;
    struct link *l = malloc((m + 1) * sizeof *l);
    if (!l)
        return -ENOMEM;
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].type == ANALYSE_OPV_RUNTIME || ev[i].type == ANALYSE_OPV_DEVICE)
            l[m++] = (struct link){ev[i].span->correlation, (int64_t)i, i, 0};
    qsort(l, m, sizeof *l, cmp_link);
    for (size_t g = 0; g < m;) {
        size_t end = g;
        while (end < m && l[end].key == l[g].key)
            end++;
        size_t first_rt = NONE, last_rt = NONE;
        for (size_t k = g; k < end; k++)
            if (ev[l[k].idx].type == ANALYSE_OPV_RUNTIME) {
                first_rt = l[k].idx;
                break;
            }
        for (size_t k = g; k < end; k++) {
            size_t i = l[k].idx;
            if (ev[i].type == ANALYSE_OPV_RUNTIME) {
                last_rt = i;
                continue;
            }
            size_t rt = last_rt != NONE ? last_rt : first_rt; /* NONE: stale */
            if (rt != NONE) {
                st[rt].rt_dev = num_sat_add(st[rt].rt_dev, ev[i].span->dur_ns);
                st[rt].rt_ndev++;
            }
        }
        g = end;
    }
    free(l);
    return 0;
}

/* Step 2: each runtime's owner, the first host node (threads by first appearance, then the
 * events' order) with its External id; External id 0 also goes to the thread's root. */
static int link_runtimes(const struct analyse_opv_event *ev, size_t n, struct state *st,
                         const int64_t *tid_first)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += ev[i].type == ANALYSE_OPV_RUNTIME || host(ev[i].type);
    struct link *l = malloc((m + 1) * sizeof *l);
    if (!l)
        return -ENOMEM;
    m = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].type == ANALYSE_OPV_RUNTIME)
            l[m++] = (struct link){ev[i].span->external_id, -1, i, 0};
        else if (host(ev[i].type))
            /* A module node's External id is reset to None (node.py ModuleNode.create). */
            l[m++] = (struct link){ev[i].type == ANALYSE_OPV_MODULE ? -1 : ev[i].span->external_id,
                                   tid_first[i], i, 1};
    }
    qsort(l, m, sizeof *l, cmp_link);
    for (size_t g = 0; g < m;) {
        size_t end = g;
        while (end < m && l[end].key == l[g].key)
            end++;
        size_t owner = NONE;
        for (size_t k = g; k < end && owner == NONE; k++)
            if (host(ev[l[k].idx].type))
                owner = l[k].idx;
        if (owner != NONE)
            /* Prepend, in reverse so the list keeps the events' order (not that sums mind). */
            for (size_t k = end; k-- > g;) {
                size_t i = l[k].idx;
                if (ev[i].type != ANALYSE_OPV_RUNTIME)
                    continue;
                st[i].rt_owner = owner;
                st[i].rt_next = st[owner].rt_first;
                st[owner].rt_first = i;
            }
        g = end;
    }
    free(l);
    return 0;
}

/* The duration of the runtime calls of a host node, and their device time. */
static void runtime_sums(const struct analyse_opv_event *ev, const struct state *st, size_t i,
                         int64_t *dur, int64_t *dev)
{
    *dur = *dev = 0;
    for (size_t r = st[i].rt_first; r != NONE; r = st[r].rt_next) {
        *dur = num_sat_add(*dur, ev[r].span->dur_ns);
        *dev = num_sat_add(*dev, st[r].rt_dev);
    }
}

static void add_child(struct state *st, size_t parent, size_t c)
{
    st[c].parent = parent;
    st[c].next_sibling = st[parent].first_child;
    st[parent].first_child = c;
    st[parent].n_children++;
}

/* Step 3: the trees and their figures. */
static int build_trees(const struct analyse_opv_event *ev, size_t n, struct state *st,
                       struct analyse_opview *v, const _Atomic bool *stop)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += host(ev[i].type);
    struct hnode *h = malloc((m + 1) * sizeof *h);
    size_t *stack = malloc((m + 1) * sizeof *stack);
    if (!h || !stack) {
        free(h);
        free(stack);
        return -ENOMEM;
    }
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (host(ev[i].type)) {
            const struct analyse_span *s = ev[i].span;
            h[m++] = (struct hnode){s->tid, s->ts_ns, num_sat_add(s->ts_ns, s->dur_ns), i};
        }
    qsort(h, m, sizeof *h, cmp_hnode);
    if (stopped(stop)) {
        free(h);
        free(stack);
        return -ECANCELED;
    }
    /* Containment per thread: stack[0..depth) are the open nodes (the root is implicit). */
    size_t depth = 0;
    for (size_t k = 0; k < m; k++) {
        if (k > 0 && h[k].tid != h[k - 1].tid)
            depth = 0;
        size_t i = h[k].idx;
        for (;;) {
            if (depth == 0) {
                st[i].in_tree = true;
                st[i].parent = NONE;
                stack[depth++] = k;
                break;
            }
            const struct hnode *tail = &h[stack[depth - 1]];
            if (h[k].start < tail->end) {
                if (h[k].end <= tail->end) {
                    st[i].in_tree = true;
                    add_child(st, tail->idx, i);
                    stack[depth++] = k;
                } else
                    v->n_dropped++;
                break;
            }
            depth--;
        }
    }
    /* remove_dup_nodes, parents before children (the sorted order). */
    for (size_t k = 0; k < m; k++) {
        size_t i = h[k].idx;
        if (!st[i].in_tree || st[i].gone)
            continue;
        while (st[i].n_children == 1) {
            size_t c = st[i].first_child;
            const struct analyse_span *a = ev[i].span, *b = ev[c].span;
            if (ev[i].type != ANALYSE_OPV_OPERATOR || ev[c].type != ANALYSE_OPV_OPERATOR ||
                a->name_len != b->name_len || memcmp(a->name, b->name, a->name_len) != 0)
                break;
            st[c].gone = true;
            st[i].first_child = NONE;
            st[i].n_children = 0;
            for (size_t g = st[c].first_child; g != NONE;) {
                size_t next = st[g].next_sibling;
                add_child(st, i, g);
                g = next;
            }
            st[i].rt_first = st[c].rt_first;
        }
    }
    /* fill_stats, children before parents (the reverse order). */
    for (size_t k = m; k-- > 0;) {
        size_t i = h[k].idx;
        if (!st[i].in_tree || st[i].gone)
            continue;
        int64_t rt_dur, rt_dev;
        runtime_sums(ev, st, i, &rt_dur, &rt_dev);
        /* Sums saturate (a hostile trace's durations reach 3 * 2^60 ns each); so does the
         * self time, a difference of sums that can go below 0 as in the plugin. */
        st[i].self_ns = num_sat_add(ev[i].span->dur_ns, -num_sat_add(st[i].child_ns, rt_dur));
        st[i].dev_self = rt_dev;
        st[i].dev_total = num_sat_add(st[i].dev_total, rt_dev);
        size_t p = st[i].parent;
        if (p != NONE) {
            st[p].child_ns = num_sat_add(st[p].child_ns, ev[i].span->dur_ns);
            st[p].dev_total = num_sat_add(st[p].dev_total, st[i].dev_total);
        }
    }
    free(h);
    free(stack);
    return 0;
}

/* Step 4: the rows. */
static int aggregate(const struct analyse_opv_event *ev, size_t n, const struct state *st,
                     enum analyse_opv_group group, struct analyse_opview *v)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += st[i].in_tree && !st[i].gone && counted(&ev[i]);
    v->n_calls = m;
    struct keyed *k = malloc((m + 1) * sizeof *k);
    v->rows = calloc(m + 1, sizeof *v->rows);
    if (!k || !v->rows) {
        free(k);
        return -ENOMEM;
    }
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (st[i].in_tree && !st[i].gone && counted(&ev[i]))
            k[m++] = (struct keyed){ev, group, i};
    qsort(k, m, sizeof *k, cmp_keyed);
    bool by_stack = group == ANALYSE_OPV_BY_STACK || group == ANALYSE_OPV_BY_SHAPE_STACK;
    for (size_t g = 0; g < m;) {
        size_t end = g;
        while (end < m && cmp_key(&k[g], &k[end]) == 0)
            end++;
        const struct analyse_opv_event *e = &ev[k[g].idx];
        if (by_stack && e->stack_len == 0) {
            g = end;
            continue;
        }
        struct analyse_opv_row *r = &v->rows[v->n_rows++];
        r->name = e->span->name;
        r->name_len = e->span->name_len;
        shape_of(e, &r->shape, &r->shape_len);
        r->stack = by_stack ? e->stack : "";
        r->stack_len = by_stack ? e->stack_len : 0;
        for (size_t j = g; j < end; j++) {
            size_t i = k[j].idx;
            r->calls++;
            r->host_total_ns = num_sat_add(r->host_total_ns, ev[i].span->dur_ns);
            r->host_self_ns = num_sat_add(r->host_self_ns, st[i].self_ns);
            r->device_total_ns = num_sat_add(r->device_total_ns, st[i].dev_total);
            r->device_self_ns = num_sat_add(r->device_self_ns, st[i].dev_self);
            r->has_stack |= ev[i].stack_len > 0;
        }
        g = end;
    }
    free(k);
    qsort(v->rows, v->n_rows, sizeof *v->rows, v->device ? cmp_row_device : cmp_row_host);
    return 0;
}

int analyse_opview_compute(const struct analyse_opv_event *ev, size_t n,
                           enum analyse_opv_group group, const _Atomic bool *stop,
                           struct analyse_opview **ret)
{
    if ((!ev && n) || !ret)
        return -EINVAL;
    *ret = NULL;
    struct analyse_opview *v = calloc(1, sizeof *v);
    struct state *st = malloc((n + 1) * sizeof *st);
    int64_t *tid_first = malloc((n + 1) * sizeof *tid_first);
    struct link *t = malloc((n + 1) * sizeof *t);
    int r = 0;
    if (!v || !st || !tid_first || !t) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        st[i] = (struct state){.rt_owner = NONE, .rt_next = NONE, .rt_first = NONE,
                               .parent = NONE, .first_child = NONE, .next_sibling = NONE};
        if (ev[i].type == ANALYSE_OPV_DEVICE) {
            v->device = true;
            v->n_device++;
        }
        t[i] = (struct link){ev[i].span->tid, (int64_t)i, i, 0};
    }
    /* Each event's thread's first index: the order the plugin's dict of threads keeps. */
    qsort(t, n, sizeof *t, cmp_link);
    for (size_t g = 0; g < n;) {
        size_t end = g;
        while (end < n && t[end].key == t[g].key)
            end++;
        for (size_t k = g; k < end; k++)
            tid_first[t[k].idx] = t[g].order;
        g = end;
    }
    free(t);
    t = NULL;
    if (stopped(stop)) {
        r = -ECANCELED;
        goto out;
    }
    if ((r = link_devices(ev, n, st)) < 0 || (r = link_runtimes(ev, n, st, tid_first)) < 0)
        goto out;
    if (stopped(stop)) {
        r = -ECANCELED;
        goto out;
    }
    if ((r = build_trees(ev, n, st, v, stop)) < 0)
        goto out;
    /* Linked: launched by a runtime call of a node of a tree (the runtime calls of a node
     * that takes its duplicate child's are lost, as in the plugin). */
    for (size_t i = 0; i < n; i++)
        if (st[i].in_tree && !st[i].gone)
            for (size_t rt = st[i].rt_first; rt != NONE; rt = st[rt].rt_next)
                v->n_device_linked += st[rt].rt_ndev;
    if (stopped(stop)) {
        r = -ECANCELED;
        goto out;
    }
    r = aggregate(ev, n, st, group, v);
out:
    free(t);
    free(st);
    free(tid_first);
    if (r < 0) {
        analyse_opview_free(v);
        return r;
    }
    *ret = v;
    return 0;
}

void analyse_opview_free(struct analyse_opview *v)
{
    if (!v)
        return;
    free(v->rows);
    free(v);
}
