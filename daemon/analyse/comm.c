/* SPDX-License-Identifier: MIT */
/* analyse_comm: the cluster link table's filters and sort (analyse_comm.h). */
#include "analyse_comm.h"

#include <stdlib.h>
#include <string.h>

static const char *const sort_names[] = {"src_dst", "link_type", "communication_cost",
                                         "communication_size", "band_width"};

int analyse_comm_sort_parse(const char *name, size_t n)
{
    for (int i = 0; i < (int)(sizeof sort_names / sizeof sort_names[0]); i++)
        if (strlen(sort_names[i]) == n && memcmp(sort_names[i], name, n) == 0)
            return i;
    return -1;
}

static int cmp_i64(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

/* The ties' order: src, dst, type, rank. */
static int cmp_ties(const struct analyse_comm_link *a, const struct analyse_comm_link *b)
{
    int c = cmp_i64(a->src, b->src);
    if (!c)
        c = cmp_i64(a->dst, b->dst);
    if (!c)
        c = strcmp(a->type, b->type);
    return c ? c : cmp_i64(a->rank, b->rank);
}

/* The key's comparison alone. */
static int cmp_key(const struct analyse_comm_link *a, const struct analyse_comm_link *b,
                   enum analyse_comm_sort key)
{
    switch (key) {
    case ANALYSE_COMM_SORT_SRC_DST: {
        int c = cmp_i64(a->src, b->src);
        return c ? c : cmp_i64(a->dst, b->dst);
    }
    case ANALYSE_COMM_SORT_LINK_TYPE:
        return strcmp(a->type, b->type);
    case ANALYSE_COMM_SORT_COST:
        return cmp_i64(a->cost_ns, b->cost_ns);
    case ANALYSE_COMM_SORT_SIZE:
        return cmp_i64(a->size_bytes, b->size_bytes);
    case ANALYSE_COMM_SORT_BANDWIDTH:
        return cmp_i64(a->bw_bytes_per_s, b->bw_bytes_per_s);
    }
    return 0;
}

/* qsort has no context argument: one comparator per key and order (the web has threads). */
#define CMP(name, key, sign)                                                                   \
    static int name(const void *pa, const void *pb)                                            \
    {                                                                                          \
        int c = (sign)*cmp_key(pa, pb, key);                                                   \
        return c ? c : cmp_ties(pa, pb);                                                       \
    }
CMP(asc0, ANALYSE_COMM_SORT_SRC_DST, 1)
CMP(asc1, ANALYSE_COMM_SORT_LINK_TYPE, 1)
CMP(asc2, ANALYSE_COMM_SORT_COST, 1)
CMP(asc3, ANALYSE_COMM_SORT_SIZE, 1)
CMP(asc4, ANALYSE_COMM_SORT_BANDWIDTH, 1)
CMP(desc0, ANALYSE_COMM_SORT_SRC_DST, -1)
CMP(desc1, ANALYSE_COMM_SORT_LINK_TYPE, -1)
CMP(desc2, ANALYSE_COMM_SORT_COST, -1)
CMP(desc3, ANALYSE_COMM_SORT_SIZE, -1)
CMP(desc4, ANALYSE_COMM_SORT_BANDWIDTH, -1)
#undef CMP

size_t analyse_comm_links_select(struct analyse_comm_link *l, size_t n,
                                 const struct analyse_comm_filter *f,
                                 enum analyse_comm_sort key, bool desc)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if ((f->src >= 0 && l[i].src != f->src) || (f->dst >= 0 && l[i].dst != f->dst) ||
            (f->type && f->type[0] && strcmp(f->type, l[i].type) != 0))
            continue;
        l[k++] = l[i];
    }
    static int (*const cmp[2][5])(const void *, const void *) = {
        {asc0, asc1, asc2, asc3, asc4}, {desc0, desc1, desc2, desc3, desc4}};
    if (k > 1 && (unsigned)key < 5)
        qsort(l, k, sizeof *l, cmp[desc ? 1 : 0][key]);
    return k;
}
