/* SPDX-License-Identifier: MIT */
/*
 * render: documents built in an sbuf from store structs, live views and the counters (render.c;
 * the summaries' in summary.h). No libmicrohttpd. A table's _row() function appends one row in
 * fmt: a CSV line (the columns of its _csv_header) or a JSON object (as the JSON document lists
 * it).
 */
#ifndef STEPSCOPE_WEB_RENDER_H
#define STEPSCOPE_WEB_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../lib/sbuf.h"
#include "../analyse/analyse_helper.h"
#include "../core/stats.h"
#include "../live/live_query.h"
#include "../store/store_query.h"

/* The forms of an answer (?format=). A table's CSV is a header line, then one line per row; its
 * records are a bare JSON array of the row objects the JSON form lists (pandas.read_json()). */
enum web_format {
    WEB_FORMAT_JSON,
    WEB_FORMAT_CSV,
    WEB_FORMAT_TEXT,    /* laid out as paddle.profiler prints it */
    WEB_FORMAT_RECORDS, /* a JSON array of row objects */
};

/* The clocks of a job's hosts (clocks.c, web__clocks()): the ranks' hosts and, when there are
 * two or more, analyse_clock's table of them. */
struct analyse_clock;
struct web_clocks {
    size_t n_ranks;
    size_t *rank_host;                   /* [n_ranks]: ranks[i]'s host, an index into names */
    size_t n_hosts;
    char (*names)[RECORD_NAME_MAX + 1];  /* [n_hosts], in the order of their first rank */
    struct analyse_clock *table;         /* hosts as names; NULL with fewer than two hosts */
};

/* Each appends one complete JSON document (or, for _job_fields, members) to b; b's cap and error
 * state (sbuf.h) say whether it fitted. Strings go through sbuf_json_str(), times through
 * sbuf_json_us() (ns in, us out). */
void web__render_error(struct sbuf *b, const char *code, const char *message);
/* {"status":"ok"} or "degraded" with "problems", one sentence each: while the store's commits fail
 * (stats->commit_failing), and while the data dir's file system is low (space->low; space NULL:
 * unknown, no store); then "version", "instance" and "socket" (the ingest socket's path). */
void web__render_health(struct sbuf *b, const char *version, const char *instance,
                        const char *socket, struct stats *s, const struct store_space *space);
/* The members of one job object, without braces. */
void web__render_job_fields(struct sbuf *b, const struct store_job *j);
void web__render_jobs(struct sbuf *b, const struct store_job *jobs, size_t n);
/* clocks (NULL: none known) adds each rank's clock_* members and the job's "clocks". */
void web__render_job(struct sbuf *b, const struct store_job *j, const struct store_rank *ranks,
                     size_t n_ranks, const struct web_clocks *clocks);
/* info NULL renders "store":null (no store attached). */
void web__render_stats(struct sbuf *b, struct stats *s, const struct store_info *info);

/* Appends s as one CSV text field (RFC 4180): as it is, or in double quotes with '"' doubled when
 * it holds a comma, a quote, CR or LF. A field beginning with '=', '+', '-', '@', TAB or CR (a
 * spreadsheet formula) gets a leading "'" (OWASP's CSV injection advice); numbers are never
 * written through here, so they stay numbers. */
void web__csv_str(struct sbuf *b, const char *s);

/* CSV and records forms of the jobs list and of one job's ranks_detail. */
void web__render_jobs_csv(struct sbuf *b, const struct store_job *jobs, size_t n);
void web__render_ranks_csv(struct sbuf *b, const struct store_rank *ranks, size_t n,
                           const struct web_clocks *clocks);
void web__render_jobs_records(struct sbuf *b, const struct store_job *jobs, size_t n);
void web__render_ranks_records(struct sbuf *b, const struct store_rank *ranks, size_t n,
                               const struct web_clocks *clocks);

/* The cluster step trace (routes_cluster.c) in fmt: JSON {"mode","stages","rank_size","step"
 * (N or "average"),"average_from" (null for a step; "mindspore" when ms_avg, else "steps"),
 * "last_step","ranks":[{"rank","stage","<figure>_us",...}]} with the figures mode shows (absent
 * ones null), CSV rank,stage,<figure>_us... or records (the rows). */
struct analyse_cl_rank;
void web__render_cluster_steptrace(struct sbuf *b, enum web_format fmt, const char *mode_name,
                                   int mode, int64_t stages, int64_t rank_size, int64_t step,
                                   int64_t last_step, bool ms_avg, bool device_comm,
                                   const struct analyse_cl_rank *rows, size_t n);

/* One rank of /cluster/flops or /cluster/memory (routes_cluster_summary.c): v[] the summary's
 * members as the hello gave them (flops_m, flops_per_second_g, flops_utilization; capacity_gb,
 * peak_gb, static_gb, allocations, deallocations) where has[]; bytes[] capacity, peak and static
 * in bytes (-1 absent); ratio FLOPs over the largest rank's, or peak over capacity (-1: none). */
struct web_cl_sum_row {
    int64_t rank;
    double v[5];
    bool has[5];
    int64_t bytes[3];
    double ratio;
};

/* JSON {"ranks":[...],"missing_ranks":[...]}, CSV or records (the rows): flops rank, flops_m,
 * flops_per_second_g, flops_utilization, flops_norm; memory rank, capacity_bytes, peak_bytes,
 * static_bytes, allocations, deallocations, peak_ratio. */
void web__render_cluster_summary(struct sbuf *b, enum web_format fmt, bool memory,
                                 const struct web_cl_sum_row *rows, size_t n,
                                 const int64_t *missing, size_t n_missing);

/* Live documents. */
extern const char web__steps_csv_header[];
void web__steps_row(struct sbuf *b, enum web_format fmt, const struct live_step_row *r);
void web__render_live_steps(struct sbuf *b, const struct live_step_row *rows, size_t n,
                            size_t total);
/* The step trace: stages, reduce lines, points; skip = steps left out before the average;
 * by_source = the steps behind the numbers by enum live_points_source ("sources"). */
void web__render_live_steptrace(struct sbuf *b, const struct analyse_st_trace *t,
                                const struct live_step_row *points, size_t skip,
                                const size_t *by_source);
extern const char web__ops_csv_header[];
extern const char web__kernels_csv_header[];
/* ops: an operator row (with type and self); else a kernel row. */
void web__op_row(struct sbuf *b, enum web_format fmt, const struct analyse_op_row *r, bool ops);
/* The operator table; group "name" or "type", side "host" or "device" (JSON only). */
void web__render_live_ops(struct sbuf *b, const struct analyse_op_table *page, const char *group,
                          const char *side);
/* The kernel table: name, calls, total_us, avg_us, min_us, max_us, percent (no self or type). */
void web__render_live_kernels(struct sbuf *b, const struct analyse_op_table *page);

#define WEB_QUEUE_POINTS_MAX 2000 /* points of one queue's JSON series at most */

/* The queues document: per rank the verdict over its host and device queues, and per queue its
 * statistics and series (at most WEB_QUEUE_POINTS_MAX points). The table (CSV, records) is one
 * row per sample of every queue (rank, queue, role, step, size, capacity), not downsampled. */
extern const char web__queues_csv_header[];
void web__queue_sample_row(struct sbuf *b, enum web_format fmt, const struct live_queue_row *q,
                           const struct analyse_queue_sample *s);
void web__render_live_queues(struct sbuf *b, const struct live_queue_row *rows, size_t n);

/* The latest pipeline topology of a rank and, when any op has queue figures (findings not NULL
 * or n_findings 0 with analysed true), MindInsight's bottleneck findings; the means of the ops'
 * queue sizes and CPU series, the op op_id's series themselves (INT64_MIN: none), and the
 * record's CPU series (docs/API.md). csv: one line per op (id, type, num_workers, parent,
 * children space-separated, queue_usage, queue_capacity, queue_avg_size, sample_interval_ms,
 * cpu_user_avg, cpu_sys_avg). */
void web__render_live_pipeline(struct sbuf *b, const struct live_pipeline_view *p, bool analysed,
                               const struct analyse_pipe_finding *findings, size_t n_findings,
                               int64_t op_id, enum web_format fmt);

/* Per-rank step statistics and stragglers: {"ranks":[...],"mean_us",...}; csv: one line per
 * rank. node and host (NULL: none), [ranks->n_ranks] by row: each row's cluster node and host,
 * added after "rank" in the JSON and records forms (a job over many nodes). */
void web__render_live_ranks(struct sbuf *b, const struct analyse_ranks *ranks,
                            enum web_format fmt, const char *const *node,
                            const char *const *host);

/* The helper's suggestions for rank with their evidence, and which evidence the daemon had
 * (in: what was given to analyse_helper_run()). */
void web__render_live_helper(struct sbuf *b, int64_t rank, const struct analyse_helper_input *in,
                             const struct live_breakdown_view *bv,
                             const struct analyse_helper_result *res);
/* HTA's temporal breakdown (/gpu/temporal): one row a rank, as a CSV line or a JSON object. */
extern const char web__gpu_temporal_csv_header[];
void web__gpu_temporal_row(struct sbuf *b, enum web_format fmt, const struct live_gpu_row *r);
/* The /gpu/temporal document: {"last_step", "rounding", "total", "rows": [...]}. */
void web__render_gpu_temporal(struct sbuf *b, const struct live_gpu_row *rows, size_t n,
                              const struct analyse_gpu_opts *opts);
/* HTA's kernel-type split (/gpu/kernel-types): one row per rank and set of types running. */
struct web_gpu_ktype_row {
    int64_t rank;
    unsigned mask;   /* analyse_gpu_ktypes bits */
    int64_t ns;      /* time exactly these types run */
    int64_t rank_ns; /* the rank's sum over masks (the percentage's whole) */
};
/* HTA's per-kernel table (/gpu/kernel-types?table=kernels): one row per rank, kernel type and
 * kernel kept (or "others"). */
extern const char web__gpu_kmetrics_csv_header[];
void web__gpu_kmetric_row(struct sbuf *b, enum web_format fmt, const struct live_gpu_kmetric_row *r);
/* Its document: the options, num_kernels, duration_ratio, "total", "rows". */
void web__render_gpu_kernel_metrics(struct sbuf *b, const struct live_gpu_kmetric_row *rows,
                                    size_t n, const struct analyse_gpu_opts *opts,
                                    int64_t num_kernels, double duration_ratio);
extern const char web__gpu_ktypes_csv_header[];
void web__gpu_ktype_row(struct sbuf *b, enum web_format fmt, const struct web_gpu_ktype_row *r);
/* The /gpu/kernel-types document: {"last_step", "rounding", "memory", "total", "rows": [...],
 * "all_ranks": [...]} (all_ranks: the masks summed over the ranks, as HTA's table). */
void web__render_gpu_kernel_types(struct sbuf *b, const struct web_gpu_ktype_row *rows, size_t n,
                                  const struct analyse_gpu_opts *opts);
/* HTA's communication-computation overlap (/gpu/overlap): one row a rank (its ktypes, computed
 * without memory). */
extern const char web__gpu_overlap_csv_header[];
void web__gpu_overlap_row(struct sbuf *b, enum web_format fmt, const struct live_gpu_row *r);
/* The /gpu/overlap document: {"last_step", "rounding", "total", "rows": [...]}. */
void web__render_gpu_overlap(struct sbuf *b, const struct live_gpu_row *rows, size_t n,
                             const struct analyse_gpu_opts *opts);
/* HTA's kernel launch statistics (/gpu/launches): one row a launch. */
extern const char web__gpu_launches_csv_header[];
void web__gpu_launch_row(struct sbuf *b, enum web_format fmt, const struct live_gpu_launch_row *r);
/* The /gpu/launches document: the options, "total", "summary" (per rank: launches and each
 * flag's count, over every row) and the rows [offset, offset + limit) (limit 0: all). */
void web__render_gpu_launches(struct sbuf *b, const struct live_gpu_launch_row *rows, size_t n,
                              const struct analyse_gpu_opts *opts, int64_t runtime_cutoff_ns,
                              int64_t delay_cutoff_ns, size_t offset, size_t limit);
/* HTA's idle time breakdown (/gpu/idle): a row per rank, stream and category. */
struct web_gpu_idle_row {
    int64_t rank;
    const struct analyse_gpu_idle *s; /* borrowed from the live_gpu_stream_rank rows */
    unsigned cat;                     /* enum analyse_gpu_idle_cat */
    int64_t stream_ns;                /* the stream's idle time, every category */
};
extern const char web__gpu_idle_csv_header[];
void web__gpu_idle_row(struct sbuf *b, enum web_format fmt, const struct web_gpu_idle_row *r);
/* The /gpu/idle document: the options, "ranks" (per rank: device events kept, on a known stream,
 * folded), "total" and "rows". */
void web__render_gpu_idle(struct sbuf *b, const struct live_gpu_stream_rank *ranks, size_t n_ranks,
                          const struct web_gpu_idle_row *rows, size_t n,
                          const struct analyse_gpu_opts *opts, int64_t consecutive_ns);
/* HTA's launch queues (/gpu/queue): a summary row per rank and stream, or a row per kept point
 * of its series (p set). */
struct web_gpu_queue_row {
    int64_t rank;
    int64_t trace_ns;
    const struct analyse_gpu_queue *q;  /* borrowed from the live_gpu_stream_rank rows */
    const struct analyse_gpu_qpoint *p; /* a series row's point, else NULL */
};
extern const char web__gpu_queue_csv_header[];
extern const char web__gpu_queue_series_csv_header[];
void web__gpu_queue_row(struct sbuf *b, enum web_format fmt, const struct web_gpu_queue_row *r);
/* The /gpu/queue document: the options, "ranks", "total" and "rows" (the summary rows, each
 * with its downsampled "series"). */
void web__render_gpu_queue(struct sbuf *b, const struct live_gpu_stream_rank *ranks, size_t n_ranks,
                           const struct web_gpu_queue_row *rows, size_t n,
                           const struct analyse_gpu_opts *opts, int64_t max_queue,
                           size_t max_points);
/* A rank's step-time breakdown: its steps [offset, offset + limit) (limit 0: all), the average
 * and GPU utilisation. */
extern const char web__breakdown_csv_header[];
void web__bd_row(struct sbuf *b, enum web_format fmt, int64_t rank,
                 const struct analyse_bd_step *st);
void web__render_live_breakdown(struct sbuf *b, const struct live_breakdown_view *v, size_t offset,
                                size_t limit);
/* "coverage":{...} (no separator after it): what of the rank's trace the breakdown v covers,
 * docs/API.md. */
void web__render_bd_coverage(struct sbuf *b, const struct live_breakdown_view *v);

/* metrics.c: appends s[0, n) as the inside of a Prometheus label value: backslash, double quote
 * and line feed escaped, invalid UTF-8 replaced by U+FFFD, every other byte as it is. */
void web__prom_label_value(struct sbuf *b, const char *s, size_t n);

/* ---- /api/v1/diff (routes_diff.c) ----
 * One operator or kernel name of two runs: its row on each side, NULL on the side that lacks it
 * (matched by exact name; "added" has no base row, "removed" no exp row). */
struct web_diff_row {
    const char *name;
    const struct analyse_op_row *base, *exp;
};
/* One side's step time: the mean of its breakdown's steps (in its range), per category. */
struct web_diff_bd {
    int64_t rank;                     /* the breakdown's rank */
    size_t n_steps;                   /* steps averaged; 0: no step (null step time) */
    double total_ns;
    double ns[ANALYSE_BD_COUNT];
};
/* One side of a diff: the job's name, the rank read and its breakdown's mean step, its step
 * range (the tables of those steps only), and the sums of its operator and kernel tables. */
struct web_diff_side {
    const char *job; /* its name */
    int64_t job_id;
    int64_t rank; /* -1: every rank merged (operators, kernels); the breakdown is bd.rank's */
    struct web_diff_bd bd;
    bool ranged;  /* the tables are those of steps [first, last] of the stored spans */
    int64_t first, last;             /* as asked (ANALYSE_ST_ALL_FIRST / _LAST: no bound) */
    size_t range_steps;              /* step spans in range, on the ranks read */
    int64_t first_step, last_step;   /* the lowest and highest of them */
    int64_t spans_read, spans_cut;   /* spans read from the store, and past max_spans */
    const struct analyse_op_table *ops, *kernels;
};
/* The table forms (fmt csv or records): a row a line (CSV) or a JSON object (records, in one
 * array), operators first, then kernels, whose self columns are empty (CSV) or null (records);
 * each row's "table" is "operator" or "kernel". */
extern const char web__diff_csv_header[];
void web__diff_table(struct sbuf *b, enum web_format fmt, const struct web_diff_row *ops,
                     size_t n_ops, const struct web_diff_row *kernels, size_t n_kernels);
/* The JSON document {"base": side, "exp": side, "operators": [...], "kernels": [...], "added":
 * {"operators", "kernels"}, "removed": {...}} (docs/API.md). */
void web__render_diff(struct sbuf *b, const struct web_diff_side *base,
                      const struct web_diff_side *exp, const struct web_diff_row *ops,
                      size_t n_ops, const struct web_diff_row *kernels, size_t n_kernels);
/* Matches both sides' tables by name and renders the answer (fmt json, csv or records) into b: what
 * routes_diff.c answers, with or without step ranges. Returns 0 or -ENOMEM. */
int web__diff_answer(struct sbuf *b, enum web_format fmt, const struct web_diff_side *base,
                     const struct web_diff_side *exp);

#endif
