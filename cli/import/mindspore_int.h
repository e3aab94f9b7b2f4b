/* SPDX-License-Identifier: MIT */
/*
 * The MindSpore converters' shared state and helpers, internal to cli/import/mindspore_*.c (the
 * contract is mindspore_files.h). One file per concern:
 *   mindspore_files.c       the converter (struct msf), errors, output lines, the dispatch by kind
 *   mindspore_csv.c         the CSV reader (mindspore_csv.h)
 *   mindspore_json.c        the strict JSON walker of the JSON kinds (mindspore_json.h)
 *   mindspore_decimal.c     exact decimal scaling to ns and back (mindspore_decimal.h)
 * and the converters, by file kind:
 *   mindspore_lookup.c      step_trace_point_info, framework_raw, flops (read before the others)
 *   mindspore_step_trace.c  step_trace_raw
 *   mindspore_kernels.c     aicore_intermediate (detail, type), aicpu_intermediate
 *   mindspore_minddata.c    minddata_pipeline_raw, device_queue, GetNext; the pipeline record
 *   mindspore_cpu_util.c    minddata_cpu_utilization
 *   mindspore_cpu_ops.c     MindSpore 2.x cpu_framework, cpu_op_execute_timestamp
 *   mindspore_trace_view.c  MindSpore 2.x trace_view.json
 *   mindspore_cluster.c     ascend_cluster_analyse (its rows go into step_trace_raw's records)
 *   mindspore_summary.c     flops_summary, memory_usage_summary (the hello's "summary")
 *   mindspore_hccl.c        hccl_raw (into the hello's "communication")
 */
#ifndef STEPSCOPE_IMPORT_MINDSPORE_INT_H
#define STEPSCOPE_IMPORT_MINDSPORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "mindspore_files.h"
#include "sbuf.h"
#include "util.h"

struct fw_row {             /* framework_raw: full kernel name -> short name, type, op_info */
    char *full, *kname, *type, *info;
};

struct pend_op {            /* a pipeline op's JSON text, waiting for msf_end() */
    int64_t id;
    char *json;
};

struct flops_row {
    char *full;
    char *vals;             /* ",\"col\":value..." ready to append to args */
};

/* One op of cpu_framework_<r>.txt: its name ("Conv2D-op0") and input shapes as JSON. */
struct shape_row {
    char *name;
    char *json; /* [[8,1,8,8],[4,1,3,3]]; an input without a shape ("NoShape") is [] */
};

#define MSF_CL_COLS 5 /* computation, communication alone, stage, receive alone, collective */

struct msf {
    struct sbuf out;
    uint64_t n_lines;
    bool have_steps;
    char fp[MSF_NAME_MAX + 1];
    char bp[MSF_NAME_MAX + 1];
    struct fw_row *fw;
    size_t n_fw, cap_fw;
    struct flops_row *fl;
    size_t n_fl, cap_fl;
    int64_t kernel_ns;      /* the next synthetic start of an aggregated AI Core kernel */
    int64_t getnext_step;   /* GetNext queue samples so far (their step numbers) */
    struct shape_row *shp;  /* cpu_framework's input shapes by op name, sorted once fed */
    size_t n_shp, cap_shp;
    uint64_t cpu_op_n;      /* executions in cpu_op_execute_timestamp, and their first and */
    int64_t cpu_op_min, cpu_op_max; /* last start (ns): trace_view.json is aligned on them */
    /* The pipeline record waits for msf_end(): minddata_pipeline_raw's ops (each op's JSON
     * object without its closing brace) and minddata_cpu_utilization's series go into it. */
    bool have_pipe;
    struct pend_op *pops;   /* the pipeline's ops */
    size_t n_pops, cap_pops;
    struct pend_op *cops;   /* per-op CPU: ",\"cpu_user\":[...],\"cpu_sys\":[...]" */
    size_t n_cops, cap_cops;
    char *cpu_json;         /* the record's "cpu" object, or NULL */
    /* ascend_cluster_analyse (mindspore_cluster.c): its name's layout and its rows (ns, -1 for a
     * column the mode lacks; none for data-parallel, whose figures are the step trace's) */
    bool have_cl;
    struct msf_cluster_name cl;
    int64_t (*cl_rows)[MSF_CL_COLS];
    size_t n_cl, cap_cl;
    /* step_trace_raw's own average row (ns): interval, fp_and_bp, tail, total */
    bool have_st_avg;
    int64_t st_avg[4];
    /* flops_summary and memory_usage_summary (mindspore_summary.c), x 10^6, -1 when absent:
     * FLOPs (M), FLOPS (G/s), utilisation; capacity, peak, static (GB), allocations,
     * deallocations */
    bool have_sum_flops, have_sum_mem;
    int64_t sum_flops[3], sum_mem[5];
    /* hccl_raw (mindspore_hccl.c): the hello's "communication" object, or NULL */
    char *comm_json;
};

/* Fills *e (line and column from 1, 0 when unknown) and returns code. */
int msf_fail(struct msf_err *e, uint64_t line, uint64_t col, int code, const char *fmt, ...)
    SS_PRINTF(5, 6);

/* Line and column (from 1) of byte p in [base, ...). */
void msf_pos_of(const char *base, const char *p, uint64_t *line, uint64_t *col);

/* Ends the line being written to m->out; fails (with the file's line) on a full or broken
 * buffer, a time out of the daemon's range or more than MSF_EVENTS_MAX lines. */
int msf_line_done(struct msf *m, struct msf_err *e, uint64_t line);

/* Appends (id, the text of b) to *v. Returns 0 or -ENOMEM / -EMSGSIZE with *e filled. */
int msf_pend_add(struct pend_op **v, size_t *n, size_t *cap, int64_t id, struct sbuf *b,
                 uint64_t line, struct msf_err *e);

/* framework_raw's and flops' rows of a full kernel name, or NULL (mindspore_lookup.c). */
const struct fw_row *msf_fw_find(const struct msf *m, const char *full);
const struct flops_row *msf_fl_find(const struct msf *m, const char *full);

/* The converters, one per enum msf_kind, called by msf_feed() with data free of NUL bytes. */
int msf_feed_point_info(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_framework(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_flops(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_step_trace(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_aicore_detail(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_aicore_type(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_aicpu(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_pipeline(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_device_queue(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_getnext_us(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_getnext_ns(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_cpu_util(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_cpu_framework(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_cpu_op_ts(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_trace_view(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_cluster(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_flops_summary(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_memory_summary(struct msf *m, char *data, size_t len, struct msf_err *e);
int msf_feed_hccl(struct msf *m, char *data, size_t len, struct msf_err *e);
/* The phases names of the cluster figures, by column. */
extern const char *const msf_cl_phase[MSF_CL_COLS];
/* Appends ",\"computation\":us,..." of the cluster file's row of step (nothing when none). */
void msf_cluster_phases(const struct msf *m, int64_t step, struct sbuf *o);

#endif
