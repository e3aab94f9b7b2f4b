/* SPDX-License-Identifier: MIT */
/*
 * hccl_raw_<rank>.csv: MindSpore's per-step communication of one rank (MindInsight's cluster
 * communication, docs/ANALYSIS.md "Cluster communication"): step_num, communication_cost and
 * wait_cost (ms), link_info ({"src-dst": {"SDMA"|"RDMA"|...: [cost ms, size KB, bandwidth KB/s]}})
 * and communication_operator_cost (checked to be JSON, not carried). The last row, step "-", is
 * MindSpore's average. Everything goes into the hello's "communication" object
 * (msf_communication_json(), docs/PROTOCOL.md): costs in µs, sizes in bytes, bandwidths in
 * bytes/s (MindSpore's KB is 1000 bytes: its sizes are byte counts / 1000).
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_csv.h"
#include "mindspore_decimal.h"
#include "mindspore_json.h"
#include "sbuf.h"

/* A JSON cell's failure, at the cell's column, with the position inside the cell. */
static int cell_fail(struct msf_err *e, uint64_t line, const struct fld *f, const char *what,
                     const struct msf_err *je)
{
    return msf_fail(e, line, f->col, -EINVAL, "%s: character %llu of the cell: %s", what,
                    (unsigned long long)je->col, je->reason);
}

/* "src-dst" with decimal ranks. */
static bool src_dst_ok(const char *s, size_t n)
{
    size_t i = 0, d1 = 0, d2 = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9' && d1 < 9)
        i++, d1++;
    if (d1 == 0 || i >= n || s[i++] != '-')
        return false;
    while (i < n && s[i] >= '0' && s[i] <= '9' && d2 < 9)
        i++, d2++;
    return d2 > 0 && i == n;
}

/* A link type: 1..16 letters, digits or '_'. */
static bool type_ok(const char *s, size_t n)
{
    if (n == 0 || n > 16)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

/* link_info into o as [["src-dst","TYPE",cost_us,size_bytes,bandwidth_bytes_per_s],...]. */
static int put_links(struct sbuf *o, const struct fld *f, uint64_t line, struct msf_err *e)
{
    struct mj j;
    struct msf_err je;
    mj_init(&j, f->s, f->n);
    struct numv v = {0};
    int r = 0;
    bool first = true;
    sbuf_addc(o, '[');
    if (!mj_eat(&j, '{')) {
        r = mj_fail(&j, &je, "expected an object {\"src-dst\": {...}}");
        goto out;
    }
    if (mj_eat(&j, '}'))
        goto end;
    do {
        const char *sd, *ty;
        size_t nsd, nty;
        bool plain;
        if ((r = mj_string(&j, &sd, &nsd, &plain, &je)) < 0)
            goto out;
        if (!plain || !src_dst_ok(sd, nsd)) {
            r = mj_fail(&j, &je, "a link is named \"<src rank>-<dst rank>\"");
            goto out;
        }
        if (!mj_eat(&j, ':') || !mj_eat(&j, '{')) {
            r = mj_fail(&j, &je, "expected : and an object of link types");
            goto out;
        }
        if (mj_eat(&j, '}'))
            continue;
        do {
            if ((r = mj_string(&j, &ty, &nty, &plain, &je)) < 0)
                goto out;
            if (!plain || !type_ok(ty, nty)) {
                r = mj_fail(&j, &je, "a link type is 1 to 16 letters, digits or _");
                goto out;
            }
            if (!mj_eat(&j, ':')) {
                r = mj_fail(&j, &je, "expected :");
                goto out;
            }
            if ((r = mj_numbers(&j, &v, &je)) < 0)
                goto out;
            int64_t x[3];
            static const int shift[3] = {6, 3, 3}; /* ms -> ns, KB -> B, KB/s -> B/s */
            if (v.len != 3) {
                r = mj_fail(&j, &je, "expected [cost ms, size KB, bandwidth KB/s]");
                goto out;
            }
            for (int k = 0; k < 3; k++)
                if (dec_scaled(v.s[k], v.n[k], shift[k], &x[k]) < 0 || x[k] < 0) {
                        r = mj_fail(&j, &je, "cost, size and bandwidth are numbers >= 0");
                    goto out;
                }
            sbuf_printf(o, "%s[\"%.*s\",\"%.*s\",", first ? "" : ",", (int)nsd, sd, (int)nty,
                        ty);
            sbuf_json_us(o, x[0]);
            sbuf_printf(o, ",%lld,%lld]", (long long)x[1], (long long)x[2]);
            first = false;
        } while (mj_eat(&j, ','));
        if (!mj_eat(&j, '}')) {
            r = mj_fail(&j, &je, "expected , or }");
            goto out;
        }
    } while (mj_eat(&j, ','));
    if (!mj_eat(&j, '}')) {
        r = mj_fail(&j, &je, "expected , or }");
        goto out;
    }
end:
    r = mj_end(&j, &je);
out:
    numv_free(&v);
    sbuf_addc(o, ']');
    return r < 0 ? cell_fail(e, line, f, "link_info", &je) : 0;
}

int msf_feed_hccl(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    static const char *const need[] = {"step_num", "communication_cost", "wait_cost",
                                       "link_info", "communication_operator_cost", NULL};
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    int r = csv_table_open(&c, &h, &f, data, len, need, &nh, e);
    if (r < 0) {
        free(h);
        return r;
    }
    int col[5];
    for (int i = 0; i < 5; i++)
        col[i] = csv_col_find(h, nh, need[i]);
    struct sbuf steps, avg;
    sbuf_init(&steps, MSF_COMM_MAX);
    sbuf_init(&avg, MSF_COMM_MAX);
    bool have_avg = false;
    size_t n_steps = 0;
    int64_t prev = 0;
    while ((r = csv_table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        const struct fld *sf = &f[col[0]];
        int64_t step = 0, cost, wait;
        bool is_avg = fld_is(sf, "-");
        if (have_avg) {
            r = msf_fail(e, line, sf->col, -EINVAL,
                         "a row after the average row (step \"-\" is the last)");
            break;
        }
        if (!is_avg && (fld_count(sf, line, "step_num", &step, e) < 0 || step < 1 ||
                        step <= prev)) {
            r = msf_fail(e, line, sf->col, -EINVAL,
                         "step_num: an increasing step number from 1, or \"-\" (the average)");
            break;
        }
        if ((r = fld_num(&f[col[1]], line, 6, "communication_cost", &cost, e)) < 0 ||
            (r = fld_num(&f[col[2]], line, 6, "wait_cost", &wait, e)) < 0)
            break;
        if (cost < 0 || wait < 0) {
            r = msf_fail(e, line, f[col[cost < 0 ? 1 : 2]].col, -EINVAL, "%s: negative",
                         cost < 0 ? "communication_cost" : "wait_cost");
            break;
        }
        /* communication_operator_cost: checked, not carried */
        struct mj j;
        struct msf_err je;
        mj_init(&j, f[col[4]].s, f[col[4]].n);
        if (mj_skip(&j, &je) < 0 || mj_end(&j, &je) < 0) {
            r = cell_fail(e, line, &f[col[4]], "communication_operator_cost", &je);
            break;
        }
        struct sbuf *o = is_avg ? &avg : &steps;
        if (is_avg)
            sbuf_addc(o, '{');
        else
            sbuf_printf(o, "%s{\"step\":%lld,", n_steps ? "," : "", (long long)step);
        sbuf_adds(o, "\"communication_cost\":");
        sbuf_json_us(o, cost);
        sbuf_adds(o, ",\"wait_cost\":");
        sbuf_json_us(o, wait);
        sbuf_adds(o, ",\"links\":");
        if ((r = put_links(o, &f[col[3]], line, e)) < 0)
            break;
        sbuf_addc(o, '}');
        if (steps.error || avg.error) {
            r = msf_fail(e, line, 0, steps.error == -ENOMEM || avg.error == -ENOMEM ? -ENOMEM
                                                                                    : -EMSGSIZE,
                         "more than %u bytes of communication figures for the hello",
                         (unsigned)MSF_COMM_MAX);
            break;
        }
        if (is_avg) {
            have_avg = true;
        } else {
            prev = step;
            n_steps++;
        }
    }
    free(h);
    if (r == 0 && n_steps == 0)
        r = msf_fail(e, line, 0, -EINVAL, "no step rows");
    if (r == 0) {
        struct sbuf b;
        sbuf_init(&b, 2 * MSF_COMM_MAX + 64);
        sbuf_adds(&b, "{\"steps\":[");
        sbuf_add(&b, steps.data, steps.len);
        sbuf_adds(&b, "],\"average\":");
        if (have_avg)
            sbuf_add(&b, avg.data, avg.len);
        else
            sbuf_adds(&b, "null");
        sbuf_addc(&b, '}');
        free(m->comm_json);
        m->comm_json = b.error ? NULL : sbuf_steal(&b, NULL);
        if (!m->comm_json) {
            sbuf_done(&b);
            r = msf_fail(e, 0, 0, -ENOMEM, "out of memory");
        }
    }
    sbuf_done(&steps);
    sbuf_done(&avg);
    return r;
}

int msf_communication_json(const struct msf *m, char **ret)
{
    *ret = NULL;
    if (!m->comm_json)
        return 0;
    *ret = strdup(m->comm_json);
    return *ret ? 0 : -ENOMEM;
}
