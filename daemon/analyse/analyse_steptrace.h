/* SPDX-License-Identifier: MIT */
/*
 * analyse_steptrace.h: MindInsight's step trace (steptrace.c): step points and stages, the
 * reduce lines, averages, and the FP/BP points derived from spans.
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_STEPTRACE_H
#define STEPSCOPE_ANALYSE_STEPTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_roles.h"

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

/* The roles analyse_steptrace_points() takes for operators (ANALYSE_ROLE_BIT()s), and every role
 * it reads: those, the data fetch's and the step span's. A caller that keeps a step's spans for
 * it (daemon/live) keeps the spans of ANALYSE_ST_ROLES. */
#define ANALYSE_ST_ROLES_OPERATOR                                                                   \
    (ANALYSE_ROLE_BIT(ANALYSE_ROLE_HOST_OP) | ANALYSE_ROLE_BIT(ANALYSE_ROLE_KERNEL) |              \
     ANALYSE_ROLE_BIT(ANALYSE_ROLE_FORWARD) | ANALYSE_ROLE_BIT(ANALYSE_ROLE_BACKWARD) |             \
     ANALYSE_ROLE_BIT(ANALYSE_ROLE_OPTIMIZER) | ANALYSE_ROLE_BIT(ANALYSE_ROLE_COMMUNICATION) |      \
     ANALYSE_ROLE_BIT(ANALYSE_ROLE_OTHER))
#define ANALYSE_ST_ROLES                                                                            \
    (ANALYSE_ST_ROLES_OPERATOR | ANALYSE_ROLE_BIT(ANALYSE_ROLE_DATALOADER) |                       \
     ANALYSE_ROLE_BIT(ANALYSE_ROLE_STEP))

/* Derives the points of one step from its spans in execution order, for frameworks without
 * Ascend step points. Operators are spans of a role in ANALYSE_ST_ROLES_OPERATOR (HOST_OP,
 * KERNEL, FORWARD, BACKWARD, OPTIMIZER, COMMUNICATION, OTHER) minus data fetches. The data fetch
 * is the first span of role DATALOADER or whose name contains "GetNext" or "DataLoader"; a
 * communication op has role COMMUNICATION or a name containing "AllReduce", "allreduce",
 * "all_reduce", "nccl" or "hcom".
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

#endif
