/* SPDX-License-Identifier: MIT */
/*
 * step_trace_raw_<r>_detail_time.csv: one step record per step (its begin, end and phases),
 * the FP and BP markers as spans, and the communication ops' start/end columns as spans.
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_csv.h"
#include "mindspore_decimal.h"
#include "num.h"

#define MSF_DEFAULT_FP "fp_point"
#define MSF_DEFAULT_BP "bp_point"

static int comm_tid(struct sbuf *b, const char *s, size_t n)
{
    /* "stream_<id>_<k>_<op>" -> "stream_<id>"; anything else -> "communication". */
    if (n > 7 && memcmp(s, "stream_", 7) == 0) {
        size_t i = 7;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i > 7) {
            sbuf_json_str(b, s, i);
            return 0;
        }
    }
    sbuf_adds(b, "\"communication\"");
    return 0;
}

struct comm_col {
    size_t start, end;      /* column indexes */
    const char *name;
    size_t name_len;
};

/* Keeps MindSpore's average row when it has the four figures as numbers; it is only shown,
 * never checked, so a row that cannot be read is left out as before. */
static void average_row(struct msf *m, const struct fld *f, size_t nf, const int col[4])
{
    struct msf_err ignored;
    int64_t v[4];
    for (int i = 0; i < 4; i++)
        if (col[i] < 0 || (size_t)col[i] >= nf ||
            fld_num(&f[col[i]], 0, 1, "average", &v[i], &ignored) < 0)
            return;
    memcpy(m->st_avg, v, sizeof v);
    m->have_st_avg = true;
}

int msf_feed_step_trace(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct comm_col *cc = malloc(MSF_FIELDS_MAX * sizeof *cc);
    if (!cc)
        return msf_fail(e, 0, 0, -ENOMEM, "out of memory");
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf, ncc = 0;
    uint64_t line = 1;
    static const char *const need[] = {"step_num", "start_point", "end_point", "fp_point", NULL};
    int r = csv_table_open(&c, &h, &f, data, len, need, &nh, e);
    int c_step = csv_col_find(h, nh, "step_num"), c_start = csv_col_find(h, nh, "start_point");
    int c_end = csv_col_find(h, nh, "end_point"), c_fp = csv_col_find(h, nh, "fp_point");
    int c_bp = csv_col_find(h, nh, "bp_point");
    const int avg_col[4] = {csv_col_find(h, nh, "iteration_interval"),
                            csv_col_find(h, nh, "fp_and_bp"), csv_col_find(h, nh, "tail"),
                            csv_col_find(h, nh, "total")};
    if (r == 0 && c_bp < 0 && csv_col_find(h, nh, "fp") < 0)
        r = msf_fail(e, 1, 1, -EINVAL,
                     "the header has neither bp_point (training) nor fp (inference)");
    /* Communication ops: "<name>_start_point" with a matching "<name>_end_point". */
    for (size_t i = 0; r == 0 && i < nh; i++) {
        static const char sp[] = "_start_point", ep[] = "_end_point";
        size_t ls = sizeof sp - 1;
        if ((int)i == c_start || h[i].n <= ls || memcmp(h[i].s + h[i].n - ls, sp, ls) != 0)
            continue;
        size_t bn = h[i].n - ls;
        for (size_t k = 0; k < nh; k++)
            if (h[k].n == bn + sizeof ep - 1 && memcmp(h[k].s, h[i].s, bn) == 0 &&
                memcmp(h[k].s + bn, ep, sizeof ep - 1) == 0) {
                cc[ncc++] = (struct comm_col){i, k, h[i].s, bn};
                break;
            }
    }
    /* The markers must have different names to be told apart. */
    if (!m->fp[0] || !m->bp[0] || strcmp(m->fp, m->bp) == 0) {
        memcpy(m->fp, MSF_DEFAULT_FP, sizeof MSF_DEFAULT_FP);
        memcpy(m->bp, MSF_DEFAULT_BP, sizeof MSF_DEFAULT_BP);
    }
    struct sbuf *o = &m->out;
    int64_t prev_step = 0;
    while (r == 0 && (r = csv_table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        const struct fld *sf = &f[c_step];
        /* MindSpore's precomputed average row ("-", or 0 in some versions): we average ourselves;
         * the cluster step trace shows it as MindInsight does (the hello's "parallel"). */
        if (fld_is(sf, "-") || fld_is(sf, "0")) {
            average_row(m, f, nf, avg_col);
            continue;
        }
        int64_t step, start, end, fpv, bpv;
        if (num_parse_i64(sf->s, sf->n, &step) < 0 || step < 1) {
            r = msf_fail(e, line, sf->col, -EINVAL,
                         "step_num: expected an integer >= 1, got \"%.*s\"",
                         (int)(sf->n > 40 ? 40 : sf->n), sf->s);
            break;
        }
        if (step <= prev_step) {
            r = msf_fail(e, line, sf->col, -EINVAL, "step_num %lld does not follow step %lld",
                         (long long)step, (long long)prev_step);
            break;
        }
        prev_step = step;
        /* Points are Ascend system counts: 1 count = 10 ns. */
        if ((r = fld_num(&f[c_fp], line, 1, "fp_point", &fpv, e)) < 0)
            break;
        if (fld_is(&f[c_start], "-"))
            start = fpv;
        else if ((r = fld_num(&f[c_start], line, 1, "start_point", &start, e)) < 0)
            break;
        if ((r = fld_num(&f[c_end], line, 1, "end_point", &end, e)) < 0)
            break;
        if (c_bp >= 0) {
            if ((r = fld_num(&f[c_bp], line, 1, "bp_point", &bpv, e)) < 0)
                break;
        } else {
            bpv = end; /* inference: fp runs to the end */
        }
        if (!(start <= fpv && fpv <= bpv && bpv <= end)) {
            r = msf_fail(e, line, f[c_start].col, -EINVAL,
                         "points out of order: need start_point <= fp_point <= %s <= end_point",
                         c_bp >= 0 ? "bp_point" : "fp_point");
            break;
        }
        sbuf_printf(o, "{\"type\":\"step\",\"step\":%lld,\"begin_us\":", (long long)step);
        dec_put_us(o, start);
        sbuf_adds(o, ",\"end_us\":");
        dec_put_us(o, end);
        sbuf_adds(o, ",\"phases\":{\"dataloader\":");
        dec_put_us(o, fpv - start);
        sbuf_adds(o, ",\"forward\":");
        dec_put_us(o, bpv - fpv);
        sbuf_adds(o, ",\"tail\":");
        dec_put_us(o, end - bpv);
        msf_cluster_phases(m, step, o);
        sbuf_adds(o, "},\"source\":\"mindspore step_trace\"}");
        if ((r = msf_line_done(m, e, line)) < 0)
            break;
        for (int k = 0; k < 2; k++) {
            sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
            sbuf_json_strz(o, k == 0 ? m->fp : m->bp);
            sbuf_adds(o, ",\"cat\":\"step_trace\",\"ts\":");
            dec_put_us(o, fpv);
            sbuf_adds(o, ",\"dur\":");
            dec_put_us(o, k == 0 ? 0 : bpv - fpv);
            sbuf_printf(o, ",\"pid\":\"Step Trace\",\"tid\":\"FP/BP\",\"args\":{\"step\":%lld,"
                           "\"point\":\"%s\"}}",
                        (long long)step, k == 0 ? "fp_point" : "bp_point");
            if ((r = msf_line_done(m, e, line)) < 0)
                break;
        }
        for (size_t k = 0; r == 0 && k < ncc; k++) {
            const struct fld *a = &f[cc[k].start], *b = &f[cc[k].end];
            if (a->n == 0 || b->n == 0 || fld_is(a, "-") || fld_is(b, "-"))
                continue; /* no such op in this step */
            int64_t cs, ce;
            if ((r = fld_num(a, line, 1, "communication start", &cs, e)) < 0 ||
                (r = fld_num(b, line, 1, "communication end", &ce, e)) < 0)
                break;
            if (ce < cs) {
                r = msf_fail(e, line, b->col, -EINVAL, "%.*s ends before it starts",
                             (int)cc[k].name_len, cc[k].name);
                break;
            }
            sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
            sbuf_json_str(o, cc[k].name, cc[k].name_len);
            sbuf_adds(o, ",\"cat\":\"step_trace\",\"ts\":");
            dec_put_us(o, cs);
            sbuf_adds(o, ",\"dur\":");
            dec_put_us(o, ce - cs);
            sbuf_adds(o, ",\"pid\":\"Step Trace\",\"tid\":");
            comm_tid(o, cc[k].name, cc[k].name_len);
            sbuf_printf(o, ",\"args\":{\"step\":%lld}}", (long long)step);
            r = msf_line_done(m, e, line);
        }
    }
    free(h);
    free(cc);
    if (r < 0)
        return r;
    m->have_steps = true;
    return 0;
}
