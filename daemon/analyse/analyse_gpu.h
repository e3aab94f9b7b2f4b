/* SPDX-License-Identifier: MIT */
/*
 * analyse_gpu.h: GPU time as Holistic Trace Analysis (HTA 0.5.0) computes it (gpu.c): its kernel
 * types, the device events it keeps, and its temporal breakdown. Definitions and where we differ
 * are in docs/ANALYSIS.md "GPU time (HTA)".
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller; times are int64 ns. Formulas follow the peers; deliberate differences are
 * written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_GPU_H
#define STEPSCOPE_ANALYSE_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_roles.h"

/* HTA's kernel types (hta/utils/utils.py get_kernel_type()), tried in this order:
 * communication: the name starts with "nccl" and has "Kernel" after it;
 * memory: it starts with "Memcpy", "Memset" or "dma";
 * computation: none of the above, and it neither holds "Memcpy" nor "Sync";
 * other: the rest (a name holding "Sync", ...). */
enum analyse_gpu_ktype {
    ANALYSE_GPU_COMPUTATION,
    ANALYSE_GPU_COMMUNICATION,
    ANALYSE_GPU_MEMORY,
    ANALYSE_GPU_OTHER,
    ANALYSE_GPU_KTYPE_COUNT,
};

/* "computation", "communication", "memory", "other". */
extern const char *const analyse_gpu_ktype_names[ANALYSE_GPU_KTYPE_COUNT];

/* The HTA type of a device event named name[0, len). */
enum analyse_gpu_ktype analyse_gpu_kernel_type(const char *name, size_t len);

/* Which device events HTA keeps (hta/common/trace.py _filter_irrelevant_gpu_kernels()). A step
 * span is a STEP span, or a GPU_ANNOTATION one whose name starts with "ProfilerStep#" (HTA reads
 * every event whose name holds "ProfilerStep"). When the spans hold at least two distinct step
 * names, the cut is the latest step start (include_last_step: the latest step end), and a device
 * event (KERNEL, MEMCPY, MEMSET) is kept only if some host span with its correlation (>= 0)
 * starts before the cut (include_last_step: at or before it); a device event without a
 * correlation is kept if it starts so. With fewer step names every device event is kept. */
struct analyse_gpu_filter {
    bool filtered;      /* at least two step names: the cut applies */
    size_t n_step_names; /* distinct step names */
    int64_t cut_ns;     /* the cut, when filtered */
    size_t n_device;    /* device events in the spans */
    size_t n_kept;      /* of which kept */
};

/* How HTA reads the spans. */
struct analyse_gpu_opts {
    bool include_last_step; /* HTA's include_last_profiler_step (default false) */
    bool round_us;          /* HTA's reading of a nanosecond trace: every span's start rounded up
                               and its end down to whole microseconds (its duration may then be
                               negative); false keeps nanoseconds */
    bool include_memory;    /* kernel types: HTA's include_memory_kernels (TraceAnalysis: true) */
};

/* HTA's temporal breakdown (hta/analyzers/breakdown_analysis.py get_temporal_breakdown()) of the
 * kept device events: kernel_ns = the last end - the first start; idle_ns = kernel_ns - busy,
 * busy the length of the kept events merged as HTA merges them (by start; an event starting
 * after every earlier end opens a group, whose length is its latest end - its first start:
 * |union| when no duration is negative); compute_ns = the same of the kept COMPUTATION
 * events; non_compute_ns = kernel_ns - compute_ns - idle_ns. All zero without a kept event. */
struct analyse_gpu_temporal {
    struct analyse_gpu_filter filter;
    int64_t start_ns, end_ns; /* the first kept event's start, the last one's end */
    int64_t kernel_ns, idle_ns, compute_ns, non_compute_ns;
};

/* Computes the temporal breakdown of classified spans (analyse_classify(); a span's pid is
 * irrelevant: all device events of the spans count together, as HTA counts a rank). Returns 0
 * and fills *ret, or -ENOMEM. */
int analyse_gpu_temporal(const struct analyse_span *spans, size_t n,
                         const struct analyse_gpu_opts *opts, struct analyse_gpu_temporal *ret);

/* HTA's kernel-type split (get_gpu_kernel_breakdown()'s kernel_type_df, one rank): the kept
 * computation, communication and (opts->include_memory) memory events,
 * each type merged as HTA merges kernels; then every instant some type runs goes to the set of
 * types running, a bit mask (1 computation, 2 communication, 4 memory), as HTA's sweep does. */
#define ANALYSE_GPU_MASKS 8
struct analyse_gpu_ktypes {
    struct analyse_gpu_filter filter;
    int64_t ns[ANALYSE_GPU_MASKS]; /* [mask]: the time exactly these types run; [0] unused */
    int64_t group_ns[3];           /* [bit]: the length of the type's merged groups (HTA's sum
                                      of end - ts over them: its union when no duration is
                                      negative) */
};

/* HTA's per-kernel table of get_gpu_kernel_breakdown() (its kernel_metrics_df, one rank): per
 * kernel type (COMPUTATION, COMMUNICATION, and MEMORY with opts->include_memory) the kept events
 * of that type grouped by name: the sum, max, min, mean and sample standard deviation (0 for one
 * call) of their durations in µs, by sum descending. Past num_kernels names, HTA folds into one
 * row "others" (name NULL) every name at or past the num_kernels-th and every name whose running
 * sum passes the duration_ratio quantile (pandas' linear) of the running sums (but a name whose
 * durations sum below 0, which HTA's rounding can make, is never folded: HTA's "keep" mask
 * without an allow-list is sum < 0); it then
 * re-aggregates the table over the sums, so a kept row's max, min and mean are its sum and its
 * deviation 0, and the others row has the sum, max, min, mean and deviation of its names' sums. */
struct analyse_gpu_kmetric {
    enum analyse_gpu_ktype type;
    const char *name;        /* borrowed from the spans; NULL: HTA's "others" */
    size_t name_len;
    double sum_us, max_us, min_us, mean_us, std_us;
};

/* Sets *ret (free(); by type as above, then rows by sum descending, others last) and *ret_n.
 * Returns 0 or -ENOMEM. */
int analyse_gpu_kernel_metrics(const struct analyse_span *spans, size_t n,
                               const struct analyse_gpu_opts *opts, size_t num_kernels,
                               double duration_ratio, struct analyse_gpu_kmetric **ret,
                               size_t *ret_n);

/* HTA's communication-computation overlap (get_comm_comp_overlap()) of a rank is
 * ns[1 | 2] / group_ns[1] of its kernel types without memory: the time computation and
 * communication both run over the communication time. */

/* HTA's name of a mask: "COMPUTATION", "COMMUNICATION", "COMPUTATION overlapping
 * COMMUNICATION", "MEMORY", ... (types joined by " overlapping " in the order of the bits). Writes
 * at most size bytes NUL-terminated into buf; returns buf. */
const char *analyse_gpu_mask_name(unsigned mask, char *buf, size_t size);

/* Computes the split of classified spans. Returns 0 and fills *ret, or -ENOMEM. */
int analyse_gpu_kernel_types(const struct analyse_span *spans, size_t n,
                             const struct analyse_gpu_opts *opts, struct analyse_gpu_ktypes *ret);

/* HTA's CUDA kernel launch statistics (get_cuda_kernel_launch_stats()): one row per pair of a
 * launching host span and a kept device event with its correlation. The launching spans are
 * the host spans with a correlation that some span named cudaLaunchKernel or
 * cudaLaunchKernelExC has (opts->include_memory: also cudaMemcpyAsync, cudaMemsetAsync),
 * before the cut; delay_ns = max(0, the device event's start - the host span's end). Flags, HTA's
 * (its plots): short (the device event is shorter than its launch, and the launch takes at most
 * runtime_cutoff), runtime outlier (the launch takes more than runtime_cutoff), delay outlier
 * (delay_ns > delay_cutoff). HTA's cutoffs are 50 and 100 us. */
struct analyse_gpu_launch {
    int64_t correlation;
    int64_t cpu_ts_ns, cpu_dur_ns;
    int64_t gpu_ts_ns, gpu_dur_ns;
    int64_t delay_ns;
    const char *runtime, *kernel; /* borrowed from the spans */
    size_t runtime_len, kernel_len;
    bool is_short, runtime_outlier, delay_outlier;
};

/* Computes the launches of classified spans, by correlation (then device start). Sets *ret
 * (free()) and *ret_n. Returns 0 or -ENOMEM. */
int analyse_gpu_launches(const struct analyse_span *spans, size_t n,
                         const struct analyse_gpu_opts *opts, int64_t runtime_cutoff_ns,
                         int64_t delay_cutoff_ns, struct analyse_gpu_launch **ret, size_t *ret_n);

/* Descriptive statistics of a set of values, as pandas' describe() gives them: count, mean,
 * sample standard deviation (n - 1; NaN below two values), min, the 25, 50 and 75 % quantiles
 * (linear interpolation between the closest ranks) and max; all NaN but count without a value. */
struct analyse_gpu_stats {
    size_t count;
    double mean, std, min, q25, q50, q75, max;
};

/* Device events carry their CUDA stream in analyse_span.tid (Kineto's tid of a GPU event, its
 * args.stream); a device event with tid < 0 has no known stream and is left out of the per
 * stream views below, as HTA leaves out stream -1. */

/* HTA's idle-time categories (hta/utils/utils.py IdleTimeType). */
enum analyse_gpu_idle_cat {
    ANALYSE_GPU_IDLE_HOST_WAIT,
    ANALYSE_GPU_IDLE_KERNEL_WAIT,
    ANALYSE_GPU_IDLE_OTHER,
    ANALYSE_GPU_IDLE_COUNT,
};

/* "host_wait", "kernel_wait", "other". */
extern const char *const analyse_gpu_idle_names[ANALYSE_GPU_IDLE_COUNT];

/* HTA's idle time breakdown of one stream (get_idle_time_breakdown()): its kept device events
 * (KERNEL, MEMCPY, MEMSET, by start; HTA's kernel, gpu_memcpy and gpu_memset categories) each
 * after the first give the idle interval start - the previous one's end, filed as host wait when
 * the host span launching it (a host span with its correlation) started after that end, else as
 * kernel wait when the interval is below consecutive_ns, else as other. ns[c] sums category c's
 * intervals (negative ones too, as HTA); stats[c] describes them (opts: HTA's
 * show_idle_interval_stats). */
struct analyse_gpu_idle {
    int64_t stream;
    size_t n_events;                           /* kept device events on the stream */
    int64_t ns[ANALYSE_GPU_IDLE_COUNT];
    struct analyse_gpu_stats stats[ANALYSE_GPU_IDLE_COUNT]; /* of the intervals, in ns */
};

/* HTA's consecutive_kernel_delay default (TraceAnalysis.get_idle_time_breakdown()): 30, which
 * its docstring calls ns but compares with its trace's times, microseconds: 30 us. */
#define ANALYSE_GPU_CONSECUTIVE_NS 30000

/* Computes the idle breakdown of classified spans per stream, by stream. Sets *ret (free()),
 * *ret_n and *ret_filter. Returns 0 or -ENOMEM. */
int analyse_gpu_idle(const struct analyse_span *spans, size_t n, const struct analyse_gpu_opts *opts,
                     int64_t consecutive_ns, struct analyse_gpu_filter *ret_filter,
                     struct analyse_gpu_idle **ret, size_t *ret_n);

/* A point of a stream's launch queue length: from ts_ns on, len operations are outstanding. */
struct analyse_gpu_qpoint {
    int64_t ts_ns;
    int64_t len;
};

/* HTA's CUDA launch queue of one stream (get_queue_length_time_series(), get_queue_length_summary(),
 * get_time_spent_blocked_on_full_queue()): each kept device event on the stream whose correlation
 * some host span named as a launch (analyse_gpu_is_launch()) before the cut has adds 1 at each such
 * span's start and takes 1 at its own start; the points, by time (at one instant additions
 * first), are the running sum after each. stats describe the points' lengths (one per point, not
 * weighted by time, as HTA); full_ns sums the time from each point with len >= max_queue to the
 * next point (the last point counts nothing). points[0, n_kept) are the series downsampled to at
 * most max_points (analyse_gpu_queues()). */
struct analyse_gpu_queue {
    int64_t stream;
    size_t n_points;                  /* points of the whole series */
    struct analyse_gpu_stats stats;
    int64_t full_ns;
    struct analyse_gpu_qpoint *points; /* into analyse_gpu_queues.points */
    size_t n_kept;
};

/* HTA's CUDA_MAX_LAUNCH_QUEUE_PER_STREAM, its default for the time blocked on a full queue. */
#define ANALYSE_GPU_MAX_QUEUE 1024

struct analyse_gpu_queues {
    struct analyse_gpu_filter filter;
    int64_t trace_ns;  /* the latest start - the earliest among the spans kept (HTA's
                          get_trace_duration(), over the spans given) */
    struct analyse_gpu_queue *streams; /* by stream */
    size_t n_streams;
    struct analyse_gpu_qpoint *points; /* every stream's kept points */
};

/* Whether HTA counts the span as a launch onto a stream's queue (get_runtime_launch_events_query():
 * cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync and
 * their HIP and MTIA names). */
bool analyse_gpu_is_launch(const struct analyse_span *s);

/* Computes the queues of classified spans. A series of n points longer than max_points (>= 4)
 * is downsampled: its first and last points are kept and the n - 2 between are cut into
 * (max_points - 2) / 2 runs of consecutive points (run b: [1 + b(n - 2)/runs, 1 + (b + 1)(n - 2)/runs)),
 * of each the point with the least and the one with the most length kept (the first of each;
 * one when the same), in time order: the extremes survive, and at most max_points. Fills *ret
 * (free with analyse_gpu_queues_done()). Returns 0 or -ENOMEM. */
int analyse_gpu_queues(const struct analyse_span *spans, size_t n, const struct analyse_gpu_opts *opts,
                       int64_t max_queue, size_t max_points, struct analyse_gpu_queues *ret);
void analyse_gpu_queues_done(struct analyse_gpu_queues *q);

#endif
