/* SPDX-License-Identifier: MIT */
/*
 * analyse: the numbers. Pure computation over arrays: records in, tables out. No I/O, no libuv,
 * no SQLite, no globals, no logging; every result is owned by the caller and freed with the
 * matching *_free(). The same functions serve live jobs (fed from the store's snapshots) and
 * imported traces, so a view shows the same numbers whichever way the data came.
 *
 * Times are int64 nanoseconds throughout; callers convert to microseconds at the API edge.
 * The formulas follow the peers exactly (../shared/reference/peers.md, mindinsight.md); where
 * a peer has a known bug, the correct value is computed and the difference documented.
 *
 * The header has one section per area; each area's implementation lives in its own file
 * (roles.c, ops.c, breakdown.c; steptrace.c, queues.c).
 */
#ifndef STEPSCOPE_ANALYSE_H
#define STEPSCOPE_ANALYSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ===== Shared types ===================================================================== */

/* What a span is, for every analysis. Classified once by analyse_classify(). */
enum analyse_role {
    ANALYSE_ROLE_OTHER,
    ANALYSE_ROLE_STEP,            /* ProfilerStep#N and the like: one training step */
    ANALYSE_ROLE_DATALOADER,
    ANALYSE_ROLE_FORWARD,
    ANALYSE_ROLE_BACKWARD,
    ANALYSE_ROLE_OPTIMIZER,
    ANALYSE_ROLE_COMMUNICATION,
    ANALYSE_ROLE_HOST_OP,         /* a framework operator on the host (aten::conv2d, ...) */
    ANALYSE_ROLE_KERNEL,          /* device kernel */
    ANALYSE_ROLE_MEMCPY,
    ANALYSE_ROLE_MEMSET,
    ANALYSE_ROLE_RUNTIME,         /* cudaLaunchKernel and other runtime/driver calls */
    ANALYSE_ROLE_USER_ANNOTATION, /* record_function / RecordEvent ranges */
    ANALYSE_ROLE_PYTHON,          /* python_function events */
    ANALYSE_ROLE_GPU_ANNOTATION,  /* Kineto's GPU mirror of a host range (cat gpu_user_annotation):
                                     device-side, so in neither the host nor the kernel table (torch's
                                     key_averages() lists it as a CUDA row); CPU exec in the breakdown */
    ANALYSE_ROLE_SCOPE,           /* a level of the network's scope hierarchy (MindSpore's "Scope
                                     Layer": Default, network-WithLossCell, Gradients, ...): over
                                     the operators, not one; in no table, step point nor breakdown */
    ANALYSE_ROLE_COUNT,
};

/* A complete span (Chrome "X", or a B/E pair already matched by the caller). Strings are
 * borrowed, not NUL-terminated. */
struct analyse_span {
    int64_t ts_ns;
    int64_t dur_ns;
    const char *name;
    size_t name_len;
    const char *cat;      /* Chrome "cat"; len 0 when absent (legacy torch traces) */
    size_t cat_len;
    int64_t pid;          /* numeric pid/tid; a string pid/tid is mapped to a stable id by the caller */
    int64_t tid;
    int64_t correlation;  /* args.correlation / args["External id"] links, -1 when absent */
    int64_t external_id;  /* args["External id"], -1 when absent */
    enum analyse_role role;
};

/* Lower-case names of the roles, indexed by enum analyse_role ("host_op", "kernel", ...). */
extern const char *const analyse_role_names[ANALYSE_ROLE_COUNT];

/* ===== Section A: roles, operators, kernels, step-time breakdown (roles.c ops.c breakdown.c) ===== */

/* --- Roles (roles.c) ---------------------------------------------------------------------
 * A rule gives a role to the spans it matches. Every field that is not NULL must match (AND);
 * a field may list alternatives separated by '|' (OR). cat is compared case-insensitively (as
 * torch-tb-profiler lower-cases "cat"), "-" matching a span without a cat; the name fields are
 * case-sensitive unless nocase is set. Rules are tried in order; the first match wins. */
struct analyse_rule {
    enum analyse_role role;
    const char *cat;      /* category alternatives, "-" = no cat; NULL = any */
    const char *name;     /* whole-name alternatives; NULL = any */
    const char *prefix;   /* name prefix alternatives; NULL = any */
    const char *suffix;   /* name suffix alternatives; NULL = any */
    const char *contains; /* name substring alternatives; NULL = any */
    bool nocase;          /* compare name, prefix, suffix and contains ignoring ASCII case */
};

/* An ordered rule table. Read-only outside roles.c. */
struct analyse_rules {
    size_t n_rules;
    const struct analyse_rule *rules; /* [n_rules]; strings point into blob (parsed) or are static */
    char *blob;                 /* owned text of parsed rules; NULL for the built-in table */
};

/* The built-in rule table (docs/ANALYSIS.md lists it): Kineto's current and 2021 categories,
 * legacy torch traces without cat, Paddle's and MindSpore's names. Static, never freed; a span no
 * rule matches is ANALYSE_ROLE_OTHER. */
const struct analyse_rules *analyse_rules_default(void);

/* Parses user rules, one a line: `key = value` pairs separated by blanks, keys role (required:
 * one of analyse_role_names), cat, name, prefix, suffix, contains, case (exact | ignore). A value
 * with blanks, '"' or '\' is written in double quotes with \" and \\ escapes. Blank lines and
 * lines whose first non-blank character is '#' are skipped. text need not be NUL-terminated.
 * Returns 0 and sets *ret_rules (caller frees with analyse_rules_free()); -EINVAL on a bad line,
 * whose 1-based number is then stored in *bad_line when bad_line is not NULL; -ENOMEM. */
int analyse_rules_parse(const char *text, size_t len, struct analyse_rules **ret_rules, size_t *bad_line);

/* Frees parsed rules; NULL and the built-in table are accepted and ignored. */
void analyse_rules_free(struct analyse_rules *rules);

/* Sets spans[i].role for every span: user rules first (NULL for none), then the built-in table.
 * Pure; O(n * rules). */
void analyse_classify(struct analyse_span *spans, size_t n, const struct analyse_rules *user);

/* The role of one span under user rules (may be NULL) and the built-in table. */
enum analyse_role analyse_role_of(const struct analyse_span *span, const struct analyse_rules *user);

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

/* Bit for a role in a role mask. */
#define ANALYSE_ROLE_BIT(r) (UINT32_C(1) << (r))
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

/* --- Step-time breakdown (breakdown.c) ----------------------------------------------------
 * torch-tb-profiler's overview breakdown (peers.md §1.3, tb_plugin event_parser.py and
 * overall_parser.py), see docs/ANALYSIS.md. Categories in priority order: */
enum analyse_bd_cat {
    ANALYSE_BD_KERNEL,
    ANALYSE_BD_MEMCPY,
    ANALYSE_BD_MEMSET,
    ANALYSE_BD_COMMUNICATION,
    ANALYSE_BD_RUNTIME,
    ANALYSE_BD_DATALOADER,
    ANALYSE_BD_CPU_EXEC,
    ANALYSE_BD_OTHER,
    ANALYSE_BD_COUNT,
};

/* "kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other". */
extern const char *const analyse_bd_cat_names[ANALYSE_BD_COUNT];

struct analyse_bd_step {
    int64_t step;                     /* N of ProfilerStep#N as the framework wrote it; 0 for the
                                         single implicit step of a trace without step spans */
    int64_t host_start_ns, host_end_ns; /* the step span itself */
    int64_t start_ns, end_ns;         /* after device-side stretching */
    int64_t n_device;                 /* device events launched by runtimes inside the step */
    int64_t cost_ns[ANALYSE_BD_COUNT]; /* sums exactly to end_ns - start_ns */
};

struct analyse_bd_gpu {
    int64_t pid;             /* the device's pid in the trace (Kineto: the GPU id) */
    int64_t busy_ns;         /* |union(kernels) ∩ window| */
    double utilization;      /* busy_ns / |window|, in [0, 1] */
};

/* Read-only outside breakdown.c. */
struct analyse_breakdown {
    size_t n_steps;                   /* steps kept after tail trimming */
    struct analyse_bd_step *steps;    /* [n_steps], by start time */
    size_t n_dropped;                 /* tail steps dropped (kernels probably truncated) */
    bool device_stretched;            /* some step launched device work: steps are device-side */
    double avg_ns[ANALYSE_BD_COUNT];  /* sum over steps / n_steps */
    double avg_total_ns;
    int64_t window_start_ns, window_end_ns; /* [first step start, last step end] */
    size_t n_gpus;
    struct analyse_bd_gpu *gpus;      /* [n_gpus], by pid: kernel busy time per device */
};

/* Computes the breakdown of classified spans (analyse_classify()). Steps are the STEP spans
 * (not those on a device); device events are linked to runtime spans by equal correlation
 * (>= 0); a kernel whose external_id (>= 0) is that of a host COMMUNICATION span counts as
 * communication. With no step span the single step 0 covers the host operators' extent; with no
 * host span at all the result has no steps. Returns 0 and sets *ret_bd (caller frees with
 * analyse_breakdown_free()), or -ENOMEM. */
int analyse_breakdown_compute(const struct analyse_span *spans, size_t n, struct analyse_breakdown **ret_bd);

/* Frees a breakdown; NULL is accepted. */
void analyse_breakdown_free(struct analyse_breakdown *bd);

/* ===== Section B: step trace, data queues and pipeline (steptrace.c queues.c) ===== */

/* --- Step trace (steptrace.c) -----------------------------------------------------------
 * MindInsight's split of a training step (docs/ANALYSIS.md, "Step trace and data queues"):
 *   total = end - start, interval = fp - start, fp_bp = bp - fp, tail = end - bp,
 * inference mode: fp = end - fp (no bp). start is the previous step's end, the first step's fp.
 * One call handles the steps of one rank, given in execution order; the caller groups by rank.
 * Sums of int64 ns are exact up to 9.2e18 ns in total (e.g. 1 M steps of 2.5 h each). */

#define ANALYSE_ST_UNSET INT64_MIN /* start_ns: "previous step's end; the first step's fp" */
#define ANALYSE_ST_ALL_FIRST INT64_MIN /* first_step of analyse_steptrace_average(): no bound */
#define ANALYSE_ST_ALL_LAST INT64_MAX  /* last_step of analyse_steptrace_average(): no bound */
#define ANALYSE_ST_AVERAGE (-1)        /* analyse_st_trace.step of an average */

/* One communication op (all-reduce and the like) of a step, on one stream. */
struct analyse_st_comm {
    int64_t stream;   /* one reduce line per stream */
    const char *name; /* borrowed, not NUL-terminated; "stream_10_parallel_0" for MindSpore */
    size_t name_len;
    int64_t start_ns; /* absolute, same clock as the step points */
    int64_t end_ns;   /* events with end_ns <= start_ns are skipped, as MindInsight skips zeros */
};

/* The points of one step (MindSpore's step_trace_raw row, or analyse_steptrace_points()). */
struct analyse_st_step {
    int64_t step;     /* the framework's own step number, kept as is */
    int64_t rank;
    int64_t start_ns; /* ANALYSE_ST_UNSET: the previous element's end_ns, fp_ns for element 0 */
    int64_t fp_ns;    /* FP start */
    int64_t bp_ns;    /* BP end; ignored in inference mode */
    int64_t end_ns;   /* step (iteration) end */
    const struct analyse_st_comm *comm; /* borrowed, n_comm entries, any order */
    size_t n_comm;
};

/* Per-step stages, one row per input step (analyse_steptrace_stages()). */
struct analyse_st_stage {
    int64_t step;
    int64_t rank;
    int64_t start_ns;    /* resolved start point (absolute) */
    int64_t total_ns;    /* = interval_ns + fp_bp_ns + tail_ns (training) = interval_ns + fp_ns */
    int64_t interval_ns; /* "Step Interval": waiting for data */
    int64_t fp_bp_ns;    /* forward + backward; 0 in inference mode */
    int64_t tail_ns;     /* all-reduce + parameter update; 0 in inference mode */
    int64_t fp_ns;       /* inference mode: end - fp; training: fp_bp_ns + tail_ns */
};

/* One segment of a reduce line: a communication op or the gap before/after it. */
struct analyse_st_seg {
    const char *name; /* borrowed from analyse_st_comm.name; NULL for a gap */
    size_t name_len;
    int64_t start_ns; /* relative to the step's start point */
    int64_t dur_ns;   /* negative when ops on one stream overlap (MindInsight then shows {}) */
};

/* One reduce line: the comm ops of one stream sorted by end, with the gaps between them. The
 * segments tile [fp, end]: seg[0] starts at fp_rel_ns and the last one ends at total_ns. */
struct analyse_st_line {
    int64_t stream;
    struct analyse_st_seg *seg; /* n_seg = 2 * (ops on the stream) + 1 */
    size_t n_seg;
};

/* A step trace: one step, or an average over steps (analyse_steptrace_step/_average()). */
struct analyse_st_trace {
    int64_t step;       /* step number, or ANALYSE_ST_AVERAGE */
    int64_t rank;
    int64_t first_step; /* step numbers of the first and last step behind the numbers */
    int64_t last_step;
    size_t n_steps;     /* steps averaged (1 for a single step) */
    bool inference;
    bool ordered;       /* start <= fp <= bp <= end held (for an average: for every step) */
    int64_t start_ns;   /* absolute start of a single step; 0 for an average */
    int64_t total_ns;   /* stages as in struct analyse_st_stage; they sum to total_ns exactly */
    int64_t interval_ns;
    int64_t fp_bp_ns;
    int64_t tail_ns;
    int64_t fp_ns;
    int64_t fp_rel_ns;  /* fp point relative to start (= interval_ns) */
    int64_t bp_rel_ns;  /* bp point relative to start (training only) */
    double interval_pct; /* share of total_ns in percent [0, 100]; 0 when total_ns is 0 */
    double fp_bp_pct;
    double tail_pct;
    double fp_pct;
    struct analyse_st_line *lines; /* one per stream, in order of first appearance */
    size_t n_lines;
    size_t n_comm_skipped; /* comm ops dropped for end <= start */
};

/* Fills rows[0..n) with the stages of steps[0..n) (start points resolved as documented on
 * analyse_st_step.start_ns). Returns 0, or -EINVAL if steps or rows is NULL with n > 0. Pure. */
int analyse_steptrace_stages(const struct analyse_st_step *steps, size_t n, bool inference,
                             struct analyse_st_stage *rows);

/* The trace of the step numbered step (the first element with that number) in steps[0..n),
 * with its reduce lines. Returns 0 and sets *ret_trace (caller frees with
 * analyse_steptrace_free(); names inside borrow from steps[].comm), -ENOENT if no element has
 * that number, -EINVAL on NULL arguments, -ENOMEM. Pure. */
int analyse_steptrace_step(const struct analyse_st_step *steps, size_t n, int64_t step,
                           bool inference, struct analyse_st_trace **ret_trace);

/* The mean trace over the elements whose step number lies in [first_step, last_step]
 * (ANALYSE_ST_ALL_FIRST/_LAST for no bound). Every point is averaged relative to its step's
 * start and rounded to the nearest ns; the stages are then derived from the mean points, so
 * they still sum to total_ns. Comm ops are matched across steps by (stream, name) and each is
 * averaged over the steps that have it. This is the real mean: MindSpore's precomputed average
 * row is round(mean) of the absolute columns and, in older versions, excludes step 1; pass
 * first_step = 2 to get that. Returns 0 and sets *ret_trace (free with
 * analyse_steptrace_free()), -ENOENT if no step is in range, -EINVAL, -ENOMEM. Pure. */
int analyse_steptrace_average(const struct analyse_st_step *steps, size_t n, int64_t first_step,
                              int64_t last_step, bool inference,
                              struct analyse_st_trace **ret_trace);

/* Frees a trace and its lines. NULL-safe. */
void analyse_steptrace_free(struct analyse_st_trace *trace);

/* Where a point came from. */
enum analyse_st_origin {
    ANALYSE_ST_ORIGIN_NONE,          /* not found: no operator in the step */
    ANALYSE_ST_ORIGIN_AFTER_DATA,    /* FP: first operator starting after the data fetch ends */
    ANALYSE_ST_ORIGIN_FIRST_OP,      /* FP: no data fetch in the step: the first operator */
    ANALYSE_ST_ORIGIN_BEFORE_COMM,   /* BP: last operator starting before the last comm op */
    ANALYSE_ST_ORIGIN_LAST_OP,       /* BP: no comm op (or none before it): the last operator */
    ANALYSE_ST_ORIGIN_ENV_STEPSCOPE, /* STEPSCOPE_FP_POINT / STEPSCOPE_BP_POINT */
    ANALYSE_ST_ORIGIN_ENV_PROFILING, /* MindSpore's PROFILING_FP_START / PROFILING_BP_END */
    ANALYSE_ST_ORIGIN_ENV_MINDSPORE, /* MindSpore r0.5's FP_POINT / BP_POINT */
    ANALYSE_ST_ORIGIN_CONFIG,        /* stepscoped.conf */
    ANALYSE_ST_ORIGIN_COUNT,
};

/* Lower-case names of the origins ("after_data", "env_stepscope", ...). */
extern const char *const analyse_st_origin_names[ANALYSE_ST_ORIGIN_COUNT];

/* Explicit FP/BP operator names from every source; NULL or "" = not set. Borrowed,
 * NUL-terminated. Precedence, highest first: STEPSCOPE_*, PROFILING_*, FP_POINT/BP_POINT,
 * config (the job's own environment beats the daemon-wide default). */
struct analyse_st_overrides {
    const char *stepscope_fp, *stepscope_bp; /* STEPSCOPE_FP_POINT, STEPSCOPE_BP_POINT */
    const char *profiling_fp, *profiling_bp; /* PROFILING_FP_START, PROFILING_BP_END */
    const char *mindspore_fp, *mindspore_bp; /* FP_POINT, BP_POINT */
    const char *config_fp, *config_bp;       /* stepscoped.conf */
};

/* Picks the FP (fp = true) or BP override by the precedence above. Returns the name and sets
 * *ret_origin, or returns NULL and sets ANALYSE_ST_ORIGIN_NONE when none is set (o may be
 * NULL). Pure. */
const char *analyse_steptrace_pick_override(const struct analyse_st_overrides *o, bool fp,
                                            enum analyse_st_origin *ret_origin);

/* The FP/BP/end points derived from one step's spans, and where they came from. */
struct analyse_st_points {
    int64_t fp_ns;  /* start of the FP operator */
    int64_t bp_ns;  /* end of the BP operator */
    int64_t end_ns; /* end of the STEP-role span if there is one, else the latest span end */
    size_t fp_index; /* into the span array */
    size_t bp_index;
    enum analyse_st_origin fp_origin;
    enum analyse_st_origin bp_origin;
    bool fp_override_missed; /* an FP override was set but no span has that exact name */
    bool bp_override_missed;
    const char *fp_name; /* borrowed from the span; what the API reports as fp_start */
    size_t fp_name_len;
    const char *bp_name; /* bp_end */
    size_t bp_name_len;
};

/* Derives the points of one step from its spans in execution order, for frameworks without
 * Ascend step points. Operators are spans of role HOST_OP, KERNEL, FORWARD, BACKWARD,
 * OPTIMIZER, COMMUNICATION or OTHER (minus data fetches). The data fetch is the first span of
 * role DATALOADER or whose name contains "GetNext" or "DataLoader"; a communication op has role
 * COMMUNICATION or a name containing "AllReduce", "allreduce", "all_reduce", "nccl" or "hcom".
 * FP = the first operator starting at or after the data fetch's end, else the first operator;
 * BP = the last non-communication operator starting before the last communication op starts,
 * else the last operator. An override (o may be NULL) selects by exact name: FP at the first
 * span with that name, BP at the end of the last one; an override that matches nothing falls
 * back to the automatic point and sets *_override_missed. Returns 0 and fills *ret, -ENOENT if
 * the spans hold no operator, -EINVAL on NULL arguments. Pure. */
int analyse_steptrace_points(const struct analyse_span *spans, size_t n,
                             const struct analyse_st_overrides *o, struct analyse_st_points *ret);

/* What analyse_steptrace_points() reads in a span's name, as bits: ANALYSE_ST_NAME_FETCH if it
 * contains "GetNext" or "DataLoader", ANALYSE_ST_NAME_COMM if it contains one of the
 * communication names above. Pure. */
#define ANALYSE_ST_NAME_FETCH 1u
#define ANALYSE_ST_NAME_COMM 2u
unsigned analyse_steptrace_name_bits(const char *name, size_t len);

/* analyse_steptrace_points() with the spans' name bits given: name_bits[i] must be
 * analyse_steptrace_name_bits() of spans[i]'s name (a caller that interns names computes them
 * once per name instead of several substring searches per span and call); NULL computes them.
 * Same results. */
int analyse_steptrace_points_bits(const struct analyse_span *spans, const uint8_t *name_bits,
                                  size_t n, const struct analyse_st_overrides *o,
                                  struct analyse_st_points *ret);

/* Copies the communication spans (as classified above) of spans[0..n) into comm (room for n),
 * stream = tid, names borrowed from the spans. Sets *ret_n. Returns 0 or -EINVAL. Pure. */
int analyse_steptrace_comm_from_spans(const struct analyse_span *spans, size_t n,
                                      struct analyse_st_comm *comm, size_t *ret_n);

/* --- Data queues and pipeline (queues.c) --------------------------------------------------
 * Two queues per rank: the host queue (MindInsight's "device_queue": the connector in front of
 * the op that sends batches to the device) and the device queue (MindInsight's "get_next":
 * the queue GetNext reads on the chip). MindInsight's verdicts and pipeline rules, with
 * thresholds as parameters and the evidence kept. */

#define ANALYSE_QUEUE_EMPTY_THRESHOLD 0.3 /* host queue empty in > 30 % of steps: data process */
#define ANALYSE_PIPE_HIGH 0.8             /* output queue usage thresholds (proposer defaults) */
#define ANALYSE_PIPE_LOW 0.6
#define ANALYSE_PIPE_DIFF 0.1             /* child usage - own usage > 0.1: the op is slow */

/* One queue-depth sample (one per step or batch). */
struct analyse_queue_sample {
    int64_t step;     /* step/batch number */
    int64_t size;     /* elements in the queue when sampled */
    int64_t capacity; /* -1 when unknown (GetNext records carry none) */
};

/* Depth statistics of one queue. */
struct analyse_queue_stats {
    size_t n_samples;
    size_t n_empty;     /* size == 0 */
    size_t n_full;      /* capacity known and size == capacity */
    double empty_ratio; /* n_empty / n_samples, 0 when no samples */
    double full_ratio;
    double avg_size;
    int64_t max_size;
};

/* Sorts s[0..n) by step, stably (MindInsight's order for the per-step series). Returns 0 or
 * -ENOMEM (s is untouched then). Pure. */
int analyse_queue_sort(struct analyse_queue_sample *s, size_t n);

/* Fills *ret with the statistics of s[0..n) (n may be 0). Pure. */
void analyse_queue_stats(const struct analyse_queue_sample *s, size_t n,
                         struct analyse_queue_stats *ret);

/* What a time record measures. */
enum analyse_queue_time_kind {
    ANALYSE_QUEUE_TIME_GET,     /* host: get a batch from the pipeline */
    ANALYSE_QUEUE_TIME_PUSH,    /* host: push it to the device (TDT) */
    ANALYSE_QUEUE_TIME_TOTAL,   /* host: whole batch */
    ANALYSE_QUEUE_TIME_GETNEXT, /* device: one GetNext (end - start) */
    ANALYSE_QUEUE_TIME_COUNT,
};

struct analyse_queue_time {
    int64_t step;
    enum analyse_queue_time_kind kind;
    int64_t dur_ns;
};

/* Mean and count per kind (each kind over its own records; MindInsight divides all host
 * averages by the number of TOTAL records). */
struct analyse_queue_time_stats {
    size_t n[ANALYSE_QUEUE_TIME_COUNT];
    double avg_ns[ANALYSE_QUEUE_TIME_COUNT]; /* 0 when n is 0 */
};

/* Fills *ret from t[0..n). Records of an unknown kind are ignored. Pure. */
void analyse_queue_time_stats(const struct analyse_queue_time *t, size_t n,
                              struct analyse_queue_time_stats *ret);

/* The data-queue verdict (MindInsight's process_summary status). */
enum analyse_queue_status {
    ANALYSE_QUEUE_STATUS_NONE,         /* no host queue data: no verdict */
    ANALYSE_QUEUE_STATUS_DATA_PROCESS, /* host queue empty in > threshold of steps */
    ANALYSE_QUEUE_STATUS_TRANSMISSION, /* host queue fine, device queue empty at least once */
    ANALYSE_QUEUE_STATUS_DEVICE_QUEUE, /* neither: MindInsight's "device_queue_warning" */
};

struct analyse_queue_verdict {
    enum analyse_queue_status status;
    bool has_host;
    bool has_device;
    size_t host_empty; /* evidence */
    size_t host_full;
    size_t host_total;
    size_t device_empty;
    size_t device_total;
    double threshold;     /* echoed: fraction of steps */
    double host_empty_pct; /* 100 * host_empty / host_total, exact */
    int empty_rate_pct;    /* ceil of host_empty_pct, as MindInsight's helper shows it */
    const char *code;      /* "data_process", "data_transmission", "device_queue_warning", "" */
    const char *message;   /* static English sentence */
};

/* MindInsight's rule: host empty > threshold * host_total -> DATA_PROCESS; else device
 * queue present with an empty sample -> TRANSMISSION; else DEVICE_QUEUE. host or device NULL
 * (or with no samples) = that queue was not recorded; without a host queue -> NONE. Pure. */
void analyse_queue_verdict(const struct analyse_queue_stats *host,
                           const struct analyse_queue_stats *device, double threshold,
                           struct analyse_queue_verdict *ret);

/* One dataset pipeline operator with its output (connector) queue. */
struct analyse_pipe_op {
    int64_t op_id;
    const char *op_type; /* borrowed, NUL-terminated: "MapOp", "BatchOp", "GeneratorOp", ... */
    int64_t num_workers;
    int64_t parent_id;   /* -1 for the root */
    const int64_t *children; /* borrowed child op ids */
    size_t n_children;
    double usage;        /* mean(queue sizes) / queue length in [0, 1]; < 0: no queue metrics
                            (counted as 0 as MindInsight does) */
};

/* mean(sizes) / length, or -1 when n is 0 or length <= 0 (MindSpore's usage rate). Pure. */
double analyse_pipe_usage(const int64_t *sizes, size_t n, int64_t length);

/* Why an op was flagged. */
enum analyse_pipe_reason {
    ANALYSE_PIPE_CHILD_FULLER, /* a child's queue usage exceeds this op's by > diff: op slow */
    ANALYSE_PIPE_LEAF_LOW,     /* a source op's output queue usage < low: reader too slow */
    ANALYSE_PIPE_ALL_HIGH,     /* every non-root queue >= high: the consumer is the bottleneck */
};

/* What to do about it (seed 001 and MindInsight's helper keys). */
enum analyse_pipe_advice {
    ANALYSE_PIPE_ADVICE_DATASET_OP,   /* source op: increase/decrease num_parallel_workers */
    ANALYSE_PIPE_ADVICE_GENERATOR_OP, /* GeneratorOp: num_parallel_workers, use MindRecord */
    ANALYSE_PIPE_ADVICE_MAP_OP,       /* MapOp: num_parallel_workers; optimise Python ops */
    ANALYSE_PIPE_ADVICE_BATCH_OP,     /* BatchOp: increase prefetch_size */
    ANALYSE_PIPE_ADVICE_CONSUMER,     /* ALL_HIGH: the pipeline keeps up; look downstream */
    ANALYSE_PIPE_ADVICE_GENERAL,      /* any other op: it may be the bottleneck */
};

struct analyse_pipe_finding {
    size_t op;                  /* index into the ops array */
    enum analyse_pipe_reason reason;
    enum analyse_pipe_advice advice;
    double usage;               /* evidence: the op's output queue usage (missing = 0) */
    double child_usage;         /* CHILD_FULLER: the largest child usage; else 0 */
    double threshold;           /* the threshold crossed (diff, low or high) */
    const char *code;           /* MindInsight helper key, "minddata_pipeline-map_op", ... */
    const char *message;        /* static English sentence */
};

/* Pipeline bottlenecks by MindInsight's rules (_filter_outside_threshold) with thresholds
 * high/low/diff: findings in MindInsight's order (CHILD_FULLER ops in input order, then
 * LEAF_LOW ops), or a single ALL_HIGH finding for the root when every non-root queue is at or
 * above high (only if there is at least one non-root op; MindInsight also flags a lone root).
 * Returns 0 and sets *ret_findings (caller frees with free(); NULL when none) and *ret_n,
 * -EINVAL on NULL arguments, -ENOMEM. Children ids not in ops count as usage 0. Pure. */
int analyse_pipe_bottlenecks(const struct analyse_pipe_op *ops, size_t n, double high, double low,
                             double diff, struct analyse_pipe_finding **ret_findings,
                             size_t *ret_n);


/* ===== Section C: helper suggestions and ranks (helper.c ranks.c) ===== */

/* --- Ranks (ranks.c) -----------------------------------------------------------------------
 * Per-rank step statistics and straggler flags (issue 3 item 9). A rank is a straggler when its
 * mean step time is strictly greater than the mean of the ranks' means times (1 + ratio), the
 * strict '>' of MindInsight's cluster proposer (interval / avg - 1 > 0.2). docs/ANALYSIS.md,
 * "Helper and ranks". */

#define ANALYSE_STRAGGLER_RATIO 0.2 /* rank mean > mean of ranks * (1 + 0.2) */

/* The series of one rank, as the step trace gives them. All arrays are borrowed, [n]. */
struct analyse_rank_steps {
    int64_t rank;
    int64_t stage;              /* pipeline stage; -1 when unknown (all such ranks form stage -1) */
    const int64_t *step_ns;     /* total step time per step; required when n > 0 */
    const int64_t *interval_ns; /* NULL when not given */
    const int64_t *fp_bp_ns;    /* NULL when not given */
    const int64_t *tail_ns;     /* NULL when not given */
    size_t n;
};

enum analyse_rank_metric {
    ANALYSE_RANK_STEP,
    ANALYSE_RANK_INTERVAL,
    ANALYSE_RANK_FP_BP,
    ANALYSE_RANK_TAIL,
    ANALYSE_RANK_METRIC_COUNT,
};

/* "step", "interval", "fp_bp", "tail". */
extern const char *const analyse_rank_metric_names[ANALYSE_RANK_METRIC_COUNT];

/* Statistics of one series; count 0 (all zero) when the series was not given or is empty.
 * median and p90 interpolate linearly between order statistics (numpy's default percentile:
 * position q * (count - 1)); std is the population standard deviation (numpy's ddof = 0). */
struct analyse_dist {
    size_t count;
    double mean_ns;
    double median_ns;
    double p90_ns;
    double std_ns;
    int64_t min_ns;
    int64_t max_ns;
};

struct analyse_rank_row {
    int64_t rank;
    int64_t stage;
    struct analyse_dist stat[ANALYSE_RANK_METRIC_COUNT];
    bool straggler;    /* stat[STEP].mean_ns > threshold_ns of the result */
    double excess_pct; /* 100 * (mean / mean of ranks - 1); 0 when the rank has no steps */
};

/* One pipeline stage (or stage -1: ranks without one). */
struct analyse_rank_stage {
    int64_t stage;
    size_t n_ranks;        /* ranks of the stage that have steps */
    int64_t slowest_rank;  /* largest mean step time; the first in input order on a tie; -1 if none */
    double slowest_mean_ns;
    double mean_ns;        /* mean of the stage's rank means */
};

/* Read-only outside ranks.c. */
struct analyse_ranks {
    size_t n_ranks;
    struct analyse_rank_row *rows;      /* [n_ranks], in input order */
    double mean_of_ranks_ns;            /* mean of the rank means over ranks with steps; 0 if none */
    double straggler_ratio;             /* echoed */
    double threshold_ns;                /* mean_of_ranks_ns * (1 + straggler_ratio) */
    size_t n_stragglers;
    size_t n_stages;
    struct analyse_rank_stage *stages;  /* [n_stages], by stage ascending */
};

/* Statistics of v[0..n) into *ret (n may be 0). Returns 0, -EINVAL if v is NULL with n > 0 or
 * ret is NULL, -ENOMEM (it sorts a copy). Pure. */
int analyse_dist_compute(const int64_t *v, size_t n, struct analyse_dist *ret);

/* Per-rank statistics, stragglers and the slowest rank per stage of in[0..n). straggler_ratio
 * < 0 or NaN is -EINVAL. Ranks with no steps are listed but neither averaged nor flagged.
 * Returns 0 and sets *ret_ranks (caller frees with analyse_ranks_free()), -EINVAL, -ENOMEM. */
int analyse_ranks_compute(const struct analyse_rank_steps *in, size_t n, double straggler_ratio,
                          struct analyse_ranks **ret_ranks);

/* Frees a result; NULL is accepted. */
void analyse_ranks_free(struct analyse_ranks *ranks);

/* --- Helper (helper.c) ---------------------------------------------------------------------
 * A rule table over evidence gathered by the caller (issue 3 item 8): MindInsight's proposer
 * (mindinsight.md §4.1, §4.3), torch-tb-profiler's recommendations (peers.md §1.4), TF's
 * input-bound classes (peers.md §4.2) and stragglers. Each suggestion carries the numbers that
 * triggered it and the dashboard view to open. Missing evidence never triggers a rule. The rule
 * table, thresholds and wording are in docs/ANALYSIS.md, "Helper and ranks". */

/* The framework a job's ranks name in their hello ("framework"). It decides which rule families
 * apply: each peer's rules were written for its own framework (docs/ANALYSIS.md, "Which rules
 * apply"). */
enum analyse_framework {
    ANALYSE_FW_OTHER,     /* none named, or one with no peer rules of its own: every family */
    ANALYSE_FW_TORCH,     /* torch-tb-profiler's rules */
    ANALYSE_FW_PADDLE,    /* no peer helper: only the framework-neutral rules */
    ANALYSE_FW_MINDSPORE, /* MindInsight's rules */
    ANALYSE_FW_COUNT,
};

/* "other", "torch", "paddle", "mindspore". */
extern const char *const analyse_framework_names[ANALYSE_FW_COUNT];

/* The framework a hello's "framework" names: "torch"/"pytorch", "paddle"/"paddlepaddle",
 * "mindspore" (any case); ANALYSE_FW_OTHER for anything else, "" or NULL. Pure. */
enum analyse_framework analyse_framework_of(const char *name);

/* Thresholds; analyse_helper_rules_default() gives the peers' values. Ratios are fractions. */
struct analyse_helper_rules {
    double step_interval_ms;       /* 0.5: MindInsight, average step interval > 0.5 ms */
    double step_interval_ratio;    /* 0.05: and >= 5 % of the average step (ours: material) */
    double queue_empty_ratio;      /* 0.3: host queue empty in > 30 % of steps */
    double cpu_pct;                /* 80: system CPU use, round(mean) > 80 % */
    double pipe_high;              /* 0.8, 0.6, 0.1: pipeline usage thresholds (§1.4) */
    double pipe_low;
    double pipe_diff;
    bool mindinsight_gate;         /* true: MindInsight's post-filter (docs) */
    double dataloader_ratio;       /* 0.05: tb-profiler, dataloader / total > 0.05 */
    double communication_ratio;    /* 0.1: tb-profiler, communication / total > 0.1 */
    double gpu_util;               /* 0.5: tb-profiler, a GPU's utilisation < 0.5 */
    double input_high_pct;         /* 20: TF, input % >= 20: HIGHLY input-bound */
    double input_moderate_pct;     /* 5: TF, input % >= 5: MODERATELY */
    double all_other_pct;          /* 3: TF, else all-other % >= 3: POTENTIALLY */
    double straggler_ratio;        /* 0.2: rank mean step > mean of ranks * 1.2 */
    double cluster_interval_ratio; /* 0.2: MindInsight cluster, rank interval / avg - 1 > 0.2 */
};

/* Fills *ret with the defaults above. */
void analyse_helper_rules_default(struct analyse_helper_rules *ret);

/* Applies `key = value` overrides, one a line, to *rules (which the caller has initialised,
 * usually with the defaults). Keys are the field names above; values are finite numbers >= 0
 * (mindinsight_gate: 0, 1, true or false). Blank lines and lines whose first non-blank character
 * is '#' are skipped; a key given twice takes the last value. text need not be NUL-terminated.
 * Returns 0; -EINVAL on an unknown key, a bad value or a line without '=', whose 1-based number
 * is stored in *bad_line when bad_line is not NULL (rules is then left unchanged). Pure. */
int analyse_helper_rules_parse(const char *text, size_t len, struct analyse_helper_rules *rules,
                               size_t *bad_line);

/* The evidence for the rules. Every part is optional: NaN for a missing number, NULL or 0 for a
 * missing array. Pointers are borrowed for the duration of analyse_helper_run(). */
struct analyse_helper_input {
    /* Which rule families apply (ANALYSE_FW_OTHER after analyse_helper_input_init()). */
    enum analyse_framework framework;
    /* Step-trace average (analyse_steptrace_average()), ns; NaN = no step trace. */
    double st_interval_ns;
    double st_fp_bp_ns;
    double st_tail_ns;
    double st_total_ns;
    /* Breakdown averages (struct analyse_breakdown avg_ns / avg_total_ns); has_breakdown false
     * = none. */
    bool has_breakdown;
    double bd_avg_ns[ANALYSE_BD_COUNT];
    double bd_total_ns;
    /* GPU utilisation in [0, 1] per device (struct analyse_bd_gpu), [n_gpus]. */
    const struct analyse_bd_gpu *gpus;
    size_t n_gpus;
    /* Data queues (analyse_queue_stats()); NULL = that queue was not recorded. */
    const struct analyse_queue_stats *host_queue;
    const struct analyse_queue_stats *device_queue;
    /* Mean whole-system CPU utilisation in percent (100 - mean idle); NaN = no samples. */
    double host_cpu_pct;
    /* Dataset pipeline ops (the helper runs analyse_pipe_bottlenecks()), [n_pipe_ops]. */
    const struct analyse_pipe_op *pipe_ops;
    size_t n_pipe_ops;
    /* TF's input pipeline analysis: percent of step time waiting for input and "all other"
     * time; NaN = not measured. */
    double input_pct;
    double all_other_pct;
    /* Per-rank statistics (analyse_ranks_compute()); NULL = single rank or unknown. Only its
     * rows are read: the helper re-applies its own straggler_ratio. */
    const struct analyse_ranks *ranks;
};

/* Fills *ret with "no evidence at all": every number NaN, every pointer NULL. */
void analyse_helper_input_init(struct analyse_helper_input *ret);

enum analyse_helper_severity {
    ANALYSE_HELPER_INFO,
    ANALYSE_HELPER_WARNING,
    ANALYSE_HELPER_CRITICAL,
};

/* "info", "warning", "critical". */
extern const char *const analyse_helper_severity_names[3];

#define ANALYSE_HELPER_EVIDENCE_MAX 4
#define ANALYSE_HELPER_MESSAGE_MAX 512

/* One number behind a suggestion: name op threshold held (e.g. "interval_ms" 0.8 > 0.5). */
struct analyse_helper_evidence {
    const char *name; /* static */
    double value;
    const char *op;   /* static: ">", ">=", "<", "=" (a fact, threshold 0) */
    double threshold;
};

struct analyse_helper_suggestion {
    const char *code;     /* static, stable id: "step_interval_long", ... */
    enum analyse_helper_severity severity;
    const char *title;    /* static, short */
    char message[ANALYSE_HELPER_MESSAGE_MAX]; /* the peer's wording, numbers filled in */
    const char *source;   /* static citation: "MindInsight step_trace-iter_interval", ... */
    const char *view;     /* static dashboard view: "step-trace", "queues", "pipeline",
                             "ranks", "timeline", "kernels" (never "overview", where the
                             suggestions are shown) */
    int64_t subject;      /* the rank or GPU pid the suggestion is about; -1 for the job */
    size_t n_evidence;
    struct analyse_helper_evidence evidence[ANALYSE_HELPER_EVIDENCE_MAX];
};

/* Read-only outside helper.c. */
struct analyse_helper_result {
    size_t n;
    struct analyse_helper_suggestion *s; /* [n], in rule-table order, then by subject order */
};

/* Runs every rule of the table on in. Returns 0 and sets *ret_result (caller frees with
 * analyse_helper_result_free(); n may be 0), -EINVAL on NULL arguments, -ENOMEM. Pure. */
int analyse_helper_run(const struct analyse_helper_input *in, const struct analyse_helper_rules *rules,
                       struct analyse_helper_result **ret_result);

/* Frees a result; NULL is accepted. */
void analyse_helper_result_free(struct analyse_helper_result *result);

/* ===== Section D: Paddle's summaries and benchmark (summary.c) ===== */

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

/* Frees a summary; NULL is accepted. */
void analyse_summary_free(struct analyse_summary *sum);

/* Total length of the union of intervals [start[i], end[i]) (end <= start: empty); sorts a
 * copy. Returns the length, or -ENOMEM. Pure. */
int64_t analyse_sum_union_ns(const int64_t *start, const int64_t *end, size_t n);

/* --- Benchmark (summary.c) -------------------------------------------------------------------
 * paddle.profiler's benchmark timer (python/paddle/profiler/timer.py): per step the batch cost
 * (the step's time), the reader cost (its data loading) and the samples; the first `skip`
 * steps are warm-up and not counted (Paddle skips 10). */

#define ANALYSE_BENCH_SKIP_DEFAULT 10

struct analyse_bench_step {
    int64_t step;
    int64_t batch_ns;  /* > 0, else the step is ignored */
    int64_t reader_ns; /* < 0: unknown */
    int64_t samples;   /* < 0: unknown (ips is then steps/s) */
};

struct analyse_bench_stat {
    double avg, max, min; /* seconds (costs) or samples/s, steps/s (ips) */
};

struct analyse_benchmark {
    size_t n_steps;       /* steps given with batch_ns > 0 */
    size_t n_skipped;     /* warm-up steps skipped (min(skip, n_steps)) */
    size_t n_counted;     /* n_steps - n_skipped */
    bool has_reader;      /* every counted step has a reader cost */
    bool samples_mode;    /* every counted step has samples: ips in samples/s, else steps/s */
    struct analyse_bench_stat reader_cost; /* zero when !has_reader */
    struct analyse_bench_stat batch_cost;
    struct analyse_bench_stat ips;        /* avg = samples (or steps) / total batch time */
    double reader_ratio_pct;              /* 100 * reader avg / batch avg */
};

/* Computes the benchmark of steps[0..n) in execution order. Returns 0 and fills *ret (all zero
 * when no step is counted), -EINVAL on NULL arguments. Pure. */
int analyse_benchmark_compute(const struct analyse_bench_step *steps, size_t n, size_t skip,
                              struct analyse_benchmark *ret);

/* ===== Section E: MindSpore's AI CPU tables (aicpu.c) ===== */

/* One AI CPU task: a span the MindSpore importer sends per row of aicpu_intermediate_<r>.csv (or
 * output_data_preprocess_aicpu_<r>.txt): name = the op's name ("GetNext-op6"), total = its
 * total_time (the span's dur), dispatch and exec = args.dispatch_time_us and
 * args.execution_time_us. name is borrowed. */
struct analyse_aicpu_task {
    const char *name;
    size_t name_len;
    int64_t total_ns;
    int64_t dispatch_ns;
    int64_t exec_ns;     /* -1 when the span has none (then the op's exec mean is of those that do) */
};

/* MindInsight's AICPU detail table (AicpuDetailAnalyser), one row per op name. */
struct analyse_aicpu_op {
    const char *name;    /* NUL-terminated, owned by the table */
    size_t type_len;     /* its kernel_type: name up to the first '-' (MindInsight's split('-')[0]) */
    int64_t calls;       /* execution_frequency */
    int64_t total_ns;    /* sum of total_time */
    int64_t dispatch_ns; /* sum of dispatch_time */
    int64_t exec_ns;     /* sum of execution_time over the exec_calls tasks that have one */
    int64_t exec_calls;
};

/* MindInsight's AICPU type table (AicpuTypeAnalyser), one row per kernel_type. */
struct analyse_aicpu_type {
    const char *type;    /* not NUL-terminated: type_len bytes of an op's name */
    size_t type_len;
    int64_t calls;       /* execution_frequency */
    int64_t total_ns;    /* total_time */
    double percent;      /* total_ns / the table's total * 100 */
};

struct analyse_aicpu {
    size_t n_ops;
    struct analyse_aicpu_op *ops;     /* by mean total_time desc, then name (MindInsight's
                                         detail order, avg_execution_time desc) */
    size_t n_types;
    struct analyse_aicpu_type *types; /* by total desc, then type (MindInsight's type order) */
    int64_t tasks;
    int64_t total_ns;                 /* sum of every task's total_time */
    char *names;                      /* owned text of the ops' names */
};

/* Groups tasks[0, n) by name and by type. O(n log n). Returns 0 and sets *ret (free with
 * analyse_aicpu_free()), -ENOMEM, or -EINVAL on NULL arguments. Pure. */
int analyse_aicpu_compute(const struct analyse_aicpu_task *tasks, size_t n,
                          struct analyse_aicpu **ret);

void analyse_aicpu_free(struct analyse_aicpu *a); /* NULL-safe */

#endif
