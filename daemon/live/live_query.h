/* SPDX-License-Identifier: MIT */
/*
 * live_query: the reader's side of daemon/live, for daemon/web/ (HTTP threads). A snapshot is an
 * immutable copy of one job's live aggregates that the loop published (live.h); a reader takes
 * a reference, computes its answer from the snapshot alone with the pure analyses of
 * daemon/analyse, and drops the reference. Nothing here touches loop state or blocks on ingest.
 *
 * Threading: any thread, concurrently.
 */
#ifndef STEPSCOPE_LIVE_QUERY_H
#define STEPSCOPE_LIVE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../analyse/analyse_breakdown.h"
#include "../analyse/analyse_clock.h"
#include "../analyse/analyse_gpu.h"
#include "../analyse/analyse_ops.h"
#include "../analyse/analyse_queues.h"
#include "../analyse/analyse_ranks.h"
#include "../analyse/analyse_roles.h"
#include "../analyse/analyse_steptrace.h"
#include "../core/record.h"

#define LIVE_ROWS_MAX 100000 /* rows of one steps or operators page at most */

struct live;
struct live_snapshot;

/* Takes a reference to job_id's latest snapshot. Returns 0 and sets *ret_snap (release it with
 * live_snapshot_put()), -ENOENT if nothing of that job was published yet, -EINVAL for NULL lv. */
int live_snapshot_get(struct live *lv, int64_t job_id, const struct live_snapshot **ret_snap);

/* Before a request about job_id: marks the job used (evicted last), and if it was evicted from
 * memory (live.h, live_evict()) reloads it through the reload hook, waiting for it; concurrent
 * callers for one job share one reload. Returns 0 (in memory, or never had live state: a
 * live_snapshot_get() then answers), or the hook's negative errno (-ETIMEDOUT: the reload did
 * not start in time; -ESHUTDOWN; -ENOMEM; -EIO). Any thread; NULL lv: 0. */
int live_ensure(struct live *lv, int64_t job_id);

/* Whether job_id was refused live analysis because max_jobs (live.h) were tracked when its
 * first record came: it has no snapshot, and its records are stored, not analysed live, until
 * a restart finds room. Any thread; NULL lv: false. */
bool live_is_untracked(struct live *lv, int64_t job_id);

/* The jobs whose snapshot was published after *cursor (0 at first, then the value this call
 * left): writes their ids to *ids (an array of *cap ids that the caller owns and frees, NULL
 * and 0 at first; grown with realloc() as needed, so every change is reported however many
 * jobs there are), sets *ret_n to their number and *cursor to the latest publication. Returns 0,
 * or -ENOMEM with *cursor unchanged (the next call reports them). Cheap: one mutex, one pass
 * over the published jobs. NULL lv: 0 with *ret_n = 0. (It used to take a fixed array of
 * LIVE_JOBS_MAX and drop the changes past it.) */
int live_query_changed(struct live *lv, uint64_t *cursor, int64_t **ids, size_t *cap,
                       size_t *ret_n);

/* The number of steps live_query_steps() lists for job_id's rank (rank < 0: for the rank with
 * the most), as last published; for a job evicted from memory (rank < 0 only), the count its
 * last snapshot had. -1 when live knows none: nothing of the job published, no such rank, or a
 * job marked evicted at start-up before it was ever in memory. Does not reload an evicted job.
 * Cheap: the snapshot mutex and one pass over the published jobs. Any thread; NULL lv: -1. */
int64_t live_query_step_count(struct live *lv, int64_t job_id, int64_t rank);

/* The steps live_query_steps() lists for each rank of job_id, as last published: up to cap
 * (rank, steps) pairs in ret_ranks/ret_steps, by rank; returns their number (0: nothing
 * published, or evicted). Cheap: the snapshot mutex and one pass. Any thread; NULL lv: 0. */
size_t live_query_rank_step_counts(struct live *lv, int64_t job_id, int64_t *ret_ranks,
                                   int64_t *ret_steps, size_t cap);

/* Drops a reference; the last one frees the snapshot. NULL-safe. */
void live_snapshot_put(const struct live_snapshot *snap);

/* What the caps cut, over every rank of the snapshot (live.h lists the caps). */
struct live_counters {
    int64_t spans;          /* X spans taken */
    int64_t ops_folded;     /* spans whose (name, cat) came after LIVE_OPS_MAX: in "Other" */
    int64_t threads_shared; /* spans on threads past LIVE_THREADS_MAX */
    int64_t stack_dropped;  /* spans folded without torch's parent: a batch's spans that sort
                               before what their thread still keeps (ANALYSE_SELF_KEEP), and
                               open spans past its bound (their parent keeps their time) */
    int64_t steps_dropped;  /* oldest steps dropped past LIVE_STEPS_MAX */
    int64_t step_spans_dropped; /* spans not kept for a step past LIVE_STEP_SPANS_MAX */
    int64_t step_comm_dropped;  /* communication ops not kept for a step past LIVE_STEP_COMM_MAX */
    int64_t unassigned;     /* spans no step covered when they left the pending list */
    int64_t late_spans;     /* spans of a step already settled (LIVE_RANK_SPANS_MAX) */
    int64_t dropped;        /* records not taken for lack of memory */
    int64_t queues_dropped; /* queue samples of names past LIVE_QUEUES_MAX, not kept */
    int64_t queue_samples_dropped; /* oldest queue samples dropped past LIVE_QUEUE_SAMPLES_MAX */
    int64_t pipelines_bad;  /* pipeline records not read (shape, or past LIVE_PIPE_*_MAX) */
};

void live_snapshot_counters(const struct live_snapshot *snap, struct live_counters *ret);

/* The snapshot's publication number: unique for the life of the live instance and rising, so two
 * snapshots of a job with the same serial are the same snapshot (daemon/web/ caches answers by it). */
uint64_t live_snapshot_serial(const struct live_snapshot *snap);

/* Where a step's FP/BP points came from. */
enum live_points_source {
    LIVE_POINTS_NONE,   /* no spans in the step and no phases */
    LIVE_POINTS_TRACE,  /* analyse_steptrace_points() over the step's spans */
    LIVE_POINTS_PHASES, /* the step record's phases: dataloader, forward, backward */
};

/* "none", "trace", "phases". */
extern const char *const live_points_source_names[3];

/* One step of one rank, with its stages. */
struct live_step_row {
    int64_t step;
    int64_t rank;
    int64_t start_ns;     /* the step's begin */
    int64_t end_ns;
    int64_t total_ns;     /* end - begin */
    int64_t samples;      /* -1 if unknown */
    bool from_record;     /* a step record; false: a step span */
    int64_t spans;        /* spans (X events) of the rank that start inside the step, as live
                             assigned them: 0 means the step's timeline window is empty */
    enum live_points_source source;
    int64_t interval_ns;  /* fp - begin; only when source != NONE */
    int64_t fp_bp_ns;     /* bp - fp */
    int64_t tail_ns;      /* end - bp */
    const char *fp_name;  /* TRACE: the FP operator (borrowed from the snapshot), else "" */
    const char *bp_name;
    enum analyse_st_origin fp_origin; /* TRACE only */
    enum analyse_st_origin bp_origin;
};

/* The steps of rank (rank < 0: every rank) ordered by (step, rank), only those with spans > 0
 * when with_spans, rows [offset, offset + limit) of them (limit 0: up to LIVE_ROWS_MAX;
 * SIZE_MAX: all). Sets *ret_rows (caller frees with free(); its names borrow from snap, so keep
 * the reference while using them), *ret_n and *ret_total (rows before paging). Returns 0 or
 * -ENOMEM. */
int live_query_steps(const struct live_snapshot *snap, int64_t rank, bool with_spans,
                     size_t offset, size_t limit, struct live_step_row **ret_rows, size_t *ret_n,
                     size_t *ret_total);

/* The last (most recently listed) up to max steps of rank, as live_query_steps() lists them
 * (step records, else step spans), as the clocks' input: rank, step, begin and end into ret[0..].
 * Returns how many were written; 0 for a rank the snapshot does not have. Copies nothing else:
 * cheap enough for every request of a job of many ranks and steps. */
size_t live_query_clock_steps(const struct live_snapshot *snap, int64_t rank, size_t max,
                              struct analyse_clock_step *ret);

/* The window of step `step` of rank as live_query_steps() lists it: the earliest begin and the
 * latest end of the rank's rows of that step into *ret_begin and *ret_end. Returns false (and
 * sets nothing) when the rank or the step is not in the snapshot. A scan of the rank's steps,
 * nothing copied: the timeline's step windows. */
bool live_query_step_window(const struct live_snapshot *snap, int64_t rank, int64_t step,
                            int64_t *ret_begin, int64_t *ret_end);

/* A step trace of one rank: the single step `step` when single is true, else the average over
 * the steps numbered in [first, last] (ANALYSE_ST_ALL_FIRST / _LAST for no bound) less the first
 * `skip` of them (MindInsight's average leaves out step 1: skip 1). Only steps with points count,
 * and of those only the steps whose points come from `source` unless it is LIVE_POINTS_NONE (any):
 * the two definitions (a step record's phases, or FP/BP points found in its spans) measure
 * different things, so an average can keep to one. ret_by_source (NULL, or an array indexed by
 * enum live_points_source) gets how many steps behind the numbers had each source.
 * The reduce lines are the steps' communication ops (LIVE_STEP_COMM_MAX per step), averaged by
 * (stream, name) as analyse does. Sets *ret_trace (free with analyse_steptrace_free(); names
 * borrowed from snap) and *ret_points: the points of the last step behind the numbers (names
 * borrowed from snap). Returns 0, -ENOENT (no such rank, or no step with points in range),
 * -ENOMEM. */
int live_query_steptrace(const struct live_snapshot *snap, int64_t rank, bool single, int64_t step,
                         int64_t first, int64_t last, size_t skip, enum live_points_source source,
                         struct analyse_st_trace **ret_trace, struct live_step_row *ret_points,
                         size_t *ret_by_source);

/* The operator table of rank (rank < 0: every rank merged), host spans only
 * (ANALYSE_ROLES_HOST, as torch's key_averages() counts them): the rank's aggregates grouped by
 * analyse_ops_from_parts(), then filtered, sorted, folded and paged by analyse_ops_query(q).
 * Sets *ret_page (free with analyse_op_table_free()). Returns 0, -ENOENT (no such rank),
 * -ENOMEM. */
int live_query_ops(const struct live_snapshot *snap, int64_t rank, enum analyse_op_group group,
                   const struct analyse_op_query *q, struct analyse_op_table **ret_page);

/* The kernel table of rank (rank < 0: every rank merged): the spans whose role is
 * ANALYSE_ROLE_KERNEL, grouped by name or by type (analyse_ops_from_parts()'s rules: a MindSpore
 * full name "Default/.../MatMul-op9" is of type "MatMul"); self equals total for kernels, so
 * percent is the share of kernel time. Filtered, sorted, folded and paged by
 * analyse_ops_query(q). Sets *ret_page (free with analyse_op_table_free()). Returns 0, -ENOENT
 * (no such rank), -ENOMEM. */
int live_query_kernels(const struct live_snapshot *snap, int64_t rank, enum analyse_op_group group,
                       const struct analyse_op_query *q, struct analyse_op_table **ret_page);

/* Whether rank (rank < 0: any rank) has at least one span of a host role (ANALYSE_ROLES_HOST)
 * in its operator aggregates. False for an unknown rank. */
bool live_has_host_ops(const struct live_snapshot *snap, int64_t rank);

/* Which side of the input pipeline a queue is, by its name (exact, ASCII case ignored), in
 * MindInsight's terms (analyse_queues.h):
 *   host:   "device_queue" (MindInsight's name for the host-side connector that feeds the
 *           device), "host_queue", "host", "dataloader"
 *   device: "get_next" (the queue GetNext reads on the device), "device"
 *   other:  any other name (listed, but not part of the verdict). */
enum live_queue_role {
    LIVE_QUEUE_OTHER,
    LIVE_QUEUE_HOST,
    LIVE_QUEUE_DEVICE,
};

/* "other", "host", "device". */
extern const char *const live_queue_role_names[3];

enum live_queue_role live_queue_role_of(const char *name);

/* One queue of one rank: its samples sorted by step (stably, so equal steps keep arrival
 * order) and their statistics. */
struct live_queue_row {
    int64_t rank;
    const char *name;                   /* NUL-terminated, borrowed from the snapshot */
    enum live_queue_role role;
    int64_t capacity;                   /* of the latest sample; -1 if unknown */
    struct analyse_queue_stats stats;
    size_t n_samples;
    struct analyse_queue_sample *samples; /* [n_samples], owned by the row set */
};

/* The queues of rank (rank < 0: every rank), ordered by rank and then by first appearance.
 * Sets *ret_rows (free with live_queue_rows_free(); names borrow from snap, so keep the
 * reference while using them) and *ret_n. Returns 0, -ENOENT (rank >= 0 and no such rank),
 * -ENOMEM. */
int live_query_queues(const struct live_snapshot *snap, int64_t rank,
                      struct live_queue_row **ret_rows, size_t *ret_n);

/* The latest pipeline topology of one rank, borrowed from the snapshot. */
struct live_pipeline_view {
    int64_t rank;
    size_t n_ops;
    const struct record_pipe_op *ops;
    const int64_t *children;
    const double *values;        /* the series' kept numbers */
    bool has_cpu;                /* the record has a "cpu" object */
    double cpu_interval_ms;      /* its sampling_interval_ms, -1 if absent */
    int64_t processors;          /* its processors, -1 if absent */
    struct record_series cpu[RECORD_CPU_SERIES]; /* by record_cpu_series_names */
};

/* The latest pipeline record of rank (rank < 0: the lowest rank that sent one). Fills *ret
 * (borrowing from snap). Returns 0 or -ENOENT (no pipeline record there). */
int live_query_pipeline(const struct live_snapshot *snap, int64_t rank,
                        struct live_pipeline_view *ret);

/* Frees rows from live_query_queues(); NULL-safe. */
void live_queue_rows_free(struct live_queue_row *rows, size_t n);

/* The mean CPU figures of the host records ({"type":"host"}) of rank (rank < 0: every rank's
 * records together). A mean is NaN when no record carried that figure. */
struct live_host_row {
    int64_t n_cpu;      /* records with cpu_percent */
    double cpu_pct;     /* mean cpu_percent: the process, percent of one core */
    int64_t n_sys_cpu;  /* records with sys_cpu_percent */
    double sys_cpu_pct; /* mean sys_cpu_percent: the whole system, percent */
};

/* Fills *ret. Returns 0 or -ENOENT (rank >= 0 and no such rank). */
int live_query_host(const struct live_snapshot *snap, int64_t rank, struct live_host_row *ret);

/* Per-rank step statistics and stragglers (analyse_ranks_compute()) of every rank of the
 * snapshot, in rank order, over the steps live_query_steps() lists. The step time is every
 * step's total; interval, FP+BP and tail are given for a rank only when every one of its steps
 * has FP/BP points (else their statistics have count 0). Sets *ret_ranks (free with
 * analyse_ranks_free()). Returns 0, -EINVAL (bad straggler_ratio), -ENOMEM. */
int live_query_ranks(const struct live_snapshot *snap, double straggler_ratio,
                     struct analyse_ranks **ret_ranks);

/* live_query_ranks() over the steps numbered max_step or lower only (the cluster view's step
 * window: a step counts once every node shipped past it, docs/ANALYSIS.md). */
int live_query_ranks_upto(const struct live_snapshot *snap, double straggler_ratio,
                          int64_t max_step, struct analyse_ranks **ret_ranks);

/* The largest step number live_query_steps() lists for each rank of the snapshot (-1: none), up
 * to cap (rank, last step) pairs in ret_ranks/ret_last, by rank. Returns their number. */
size_t live_query_last_steps(const struct live_snapshot *snap, int64_t *ret_ranks,
                             int64_t *ret_last, size_t cap);

/* The step-time breakdown of one rank (analyse_breakdown_compute(), torch-tb-profiler's
 * overview) over the spans live keeps for it (live.h, LIVE_BD_SPANS_MAX, more for an imported
 * job: live_config.bd_import_bytes): step, kernel, memcpy,
 * memset, runtime, dataloader, communication and host-operator spans with their correlation and
 * External id links. */
/* The steps of a rank, one definition for every analysis that finds steps in step spans (the
 * breakdown, HTA's last-step cut of the GPU views, a ranged diff): its step spans; a rank whose
 * spans v[0..*n) hold no step span (ANALYSE_ROLE_STEP) and that sent step records (attach()) has
 * its captured steps instead: one step span per step record that holds spans (live_step_row.spans
 * > 0, the steps /steps lists with spans), over the record's bounds, named "ProfilerStep#N" as
 * analyse_sum_step_number() reads it, pid and tid -1, appended to *v (realloc() to exactly *n);
 * records starting at or before after_ns left out (INT64_MIN: none). rs holds the appended
 * spans' names and their number (rs->n 0: v holds a step span, the rank is unknown or has no
 * captured step). */
struct live_record_steps {
    size_t n;          /* the spans appended */
    char (*names)[32]; /* their names, [n] */
};

/* Returns 0 or -ENOMEM (*v and *n as they were); free rs with live_record_steps_done() either
 * way. rank < 0: the lowest of snap. */
int live_query_rank_steps(const struct live_snapshot *snap, int64_t rank, int64_t after_ns,
                          struct analyse_span **v, size_t *n, struct live_record_steps *rs);
void live_record_steps_done(struct live_record_steps *rs);

struct live_breakdown_view {
    int64_t rank;
    const struct analyse_breakdown *bd; /* valid until live_breakdown_view_done() */
    int64_t n_spans;    /* spans the rank gave the breakdown since the start (or the replay) */
    int64_t n_evicted;  /* the oldest of them, dropped past max_spans */
    int64_t horizon_ns; /* steps starting at or before this are left out; INT64_MIN: none */
    size_t max_spans;   /* the rank's cap on kept spans */
    int64_t steps_listed; /* the rank's steps as live_query_steps() lists them */
    int64_t steps_cut;  /* of those, the ones starting at or before horizon_ns: left out */
    bool stale;         /* computed from fewer spans than the snapshot's (max_age_ns > 0 took a
                         * recent result): an answer built on it must not be kept for the
                         * snapshot, which may never be followed by another */
    struct live_bd_result *res; /* the reference behind bd */
};

#define LIVE_BD_STALE_NS INT64_C(5000000000) /* a reader accepting a recent breakdown takes one this old */

/* The breakdown of rank (rank < 0: the lowest rank). A rank's breakdown is computed once per
 * change of its spans and shared by every snapshot and reader. With max_age_ns 0 the result is
 * exactly that of snap's spans (computed now if nobody has; a concurrent reader computing the
 * same is waited for). With max_age_ns > 0 a result computed from the rank's spans at most
 * max_age_ns ago (of this snapshot or another) is good enough, and so is the latest one while
 * another thread computes a newer one: such a reader computes only when there is no recent
 * result and nobody computing, so readers like the helper almost never wait. Fills *ret; release
 * it with live_breakdown_view_done(). Returns 0, -ENOENT (no such rank), -ENOMEM. */
int live_query_breakdown(const struct live_snapshot *snap, int64_t rank, int64_t max_age_ns,
                         struct live_breakdown_view *ret);

/* Drops the view's reference (NULL-safe fields; the view may be one never filled). */
void live_breakdown_view_done(struct live_breakdown_view *v);

/* HTA's GPU views of one rank (analyse_gpu.h) over the same spans as the breakdown. */
struct live_gpu_row {
    int64_t rank;
    struct analyse_gpu_temporal temporal; /* live_query_gpu_temporal() */
    struct analyse_gpu_ktypes ktypes;     /* live_query_gpu_kernel_types() */
    int64_t n_spans;   /* spans the rank kept since the start (or the replay) */
    int64_t n_evicted; /* the oldest of them, dropped past the rank's cap */
};

/* The temporal breakdown of rank (rank < 0: every rank, by rank) as HTA computes it with opts
 * (analyse_gpu_temporal()).
 * Computed per call from the snapshot's spans (an HTTP answer is cached by snapshot). Sets
 * *ret_rows (free()) and *ret_n. Returns 0, -ENOENT (rank >= 0 and no such rank), -ENOMEM. */
int live_query_gpu_temporal(const struct live_snapshot *snap, int64_t rank,
                            const struct analyse_gpu_opts *opts,
                            struct live_gpu_row **ret_rows, size_t *ret_n);
/* HTA's kernel launch statistics of rank (rank < 0: every rank): one row per launch
 * (analyse_gpu_launches()), ranks in order. Names borrow from snap. Sets *ret_rows (free()) and
 * *ret_n. Returns 0, -ENOENT (rank >= 0 and no such rank), -ENOMEM. */
struct live_gpu_launch_row {
    int64_t rank;
    struct analyse_gpu_launch l;
};
int live_query_gpu_launches(const struct live_snapshot *snap, int64_t rank,
                            const struct analyse_gpu_opts *opts, int64_t runtime_cutoff_ns,
                            int64_t delay_cutoff_ns, struct live_gpu_launch_row **ret_rows,
                            size_t *ret_n);
/* The same for HTA's kernel-type split (analyse_gpu_kernel_types()). */
int live_query_gpu_kernel_types(const struct live_snapshot *snap, int64_t rank,
                                const struct analyse_gpu_opts *opts,
                                struct live_gpu_row **ret_rows, size_t *ret_n);

/* HTA's per-kernel table (analyse_gpu_kernel_metrics()) of rank (rank < 0: every rank, by
 * rank): rows[i].m.name borrows from snap. Sets *ret_rows (free()) and *ret_n. Returns 0,
 * -ENOENT (rank >= 0 and no such rank), -ENOMEM. */
struct live_gpu_kmetric_row {
    int64_t rank;
    struct analyse_gpu_kmetric m;
};
int live_query_gpu_kernel_metrics(const struct live_snapshot *snap, int64_t rank,
                                  const struct analyse_gpu_opts *opts, size_t num_kernels,
                                  double duration_ratio, struct live_gpu_kmetric_row **ret_rows,
                                  size_t *ret_n);

/* HTA's per-stream views of one rank (analyse_gpu_idle(), analyse_gpu_queues()) over the same
 * spans as the breakdown. */
struct live_gpu_stream_rank {
    int64_t rank;
    int64_t n_spans;         /* as live_gpu_row */
    int64_t n_evicted;
    int64_t n_stream_folded; /* device events on a stream past the rank's table, left out */
    struct analyse_gpu_filter filter;
    struct analyse_gpu_idle *idle;   /* [n_idle], by stream: live_query_gpu_idle() */
    size_t n_idle;
    struct analyse_gpu_queues queues; /* live_query_gpu_queue() */
};

/* HTA's idle time breakdown per stream of rank (rank < 0: every rank, by rank), with
 * consecutive_ns as HTA's consecutive_kernel_delay. Computed per call from the snapshot's spans
 * (an HTTP answer is cached by snapshot). Sets *ret_rows (live_gpu_stream_ranks_free()) and
 * *ret_n. Returns 0, -ENOENT (rank >= 0 and no such rank), -ENOMEM. */
int live_query_gpu_idle(const struct live_snapshot *snap, int64_t rank,
                        const struct analyse_gpu_opts *opts, int64_t consecutive_ns,
                        struct live_gpu_stream_rank **ret_rows, size_t *ret_n);
/* The same for HTA's CUDA launch queues (analyse_gpu_queues() with max_queue, max_points). */
int live_query_gpu_queue(const struct live_snapshot *snap, int64_t rank,
                         const struct analyse_gpu_opts *opts, int64_t max_queue, size_t max_points,
                         struct live_gpu_stream_rank **ret_rows, size_t *ret_n);
void live_gpu_stream_ranks_free(struct live_gpu_stream_rank *rows, size_t n);

#endif
