/* SPDX-License-Identifier: MIT */
/*
 * analyse_comm: MindInsight's cluster link table (docs/ANALYSIS.md "Cluster communication"):
 * the links' filters and sort keys. Pure.
 */
#ifndef STEPSCOPE_ANALYSE_COMM_H
#define STEPSCOPE_ANALYSE_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ANALYSE_COMM_TYPE_MAX 16 /* longest link type ("SDMA", "RDMA", ...) */

/* One link of one rank's hccl_raw row: the rank whose file reports it, src and dst ranks, the
 * link type, cost (ns), size (bytes) and bandwidth (bytes/s). */
struct analyse_comm_link {
    int64_t rank, src, dst;
    char type[ANALYSE_COMM_TYPE_MAX + 1];
    int64_t cost_ns, size_bytes, bw_bytes_per_s;
};

/* MindInsight's sort keys. */
enum analyse_comm_sort {
    ANALYSE_COMM_SORT_SRC_DST,
    ANALYSE_COMM_SORT_LINK_TYPE,
    ANALYSE_COMM_SORT_COST,
    ANALYSE_COMM_SORT_SIZE,
    ANALYSE_COMM_SORT_BANDWIDTH,
};

/* The key named name[0, n) (src_dst, link_type, communication_cost, communication_size,
 * band_width), or -1. */
int analyse_comm_sort_parse(const char *name, size_t n);

/* The filters: a negative src or dst, and an empty type, match every link. */
struct analyse_comm_filter {
    int64_t src, dst;
    const char *type;
};

/* Keeps the links of l[0, n) that pass f, in place, sorted by key (descending when desc; ties
 * by src, dst, type, then reporting rank, ascending). Returns how many are kept. */
size_t analyse_comm_links_select(struct analyse_comm_link *l, size_t n,
                                 const struct analyse_comm_filter *f,
                                 enum analyse_comm_sort key, bool desc);

#endif
