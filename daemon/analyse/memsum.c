/* SPDX-License-Identifier: MIT */
/*
 * memsum: Paddle's Memory Summary (contract in analyse_memsum.h).
 *
 * Paddle (profiler_statistic.py MemorySummary.parse) walks each thread's tree from a stack
 * (traverse_tree(): a node, then its children last first), skips OperatorInner nodes, gives an Operator the memory events of its direct children, then
 * every node its own. Its trees are built from the host spans sorted by (pid, tid, start, end
 * desc), as Paddle builds them; a memory event's node is the span of its thread whose start and
 * name its collector sent. Rows keep the order in which Paddle's dicts first saw them, and are
 * sorted stably by increase as Paddle's sorted() is.
 */
#include "analyse_memsum.h"
#include "../../lib/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct mnode {
    size_t span;
    int64_t pid, tid, s, e;
    enum analyse_sum_type type;
    size_t parent;       /* SIZE_MAX: the thread's root */
    size_t first_child, next_sibling, last_child; /* SIZE_MAX: none */
    size_t first_mem, n_mem; /* its events in order[] */
};

static int cmp_mnode(const void *a, const void *b)
{
    const struct mnode *x = a, *y = b;
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

/* An event and the node it belongs to, for sorting by node then time. */
struct mref {
    size_t node, ev;
    int64_t ts;
};

static int cmp_mref(const void *a, const void *b)
{
    const struct mref *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->ev > y->ev) - (x->ev < y->ev);
}

struct item {
    size_t place;
    bool reserved;
    const char *name;
    size_t name_len;
    size_t seen;         /* insertion order */
    int64_t alloc_count, free_count, alloc_size, free_size;
};

struct place {
    const char *p;
    size_t len;
    int64_t peak_allocated, peak_reserved;
    size_t alloc_order;  /* SIZE_MAX until its first Allocate/Free */
};

struct acc {
    struct item *items;
    size_t n_items, cap_items;
    size_t *slots;       /* hash: item index + 1, 0 empty */
    size_t n_slots;
    struct place *places;
    size_t n_places, cap_places, n_alloc_places;
    size_t *pslots;      /* hash of places: index + 1, 0 empty (a trace may name many) */
    size_t n_pslots;
};

static int grow_slots(struct acc *a)
{
    size_t n = a->n_slots ? a->n_slots * 2 : 256;
    size_t *s = calloc(n, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < a->n_items; i++) {
        const struct item *it = &a->items[i];
        uint64_t h = util_hash(UTIL_HASH_SEED ^ (it->place * 2 + it->reserved), it->name,
                         it->name_len);
        size_t k = (size_t)h & (n - 1);
        while (s[k])
            k = (k + 1) & (n - 1);
        s[k] = i + 1;
    }
    free(a->slots);
    a->slots = s;
    a->n_slots = n;
    return 0;
}

static struct item *item_get(struct acc *a, size_t place, bool reserved, const char *name,
                             size_t len)
{
    if ((a->n_items + 1) * 2 > a->n_slots && grow_slots(a) < 0)
        return NULL;
    uint64_t h = util_hash(UTIL_HASH_SEED ^ (place * 2 + reserved), name, len);
    size_t k = (size_t)h & (a->n_slots - 1);
    while (a->slots[k]) {
        struct item *it = &a->items[a->slots[k] - 1];
        if (it->place == place && it->reserved == reserved && it->name_len == len &&
            memcmp(it->name, name, len) == 0)
            return it;
        k = (k + 1) & (a->n_slots - 1);
    }
    if (a->n_items == a->cap_items) {
        size_t cap = a->cap_items ? a->cap_items * 2 : 64;
        struct item *v = realloc(a->items, cap * sizeof *v);
        if (!v)
            return NULL;
        a->items = v;
        a->cap_items = cap;
    }
    struct item *it = &a->items[a->n_items];
    *it = (struct item){.place = place, .reserved = reserved, .name = name, .name_len = len,
                        .seen = a->n_items};
    a->slots[k] = ++a->n_items;
    return it;
}

static uint64_t place_hash(const char *p, size_t len)
{
    return util_hash(UTIL_HASH_SEED, p, len);
}

static int grow_pslots(struct acc *a)
{
    size_t n = a->n_pslots ? a->n_pslots * 2 : 16;
    size_t *s = calloc(n, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < a->n_places; i++) {
        size_t k = (size_t)place_hash(a->places[i].p, a->places[i].len) & (n - 1);
        while (s[k])
            k = (k + 1) & (n - 1);
        s[k] = i + 1;
    }
    free(a->pslots);
    a->pslots = s;
    a->n_pslots = n;
    return 0;
}

static size_t place_get(struct acc *a, const char *p, size_t len)
{
    if ((a->n_places + 1) * 2 > a->n_pslots && grow_pslots(a) < 0)
        return SIZE_MAX;
    size_t k = (size_t)place_hash(p, len) & (a->n_pslots - 1);
    for (; a->pslots[k]; k = (k + 1) & (a->n_pslots - 1)) {
        const struct place *pl = &a->places[a->pslots[k] - 1];
        if (pl->len == len && memcmp(pl->p, p, len) == 0)
            return a->pslots[k] - 1;
    }
    if (a->n_places == a->cap_places) {
        size_t cap = a->cap_places ? a->cap_places * 2 : 4;
        struct place *v = realloc(a->places, cap * sizeof *v);
        if (!v)
            return SIZE_MAX;
        a->places = v;
        a->cap_places = cap;
    }
    a->places[a->n_places] = (struct place){.p = p, .len = len, .alloc_order = SIZE_MAX};
    a->pslots[k] = a->n_places + 1;
    return a->n_places++;
}

/* Paddle's _analyse_node_memory() for one event under name. */
static int add(struct acc *a, const char *name, size_t len, const struct analyse_mem_event *m)
{
    size_t pl = place_get(a, m->place, m->place_len);
    if (pl == SIZE_MAX)
        return -ENOMEM;
    bool reserved = m->kind == ANALYSE_MEM_RESERVED_ALLOCATE || m->kind == ANALYSE_MEM_RESERVED_FREE;
    if (!reserved && a->places[pl].alloc_order == SIZE_MAX)
        a->places[pl].alloc_order = a->n_alloc_places++;
    struct item *it = item_get(a, pl, reserved, name, len);
    if (!it)
        return -ENOMEM;
    if (m->kind == ANALYSE_MEM_ALLOCATE || m->kind == ANALYSE_MEM_RESERVED_ALLOCATE) {
        it->alloc_count++;
        it->alloc_size += m->bytes;
    } else {
        it->free_count++;
        it->free_size -= m->bytes; /* a free's increase is negative */
    }
    struct place *p = &a->places[pl];
    if (m->peak_allocated > p->peak_allocated)
        p->peak_allocated = m->peak_allocated;
    if (m->peak_reserved > p->peak_reserved)
        p->peak_reserved = m->peak_reserved;
    return 0;
}

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    int64_t ix = x->alloc_size - x->free_size, iy = y->alloc_size - y->free_size;
    if (ix != iy)
        return ix > iy ? -1 : 1;
    return (x->seen > y->seen) - (x->seen < y->seen);
}

/* The span whose start is ns on the thread of m and whose name is m's owner; SIZE_MAX if none. */
static size_t find_owner(const struct mnode *nd, size_t n, const struct analyse_span *spans,
                         const struct analyse_mem_event *m)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct mnode *x = &nd[mid];
        bool before = x->pid != m->pid ? x->pid < m->pid
                      : x->tid != m->tid ? x->tid < m->tid
                                         : x->s < m->owner_ns;
        if (before)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t want = analyse_sum_name_len(m->owner, m->owner_len);
    for (size_t i = lo; i < n && nd[i].pid == m->pid && nd[i].tid == m->tid && nd[i].s == m->owner_ns;
         i++) {
        const struct analyse_span *s = &spans[nd[i].span];
        size_t len = analyse_sum_name_len(s->name, s->name_len);
        if (len == want && memcmp(s->name, m->owner, len) == 0)
            return i;
    }
    return SIZE_MAX;
}

static int node_events(struct acc *a, const struct mnode *nd, const struct mref *refs,
                       const struct analyse_mem_event *mem, const char *name, size_t len)
{
    for (size_t k = 0; k < nd->n_mem; k++) {
        int r = add(a, name, len, &mem[refs[nd->first_mem + k].ev]);
        if (r < 0)
            return r;
    }
    return 0;
}

static int compute(const struct analyse_span *spans, size_t n, const struct analyse_mem_event *mem,
                   size_t n_mem, int64_t w0, int64_t w1, struct mnode **ret_nd,
                   struct mref **ret_refs, struct acc *a, struct analyse_memsum *out)
{
    struct mnode *nd = malloc((n + 1) * sizeof *nd);
    struct mref *refs = malloc((n_mem + 1) * sizeof *refs);
    size_t *stack = malloc((n + 1) * sizeof *stack);
    *ret_nd = nd;
    *ret_refs = refs;
    if (!nd || !refs || !stack) {
        free(stack);
        return -ENOMEM;
    }
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_span *s = &spans[i];
        enum analyse_sum_type t = analyse_sum_type_of(s);
        if (t == ANALYSE_SUM_KERNEL || t == ANALYSE_SUM_MEMCPY || t == ANALYSE_SUM_MEMSET)
            continue;
        if (w0 != w1 && (s->ts_ns < w0 || s->ts_ns >= w1))
            continue;
        int64_t e = s->dur_ns > INT64_MAX - s->ts_ns ? INT64_MAX : s->ts_ns + s->dur_ns;
        nd[nn++] = (struct mnode){.span = i, .pid = s->pid, .tid = s->tid, .s = s->ts_ns, .e = e,
                                  .type = t, .parent = SIZE_MAX, .first_child = SIZE_MAX,
                                  .next_sibling = SIZE_MAX, .last_child = SIZE_MAX};
    }
    qsort(nd, nn, sizeof *nd, cmp_mnode);
    /* Paddle's BuildTreeRelationship: a node is a child of the innermost open node it starts
     * before the end of; and it must end within it (Paddle's own times never overlap, but those
     * rebuilt from its JSON export's float offsets may by a few ns, summary.c's walk_host()
     * rule). */
    size_t sp = 0;
    for (size_t i = 0; i < nn; i++) {
        if (i == 0 || nd[i].pid != nd[i - 1].pid || nd[i].tid != nd[i - 1].tid)
            sp = 0;
        while (sp > 0 && !(nd[i].s < nd[stack[sp - 1]].e && nd[i].e <= nd[stack[sp - 1]].e))
            sp--;
        if (sp > 0) {
            struct mnode *p = &nd[stack[sp - 1]];
            nd[i].parent = stack[sp - 1];
            if (p->last_child == SIZE_MAX)
                p->first_child = i;
            else
                nd[p->last_child].next_sibling = i;
            p->last_child = i;
        }
        stack[sp++] = i;
    }
    free(stack);
    size_t nr = 0;
    for (size_t k = 0; k < n_mem; k++) {
        const struct analyse_mem_event *m = &mem[k];
        size_t o = m->owner_ns == INT64_MIN || !m->owner ? SIZE_MAX : find_owner(nd, nn, spans, m);
        if (o == SIZE_MAX) {
            out->n_unowned++;
            continue;
        }
        refs[nr++] = (struct mref){.node = o, .ev = k, .ts = m->ts_ns};
    }
    qsort(refs, nr, sizeof *refs, cmp_mref);
    for (size_t k = 0; k < nr; k++) {
        struct mnode *x = &nd[refs[k].node];
        if (x->n_mem++ == 0)
            x->first_mem = k;
    }
    out->n_counted = nr;
    /* Paddle's traverse_tree(): per thread a stack from the root, each node's children pushed in
     * order, so the last child is visited first. */
    size_t *order = malloc((nn + 1) * sizeof *order), *st = malloc((nn + 1) * sizeof *st);
    if (!order || !st) {
        free(order);
        free(st);
        return -ENOMEM;
    }
    size_t n_order = 0;
    for (size_t t0 = 0; t0 < nn;) {
        size_t t1 = t0 + 1;
        while (t1 < nn && nd[t1].pid == nd[t0].pid && nd[t1].tid == nd[t0].tid)
            t1++;
        size_t top = 0;
        for (size_t i = t0; i < t1; i++)
            if (nd[i].parent == SIZE_MAX)
                st[top++] = i;
        while (top > 0) {
            size_t x = st[--top];
            order[n_order++] = x;
            for (size_t c = nd[x].first_child; c != SIZE_MAX; c = nd[c].next_sibling)
                st[top++] = c;
        }
        t0 = t1;
    }
    free(st);
    for (size_t i = 0; i < n_order; i++) {
        const struct mnode *x = &nd[order[i]];
        if (x->type == ANALYSE_SUM_OPERATOR_INNER)
            continue;
        const struct analyse_span *s = &spans[x->span];
        size_t len = analyse_sum_name_len(s->name, s->name_len);
        int r;
        if (x->type == ANALYSE_SUM_OPERATOR)
            for (size_t c = x->first_child; c != SIZE_MAX; c = nd[c].next_sibling)
                if ((r = node_events(a, &nd[c], refs, mem, s->name, len)) < 0) {
                    free(order);
                    return r;
                }
        if ((r = node_events(a, x, refs, mem, s->name, len)) < 0) {
            free(order);
            return r;
        }
    }
    free(order);
    /* Rows: per place in the order Paddle's allocated_items first saw it (a place with only
     * reserved events is not printed, as in Paddle), Allocated rows then Reserved rows. */
    if (a->n_items > 0)
        qsort(a->items, a->n_items, sizeof *a->items, cmp_item);
    out->places = calloc(a->n_alloc_places + 1, sizeof *out->places);
    out->rows = calloc(a->n_items + 1, sizeof *out->rows);
    /* The items bucketed by (place, reserved) in their sorted order (a stable counting sort) and
     * the places by allocation order: one pass, not a scan of every item per place. */
    size_t *by_order = malloc((a->n_alloc_places + 1) * sizeof *by_order);
    size_t *first = calloc(2 * a->n_places + 1, sizeof *first);
    size_t *idx = malloc((a->n_items + 1) * sizeof *idx);
    if (!out->places || !out->rows || !by_order || !first || !idx) {
        free(by_order);
        free(first);
        free(idx);
        return -ENOMEM;
    }
    for (size_t pl = 0; pl < a->n_places; pl++)
        if (a->places[pl].alloc_order != SIZE_MAX)
            by_order[a->places[pl].alloc_order] = pl;
    for (size_t k = 0; k < a->n_items; k++)
        first[a->items[k].place * 2 + a->items[k].reserved + 1]++;
    for (size_t b = 0; b < 2 * a->n_places; b++)
        first[b + 1] += first[b];
    for (size_t k = 0; k < a->n_items; k++)
        idx[first[a->items[k].place * 2 + a->items[k].reserved]++] = k;
    /* first[b] is now the end of bucket b, so bucket b is idx[first[b - 1], first[b]). */
    for (size_t o = 0; o < a->n_alloc_places; o++) {
        size_t pl = by_order[o];
        struct analyse_mem_place *dst = &out->places[out->n_places++];
        *dst = (struct analyse_mem_place){.place = a->places[pl].p, .place_len = a->places[pl].len,
                                          .peak_allocated = a->places[pl].peak_allocated,
                                          .peak_reserved = a->places[pl].peak_reserved,
                                          .first_row = out->n_rows};
        for (size_t b = pl * 2, c = b ? first[b - 1] : 0; b < pl * 2 + 2; c = first[b++])
            for (size_t e = first[b]; c < e; c++) {
                const struct item *it = &a->items[idx[c]];
                out->rows[out->n_rows++] = (struct analyse_mem_row){
                    .name = it->name, .name_len = it->name_len, .place = out->n_places - 1,
                    .reserved = it->reserved, .alloc_count = it->alloc_count,
                    .free_count = it->free_count, .alloc_size = it->alloc_size,
                    .free_size = it->free_size, .increase = it->alloc_size - it->free_size};
            }
        dst->n_rows = out->n_rows - dst->first_row;
    }
    free(by_order);
    free(first);
    free(idx);
    return 0;
}

int analyse_memsum_compute(const struct analyse_span *spans, size_t n,
                           const struct analyse_mem_event *mem, size_t n_mem, int64_t w0,
                           int64_t w1, struct analyse_memsum **ret)
{
    if ((!spans && n > 0) || (!mem && n_mem > 0) || !ret)
        return -EINVAL;
    struct analyse_memsum *out = calloc(1, sizeof *out);
    if (!out)
        return -ENOMEM;
    out->n_events = n_mem;
    struct acc a = {0};
    struct mnode *nd = NULL;
    struct mref *refs = NULL;
    int r = compute(spans, n, mem, n_mem, w0, w1, &nd, &refs, &a, out);
    free(nd);
    free(refs);
    free(a.items);
    free(a.slots);
    free(a.places);
    free(a.pslots);
    if (r < 0) {
        analyse_memsum_free(out);
        return r;
    }
    *ret = out;
    return 0;
}

void analyse_memsum_free(struct analyse_memsum *m)
{
    if (!m)
        return;
    free(m->places);
    free(m->rows);
    free(m);
}
