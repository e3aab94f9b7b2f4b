/* SPDX-License-Identifier: MIT */
/*
 * analyse_helper.h: the helper's suggestions (helper.c), a rule table over evidence the
 * caller gathers from the other analyses (breakdown, queues, ranks, step trace).
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_HELPER_H
#define STEPSCOPE_ANALYSE_HELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_breakdown.h"
#include "analyse_cluster.h"
#include "analyse_comm.h"
#include "analyse_queues.h"
#include "analyse_ranks.h"

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

/* One rank of a cluster job for MindInsight's cluster proposals (mindinsight.md §4.3): its
 * average figures (the cluster step trace's average rows), ns, and its flops_summary; NaN where
 * the rank lacks the file that gives the figure. */
struct analyse_helper_cl_rank {
    int64_t rank, stage;
    double interval_ns;
    double computation_ns;  /* data-parallel: FP+BP */
    double comm_alone_ns;   /* data-parallel: the tail */
    double receive_alone_ns, collective_ns; /* pipeline-parallel */
    double flops_m, flops_per_second_g;
    bool has_links; /* its hccl_raw has MindSpore's average row (cluster_link's input) */
};

struct analyse_helper_cluster {
    enum analyse_cl_mode mode;
    int64_t stages;
    const struct analyse_helper_cl_rank *ranks;
    size_t n;
    /* The links of the ranks' hccl_raw average rows (analyse_comm.h; bandwidth bytes/s), each
     * rank's in its file's order; ranks[] gives the order of the ranks (MindInsight's: rank id
     * ascending). A link whose rank is not in ranks[] is not read. */
    const struct analyse_comm_link *links;
    size_t n_links;
};

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
    /* A MindSpore cluster job (a rank's hello has a parallel layout or a FLOPs summary): its
     * ranks for the cluster proposals, which then replace rank_step_interval_high; NULL for
     * every other job. */
    const struct analyse_helper_cluster *cluster;
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
                             "ranks", "timeline", "kernels", "cluster", "cluster-links"
                             (never "overview", where the suggestions are shown) */
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

#endif
