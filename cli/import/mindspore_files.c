/* SPDX-License-Identifier: MIT */
/*
 * mindspore_files: MindSpore profiler files to protocol lines (contract in mindspore_files.h,
 * mapping in README.md "MindSpore folders"): the converter's state, errors, output lines and
 * the dispatch of each file to its kind's converter (which file does what: mindspore_int.h).
 *
 * The files are small CSV/TXT/JSON tables, so each is parsed whole from memory: a CSV reader
 * (RFC 4180 quoting, blanks around unquoted fields trimmed, as flops_<r>.txt needs), a strict
 * JSON walker for the JSON kinds, and exact decimal-to-nanosecond conversion for every time
 * (syscnt counts x10, ms x1e6, µs x1e3, ns), so nothing goes through a double.
 */
#include "mindspore_files.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_int.h"
#include "sbuf.h"

/* ---- errors and positions ---- */

int msf_fail(struct msf_err *e, uint64_t line, uint64_t col, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    e->line = line;
    e->col = col;
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    va_end(ap);
    return code;
}

void msf_pos_of(const char *base, const char *p, uint64_t *line, uint64_t *col)
{
    uint64_t l = 1;
    const char *ls = base;
    for (const char *q = base; q < p; q++)
        if (*q == '\n') {
            l++;
            ls = q + 1;
        }
    *line = l;
    *col = (uint64_t)(p - ls) + 1;
}

/* ---- output ---- */

int msf_line_done(struct msf *m, struct msf_err *e, uint64_t line)
{
    sbuf_addc(&m->out, '\n');
    if (m->out.error == -ENOMEM)
        return msf_fail(e, line, 0, -ENOMEM, "out of memory");
    if (m->out.error == -ERANGE)
        return msf_fail(e, line, 0, -EINVAL, "a time or duration is out of the daemon's range "
                        "(-2^60 to 3 * 2^60 ns)");
    if (m->out.error)
        return msf_fail(e, line, 0, -EMSGSIZE, "the converted records pass the %zu-byte limit",
                        m->out.max);
    if (++m->n_lines > MSF_EVENTS_MAX)
        return msf_fail(e, line, 0, -EMSGSIZE, "more than %llu records",
                        (unsigned long long)MSF_EVENTS_MAX);
    return 0;
}

/* ---- public ---- */

struct msf *msf_new(size_t max_bytes)
{
    struct msf *m = calloc(1, sizeof *m);
    if (m)
        sbuf_init(&m->out, max_bytes);
    return m;
}

void msf_free(struct msf *m)
{
    if (!m)
        return;
    sbuf_done(&m->out);
    for (size_t i = 0; i < m->n_fw; i++) {
        free(m->fw[i].full);
        free(m->fw[i].kname);
        free(m->fw[i].type);
        free(m->fw[i].info);
    }
    free(m->fw);
    for (size_t i = 0; i < m->n_fl; i++) {
        free(m->fl[i].full);
        free(m->fl[i].vals);
    }
    free(m->fl);
    for (size_t i = 0; i < m->n_pops; i++)
        free(m->pops[i].json);
    free(m->pops);
    for (size_t i = 0; i < m->n_cops; i++)
        free(m->cops[i].json);
    free(m->cops);
    for (size_t i = 0; i < m->n_shp; i++) {
        free(m->shp[i].name);
        free(m->shp[i].json);
    }
    free(m->shp);
    free(m->cpu_json);
    free(m->cl_rows);
    free(m->comm_json);
    free(m);
}

int msf_feed(struct msf *m, enum msf_kind kind, char *data, size_t len, struct msf_err *err)
{
    memset(err, 0, sizeof *err);
    if (memchr(data, '\0', len)) {
        uint64_t l, c;
        msf_pos_of(data, memchr(data, '\0', len), &l, &c);
        return msf_fail(err, l, c, -EINVAL, "NUL byte (a binary or damaged file)");
    }
    static int (*const feeds[MSF_KIND_COUNT])(struct msf *, char *, size_t, struct msf_err *) = {
        [MSF_POINT_INFO] = msf_feed_point_info,
        [MSF_FRAMEWORK] = msf_feed_framework,
        [MSF_FLOPS] = msf_feed_flops,
        [MSF_STEP_TRACE] = msf_feed_step_trace,
        [MSF_AICORE_DETAIL] = msf_feed_aicore_detail,
        [MSF_AICORE_TYPE] = msf_feed_aicore_type,
        [MSF_AICPU] = msf_feed_aicpu,
        [MSF_PIPELINE] = msf_feed_pipeline,
        [MSF_DEVICE_QUEUE] = msf_feed_device_queue,
        [MSF_GETNEXT_US] = msf_feed_getnext_us,
        [MSF_GETNEXT_NS] = msf_feed_getnext_ns,
        [MSF_CPU_UTIL] = msf_feed_cpu_util,
        [MSF_CPU_FRAMEWORK] = msf_feed_cpu_framework,
        [MSF_CPU_OP_TS] = msf_feed_cpu_op_ts,
        [MSF_TRACE_VIEW] = msf_feed_trace_view,
        [MSF_CLUSTER] = msf_feed_cluster,
        [MSF_FLOPS_SUMMARY] = msf_feed_flops_summary,
        [MSF_MEMORY_SUMMARY] = msf_feed_memory_summary,
        [MSF_HCCL] = msf_feed_hccl,
    };
    if ((unsigned)kind >= MSF_KIND_COUNT)
        return msf_fail(err, 0, 0, -EINVAL, "unknown kind");
    return feeds[kind](m, data, len, err);
}

const char *msf_lines(const struct msf *m, size_t *ret_len, uint64_t *ret_n)
{
    *ret_len = m->out.len;
    *ret_n = m->n_lines;
    return m->out.data ? m->out.data : "";
}

const char *msf_fp_name(const struct msf *m)
{
    return m->have_steps ? m->fp : NULL;
}

const char *msf_bp_name(const struct msf *m)
{
    return m->have_steps ? m->bp : NULL;
}

const char *msf_kind_pattern(enum msf_kind kind)
{
    static const char *const p[MSF_KIND_COUNT] = {
        "step_trace_point_info[_<r>].json", "framework_raw_<r>.csv", "flops_<r>.txt",
        "step_trace_raw_<r>_detail_time.csv", "aicore_intermediate_<r>_detail.csv",
        "aicore_intermediate_<r>_type.csv", "aicpu_intermediate_<r>.csv",
        "minddata_pipeline_raw_<r>.csv", "device_queue_profiling_<r>.txt",
        "minddata_aicpu_<r>.txt", "minddata_getnext_profiling_<r>.txt",
        "minddata_cpu_utilization_<r>.json", "cpu_framework_<r>.txt",
        "cpu_op_execute_timestamp_<r>.txt",
        "ASCEND_PROFILER_OUTPUT/trace_view.json",
        "ascend_cluster_analyse_<mode>_<stages>_<rank_size>_<r>.csv",
        "flops_summary_<r>.json", "memory_usage_summary_<r>.json", "hccl_raw_<r>.csv"};
    return (unsigned)kind < MSF_KIND_COUNT ? p[kind] : "?";
}

