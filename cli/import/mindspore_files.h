/* SPDX-License-Identifier: MIT */
/*
 * mindspore_files (msf_): MindSpore's profiler files (the MindInsight-era intermediate
 * CSV/TXT/JSON files and MindSpore 2.x's CPU op timestamps) turned into protocol lines
 * (docs/PROTOCOL.md), one rank at a time (the code, one file per concern: mindspore_int.h). Pure: bytes in, lines out, no I/O. Formats, units and the mapping are in
 * cli/README.md ("MindSpore folders").
 *
 * A rank's files are fed one by one, in enum order (the lookup tables first: point info,
 * framework_raw, flops; then the files that produce lines). Every file is checked completely;
 * the first problem stops it with its line, column and reason, and the caller then sends
 * nothing. The lines are always valid JSON the daemon takes (names go through sbuf_json_str(),
 * times are exact int64 nanoseconds written as microseconds).
 */
#ifndef STEPSCOPE_IMPORT_MSPARSE_H
#define STEPSCOPE_IMPORT_MSPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MSF_REASON_MAX 256          /* longest reason, NUL included */
#define MSF_FIELDS_MAX 4096         /* columns in one CSV row */
#define MSF_TABLE_MAX 1000000       /* rows kept from framework_raw / flops */
#define MSF_EVENTS_MAX 50000000ull  /* lines one rank may produce */
#define MSF_NAME_MAX 256            /* longest FP/BP point name (the protocol's env value limit) */
#define MSF_COMM_MAX (512u << 10) /* bytes of hccl_raw figures the hello may carry */
#define MSF_PIPE_OPS_MAX 256        /* pipeline ops (the daemon reads up to LIVE_PIPE_OPS_MAX, 256) */

enum msf_kind {
    MSF_POINT_INFO,      /* step_trace_point_info[_<r>].json */
    MSF_FRAMEWORK,       /* framework_raw_<r>.csv */
    MSF_FLOPS,           /* flops_<r>.txt */
    MSF_STEP_TRACE,      /* step_trace_raw_<r>_detail_time.csv */
    MSF_AICORE_DETAIL,   /* aicore_intermediate_<r>_detail.csv */
    MSF_AICORE_TYPE,     /* aicore_intermediate_<r>_type.csv (checked; derived from the detail) */
    MSF_AICPU,           /* aicpu_intermediate_<r>.csv, or output_data_preprocess_aicpu_<r>.txt */
    MSF_PIPELINE,        /* minddata_pipeline_raw_<r>.csv */
    MSF_DEVICE_QUEUE,    /* device_queue_profiling_<r>.txt or dataset_iterator_profiling_<r>.txt */
    MSF_GETNEXT_US,      /* minddata_aicpu_<r>.txt (µs) */
    MSF_GETNEXT_NS,      /* minddata_getnext_profiling_<r>.txt (ns, GPU) */
    MSF_CPU_UTIL,        /* minddata_cpu_utilization_<r>.json */
    MSF_CPU_FRAMEWORK,   /* cpu_framework_<r>.txt (MindSpore 2.x on the CPU: input shapes) */
    MSF_CPU_OP_TS,       /* cpu_op_execute_timestamp_<r>.txt (MindSpore 2.x on the CPU) */
    MSF_TRACE_VIEW,      /* ASCEND_PROFILER_OUTPUT/trace_view.json (MindSpore 2.x; after CPU_OP_TS) */
    MSF_CLUSTER,         /* ascend_cluster_analyse_<mode>_<stages>_<rank_size>_<r>.csv (fed before
                            STEP_TRACE, whose step records carry its figures: msdir's order) */
    MSF_FLOPS_SUMMARY,   /* flops_summary_<r>.json (the hello's "summary", no records) */
    MSF_MEMORY_SUMMARY,  /* memory_usage_summary_<r>.json (the hello's "summary", no records) */
    MSF_HCCL,            /* hccl_raw_<r>.csv (into the hello's "communication", not lines) */
    MSF_KIND_COUNT,
};

/* Where a file went wrong: line and column from 1 (0 when the whole file is at fault). */
struct msf_err {
    uint64_t line;
    uint64_t col;
    char reason[MSF_REASON_MAX];
};

struct msf;

/* The parallel mode of a cluster file's name. */
enum msf_par_mode { MSF_PAR_NONE, MSF_PAR_DATA, MSF_PAR_MODEL, MSF_PAR_PIPELINE };

/* What ascend_cluster_analyse_<mode>_<stages>_<rank_size>_<rank>.csv's name says. */
struct msf_cluster_name {
    enum msf_par_mode mode;
    int64_t stages, rank_size, rank;
};

/* Parses a file's base name: 1 and *ret for a cluster file, 0 for another file, -1 (and *why) for
 * a name with the cluster prefix and suffix but no valid mode and layout. */
int msf_cluster_name(const char *base, struct msf_cluster_name *ret, const char **why);

/* A converter for one rank whose lines may take up to max_bytes. NULL when out of memory. */
struct msf *msf_new(size_t max_bytes);
void msf_free(struct msf *m);

/* Converts one file of the given kind; data[0, len) may be modified (quoted CSV fields are
 * unescaped in place). Returns 0, or -EINVAL with *err filled (bad input), -EMSGSIZE (more
 * than max_bytes or MSF_EVENTS_MAX of output) or -ENOMEM, also with *err. Lines produced before
 * a failure stay in the buffer: the caller must drop the whole converter. */
int msf_feed(struct msf *m, enum msf_kind kind, char *data, size_t len, struct msf_err *err);

/* Sends what waits for the end of the rank's files: the pipeline record (PROTOCOL.md section 8)
 * of minddata_pipeline_raw's ops and minddata_cpu_utilization's series, when either was fed.
 * Call once, after the last msf_feed(). Returns 0, or -EMSGSIZE / -ENOMEM with *err filled. */
int msf_end(struct msf *m, struct msf_err *err);

/* The lines so far: '\n'-terminated, *ret_n of them (borrowed). */
const char *msf_lines(const struct msf *m, size_t *ret_len, uint64_t *ret_n);

/* The FP and BP point names the step-trace markers carry, for the hello's STEPSCOPE_FP_POINT and
 * STEPSCOPE_BP_POINT; NULL when no step trace was fed. */
const char *msf_fp_name(const struct msf *m);
const char *msf_bp_name(const struct msf *m);

/* The layout of the rank's cluster file, from its name: set before feeding MSF_CLUSTER (without
 * it the header decides the mode, with one stage of one rank). */
void msf_set_cluster_name(struct msf *m, const struct msf_cluster_name *n);

/* The hello's "parallel" object (docs/PROTOCOL.md, API.md "cluster/step-trace"): mode, stages,
 * rank_size and "average" (MindSpore's own average rows of step_trace_raw and the cluster file,
 * in µs), as malloc'd JSON text in *ret; *ret NULL when no cluster file was fed. Returns 0 or
 * -ENOMEM. */
int msf_parallel_json(const struct msf *m, char **ret);

/* The hello's "summary" object (docs/PROTOCOL.md): {"flops":{"flops_m","flops_per_second_g",
 * "flops_utilization"},"memory":{"capacity_gb","peak_gb","static_gb","allocations",
 * "deallocations"}} from flops_summary and memory_usage_summary, each part only when its file was
 * fed (a member the file lacks is left out), as malloc'd JSON text in *ret; *ret NULL when
 * neither was fed. Returns 0 or -ENOMEM. */
int msf_summary_json(const struct msf *m, char **ret);
/* The hello's "communication" object (docs/PROTOCOL.md, API.md "cluster/communication"): the
 * rank's hccl_raw rows, {"steps":[{"step":N,"communication_cost":µs,"wait_cost":µs,"links":
 * [["src-dst","TYPE",cost µs,size bytes,bandwidth bytes/s],...]},...],"average":{...}|null}, as
 * malloc'd JSON text in *ret; *ret NULL when no hccl_raw was fed. Returns 0 or -ENOMEM. */
int msf_communication_json(const struct msf *m, char **ret);

/* The kind's file name pattern, for messages ("step_trace_raw_<r>_detail_time.csv"). */
const char *msf_kind_pattern(enum msf_kind kind);

#endif
