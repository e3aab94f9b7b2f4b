/* SPDX-License-Identifier: MIT */
/*
 * pdtrace: Paddle chrome-trace times to the ns and names without their duration suffix
 * (contract in pdtrace.h).
 */
#include "paddle_times.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"

#define PDTRACE_DIGITS_MAX 18     /* whole digits of an offset: no int64 overflow before scaling */
#define PDTRACE_TS_GROWTH_MAX 24  /* "-4611686018427387.903": a rebuilt ts is never longer */

void pdtrace_init(struct pdtrace *p)
{
    memset(p, 0, sizeof *p);
}

static int64_t unit_ns(const char *u, size_t n, int *ret_digits)
{
    static const struct {
        const char *name;
        int64_t ns;
        int digits;
    } units[] = {{"ns", 1, 0}, {"us", 1000, 3}, {"ms", 1000000, 6}, {"s", 1000000000, 9}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i].name) == n && memcmp(units[i].name, u, n) == 0) {
            *ret_digits = units[i].digits;
            return units[i].ns;
        }
    return 0;
}

bool pdtrace_offset_ns(const char *raw, int64_t *ret_ns)
{
    size_t n = strlen(raw);
    if (n < 4 || raw[0] != '"' || raw[n - 1] != '"')
        return false;
    const char *p = raw + 1, *end = raw + n - 1;
    bool neg = *p == '-';
    if (neg)
        p++;
    const char *w = p;
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    size_t nw = (size_t)(p - w);
    const char *f = p, *fe = p;
    if (p < end && *p == '.') {
        f = ++p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        fe = p;
    }
    if (nw == 0 || nw > PDTRACE_DIGITS_MAX || p >= end || *p != ' ')
        return false;
    int digits;
    int64_t scale = unit_ns(p + 1, (size_t)(end - p - 1), &digits);
    if (scale == 0)
        return false;
    int64_t whole = 0, frac = 0;
    for (const char *q = w; q < w + nw; q++)
        whole = whole * 10 + (*q - '0');
    if (whole > INT64_MAX / scale)
        return false;
    for (int i = 0; i < digits; i++)
        frac = frac * 10 + (f + i < fe ? f[i] - '0' : 0);
    if (whole * scale > INT64_MAX - frac)
        return false;
    int64_t v = whole * scale + frac;
    *ret_ns = neg ? -v : v;
    return true;
}

int64_t pdtrace_slack_ns(int64_t off)
{
    /* A float's 24-bit mantissa rounds twice (the ns to float, the quotient by 1000), each by at
     * most off / 2^24 ns; %.3f then rounds to the ns. Below 2^23 ns neither rounding reaches half
     * a ns, so the printed offset is exact. */
    uint64_t a = off < 0 ? (uint64_t)0 - (uint64_t)off : (uint64_t)off;
    return a < (1u << 23) ? 0 : (int64_t)((a + (1u << 22)) >> 23);
}

void pdtrace_note(struct pdtrace *p, const char *ev, size_t len, const struct tscan_event *info)
{
    int64_t off, ts;
    if (!info->start_time[0] || !info->ts_len || info->ts_at < info->start ||
        info->ts_at - info->start + info->ts_len > len)
        return;
    if (!pdtrace_offset_ns(info->start_time, &off) ||
        num_us_to_ns(ev + (info->ts_at - info->start), info->ts_len, &ts) < 0)
        return;
    /* tscan keeps ts inside (NUM_TIME_MIN_NS, NUM_TIME_MAX_NS); an offset that far out makes
     * the file inconsistent, not an overflow. */
    int64_t d, slack = pdtrace_slack_ns(off), dlo, dhi;
    if (__builtin_sub_overflow(ts, off, &d) || __builtin_sub_overflow(d, slack, &dhi) ||
        __builtin_add_overflow(d, slack, &dlo)) {
        p->lo = INT64_MIN;
        p->hi = INT64_MAX;
        p->n++;
        return;
    }
    if (p->n == 0 || dlo < p->lo)
        p->lo = dlo;
    if (p->n == 0 || dhi > p->hi)
        p->hi = dhi;
    p->n++;
}

void pdtrace_merge(struct pdtrace *a, const struct pdtrace *b)
{
    if (b->n == 0)
        return;
    if (a->n == 0 || b->lo < a->lo)
        a->lo = b->lo;
    if (a->n == 0 || b->hi > a->hi)
        a->hi = b->hi;
    a->n += b->n;
}

void pdtrace_finish(struct pdtrace *p)
{
    /* Truncation to whole µs puts each ts - start_time below the window's start by 0 to 999 ns
     * (each known to within its offset's slack): a start exists for all of them unless the
     * largest lower bound exceeds the smallest upper bound by 1000 ns or more. */
    p->exact = p->n > 0 && (p->hi <= p->lo || (uint64_t)p->hi - (uint64_t)p->lo < 1000);
}

size_t pdtrace_name_keep(const char *raw, size_t len)
{
    if (len < 2 || raw[len - 1] != '"' || raw[len - 2] != ']')
        return len ? len - 1 : 0;
    size_t close = len - 2, lb = close;
    while (lb > 1 && raw[lb - 1] != '[')
        lb--;
    if (lb <= 1)
        return len - 1;
    lb--; /* raw[lb] is the last '[' (raw[0] is the opening quote) */
    size_t i = lb + 1;
    if (raw[i] == '-')
        i++;
    size_t d0 = i;
    while (i < close && ((raw[i] >= '0' && raw[i] <= '9') || raw[i] == '.'))
        i++;
    if (i == d0)
        return len - 1;
    if (i < close && raw[i] == ' ')
        i++;
    int digits;
    if (unit_ns(raw + i, close - i, &digits) == 0)
        return len - 1;
    return lb;
}

int64_t pdtrace_rewrite(const struct pdtrace *p, const char *ev, size_t len,
                        const struct tscan_event *info, struct sbuf *out)
{
    /* The two spans replaced, in the order they appear in the event. */
    struct cut {
        size_t at, len;
        int what; /* 0: ts, 1: name */
    } cut[2];
    int n = 0;
    int64_t off, ns = 0, ts;
    if (p->exact && info->start_time[0] && info->ts_len && pdtrace_offset_ns(info->start_time, &off) &&
        !__builtin_add_overflow(p->hi, off, &ns) && ns > NUM_TIME_MIN_NS && ns < NUM_TIME_MAX_NS &&
        len + PDTRACE_TS_GROWTH_MAX <= TSCAN_EVENT_BYTES_MAX && info->ts_at >= info->start &&
        info->ts_at - info->start + info->ts_len <= len &&
        num_us_to_ns(ev + (info->ts_at - info->start), info->ts_len, &ts) == 0) {
        /* a ts truncated to the µs bounds the start to [ts, ts + 999] where an offset's slack
         * reaches out of it */
        if (ts % 1000 == 0 && ns < ts)
            ns = ts;
        else if (ts % 1000 == 0 && ns - ts > 999)
            ns = ts + 999;
        cut[n++] = (struct cut){(size_t)(info->ts_at - info->start), info->ts_len, 0};
    } else if (!info->ts_len || info->ts_at < info->start ||
               info->ts_at - info->start + info->ts_len > len ||
               num_us_to_ns(ev + (info->ts_at - info->start), info->ts_len, &ns) < 0) {
        ns = INT64_MIN;
    }
    if (info->name_len && info->name_at >= info->start &&
        info->name_at - info->start + info->name_len <= len) {
        size_t at = (size_t)(info->name_at - info->start);
        if (pdtrace_name_keep(ev + at, info->name_len) + 1 < info->name_len)
            cut[n++] = (struct cut){at, info->name_len, 1};
    }
    if (n == 2 && cut[1].at < cut[0].at) {
        struct cut t = cut[0];
        cut[0] = cut[1];
        cut[1] = t;
    }
    size_t pos = 0;
    for (int i = 0; i < n; i++) {
        sbuf_add(out, ev + pos, cut[i].at - pos);
        if (cut[i].what == 0) {
            sbuf_json_us(out, ns);
        } else {
            sbuf_add(out, ev + cut[i].at, pdtrace_name_keep(ev + cut[i].at, cut[i].len));
            sbuf_addc(out, '"');
        }
        pos = cut[i].at + cut[i].len;
    }
    sbuf_add(out, ev + pos, len - pos);
    return ns;
}

void pdtrace_walk_init(struct pdtrace_walk *w)
{
    memset(w, 0, sizeof *w);
}

void pdtrace_walk_free(struct pdtrace_walk *w)
{
    for (size_t i = 0; i < w->n; i++)
        sbuf_done(&w->own[i].name);
    free(w->own);
    memset(w, 0, sizeof *w);
}

/* The leading integer of a raw pid/tid ("8703" of "\"8703(C++)\""), or -1. */
static int64_t thread_num(const char *raw)
{
    const char *p = raw[0] == '"' ? raw + 1 : raw;
    int64_t v = 0;
    int d = 0;
    while (*p >= '0' && *p <= '9' && d < 18) {
        v = v * 10 + (*p++ - '0');
        d++;
    }
    return d ? v : -1;
}

/* Paddle's host event types: the cats of events that are neither device work nor runtime calls. */
static bool host_cat(const char *cat)
{
    static const char *const not_host[] = {"\"CudaRuntime\"", "\"Kernel\"", "\"Memcpy\"",
                                           "\"Memset\"", "\"MluRuntime\""};
    if (!cat[0])
        return false;
    for (size_t i = 0; i < sizeof not_host / sizeof not_host[0]; i++)
        if (strcmp(cat, not_host[i]) == 0)
            return false;
    return true;
}

int pdtrace_walk_event(struct pdtrace_walk *w, const char *ev, size_t evlen, const char *line,
                       size_t len, int64_t ts_ns, const struct tscan_event *info, struct sbuf *out)
{
    int64_t tid = thread_num(info->tid);
    if (info->ph == 'X' && ts_ns != INT64_MIN && tid >= 0 && host_cat(info->cat) &&
        info->name_len) {
        struct pdtrace_owner *o = NULL;
        for (size_t i = 0; i < w->n && !o; i++)
            if (w->own[i].tid == tid)
                o = &w->own[i];
        if (!o) {
            if (w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 8;
                struct pdtrace_owner *v = realloc(w->own, cap * sizeof *v);
                if (!v)
                    return -ENOMEM;
                w->own = v;
                w->cap = cap;
            }
            o = &w->own[w->n++];
            o->tid = tid;
            sbuf_init(&o->name, TSCAN_EVENT_BYTES_MAX);
        }
        /* the name as sent: the event's own without Paddle's suffix */
        sbuf_reset(&o->name);
        if (info->name_at < info->start || info->name_at - info->start + info->name_len > evlen ||
            ev[info->name_at - info->start] != '"') {
            o->tid = -1; /* not understood: no owner for its events */
        } else {
            const char *nm = ev + (info->name_at - info->start);
            sbuf_add(&o->name, nm, pdtrace_name_keep(nm, info->name_len));
            sbuf_addc(&o->name, '"');
            if (o->name.error)
                return -ENOMEM;
        }
        o->ts_ns = ts_ns;
        int64_t end = ts_ns + (info->dur_ns > 0 && info->dur_ns < INT64_MAX - ts_ns ? info->dur_ns : 0);
        if (!w->any || ts_ns < w->first_ns)
            w->first_ns = ts_ns;
        if (!w->any || end > w->end_ns)
            w->end_ns = end;
        if (!w->any)
            snprintf(w->pid, sizeof w->pid, "%s", info->pid);
        w->any = true;
    } else if ((info->ph == 'i' || info->ph == 'I') && strcmp(info->name, "\"[memory]\"") == 0 &&
               tid >= 0 && len > 2 && line[0] == '{') {
        for (size_t i = 0; i < w->n; i++) {
            const struct pdtrace_owner *o = &w->own[i];
            if (o->tid != tid)
                continue;
            if (len + o->name.len + 48 > TSCAN_EVENT_BYTES_MAX)
                break; /* past the daemon's line limit with its owner: sent without one */
            sbuf_adds(out, "{\"owner\":");
            sbuf_add(out, o->name.data, o->name.len);
            sbuf_adds(out, ",\"owner_ts\":");
            sbuf_json_us(out, o->ts_ns);
            if (line[1] != '}')
                sbuf_addc(out, ',');
            sbuf_add(out, line + 1, len - 1);
            return out->error ? -ENOMEM : 0;
        }
    }
    sbuf_add(out, line, len);
    return out->error ? -ENOMEM : 0;
}

bool pdtrace_extra_line(const struct pdtrace_walk *w, const struct tscan_meta *m, struct sbuf *out)
{
    if (!w->any || (!m->extra_process_cpu[0] && !m->extra_system_cpu[0]))
        return false;
    sbuf_adds(out, "{\"ph\":\"M\",\"name\":\"ExtraInfo\",\"pid\":");
    sbuf_adds(out, w->pid[0] ? w->pid : "0");
    sbuf_adds(out, ",\"tid\":0,\"ts\":");
    sbuf_json_us(out, w->first_ns);
    sbuf_adds(out, ",\"dur\":");
    sbuf_json_us(out, w->end_ns - w->first_ns);
    sbuf_adds(out, ",\"args\":{");
    bool comma = false;
    if (m->extra_process_cpu[0]) {
        sbuf_adds(out, "\"Process Cpu Utilization\":");
        sbuf_adds(out, m->extra_process_cpu);
        comma = true;
    }
    if (m->extra_system_cpu[0]) {
        if (comma)
            sbuf_addc(out, ',');
        sbuf_adds(out, "\"System Cpu Utilization\":");
        sbuf_adds(out, m->extra_system_cpu);
    }
    sbuf_adds(out, "}}\n");
    return true;
}
