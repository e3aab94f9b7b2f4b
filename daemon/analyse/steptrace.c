/* SPDX-License-Identifier: MIT */
/*
 * Step trace: MindInsight's split of a training step into step interval, forward+backward and
 * step tail, with one "reduce line" per communication stream, plus the derivation of the FP/BP
 * points from spans for frameworks that do not write Ascend step points. It sits between the
 * store (which hands over the step points or the spans of a step) and the web routes
 * (step-trace, steps), and does no I/O.
 *
 * Every step and every average goes through one builder (build_trace) that works on points
 * relative to the step's start, so a single step and a mean over steps give the same shape and
 * the stages always sum to the total. MindInsight computes in milliseconds rounded to 4 places
 * before subtracting; we subtract exact nanoseconds and leave rounding to the API edge
 * (docs/ANALYSIS.md lists the differences).
 */
#include "analyse_steptrace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const analyse_st_origin_names[ANALYSE_ST_ORIGIN_COUNT] = {
    "none",          "after_data",    "first_op",      "before_comm",
    "last_op",       "env_stepscope", "env_profiling", "env_mindspore",
    "config",
};

/* A comm op relative to its step's start, as the builder and the averaging see it. */
struct rel_event {
    int64_t stream;
    const char *name;
    size_t name_len;
    int64_t start_rel;
    int64_t end_rel;
    size_t seq;        /* original order: ties keep it, as Python's stable sort does */
    size_t occ;        /* n-th op with this (stream, name) in its step */
    size_t stream_key; /* order of the stream's first appearance */
};

static int64_t resolve_start(const struct analyse_st_step *steps, size_t i)
{
    if (steps[i].start_ns != ANALYSE_ST_UNSET)
        return steps[i].start_ns;
    return i > 0 ? steps[i - 1].end_ns : steps[i].fp_ns;
}

static void fill_stage(const struct analyse_st_step *steps, size_t i, bool inference,
                       struct analyse_st_stage *row)
{
    const struct analyse_st_step *s = &steps[i];
    int64_t start = resolve_start(steps, i);
    row->step = s->step;
    row->rank = s->rank;
    row->start_ns = start;
    row->total_ns = s->end_ns - start;
    row->interval_ns = s->fp_ns - start;
    if (inference) {
        row->fp_bp_ns = 0;
        row->tail_ns = 0;
    } else {
        row->fp_bp_ns = s->bp_ns - s->fp_ns;
        row->tail_ns = s->end_ns - s->bp_ns;
    }
    row->fp_ns = s->end_ns - s->fp_ns;
}

int analyse_steptrace_stages(const struct analyse_st_step *steps, size_t n, bool inference,
                             struct analyse_st_stage *rows)
{
    if (n > 0 && (!steps || !rows))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        fill_stage(steps, i, inference, &rows[i]);
    return 0;
}

void analyse_steptrace_free(struct analyse_st_trace *trace)
{
    if (!trace)
        return;
    for (size_t i = 0; i < trace->n_lines; i++)
        free(trace->lines[i].seg);
    free(trace->lines);
    free(trace);
}

static int cmp_name(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t m = alen < blen ? alen : blen;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c;
    return (alen > blen) - (alen < blen);
}

static int cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int cmp_size(size_t a, size_t b)
{
    return (a > b) - (a < b);
}

/* Stream first, then original order: used to find each stream's first appearance. */
static int cmp_stream_seq(const void *pa, const void *pb)
{
    const struct rel_event *a = pa, *b = pb;
    int c = cmp_i64(a->stream, b->stream);
    return c ? c : cmp_size(a->seq, b->seq);
}

/* The reduce-line order: streams by first appearance, then by end point, ties by input order
 * (MindInsight: dict insertion order of the streams, list.sort(key=end)). */
static int cmp_line_order(const void *pa, const void *pb)
{
    const struct rel_event *a = pa, *b = pb;
    int c = cmp_size(a->stream_key, b->stream_key);
    if (c)
        return c;
    c = cmp_i64(a->end_rel, b->end_rel);
    return c ? c : cmp_size(a->seq, b->seq);
}

/* The matching key of the average: (stream, name, occurrence), then original order. */
static int cmp_key(const void *pa, const void *pb)
{
    const struct rel_event *a = pa, *b = pb;
    int c = cmp_i64(a->stream, b->stream);
    if (c)
        return c;
    c = cmp_name(a->name, a->name_len, b->name, b->name_len);
    if (c)
        return c;
    c = cmp_size(a->occ, b->occ);
    return c ? c : cmp_size(a->seq, b->seq);
}

/* Within one step: (stream, name, start) so that occurrences are numbered in time order. */
static int cmp_occ(const void *pa, const void *pb)
{
    const struct rel_event *a = pa, *b = pb;
    int c = cmp_i64(a->stream, b->stream);
    if (c)
        return c;
    c = cmp_name(a->name, a->name_len, b->name, b->name_len);
    if (c)
        return c;
    c = cmp_i64(a->start_rel, b->start_rel);
    return c ? c : cmp_size(a->seq, b->seq);
}

/* qsort() with NULL is undefined even for 0 elements. */
static void sort_events(struct rel_event *ev, size_t n, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(ev, n, sizeof *ev, cmp);
}

static bool same_key(const struct rel_event *a, const struct rel_event *b)
{
    return a->stream == b->stream && a->occ == b->occ &&
           cmp_name(a->name, a->name_len, b->name, b->name_len) == 0;
}

static double pct(int64_t part, int64_t total)
{
    return total ? 100.0 * (double)part / (double)total : 0.0;
}

/* Builds a trace from relative points and events (ev is reordered). Returns NULL on OOM. */
static struct analyse_st_trace *build_trace(int64_t fp_rel, int64_t bp_rel, int64_t end_rel,
                                            bool inference, struct rel_event *ev, size_t n_ev)
{
    struct analyse_st_trace *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->inference = inference;
    t->total_ns = end_rel;
    t->interval_ns = fp_rel;
    t->fp_rel_ns = fp_rel;
    t->fp_ns = end_rel - fp_rel;
    if (!inference) {
        t->bp_rel_ns = bp_rel;
        t->fp_bp_ns = bp_rel - fp_rel;
        t->tail_ns = end_rel - bp_rel;
    }
    t->interval_pct = pct(t->interval_ns, t->total_ns);
    t->fp_bp_pct = pct(t->fp_bp_ns, t->total_ns);
    t->tail_pct = pct(t->tail_ns, t->total_ns);
    t->fp_pct = pct(t->fp_ns, t->total_ns);
    if (n_ev == 0)
        return t;

    /* Number the streams by first appearance, then put the events in line order. */
    sort_events(ev, n_ev, cmp_stream_seq);
    size_t n_lines = 0;
    for (size_t i = 0; i < n_ev; i++) {
        if (i == 0 || ev[i].stream != ev[i - 1].stream)
            n_lines++;
        ev[i].stream_key = ev[i].seq; /* the run's first element has the smallest seq */
        if (i > 0 && ev[i].stream == ev[i - 1].stream)
            ev[i].stream_key = ev[i - 1].stream_key;
    }
    sort_events(ev, n_ev, cmp_line_order);

    t->lines = calloc(n_lines, sizeof *t->lines);
    if (!t->lines)
        goto fail;
    size_t i = 0;
    for (size_t l = 0; l < n_lines; l++) {
        size_t j = i;
        while (j < n_ev && ev[j].stream == ev[i].stream)
            j++;
        size_t n_seg = 2 * (j - i) + 1;
        struct analyse_st_line *line = &t->lines[l];
        line->stream = ev[i].stream;
        line->seg = calloc(n_seg, sizeof *line->seg);
        if (!line->seg)
            goto fail;
        t->n_lines = l + 1;
        /* MindInsight's _construct_reduce_line: a gap from the previous end (fp first), then
         * the op; a final gap to the step's end. */
        int64_t prev = fp_rel;
        size_t k = 0;
        for (size_t e = i; e < j; e++) {
            line->seg[k++] = (struct analyse_st_seg){NULL, 0, prev, ev[e].start_rel - prev};
            line->seg[k++] = (struct analyse_st_seg){ev[e].name, ev[e].name_len, ev[e].start_rel,
                                                     ev[e].end_rel - ev[e].start_rel};
            prev = ev[e].end_rel;
        }
        line->seg[k++] = (struct analyse_st_seg){NULL, 0, prev, end_rel - prev};
        line->n_seg = k;
        i = j;
    }
    return t;
fail:
    analyse_steptrace_free(t);
    return NULL;
}

static bool is_ordered(int64_t start, const struct analyse_st_step *s, bool inference)
{
    if (inference)
        return start <= s->fp_ns && s->fp_ns <= s->end_ns;
    return start <= s->fp_ns && s->fp_ns <= s->bp_ns && s->bp_ns <= s->end_ns;
}

/* Appends the valid comm ops of steps[i] to ev (room for n_comm), relative to start. */
static size_t collect_events(const struct analyse_st_step *s, int64_t start, size_t seq_base,
                             struct rel_event *ev, size_t *n_skipped)
{
    size_t m = 0;
    for (size_t k = 0; k < s->n_comm; k++) {
        const struct analyse_st_comm *c = &s->comm[k];
        if (c->end_ns <= c->start_ns) {
            (*n_skipped)++;
            continue;
        }
        ev[m++] = (struct rel_event){.stream = c->stream,
                                     .name = c->name,
                                     .name_len = c->name_len,
                                     .start_rel = c->start_ns - start,
                                     .end_rel = c->end_ns - start,
                                     .seq = seq_base + k};
    }
    return m;
}

int analyse_steptrace_step(const struct analyse_st_step *steps, size_t n, int64_t step,
                           bool inference, struct analyse_st_trace **ret_trace)
{
    if (!steps || !ret_trace)
        return -EINVAL;
    size_t i = 0;
    while (i < n && steps[i].step != step)
        i++;
    if (i == n)
        return -ENOENT;
    const struct analyse_st_step *s = &steps[i];
    if (s->n_comm > 0 && !s->comm)
        return -EINVAL;
    int64_t start = resolve_start(steps, i);
    struct rel_event *ev = NULL;
    if (s->n_comm > 0) {
        ev = calloc(s->n_comm, sizeof *ev);
        if (!ev)
            return -ENOMEM;
    }
    size_t skipped = 0;
    size_t n_ev = collect_events(s, start, 0, ev, &skipped);
    struct analyse_st_trace *t = build_trace(s->fp_ns - start, s->bp_ns - start,
                                             s->end_ns - start, inference, ev, n_ev);
    free(ev);
    if (!t)
        return -ENOMEM;
    t->step = s->step;
    t->rank = s->rank;
    t->first_step = t->last_step = s->step;
    t->n_steps = 1;
    t->start_ns = start;
    t->ordered = is_ordered(start, s, inference);
    t->n_comm_skipped = skipped;
    *ret_trace = t;
    return 0;
}

/* sum / n rounded to the nearest integer, halves away from zero. */
static int64_t div_round(int64_t sum, int64_t n)
{
    if (sum >= 0)
        return (sum + n / 2) / n;
    return -((-sum + n / 2) / n);
}

int analyse_steptrace_average(const struct analyse_st_step *steps, size_t n, int64_t first_step,
                              int64_t last_step, bool inference,
                              struct analyse_st_trace **ret_trace)
{
    if (!steps || !ret_trace)
        return -EINVAL;
    size_t n_sel = 0, n_comm = 0;
    for (size_t i = 0; i < n; i++) {
        if (steps[i].step < first_step || steps[i].step > last_step)
            continue;
        if (steps[i].n_comm > 0 && !steps[i].comm)
            return -EINVAL;
        n_sel++;
        n_comm += steps[i].n_comm;
    }
    if (n_sel == 0)
        return -ENOENT;

    struct rel_event *ev = NULL;
    if (n_comm > 0) {
        ev = calloc(n_comm, sizeof *ev);
        if (!ev)
            return -ENOMEM;
    }
    int64_t sum_fp = 0, sum_bp = 0, sum_end = 0;
    int64_t first = 0, last = 0;
    bool ordered = true;
    size_t n_ev = 0, seq = 0, skipped = 0, seen = 0;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_st_step *s = &steps[i];
        if (s->step < first_step || s->step > last_step)
            continue;
        int64_t start = resolve_start(steps, i);
        if (seen++ == 0)
            first = s->step;
        last = s->step;
        sum_fp += s->fp_ns - start;
        sum_bp += s->bp_ns - start;
        sum_end += s->end_ns - start;
        ordered = ordered && is_ordered(start, s, inference);
        struct rel_event *dst = ev ? ev + n_ev : NULL; /* NULL + 0 is undefined too */
        size_t m = collect_events(s, start, seq, dst, &skipped);
        /* Number repeated ops (same stream and name) in time order within the step, so the
         * k-th all-reduce of one step is averaged with the k-th of the others. */
        sort_events(dst, m, cmp_occ);
        for (size_t k = 0; k < m; k++) {
            struct rel_event *e = &dst[k];
            bool same = k > 0 && e->stream == e[-1].stream &&
                        cmp_name(e->name, e->name_len, e[-1].name, e[-1].name_len) == 0;
            e->occ = same ? e[-1].occ + 1 : 0;
        }
        n_ev += m;
        seq += s->n_comm;
    }

    /* Average each (stream, name, occurrence) over the steps that have it; the merged event
     * keeps the earliest seq, so the streams keep their order of first appearance. */
    sort_events(ev, n_ev, cmp_key);
    size_t n_avg = 0;
    for (size_t i = 0; i < n_ev;) {
        size_t j = i;
        int64_t s0 = 0, s1 = 0;
        while (j < n_ev && same_key(&ev[j], &ev[i])) {
            s0 += ev[j].start_rel;
            s1 += ev[j].end_rel;
            j++;
        }
        struct rel_event merged = ev[i];
        merged.start_rel = div_round(s0, (int64_t)(j - i));
        merged.end_rel = div_round(s1, (int64_t)(j - i));
        for (size_t k = i; k < j; k++)
            if (ev[k].seq < merged.seq)
                merged.seq = ev[k].seq;
        ev[n_avg++] = merged;
        i = j;
    }

    int64_t cnt = (int64_t)n_sel;
    struct analyse_st_trace *t = build_trace(div_round(sum_fp, cnt), div_round(sum_bp, cnt),
                                             div_round(sum_end, cnt), inference, ev, n_avg);
    free(ev);
    if (!t)
        return -ENOMEM;
    t->step = ANALYSE_ST_AVERAGE;
    t->rank = steps[0].rank;
    t->first_step = first;
    t->last_step = last;
    t->n_steps = n_sel;
    t->ordered = ordered;
    t->n_comm_skipped = skipped;
    *ret_trace = t;
    return 0;
}

const char *analyse_steptrace_pick_override(const struct analyse_st_overrides *o, bool fp,
                                            enum analyse_st_origin *ret_origin)
{
    *ret_origin = ANALYSE_ST_ORIGIN_NONE;
    if (!o)
        return NULL;
    const struct {
        const char *name;
        enum analyse_st_origin origin;
    } order[] = {
        {fp ? o->stepscope_fp : o->stepscope_bp, ANALYSE_ST_ORIGIN_ENV_STEPSCOPE},
        {fp ? o->profiling_fp : o->profiling_bp, ANALYSE_ST_ORIGIN_ENV_PROFILING},
        {fp ? o->mindspore_fp : o->mindspore_bp, ANALYSE_ST_ORIGIN_ENV_MINDSPORE},
        {fp ? o->config_fp : o->config_bp, ANALYSE_ST_ORIGIN_CONFIG},
    };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (order[i].name && order[i].name[0]) {
            *ret_origin = order[i].origin;
            return order[i].name;
        }
    }
    return NULL;
}

static bool name_has(const char *name, size_t len, const char *needle)
{
    size_t m = strlen(needle);
    if (!name || len < m || m == 0)
        return m == 0;
    /* memchr finds candidate starts at SIMD speed: kernel names run to hundreds of bytes, and
     * a memcmp at every offset cost a third of the daemon's time on an import. */
    const char *p = name, *last = name + (len - m);
    while (p <= last) {
        p = memchr(p, needle[0], (size_t)(last - p) + 1);
        if (!p)
            return false;
        if (memcmp(p, needle, m) == 0)
            return true;
        p++;
    }
    return false;
}

static bool name_is(const struct analyse_span *s, const char *name)
{
    size_t m = strlen(name);
    return s->name && s->name_len == m && memcmp(s->name, name, m) == 0;
}

unsigned analyse_steptrace_name_bits(const char *name, size_t len)
{
    static const char *const comm[] = {"AllReduce", "allreduce", "all_reduce", "nccl", "hcom"};
    unsigned bits = 0;
    if (name_has(name, len, "GetNext") || name_has(name, len, "DataLoader"))
        bits |= ANALYSE_ST_NAME_FETCH;
    for (size_t i = 0; i < sizeof comm / sizeof comm[0]; i++) {
        if (name_has(name, len, comm[i])) {
            bits |= ANALYSE_ST_NAME_COMM;
            break;
        }
    }
    return bits;
}

/* The spans of one analyse_steptrace_points_bits() call and their name bits (NULL: each
 * predicate looks at the name itself). */
struct st_spans {
    const struct analyse_span *v;
    const uint8_t *bits;
    size_t n;
};

static bool name_bit(const struct st_spans *ss, size_t i, unsigned bit)
{
    if (ss->bits)
        return (ss->bits[i] & bit) != 0;
    return (analyse_steptrace_name_bits(ss->v[i].name, ss->v[i].name_len) & bit) != 0;
}

static bool is_data_fetch(const struct st_spans *ss, size_t i)
{
    return ss->v[i].role == ANALYSE_ROLE_DATALOADER || name_bit(ss, i, ANALYSE_ST_NAME_FETCH);
}

static bool is_comm(const struct st_spans *ss, size_t i)
{
    return ss->v[i].role == ANALYSE_ROLE_COMMUNICATION || name_bit(ss, i, ANALYSE_ST_NAME_COMM);
}

static bool is_operator(const struct st_spans *ss, size_t i)
{
    return (ANALYSE_ST_ROLES_OPERATOR & ANALYSE_ROLE_BIT(ss->v[i].role)) && !is_data_fetch(ss, i);
}

int analyse_steptrace_comm_from_spans(const struct analyse_span *spans, size_t n,
                                      struct analyse_st_comm *comm, size_t *ret_n)
{
    if ((n > 0 && (!spans || !comm)) || !ret_n)
        return -EINVAL;
    const struct st_spans ss = {spans, NULL, n};
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_comm(&ss, i))
            continue;
        comm[m++] = (struct analyse_st_comm){spans[i].tid, spans[i].name, spans[i].name_len,
                                             spans[i].ts_ns, spans[i].ts_ns + spans[i].dur_ns};
    }
    *ret_n = m;
    return 0;
}

/* Automatic FP: the first operator starting after the first data fetch has ended. */
static void auto_fp(const struct st_spans *ss, size_t first_op, size_t *ret_i,
                    enum analyse_st_origin *ret_origin)
{
    const struct analyse_span *spans = ss->v;
    size_t n = ss->n;
    for (size_t d = 0; d < n; d++) {
        if (!is_data_fetch(ss, d))
            continue;
        int64_t fetch_end = spans[d].ts_ns + spans[d].dur_ns;
        for (size_t i = d + 1; i < n; i++) {
            if (is_operator(ss, i) && spans[i].ts_ns >= fetch_end) {
                *ret_i = i;
                *ret_origin = ANALYSE_ST_ORIGIN_AFTER_DATA;
                return;
            }
        }
        break;
    }
    *ret_i = first_op;
    *ret_origin = ANALYSE_ST_ORIGIN_FIRST_OP;
}

/* Automatic BP: the last non-communication operator that starts before the last
 * communication op; without one, the last operator. */
static void auto_bp(const struct st_spans *ss, size_t last_op, size_t *ret_i,
                    enum analyse_st_origin *ret_origin)
{
    const struct analyse_span *spans = ss->v;
    size_t n = ss->n;
    size_t c = n;
    for (size_t i = n; i-- > 0;) {
        if (is_comm(ss, i)) {
            c = i;
            break;
        }
    }
    if (c < n) {
        for (size_t i = c; i-- > 0;) {
            if (is_operator(ss, i) && !is_comm(ss, i) && spans[i].ts_ns <= spans[c].ts_ns) {
                *ret_i = i;
                *ret_origin = ANALYSE_ST_ORIGIN_BEFORE_COMM;
                return;
            }
        }
    }
    *ret_i = last_op;
    *ret_origin = ANALYSE_ST_ORIGIN_LAST_OP;
}

int analyse_steptrace_points(const struct analyse_span *spans, size_t n,
                             const struct analyse_st_overrides *o, struct analyse_st_points *ret)
{
    return analyse_steptrace_points_bits(spans, NULL, n, o, ret);
}

int analyse_steptrace_points_bits(const struct analyse_span *spans, const uint8_t *name_bits,
                                  size_t n, const struct analyse_st_overrides *o,
                                  struct analyse_st_points *ret)
{
    if ((n > 0 && !spans) || !ret)
        return -EINVAL;
    const struct st_spans ss = {spans, name_bits, n};
    size_t first_op = n, last_op = n, step_span = n;
    int64_t max_end = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (is_operator(&ss, i)) {
            if (first_op == n)
                first_op = i;
            last_op = i;
        }
        if (spans[i].role == ANALYSE_ROLE_STEP && step_span == n)
            step_span = i;
        if (spans[i].ts_ns + spans[i].dur_ns > max_end)
            max_end = spans[i].ts_ns + spans[i].dur_ns;
    }
    if (first_op == n)
        return -ENOENT;

    struct analyse_st_points p = {0};
    enum analyse_st_origin origin;
    const char *want = analyse_steptrace_pick_override(o, true, &origin);
    size_t fi = n;
    if (want) {
        for (size_t i = 0; i < n && fi == n; i++)
            if (name_is(&spans[i], want))
                fi = i;
        p.fp_override_missed = fi == n;
    }
    if (fi < n)
        p.fp_origin = origin;
    else
        auto_fp(&ss, first_op, &fi, &p.fp_origin);

    want = analyse_steptrace_pick_override(o, false, &origin);
    size_t bi = n;
    if (want) {
        for (size_t i = n; i-- > 0 && bi == n;)
            if (name_is(&spans[i], want))
                bi = i;
        p.bp_override_missed = bi == n;
    }
    if (bi < n)
        p.bp_origin = origin;
    else
        auto_bp(&ss, last_op, &bi, &p.bp_origin);

    p.fp_index = fi;
    p.bp_index = bi;
    p.fp_ns = spans[fi].ts_ns;
    p.bp_ns = spans[bi].ts_ns + spans[bi].dur_ns;
    p.end_ns = step_span < n ? spans[step_span].ts_ns + spans[step_span].dur_ns : max_end;
    p.fp_name = spans[fi].name;
    p.fp_name_len = spans[fi].name_len;
    p.bp_name = spans[bi].name;
    p.bp_name_len = spans[bi].name_len;
    *ret = p;
    return 0;
}
