/* SPDX-License-Identifier: MIT */
/*
 * MindSpore 2.x on the CPU: cpu_op_execute_timestamp_<r>.txt (one span per operator execution)
 * with the input shapes of cpu_framework_<r>.txt (fed before).
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_csv.h"
#include "mindspore_decimal.h"
#include "sbuf.h"

#define MSF_SHAPES_MAX 65536 /* ops of cpu_framework kept */

/* Whether v[0, n) is "[d, d, ...]" (or "[]"): digits separated by commas and blanks. */
static bool is_dims(const char *v, size_t n)
{
    if (n < 2 || v[0] != '[' || v[n - 1] != ']')
        return false;
    bool want_digit = true, any = false;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = v[i];
        if (csv_is_blank(c))
            continue;
        if (c >= '0' && c <= '9') {
            if (!want_digit && !(v[i - 1] >= '0' && v[i - 1] <= '9'))
                return false;
            want_digit = false;
            any = true;
        } else if (c == ',' && !want_digit) {
            want_digit = true;
        } else {
            return false;
        }
    }
    return !any || !want_digit;
}

/* One "input_<k>:[d, d, ...]" field as a JSON array of numbers into o, "input_<k>:NoShape" as []
 * and any other value (TupleShape(NoShape), ...) as the string it is. */
static void shape_json(struct sbuf *o, const char *f, size_t n)
{
    const char *c = memchr(f, ':', n);
    const char *v = c ? c + 1 : f, *end = f + n;
    size_t vn = (size_t)(end - v);
    if (vn == 7 && memcmp(v, "NoShape", 7) == 0) {
        sbuf_adds(o, "[]");
    } else if (is_dims(v, vn)) {
        sbuf_addc(o, '[');
        for (size_t i = 1; i + 1 < vn; i++)
            if (!csv_is_blank(v[i]))
                sbuf_addc(o, v[i]);
        sbuf_addc(o, ']');
    } else {
        sbuf_json_str(o, v, vn);
    }
}

/* cpu_framework_<r>.txt (MindSpore 2.x on the CPU): "type;name;graph;input_1:[d, ...];...;" per
 * execution, in the order they ran; ";;graph;" for one MindSpore did not name. Kept in order for
 * cpu_op_execute_timestamp (msf_feed_cpu_op_ts), whose spans get the shapes. */
int msf_feed_cpu_framework(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    char *p = data, *end = data + len;
    uint64_t line = 1;
    int r = 0;
    struct sbuf js;
    sbuf_init(&js, 1u << 20);
    while (p < end && r == 0) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        while (le > p && (le[-1] == '\r' || csv_is_blank(le[-1])))
            le--;
        char *s1 = le > p ? memchr(p, ';', (size_t)(le - p)) : NULL;
        char *s2 = s1 ? memchr(s1 + 1, ';', (size_t)(le - s1 - 1)) : NULL;
        char *s3 = s2 ? memchr(s2 + 1, ';', (size_t)(le - s2 - 1)) : NULL;
        if (le > p && !s3) {
            r = msf_fail(e, line, 1, -EINVAL, "expected \"type;name;graph;input_1:[...];...\"");
            break;
        }
        if (le > p) { /* one execution: an op, or ";;graph;" (an op MindSpore did not name) */
            js.len = 0;
            sbuf_addc(&js, '[');
            char *q = s3 + 1;
            bool first = true;
            while (q < le && r == 0) {
                char *fe = memchr(q, ';', (size_t)(le - q));
                if (!fe)
                    fe = le;
                if (fe > q) {
                    if (!first)
                        sbuf_addc(&js, ',');
                    first = false;
                    shape_json(&js, q, (size_t)(fe - q));
                }
                q = fe + 1;
            }
            sbuf_addc(&js, ']');
            if (r == 0 && js.error)
                r = msf_fail(e, line, 1, -ENOMEM, "out of memory");
            if (r == 0 && m->n_shp >= MSF_SHAPES_MAX)
                r = msf_fail(e, line, 1, -EMSGSIZE, "more than %d ops", MSF_SHAPES_MAX);
            if (r == 0 && util_grow((void **)&m->shp, &m->cap_shp, m->n_shp + 1, sizeof *m->shp) < 0)
                r = msf_fail(e, line, 1, -ENOMEM, "out of memory");
            if (r == 0) {
                struct shape_row *row = &m->shp[m->n_shp];
                row->name = strndup(s1 + 1, (size_t)(s2 - s1 - 1));
                row->json = strndup(js.data ? js.data : "[]", js.len);
                if (!row->name || !row->json) {
                    free(row->name);
                    free(row->json);
                    r = msf_fail(e, line, 1, -ENOMEM, "out of memory");
                } else {
                    m->n_shp++;
                }
            }
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    sbuf_done(&js);
    return r;
}

/* One execution of cpu_op_execute_timestamp, for matching cpu_framework's lines. */
struct cpu_exec {
    int64_t start;
    size_t order;            /* its place in the file */
    const char *name;        /* the op's full name (into the file's data) */
    size_t name_n;
};

static int cmp_exec(const void *a, const void *b)
{
    const struct cpu_exec *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Whether row is (or may be) the op full[0, n): its name is the last component of the full
 * name ("Default/Conv2D-op0": "Conv2D-op0"), or it has none. */
static bool shape_row_is(const struct shape_row *row, const char *full, size_t n)
{
    if (row->name[0] == '\0')
        return true;
    size_t b = n;
    while (b > 0 && full[b - 1] != '/')
        b--;
    return strlen(row->name) == n - b && memcmp(row->name, full + b, n - b) == 0;
}

/* cpu_op_execute_timestamp_<r>.txt: "full name;type;start_ns,dur_ms,tid start_ns,dur_ms,tid ..."
 * per op. Each execution becomes a span of that name on pid "CPU OP", tid = its thread.
 * cpu_framework_<r>.txt (fed before) has one line per execution, in the order they ran: when it
 * has as many lines as there are executions and each named line names the op that ran k-th,
 * the k-th execution gets that line's input shapes as args "Input Dims" (Kineto's name);
 * otherwise none does. Pass 0 lists the executions (ex), pass 1 writes them. */
static int cpu_op_pass(struct msf *m, char *data, size_t len, struct msf_err *e, int pass,
                       struct cpu_exec *ex, size_t *n_ex, const size_t *row_of)
{
    struct sbuf *o = &m->out;
    size_t k = 0;
    char *p = data, *end = data + len;
    uint64_t line = 1;
    int r;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        while (le > p && (le[-1] == '\r' || csv_is_blank(le[-1])))
            le--;
        if (le > p) {
            char *s1 = memchr(p, ';', (size_t)(le - p));
            char *s2 = s1 ? memchr(s1 + 1, ';', (size_t)(le - s1 - 1)) : NULL;
            if (!s2)
                return msf_fail(e, line, 1, -EINVAL, "expected \"name;type;start,dur,tid ...\"");
            if (s1 == p)
                return msf_fail(e, line, 1, -EINVAL, "empty op name");
            char *q = s2 + 1;
            while (q < le) {
                while (q < le && csv_is_blank(*q))
                    q++;
                if (q >= le)
                    break;
                char *te = q;
                while (te < le && !csv_is_blank(*te))
                    te++;
                struct fld t[3];
                size_t n = 0;
                for (char *a = q; n < 3;) {
                    char *c = memchr(a, ',', (size_t)(te - a));
                    char *fe = c ? c : te;
                    t[n].s = a;
                    t[n].n = (size_t)(fe - a);
                    t[n].col = (uint64_t)(a - p) + 1;
                    n++;
                    if (!c)
                        break;
                    a = c + 1;
                }
                if (n != 3 || t[2].s + t[2].n != te)
                    return msf_fail(e, line, (uint64_t)(q - p) + 1, -EINVAL,
                                    "expected start_ns,dur_ms,tid");
                int64_t st, du, tid;
                if ((r = fld_num(&t[0], line, 0, "start (ns)", &st, e)) < 0 ||
                    (r = fld_num(&t[1], line, 6, "duration (ms)", &du, e)) < 0 ||
                    (r = fld_count(&t[2], line, "thread id", &tid, e)) < 0)
                    return r;
                if (du < 0 || st < 0)
                    return msf_fail(e, line, t[0].col, -EINVAL, "negative start or duration");
                if (pass == 0) {
                    if (ex)
                        ex[k] = (struct cpu_exec){st, k, p, (size_t)(s1 - p)};
                    k++;
                    q = te;
                    continue;
                }
                const char *dims = row_of ? m->shp[row_of[k]].json : NULL;
                k++;
                if (m->cpu_op_n == 0 || st < m->cpu_op_min)
                    m->cpu_op_min = st;
                if (m->cpu_op_n == 0 || st > m->cpu_op_max)
                    m->cpu_op_max = st;
                m->cpu_op_n++;
                sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
                sbuf_json_str(o, p, (size_t)(s1 - p));
                sbuf_adds(o, ",\"ts\":");
                dec_put_us(o, st);
                sbuf_adds(o, ",\"dur\":");
                dec_put_us(o, du);
                sbuf_printf(o, ",\"pid\":\"CPU OP\",\"tid\":%lld,\"args\":{\"type\":",
                            (long long)tid);
                sbuf_json_str(o, s1 + 1, (size_t)(s2 - s1 - 1));
                if (dims && strcmp(dims, "[]") != 0) {
                    sbuf_adds(o, ",\"Input Dims\":");
                    sbuf_adds(o, dims);
                }
                sbuf_adds(o, "}}");
                if ((r = msf_line_done(m, e, line)) < 0)
                    return r;
                q = te;
            }
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    *n_ex = k;
    return 0;
}

int msf_feed_cpu_op_ts(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    size_t n = 0;
    int r = cpu_op_pass(m, data, len, e, 0, NULL, &n, NULL);
    if (r < 0 || m->n_shp == 0 || n != m->n_shp)
        return r < 0 ? r : cpu_op_pass(m, data, len, e, 1, NULL, &n, NULL);
    struct cpu_exec *ex = malloc(n * sizeof *ex);
    size_t *row_of = malloc(n * sizeof *row_of);
    if (!ex || !row_of) {
        free(ex);
        free(row_of);
        return msf_fail(e, 0, 0, -ENOMEM, "out of memory");
    }
    r = cpu_op_pass(m, data, len, e, 0, ex, &n, NULL);
    qsort(ex, n, sizeof *ex, cmp_exec);
    bool match = r == 0;
    for (size_t i = 0; match && i < n; i++) {
        match = shape_row_is(&m->shp[i], ex[i].name, ex[i].name_n);
        row_of[ex[i].order] = i;
    }
    if (r == 0)
        r = cpu_op_pass(m, data, len, e, 1, NULL, &n, match ? row_of : NULL);
    free(ex);
    free(row_of);
    return r;
}
