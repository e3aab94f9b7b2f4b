/* SPDX-License-Identifier: MIT */
/*
 * analyse_ops.h: operator and kernel tables (ops.c), torch key_averages()'s and MindInsight's
 * op statistics, with filter, sort, top-N and paging, and the self-time walk that folds the
 * operators' figures (selftime.c).
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
 * thread, the host spans (ANALYSE_ROLES_HOST) are sorted by (ts asc, end desc, input order) and
 * walked with a stack; a span is a child of the innermost open span it starts strictly before
 * the end of and does not end after; self = dur minus the durations of the direct children.
 * Other spans do not nest: self = dur. The walk is analyse_self_walk() below.
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

/* --- Self time, walked incrementally (selftime.c) ---------------------------------------
 * The one implementation of the nesting rule above. daemon/live runs it on every flush of a
 * rank's batch and tests/unit/test_analyse_ops.c checks it against torch's key_averages(). The
 * caller interns its operators and threads to dense indexes, keeps one struct analyse_self per
 * source of spans (live: per rank) and, per batch, orders the spans (analyse_self_order()) and
 * walks them (analyse_self_walk()), which folds each span into its operator's aggregate.
 * Per thread, the walk keeps the spans it saw (a bounded window, below) in torch's walk order,
 * each with the operator of its parent. A batch's spans are merged in and the kept spans walked
 * again: a span whose parent changed (a span of a later batch nests between them, as when a
 * tracer writes a span after its children or Paddle writes a window level by level) gives its
 * duration back to the old parent's self time and takes it from the new one's. So every span
 * ends with torch's parent and the result does not depend on where the batches were cut. A
 * batch that only comes after what the thread had walks its own spans only, from the walk's
 * stack. Bound: past ANALYSE_SELF_KEEP kept spans on a thread, the older half of them in the walk
 * order goes, except the spans still open there (the walk's stack at the first span kept), which
 * could still be parents; a later span that sorts before the first kept one is then folded with
 * self = its duration and no parent, and counted in *ret_dropped. Pure. */

#define ANALYSE_SELF_KEEP 16384 /* spans kept per thread for later batches to nest in (or around);
                                   past it the older half goes, all but those still open */
#define ANALYSE_OP_OTHER UINT32_MAX /* an op index: the caller's one extra aggregate */

/* A span as the walker takes it (32 bytes). */
struct analyse_op_span {
    int64_t ts_ns;
    int64_t end_ns;  /* >= ts_ns */
    uint32_t op;     /* index into the caller's aggregates, or ANALYSE_OP_OTHER */
    uint32_t thread; /* the caller's thread index: < n_threads, or any index >= n_threads for
                        spans past the caller's cap of threads, which share one walk state */
    uint32_t order;  /* arrival index in its batch, unique in it: breaks ties */
    uint8_t role;    /* enum analyse_role; only ANALYSE_ROLES_HOST nest */
};

/* One operator's figures (an analyse_op_part without its name). Zero-initialised. */
struct analyse_op_agg {
    int64_t calls;
    int64_t total_ns;
    int64_t self_ns;
    int64_t min_ns;
    int64_t max_ns;
};

/* The walk's state of one thread and one source of spans: kept across batches, read and
 * written only by the functions below (zero-initialised). */
struct analyse_self_open {
    int64_t ts_ns;
    int64_t end_ns;
    uint32_t op;        /* the span's op, whose self time its children take away */
    uint32_t parent_op; /* its parent's op, when has_parent */
    bool has_parent;
    bool fresh;         /* of the batch being walked: not folded yet */
};

struct analyse_self_thread {
    struct analyse_self_open *kept; /* the spans kept, in walk order */
    size_t n;
    size_t cap;
    uint32_t *stack;                /* indexes into kept: the walk's stack after kept[n - 1] */
    size_t n_stack;
    size_t cap_stack;
    bool cut;                       /* spans went: a span before (cut_ts, cut_end) is late */
    int64_t cut_ts;
    int64_t cut_end;
};

struct analyse_self {
    struct analyse_self_thread *th;    /* [cap_th], by thread index */
    size_t cap_th;
    struct analyse_self_thread shared; /* the threads at or past n_threads */
    struct analyse_self_open *merge;   /* a batch merged with a thread's kept spans */
    size_t cap_merge;
    uint32_t *at_cut;                  /* the walk's stack at the first span kept */
    size_t cap_at_cut;
};

/* Buffers a walk borrows, reusable by every source (zero-initialised). */
struct analyse_self_scratch {
    struct analyse_op_span *by_thread;
    size_t cap_by_thread;
    size_t *thread_at;
    size_t cap_thread_at;
};

/* Makes room in w for threads [0, n_threads) (new states zeroed). Call before
 * analyse_self_walk() whenever n_threads grew. Returns 0 or -ENOMEM. */
int analyse_self_reserve(struct analyse_self *w, size_t n_threads);

/* Puts v[0, n) in walk order: the spans that nest first, grouped by thread (ascending; those at
 * or past n_threads last), each thread's by (start asc, end desc, order); then the others, moved
 * only to make room. Returns how many nest. Never fails: without memory for its buffers it sorts
 * in place with qsort(), to the same order. */
size_t analyse_self_order(struct analyse_self_scratch *sc, struct analyse_op_span *v, size_t n,
                          size_t n_threads);

/* Walks v[0, n) as analyse_self_order() left it (n_nest: its result) and folds every span into
 * agg[op] (op below the caller's count of aggregates) or *other (ANALYSE_OP_OTHER): calls,
 * total, min, max and self; the self time of an earlier batch's span loses the duration of a
 * child that comes now. Spans that sort before what a thread still keeps (ANALYSE_SELF_KEEP) are
 * folded with self = duration and added to *ret_dropped, as are spans the walk had no memory
 * for. w must have room for n_threads (analyse_self_reserve()). */
void analyse_self_walk(struct analyse_self *w, size_t n_threads, struct analyse_op_span *v,
                       size_t n_nest, size_t n, struct analyse_op_agg *agg,
                       struct analyse_op_agg *other, int64_t *ret_dropped);

/* The bytes w's buffers hold (capacities). */
size_t analyse_self_bytes(const struct analyse_self *w);

/* Free w's and sc's buffers (the structures themselves are the caller's). */
void analyse_self_done(struct analyse_self *w);
void analyse_self_scratch_done(struct analyse_self_scratch *sc);

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

/* Groups parts[0, n) (per name, or per type, by the rules above) into a table in order of
 * first appearance, summing calls, totals and self times and keeping the extremes: the parts are
 * the aggregates a walk (analyse_self_walk()) folded, with their operators' names. Strings are
 * copied. Returns 0 and sets *ret_table (free with analyse_op_table_free()), or -ENOMEM. */
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

/* Filters, sorts, folds and pages all (from analyse_ops_from_parts()); all is not changed.
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
