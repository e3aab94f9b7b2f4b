/* SPDX-License-Identifier: MIT */
/*
 * tbprof: torch-tb-profiler's kernel view and its distributed view's communication-operator
 * table (analyse_tbprof.h), from one rank's spans at a time. Pure: the caller reads the spans.
 *
 * The launch link both tables use: a kernel's correlation names its runtime call, and the call
 * lies within the host operators of its thread; the innermost one launched it (torch's own
 * nesting rule, the one key_averages() attributes a kernel's time to an operator by). One sweep
 * per rank sorts the host spans and runtime calls by (pid, tid, start, end desc) and walks them
 * with a stack, giving each operator its parent and each call its operator.
 */
#include "analyse_tbprof.h"
#include "analyse_ops.h"
#include "analyse_summary.h" /* analyse_sum_union_ns() */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* NVIDIA PyProf's tensor-core kernel-name patterns (pyprof/prof/tc.py), the list
 * torch-tb-profiler 0.4.3 documents as its rule: a kernel whose name contains one of them. */
static const char *const tc_patterns[] = {
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
    "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm",
    "c1688",
};

static bool contains(const char *s, size_t n, const char *pat)
{
    size_t m = strlen(pat);
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(s + i, pat, m) == 0)
            return true;
    return false;
}

bool analyse_tbk_tensor_core(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof tc_patterns / sizeof tc_patterns[0]; i++)
        if (contains(name, len, tc_patterns[i]))
            return true;
    return false;
}

int64_t analyse_tbk_type_bytes(const char *type, size_t len)
{
    /* torch-tb-profiler's six (communication.py), then the other scalar types Kineto names. */
    static const struct {
        const char *name;
        int64_t bytes;
    } types[] = {
        {"long int", 8}, {"float", 4}, {"int", 4}, {"c10::Half", 2}, {"c10::BFloat16", 2},
        {"unsigned char", 1}, {"long", 8}, {"double", 8}, {"short int", 2}, {"short", 2},
        {"signed char", 1}, {"bool", 1}, {"c10::complex<float>", 8}, {"c10::complex<double>", 16},
        {"c10::complex<c10::Half>", 4}, {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2", 1},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i].name) == len && memcmp(types[i].name, type, len) == 0)
            return types[i].bytes;
    return 0;
}

/* ---- the launch link ---- */

struct item {
    int64_t pid, tid, ts, end;
    uint32_t idx;
    uint8_t runtime;
};

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    if (x->runtime != y->runtime)
        return x->runtime - y->runtime;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

struct corr_op {
    int64_t corr;
    int64_t op; /* the runtime call's operator (a span index), -1: none */
};

static int cmp_corr(const void *a, const void *b)
{
    const struct corr_op *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

struct link {
    int64_t *parent;      /* [n]: a host operator's parent operator, -1 none (others: -1) */
    struct corr_op *map;  /* runtime calls by correlation */
    size_t n_map;
};

static void link_done(struct link *l)
{
    free(l->parent);
    free(l->map);
}

static int64_t end_of(const struct analyse_span *s)
{
    return s->dur_ns > INT64_MAX - s->ts_ns ? INT64_MAX : s->ts_ns + s->dur_ns;
}

#define OPS_MASK (ANALYSE_ROLES_HOST & ~ANALYSE_ROLE_BIT(ANALYSE_ROLE_RUNTIME))

static int link_build(const struct analyse_span *v, size_t n, struct link *l)
{
    *l = (struct link){0};
    size_t m = 0, n_rt = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t bit = ANALYSE_ROLE_BIT(v[i].role);
        m += (bit & OPS_MASK) != 0 || (v[i].role == ANALYSE_ROLE_RUNTIME && v[i].correlation >= 0);
        n_rt += v[i].role == ANALYSE_ROLE_RUNTIME && v[i].correlation >= 0;
    }
    struct item *it = malloc((m ? m : 1) * sizeof *it);
    int64_t *stack = malloc((m ? m : 1) * sizeof *stack);
    l->parent = malloc((n ? n : 1) * sizeof *l->parent);
    l->map = malloc((n_rt ? n_rt : 1) * sizeof *l->map);
    if (!it || !stack || !l->parent || !l->map) {
        free(it);
        free(stack);
        link_done(l);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        l->parent[i] = -1;
        bool rt = v[i].role == ANALYSE_ROLE_RUNTIME && v[i].correlation >= 0;
        if (rt || (ANALYSE_ROLE_BIT(v[i].role) & OPS_MASK))
            it[k++] = (struct item){v[i].pid, v[i].tid, v[i].ts_ns, end_of(&v[i]), (uint32_t)i,
                                    rt};
    }
    qsort(it, m, sizeof *it, cmp_item);
    size_t depth = 0;
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && (it[i].pid != it[i - 1].pid || it[i].tid != it[i - 1].tid))
            depth = 0;
        while (depth > 0 && end_of(&v[stack[depth - 1]]) < it[i].end)
            depth--;
        int64_t top = depth > 0 ? stack[depth - 1] : -1;
        if (it[i].runtime) {
            l->map[l->n_map++] = (struct corr_op){v[it[i].idx].correlation, top};
        } else {
            l->parent[it[i].idx] = top;
            stack[depth++] = it[i].idx;
        }
    }
    free(it);
    free(stack);
    qsort(l->map, l->n_map, sizeof *l->map, cmp_corr);
    return 0;
}

/* The operator that launched kernel k: -1 when it has no runtime call or the call no operator,
 * -2 when its call is unknown. */
static int64_t launcher(const struct link *l, const struct analyse_span *k)
{
    if (k->correlation < 0)
        return -2;
    size_t lo = 0, hi = l->n_map;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->map[mid].corr < k->correlation)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < l->n_map && l->map[lo].corr == k->correlation ? l->map[lo].op : -2;
}

/* ---- kernels ---- */

struct kref {
    uint32_t k;   /* the kernel's span */
    int64_t op;   /* its operator's span, -1 none (BY_OPERATOR only) */
};

struct sort_ctx {
    const struct analyse_span *v;
    const struct analyse_tbk_args *a;
    bool by_op;
};

static int cmp_text(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static int cmp_i32s(const int32_t *x, uint8_t nx, const int32_t *y, uint8_t ny)
{
    if (nx != ny)
        return nx < ny ? -1 : 1;
    for (uint8_t i = 0; i < nx; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* 0 when kernels x and y fall in one row. */
static int cmp_key(const struct sort_ctx *c, const struct kref *x, const struct kref *y)
{
    const struct analyse_span *p = &c->v[x->k], *q = &c->v[y->k];
    int r = cmp_text(p->name, p->name_len, q->name, q->name_len);
    if (r || !c->by_op)
        return r;
    if (x->op != y->op) {
        if (x->op < 0 || y->op < 0)
            return x->op < 0 ? -1 : 1;
        const struct analyse_span *o = &c->v[x->op], *u = &c->v[y->op];
        if ((r = cmp_text(o->name, o->name_len, u->name, u->name_len)) != 0)
            return r;
    }
    const struct analyse_tbk_args *a = &c->a[x->k], *b = &c->a[y->k];
    if ((r = cmp_i32s(a->grid, a->n_grid, b->grid, b->n_grid)) != 0 ||
        (r = cmp_i32s(a->block, a->n_block, b->block, b->n_block)) != 0)
        return r;
    int64_t ra = a->regs > 0 ? a->regs : 0, rb = b->regs > 0 ? b->regs : 0;
    int64_t sa = a->smem > 0 ? a->smem : 0, sb = b->smem > 0 ? b->smem : 0;
    if (ra != rb)
        return ra < rb ? -1 : 1;
    return (sa > sb) - (sa < sb);
}

static int cmp_row(const void *a, const void *b)
{
    const struct analyse_tbk_row *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    int r = cmp_text(x->name, x->name_len, y->name, y->name_len);
    if (r)
        return r;
    if (!x->op || !y->op)
        return (x->op != NULL) - (y->op != NULL);
    return cmp_text(x->op, x->op_len, y->op, y->op_len);
}

/* A stable merge sort by cmp_key() (qsort() takes no context). */
static void merge_sort(struct kref *v, struct kref *tmp, size_t n, const struct sort_ctx *c)
{
    if (n < 2)
        return;
    if (n <= 16) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && cmp_key(c, &v[j - 1], &v[j]) > 0; j--) {
                struct kref t = v[j];
                v[j] = v[j - 1];
                v[j - 1] = t;
            }
        return;
    }
    size_t h = n / 2;
    merge_sort(v, tmp, h, c);
    merge_sort(v + h, tmp, n - h, c);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = cmp_key(c, &v[j], &v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

int analyse_tbk_compute(const struct analyse_span *v, const struct analyse_tbk_args *args,
                        size_t n, enum analyse_tbk_group group, struct analyse_tbk **ret)
{
    *ret = NULL;
    struct analyse_tbk *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    size_t nk = 0;
    for (size_t i = 0; i < n; i++)
        nk += v[i].role == ANALYSE_ROLE_KERNEL;
    struct kref *ks = malloc((nk ? nk : 1) * sizeof *ks);
    struct kref *tmp = malloc((nk ? nk : 1) * sizeof *tmp);
    struct link l = {0};
    int r = !ks || !tmp ? -ENOMEM : link_build(v, n, &l);
    if (r < 0) {
        free(ks);
        free(tmp);
        free(t);
        return r;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].role != ANALYSE_ROLE_KERNEL)
            continue;
        int64_t op = launcher(&l, &v[i]);
        t->launched += op >= 0;
        ks[k++] = (struct kref){(uint32_t)i, op >= 0 ? op : -1};
        const struct analyse_tbk_args *a = &args[i];
        t->kernels++;
        t->total_ns += v[i].dur_ns;
        if (analyse_tbk_tensor_core(v[i].name, v[i].name_len))
            t->tc_ns += v[i].dur_ns;
        t->has_blocks_per_sm |= a->blocks_per_sm > 0;
        t->has_occupancy |= a->occupancy_pct >= 0;
    }
    link_done(&l);
    struct sort_ctx c = {v, args, group == ANALYSE_TBK_BY_OPERATOR};
    merge_sort(ks, tmp, nk, &c);
    free(tmp);
    size_t n_rows = 0;
    for (size_t i = 0; i < nk; i++)
        n_rows += i == 0 || cmp_key(&c, &ks[i - 1], &ks[i]) != 0;
    t->rows = calloc(n_rows ? n_rows : 1, sizeof *t->rows);
    if (!t->rows) {
        free(ks);
        free(t);
        return -ENOMEM;
    }
    struct analyse_tbk_row *row = NULL;
    double bsm = 0, occ = 0;
    for (size_t i = 0; i <= nk; i++) {
        bool new_row = i == nk || i == 0 || cmp_key(&c, &ks[i - 1], &ks[i]) != 0;
        if (new_row && row) {
            row->blocks_per_sm = row->total_ns > 0 ? bsm / (double)row->total_ns : 0;
            row->occupancy_pct = row->total_ns > 0 ? occ / (double)row->total_ns : 0;
        }
        if (i == nk)
            break;
        const struct analyse_span *s = &v[ks[i].k];
        const struct analyse_tbk_args *a = &args[ks[i].k];
        if (new_row) {
            row = &t->rows[t->n_rows++];
            *row = (struct analyse_tbk_row){.name = s->name, .name_len = s->name_len,
                                            .regs = -1, .smem = -1, .min_ns = INT64_MAX,
                                            .tensor_core =
                                                analyse_tbk_tensor_core(s->name, s->name_len)};
            if (c.by_op) {
                if (ks[i].op >= 0) {
                    row->op = v[ks[i].op].name;
                    row->op_len = v[ks[i].op].name_len;
                }
                memcpy(row->grid, a->grid, sizeof row->grid);
                memcpy(row->block, a->block, sizeof row->block);
                row->n_grid = a->n_grid;
                row->n_block = a->n_block;
                row->regs = a->regs;
                row->smem = a->smem;
            }
            bsm = occ = 0;
        }
        row->calls++;
        row->total_ns += s->dur_ns;
        if (s->dur_ns < row->min_ns)
            row->min_ns = s->dur_ns;
        if (s->dur_ns > row->max_ns)
            row->max_ns = s->dur_ns;
        bsm += (a->blocks_per_sm > 0 ? a->blocks_per_sm : 0) * (double)s->dur_ns;
        occ += (a->occupancy_pct > 0 ? a->occupancy_pct : 0) * (double)s->dur_ns;
    }
    free(ks);
    qsort(t->rows, t->n_rows, sizeof *t->rows, cmp_row);
    *ret = t;
    return 0;
}

void analyse_tbk_free(struct analyse_tbk *t)
{
    if (!t)
        return;
    free(t->rows);
    free(t);
}

/* ---- communication operators ---- */

struct member {
    size_t call;  /* index into the rank's calls */
    int64_t ts, end;
};

static int cmp_member(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    if (x->call != y->call)
        return x->call < y->call ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->end < y->end) - (x->end > y->end);
}

struct comm_ref {
    int64_t key; /* span index (launch) or External id */
    size_t call;
};

static int cmp_comm_ref(const void *a, const void *b)
{
    const struct comm_ref *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->call < y->call) - (x->call > y->call); /* the last call of a key first */
}

static int64_t find_call(const struct comm_ref *refs, size_t n, int64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (refs[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && refs[lo].key == key ? (int64_t)refs[lo].call : -1;
}

static int cmp_start(const void *a, const void *b)
{
    const struct member *x = a, *y = b; /* call holds the span index here */
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return (x->call > y->call) - (x->call < y->call);
}

void analyse_tbc_rank_done(struct analyse_tbc_rank *r)
{
    for (size_t i = 0; i < r->n_calls; i++)
        free(r->calls[i].name);
    free(r->calls);
    free(r->ranges);
    *r = (struct analyse_tbc_rank){0};
}

int analyse_tbc_calls(const struct analyse_span *v, const struct analyse_tbk_args *args, size_t n,
                      enum analyse_tbc_link link, int64_t rank, struct analyse_tbc_rank *ret)
{
    *ret = (struct analyse_tbc_rank){.rank = rank};
    size_t nc = 0, nk = 0;
    for (size_t i = 0; i < n; i++) {
        nc += v[i].role == ANALYSE_ROLE_COMMUNICATION;
        nk += v[i].role == ANALYSE_ROLE_KERNEL;
    }
    struct member *cs = malloc((nc ? nc : 1) * sizeof *cs); /* the ops, by start */
    struct comm_ref *refs = malloc((nc ? nc : 1) * sizeof *refs);
    struct member *mem = malloc((nc + nk + 1) * sizeof *mem);
    struct link l = {0};
    int r = !cs || !refs || !mem ? -ENOMEM : 0;
    if (r == 0 && link == ANALYSE_TBC_LAUNCH)
        r = link_build(v, n, &l);
    ret->calls = r == 0 ? calloc(nc ? nc : 1, sizeof *ret->calls) : NULL;
    if (r < 0 || !ret->calls) {
        free(cs);
        free(refs);
        free(mem);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].role == ANALYSE_ROLE_COMMUNICATION)
            cs[k++] = (struct member){i, v[i].ts_ns, end_of(&v[i])};
    qsort(cs, nc, sizeof *cs, cmp_start);
    size_t n_refs = 0, n_mem = 0;
    for (size_t i = 0; i < nc; i++) {
        const struct analyse_span *s = &v[cs[i].call];
        struct analyse_tbc_call *c = &ret->calls[ret->n_calls];
        c->name = malloc(s->name_len + 1);
        if (!c->name) {
            r = -ENOMEM;
            break;
        }
        memcpy(c->name, s->name, s->name_len);
        c->name[s->name_len] = '\0';
        c->ts_ns = s->ts_ns;
        c->bytes = args[cs[i].call].input_bytes > 0 ? args[cs[i].call].input_bytes : 0;
        ret->n_calls++;
        int64_t key = link == ANALYSE_TBC_LAUNCH ? (int64_t)cs[i].call : s->external_id;
        if (key >= 0)
            refs[n_refs++] = (struct comm_ref){key, i};
        mem[n_mem++] = (struct member){i, s->ts_ns, end_of(s)};
    }
    qsort(refs, n_refs, sizeof *refs, cmp_comm_ref);
    for (size_t i = 0; r == 0 && i < n; i++) {
        if (v[i].role != ANALYSE_ROLE_KERNEL)
            continue;
        int64_t call = -1;
        if (link == ANALYSE_TBC_LAUNCH) {
            for (int64_t op = launcher(&l, &v[i]); op >= 0 && call < 0; op = l.parent[op])
                call = find_call(refs, n_refs, op);
        } else if (v[i].external_id >= 0) {
            call = find_call(refs, n_refs, v[i].external_id);
        }
        if (call >= 0)
            mem[n_mem++] = (struct member){(size_t)call, v[i].ts_ns, end_of(&v[i])};
    }
    link_done(&l);
    free(cs);
    free(refs);
    if (r == 0) {
        qsort(mem, n_mem, sizeof *mem, cmp_member);
        ret->ranges = malloc((n_mem ? n_mem : 1) * sizeof *ret->ranges);
        if (!ret->ranges)
            r = -ENOMEM;
    }
    for (size_t i = 0; r == 0 && i < n_mem; i++) {
        if (i == 0 || mem[i].call != mem[i - 1].call)
            ret->calls[mem[i].call].first = i;
        ret->calls[mem[i].call].n++;
        ret->ranges[i][0] = mem[i].ts;
        ret->ranges[i][1] = mem[i].end;
    }
    ret->n_ranges = r == 0 ? n_mem : 0;
    free(mem);
    if (r < 0)
        analyse_tbc_rank_done(ret);
    return r;
}

/* A rank's calls grouped by name, each name's in order: by[] holds call indices sorted by
 * (name, index); seq[c] is call c's position among its name's calls, start[c] where its name's
 * run begins in by[]. */
struct by_name {
    size_t *by, *seq, *start;
};

struct named {
    const char *name;
    size_t call;
};

static int cmp_named(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->call > y->call) - (x->call < y->call);
}

static int by_name_build(const struct analyse_tbc_rank *R, struct by_name *ret)
{
    size_t n = R->n_calls ? R->n_calls : 1;
    struct named *v = malloc(n * sizeof *v);
    ret->by = malloc(n * sizeof *ret->by);
    ret->seq = malloc(n * sizeof *ret->seq);
    ret->start = malloc(n * sizeof *ret->start);
    if (!v || !ret->by || !ret->seq || !ret->start) {
        free(v);
        return -ENOMEM;
    }
    for (size_t c = 0; c < R->n_calls; c++)
        v[c] = (struct named){R->calls[c].name, c};
    qsort(v, R->n_calls, sizeof *v, cmp_named);
    size_t run = 0;
    for (size_t k = 0; k < R->n_calls; k++) {
        if (k > 0 && strcmp(v[k - 1].name, v[k].name) != 0)
            run = k;
        ret->by[k] = v[k].call;
        ret->seq[v[k].call] = k - run;
        ret->start[v[k].call] = run;
    }
    free(v);
    return 0;
}

static void by_name_done(struct by_name *b)
{
    free(b->by);
    free(b->seq);
    free(b->start);
}

/* The call of R named name at position seq of its name's calls, or -1. */
static int64_t by_name_find(const struct analyse_tbc_rank *R, const struct by_name *b,
                            const char *name, size_t seq)
{
    size_t lo = 0, hi = R->n_calls;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(R->calls[b->by[mid]].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = lo + seq;
    if (k >= R->n_calls || strcmp(R->calls[b->by[k]].name, name) != 0)
        return -1;
    return (int64_t)b->by[k];
}

int analyse_tbc_table(const struct analyse_tbc_rank *ranks, size_t n, struct analyse_tbc **ret)
{
    *ret = NULL;
    struct analyse_tbc *t = calloc(1, sizeof *t);
    size_t max_ranges = 0, rows = 0;
    for (size_t i = 0; i < n; i++) {
        rows += ranks[i].n_calls;
        if (ranks[i].n_ranges > max_ranges)
            max_ranges = ranks[i].n_ranges;
    }
    struct by_name *names = calloc(n ? n : 1, sizeof *names);
    size_t *partner = malloc((n ? n : 1) * sizeof *partner);
    size_t m = max_ranges ? max_ranges : 1;
    int64_t *lat_s = malloc(m * sizeof *lat_s), *lat_e = malloc(m * sizeof *lat_e);
    int64_t *xfer_s = malloc(m * sizeof *xfer_s), *xfer_e = malloc(m * sizeof *xfer_e);
    if (t)
        t->rows = calloc(rows ? rows : 1, sizeof *t->rows);
    int r = !t || !names || !partner || !lat_s || !lat_e || !xfer_s || !xfer_e || !t->rows
                ? -ENOMEM
                : 0;
    for (size_t i = 0; r == 0 && i < n; i++)
        r = by_name_build(&ranks[i], &names[i]);
    for (size_t i = 0; r == 0 && i < n; i++) {
        const struct analyse_tbc_rank *R = &ranks[i];
        const struct by_name *B = &names[i];
        for (size_t c = 0; r == 0 && c < R->n_calls; c++) {
            if (B->seq[c] != 0)
                continue; /* a row per name, at its first call */
            struct analyse_tbc_row *row = &t->rows[t->n_rows++];
            *row = (struct analyse_tbc_row){.rank = R->rank, .name = R->calls[c].name};
            size_t nl = 0, nx = 0;
            for (size_t k = B->start[c];
                 k < R->n_calls && strcmp(R->calls[B->by[k]].name, row->name) == 0; k++) {
                size_t d = B->by[k];
                const struct analyse_tbc_call *call = &R->calls[d];
                row->calls++;
                row->bytes += call->bytes;
                bool matched = true;
                for (size_t o = 0; o < n && matched; o++) {
                    int64_t e = by_name_find(&ranks[o], &names[o], call->name, B->seq[d]);
                    matched = e >= 0 && ranks[o].calls[e].n == call->n;
                    partner[o] = matched ? (size_t)e : 0;
                }
                row->unmatched += !matched;
                for (size_t j = 0; j < call->n; j++) {
                    const int64_t *own = R->ranges[call->first + j];
                    int64_t shortest = own[1] - own[0];
                    for (size_t o = 0; matched && o < n; o++) {
                        const struct analyse_tbc_call *p = &ranks[o].calls[partner[o]];
                        const int64_t *pr = ranks[o].ranges[p->first + j];
                        if (pr[1] - pr[0] < shortest)
                            shortest = pr[1] - pr[0];
                    }
                    lat_s[nl] = own[0];
                    lat_e[nl++] = own[1];
                    xfer_s[nx] = own[1] - shortest;
                    xfer_e[nx++] = own[1];
                }
            }
            row->latency_ns = analyse_sum_union_ns(lat_s, lat_e, nl);
            row->transfer_ns = analyse_sum_union_ns(xfer_s, xfer_e, nx);
            if (row->latency_ns < 0 || row->transfer_ns < 0)
                r = -ENOMEM;
        }
    }
    for (size_t i = 0; names && i < n; i++)
        by_name_done(&names[i]);
    free(names);
    free(partner);
    free(lat_s);
    free(lat_e);
    free(xfer_s);
    free(xfer_e);
    if (r < 0) {
        analyse_tbc_free(t);
        return r;
    }
    *ret = t;
    return 0;
}

void analyse_tbc_free(struct analyse_tbc *t)
{
    if (!t)
        return;
    free(t->rows);
    free(t);
}
