/* SPDX-License-Identifier: MIT */
/*
 * summary: paddle.profiler's summary() tables, computed over classified spans
 * (analyse_summary.h; docs/ANALYSIS.md, "Paddle's summaries"). The formulas follow
 * python/paddle/profiler/profiler_statistic.py.
 */
#include "analyse_summary.h"
#include "../../lib/num.h"
#include "../../lib/util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

const char *const analyse_sum_type_names[ANALYSE_SUM_TYPE_COUNT] = {
    "ProfileStep", "Dataloader", "Forward", "Backward", "Optimization", "Operator",
    "OperatorInner", "UserDefined", "PythonUserDefined", "PythonOp", "DygraphKernelLaunch",
    "StaticKernelLaunch", "CudaRuntime", "Communication", "Kernel", "Memcpy", "Memset", "Other",
};

const char *const analyse_sum_model_names[ANALYSE_SUM_MODEL_COUNT] = {
    "ProfileStep", "Dataloader", "Forward", "Backward", "Optimization", "Others",
};

static bool is_device(enum analyse_sum_type t)
{
    return t == ANALYSE_SUM_KERNEL || t == ANALYSE_SUM_MEMCPY || t == ANALYSE_SUM_MEMSET;
}

enum analyse_sum_type analyse_sum_type_of(const struct analyse_span *span)
{
    /* Paddle's names are 6 to 19 bytes: most cats ("cpu_op", "kernel") fail on the length. */
    if (span->cat_len >= 6 && span->cat_len <= 19)
        for (int t = 0; t < ANALYSE_SUM_OTHER; t++) {
            const char *nm = analyse_sum_type_names[t];
            if (nm[0] == span->cat[0] && strlen(nm) == span->cat_len &&
                memcmp(span->cat, nm, span->cat_len) == 0)
                return (enum analyse_sum_type)t;
        }
    switch (span->role) {
    case ANALYSE_ROLE_STEP:
        return ANALYSE_SUM_PROFILE_STEP;
    case ANALYSE_ROLE_DATALOADER:
        return ANALYSE_SUM_DATALOADER;
    case ANALYSE_ROLE_FORWARD:
        return ANALYSE_SUM_FORWARD;
    case ANALYSE_ROLE_BACKWARD:
        return ANALYSE_SUM_BACKWARD;
    case ANALYSE_ROLE_OPTIMIZER:
        return ANALYSE_SUM_OPTIMIZATION;
    case ANALYSE_ROLE_COMMUNICATION:
        return ANALYSE_SUM_COMMUNICATION;
    case ANALYSE_ROLE_HOST_OP:
        return ANALYSE_SUM_OPERATOR;
    case ANALYSE_ROLE_KERNEL:
        return ANALYSE_SUM_KERNEL;
    case ANALYSE_ROLE_MEMCPY:
        return ANALYSE_SUM_MEMCPY;
    case ANALYSE_ROLE_MEMSET:
        return ANALYSE_SUM_MEMSET;
    case ANALYSE_ROLE_RUNTIME:
        return ANALYSE_SUM_CUDA_RUNTIME;
    case ANALYSE_ROLE_USER_ANNOTATION:
    case ANALYSE_ROLE_GPU_ANNOTATION:
        return ANALYSE_SUM_PYTHON_USER_DEFINED;
    case ANALYSE_ROLE_PYTHON:
        return ANALYSE_SUM_PYTHON_OP;
    default:
        return ANALYSE_SUM_OTHER;
    }
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

size_t analyse_sum_name_len(const char *name, size_t len)
{
    /* "...[" digits ["." digits] " " unit "]" */
    if (len < 5 || name[len - 1] != ']')
        return len;
    size_t i = len - 1;
    size_t u = i;
    while (u > 0 && name[u - 1] >= 'a' && name[u - 1] <= 'z')
        u--;
    size_t ul = i - u;
    if (!((ul == 1 && name[u] == 's') || (ul == 2 && name[u + 1] == 's' &&
                                          (name[u] == 'n' || name[u] == 'u' || name[u] == 'm'))))
        return len;
    if (u == 0 || name[u - 1] != ' ')
        return len;
    size_t d = u - 1, digits = 0;
    while (d > 0 && (is_digit(name[d - 1]) || name[d - 1] == '.')) {
        digits += is_digit(name[d - 1]);
        d--;
    }
    if (digits == 0 || d == 0 || name[d - 1] != '[')
        return len;
    size_t out = d - 1;
    if (out > 0 && name[out - 1] == ' ')
        out--;
    return out;
}

/* ---- intervals ---- */

/* Saturating int64 arithmetic: no input makes these overflow. */
#define sat_add num_sat_add

/* e - s, 0 when e <= s, INT64_MAX when it does not fit. */
static int64_t span_len(int64_t s, int64_t e)
{
    if (e <= s)
        return 0;
    uint64_t d = (uint64_t)e - (uint64_t)s;
    return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* A span's end; a negative duration counts as 0. */
static int64_t end_of(const struct analyse_span *sp)
{
    return sat_add(sp->ts_ns, sp->dur_ns > 0 ? sp->dur_ns : 0);
}

struct ival {
    int64_t s, e;
};

static int cmp_ival(const void *a, const void *b)
{
    const struct ival *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

/* Sorts iv[0..n) and merges it in place; returns the merged count. Empty intervals go. */
static size_t merge(struct ival *iv, size_t n)
{
    qsort(iv, n, sizeof *iv, cmp_ival);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (iv[i].e <= iv[i].s)
            continue;
        if (m > 0 && iv[i].s <= iv[m - 1].e) {
            if (iv[i].e > iv[m - 1].e)
                iv[m - 1].e = iv[i].e;
        } else {
            iv[m++] = iv[i];
        }
    }
    return m;
}

static int64_t length(const struct ival *iv, size_t n)
{
    int64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t = sat_add(t, span_len(iv[i].s, iv[i].e));
    return t;
}

/* Number of distinct (s, e) pairs of iv[0..n), which it sorts (Paddle's len(set(ranges))). */
static int64_t distinct(struct ival *iv, size_t n)
{
    qsort(iv, n, sizeof *iv, cmp_ival);
    int64_t d = 0;
    for (size_t i = 0; i < n; i++)
        d += i == 0 || iv[i].s != iv[i - 1].s || iv[i].e != iv[i - 1].e;
    return d;
}

/* |union(a) ∩ union(b)| of two merged, sorted lists. */
static int64_t intersect(const struct ival *a, size_t na, const struct ival *b, size_t nb)
{
    int64_t t = 0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        int64_t s = a[i].s > b[j].s ? a[i].s : b[j].s;
        int64_t e = a[i].e < b[j].e ? a[i].e : b[j].e;
        if (e > s)
            t = sat_add(t, span_len(s, e));
        if (a[i].e < b[j].e)
            i++;
        else
            j++;
    }
    return t;
}

int64_t analyse_sum_union_ns(const int64_t *start, const int64_t *end, size_t n)
{
    if (n == 0)
        return 0;
    struct ival *iv = malloc(n * sizeof *iv);
    if (!iv)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        iv[i] = (struct ival){start[i], end[i]};
    int64_t t = length(iv, merge(iv, n));
    free(iv);
    return t;
}

/* ---- grouping rows by name ---- */

static uint64_t hash(const char *s, size_t n, size_t parent)
{
    return util_hash(UTIL_HASH_SEED ^ (uint64_t)parent, s, n);
}

void analyse_sum_table_free(struct analyse_sum_table *t)
{
    free(t->rows);
    free(t->slot);
}

static int table_grow(struct analyse_sum_table *t)
{
    size_t ns = t->n_slot ? t->n_slot * 2 : 64;
    size_t *slot = calloc(ns, sizeof *slot);
    struct analyse_sum_row *rows = realloc(t->rows, ns / 2 * sizeof *rows);
    if (!slot || !rows) {
        free(slot);
        if (rows)
            t->rows = rows;
        return -ENOMEM;
    }
    t->rows = rows;
    t->cap = ns / 2;
    for (size_t r = 0; r < t->n; r++) {
        size_t k = hash(rows[r].name, rows[r].name_len, rows[r].parent) & (ns - 1);
        while (slot[k])
            k = (k + 1) & (ns - 1);
        slot[k] = r + 1;
    }
    free(t->slot);
    t->slot = slot;
    t->n_slot = ns;
    return 0;
}

/* Adds one call of dur to the row (name, parent), creating it. Returns the row's index (rows
 * never change index) or -ENOMEM. */
int64_t analyse_sum_table_add(struct analyse_sum_table *t, const char *name, size_t len, size_t parent,
                         int64_t dur)
{
    if (t->n >= t->cap && table_grow(t) < 0)
        return -ENOMEM;
    size_t k = hash(name, len, parent) & (t->n_slot - 1);
    struct analyse_sum_row *r = NULL;
    while (t->slot[k]) {
        struct analyse_sum_row *c = &t->rows[t->slot[k] - 1];
        if (c->parent == parent && c->name_len == len && memcmp(c->name, name, len) == 0) {
            r = c;
            break;
        }
        k = (k + 1) & (t->n_slot - 1);
    }
    if (!r) {
        t->slot[k] = t->n + 1;
        r = &t->rows[t->n++];
        *r = (struct analyse_sum_row){.name = name, .name_len = len, .parent = parent,
                                      .min_ns = INT64_MAX};
    }
    r->calls++;
    r->total_ns = sat_add(r->total_ns, dur);
    if (dur < r->min_ns)
        r->min_ns = dur;
    if (dur > r->max_ns)
        r->max_ns = dur;
    return r - t->rows;
}

/* Finishes rows: avg and ratio (total / denom, or 0). */
static void finish_rows(struct analyse_sum_row *rows, size_t n, int64_t denom)
{
    for (size_t i = 0; i < n; i++) {
        struct analyse_sum_row *r = &rows[i];
        r->avg_ns = r->calls ? (double)r->total_ns / (double)r->calls : 0;
        if (!r->calls)
            r->min_ns = 0;
        r->ratio = denom > 0 ? (double)r->total_ns / (double)denom : 0;
    }
}

static int cmp_keyed(const void *a, const void *b)
{
    const struct analyse_sum_keyed *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

void analyse_sum_sort_keyed(struct analyse_sum_keyed *k, size_t n)
{
    qsort(k, n, sizeof *k, cmp_keyed);
}

void analyse_sum_children(size_t n, size_t (*parent_of)(const void *ctx, size_t i),
                          const void *ctx, size_t *first, size_t *kids)
{
    memset(first, 0, (n + 1) * sizeof *first);
    for (size_t i = 0; i < n; i++) {
        size_t p = parent_of(ctx, i);
        if (p < n)
            first[p + 1]++;
    }
    for (size_t p = 0; p < n; p++)
        first[p + 1] += first[p];
    for (size_t i = 0; i < n; i++) { /* first[p] walks p's slots, then is put back */
        size_t p = parent_of(ctx, i);
        if (p < n)
            kids[first[p]++] = i;
    }
    for (size_t p = n; p > 0; p--)
        first[p] = first[p - 1];
    first[0] = 0;
}

/* Moves t's rows out in total-descending order into *ret (NULL when empty). */
static int take_sorted(struct analyse_sum_table *t, struct analyse_sum_row **ret, size_t *ret_n, bool sort)
{
    *ret = NULL;
    *ret_n = 0;
    if (t->n == 0)
        return 0;
    struct analyse_sum_row *out = malloc(t->n * sizeof *out);
    struct analyse_sum_keyed *k = malloc(t->n * sizeof *k);
    if (!out || !k) {
        free(out);
        free(k);
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->n; i++)
        k[i] = (struct analyse_sum_keyed){t->rows[i].total_ns, i};
    if (sort)
        analyse_sum_sort_keyed(k, t->n);
    for (size_t i = 0; i < t->n; i++)
        out[i] = t->rows[k[i].idx];
    free(k);
    *ret = out;
    *ret_n = t->n;
    return 0;
}

/* ---- nesting ---- */

static int cmp_node(const void *a, const void *b)
{
    const struct analyse_sum_node *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    if (x->e != y->e)
        return x->e > y->e ? -1 : 1;
    return (x->span > y->span) - (x->span < y->span);
}

void analyse_sum_sort_nodes(struct analyse_sum_node *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_node);
}

int analyse_sum_nest(struct analyse_sum_node *v, size_t n, size_t *parent)
{
    analyse_sum_sort_nodes(v, n);
    size_t *stack = malloc((n + 1) * sizeof *stack);
    if (!stack)
        return -ENOMEM;
    size_t sp = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || v[i].pid != v[i - 1].pid || v[i].tid != v[i - 1].tid)
            sp = 0;
        while (sp > 0 && v[stack[sp - 1]].e < v[i].e)
            sp--;
        parent[i] = sp > 0 ? stack[sp - 1] : ANALYSE_SUM_TOP;
        stack[sp++] = i;
    }
    free(stack);
    return 0;
}

static bool is_model(enum analyse_sum_type t)
{
    return t == ANALYSE_SUM_DATALOADER || t == ANALYSE_SUM_FORWARD ||
           t == ANALYSE_SUM_BACKWARD || t == ANALYSE_SUM_OPTIMIZATION;
}

static bool contains_nocase(const char *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++) {
        size_t j = 0;
        while (j < m) {
            char c = s[i + j];
            if (c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            if (c != needle[j])
                break;
            j++;
        }
        if (j == m)
            return true;
    }
    return false;
}

static bool is_comm_op(const char *name, size_t len)
{
    return contains_nocase(name, len, "allreduce") || contains_nocase(name, len, "broadcast") ||
           contains_nocase(name, len, "rpc");
}

static bool is_memory_name(const char *name, size_t len)
{
    return contains_nocase(name, len, "memcpy") || contains_nocase(name, len, "memorycopy") ||
           contains_nocase(name, len, "memset");
}

int64_t analyse_sum_step_number(const char *name, size_t len)
{
    const char *h = memchr(name, '#', len);
    if (!h)
        return -1;
    size_t i = (size_t)(h - name) + 1;
    int64_t v = 0;
    size_t d = 0;
    while (i < len && is_digit(name[i]) && v < INT64_MAX / 10 - 9) {
        v = v * 10 + (name[i] - '0');
        i++;
        d++;
    }
    return d ? v : -1;
}

/* The work area of one compute call. */
struct work {
    const struct analyse_span *spans;
    unsigned char *type; /* [n]: analyse_sum_type_of() of each span, computed once */
    struct analyse_sum_node *host;
    size_t n_host;
    struct ival *iv; /* scratch, [n] */
    struct analyse_sum_table ops, kernels, memory, user;
    const _Atomic bool *stop; /* the caller's: true stops the computation (-ECANCELED) */
};

#define STOP_EVERY 65536 /* spans between two looks at *stop inside a loop */

/* -ECANCELED when the caller asked the computation to stop, else 0. */
static int stopped(const struct work *w)
{
    return w->stop && atomic_load_explicit(w->stop, memory_order_relaxed) ? -ECANCELED : 0;
}

static int64_t type_union(struct work *w, enum analyse_sum_type type, int64_t *calls)
{
    size_t k = 0;
    for (size_t i = 0; i < w->n_host; i++)
        if (w->host[i].type == type)
            w->iv[k++] = (struct ival){w->host[i].s, w->host[i].e};
    *calls = (int64_t)k;
    return length(w->iv, merge(w->iv, k));
}

static int cmp_type_row(const void *a, const void *b)
{
    const struct analyse_sum_type_row *x = a, *y = b;
    if (x->device != y->device)
        return x->device ? 1 : -1;
    if (x->time_ns != y->time_ns)
        return x->time_ns > y->time_ns ? -1 : 1;
    return (x->type > y->type) - (x->type < y->type);
}

/* A kernel's interval and its device. */
struct pival {
    int64_t pid;
    struct ival v;
};

static int cmp_pival(const void *a, const void *b)
{
    const struct pival *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return cmp_ival(&x->v, &y->v);
}

/* Operators (every Operator node, nested ones too) with their inner rows (direct children of
 * another type, runtime spans excepted), the model stages (outermost model nodes) and the
 * ProfileStep nodes outside any model node. */
static int walk_host(struct work *w, struct analyse_summary *sum)
{
    size_t *par = malloc((w->n_host + 1) * sizeof *par);
    size_t *model_depth = malloc((w->n_host + 1) * sizeof *model_depth); /* model ancestors */
    size_t *op_row = malloc((w->n_host + 1) * sizeof *op_row);
    if (!par || !model_depth || !op_row || analyse_sum_nest(w->host, w->n_host, par) < 0) {
        free(par);
        free(model_depth);
        free(op_row);
        return -ENOMEM;
    }
    struct analyse_sum_table model = {0};
    int r = 0;
    for (size_t i = 0; i < w->n_host && r == 0; i++) {
        const struct analyse_sum_node *nd = &w->host[i];
        const struct analyse_span *s = &w->spans[nd->span];
        if (i % STOP_EVERY == STOP_EVERY - 1 && (r = stopped(w)) < 0)
            break;
        const struct analyse_sum_node *parent = par[i] != ANALYSE_SUM_TOP ? &w->host[par[i]] : NULL;
        size_t in_model = parent ? model_depth[par[i]] : 0;
        size_t len = analyse_sum_name_len(s->name, s->name_len);
        int64_t dur = span_len(nd->s, nd->e);
        op_row[i] = ANALYSE_SUM_TOP;
        int64_t k = 0;
        if (nd->type == ANALYSE_SUM_OPERATOR) {
            k = analyse_sum_table_add(&w->ops, s->name, len, ANALYSE_SUM_TOP, dur);
            op_row[i] = (size_t)k;
        } else if (parent && parent->type == ANALYSE_SUM_OPERATOR &&
                   nd->type != ANALYSE_SUM_CUDA_RUNTIME) {
            k = analyse_sum_table_add(&w->ops, s->name, len, op_row[par[i]], dur);
        }
        if (k >= 0 && in_model == 0 &&
            (is_model(nd->type) || nd->type == ANALYSE_SUM_PROFILE_STEP))
            k = analyse_sum_table_add(&model, analyse_sum_type_names[nd->type],
                                      strlen(analyse_sum_type_names[nd->type]), ANALYSE_SUM_TOP,
                                      dur);
        if (k < 0)
            r = (int)k;
        model_depth[i] = in_model + is_model(nd->type);
    }
    free(par);
    free(model_depth);
    free(op_row);
    for (size_t k = 0; r == 0 && k < model.n; k++) {
        for (int m = 0; m < ANALYSE_SUM_MODEL_OTHERS; m++)
            if (strlen(analyse_sum_model_names[m]) == model.rows[k].name_len &&
                memcmp(analyse_sum_model_names[m], model.rows[k].name,
                       model.rows[k].name_len) == 0) {
                sum->model[m] = model.rows[k];
                sum->model[m].name = analyse_sum_model_names[m];
                sum->has_model |= m != ANALYSE_SUM_MODEL_PROFILE_STEP;
            }
    }
    analyse_sum_table_free(&model);
    return r;
}

/* The operator rows in Paddle's order: top-level rows by total desc, each followed by its inner
 * rows in first-appearance order; parent indices rewritten to the new positions. Inner ratios
 * are of their operator's total, top-level ratios of the sum of operator totals. The inner rows
 * are bucketed by parent first (a counting sort, stable), so this is O(n log n) in the number
 * of rows, not one scan of every row per operator (issue 18: 80 k names took 5 s). */
static size_t row_parent(const void *ctx, size_t i)
{
    return ((const struct analyse_sum_row *)ctx)[i].parent; /* ANALYSE_SUM_TOP: none */
}

static int order_ops(struct analyse_sum_table *t, struct analyse_summary *sum)
{
    if (t->n == 0)
        return 0;
    size_t n = t->n;
    struct analyse_sum_keyed *k = malloc(n * sizeof *k);
    size_t *first = malloc((n + 1) * sizeof *first); /* inner rows of row p: kids[first[p], first[p + 1]) */
    size_t *kids = malloc(n * sizeof *kids);
    struct analyse_sum_row *out = malloc(n * sizeof *out);
    if (!k || !first || !kids || !out) {
        free(k);
        free(first);
        free(kids);
        free(out);
        return -ENOMEM;
    }
    size_t nt = 0;
    int64_t all = 0;
    for (size_t i = 0; i < n; i++) {
        if (t->rows[i].parent == ANALYSE_SUM_TOP) {
            k[nt++] = (struct analyse_sum_keyed){t->rows[i].total_ns, i};
            all = sat_add(all, t->rows[i].total_ns);
        }
    }
    analyse_sum_children(n, row_parent, t->rows, first, kids);
    analyse_sum_sort_keyed(k, nt);
    size_t m = 0;
    for (size_t a = 0; a < nt; a++) {
        size_t top = k[a].idx;
        size_t at = m;
        out[m] = t->rows[top];
        finish_rows(&out[m], 1, all);
        m++;
        for (size_t c = first[top]; c < first[top + 1]; c++) {
            out[m] = t->rows[kids[c]];
            out[m].parent = at;
            finish_rows(&out[m], 1, t->rows[top].total_ns);
            m++;
        }
    }
    free(k);
    free(first);
    free(kids);
    sum->ops = out;
    sum->n_ops = m;
    return 0;
}

static int device_part(struct work *w, const size_t *dev, size_t n_dev, struct analyse_summary *sum)
{
    /* Per type, the union over every device; per device, the kernel union. */
    for (int t = ANALYSE_SUM_KERNEL; t <= ANALYSE_SUM_MEMSET; t++) {
        size_t k = 0;
        for (size_t i = 0; i < n_dev; i++) {
            const struct analyse_span *s = &w->spans[dev[i]];
            if (w->type[dev[i]] == t)
                w->iv[k++] = (struct ival){s->ts_ns, end_of(s)};
        }
        if (k == 0)
            continue;
        struct analyse_sum_type_row *row = &sum->types[sum->n_types++];
        *row = (struct analyse_sum_type_row){.type = (enum analyse_sum_type)t, .device = true,
                                             .calls = (int64_t)k};
        row->time_ns = length(w->iv, merge(w->iv, k));
    }
    /* Devices, by pid: the kernels sorted by (pid, start, end), each pid's run merged. One sort,
     * not a scan of every kernel per device (issue 18: 80 k device pids took over 30 s). */
    size_t nk = 0;
    for (size_t i = 0; i < n_dev; i++)
        nk += w->type[dev[i]] == ANALYSE_SUM_KERNEL;
    if (nk > 0) {
        struct pival *pv = malloc(nk * sizeof *pv);
        if (!pv)
            return -ENOMEM;
        nk = 0;
        for (size_t i = 0; i < n_dev; i++) {
            const struct analyse_span *s = &w->spans[dev[i]];
            if (w->type[dev[i]] == ANALYSE_SUM_KERNEL)
                pv[nk++] = (struct pival){s->pid, {s->ts_ns, end_of(s)}};
        }
        qsort(pv, nk, sizeof *pv, cmp_pival);
        size_t n_pids = 0;
        for (size_t i = 0; i < nk; i++)
            n_pids += i == 0 || pv[i].pid != pv[i - 1].pid;
        sum->gpus = malloc(n_pids * sizeof *sum->gpus);
        if (!sum->gpus) {
            free(pv);
            return -ENOMEM;
        }
        for (size_t i = 0; i < nk;) {
            size_t j = i, k = 0;
            for (; j < nk && pv[j].pid == pv[i].pid; j++)
                w->iv[k++] = pv[j].v;
            int64_t busy = length(w->iv, merge(w->iv, k));
            sum->gpus[sum->n_gpus++] = (struct analyse_sum_gpu){
                .pid = pv[i].pid, .busy_ns = busy,
                .utilization = sum->total_ns > 0 ? (double)busy / (double)sum->total_ns : 0};
            i = j;
        }
        free(pv);
    }
    /* Kernel table. */
    for (size_t i = 0; i < n_dev; i++) {
        const struct analyse_span *s = &w->spans[dev[i]];
        if (w->type[dev[i]] == ANALYSE_SUM_KERNEL &&
            analyse_sum_table_add(&w->kernels, s->name, analyse_sum_name_len(s->name, s->name_len),
                      ANALYSE_SUM_TOP, span_len(s->ts_ns, end_of(s))) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Distributed: communication (host comm spans ∪ comm kernels), computation (other kernels),
 * overlap; also the overview's Communication rows as Paddle replaces them. */
static int distributed(struct work *w, const size_t *dev, size_t n_dev,
                       struct analyse_summary *sum)
{
    size_t n_all = w->n_host + n_dev;
    struct ival *cpu = malloc((n_all + 1) * sizeof *cpu);
    struct ival *gpu = malloc((n_dev + 1) * sizeof *gpu);
    struct ival *comp = malloc((n_dev + 1) * sizeof *comp);
    struct ival *comm = malloc((n_all + 1) * sizeof *comm);
    if (!cpu || !gpu || !comp || !comm) {
        free(cpu);
        free(gpu);
        free(comp);
        free(comm);
        return -ENOMEM;
    }
    size_t nc = 0, ng = 0, np = 0;
    for (size_t i = 0; i < w->n_host; i++) {
        const struct analyse_sum_node *nd = &w->host[i];
        const struct analyse_span *s = &w->spans[nd->span];
        if (nd->type == ANALYSE_SUM_COMMUNICATION ||
            (nd->type == ANALYSE_SUM_OPERATOR && is_comm_op(s->name, s->name_len)))
            cpu[nc++] = (struct ival){nd->s, nd->e};
    }
    for (size_t i = 0; i < n_dev; i++) {
        const struct analyse_span *s = &w->spans[dev[i]];
        if (w->type[dev[i]] != ANALYSE_SUM_KERNEL)
            continue;
        struct ival v = {s->ts_ns, end_of(s)};
        if (contains_nocase(s->name, s->name_len, "nccl") ||
            contains_nocase(s->name, s->name_len, "xccl"))
            gpu[ng++] = v;
        else
            comp[np++] = v;
    }
    sum->comm_cpu_calls = distinct(cpu, nc);
    sum->comm_gpu_calls = distinct(gpu, ng);
    nc = merge(cpu, nc);
    ng = merge(gpu, ng);
    np = merge(comp, np);
    memcpy(comm, cpu, nc * sizeof *comm);
    memcpy(comm + nc, gpu, ng * sizeof *comm);
    size_t nm = merge(comm, nc + ng);
    sum->comm_ns = length(comm, nm);
    sum->comp_ns = length(comp, np);
    sum->overlap_ns = intersect(comm, nm, comp, np);
    for (size_t t = 0; t < sum->n_types; t++) {
        struct analyse_sum_type_row *row = &sum->types[t];
        if (row->type != ANALYSE_SUM_COMMUNICATION)
            continue;
        if (!row->device && nc > 0) {
            row->time_ns = length(cpu, nc);
            row->calls = sum->comm_cpu_calls;
        }
    }
    if (nc > 0) {
        bool have = false;
        for (size_t t = 0; t < sum->n_types; t++)
            have |= sum->types[t].type == ANALYSE_SUM_COMMUNICATION && !sum->types[t].device;
        if (!have)
            sum->types[sum->n_types++] = (struct analyse_sum_type_row){
                .type = ANALYSE_SUM_COMMUNICATION, .calls = sum->comm_cpu_calls,
                .time_ns = length(cpu, nc)};
    }
    if (ng > 0)
        sum->types[sum->n_types++] = (struct analyse_sum_type_row){
            .type = ANALYSE_SUM_COMMUNICATION, .device = true, .calls = sum->comm_gpu_calls,
            .time_ns = length(gpu, ng)};
    free(cpu);
    free(gpu);
    free(comp);
    free(comm);
    return 0;
}

/* Memory manipulation and user-defined rows. */
static int user_rows(struct work *w)
{
    for (size_t i = 0; i < w->n_host; i++) {
        const struct analyse_sum_node *nd = &w->host[i];
        if (nd->type != ANALYSE_SUM_USER_DEFINED && nd->type != ANALYSE_SUM_PYTHON_USER_DEFINED)
            continue;
        const struct analyse_span *s = &w->spans[nd->span];
        size_t len = analyse_sum_name_len(s->name, s->name_len);
        int64_t r = 0;
        if (is_memory_name(s->name, len))
            r = analyse_sum_table_add(&w->memory, s->name, len, ANALYSE_SUM_TOP, span_len(nd->s, nd->e));
        else if (nd->type == ANALYSE_SUM_PYTHON_USER_DEFINED)
            r = analyse_sum_table_add(&w->user, s->name, len, ANALYSE_SUM_TOP, span_len(nd->s, nd->e));
        if (r < 0)
            return (int)r;
    }
    return 0;
}

int analyse_sum_window(const struct analyse_span *spans, size_t n, int64_t first, int64_t last,
                       struct analyse_sum_window *ret)
{
    bool bounded = first != ANALYSE_ST_ALL_FIRST || last != ANALYSE_ST_ALL_LAST;
    int64_t w0 = INT64_MAX, w1 = INT64_MIN;
    *ret = (struct analyse_sum_window){.bounded = bounded, .first_step = -1, .last_step = -1};
    for (size_t i = 0; i < n; i++) {
        if (analyse_sum_type_of(&spans[i]) != ANALYSE_SUM_PROFILE_STEP)
            continue;
        int64_t num = analyse_sum_step_number(spans[i].name, spans[i].name_len);
        if (bounded && (num < first || num > last))
            continue;
        if (spans[i].ts_ns < w0)
            w0 = spans[i].ts_ns;
        if (end_of(&spans[i]) > w1)
            w1 = end_of(&spans[i]);
        if (num >= 0 && (ret->first_step < 0 || num < ret->first_step))
            ret->first_step = num;
        if (num > ret->last_step)
            ret->last_step = num;
    }
    if (bounded && w0 > w1)
        return -ENOENT;
    if (bounded) {
        ret->start_ns = w0;
        ret->end_ns = w1;
    }
    return 0;
}

bool analyse_sum_in_window(const struct analyse_sum_window *win, const struct analyse_span *s)
{
    return !win->bounded || (s->ts_ns >= win->start_ns && s->ts_ns < win->end_ns);
}

static int compute(struct work *w, const struct analyse_span *spans, size_t n, int64_t first,
                   int64_t last, struct analyse_summary *sum)
{
    struct analyse_sum_window win;
    int r = analyse_sum_window(spans, n, first, last, &win);
    if (r < 0)
        return r;
    sum->first_step = win.first_step;
    sum->last_step = win.last_step;
    sum->window_start_ns = win.start_ns;
    sum->window_end_ns = win.end_ns;
    w->type = malloc(n + 1);
    if (!w->type)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        w->type[i] = (unsigned char)analyse_sum_type_of(&spans[i]);
    w->host = malloc((n + 1) * sizeof *w->host);
    size_t *dev = malloc((n + 1) * sizeof *dev);
    w->iv = malloc((n + 1) * sizeof *w->iv);
    if (!w->host || !dev || !w->iv) {
        free(dev);
        return -ENOMEM;
    }
    size_t n_dev = 0;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_span *s = &spans[i];
        if (!analyse_sum_in_window(&win, s))
            continue;
        enum analyse_sum_type t = (enum analyse_sum_type)w->type[i];
        sum->n_spans++;
        if (is_device(t)) {
            dev[n_dev++] = i;
            continue;
        }
        w->host[w->n_host++] = (struct analyse_sum_node){.span = i, .pid = s->pid, .tid = s->tid,
                                             .s = s->ts_ns, .e = end_of(s),
                                             .type = t};
        sum->n_steps += t == ANALYSE_SUM_PROFILE_STEP;
    }
    if ((r = stopped(w)) < 0) {
        free(dev);
        return r;
    }
    /* Overview host rows: merged time per type. */
    for (int t = 0; t < ANALYSE_SUM_KERNEL; t++) {
        int64_t calls;
        int64_t time = type_union(w, (enum analyse_sum_type)t, &calls);
        if (t == ANALYSE_SUM_PROFILE_STEP)
            sum->total_ns = time;
        if (calls > 0)
            sum->types[sum->n_types++] = (struct analyse_sum_type_row){
                .type = (enum analyse_sum_type)t, .calls = calls, .time_ns = time};
    }
    if ((r = stopped(w)) == 0)
        r = walk_host(w, sum);
    if (r == 0 && (r = stopped(w)) == 0)
        r = device_part(w, dev, n_dev, sum);
    if (r == 0 && (r = stopped(w)) == 0)
        r = distributed(w, dev, n_dev, sum);
    if (r == 0 && (r = stopped(w)) == 0)
        r = user_rows(w);
    free(dev);
    if (r < 0)
        return r;
    /* Model rows replace the merged time of their types, as Paddle's overview does. */
    for (size_t t = 0; t < sum->n_types; t++) {
        struct analyse_sum_type_row *row = &sum->types[t];
        int m = row->type == ANALYSE_SUM_DATALOADER     ? ANALYSE_SUM_MODEL_DATALOADER
                : row->type == ANALYSE_SUM_FORWARD      ? ANALYSE_SUM_MODEL_FORWARD
                : row->type == ANALYSE_SUM_BACKWARD     ? ANALYSE_SUM_MODEL_BACKWARD
                : row->type == ANALYSE_SUM_OPTIMIZATION ? ANALYSE_SUM_MODEL_OPTIMIZATION
                                                        : -1;
        if (m >= 0 && !row->device && sum->model[m].calls > 0) {
            row->calls = sum->model[m].calls;
            row->time_ns = sum->model[m].total_ns;
        }
    }
    for (size_t t = 0; t < sum->n_types; t++)
        sum->types[t].ratio =
            sum->total_ns > 0 ? (double)sum->types[t].time_ns / (double)sum->total_ns : 0;
    qsort(sum->types, sum->n_types, sizeof *sum->types, cmp_type_row);
    /* Model: ratios of the step total; Others = total - the four stages. */
    int64_t staged = 0;
    for (int m = 0; m < ANALYSE_SUM_MODEL_OTHERS; m++) {
        finish_rows(&sum->model[m], 1, sum->total_ns);
        sum->model[m].name = analyse_sum_model_names[m];
        sum->model[m].name_len = strlen(analyse_sum_model_names[m]);
        sum->model[m].parent = ANALYSE_SUM_TOP;
        if (m != ANALYSE_SUM_MODEL_PROFILE_STEP)
            staged = sat_add(staged, sum->model[m].total_ns);
    }
    struct analyse_sum_row *o = &sum->model[ANALYSE_SUM_MODEL_OTHERS];
    *o = (struct analyse_sum_row){.name = analyse_sum_model_names[ANALYSE_SUM_MODEL_OTHERS],
                                  .name_len = 6, .parent = ANALYSE_SUM_TOP,
                                  .total_ns = sat_add(sum->total_ns, staged == INT64_MIN ? INT64_MAX : -staged)};
    o->ratio = sum->total_ns > 0 ? (double)o->total_ns / (double)sum->total_ns : 0;
    /* Tables. */
    if ((r = stopped(w)) < 0 || (r = order_ops(&w->ops, sum)) < 0 || (r = stopped(w)) < 0)
        return r;
    int64_t kernel_total = 0;
    for (size_t i = 0; i < w->kernels.n; i++)
        kernel_total = sat_add(kernel_total, w->kernels.rows[i].total_ns);
    finish_rows(w->kernels.rows, w->kernels.n, kernel_total);
    finish_rows(w->memory.rows, w->memory.n, sum->total_ns);
    finish_rows(w->user.rows, w->user.n, sum->total_ns);
    if ((r = take_sorted(&w->kernels, &sum->kernels, &sum->n_kernels, true)) < 0 ||
        (r = take_sorted(&w->memory, &sum->memory, &sum->n_memory, false)) < 0 ||
        (r = take_sorted(&w->user, &sum->user, &sum->n_user, true)) < 0)
        return r;
    return 0;
}

int analyse_summary_compute(const struct analyse_span *spans, size_t n, int64_t first_step,
                            int64_t last_step, struct analyse_summary **ret_sum)
{
    return analyse_summary_compute_until(spans, n, first_step, last_step, NULL, ret_sum);
}

int analyse_summary_compute_until(const struct analyse_span *spans, size_t n, int64_t first_step,
                                  int64_t last_step, const _Atomic bool *stop,
                                  struct analyse_summary **ret_sum)
{
    if ((!spans && n > 0) || !ret_sum)
        return -EINVAL;
    struct analyse_summary *sum = calloc(1, sizeof *sum);
    if (!sum)
        return -ENOMEM;
    struct work w = {.spans = spans, .stop = stop};
    int r = compute(&w, spans, n, first_step, last_step, sum);
    free(w.host);
    free(w.iv);
    free(w.type);
    analyse_sum_table_free(&w.ops);
    analyse_sum_table_free(&w.kernels);
    analyse_sum_table_free(&w.memory);
    analyse_sum_table_free(&w.user);
    if (r < 0) {
        analyse_summary_free(sum);
        return r;
    }
    *ret_sum = sum;
    return 0;
}

size_t analyse_summary_bytes(size_t n)
{
    /* Per span: its type, host node or device index and interval; as a kernel, its device's
     * interval and row; a table's row grown to twice its count and four hash slots;
     * order_ops()'s keys, buckets and the result's row. */
    size_t per = 1 + sizeof(struct analyse_sum_node) + sizeof(size_t) + sizeof(struct ival) +
                 sizeof(struct pival) + sizeof(struct analyse_sum_gpu) +
                 2 * sizeof(struct analyse_sum_row) + 4 * sizeof(size_t) + sizeof(struct analyse_sum_keyed) +
                 3 * sizeof(size_t) + sizeof(struct analyse_sum_row);
    if (n > (SIZE_MAX - 65536) / per)
        return SIZE_MAX;
    return 65536 + n * per;
}

void analyse_summary_free(struct analyse_summary *sum)
{
    if (!sum)
        return;
    free(sum->ops);
    free(sum->kernels);
    free(sum->memory);
    free(sum->user);
    free(sum->gpus);
    free(sum);
}
