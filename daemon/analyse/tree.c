/* SPDX-License-Identifier: MIT */
/*
 * tree.c: hierarchies of classified spans (analyse_tree.h). The operator tree is Paddle's
 * operator summary with its op_detail rows (python/paddle/profiler/profiler_statistic.py,
 * EventSummary.OperatorItem and HostStatisticNode.cal_statistic(), Paddle 3.3.1): host spans
 * nested per thread, each device event hung on the parent of the runtime call that launched it.
 */
#include "analyse_tree.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/num.h"
#include "../../lib/util.h"

const char *const analyse_tree_kind_names[ANALYSE_TREE_KIND_COUNT] = {"operator", "inner",
                                                                      "device", "module"};

#define NONE SIZE_MAX
#define STOP_EVERY 65536

/* What the tree adds to a host span of the window (indexed as the nested spans). */
struct hx {
    int64_t child_ns;    /* the durations of its direct children */
    int64_t launch_ns;   /* device events linked to this span itself */
    int64_t dev_ns;      /* device events launched from it or its descendants */
    int64_t self_dev_ns; /* launched by its direct children (module view: the device time of its
                            direct operator children) */
    size_t row;          /* its row, NONE when it has none */
    int64_t n_ops;       /* module view: its direct operator children */
    size_t mod_anc;      /* module view: its nearest module ancestor, NONE when none */
};

/* A device event of the window and where it was launched from. */
struct dnode {
    size_t span;
    size_t launcher;    /* host index of the span with its correlation, NONE when unlinked */
    size_t owner;       /* the launcher's parent, NONE when none */
    int64_t ts, dur;
};

struct corr {
    int64_t id;
    bool runtime;
    size_t host;
};

/* What the tree adds to a table row: the rows are keyed (name, parent key), the key
 * ANALYSE_SUM_TOP for an operator, 2 x its parent row for an inner row, that + 1 for a device
 * row; a device row's calls, total, min and max are device time. */
struct rx {
    int64_t self_ns, dev_ns, self_dev_ns, dev_min_ns, dev_max_ns, operators;
};

static bool stopped(const _Atomic bool *stop)
{
    return stop && atomic_load_explicit(stop, memory_order_relaxed);
}

static bool is_device(enum analyse_sum_type t)
{
    return t == ANALYSE_SUM_KERNEL || t == ANALYSE_SUM_MEMCPY || t == ANALYSE_SUM_MEMSET;
}

static int64_t end_of(const struct analyse_span *s)
{
    return num_sat_add(s->ts_ns, s->dur_ns > 0 ? s->dur_ns : 0);
}

static int64_t len_of(int64_t s, int64_t e)
{
    return e > s ? num_sat_add(e, s == INT64_MIN ? INT64_MAX : -s) : 0;
}

static int cmp_corr(const void *a, const void *b)
{
    const struct corr *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    if (x->runtime != y->runtime)
        return x->runtime ? -1 : 1;
    return (x->host > y->host) - (x->host < y->host);
}

static int cmp_dnode(const void *a, const void *b)
{
    const struct dnode *x = a, *y = b;
    if (x->owner != y->owner)
        return x->owner < y->owner ? -1 : 1;
    if (x->launcher != y->launcher)
        return x->launcher < y->launcher ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->span > y->span) - (x->span < y->span);
}

/* The work of one computation. */
struct work {
    const struct analyse_span *spans;
    const _Atomic bool *stop;
    struct analyse_sum_node *host;
    size_t n_host;
    size_t *par;        /* [n_host]: analyse_sum_nest()'s parents */
    struct hx *hx;      /* [n_host] */
    struct dnode *dev;
    size_t n_dev;
    struct corr *corr;
    struct analyse_sum_table tab;
    struct rx *rx;      /* [tab.cap] */
    size_t cap_rx;
    bool modules;       /* the module view: every row a module */
};

static void work_free(struct work *w)
{
    free(w->host);
    free(w->par);
    free(w->hx);
    free(w->dev);
    free(w->corr);
    free(w->rx);
    analyse_sum_table_free(&w->tab);
}

/* Adds a call of dur to the row (name, key) and returns it (its rx zeroed when new), or NONE
 * on ENOMEM. */
static size_t row_add(struct work *w, const char *name, size_t len, size_t key, int64_t dur)
{
    int64_t r = analyse_sum_table_add(&w->tab, name, len, key, dur);
    if (r < 0)
        return NONE;
    if (w->tab.n > w->cap_rx) {
        size_t cap = w->tab.cap > w->tab.n ? w->tab.cap : w->tab.n;
        struct rx *v = realloc(w->rx, cap * sizeof *v);
        if (!v)
            return NONE;
        memset(v + w->cap_rx, 0, (cap - w->cap_rx) * sizeof *v);
        w->rx = v;
        w->cap_rx = cap;
    }
    if (w->tab.rows[r].calls == 1)
        w->rx[r] = (struct rx){.dev_min_ns = INT64_MAX};
    return (size_t)r;
}

static void add_dev(struct rx *x, int64_t dev)
{
    x->dev_ns = num_sat_add(x->dev_ns, dev);
    x->dev_min_ns = dev < x->dev_min_ns ? dev : x->dev_min_ns;
    x->dev_max_ns = dev > x->dev_max_ns ? dev : x->dev_max_ns;
}

/* Nesting (analyse_sum_nest()), then device links by correlation, then per span its
 * children's time and the device time launched beneath it. */
static int nest_and_link(struct work *w, struct analyse_tree *t)
{
    w->par = malloc((w->n_host + 1) * sizeof *w->par);
    w->hx = calloc(w->n_host + 1, sizeof *w->hx);
    if (!w->par || !w->hx || analyse_sum_nest(w->host, w->n_host, w->par) < 0)
        return -ENOMEM;
    if (stopped(w->stop))
        return -ECANCELED;
    size_t nc = 0;
    for (size_t i = 0; i < w->n_host; i++) {
        const struct analyse_span *s = &w->spans[w->host[i].span];
        if (s->correlation >= 0)
            w->corr[nc++] = (struct corr){s->correlation,
                                          w->host[i].type == ANALYSE_SUM_CUDA_RUNTIME, i};
    }
    qsort(w->corr, nc, sizeof *w->corr, cmp_corr);
    for (size_t i = 0; i < w->n_dev; i++) {
        struct dnode *d = &w->dev[i];
        int64_t id = w->spans[d->span].correlation;
        d->launcher = d->owner = NONE;
        if (id < 0)
            continue;
        size_t lo = 0, hi = nc; /* the first entry of id: its runtime call when it has one */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (w->corr[mid].id < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == nc || w->corr[lo].id != id)
            continue;
        d->launcher = w->corr[lo].host;
        d->owner = w->par[d->launcher] == ANALYSE_SUM_TOP ? NONE : w->par[d->launcher];
        w->hx[d->launcher].launch_ns = num_sat_add(w->hx[d->launcher].launch_ns, d->dur);
        t->n_linked++;
    }
    for (size_t i = 0; i < w->n_host; i++)
        w->hx[i].dev_ns = w->hx[i].launch_ns;
    for (size_t i = w->n_host; i-- > 0;) { /* children come after their parent */
        if (w->par[i] == ANALYSE_SUM_TOP)
            continue;
        struct hx *p = &w->hx[w->par[i]];
        p->child_ns = num_sat_add(p->child_ns, len_of(w->host[i].s, w->host[i].e));
        p->dev_ns = num_sat_add(p->dev_ns, w->hx[i].dev_ns);
        p->self_dev_ns = num_sat_add(p->self_dev_ns, w->hx[i].launch_ns);
    }
    return 0;
}

/* The rows: operators, their inner calls, the device events of each. */
static int group(struct work *w)
{
    for (size_t i = 0; i < w->n_host; i++) {
        const struct analyse_sum_node *h = &w->host[i];
        const struct analyse_span *s = &w->spans[h->span];
        size_t len = analyse_sum_name_len(s->name, s->name_len);
        size_t p = w->par[i];
        struct hx *x = &w->hx[i];
        int64_t dur = len_of(h->s, h->e);
        x->row = NONE;
        if (i % STOP_EVERY == STOP_EVERY - 1 && stopped(w->stop))
            return -ECANCELED;
        if (h->type == ANALYSE_SUM_OPERATOR)
            x->row = row_add(w, s->name, len, ANALYSE_SUM_TOP, dur);
        else if (h->type != ANALYSE_SUM_CUDA_RUNTIME && p != ANALYSE_SUM_TOP &&
                 w->host[p].type == ANALYSE_SUM_OPERATOR)
            x->row = row_add(w, s->name, len, 2 * w->hx[p].row, dur);
        else
            continue;
        if (x->row == NONE)
            return -ENOMEM;
        struct rx *r = &w->rx[x->row];
        r->self_ns = num_sat_add(r->self_ns, dur > x->child_ns ? dur - x->child_ns : 0);
        r->self_dev_ns = num_sat_add(r->self_dev_ns, x->self_dev_ns);
        add_dev(r, x->dev_ns);
    }
    qsort(w->dev, w->n_dev, sizeof *w->dev, cmp_dnode);
    for (size_t i = 0; i < w->n_dev; i++) {
        const struct dnode *d = &w->dev[i];
        if (d->owner == NONE || w->hx[d->owner].row == NONE)
            continue;
        const struct analyse_span *s = &w->spans[d->span];
        size_t r = row_add(w, s->name, analyse_sum_name_len(s->name, s->name_len),
                           2 * w->hx[d->owner].row + 1, d->dur);
        if (r == NONE)
            return -ENOMEM;
        add_dev(&w->rx[r], d->dur);
        w->rx[r].self_dev_ns = w->rx[r].dev_ns;
    }
    return 0;
}

/* A row's parent row (NONE at the top) and kind. */
static size_t parent_of(const struct analyse_sum_row *r)
{
    return r->parent == ANALYSE_SUM_TOP ? NONE : r->parent / 2;
}

static enum analyse_tree_kind kind_of(const struct work *w, const struct analyse_sum_row *r)
{
    return w->modules                   ? ANALYSE_TREE_MODULE
           : r->parent == ANALYSE_SUM_TOP ? ANALYSE_TREE_OPERATOR
           : r->parent % 2              ? ANALYSE_TREE_DEVICE
                                        : ANALYSE_TREE_INNER;
}

static double ratio(int64_t part, int64_t whole)
{
    return whole > 0 ? (double)part / (double)whole : 0;
}

/* Appends row r (parent at index parent of out) and its subtree: its inner children first,
 * then its device children (module children: all), each group in creation order. */
static void emit(const struct work *w, const size_t *first, const size_t *kids, size_t r,
                 size_t parent, unsigned depth, struct analyse_tree_node *out, size_t *m)
{
    const struct analyse_sum_row *row = &w->tab.rows[r];
    const struct rx *x = &w->rx[r];
    size_t at = (*m)++;
    struct analyse_tree_node *o = &out[at];
    *o = (struct analyse_tree_node){.name = row->name, .name_len = row->name_len,
                                    .parent = parent, .depth = depth, .kind = kind_of(w, row),
                                    .calls = row->calls, .operators = x->operators,
                                    .self_ns = x->self_ns,
                                    .device_ns = x->dev_ns, .self_device_ns = x->self_dev_ns,
                                    .device_min_ns = x->dev_min_ns,
                                    .device_max_ns = x->dev_max_ns};
    if (o->kind != ANALYSE_TREE_DEVICE) {
        o->total_ns = row->total_ns;
        o->min_ns = row->min_ns;
        o->max_ns = row->max_ns;
    }
    if (o->calls == 0)
        o->min_ns = o->device_min_ns = 0;
    unsigned char k = (unsigned char)o->kind;
    o->id = util_hash(util_hash(parent == ANALYSE_TREE_ROOT ? UTIL_HASH_SEED : out[parent].id,
                                &k, 1),
                      o->name, o->name_len);
    if (parent != ANALYSE_TREE_ROOT) {
        o->ratio = ratio(o->total_ns, out[parent].total_ns);
        o->device_ratio = ratio(o->device_ns, out[parent].device_ns);
    }
    for (int kind = ANALYSE_TREE_INNER; kind < ANALYSE_TREE_KIND_COUNT; kind++)
        for (size_t c = first[r]; c < first[r + 1]; c++)
            if (kind_of(w, &w->tab.rows[kids[c]]) == (enum analyse_tree_kind)kind)
                emit(w, first, kids, kids[c], at, depth + 1, out, m);
}

/* A top-level module row by name (tb-profiler's sorted(key=name)), ties by index. */
struct named {
    const char *name;
    size_t len, idx;
};

static int cmp_named(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
    if (c != 0)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sorts the top-level rows top[0..nt) by name. Returns 0 or -ENOMEM. */
static int sort_by_name(const struct analyse_sum_row *rows, struct analyse_sum_keyed *top,
                        size_t nt)
{
    struct named *v = malloc((nt + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t a = 0; a < nt; a++)
        v[a] = (struct named){rows[top[a].idx].name, rows[top[a].idx].name_len, top[a].idx};
    qsort(v, nt, sizeof *v, cmp_named);
    for (size_t a = 0; a < nt; a++)
        top[a].idx = v[a].idx;
    free(v);
    return 0;
}

static size_t tree_parent(const void *ctx, size_t i)
{
    return parent_of(&((const struct analyse_sum_row *)ctx)[i]); /* NONE: none */
}

/* The nodes in pre-order: top-level nodes by total descending (ties in creation order). */
static int order(struct work *w, struct analyse_tree *t)
{
    const struct analyse_sum_row *rows = w->tab.rows;
    size_t n = w->tab.n;
    if (n == 0)
        return 0;
    struct analyse_sum_keyed *top = malloc(n * sizeof *top);
    size_t *first = malloc((n + 1) * sizeof *first);
    size_t *kids = malloc(n * sizeof *kids);
    t->nodes = malloc(n * sizeof *t->nodes);
    if (!top || !first || !kids || !t->nodes) {
        free(top);
        free(first);
        free(kids);
        return -ENOMEM;
    }
    size_t nt = 0;
    int64_t all = 0, all_dev = 0;
    for (size_t i = 0; i < n; i++) {
        if (parent_of(&rows[i]) == NONE) {
            top[nt++] = (struct analyse_sum_keyed){rows[i].total_ns, i};
            all = num_sat_add(all, rows[i].total_ns);
            all_dev = num_sat_add(all_dev, w->rx[i].dev_ns);
        }
    }
    analyse_sum_children(n, tree_parent, rows, first, kids);
    if (!w->modules)
        analyse_sum_sort_keyed(top, nt);
    else if (sort_by_name(rows, top, nt) < 0) {
        free(top);
        free(first);
        free(kids);
        return -ENOMEM;
    }
    size_t m = 0;
    for (size_t a = 0; a < nt; a++) {
        size_t at = m;
        emit(w, first, kids, top[a].idx, ANALYSE_TREE_ROOT, 0, t->nodes, &m);
        t->nodes[at].ratio = ratio(t->nodes[at].total_ns, all);
        t->nodes[at].device_ratio = ratio(t->nodes[at].device_ns, all_dev);
    }
    t->n = m;
    free(top);
    free(first);
    free(kids);
    return 0;
}

static int operators(struct work *w, size_t n, int64_t first, int64_t last,
                     struct analyse_tree *t)
{
    int r = analyse_sum_window(w->spans, n, first, last, &t->window);
    if (r < 0)
        return r;
    w->host = malloc((n + 1) * sizeof *w->host);
    w->dev = malloc((n + 1) * sizeof *w->dev);
    w->corr = malloc((n + 1) * sizeof *w->corr);
    if (!w->host || !w->dev || !w->corr)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_span *s = &w->spans[i];
        if (!analyse_sum_in_window(&t->window, s))
            continue;
        enum analyse_sum_type type = analyse_sum_type_of(s);
        t->n_spans++;
        if (is_device(type)) {
            w->dev[w->n_dev++] = (struct dnode){.span = i, .ts = s->ts_ns,
                                                .dur = len_of(s->ts_ns, end_of(s))};
            continue;
        }
        t->n_steps += type == ANALYSE_SUM_PROFILE_STEP;
        w->host[w->n_host++] = (struct analyse_sum_node){.span = i, .pid = s->pid, .tid = s->tid,
                                                         .s = s->ts_ns, .e = end_of(s),
                                                         .type = type};
    }
    t->n_device = w->n_dev;
    if (stopped(w->stop))
        return -ECANCELED;
    if ((r = nest_and_link(w, t)) < 0 || (r = group(w)) < 0)
        return r;
    if (stopped(w->stop))
        return -ECANCELED;
    return order(w, t);
}

int analyse_tree_operators(const struct analyse_span *spans, size_t n, int64_t first_step,
                           int64_t last_step, const _Atomic bool *stop,
                           struct analyse_tree **ret)
{
    if ((!spans && n > 0) || !ret)
        return -EINVAL;
    struct analyse_tree *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    struct work w = {.spans = spans, .stop = stop};
    int r = operators(&w, n, first_step, last_step, t);
    work_free(&w);
    if (r < 0) {
        analyse_tree_free(t);
        return r;
    }
    *ret = t;
    return 0;
}

/* ---- the module view (torch-tb-profiler 0.4.3: trace.py, event_parser.py, op_tree.py,
 * node.py, module_op.py) ---- */

/* What a span is to tb-profiler's operator tree (EventTypeMap, _parse_node()). */
enum tb_kind { TB_NONE, TB_OP, TB_STEP, TB_PY, TB_MODULE, TB_RUNTIME, TB_DEVICE };

#define MODULE_PREFIX "nn.Module: "

/* The device and runtime categories are ours as well as tb-profiler's: 0.4.3 knows only
 * "Runtime", so in torch 2.x traces (cuda_runtime) it links no kernel (docs/ANALYSIS.md). */
static enum tb_kind tb_kind_of(const struct analyse_span *s)
{
    if (analyse_span_cat_is(s, "kernel") || analyse_span_cat_is(s, "memcpy") ||
        analyse_span_cat_is(s, "gpu_memcpy") ||
        analyse_span_cat_is(s, "memset") || analyse_span_cat_is(s, "gpu_memset"))
        return TB_DEVICE;
    if (analyse_span_cat_is(s, "runtime") || analyse_span_cat_is(s, "cuda_runtime") ||
        analyse_span_cat_is(s, "cuda_driver"))
        return TB_RUNTIME;
    bool step = analyse_span_starts(s, "ProfilerStep#");
    if (analyse_span_cat_is(s, "cpu_op") || analyse_span_cat_is(s, "operator"))
        return step ? TB_STEP : TB_OP;
    if (analyse_span_cat_is(s, "user_annotation") || analyse_span_cat_is(s, "gpu_user_annotation"))
        return step ? TB_STEP : TB_NONE;
    if (analyse_span_cat_is(s, "python"))
        return TB_PY;
    if (analyse_span_cat_is(s, "python_function") && analyse_span_starts(s, MODULE_PREFIX))
        return TB_MODULE;
    return TB_NONE;
}

/* node.py is_operator_node(): an OperatorNode of a cpu_op that is not a DataLoader, an
 * optimizer or a DataParallel forward. */
static bool tb_is_operator(const struct analyse_span *s)
{
    static const char *const excluded[] = {"DataParallel.forward",
                                           "DistributedDataParallel.forward"};
    if (tb_kind_of(s) != TB_OP || analyse_span_starts(s, "Optimizer.") ||
        analyse_span_starts(s, "enumerate(DataPipe)#"))
        return false;
    if (analyse_span_starts(s, "enumerate(DataLoader)#") && s->name_len >= 9 &&
        memcmp(s->name + s->name_len - 9, ".__next__", 9) == 0)
        return false;
    for (size_t i = 0; i < sizeof excluded / sizeof excluded[0]; i++)
        if (s->name_len == strlen(excluded[i]) && memcmp(s->name, excluded[i], s->name_len) == 0)
            return false;
    return true;
}

struct dev_corr {
    int64_t id, dur;
};

static int cmp_dev_corr(const void *a, const void *b)
{
    const struct dev_corr *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* The device time of the device events with correlation id, linked[k] set for each. */
static int64_t launched(const struct dev_corr *d, size_t n, int64_t id, bool *linked)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t t = 0;
    for (; lo < n && d[lo].id == id; lo++) {
        t = num_sat_add(t, d[lo].dur);
        linked[lo] = true;
    }
    return t;
}

/* tb-profiler's tree per thread (op_tree.py build_tree_relationship()): a span goes under the
 * last open one when it starts before that one's end and ends within it; one that ends past it
 * is left out (its parent DROPPED); a runtime call's device time goes to the innermost open
 * span unless that is a module (tb-profiler links runtimes to operators by External id). */
#define DROPPED (SIZE_MAX - 1)

static int tb_nest(struct work *w, struct dev_corr *dc, size_t n_dc, struct analyse_tree *t)
{
    bool *linked = calloc(n_dc + 1, sizeof *linked);
    size_t *stack = malloc((w->n_host + 1) * sizeof *stack);
    w->par = malloc((w->n_host + 1) * sizeof *w->par);
    w->hx = calloc(w->n_host + 1, sizeof *w->hx);
    if (!linked || !stack || !w->par || !w->hx) {
        free(linked);
        free(stack);
        return -ENOMEM;
    }
    analyse_sum_sort_nodes(w->host, w->n_host);
    size_t sp = 0;
    for (size_t i = 0; i < w->n_host; i++) {
        const struct analyse_sum_node *h = &w->host[i];
        const struct analyse_span *s = &w->spans[h->span];
        if (i == 0 || h->pid != w->host[i - 1].pid || h->tid != w->host[i - 1].tid)
            sp = 0;
        while (sp > 0 && h->s >= w->host[stack[sp - 1]].e)
            sp--;
        size_t top = sp > 0 ? stack[sp - 1] : NONE;
        w->par[i] = top;
        if (tb_kind_of(s) == TB_RUNTIME) {
            if (top != NONE && tb_kind_of(&w->spans[w->host[top].span]) != TB_MODULE &&
                s->correlation >= 0)
                w->hx[top].launch_ns = num_sat_add(w->hx[top].launch_ns,
                                                   launched(dc, n_dc, s->correlation, linked));
            w->par[i] = DROPPED; /* not a node of the tree */
            continue;
        }
        if (top != NONE && h->e > w->host[top].e) {
            w->par[i] = DROPPED;
            continue;
        }
        stack[sp++] = i;
    }
    for (size_t k = 0; k < n_dc; k++)
        t->n_linked += linked[k];
    free(linked);
    free(stack);
    for (size_t i = 0; i < w->n_host; i++)
        w->hx[i].dev_ns = w->hx[i].launch_ns;
    for (size_t i = w->n_host; i-- > 0;) { /* children come after their parent */
        size_t p = w->par[i];
        if (p == NONE || p == DROPPED)
            continue;
        struct hx *x = &w->hx[p];
        x->child_ns = num_sat_add(x->child_ns, len_of(w->host[i].s, w->host[i].e));
        x->dev_ns = num_sat_add(x->dev_ns, w->hx[i].dev_ns);
        if (tb_is_operator(&w->spans[w->host[i].span])) {
            x->self_dev_ns = num_sat_add(x->self_dev_ns, w->hx[i].dev_ns);
            x->n_ops++;
        }
    }
    return 0;
}

/* The module rows, each call under its nearest module ancestor's row. */
static int module_rows(struct work *w, struct analyse_tree *t)
{
    for (size_t i = 0; i < w->n_host; i++) {
        const struct analyse_span *s = &w->spans[w->host[i].span];
        struct hx *x = &w->hx[i];
        size_t p = w->par[i];
        x->row = NONE;
        x->mod_anc = p == NONE || p == DROPPED ? NONE
                     : tb_kind_of(&w->spans[w->host[p].span]) == TB_MODULE ? p
                                                                           : w->hx[p].mod_anc;
        if (i % STOP_EVERY == STOP_EVERY - 1 && stopped(w->stop))
            return -ECANCELED;
        if (p == DROPPED || tb_kind_of(s) != TB_MODULE)
            continue;
        t->n_module_spans++;
        int64_t dur = len_of(w->host[i].s, w->host[i].e);
        size_t key = x->mod_anc == NONE ? ANALYSE_SUM_TOP : 2 * w->hx[x->mod_anc].row;
        size_t pre = sizeof MODULE_PREFIX - 1;
        x->row = row_add(w, s->name + pre, s->name_len - pre, key, dur);
        if (x->row == NONE)
            return -ENOMEM;
        struct rx *r = &w->rx[x->row];
        r->self_ns = num_sat_add(r->self_ns, dur > x->child_ns ? dur - x->child_ns : 0);
        r->self_dev_ns = num_sat_add(r->self_dev_ns, x->self_dev_ns);
        r->operators += x->n_ops;
        add_dev(r, x->dev_ns);
    }
    return 0;
}

static int modules(struct work *w, size_t n, int64_t first, int64_t last, struct analyse_tree *t)
{
    int r = analyse_sum_window(w->spans, n, first, last, &t->window);
    if (r < 0)
        return r;
    w->host = malloc((n + 1) * sizeof *w->host);
    struct dev_corr *dc = malloc((n + 1) * sizeof *dc);
    if (!w->host || !dc) {
        free(dc);
        return -ENOMEM;
    }
    size_t n_dc = 0;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_span *s = &w->spans[i];
        if (!analyse_sum_in_window(&t->window, s))
            continue;
        t->n_spans++;
        t->n_steps += analyse_sum_type_of(s) == ANALYSE_SUM_PROFILE_STEP;
        enum tb_kind k = tb_kind_of(s);
        if (k == TB_DEVICE) {
            t->n_device++;
            if (s->correlation >= 0)
                dc[n_dc++] = (struct dev_corr){s->correlation, len_of(s->ts_ns, end_of(s))};
        } else if (k != TB_NONE) {
            w->host[w->n_host++] = (struct analyse_sum_node){.span = i, .pid = s->pid,
                                                             .tid = s->tid, .s = s->ts_ns,
                                                             .e = end_of(s)};
        }
    }
    qsort(dc, n_dc, sizeof *dc, cmp_dev_corr);
    r = stopped(w->stop) ? -ECANCELED : tb_nest(w, dc, n_dc, t);
    free(dc);
    if (r == 0)
        r = module_rows(w, t);
    if (r == 0 && stopped(w->stop))
        r = -ECANCELED;
    return r < 0 ? r : order(w, t);
}

int analyse_tree_modules(const struct analyse_span *spans, size_t n, int64_t first_step,
                         int64_t last_step, const _Atomic bool *stop, struct analyse_tree **ret)
{
    if ((!spans && n > 0) || !ret)
        return -EINVAL;
    struct analyse_tree *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    struct work w = {.spans = spans, .stop = stop, .modules = true};
    int r = modules(&w, n, first_step, last_step, t);
    work_free(&w);
    if (r < 0) {
        analyse_tree_free(t);
        return r;
    }
    *ret = t;
    return 0;
}

size_t analyse_tree_bytes(size_t n)
{
    /* Per span, as a host span (its node, parent, tree figures and a stack slot) or as a device
     * span (its node, or its correlation and link flag), the larger; a correlation entry; a row
     * and its figures grown to twice their count and four hash slots; order()'s key, name,
     * buckets and the result's node. */
    size_t host = sizeof(struct analyse_sum_node) + 2 * sizeof(size_t) + sizeof(struct hx);
    size_t dev = sizeof(struct dnode) > sizeof(struct dev_corr) + 1 ? sizeof(struct dnode)
                                                                    : sizeof(struct dev_corr) + 1;
    size_t per = (host > dev ? host : dev) + sizeof(struct corr) +
                 2 * (sizeof(struct analyse_sum_row) + sizeof(struct rx)) + 4 * sizeof(size_t) +
                 sizeof(struct analyse_sum_keyed) + sizeof(struct named) + 2 * sizeof(size_t) +
                 sizeof(struct analyse_tree_node);
    if (n > (SIZE_MAX - 65536) / per)
        return SIZE_MAX;
    return 65536 + n * per;
}

void analyse_tree_free(struct analyse_tree *t)
{
    if (!t)
        return;
    free(t->nodes);
    free(t);
}
