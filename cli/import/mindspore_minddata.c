/* SPDX-License-Identifier: MIT */
/*
 * MindData, the input pipeline: minddata_pipeline_raw_<r>.csv (the ops of the pipeline record,
 * which msf_end() sends with minddata_cpu_utilization's series), device_queue_profiling_<r>.txt
 * (queue samples and times) and the GetNext files (minddata_aicpu_<r>.txt in µs,
 * minddata_getnext_profiling_<r>.txt in ns).
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_csv.h"
#include "mindspore_decimal.h"
#include "mindspore_json.h"
#include "sbuf.h"

/* A CSV cell holding a JSON list of numbers ("[1, 2]" or "[]"); appended as a JSON array. */
static int put_num_list(struct sbuf *o, const struct fld *fd, uint64_t line, const char *what,
                        struct msf_err *e)
{
    struct mj j;
    mj_init(&j, fd->s, fd->n);
    struct numv v = {0};
    struct msf_err je;
    int r = mj_numbers(&j, &v, &je);
    if (r == 0)
        r = mj_end(&j, &je);
    if (r < 0) {
        numv_free(&v);
        return msf_fail(e, line, fd->col, r, "%s: character %llu of the cell: %s", what,
                        (unsigned long long)je.col, je.reason);
    }
    sbuf_addc(o, '[');
    for (size_t i = 0; i < v.len; i++) {
        if (i)
            sbuf_addc(o, ',');
        sbuf_add(o, v.s[i], v.n[i]);
    }
    sbuf_addc(o, ']');
    numv_free(&v);
    return 0;
}

int msf_pend_add(struct pend_op **v, size_t *n, size_t *cap, int64_t id, struct sbuf *b,
                 uint64_t line, struct msf_err *e)
{
    if (b->error)
        return msf_fail(e, line, 0, b->error == -ENOMEM ? -ENOMEM : -EMSGSIZE,
                        "a pipeline op passes the %zu-byte limit or memory ran out", b->max);
    if (*n >= MSF_PIPE_OPS_MAX)
        return msf_fail(e, line, 0, -EMSGSIZE, "more than %d pipeline ops", MSF_PIPE_OPS_MAX);
    if (util_grow((void **)v, cap, *n + 1, sizeof **v) < 0)
        return msf_fail(e, line, 0, -ENOMEM, "out of memory");
    char *t = strdup(b->len ? b->data : "");
    if (!t)
        return msf_fail(e, line, 0, -ENOMEM, "out of memory");
    (*v)[(*n)++] = (struct pend_op){id, t};
    return 0;
}

/* minddata_pipeline_raw_<r>.csv -> the ops of the pipeline record msf_end() sends
 * (PROTOCOL.md section 8). */
int msf_feed_pipeline(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    static const char *const need[] = {"op_id", "op_type", "num_workers", "children_id", NULL};
    int r = csv_table_open(&c, &h, &f, data, len, need, &nh, e);
    int c_id = csv_col_find(h, nh, "op_id"), c_type = csv_col_find(h, nh, "op_type");
    int c_w = csv_col_find(h, nh, "num_workers"), c_ch = csv_col_find(h, nh, "children_id");
    int c_qs = csv_col_find(h, nh, "output_queue_size");
    int c_ql = csv_col_find(h, nh, "output_queue_length");
    int c_qu = csv_col_find(h, nh, "output_queue_usage_rate");
    int c_par = csv_col_find(h, nh, "parent_id");
    int c_si = csv_col_find(h, nh, "sample_interval");
    struct sbuf tb, *o = &tb;
    sbuf_init(&tb, m->out.max);
    while (r == 0 && (r = csv_table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        /* MindSpore writes Python's None as an empty cell: a leaf's children_id, the root's
         * parent_id and, for an op without an output queue (an inline op), every queue
         * column. An empty cell is "none" (MindInsight reads it so), never an error. */
        int64_t id, w = 0, v;
        if ((r = fld_count(&f[c_id], line, "op_id", &id, e)) < 0 ||
            (f[c_w].n && (r = fld_count(&f[c_w], line, "num_workers", &w, e)) < 0))
            break;
        sbuf_reset(o);
        sbuf_printf(o, "{\"id\":%lld,\"name\":", (long long)id);
        sbuf_json_str(o, f[c_type].s, f[c_type].n);
        if (f[c_w].n)
            sbuf_printf(o, ",\"num_workers\":%lld", (long long)w);
        sbuf_adds(o, ",\"children\":");
        if (f[c_ch].n == 0)
            sbuf_adds(o, "[]");
        else if ((r = put_num_list(o, &f[c_ch], line, "children_id", e)) < 0)
            break;
        if (c_par >= 0 && f[c_par].n) {
            if ((r = dec_scaled(f[c_par].s, f[c_par].n, 0, &v)) < 0) {
                r = msf_fail(e, line, f[c_par].col, -EINVAL, "parent_id: expected an integer");
                break;
            }
            sbuf_printf(o, ",\"parent\":%lld", (long long)v);
        }
        if (c_qs >= 0 && f[c_qs].n) {
            sbuf_adds(o, ",\"queue_sizes\":");
            if ((r = put_num_list(o, &f[c_qs], line, "output_queue_size", e)) < 0)
                break;
        }
        if (c_ql >= 0 && f[c_ql].n) {
            if ((r = fld_count(&f[c_ql], line, "output_queue_length", &v, e)) < 0)
                break;
            sbuf_printf(o, ",\"queue_capacity\":%lld", (long long)v);
        }
        if (c_qu >= 0 && f[c_qu].n) {
            if ((r = fld_num(&f[c_qu], line, 6, "output_queue_usage_rate", &v, e)) < 0)
                break;
            if (v < 0 || v > 1000000) {
                r = msf_fail(e, line, f[c_qu].col, -EINVAL,
                             "output_queue_usage_rate not in [0, 1]");
                break;
            }
            sbuf_adds(o, ",\"queue_usage\":");
            dec_put_e6(o, v);
        }
        if (c_si >= 0 && f[c_si].n) {
            if ((r = fld_num(&f[c_si], line, 6, "sample_interval (ms)", &v, e)) < 0)
                break;
            if (v < 0) {
                r = msf_fail(e, line, f[c_si].col, -EINVAL, "sample_interval is negative");
                break;
            }
            sbuf_adds(o, ",\"sample_interval_ms\":");
            dec_put_e6(o, v);
        }
        /* the closing brace comes in msf_end(), after the op's CPU series */
        if ((r = msf_pend_add(&m->pops, &m->n_pops, &m->cap_pops, id, o, line, e)) < 0)
            break;
        r = 0;
    }
    sbuf_done(&tb);
    free(h);
    if (r < 0)
        return r;
    m->have_pipe = m->n_pops > 0; /* a header alone: nothing to send */
    return 0;
}

/* device_queue_profiling_<r>.txt: "type extra batch value timestamp" per line. Type 1 is a
 * host-queue sample (extra = capacity, value = size); type 0 a time record (extra 0 get,
 * 1 push, 2 total; value in ms). */
int msf_feed_device_queue(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct fld f[8];
    struct sbuf *o = &m->out;
    int r = 0;
    char *p = data, *end = data + len;
    uint64_t line = 1;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        size_t n = 0;
        char *q = p;
        while (q < le) {
            while (q < le && (csv_is_blank(*q) || *q == '\r'))
                q++;
            if (q >= le)
                break;
            if (n == 8) {
                n++;
                break;
            }
            f[n].s = q;
            f[n].col = (uint64_t)(q - p) + 1;
            while (q < le && !csv_is_blank(*q) && *q != '\r')
                q++;
            f[n].n = (size_t)(q - f[n].s);
            n++;
        }
        if (n != 0 && n != 5)
            return msf_fail(e, line, 1, -EINVAL, "expected 5 fields (type extra batch value "
                                             "timestamp), got %zu", n);
        if (n == 5) {
            int64_t type, extra, batch, val, ts;
            if ((r = fld_count(&f[0], line, "type", &type, e)) < 0 ||
                (r = fld_count(&f[1], line, "extra", &extra, e)) < 0 ||
                (r = fld_count(&f[2], line, "batch", &batch, e)) < 0 ||
                (r = fld_num(&f[4], line, 3, "timestamp", &ts, e)) < 0)
                return r;
            if (type == 1) {
                if ((r = fld_count(&f[3], line, "queue size", &val, e)) < 0)
                    return r;
                sbuf_printf(o, "{\"type\":\"queue\",\"name\":\"device_queue\",\"size\":%lld,"
                               "\"capacity\":%lld,\"step\":%lld}",
                            (long long)val, (long long)extra, (long long)batch);
            } else if (type == 0) {
                static const char *const what[] = {"get_cost", "push_cost", "total_cost"};
                if (extra > 2)
                    return msf_fail(e, line, f[1].col, -EINVAL,
                                    "time record kind %lld (expected 0 get, 1 push, 2 total)",
                                    (long long)extra);
                if ((r = fld_num(&f[3], line, 6, "time (ms)", &val, e)) < 0)
                    return r;
                sbuf_adds(o, "{\"ph\":\"C\",\"name\":\"device_queue_time_ms\",\"ts\":");
                dec_put_us(o, ts);
                sbuf_printf(o, ",\"pid\":\"MindData\",\"tid\":0,\"args\":{\"%s\":", what[extra]);
                dec_put_e6(o, val);
                sbuf_printf(o, ",\"step\":%lld}}", (long long)batch);
            } else {
                return msf_fail(e, line, f[0].col, -EINVAL, "record type %lld (expected 0 or 1)",
                                (long long)type);
            }
            if ((r = msf_line_done(m, e, line)) < 0)
                return r;
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    return 0;
}

/* minddata_aicpu_<r>.txt / minddata_getnext_profiling_<r>.txt:
 * "<name> <start> <end> <queue size>" per GetNext, times in µs (shift 3) or ns (shift 0). */
static int feed_getnext(struct msf *m, char *data, size_t len, int shift, struct msf_err *e)
{
    struct fld f[5];
    struct sbuf *o = &m->out;
    char *p = data, *end = data + len;
    uint64_t line = 1;
    int r;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        size_t n = 0;
        char *q = p;
        while (q < le && n < 5) { /* a fifth field is an error */
            while (q < le && (csv_is_blank(*q) || *q == '\r'))
                q++;
            if (q >= le)
                break;
            f[n].s = q;
            f[n].col = (uint64_t)(q - p) + 1;
            while (q < le && !csv_is_blank(*q) && *q != '\r')
                q++;
            f[n].n = (size_t)(q - f[n].s);
            n++;
        }
        if (n != 0 && n != 4)
            return msf_fail(e, line, 1, -EINVAL, "expected 4 fields (name start end queue_size), "
                                             "got %zu%s", n, n == 5 ? " or more" : "");
        if (n == 4) {
            int64_t st, en, size;
            if ((r = fld_num(&f[1], line, shift, "start", &st, e)) < 0 ||
                (r = fld_num(&f[2], line, shift, "end", &en, e)) < 0 ||
                (r = fld_count(&f[3], line, "queue size", &size, e)) < 0)
                return r;
            if (en < st)
                return msf_fail(e, line, f[2].col, -EINVAL, "end is before start");
            m->getnext_step++;
            sbuf_printf(o, "{\"type\":\"queue\",\"name\":\"get_next\",\"size\":%lld,\"step\":%lld,"
                           "\"ts_us\":",
                        (long long)size, (long long)m->getnext_step);
            dec_put_us(o, st);
            sbuf_addc(o, '}');
            if ((r = msf_line_done(m, e, line)) < 0)
                return r;
            sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
            sbuf_json_str(o, f[0].s, f[0].n);
            sbuf_adds(o, ",\"cat\":\"minddata\",\"ts\":");
            dec_put_us(o, st);
            sbuf_adds(o, ",\"dur\":");
            dec_put_us(o, en - st);
            sbuf_printf(o, ",\"pid\":\"MindData\",\"tid\":\"GetNext\",\"args\":{\"step\":%lld,"
                           "\"queue_size\":%lld}}",
                        (long long)m->getnext_step, (long long)size);
            if ((r = msf_line_done(m, e, line)) < 0)
                return r;
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    return 0;
}

int msf_feed_getnext_us(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    return feed_getnext(m, data, len, 3, e);
}

int msf_feed_getnext_ns(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    return feed_getnext(m, data, len, 0, e);
}

/* ---- the pipeline record ---- */

int msf_end(struct msf *m, struct msf_err *err)
{
    memset(err, 0, sizeof *err);
    if (!m->have_pipe && !m->cpu_json)
        return 0;
    struct sbuf *o = &m->out;
    sbuf_printf(o, "{\"type\":\"pipeline\",\"source\":\"mindspore %s\",\"ops\":[",
                m->have_pipe ? "minddata_pipeline_raw" : "minddata_cpu_utilization");
    /* The pipeline's ops, each with its CPU series; without a pipeline file, the ops of the CPU
     * file alone (ids only). */
    size_t n = m->have_pipe ? m->n_pops : m->n_cops;
    for (size_t i = 0; i < n; i++) {
        int64_t id = m->have_pipe ? m->pops[i].id : m->cops[i].id;
        if (i)
            sbuf_addc(o, ',');
        if (m->have_pipe)
            sbuf_adds(o, m->pops[i].json);
        else
            sbuf_printf(o, "{\"id\":%lld,\"children\":[]", (long long)id);
        for (size_t k = 0; k < m->n_cops; k++)
            if (m->cops[k].id == id) {
                sbuf_adds(o, m->cops[k].json);
                break;
            }
        sbuf_addc(o, '}');
    }
    sbuf_addc(o, ']');
    if (m->cpu_json) {
        sbuf_adds(o, ",\"cpu\":");
        sbuf_adds(o, m->cpu_json);
    }
    sbuf_addc(o, '}');
    return msf_line_done(m, err, 0);
}
