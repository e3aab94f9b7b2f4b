/* SPDX-License-Identifier: MIT */
/*
 * flops_summary_<r>.json and memory_usage_summary_<r>.json: a rank's FLOPs totals and its
 * device-memory summary (MindInsight's cluster FLOPs and peak-memory heatmaps, docs/ANALYSIS.md
 * "Cluster FLOPs and memory"). Neither makes a record: both go into the hello's "summary" object
 * (msf_summary_json(), docs/PROTOCOL.md), their numbers exact to 1e-6 in MindSpore's units.
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_decimal.h"
#include "mindspore_json.h"
#include "sbuf.h"

/* The members of each file, by index into m->sum_v; FLOPs in M, FLOPS in G/s, memory in GB. */
static const char *const flops_keys[] = {"FLOPs",     "FLOPS",     "FLOPS_Utilization",
                                         "cube_FLOPs", "vec_FLOPs", "cube_FLOPS",
                                         "vec_FLOPS"};
static const char *const mem_keys[] = {"capacity", "peak_mem", "static_mem", "allocations",
                                       "deallocations"};
enum { F_FLOPS, F_FLOPS_S, F_UTIL, F_CUBE, F_VEC, F_CUBE_S, F_VEC_S, F_N = 7 };
enum { M_CAP, M_PEAK, M_STATIC, M_ALLOC, M_DEALLOC, M_N = 5 };

/* One flat object of numbers >= 0: keys[k]'s value (x 10^6) into v[k], has[k] set; other
 * members are checked and skipped; a member given twice is an error. */
static int read_object(const char *data, size_t len, const char *const *keys, size_t nk,
                       int64_t *v, bool *has, struct msf_err *e)
{
    struct mj j;
    mj_init(&j, data, len);
    const char *s;
    size_t n;
    bool plain;
    int r;
    if (!mj_eat(&j, '{'))
        return mj_fail(&j, e, "expected a JSON object");
    if (!mj_eat(&j, '}'))
        for (;;) {
            if ((r = mj_string(&j, &s, &n, &plain, e)) < 0)
                return r;
            if (!mj_eat(&j, ':'))
                return mj_fail(&j, e, "expected ':'");
            size_t k = 0;
            while (k < nk && !(strlen(keys[k]) == n && memcmp(keys[k], s, n) == 0))
                k++;
            if (k == nk) {
                if ((r = mj_skip(&j, e)) < 0)
                    return r;
            } else {
                if (has[k])
                    return mj_fail(&j, e, "a member given twice");
                const char *ns;
                size_t nn;
                if ((r = mj_number(&j, &ns, &nn, e)) < 0)
                    return r;
                if (dec_scaled(ns, nn, 6, &v[k]) < 0 || v[k] < 0) {
                    uint64_t l, c;
                    msf_pos_of(data, ns, &l, &c);
                    return msf_fail(e, l, c, -EINVAL, "%s: expected a number >= 0 below 9.2e12",
                                    keys[k]);
                }
                has[k] = true;
            }
            if (mj_eat(&j, '}'))
                break;
            if (!mj_eat(&j, ','))
                return mj_fail(&j, e, "expected ',' or '}'");
        }
    return mj_end(&j, e);
}

int msf_feed_flops_summary(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    int64_t v[F_N] = {0};
    bool has[F_N] = {false};
    int r = read_object(data, len, flops_keys, F_N, v, has, e);
    if (r < 0)
        return r;
    bool total = has[F_FLOPS] && has[F_FLOPS_S];
    bool split = has[F_CUBE] && has[F_VEC] && has[F_CUBE_S] && has[F_VEC_S];
    if (!total && !split)
        return msf_fail(e, 1, 1, -EINVAL,
                        "need FLOPs and FLOPS, or cube_FLOPs, vec_FLOPs, cube_FLOPS and "
                        "vec_FLOPS");
    if (!total && (v[F_CUBE] > INT64_MAX - v[F_VEC] || v[F_CUBE_S] > INT64_MAX - v[F_VEC_S]))
        return msf_fail(e, 1, 1, -EINVAL, "cube_ + vec_ figures too large");
    /* The cube_/vec_ variant: the totals are the sums (MindInsight's cluster FLOPs). */
    m->sum_flops[0] = total ? v[F_FLOPS] : v[F_CUBE] + v[F_VEC];
    m->sum_flops[1] = total ? v[F_FLOPS_S] : v[F_CUBE_S] + v[F_VEC_S];
    m->sum_flops[2] = has[F_UTIL] ? v[F_UTIL] : -1;
    m->have_sum_flops = true;
    return 0;
}

int msf_feed_memory_summary(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    int64_t v[M_N] = {0};
    bool has[M_N] = {false};
    int r = read_object(data, len, mem_keys, M_N, v, has, e);
    if (r < 0)
        return r;
    if (!has[M_CAP] || !has[M_PEAK])
        return msf_fail(e, 1, 1, -EINVAL, "need capacity and peak_mem");
    if (v[M_CAP] == 0)
        return msf_fail(e, 1, 1, -EINVAL, "capacity is 0");
    for (int k = 0; k < M_N; k++)
        m->sum_mem[k] = has[k] ? v[k] : -1;
    m->have_sum_mem = true;
    return 0;
}

int msf_summary_json(const struct msf *m, char **ret)
{
    *ret = NULL;
    if (!m->have_sum_flops && !m->have_sum_mem)
        return 0;
    static const char *const fn[3] = {"flops_m", "flops_per_second_g", "flops_utilization"};
    static const char *const mn[M_N] = {"capacity_gb", "peak_gb", "static_gb", "allocations",
                                        "deallocations"};
    struct sbuf b;
    sbuf_init(&b, 1u << 12);
    sbuf_addc(&b, '{');
    if (m->have_sum_flops) {
        sbuf_adds(&b, "\"flops\":{");
        for (int k = 0, first = 1; k < 3; k++)
            if (m->sum_flops[k] >= 0) {
                sbuf_printf(&b, "%s\"%s\":", first ? "" : ",", fn[k]);
                dec_put_e6(&b, m->sum_flops[k]);
                first = 0;
            }
        sbuf_addc(&b, '}');
    }
    if (m->have_sum_mem) {
        sbuf_adds(&b, m->have_sum_flops ? ",\"memory\":{" : "\"memory\":{");
        for (int k = 0, first = 1; k < M_N; k++)
            if (m->sum_mem[k] >= 0) {
                sbuf_printf(&b, "%s\"%s\":", first ? "" : ",", mn[k]);
                dec_put_e6(&b, m->sum_mem[k]);
                first = 0;
            }
        sbuf_addc(&b, '}');
    }
    sbuf_addc(&b, '}');
    if (b.error) {
        sbuf_done(&b);
        return -ENOMEM;
    }
    *ret = sbuf_steal(&b, NULL);
    return *ret ? 0 : -ENOMEM;
}
