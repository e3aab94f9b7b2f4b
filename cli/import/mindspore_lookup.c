/* SPDX-License-Identifier: MIT */
/*
 * MindSpore's lookup files, fed before the files that produce lines: step_trace_point_info (the
 * FP and BP point names of the step trace's markers), framework_raw (full kernel name -> short
 * name, type, op_info) and flops (full kernel name -> its flops columns), for the AI Core
 * kernels (mindspore_kernels.c).
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_csv.h"
#include "mindspore_decimal.h"
#include "mindspore_json.h"

/* ---- step_trace_point_info ---- */

static void set_name(char *dst, const char *s, size_t n, bool plain)
{
    if (plain && n > 0 && n <= MSF_NAME_MAX) {
        memcpy(dst, s, n);
        dst[n] = '\0';
    }
}

/* {"fp_start":"name","bp_end":"name"}, or lists of names per step (GPU): the first is used. */
int msf_feed_point_info(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct mj j;
    mj_init(&j, data, len);
    if (!mj_eat(&j, '{'))
        return mj_fail(&j, e, "expected a JSON object");
    if (!mj_eat(&j, '}')) {
        for (;;) {
            const char *k, *s;
            size_t kn, n;
            bool pl;
            int r = mj_string(&j, &k, &kn, &pl, e);
            if (r < 0)
                return r;
            if (!mj_eat(&j, ':'))
                return mj_fail(&j, e, "expected ':'");
            char *dst = kn == 8 && memcmp(k, "fp_start", 8) == 0 ? m->fp
                        : kn == 6 && memcmp(k, "bp_end", 6) == 0 ? m->bp
                                                                  : NULL;
            char next = mj_peek(&j);
            if (dst && next == '"') {
                if ((r = mj_string(&j, &s, &n, &pl, e)) < 0)
                    return r;
                set_name(dst, s, n, pl);
            } else if (dst && next == '[') {
                mj_eat(&j, '[');
                if (mj_peek(&j) == '"') {
                    if ((r = mj_string(&j, &s, &n, &pl, e)) < 0)
                        return r;
                    set_name(dst, s, n, pl);
                    if (mj_eat(&j, ',')) { /* the other names: skipped */
                        if ((r = mj_skip_rest(&j, ']', e)) < 0)
                            return r;
                    } else if (!mj_eat(&j, ']')) {
                        return mj_fail(&j, e, "expected ',' or ']'");
                    }
                } else if ((r = mj_skip_rest(&j, ']', e)) < 0) {
                    return r;
                }
            } else if ((r = mj_skip(&j, e)) < 0) {
                return r;
            }
            if (mj_eat(&j, '}'))
                break;
            if (!mj_eat(&j, ','))
                return mj_fail(&j, e, "expected ',' or '}'");
        }
    }
    return mj_end(&j, e);
}

/* ---- framework_raw, flops ---- */

static int cmp_fw(const void *a, const void *b)
{
    return strcmp(((const struct fw_row *)a)->full, ((const struct fw_row *)b)->full);
}

static int cmp_fl(const void *a, const void *b)
{
    return strcmp(((const struct flops_row *)a)->full, ((const struct flops_row *)b)->full);
}

const struct fw_row *msf_fw_find(const struct msf *m, const char *full)
{
    struct fw_row key = {.full = (char *)full};
    return m->n_fw ? bsearch(&key, m->fw, m->n_fw, sizeof key, cmp_fw) : NULL;
}

const struct flops_row *msf_fl_find(const struct msf *m, const char *full)
{
    struct flops_row key = {.full = (char *)full};
    return m->n_fl ? bsearch(&key, m->fl, m->n_fl, sizeof key, cmp_fl) : NULL;
}

int msf_feed_framework(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    int r = csv_table_open(&c, &h, &f, data, len, NULL, &nh, e);
    int cf = csv_col_find(h, nh, "full_kernel_name");
    if (cf < 0)
        cf = csv_col_find(h, nh, "full_op_name");
    int ck = csv_col_find(h, nh, "kernel_name");
    if (ck < 0)
        ck = csv_col_find(h, nh, "op_name");
    int ct = csv_col_find(h, nh, "kernel_type");
    if (ct < 0)
        ct = csv_col_find(h, nh, "op_type");
    int ci = csv_col_find(h, nh, "op_info");
    if (r == 0 && (cf < 0 || ct < 0))
        r = msf_fail(e, 1, 1, -EINVAL, "the header has no full_kernel_name/full_op_name or "
                                   "kernel_type/op_type column");
    /* MindSpore appends a graph_id its header does not name: extra fields are fine. */
    while (r == 0 && (r = csv_table_row(&c, h, nh, f, &nf, &line, true, e)) == 1) {
        if (m->n_fw >= MSF_TABLE_MAX) {
            r = msf_fail(e, line, 1, -EMSGSIZE, "more than %d rows", MSF_TABLE_MAX);
            break;
        }
        if (util_grow((void **)&m->fw, &m->cap_fw, m->n_fw + 1, sizeof *m->fw) < 0) {
            r = msf_fail(e, line, 1, -ENOMEM, "out of memory");
            break;
        }
        struct fw_row *w = &m->fw[m->n_fw];
        struct fld none = {"", 0, 0};
        w->full = fld_dup(&f[cf]);
        w->kname = fld_dup(ck >= 0 ? &f[ck] : &none);
        w->type = fld_dup(&f[ct]);
        w->info = fld_dup(ci >= 0 ? &f[ci] : &none);
        m->n_fw++;
        if (!w->full || !w->kname || !w->type || !w->info) {
            r = msf_fail(e, line, 1, -ENOMEM, "out of memory");
            break;
        }
        r = 0;
    }
    free(h);
    if (r < 0)
        return r;
    if (m->n_fw)
        qsort(m->fw, m->n_fw, sizeof *m->fw, cmp_fw);
    return 0;
}

int msf_feed_flops(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    int r = csv_table_open(&c, &h, &f, data, len, NULL, &nh, e);
    struct sbuf b;
    sbuf_init(&b, 1u << 20);
    while (r == 0 && (r = csv_table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        sbuf_reset(&b);
        for (size_t i = 1; i < nf; i++) {
            int64_t v;
            if ((r = fld_num(&f[i], line, 6, "flops", &v, e)) < 0)
                break;
            sbuf_addc(&b, ',');
            sbuf_json_str(&b, h[i].s, h[i].n);
            sbuf_addc(&b, ':');
            dec_put_e6(&b, v);
        }
        if (r < 0)
            break;
        if (m->n_fl >= MSF_TABLE_MAX || b.error ||
            util_grow((void **)&m->fl, &m->cap_fl, m->n_fl + 1, sizeof *m->fl) < 0) {
            r = msf_fail(e, line, 1, -ENOMEM, "out of memory or too many rows");
            break;
        }
        struct flops_row *w = &m->fl[m->n_fl++];
        w->full = fld_dup(&f[0]);
        w->vals = strdup(b.len ? b.data : "");
        if (!w->full || !w->vals) {
            r = msf_fail(e, line, 1, -ENOMEM, "out of memory");
            break;
        }
        r = 0;
    }
    sbuf_done(&b);
    free(h);
    if (r < 0)
        return r;
    if (m->n_fl)
        qsort(m->fl, m->n_fl, sizeof *m->fl, cmp_fl);
    return 0;
}
