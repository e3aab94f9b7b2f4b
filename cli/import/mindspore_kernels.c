/* SPDX-License-Identifier: MIT */
/*
 * MindSpore's operator tables: aicore_intermediate_<r>_detail.csv (each AI Core kernel's calls,
 * as aggregated spans named and typed through framework_raw and flops), its _type.csv (checked),
 * and aicpu_intermediate_<r>.csv or its source output_data_preprocess_aicpu_<r>.txt (one span
 * per AI CPU task).
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_csv.h"
#include "mindspore_decimal.h"

/* The shortest kernel record msf_feed_aicore_detail() writes: an empty name and type, times 0. */
#define MSF_KERNEL_LINE_MIN                                                                     \
    (sizeof "{\"ph\":\"X\",\"name\":\"\",\"cat\":\"kernel\",\"ts\":0,\"dur\":0,\"pid\":\"AI Core "     \
            "(aggregated)\",\"tid\":\"\",\"args\":{\"aggregated\":true}}\n" - 1)

int msf_feed_aicore_detail(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    static const char *const need[] = {"execution_time", "execution_frequency", NULL};
    int r = csv_table_open(&c, &h, &f, data, len, need, &nh, e);
    int c_time = csv_col_find(h, nh, "execution_time");
    int c_freq = csv_col_find(h, nh, "execution_frequency");
    /* The name is the first column (full_kernel_name, full_op_name; "full_kernel_time" in
     * some MindSpore versions). */
    struct sbuf *o = &m->out;
    char *name = NULL;
    while (r == 0 && (r = csv_table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        int64_t avg, freq;
        if ((r = fld_num(&f[c_time], line, 6, "execution_time (ms)", &avg, e)) < 0 ||
            (r = fld_count(&f[c_freq], line, "execution_frequency", &freq, e)) < 0)
            break;
        if (avg < 0) {
            r = msf_fail(e, line, f[c_time].col, -EINVAL, "execution_time is negative");
            break;
        }
        free(name);
        name = fld_dup(&f[0]);
        if (!name) {
            r = msf_fail(e, line, 1, -ENOMEM, "out of memory");
            break;
        }
        /* One span per call, each at least MSF_KERNEL_LINE_MIN bytes: a count that cannot fit
         * is refused before anything is expanded (a 541-byte file claiming 333 M calls once
         * took 1.2 GB and 3 s to reach the output limit). */
        if ((uint64_t)freq > MSF_EVENTS_MAX - m->n_lines ||
            (uint64_t)freq > (m->out.max - m->out.len) / MSF_KERNEL_LINE_MIN) {
            r = msf_fail(e, line, f[c_freq].col, -EMSGSIZE,
                         "execution_frequency %lld: one record per call would pass the limit of "
                         "%llu records or %zu bytes", (long long)freq,
                         (unsigned long long)MSF_EVENTS_MAX, m->out.max);
            break;
        }
        const struct fw_row *w = msf_fw_find(m, name);
        const struct flops_row *fl = msf_fl_find(m, name);
        for (int64_t i = 0; i < freq; i++) {
            if (avg > 0 && m->kernel_ns > INT64_MAX - avg) {
                r = msf_fail(e, line, f[c_time].col, -EINVAL, "the kernel times add up past int64");
                break;
            }
            sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
            sbuf_json_str(o, f[0].s, f[0].n);
            sbuf_adds(o, ",\"cat\":\"kernel\",\"ts\":");
            dec_put_us(o, m->kernel_ns);
            sbuf_adds(o, ",\"dur\":");
            dec_put_us(o, avg);
            sbuf_adds(o, ",\"pid\":\"AI Core (aggregated)\",\"tid\":");
            sbuf_json_strz(o, w ? w->type : "AI Core");
            sbuf_adds(o, ",\"args\":{\"aggregated\":true");
            if (w) {
                sbuf_adds(o, ",\"kernel_name\":");
                sbuf_json_strz(o, w->kname);
                sbuf_adds(o, ",\"kernel_type\":");
                sbuf_json_strz(o, w->type);
                if (w->info[0]) {
                    sbuf_adds(o, ",\"op_info\":");
                    sbuf_json_strz(o, w->info);
                }
            }
            if (fl)
                sbuf_adds(o, fl->vals);
            sbuf_adds(o, "}}");
            m->kernel_ns += avg;
            if ((r = msf_line_done(m, e, line)) < 0)
                break;
        }
        r = r < 0 ? r : 0;
    }
    free(name);
    free(h);
    return r < 0 ? r : 0;
}

/* The type table: checked, nothing sent (the kernel table and its types come from the detail
 * and framework_raw). */
int msf_feed_aicore_type(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    (void)m;
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    int r = csv_table_open(&c, &h, &f, data, len, NULL, &nh, e);
    int c_time = csv_col_find(h, nh, "total_time");
    if (c_time < 0)
        c_time = csv_col_find(h, nh, "execution_time");
    int c_freq = csv_col_find(h, nh, "execution_frequency");
    if (r == 0 && (c_time < 0 || c_freq < 0))
        r = msf_fail(e, 1, 1, -EINVAL,
                     "the header has no total_time or execution_frequency column");
    while (r == 0 && (r = csv_table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        int64_t v;
        if ((r = fld_num(&f[c_time], line, 6, "total_time (ms)", &v, e)) < 0 ||
            (r = fld_count(&f[c_freq], line, "execution_frequency", &v, e)) < 0)
            break;
        r = 0;
    }
    free(h);
    return r < 0 ? r : 0;
}

/* The columns of an AI CPU table (aicpu_intermediate_<r>.csv or its source,
 * output_data_preprocess_aicpu_<r>.txt). */
struct aicpu_cols {
    int type, total, disp, exec, rs, re;
};

static int aicpu_cols(const struct fld *h, size_t nh, struct aicpu_cols *c, struct msf_err *e)
{
    static const char *const need[] = {"total_time", "dispatch_time", "run_start", "run_end"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (csv_col_find(h, nh, need[i]) < 0)
            return msf_fail(e, 1, 1, -EINVAL, "the header has no column \"%s\"", need[i]);
    c->type = csv_col_find(h, nh, "kernel_type");
    if (c->type < 0)
        c->type = csv_col_find(h, nh, "op_type");
    if (c->type < 0)
        c->type = csv_col_find(h, nh, "node_type_name");
    c->total = csv_col_find(h, nh, "total_time");
    c->disp = csv_col_find(h, nh, "dispatch_time");
    c->exec = csv_col_find(h, nh, "execution_time");
    c->rs = csv_col_find(h, nh, "run_start");
    c->re = csv_col_find(h, nh, "run_end");
    if (c->type < 0)
        return msf_fail(e, 1, 1, -EINVAL,
                        "the header has no kernel_type/op_type/node_type_name column");
    return 0;
}

/* One AI CPU task -> one kernel span. Times in ms; run_start and run_end in µs (MindSpore's
 * system counter / 100, the clock of minddata_aicpu_<r>.txt's GetNext records). The span lasts
 * total_time, the time MindInsight's AI CPU tables sum and average; execution_time (else
 * run_end - run_start) and dispatch_time travel in args. */
static int aicpu_row(struct msf *m, const struct aicpu_cols *c, const struct fld *f,
                     uint64_t line, struct msf_err *e)
{
    int64_t tot, disp, rs, re, ex;
    int r;
    if ((r = fld_num(&f[c->total], line, 6, "total_time (ms)", &tot, e)) < 0 ||
        (r = fld_num(&f[c->disp], line, 6, "dispatch_time (ms)", &disp, e)) < 0 ||
        (r = fld_num(&f[c->rs], line, 3, "run_start (us)", &rs, e)) < 0 ||
        (r = fld_num(&f[c->re], line, 3, "run_end (us)", &re, e)) < 0)
        return r;
    if (c->exec >= 0) {
        if ((r = fld_num(&f[c->exec], line, 6, "execution_time (ms)", &ex, e)) < 0)
            return r;
    } else {
        ex = re - rs;
    }
    if (ex < 0 || rs < 0 || tot < 0 || disp < 0)
        return msf_fail(e, line, f[c->rs].col, -EINVAL,
                        "negative run_start, total, dispatch or execution time");
    struct sbuf *o = &m->out;
    sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
    sbuf_json_str(o, f[c->type].s, f[c->type].n);
    sbuf_adds(o, ",\"cat\":\"kernel\",\"ts\":");
    dec_put_us(o, rs);
    sbuf_adds(o, ",\"dur\":");
    dec_put_us(o, tot);
    sbuf_adds(o, ",\"pid\":\"AI CPU\",\"tid\":0,\"args\":{\"execution_time_us\":");
    dec_put_us(o, ex);
    sbuf_adds(o, ",\"dispatch_time_us\":");
    dec_put_us(o, disp);
    sbuf_adds(o, "}}");
    return msf_line_done(m, e, line);
}

/* output_data_preprocess_aicpu_<r>.txt, the table aicpu_intermediate_<r>.csv is copied from
 * (MindSpore's Integrator): blank-separated, a header "serial_number node_type_name
 * total_time(ms) dispatch_time(ms) execution_time(ms) run_start run_end", one row per task, and
 * a last line "AI CPU Total Time(ms): <sum>", which is skipped as MindSpore skips it. */
static int feed_aicpu_txt(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct fld h[16], f[16];
    size_t nh = 0;
    struct aicpu_cols c;
    char *p = data, *end = data + len;
    uint64_t line = 1;
    int r;
    for (; p < end; p = p < end ? p + 1 : p, line++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        struct fld *v = nh ? f : h;
        size_t n = 0;
        for (char *q = p; q < le;) {
            while (q < le && (csv_is_blank(*q) || *q == '\r'))
                q++;
            if (q >= le)
                break;
            if (n == 16)
                return msf_fail(e, line, (uint64_t)(q - p) + 1, -EINVAL, "more than 16 fields");
            v[n].s = q;
            v[n].col = (uint64_t)(q - p) + 1;
            while (q < le && !csv_is_blank(*q) && *q != '\r')
                q++;
            v[n].n = (size_t)(q - v[n].s);
            n++;
        }
        p = le;
        if (n == 0)
            continue;
        if (!nh) {
            if (!fld_is(&h[0], "serial_number"))
                return msf_fail(e, line, 1, -EINVAL, "expected the header \"serial_number "
                                                 "node_type_name total_time(ms) ...\"");
            for (size_t i = 0; i < n; i++) /* "total_time(ms)" -> "total_time" */
                if (h[i].n > 4 && memcmp(h[i].s + h[i].n - 4, "(ms)", 4) == 0)
                    h[i].n -= 4;
            nh = n;
            if ((r = aicpu_cols(h, nh, &c, e)) < 0) {
                e->line = line;
                return r;
            }
            continue;
        }
        if (f[0].n == 2 && memcmp(f[0].s, "AI", 2) == 0)
            continue; /* "AI CPU Total Time(ms): ..." */
        if (n != nh)
            return msf_fail(e, line, 1, -EINVAL, "%zu fields where the header has %zu", n, nh);
        if ((r = aicpu_row(m, &c, f, line, e)) < 0)
            return r;
    }
    if (!nh)
        return msf_fail(e, 0, 0, -EINVAL, "empty file: no header row");
    return 0;
}

/* aicpu_intermediate_<r>.csv: one row per AI CPU task (MindSpore writes it from
 * output_data_preprocess_aicpu_<r>.txt with csv.writer), or that .txt itself (msdir reads it
 * when the rank has no .csv). */
int msf_feed_aicpu(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    const char *nl = memchr(data, '\n', len);
    if (!memchr(data, ',', nl ? (size_t)(nl - data) : len) && len > 0)
        return feed_aicpu_txt(m, data, len, e);
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    struct aicpu_cols cols;
    int r = csv_table_open(&c, &h, &f, data, len, NULL, &nh, e);
    if (r == 0)
        r = aicpu_cols(h, nh, &cols, e);
    while (r == 0 && (r = csv_table_row(&c, h, nh, f, &nf, &line, false, e)) == 1)
        r = aicpu_row(m, &cols, f, line, e);
    free(h);
    return r < 0 ? r : 0;
}
