/* SPDX-License-Identifier: MIT */
/*
 * analyse_queues.h: data queues and the dataset pipeline (queues.c): MindInsight's queue
 * statistics, verdict and pipeline bottleneck rules.
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_QUEUES_H
#define STEPSCOPE_ANALYSE_QUEUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
