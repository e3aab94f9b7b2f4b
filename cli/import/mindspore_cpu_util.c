/* SPDX-License-Identifier: MIT */
/*
 * minddata_cpu_utilization_<r>.json: one host record per sample, and the CPU series of the
 * pipeline record (mindspore_minddata.c sends it).
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_decimal.h"
#include "mindspore_json.h"
#include "num.h"
#include "sbuf.h"

/* MindSpore's names of the series and the record's (PROTOCOL.md section 8, "cpu"). */
static const char *const cpu_dev_keys[] = {"user_utilization", "sys_utilization",
                                           "io_utilization", "idle_utilization",
                                           "runable_processes", "context_switch_count"};
static const char *const cpu_dev_names[] = {"user", "sys", "io", "idle", "runnable",
                                            "context_switch"};
enum { CPU_DEV_N = 6, CPU_IDLE = 3 };

static bool key_is(const char *k, size_t kn, const char *lit)
{
    return kn == strlen(lit) && memcmp(k, lit, kn) == 0;
}

/* ,"name":[v...] with every value checked (a number >= 0) and written exactly to 1e-6. */
static int put_series(struct sbuf *b, const char *name, const struct numv *v, struct msf_err *e)
{
    sbuf_printf(b, ",\"%s\":[", name);
    for (size_t i = 0; i < v->len; i++) {
        int64_t x;
        if (dec_scaled(v->s[i], v->n[i], 6, &x) < 0 || x < 0)
            return msf_fail(e, 0, 0, -EINVAL, "%s[%zu] is not a number >= 0", name, i);
        if (i)
            sbuf_addc(b, ',');
        dec_put_e6(b, x);
    }
    sbuf_addc(b, ']');
    return 0;
}

/* An object of arrays of numbers: the arrays whose key is in keys[0, nk) go to v[k], every
 * other value is skipped. */
static int read_series_object(struct mj *j, const char *const *keys, size_t nk, struct numv *v,
                              struct msf_err *e)
{
    const char *s;
    size_t n;
    bool pl;
    int r;
    if (!mj_eat(j, '{'))
        return mj_fail(j, e, "expected a JSON object");
    if (mj_eat(j, '}'))
        return 0;
    for (;;) {
        if ((r = mj_string(j, &s, &n, &pl, e)) < 0)
            return r;
        if (!mj_eat(j, ':'))
            return mj_fail(j, e, "expected ':'");
        size_t k = 0;
        while (k < nk && !key_is(s, n, keys[k]))
            k++;
        if ((r = k < nk ? mj_numbers(j, &v[k], e) : mj_skip(j, e)) < 0)
            return r;
        if (mj_eat(j, '}'))
            return 0;
        if (!mj_eat(j, ','))
            return mj_fail(j, e, "expected ',' or '}'");
    }
}

/* op_info: [{"op_id": N, "metrics": {"user_utilization": [...], "sys_utilization": [...]}}]:
 * each op's series become a pending ",\"cpu_user\":[...],\"cpu_sys\":[...]" (op_id -1, the
 * threads outside the pipeline, is left out, as MindInsight does). */
static int read_cpu_ops(struct msf *m, struct mj *j, struct msf_err *e)
{
    static const char *const keys[] = {"user_utilization", "sys_utilization"};
    struct numv v[2] = {{0}, {0}};
    struct sbuf b;
    sbuf_init(&b, m->out.max);
    int r = 0;
    if (!mj_eat(j, '[')) {
        r = mj_fail(j, e, "op_info: expected an array");
        goto out;
    }
    if (mj_eat(j, ']'))
        goto out;
    for (;;) {
        int64_t id = -1;
        bool have_id = false;
        v[0].len = v[1].len = 0;
        if (!mj_eat(j, '{')) {
            r = mj_fail(j, e, "op_info: expected an object");
            goto out;
        }
        if (!mj_eat(j, '}')) {
            for (;;) {
                const char *k, *ns;
                size_t kn, nn;
                bool pl;
                if ((r = mj_string(j, &k, &kn, &pl, e)) < 0)
                    goto out;
                if (!mj_eat(j, ':')) {
                    r = mj_fail(j, e, "expected ':'");
                    goto out;
                }
                if (key_is(k, kn, "op_id")) {
                    if ((r = mj_number(j, &ns, &nn, e)) < 0)
                        goto out;
                    if (num_parse_i64(ns, nn, &id) < 0 || id < -1) {
                        r = mj_fail(j, e, "op_id: expected an integer >= -1");
                        goto out;
                    }
                    have_id = true;
                } else if (key_is(k, kn, "metrics")) {
                    if ((r = read_series_object(j, keys, 2, v, e)) < 0)
                        goto out;
                } else if ((r = mj_skip(j, e)) < 0) {
                    goto out;
                }
                if (mj_eat(j, '}'))
                    break;
                if (!mj_eat(j, ',')) {
                    r = mj_fail(j, e, "expected ',' or '}'");
                    goto out;
                }
            }
        }
        if (have_id && id >= 0) {
            sbuf_reset(&b);
            if ((r = put_series(&b, "cpu_user", &v[0], e)) < 0 ||
                (r = put_series(&b, "cpu_sys", &v[1], e)) < 0 ||
                (r = msf_pend_add(&m->cops, &m->n_cops, &m->cap_cops, id, &b, 0, e)) < 0)
                goto out;
        }
        if (mj_eat(j, ']'))
            break;
        if (!mj_eat(j, ',')) {
            r = mj_fail(j, e, "expected ',' or ']'");
            goto out;
        }
    }
out:
    sbuf_done(&b);
    numv_free(&v[0]);
    numv_free(&v[1]);
    return r;
}

/* minddata_cpu_utilization_<r>.json -> one host record per sample: sys_cpu_percent = 100 - idle
 * (MindInsight's "active"), cpu_percent = the process's user + sys, which MindSpore gives as a
 * share of the whole machine, times cpu_processor_num (the protocol's "% of one core"); and the
 * series MindInsight's CPU view shows (system user, sys, io, idle, runnable processes, context
 * switches; process user, sys; user and sys per pipeline op) for the pipeline record of
 * msf_end(). */
int msf_feed_cpu_util(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    static const char *const proc_keys[] = {"user_utilization", "sys_utilization"};
    struct mj j;
    mj_init(&j, data, len);
    struct numv dev[CPU_DEV_N] = {{0}}, proc[2] = {{0}, {0}};
    int64_t ncpu = 0, interval = -1;
    struct sbuf cj;
    sbuf_init(&cj, m->out.max);
    int r = 0;
    if (!mj_eat(&j, '{')) {
        r = mj_fail(&j, e, "expected a JSON object");
        goto out;
    }
    if (mj_eat(&j, '}'))
        goto end;
    for (;;) {
        const char *k, *s;
        size_t kn, n;
        bool pl;
        if ((r = mj_string(&j, &k, &kn, &pl, e)) < 0)
            goto out;
        if (!mj_eat(&j, ':')) {
            r = mj_fail(&j, e, "expected ':'");
            goto out;
        }
        if (key_is(k, kn, "cpu_processor_num")) {
            if ((r = mj_number(&j, &s, &n, e)) < 0)
                goto out;
            if (num_parse_i64(s, n, &ncpu) < 0 || ncpu < 0 || ncpu > 1000000) {
                r = msf_fail(e, 0, 0, -EINVAL, "cpu_processor_num is not a count");
                goto out;
            }
        } else if (key_is(k, kn, "sampling_interval")) {
            if ((r = mj_number(&j, &s, &n, e)) < 0)
                goto out;
            if (dec_scaled(s, n, 6, &interval) < 0 || interval < 0) {
                r = msf_fail(e, 0, 0, -EINVAL, "sampling_interval is not a number >= 0");
                goto out;
            }
        } else if (key_is(k, kn, "device_info")) {
            if ((r = read_series_object(&j, cpu_dev_keys, CPU_DEV_N, dev, e)) < 0)
                goto out;
        } else if (key_is(k, kn, "process_info")) {
            if ((r = read_series_object(&j, proc_keys, 2, proc, e)) < 0)
                goto out;
        } else if (key_is(k, kn, "op_info")) {
            if ((r = read_cpu_ops(m, &j, e)) < 0)
                goto out;
        } else if ((r = mj_skip(&j, e)) < 0) {
            goto out;
        }
        if (mj_eat(&j, '}'))
            break;
        if (!mj_eat(&j, ',')) {
            r = mj_fail(&j, e, "expected ',' or '}'");
            goto out;
        }
    }
end:
    if ((r = mj_end(&j, e)) < 0)
        goto out;
    const struct numv *idle = &dev[CPU_IDLE], *puser = &proc[0], *psys = &proc[1];
    size_t ns = idle->len > puser->len ? idle->len : puser->len;
    for (size_t i = 0; i < ns; i++) {
        struct sbuf *o = &m->out;
        int64_t v, u = 0, sy = 0;
        sbuf_adds(o, "{\"type\":\"host\"");
        if (i < idle->len) {
            if (dec_scaled(idle->s[i], idle->n[i], 6, &v) < 0 || v < 0 || v > 100000000) {
                r = msf_fail(e, 0, 0, -EINVAL, "idle_utilization[%zu] is not a percentage", i);
                goto out;
            }
            sbuf_adds(o, ",\"sys_cpu_percent\":");
            sbuf_json_us(o, (100000000 - v) / 1000);
        }
        if (i < puser->len && i < psys->len && ncpu > 0) {
            if (dec_scaled(puser->s[i], puser->n[i], 6, &u) < 0 ||
                dec_scaled(psys->s[i], psys->n[i], 6, &sy) < 0 || u < 0 || sy < 0 ||
                u > 100000000 || sy > 100000000) {
                r = msf_fail(e, 0, 0, -EINVAL, "process utilization[%zu] is not a percentage", i);
                goto out;
            }
            sbuf_adds(o, ",\"cpu_percent\":");
            sbuf_json_us(o, (u + sy) * ncpu / 1000);
        }
        sbuf_printf(o, ",\"sample\":%zu}", i);
        if ((r = msf_line_done(m, e, 0)) < 0)
            goto out;
    }
    /* The "cpu" object of the pipeline record. */
    sbuf_adds(&cj, "{\"sampling_interval_ms\":");
    if (interval >= 0)
        dec_put_e6(&cj, interval);
    else
        sbuf_adds(&cj, "null");
    sbuf_printf(&cj, ",\"processors\":%lld", (long long)ncpu);
    for (size_t k = 0; k < CPU_DEV_N; k++)
        if ((r = put_series(&cj, cpu_dev_names[k], &dev[k], e)) < 0)
            goto out;
    if ((r = put_series(&cj, "process_user", &proc[0], e)) < 0 ||
        (r = put_series(&cj, "process_sys", &proc[1], e)) < 0)
        goto out;
    sbuf_addc(&cj, '}');
    if (cj.error) {
        r = msf_fail(e, 0, 0, cj.error == -ENOMEM ? -ENOMEM : -EMSGSIZE,
                     "the CPU series pass the %zu-byte limit or memory ran out", cj.max);
        goto out;
    }
    free(m->cpu_json);
    m->cpu_json = sbuf_steal(&cj, NULL);
    if (!m->cpu_json)
        r = msf_fail(e, 0, 0, -ENOMEM, "out of memory");
out:
    sbuf_done(&cj);
    for (size_t k = 0; k < CPU_DEV_N; k++)
        numv_free(&dev[k]);
    numv_free(&proc[0]);
    numv_free(&proc[1]);
    return r;
}
