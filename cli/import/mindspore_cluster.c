/* SPDX-License-Identifier: MIT */
/*
 * ascend_cluster_analyse_<mode>_<stages>_<rank_size>_<rank>.csv: MindSpore's per-step cluster
 * figures of one rank (MindInsight's cluster step trace, docs/ANALYSIS.md "Cluster step trace").
 * The name gives the parallel mode and layout; the rows (one per step, by position, the last
 * one MindSpore's average) go into the step records' phases (mindspore_step_trace.c), and the
 * layout with MindSpore's average rows into the hello's "parallel" object
 * (msf_parallel_json()).
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_csv.h"
#include "mindspore_decimal.h"
#include "sbuf.h"
#include "util.h"

static const char *const mode_names[] = {
    [MSF_PAR_DATA] = "data-parallel",
    [MSF_PAR_MODEL] = "model-parallel",
    [MSF_PAR_PIPELINE] = "pipeline-parallel",
};

/* The phase names of the figures, in the columns' order (mindspore_int.h, MSF_CL_COLS). */
const char *const msf_cl_phase[MSF_CL_COLS] = {
    "computation", "communication_alone", "stage_time", "receive_alone",
    "collective_communication_alone",
};

/* Digits [s, s + n) as an integer < 10^9; false if not all digits or empty. */
static bool digits(const char *s, size_t n, int64_t *ret)
{
    if (n == 0 || n > 9)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *ret = v;
    return true;
}

int msf_cluster_name(const char *base, struct msf_cluster_name *ret, const char **why)
{
    static const char pfx[] = "ascend_cluster_analyse_", sfx[] = ".csv";
    size_t n = strlen(base), lp = sizeof pfx - 1, ls = sizeof sfx - 1;
    if (n <= lp + ls || strncmp(base, pfx, lp) != 0 || strcmp(base + n - ls, sfx) != 0)
        return 0;
    const char *s = base + lp, *end = base + n - ls;
    enum msf_par_mode mode = MSF_PAR_NONE;
    for (int k = MSF_PAR_DATA; k <= MSF_PAR_PIPELINE; k++) {
        size_t ln = strlen(mode_names[k]);
        if ((size_t)(end - s) > ln && strncmp(s, mode_names[k], ln) == 0 && s[ln] == '_') {
            mode = (enum msf_par_mode)k;
            s += ln + 1;
            break;
        }
    }
    if (mode == MSF_PAR_NONE) {
        *why = "the mode is not data-parallel, model-parallel or pipeline-parallel";
        return -1;
    }
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        const char *u = i < 2 ? memchr(s, '_', (size_t)(end - s)) : end;
        if (!u || !digits(s, (size_t)(u - s), &v[i])) {
            *why = "expected <mode>_<stages>_<rank_size>_<rank> with decimal numbers";
            return -1;
        }
        s = u + 1;
    }
    if (v[0] < 1 || v[1] < v[0]) {
        *why = "need 1 <= stages <= rank_size";
        return -1;
    }
    *ret = (struct msf_cluster_name){mode, v[0], v[1], v[2]};
    return 1;
}

void msf_set_cluster_name(struct msf *m, const struct msf_cluster_name *n)
{
    m->cl = *n;
}

/* The columns of each mode, in msf_cl_phase's order; a second name is another spelling
 * MindSpore versions write. Data-parallel's columns are step-trace counts, checked only:
 * MindInsight takes its figures from step_trace_raw. */
struct col_name {
    const char *a, *b;
};

static const struct col_name data_cols[] = {
    {"iteration_interval", NULL}, {"fp_and_bp", NULL}, {"tail", NULL}};
static const struct col_name pipe_cols[] = {
    {"computation", "computation_time"},
    {"communication_alone_time", "communication_alone"},
    {"stage_time", "stage"},
    {"receive_alone_time", "receive_alone"},
    {"collective_communication_time", "collective_communication_alone_time"},
};

int msf_feed_cluster(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    int r = csv_table_open(&c, &h, &f, data, len, NULL, &nh, e);
    if (r < 0) {
        free(h); /* NULL, or the header's array */
        return r;
    }
    /* Without a layout from the file name (the fuzz target), the header says the mode. */
    enum msf_par_mode mode = m->cl.mode;
    if (mode == MSF_PAR_NONE) {
        m->cl = (struct msf_cluster_name){MSF_PAR_DATA, 1, 1, 0};
        mode = csv_col_find(h, nh, "stage_time") >= 0                ? MSF_PAR_PIPELINE
               : csv_col_find(h, nh, "communication_alone_time") >= 0 ? MSF_PAR_MODEL
                                                                      : MSF_PAR_DATA;
        m->cl.mode = mode;
    }
    const struct col_name *names = mode == MSF_PAR_DATA ? data_cols : pipe_cols;
    size_t ncol = mode == MSF_PAR_DATA ? 3 : mode == MSF_PAR_MODEL ? 2 : 5;
    int col[MSF_CL_COLS];
    for (size_t i = 0; i < ncol; i++) {
        col[i] = csv_col_find(h, nh, names[i].a);
        if (col[i] < 0 && names[i].b)
            col[i] = csv_col_find(h, nh, names[i].b);
        if (col[i] < 0) {
            free(h);
            return msf_fail(e, 1, 1, -EINVAL, "%s: the header has no %s column",
                            mode_names[mode], names[i].a);
        }
    }
    m->n_cl = 0;
    while ((r = csv_table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        if (util_grow((void **)&m->cl_rows, &m->cap_cl, m->n_cl + 1, sizeof *m->cl_rows) < 0) {
            r = msf_fail(e, line, 0, -ENOMEM, "out of memory");
            break;
        }
        int64_t *v = m->cl_rows[m->n_cl];
        for (size_t i = 0; i < MSF_CL_COLS; i++)
            v[i] = -1;
        for (size_t i = 0; r >= 0 && i < ncol; i++) {
            /* step-trace counts (1 count = 10 ns), or ms */
            r = fld_num(&f[col[i]], line, mode == MSF_PAR_DATA ? 1 : 6, names[i].a, &v[i], e);
            if (r == 0 && v[i] < 0)
                r = msf_fail(e, line, f[col[i]].col, -EINVAL, "%s: negative", names[i].a);
        }
        if (r < 0)
            break;
        m->n_cl++;
    }
    free(h);
    if (r < 0)
        return r;
    if (m->n_cl == 0)
        return msf_fail(e, line, 0, -EINVAL, "no rows: need one per step and the average");
    if (mode == MSF_PAR_DATA)
        m->n_cl = 0; /* checked, not used: the figures are the step trace's */
    m->have_cl = true;
    return 0;
}

void msf_cluster_phases(const struct msf *m, int64_t step, struct sbuf *o)
{
    /* MindInsight's row of a step: the step's position, 1 = the first row. */
    if (!m->have_cl || step < 1 || (uint64_t)step > m->n_cl)
        return;
    const int64_t *v = m->cl_rows[step - 1];
    for (size_t i = 0; i < MSF_CL_COLS; i++)
        if (v[i] >= 0) {
            sbuf_printf(o, ",\"%s\":", msf_cl_phase[i]);
            dec_put_us(o, v[i]);
        }
}

int msf_parallel_json(const struct msf *m, char **ret)
{
    *ret = NULL;
    if (!m->have_cl)
        return 0;
    struct sbuf b;
    sbuf_init(&b, 1u << 16);
    sbuf_printf(&b, "{\"mode\":\"%s\",\"stages\":%lld,\"rank_size\":%lld,\"average\":{",
                mode_names[m->cl.mode], (long long)m->cl.stages, (long long)m->cl.rank_size);
    static const char *const st[4] = {"interval", "fp_bp", "tail", "total"};
    bool first = true;
    for (int i = 0; m->have_st_avg && i < 4; i++) {
        sbuf_printf(&b, "%s\"%s\":", first ? "" : ",", st[i]);
        dec_put_us(&b, m->st_avg[i]);
        first = false;
    }
    /* The cluster file's average: its last row. */
    for (size_t i = 0; m->n_cl && i < MSF_CL_COLS; i++)
        if (m->cl_rows[m->n_cl - 1][i] >= 0) {
            sbuf_printf(&b, "%s\"%s\":", first ? "" : ",", msf_cl_phase[i]);
            dec_put_us(&b, m->cl_rows[m->n_cl - 1][i]);
            first = false;
        }
    sbuf_adds(&b, "}}");
    if (b.error) {
        sbuf_done(&b);
        return -ENOMEM;
    }
    *ret = sbuf_steal(&b, NULL);
    return *ret ? 0 : -ENOMEM;
}
