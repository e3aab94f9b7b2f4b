/* SPDX-License-Identifier: MIT */
/*
 * analyse_summary.h: paddle.profiler's summary() tables (summary.c).
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_SUMMARY_H
#define STEPSCOPE_ANALYSE_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_roles.h"
#include "analyse_steptrace.h" /* ANALYSE_ST_ALL_FIRST / _LAST: no step bound */

/* --- Summaries (summary.c) -------------------------------------------------------------------
 * paddle.profiler's summary() tables (python/paddle/profiler/profiler_statistic.py) computed
 * over classified spans (issue 3 item 7; docs/ANALYSIS.md, "Paddle's summaries"). Every span
 * has one of Paddle's event types: its cat when that is a TracerEventType name, else a type
 * derived from its role (kernel -> Kernel, host_op -> Operator, runtime -> CudaRuntime, ...).
 * Kernel, Memcpy and Memset spans are device events (per device = pid); the rest are host
 * events, nested per (pid, tid) by containment as Paddle's node trees nest them. */

enum analyse_sum_type {
    ANALYSE_SUM_PROFILE_STEP,
    ANALYSE_SUM_DATALOADER,
    ANALYSE_SUM_FORWARD,
    ANALYSE_SUM_BACKWARD,
    ANALYSE_SUM_OPTIMIZATION,
    ANALYSE_SUM_OPERATOR,
    ANALYSE_SUM_OPERATOR_INNER,
    ANALYSE_SUM_USER_DEFINED,
    ANALYSE_SUM_PYTHON_USER_DEFINED,
    ANALYSE_SUM_PYTHON_OP,
    ANALYSE_SUM_DYGRAPH_KERNEL_LAUNCH,
    ANALYSE_SUM_STATIC_KERNEL_LAUNCH,
    ANALYSE_SUM_CUDA_RUNTIME,
    ANALYSE_SUM_COMMUNICATION,
    ANALYSE_SUM_KERNEL,  /* device */
    ANALYSE_SUM_MEMCPY,  /* device */
    ANALYSE_SUM_MEMSET,  /* device */
    ANALYSE_SUM_OTHER,   /* no Paddle type: not in the overview */
    ANALYSE_SUM_TYPE_COUNT,
};

/* Paddle's names: "ProfileStep", "Dataloader", ..., "Memset"; "Other". */
extern const char *const analyse_sum_type_names[ANALYSE_SUM_TYPE_COUNT];

/* The type of a classified span (see above). Pure. */
enum analyse_sum_type analyse_sum_type_of(const struct analyse_span *span);

/* The length of name without the " [1.090 ms]" suffix Paddle's Chrome export appends to every
 * name ("[" number blank unit "]" at the end, unit ns|us|ms|s, the blank before '[' optional):
 * the name Paddle's own tables show. Pure. */
size_t analyse_sum_name_len(const char *name, size_t len);

/* The step number of a step span: the digits after the first '#' ("ProfileStep#12[3.1 ms]" ->
 * 12), or -1 when there are none. Pure. */
int64_t analyse_sum_step_number(const char *name, size_t len);

/* The step window of the summaries: the ProfileStep spans numbered in [first, last]
 * (ANALYSE_ST_ALL_FIRST / _LAST: no bound, every span counts). With a bound the window is
 * [their earliest start, their latest end) and a span counts when it starts in it. */
struct analyse_sum_window {
    bool bounded;
    int64_t start_ns, end_ns;      /* 0, 0 without a bound */
    int64_t first_step, last_step; /* the numbers of the step spans in range; -1 when none */
};

/* Sets *ret to the window of spans[0..n) over the steps [first, last]. Returns 0, or -ENOENT
 * when a bound is given and no ProfileStep span is in range. Pure. */
int analyse_sum_window(const struct analyse_span *spans, size_t n, int64_t first, int64_t last,
                       struct analyse_sum_window *ret);

/* Whether span s counts in the window. Pure. */
bool analyse_sum_in_window(const struct analyse_sum_window *win, const struct analyse_span *s);

/* One row of a table: a group of spans by name (suffix stripped). */
struct analyse_sum_row {
    const char *name;  /* borrowed from a span, not NUL-terminated */
    size_t name_len;
    size_t parent;     /* operator table: the row of the operator an inner row belongs to;
                          ANALYSE_SUM_TOP for a top-level row */
    int64_t calls;
    int64_t total_ns;
    int64_t min_ns;
    int64_t max_ns;
    double avg_ns;     /* total_ns / calls */
    double ratio;      /* in [0, 1]; the denominator depends on the table (docs/ANALYSIS.md) */
};

#define ANALYSE_SUM_TOP SIZE_MAX

/* Rows grouped by (name, parent): the summaries' tables. Rows never change index; zero-initialise
 * before the first add, free with analyse_sum_table_free(). */
struct analyse_sum_table {
    struct analyse_sum_row *rows;
    size_t n, cap;
    size_t *slot;   /* hash slots: row index + 1, 0 = empty */
    size_t n_slot;  /* power of two */
};

/* Adds one call of dur to the row (name, parent), creating it (min INT64_MAX, name borrowed).
 * Returns the row's index or -ENOMEM. Pure. */
int64_t analyse_sum_table_add(struct analyse_sum_table *t, const char *name, size_t len,
                              size_t parent, int64_t dur);

void analyse_sum_table_free(struct analyse_sum_table *t);

/* A row's sort key: analyse_sum_sort_keyed() orders by total descending, ties by idx (first
 * appearance, as Python's stable sorted()). Pure. */
struct analyse_sum_keyed {
    int64_t total;
    size_t idx;
};

void analyse_sum_sort_keyed(struct analyse_sum_keyed *k, size_t n);

/* The children of n rows, whose parents parent_of(ctx, i) gives (n or more: none): a counting
 * sort, so kids[first[p], first[p + 1]) are row p's children in index order. first has n + 1
 * elements, kids n. Pure. */
void analyse_sum_children(size_t n, size_t (*parent_of)(const void *ctx, size_t i),
                          const void *ctx, size_t *first, size_t *kids);

/* A host span as the summaries nest them. */
struct analyse_sum_node {
    size_t span;  /* index into the spans array */
    int64_t pid, tid, s, e;
    enum analyse_sum_type type;
};

/* Paddle's node trees: sorts v[0..n) per (pid, tid) by start, longer first (then span index),
 * and sets parent[i] to the index of v[i]'s innermost enclosing node (the last open one that
 * ends at or after its end), ANALYSE_SUM_TOP at the top of its thread: every parent comes
 * before its children. Returns 0 or -ENOMEM. Pure. */
int analyse_sum_nest(struct analyse_sum_node *v, size_t n, size_t *parent);

/* analyse_sum_nest()'s order alone: per (pid, tid), by start, longer first, then span. Pure. */
void analyse_sum_sort_nodes(struct analyse_sum_node *v, size_t n);

/* One row of the overview: host (CPU time) or device (GPU time) time of one event type. */
struct analyse_sum_type_row {
    enum analyse_sum_type type;
    bool device;
    int64_t calls;
    int64_t time_ns;  /* merged (union) time; model types: the model rows' time (as Paddle) */
    double ratio;     /* time_ns / total_ns */
};

/* The model rows, in Paddle's order; OTHERS is total minus the other four stages. */
enum analyse_sum_model {
    ANALYSE_SUM_MODEL_PROFILE_STEP,
    ANALYSE_SUM_MODEL_DATALOADER,
    ANALYSE_SUM_MODEL_FORWARD,
    ANALYSE_SUM_MODEL_BACKWARD,
    ANALYSE_SUM_MODEL_OPTIMIZATION,
    ANALYSE_SUM_MODEL_OTHERS,
    ANALYSE_SUM_MODEL_COUNT,
};

/* "ProfileStep", "Dataloader", "Forward", "Backward", "Optimization", "Others". */
extern const char *const analyse_sum_model_names[ANALYSE_SUM_MODEL_COUNT];

/* Kernel busy time of one device. */
struct analyse_sum_gpu {
    int64_t pid;
    int64_t busy_ns;   /* merged kernel time */
    double utilization; /* busy_ns / total_ns, Paddle's "GPU Utilization"; 0 when total is 0 */
};

/* Read-only outside summary.c. Row names borrow from the spans given. */
struct analyse_summary {
    int64_t total_ns;       /* merged ProfileStep time: the denominator of every ratio */
    size_t n_spans;         /* spans in the window */
    size_t n_steps;         /* ProfileStep spans in the window */
    int64_t first_step, last_step; /* their numbers (digits after '#'); -1 when none */
    int64_t window_start_ns, window_end_ns; /* of the step range; 0, 0 with no range */
    size_t n_types;
    struct analyse_sum_type_row types[2 * ANALYSE_SUM_TYPE_COUNT]; /* host rows by time desc,
                                                                      then device rows */
    bool has_model;         /* some model stage (Dataloader ... Optimization) was seen */
    struct analyse_sum_row model[ANALYSE_SUM_MODEL_COUNT]; /* calls 0 = stage absent; OTHERS
                                                              has total and ratio only */
    /* Distributed: communication = host communication spans (type Communication, or an
     * Operator whose lower-cased name holds allreduce, broadcast or rpc) merged with device
     * kernels whose lower-cased name holds nccl or xccl; computation = the other kernels,
     * merged; overlap = their intersection. */
    int64_t comm_ns, comp_ns, overlap_ns;
    int64_t comm_cpu_calls, comm_gpu_calls;
    size_t n_ops;    /* operator rows: each top-level row (by total desc) then its inner rows */
    struct analyse_sum_row *ops;
    size_t n_kernels; /* by total desc; ratio of kernel time */
    struct analyse_sum_row *kernels;
    size_t n_memory;  /* UserDefined/PythonUserDefined naming memcpy, memorycopy or memset */
    struct analyse_sum_row *memory;
    size_t n_user;    /* PythonUserDefined (record_function ranges), by total desc */
    struct analyse_sum_row *user;
    size_t n_gpus;
    struct analyse_sum_gpu *gpus; /* by pid */
};

/* The summaries of spans[0..n) (classified; any order) over the steps numbered in
 * [first_step, last_step] (ANALYSE_ST_ALL_FIRST / _LAST for no bound): with a bound, the window
 * is [earliest start, latest end] of the ProfileStep spans in range and only spans starting in
 * it count (-ENOENT when no step span is in range). Returns 0 and sets *ret_sum (caller frees
 * with analyse_summary_free()), -EINVAL on NULL arguments, -ENOENT, -ENOMEM. Pure. */
int analyse_summary_compute(const struct analyse_span *spans, size_t n, int64_t first_step,
                            int64_t last_step, struct analyse_summary **ret_sum);

/* As analyse_summary_compute(), and stops early, returning -ECANCELED (nothing in *ret_sum),
 * once *stop reads true: it is read between the computation's steps and every 65 536 spans of
 * its walk, so a stop takes effect within one step (a sort of the spans at most; issue 18: a
 * server stopping waited for a whole summary). stop NULL: never. Pure: stop is the caller's. */
int analyse_summary_compute_until(const struct analyse_span *spans, size_t n, int64_t first_step,
                                  int64_t last_step, const _Atomic bool *stop,
                                  struct analyse_summary **ret_sum);

/* What analyse_summary_compute() of n spans may hold at its largest, in bytes, beyond the spans
 * themselves: the sum of its arrays of one element per span that coexist when the operator rows
 * are ordered (types, host nodes, intervals, the devices' kernels and rows, the rows of its tables and their hash slots at
 * their largest growth, the sort's keys and buckets, the result's rows). An estimate for a memory budget (the
 * HTTP analyses', docs/RELIABILITY.md), not a measurement; the summary itself is freed with
 * analyse_summary_free(). Pure. */
size_t analyse_summary_bytes(size_t n);

/* Frees a summary; NULL is accepted. */
void analyse_summary_free(struct analyse_summary *sum);

/* Total length of the union of intervals [start[i], end[i]) (end <= start: empty); sorts a
 * copy. Returns the length, or -ENOMEM. Pure. */
int64_t analyse_sum_union_ns(const int64_t *start, const int64_t *end, size_t n);

#endif
