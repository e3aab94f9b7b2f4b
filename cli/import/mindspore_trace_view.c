/* SPDX-License-Identifier: MIT */
/*
 * MindSpore 2.x's ASCEND_PROFILER_OUTPUT/trace_view.json: its events but the CPU operators
 * cpu_op_execute_timestamp gave (mindspore_cpu_ops.c), with ts and dur as numbers, aligned on
 * those operators' clock.
 */
#include "mindspore_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_decimal.h"
#include "mindspore_json.h"
#include "num.h"
#include "sbuf.h"

#define TV_PIDS_MAX 16 /* "CPU OP" and "Scope Layer" processes remembered, each */
#define TV_SCOPE_CAT "scope_layer" /* the cat given to the "Scope Layer" process's spans */

/* One member of an event object: its key and its value's raw text. */
struct tv_member {
    const char *k, *v;
    size_t kn, vn;
    bool str; /* the value is a string (v, vn: between the quotes) */
    bool plain;
};

/* Raw pid texts of the processes of one name. */
struct tv_pids {
    const char *pid[TV_PIDS_MAX];
    size_t pid_n[TV_PIDS_MAX], n;
};

struct tv {
    struct tv_pids cpu;               /* the "CPU OP" processes */
    struct tv_pids scope;             /* the "Scope Layer" processes */
    uint64_t n_ops;                   /* their X events, and their first and last ts (ns) */
    int64_t op_min, op_max;
    int64_t shift;                    /* subtracted from every ts sent */
};

static bool mem_is(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* A time member: a number, or a string holding one (MindSpore 2.x writes "12.345"). */
static int tv_time(const struct tv_member *mb, int64_t *ns)
{
    if (!mb || (mb->str && !mb->plain))
        return -EINVAL;
    return num_us_to_ns(mb->v, mb->vn, ns);
}

static bool tv_has_pid(const struct tv_pids *s, const struct tv_member *pid)
{
    for (size_t i = 0; pid && i < s->n; i++)
        if (s->pid_n[i] == pid->vn && memcmp(s->pid[i], pid->v, pid->vn) == 0)
            return true;
    return false;
}

static void tv_add_pid(struct tv_pids *s, const struct tv_member *pid)
{
    if (s->n < TV_PIDS_MAX && !tv_has_pid(s, pid)) {
        s->pid[s->n] = pid->v;
        s->pid_n[s->n++] = pid->vn;
    }
}

/* Whether the raw args object a[0, n) is {"name":<want>, ...}. */
static bool tv_args_named(const char *a, size_t n, const char *want)
{
    struct mj j;
    mj_init(&j, a, n);
    struct msf_err e;
    if (!mj_eat(&j, '{') || mj_eat(&j, '}'))
        return false;
    for (;;) {
        const char *k, *v;
        size_t kn, vn;
        bool pl;
        if (mj_string(&j, &k, &kn, &pl, &e) < 0 || !mj_eat(&j, ':'))
            return false;
        if (mem_is(k, kn, "name") && mj_peek(&j) == '"')
            return mj_string(&j, &v, &vn, &pl, &e) == 0 && mem_is(v, vn, want);
        if (mj_skip(&j, &e) < 0 || !mj_eat(&j, ','))
            return false;
    }
}

/* A raw value (object, array, number, literal) copied into the output line: a newline in it can
 * only be JSON whitespace (none is allowed raw inside a string), so it becomes a blank and the
 * event stays one line (libFuzzer: {"args": {"name"\n: "CPU OP"}} was cut in two). */
static void tv_add_raw(struct sbuf *o, const char *v, size_t n)
{
    const char *nl;
    while (n > 0 && (nl = memchr(v, '\n', n)) != NULL) {
        size_t k = (size_t)(nl - v);
        sbuf_add(o, v, k);
        sbuf_addc(o, ' ');
        v += k + 1;
        n -= k + 1;
    }
    sbuf_add(o, v, n);
}

/* One event of pass `pass` (1: find the "CPU OP" processes; 2: their executions' first and last
 * start; 3: write the others). */
static int tv_event(struct msf *m, struct tv *t, int pass, const struct tv_member *mb, size_t n,
                    const char *at, const char *base, struct msf_err *e)
{
    const struct tv_member *ph = NULL, *name = NULL, *pid = NULL, *ts = NULL, *dur = NULL,
                           *args = NULL, *cat = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct tv_member *x = &mb[i];
        const struct tv_member **slot = mem_is(x->k, x->kn, "ph")     ? &ph
                                        : mem_is(x->k, x->kn, "name") ? &name
                                        : mem_is(x->k, x->kn, "pid")  ? &pid
                                        : mem_is(x->k, x->kn, "ts")   ? &ts
                                        : mem_is(x->k, x->kn, "dur")  ? &dur
                                        : mem_is(x->k, x->kn, "args") ? &args
                                        : mem_is(x->k, x->kn, "cat")  ? &cat
                                                                      : NULL;
        if (slot && !*slot)
            *slot = x; /* the first occurrence counts, as in the daemon */
    }
    uint64_t line, col;
    if (!ph || !ph->str || ph->vn != 1 || !ph->plain) {
        msf_pos_of(base, at, &line, &col);
        return msf_fail(e, line, col, -EINVAL, "\"ph\" must be a one-letter string");
    }
    char p = ph->v[0];
    if (pass == 1) {
        if (p == 'M' && name && name->str && mem_is(name->v, name->vn, "process_name") && pid &&
            args) {
            if (tv_args_named(args->v, args->vn, "CPU OP"))
                tv_add_pid(&t->cpu, pid);
            else if (tv_args_named(args->v, args->vn, "Scope Layer"))
                tv_add_pid(&t->scope, pid);
        }
        return 0;
    }
    int64_t ts_ns = 0, dur_ns = 0;
    if ((p != 'M' && tv_time(ts, &ts_ns) < 0) ||
        (p == 'X' && (tv_time(dur, &dur_ns) < 0 || dur_ns < 0)) ||
        ((p == 'X' || p == 'M') && (!name || !name->str))) {
        msf_pos_of(base, at, &line, &col);
        return msf_fail(e, line, col, -EINVAL, "event (ph %c) without a %s", p,
                        (p != 'M' && tv_time(ts, &ts_ns) < 0) ? "time (\"ts\", a number or a decimal string)"
                        : (p == 'X' && (tv_time(dur, &dur_ns) < 0 || dur_ns < 0)) ? "duration >= 0 (\"dur\")"
                                                                              : "string \"name\"");
    }
    bool cpu = tv_has_pid(&t->cpu, pid);
    if (pass == 2) {
        if (cpu && p == 'X') {
            if (t->n_ops == 0 || ts_ns < t->op_min)
                t->op_min = ts_ns;
            if (t->n_ops == 0 || ts_ns > t->op_max)
                t->op_max = ts_ns;
            t->n_ops++;
        }
        return 0;
    }
    if (cpu && m->cpu_op_n > 0)
        return 0; /* cpu_op_execute_timestamp gave these executions already */
    /* A span of the "Scope Layer" process is a level of the network's scope hierarchy, not an
     * operator: MindSpore gives it no cat, its process name says what it is; the cat says it to
     * the daemon (role scope). */
    bool scope = p != 'M' && tv_has_pid(&t->scope, pid);
    struct sbuf *o = &m->out;
    sbuf_addc(o, '{');
    if (scope && !cat)
        sbuf_adds(o, "\"cat\":\"" TV_SCOPE_CAT "\"");
    for (size_t i = 0; i < n; i++) {
        const struct tv_member *x = &mb[i];
        if (i || (scope && !cat))
            sbuf_addc(o, ',');
        sbuf_addc(o, '"');
        sbuf_add(o, x->k, x->kn);
        sbuf_adds(o, "\":");
        if (x == cat && scope) {
            sbuf_adds(o, "\"" TV_SCOPE_CAT "\"");
        } else if (x == ts) {
            dec_put_us(o, ts_ns - t->shift);
        } else if (x == dur && p == 'X') {
            dec_put_us(o, dur_ns);
        } else if (x->str) {
            sbuf_addc(o, '"');
            sbuf_add(o, x->v, x->vn);
            sbuf_addc(o, '"');
        } else {
            tv_add_raw(o, x->v, x->vn);
        }
    }
    sbuf_addc(o, '}');
    msf_pos_of(base, at, &line, &col);
    return msf_line_done(m, e, line);
}

/* One pass over the event array. */
static int tv_pass(struct msf *m, struct tv *t, int pass, char *data, size_t len,
                   struct msf_err *e)
{
    struct mj j;
    mj_init(&j, data, len);
    struct tv_member mb[64];
    int r;
    if (!mj_eat(&j, '['))
        return mj_fail(&j, e, "expected a JSON array of events");
    if (mj_eat(&j, ']'))
        return mj_end(&j, e);
    for (;;) {
        const char *at = mj_here(&j);
        size_t n = 0;
        if (!mj_eat(&j, '{'))
            return mj_fail(&j, e, "expected an event object");
        if (!mj_eat(&j, '}')) {
            for (;;) {
                struct tv_member *x = &mb[n < 64 ? n : 63];
                if (n >= 64)
                    return mj_fail(&j, e, "an event with more than 64 members");
                if ((r = mj_string(&j, &x->k, &x->kn, &x->plain, e)) < 0)
                    return r;
                if (!mj_eat(&j, ':'))
                    return mj_fail(&j, e, "expected ':'");
                x->str = mj_peek(&j) == '"';
                if (x->str) {
                    if ((r = mj_string(&j, &x->v, &x->vn, &x->plain, e)) < 0)
                        return r;
                } else {
                    x->plain = true;
                    if ((r = mj_value_raw(&j, &x->v, &x->vn, e)) < 0)
                        return r;
                }
                n++;
                if (mj_eat(&j, '}'))
                    break;
                if (!mj_eat(&j, ','))
                    return mj_fail(&j, e, "expected ',' or '}'");
            }
        }
        if ((r = tv_event(m, t, pass, mb, n, at, data, e)) < 0)
            return r;
        if (mj_eat(&j, ']'))
            break;
        if (!mj_eat(&j, ','))
            return mj_fail(&j, e, "expected ',' or ']'");
    }
    return mj_end(&j, e);
}

/* ASCEND_PROFILER_OUTPUT/trace_view.json: MindSpore 2.x's timeline (a Chrome-trace array whose
 * ts and dur are decimal strings). Its "CPU OP" process holds the executions
 * cpu_op_execute_timestamp_<r>.txt gave (fed before): those are not sent again; every other
 * event (the "Scope Layer" spans and their metadata) is, with ts and dur as numbers. MindSpore
 * writes trace_view's times on a clock a few ns off the timestamp file's: when both hold the same
 * number of executions and the first and last starts differ by the same amount, every ts is
 * moved by it, so the spans line up with the operators. */
int msf_feed_trace_view(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct tv t;
    memset(&t, 0, sizeof t);
    int r;
    for (int pass = 1; pass <= 3; pass++) {
        if ((r = tv_pass(m, &t, pass, data, len, e)) < 0)
            return r;
        if (pass == 2 && m->cpu_op_n > 0 && t.n_ops == m->cpu_op_n &&
            t.op_min - m->cpu_op_min == t.op_max - m->cpu_op_max)
            t.shift = t.op_min - m->cpu_op_min;
    }
    return 0;
}
