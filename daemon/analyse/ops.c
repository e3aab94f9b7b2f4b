/* SPDX-License-Identifier: MIT */
/*
 * Operator and kernel statistics: per-operator aggregates in (selftime.c's walk folds them, with
 * torch's self time), one row per operator name (or type) out, with calls, total, self, avg,
 * min, max and percent; then filtering, sorting, top-N folding and paging of such a table.
 * Grouping and querying are separate so that a live job groups once per snapshot and serves many
 * queries from it. tests/unit/test_analyse_ops.c checks the tables against prof.key_averages()
 * on traces made by the real torch profiler, and MindInsight's own operator tables.
 */
#include "analyse_ops.h"
#include "../../lib/num.h"
#include "../../lib/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A group key borrowed from a span name: bytes [p, p+len) followed by '*' when star is set. */
struct key {
    const char *p;
    size_t len;
    bool star;
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The type of a name: MindSpore full names "Scope/.../Type-op<N>" give "Type"; any other name
 * is its own type. */
static struct key type_of(const char *name, size_t len)
{
    size_t i = len;
    while (i > 0 && is_digit(name[i - 1]))
        i--;
    if (i < len && i >= 3 && memcmp(name + i - 3, "-op", 3) == 0) {
        size_t end = i - 3, start = end;
        while (start > 0 && name[start - 1] != '/')
            start--;
        if (end > start)
            return (struct key){ name + start, end - start, false };
    }
    return (struct key){ name, len, false };
}

/* The name key of a part: a step span "ProfilerStep#5" groups as "ProfilerStep*" (torch's
 * _rewrite_name with_wildcard), every other span by its name. */
static struct key part_name(const struct analyse_op_part *pt)
{
    const char *nm = pt->name ? pt->name : "";
    size_t len = pt->name ? pt->name_len : 0;
    if (pt->role == ANALYSE_ROLE_STEP) {
        const char *hash = memchr(nm, '#', len);
        if (hash)
            return (struct key){ nm, (size_t)(hash - nm), true };
    }
    return (struct key){ nm, len, false };
}

static bool key_eq(struct key a, struct key b)
{
    return a.len == b.len && a.star == b.star && memcmp(a.p, b.p, a.len) == 0;
}

static uint64_t key_hash(struct key k)
{
    return util_hash(UTIL_HASH_SEED, k.p, k.len) ^ (uint64_t)k.star;
}

static size_t key_size(struct key k)
{
    return k.len + (k.star ? 1 : 0) + 1;
}

static char *key_copy(char *dst, struct key k)
{
    memcpy(dst, k.p, k.len);
    size_t n = k.len;
    if (k.star)
        dst[n++] = '*';
    dst[n] = '\0';
    return dst + n + 1;
}

static size_t pow2_at_least(size_t n)
{
    size_t c = 16;
    while (c < n)
        c <<= 1;
    return c;
}

int analyse_ops_from_parts(const struct analyse_op_part *parts, size_t n,
                           enum analyse_op_group group, struct analyse_op_table **ret_table)
{
    int r = -ENOMEM;
    size_t *slot = NULL, *row_of = NULL;
    struct key *names = NULL, *types = NULL;
    struct analyse_op_table *t = calloc(1, sizeof *t);
    if (!t)
        goto fail;
    row_of = malloc((n ? n : 1) * sizeof *row_of);
    names = malloc((n ? n : 1) * sizeof *names);
    types = malloc((n ? n : 1) * sizeof *types);
    size_t cap = pow2_at_least(2 * n);
    slot = malloc(cap * sizeof *slot);
    if (!row_of || !names || !types || !slot)
        goto fail;

    /* Group: open addressing over the keys of the rows seen so far, in order of appearance. */
    for (size_t s = 0; s < cap; s++)
        slot[s] = SIZE_MAX;
    size_t n_rows = 0;
    for (size_t k = 0; k < n; k++) {
        struct key nk = part_name(&parts[k]);
        struct key tk = nk.star ? nk : type_of(nk.p, nk.len);
        struct key gk = group == ANALYSE_OP_GROUP_TYPE ? tk : nk;
        size_t s = (size_t)key_hash(gk) & (cap - 1);
        while (slot[s] != SIZE_MAX &&
               !key_eq(group == ANALYSE_OP_GROUP_TYPE ? types[slot[s]] : names[slot[s]], gk))
            s = (s + 1) & (cap - 1);
        if (slot[s] == SIZE_MAX) {
            slot[s] = n_rows;
            names[n_rows] = group == ANALYSE_OP_GROUP_TYPE ? tk : nk;
            types[n_rows] = tk;
            n_rows++;
        }
        row_of[k] = slot[s];
    }
    t->rows = calloc(n_rows ? n_rows : 1, sizeof *t->rows);
    size_t text = 1;
    for (size_t j = 0; j < n_rows; j++)
        text += key_size(names[j]) + key_size(types[j]);
    t->names = malloc(text);
    if (!t->rows || !t->names)
        goto fail;
    char *w = t->names;
    for (size_t j = 0; j < n_rows; j++) {
        struct analyse_op_row *row = &t->rows[j];
        row->name = w;
        w = key_copy(w, names[j]);
        row->type = w;
        w = key_copy(w, types[j]);
        row->first = j;
        row->min_ns = INT64_MAX;
        row->max_ns = INT64_MIN;
    }
    for (size_t k = 0; k < n; k++) {
        const struct analyse_op_part *pt = &parts[k];
        struct analyse_op_row *row = &t->rows[row_of[k]];
        row->calls += pt->calls;
        row->total_ns = num_sat_add(row->total_ns, pt->total_ns);
        row->self_ns = num_sat_add(row->self_ns, pt->self_ns);
        if (pt->calls > 0 && pt->min_ns < row->min_ns)
            row->min_ns = pt->min_ns;
        if (pt->calls > 0 && pt->max_ns > row->max_ns)
            row->max_ns = pt->max_ns;
        t->sum_self_ns = num_sat_add(t->sum_self_ns, pt->self_ns);
        t->sum_total_ns = num_sat_add(t->sum_total_ns, pt->total_ns);
    }
    for (size_t j = 0; j < n_rows; j++) {
        struct analyse_op_row *row = &t->rows[j];
        if (row->calls == 0)
            row->min_ns = row->max_ns = 0;
        row->avg_ns = row->calls ? (double)row->total_ns / (double)row->calls : 0.0;
        row->percent = t->sum_self_ns > 0 ? (double)row->self_ns * 100.0 / (double)t->sum_self_ns : 0.0;
    }
    t->n_rows = n_rows;
    t->total = n_rows;
    *ret_table = t;
    t = NULL;
    r = 0;
fail:
    analyse_op_table_free(t);
    free(slot);
    free(row_of);
    free(names);
    free(types);
    return r;
}

void analyse_op_table_free(struct analyse_op_table *table)
{
    if (!table)
        return;
    free(table->rows);
    free(table->names);
    free(table);
}

int analyse_op_col_parse(const char *s, enum analyse_op_col *ret_col)
{
    static const struct {
        const char *name;
        enum analyse_op_col col;
    } cols[] = {
        { "name", ANALYSE_OP_COL_NAME },       { "type", ANALYSE_OP_COL_TYPE },
        { "calls", ANALYSE_OP_COL_CALLS },     { "total", ANALYSE_OP_COL_TOTAL },
        { "total_us", ANALYSE_OP_COL_TOTAL },  { "self", ANALYSE_OP_COL_SELF },
        { "self_us", ANALYSE_OP_COL_SELF },    { "avg", ANALYSE_OP_COL_AVG },
        { "avg_us", ANALYSE_OP_COL_AVG },      { "min", ANALYSE_OP_COL_MIN },
        { "min_us", ANALYSE_OP_COL_MIN },      { "max", ANALYSE_OP_COL_MAX },
        { "max_us", ANALYSE_OP_COL_MAX },      { "percent", ANALYSE_OP_COL_PERCENT },
    };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        if (strcmp(s, cols[i].name) == 0) {
            *ret_col = cols[i].col;
            return 0;
        }
    }
    return -EINVAL;
}

static bool contains_nocase(const char *hay, const char *needle)
{
    size_t hn = strlen(hay), nn = strlen(needle);
    for (size_t i = 0; i + nn <= hn; i++) {
        size_t j = 0;
        while (j < nn) {
            char a = hay[i + j], b = needle[j];
            if (a >= 'A' && a <= 'Z')
                a = (char)(a + ('a' - 'A'));
            if (b >= 'A' && b <= 'Z')
                b = (char)(b + ('a' - 'A'));
            if (a != b)
                break;
            j++;
        }
        if (j == nn)
            return true;
    }
    return false;
}

static int cmp_i64(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

static int cmp_f64(double a, double b)
{
    return a < b ? -1 : a > b;
}

/* qsort is not stable and takes no context: sort pointers to rows and pass the order through a
 * leading struct. */
struct sort_item {
    const struct analyse_op_row *row;
    enum analyse_op_col col;
    bool desc;
};

static int cmp_rows(const void *pa, const void *pb)
{
    const struct sort_item *ia = pa, *ib = pb;
    const struct analyse_op_row *a = ia->row, *b = ib->row;
    int c = 0;
    switch (ia->col) {
    case ANALYSE_OP_COL_NONE:
        break;
    case ANALYSE_OP_COL_NAME:
        c = strcmp(a->name, b->name);
        break;
    case ANALYSE_OP_COL_TYPE:
        c = strcmp(a->type, b->type);
        break;
    case ANALYSE_OP_COL_CALLS:
        c = cmp_i64(a->calls, b->calls);
        break;
    case ANALYSE_OP_COL_TOTAL:
        c = cmp_i64(a->total_ns, b->total_ns);
        break;
    case ANALYSE_OP_COL_SELF:
        c = cmp_i64(a->self_ns, b->self_ns);
        break;
    case ANALYSE_OP_COL_AVG:
        c = cmp_f64(a->avg_ns, b->avg_ns);
        break;
    case ANALYSE_OP_COL_MIN:
        c = cmp_i64(a->min_ns, b->min_ns);
        break;
    case ANALYSE_OP_COL_MAX:
        c = cmp_i64(a->max_ns, b->max_ns);
        break;
    case ANALYSE_OP_COL_PERCENT:
        c = cmp_f64(a->percent, b->percent);
        break;
    }
    if (ia->desc)
        c = -c;
    if (c == 0)
        c = a->first < b->first ? -1 : a->first > b->first;
    return c;
}

int analyse_ops_query(const struct analyse_op_table *all, const struct analyse_op_query *q,
                      struct analyse_op_table **ret_page)
{
    int r = -ENOMEM;
    struct sort_item *sel = malloc((all->n_rows ? all->n_rows : 1) * sizeof *sel);
    struct analyse_op_table *t = calloc(1, sizeof *t);
    if (!sel || !t)
        goto fail;
    size_t m = 0;
    for (size_t j = 0; j < all->n_rows; j++) {
        const struct analyse_op_row *row = &all->rows[j];
        if (q->type && strcmp(row->type, q->type) != 0)
            continue;
        if (q->n_search > 0) {
            bool hit = false;
            for (size_t s = 0; !hit && s < q->n_search; s++)
                hit = contains_nocase(row->name, q->search[s]);
            if (!hit)
                continue;
        }
        sel[m++] = (struct sort_item){ row, q->sort, q->desc };
    }
    qsort(sel, m, sizeof *sel, cmp_rows);

    struct analyse_op_row other = {
        .name = "Other", .type = "Other", .min_ns = INT64_MAX, .max_ns = INT64_MIN,
        .is_other = true, .first = SIZE_MAX,
    };
    size_t kept = m;
    if (q->top_n > 0 && m > q->top_n) {
        kept = q->top_n;
        for (size_t j = kept; j < m; j++) {
            const struct analyse_op_row *row = sel[j].row;
            other.calls += row->calls;
            other.total_ns = num_sat_add(other.total_ns, row->total_ns);
            other.self_ns = num_sat_add(other.self_ns, row->self_ns);
            other.percent += row->percent;
            if (row->min_ns < other.min_ns)
                other.min_ns = row->min_ns;
            if (row->max_ns > other.max_ns)
                other.max_ns = row->max_ns;
        }
        other.avg_ns = other.calls > 0 ? (double)other.total_ns / (double)other.calls : 0.0;
    }
    bool has_other = kept < m;
    t->total = kept + (has_other ? 1 : 0);
    t->sum_self_ns = all->sum_self_ns;
    t->sum_total_ns = all->sum_total_ns;
    size_t from = q->offset < t->total ? q->offset : t->total;
    size_t count = t->total - from;
    if (q->limit > 0 && count > q->limit)
        count = q->limit;
    t->rows = calloc(count ? count : 1, sizeof *t->rows);
    size_t text = 1;
    for (size_t j = from; j < from + count; j++) {
        const struct analyse_op_row *row = j < kept ? sel[j].row : &other;
        text += strlen(row->name) + strlen(row->type) + 2;
    }
    t->names = malloc(text);
    if (!t->rows || !t->names)
        goto fail;
    char *w = t->names;
    for (size_t j = from; j < from + count; j++) {
        const struct analyse_op_row *row = j < kept ? sel[j].row : &other;
        struct analyse_op_row *out = &t->rows[t->n_rows++];
        *out = *row;
        size_t ln = strlen(row->name) + 1, lt = strlen(row->type) + 1;
        memcpy(w, row->name, ln);
        out->name = w;
        w += ln;
        memcpy(w, row->type, lt);
        out->type = w;
        w += lt;
    }
    *ret_page = t;
    t = NULL;
    r = 0;
fail:
    analyse_op_table_free(t);
    free(sel);
    return r;
}
