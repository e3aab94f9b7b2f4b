/* SPDX-License-Identifier: MIT */
/*
 * analyse_ops.h: operator and kernel tables (ops.c), torch key_averages()'s and MindInsight's
 * op statistics, with filter, sort, top-N and paging.
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_OPS_H
#define STEPSCOPE_ANALYSE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_roles.h"

/* --- Operator and kernel statistics (ops.c) ----------------------------------------------
 * A table aggregates the spans whose role is in a mask, grouped by name or by type.
 *  - name: the span's name, except that step spans ("ProfilerStep#5") group as "ProfilerStep*"
 *    (the text before '#' plus '*'), exactly as torch's key_averages() does.
 *  - type: for MindSpore full names ("Default/net/Conv2D-op13") the last '/' component without
 *    its "-op<N>" suffix ("Conv2D"); any other name is its own type (torch groups by name).
 * self_ns follows torch's nesting rule (autograd profiler_util _populate_cpu_children): per
 * (pid, tid), the masked spans are sorted by (ts asc, end desc, input order) and walked with a
 * stack; a span is a child of the innermost open span it starts strictly before the end of and
 * does not end after; self = dur minus the durations of the direct children.
 * percent = self_ns / (sum of self_ns over the whole table) * 100, torch's "Self CPU %" column;
 * for device spans, which do not nest, self equals total and percent is the share of the total
 * (MindInsight's total_percent, and "percent of kernel time" for kernels). */
enum analyse_op_group {
    ANALYSE_OP_GROUP_NAME,
    ANALYSE_OP_GROUP_TYPE,
};

/* The host spans torch's key_averages() counts: operators, annotations, steps and phases. */
#define ANALYSE_ROLES_HOST                                                                          \
    (ANALYSE_ROLE_BIT(ANALYSE_ROLE_STEP) | ANALYSE_ROLE_BIT(ANALYSE_ROLE_DATALOADER) |              \
     ANALYSE_ROLE_BIT(ANALYSE_ROLE_FORWARD) | ANALYSE_ROLE_BIT(ANALYSE_ROLE_BACKWARD) |             \
     ANALYSE_ROLE_BIT(ANALYSE_ROLE_OPTIMIZER) | ANALYSE_ROLE_BIT(ANALYSE_ROLE_COMMUNICATION) |      \
     ANALYSE_ROLE_BIT(ANALYSE_ROLE_HOST_OP) | ANALYSE_ROLE_BIT(ANALYSE_ROLE_RUNTIME) |              \
     ANALYSE_ROLE_BIT(ANALYSE_ROLE_USER_ANNOTATION))
#define ANALYSE_ROLES_KERNEL ANALYSE_ROLE_BIT(ANALYSE_ROLE_KERNEL)

struct analyse_op_row {
    const char *name;    /* NUL-terminated, owned by the table; "Other" for the folded row */
    const char *type;    /* NUL-terminated, owned by the table */
    int64_t calls;
    int64_t total_ns;    /* sum of durations */
    int64_t self_ns;     /* sum of self times (torch's nesting rule) */
    int64_t min_ns;      /* shortest single call */
    int64_t max_ns;      /* longest single call */
    double avg_ns;       /* total_ns / calls */
    double percent;      /* self_ns / table sum of self_ns * 100 */
    bool is_other;       /* the "Other" row of a top-N query */
    size_t first;        /* rank of first appearance in the input (stable order of a table) */
};

/* A table of rows. Read-only outside ops.c. */
struct analyse_op_table {
    size_t total;               /* rows after filtering and top-N folding, before paging */
    size_t n_rows;
    struct analyse_op_row *rows; /* [n_rows]; all rows (aggregate) or the page (query) */
    int64_t sum_self_ns;        /* denominator of percent */
    int64_t sum_total_ns;
    char *names;                /* owned text of the rows' names and types */
};

/* Aggregates spans[0, n) whose role is in role_mask (ANALYSE_ROLE_BIT()s) into one row per
 * group, in order of first appearance. Spans with a negative duration are ignored. Strings are
 * copied: the table does not borrow from spans. Returns 0 and sets *ret_table (caller frees with
 * analyse_op_table_free()), or -ENOMEM. */
int analyse_ops_aggregate(const struct analyse_span *spans, size_t n, uint32_t role_mask,
                          enum analyse_op_group group, struct analyse_op_table **ret_table);

/* A pre-aggregated part of a row: what analyse_ops_from_parts() groups. name is borrowed. */
struct analyse_op_part {
    const char *name;
    size_t name_len;
    enum analyse_role role; /* a step role groups "ProfilerStep#N" as "ProfilerStep*" */
    int64_t calls;
    int64_t total_ns;
    int64_t self_ns;
    int64_t min_ns;         /* ignored when calls is 0 */
    int64_t max_ns;
};

/* Groups parts[0, n) (per name, or per type, by the same rules as analyse_ops_aggregate()) into
 * a table in order of first appearance, summing calls, totals and self times and keeping the
 * extremes. For callers that aggregate incrementally (daemon/live). Strings are copied. Returns
 * 0 and sets *ret_table (free with analyse_op_table_free()), or -ENOMEM. */
int analyse_ops_from_parts(const struct analyse_op_part *parts, size_t n,
                           enum analyse_op_group group, struct analyse_op_table **ret_table);

enum analyse_op_col {
    ANALYSE_OP_COL_NONE, /* keep the table's order (first appearance) */
    ANALYSE_OP_COL_NAME,
    ANALYSE_OP_COL_TYPE,
    ANALYSE_OP_COL_CALLS,
    ANALYSE_OP_COL_TOTAL,
    ANALYSE_OP_COL_SELF,
    ANALYSE_OP_COL_AVG,
    ANALYSE_OP_COL_MIN,
    ANALYSE_OP_COL_MAX,
    ANALYSE_OP_COL_PERCENT,
};

/* Parses a column name ("name", "type", "calls", "total", "total_us", "self", "self_us", "avg",
 * "avg_us", "min", "min_us", "max", "max_us", "percent"); returns 0 and sets *ret_col, or
 * -EINVAL. */
int analyse_op_col_parse(const char *s, enum analyse_op_col *ret_col);

struct analyse_op_query {
    const char *const *search; /* [n_search]: keep rows whose name contains any term, ignoring
                                  ASCII case (MindInsight partial_match_str_in); 0 terms = all */
    size_t n_search;
    const char *type;          /* keep rows of exactly this type; NULL = all */
    enum analyse_op_col sort;  /* ties keep first-appearance order (a stable sort) */
    bool desc;
    size_t top_n;              /* > 0: the first top_n sorted rows, the rest folded into "Other" */
    size_t offset;             /* rows skipped (a row offset, not MindInsight's page number) */
    size_t limit;              /* rows returned at most; 0 = no limit */
};

/* Filters, sorts, folds and pages all (from analyse_ops_aggregate()); all is not changed.
 * The result's total counts the rows before offset/limit, its rows are the page, and percent
 * keeps all's denominator (a filtered table still shows shares of everything). The "Other" row
 * (type "Other") sums calls, total and self and percent of the folded rows, min/max over them;
 * it is placed last whatever the sort. Returns 0 and sets *ret_page (caller frees with
 * analyse_op_table_free()), or -ENOMEM. */
int analyse_ops_query(const struct analyse_op_table *all, const struct analyse_op_query *q,
                      struct analyse_op_table **ret_page);

/* Frees a table; NULL is accepted. */
void analyse_op_table_free(struct analyse_op_table *table);

#endif
