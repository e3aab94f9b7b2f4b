/* SPDX-License-Identifier: MIT */
/*
 * live_steps: a rank's steps and the spans filed under them.
 *
 * Steps live in two lists per rank, one from step records and one from step spans, each with
 * its own spans, so neither depends on whether a step's record came before or after its spans:
 * a span that no step covers yet waits in the list's pending array until its step arrives. The
 * snapshot shows the record list when it has steps, else the span list. FP/BP points of a step
 * are recomputed when a snapshot is built after its spans changed, and settle (spans freed) only
 * when the rank keeps more than LIVE_RANK_SPANS_MAX spans.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../analyse/analyse_steptrace.h"
#include "../analyse/analyse_summary.h"
#include "../../lib/num.h"
#include "live_int.h"

void live__steplist_done(struct live_steplist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->steps[i].spans);
        free(l->steps[i].comm);
    }
    free(l->steps);
    free(l->pending);
}

/* The step whose [begin, end) holds ts (a zero-length step holds its begin), or -1. */
static ptrdiff_t step_find(struct live_steplist *l, int64_t ts)
{
    /* lo: the first step beginning after ts. Spans come step after step, so the last answer's
     * step is checked before a binary search; while the steps are in order, the only index with
     * steps[lo - 1] <= ts < steps[lo] is the one the search finds. */
    size_t lo = 0, hi = l->n, h = l->hint;
    if (!l->unordered && h < l->n && l->steps[h].begin_ns <= ts &&
        (h + 1 == l->n || l->steps[h + 1].begin_ns > ts))
        lo = hi = h + 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->steps[mid].begin_ns <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0)
        l->hint = lo - 1;
    /* Steps may overlap (a late record); look back a little for one that holds ts. */
    for (size_t k = lo, tries = 0; k > 0 && tries < 4; k--, tries++) {
        const struct live_step *s = &l->steps[k - 1];
        if (ts < s->end_ns || (ts == s->begin_ns && s->end_ns == s->begin_ns))
            return (ptrdiff_t)(k - 1);
    }
    return -1;
}

/* Adds sp to step s. */
static void step_add_span(struct live_steplist *l, struct live_step *s,
                          const struct analyse_op_span *sp, struct live_counters *c)
{
    s->spans_seen++;
    if (s->settled) {
        c->late_spans++;
        return;
    }
    if (s->n_spans >= LIVE_STEP_SPANS_MAX ||
        util_grow((void **)&s->spans, &s->cap_spans, s->n_spans + 1, sizeof *s->spans) < 0) {
        c->step_spans_dropped++;
        return;
    }
    s->spans[s->n_spans++] = *sp;
    s->dirty = true;
    l->kept_spans++;
}

/* Keeps sp until a step that covers it is inserted (what no room is left for is counted). */
static void l_pending_add(struct live_steplist *l, const struct analyse_op_span *sp,
                          struct live_counters *c)
{
    if (l->n_pending >= LIVE_PENDING_MAX) {
        size_t drop = LIVE_PENDING_MAX / 2;
        c->unassigned += (int64_t)drop;
        memmove(l->pending, l->pending + drop, (l->n_pending - drop) * sizeof *l->pending);
        l->n_pending -= drop;
    }
    if (util_grow((void **)&l->pending, &l->cap_pending, l->n_pending + 1,
                   sizeof *l->pending) < 0) {
        c->unassigned++;
        return;
    }
    l->pending[l->n_pending++] = *sp;
}

void live__list_add_span(struct live_steplist *l, const struct analyse_op_span *sp,
                         struct live_counters *c)
{
    ptrdiff_t k = step_find(l, sp->ts_ns);
    if (k >= 0) {
        step_add_span(l, &l->steps[k], sp, c);
        return;
    }
    l_pending_add(l, sp, c);
}

static int cmp_span_exec(const void *a, const void *b)
{
    const struct analyse_op_span *x = a, *y = b;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns > y->end_ns ? -1 : 1;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    return 0;
}

/* The name bits of j's ops, computed once per op (the substring searches they stand for cost
 * more than the rest of the points). Returns them, or NULL when out of memory. */
static const uint8_t *job_name_bits(struct live_job *j)
{
    if (j->n_name_bits < j->ops.n) {
        if (util_grow((void **)&j->name_bits, &j->cap_name_bits, j->ops.n, 1) < 0)
            return NULL;
        for (size_t i = j->n_name_bits; i < j->ops.n; i++) {
            const struct kent *e = &j->ops.ents[i];
            j->name_bits[i] = (uint8_t)analyse_steptrace_name_bits(j->ops.text + e->off1, e->len1);
        }
        j->n_name_bits = j->ops.n;
    }
    return j->name_bits;
}

/* Sorts v[0, n) stably by cmp_span_exec, with tmp (room for n) as the other buffer: runs of 16
 * by insertion, then bottom-up merges that take the left run's span among equals. What qsort
 * gives (a stable merge sort in glibc), without a comparator call per comparison. */
static void sort_exec(struct analyse_op_span *v, size_t n, struct analyse_op_span *tmp)
{
    enum { RUN = 16 };
    for (size_t a = 0; a < n; a += RUN) {
        size_t b = n - a < RUN ? n : a + RUN;
        for (size_t i = a + 1; i < b; i++) {
            struct analyse_op_span x = v[i];
            size_t j = i;
            for (; j > a && cmp_span_exec(&v[j - 1], &x) > 0; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
    }
    struct analyse_op_span *src = v, *dst = tmp;
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t a = 0; a < n; a += 2 * w) {
            size_t m = n - a < w ? n : a + w, b = n - a < 2 * w ? n : a + 2 * w;
            size_t i = a, j = m, k = a;
            while (i < m && j < b)
                dst[k++] = cmp_span_exec(&src[i], &src[j]) > 0 ? src[j++] : src[i++];
            while (i < m)
                dst[k++] = src[i++];
            while (j < b)
                dst[k++] = src[j++];
        }
        struct analyse_op_span *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* Puts s's spans in cmp_span_exec order: only the ones appended since the last call are sorted
 * (unless they already are in order), then merged in from the back, the sorted ones first among
 * equals: the order a stable sort of the whole array gives (glibc's qsort is a merge sort while
 * it can allocate), at a fraction of its cost on a step that grows publish after publish. */
static void sort_spans(struct live *lv, struct live_step *s)
{
    size_t h = s->n_sorted <= s->n_spans ? s->n_sorted : 0, t = s->n_spans - h;
    struct analyse_op_span *v = s->spans;
    if (t > 0 && util_grow((void **)&lv->merge, &lv->cap_merge, t, sizeof *v) < 0) {
        qsort(v, s->n_spans, sizeof *v, cmp_span_exec);
        s->n_sorted = s->n_spans;
        return;
    }
    for (size_t i = h + 1; i < s->n_spans; i++) {
        if (cmp_span_exec(&v[i - 1], &v[i]) > 0) {
            sort_exec(v + h, t, lv->merge);
            break;
        }
    }
    if (h > 0 && t > 0 && cmp_span_exec(&v[h - 1], &v[h]) > 0) {
        memcpy(lv->merge, v + h, t * sizeof *v);
        const struct analyse_op_span *tail = lv->merge;
        size_t i = h, k = s->n_spans;
        while (t > 0) {
            if (i > 0 && cmp_span_exec(&v[i - 1], &tail[t - 1]) > 0)
                v[--k] = v[--i];
            else
                v[--k] = tail[--t];
        }
    }
    s->n_sorted = s->n_spans;
}

/* The reduce-line stream of span sp, or -1 when it is no communication op: MindSpore's
 * step-trace communication ops (cat "step_trace", name "stream_<id>_...": stream <id>, as
 * cli sends the columns of step_trace_raw), else the ops analyse's step trace
 * takes for communication (role communication, or an all-reduce/NCCL/HCCL name: one line per
 * thread, stream = the rank's thread index). */
static int64_t comm_stream(const struct live_job *j, const struct analyse_op_span *sp, uint8_t bits)
{
    if (sp->op == LIVE_OP_OTHER)
        return -1;
    const struct kent *e = &j->ops.ents[sp->op];
    const char *name = j->ops.text + e->off1, *cat = j->ops.text + e->off2;
    if (e->len2 == 10 && memcmp(cat, "step_trace", 10) == 0 && e->len1 > 7 &&
        memcmp(name, "stream_", 7) == 0) {
        int64_t v = 0;
        size_t i = 7;
        for (; i < e->len1 && i < 16 && name[i] >= '0' && name[i] <= '9'; i++)
            v = v * 10 + (name[i] - '0');
        if (i > 7)
            return v;
    }
    if (sp->role == ANALYSE_ROLE_COMMUNICATION || (bits & ANALYSE_ST_NAME_COMM))
        return (int64_t)sp->thread;
    return -1;
}

/* Recomputes s's communication ops (at most LIVE_STEP_COMM_MAX; later ones are counted in
 * step_comm_dropped) from its spans, which are in execution order. */
static void step_comm(struct live_job *j, struct live_step *s, const uint8_t *op_bits,
                      struct live_counters *c)
{
    free(s->comm);
    s->comm = NULL;
    s->n_comm = 0;
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < s->n_spans; i++) {
            const struct analyse_op_span *sp = &s->spans[i];
            uint8_t bits = op_bits && sp->op != LIVE_OP_OTHER ? op_bits[sp->op] : 0;
            int64_t stream = comm_stream(j, sp, bits);
            if (stream < 0)
                continue;
            if (pass == 0) {
                n++;
            } else if (s->n_comm < LIVE_STEP_COMM_MAX) {
                s->comm[s->n_comm++] = (struct live_comm){sp->ts_ns, sp->end_ns, stream, sp->op};
            }
        }
        if (pass == 0) {
            if (n == 0)
                return;
            if (n > LIVE_STEP_COMM_MAX) {
                c->step_comm_dropped += (int64_t)(n - LIVE_STEP_COMM_MAX);
                n = LIVE_STEP_COMM_MAX;
            }
            if (!(s->comm = malloc(n * sizeof *s->comm))) {
                c->step_comm_dropped += (int64_t)n;
                return;
            }
        }
    }
}

/* Recomputes the trace points of s from its spans. */
static void step_points(struct live *lv, struct live_job *j, struct live_step *s,
                        struct live_counters *c)
{
    s->dirty = false;
    s->has_trace = false;
    if (s->n_spans == 0)
        return;
    if (util_grow((void **)&lv->scratch, &lv->cap_scratch, s->n_spans, sizeof *lv->scratch) < 0)
        return;
    const uint8_t *op_bits = job_name_bits(j);
    uint8_t *bits = NULL;
    if (op_bits &&
        util_grow((void **)&lv->scratch_bits, &lv->cap_scratch_bits, s->n_spans, 1) == 0)
        bits = lv->scratch_bits;
    uint8_t other_bits =
        (uint8_t)analyse_steptrace_name_bits(LIVE_OTHER_NAME, sizeof LIVE_OTHER_NAME - 1);
    /* Execution order, made canonical so the points do not depend on arrival order. */
    sort_spans(lv, s);
    step_comm(j, s, op_bits, c);
    for (size_t i = 0; i < s->n_spans; i++) {
        const struct analyse_op_span *sp = &s->spans[i];
        struct analyse_span *a = &lv->scratch[i];
        memset(a, 0, sizeof *a);
        a->ts_ns = sp->ts_ns;
        a->dur_ns = sp->end_ns - sp->ts_ns;
        if (sp->op == LIVE_OP_OTHER) {
            a->name = LIVE_OTHER_NAME;
            a->name_len = sizeof LIVE_OTHER_NAME - 1;
            if (bits)
                bits[i] = other_bits;
        } else {
            const struct kent *e = &j->ops.ents[sp->op];
            a->name = j->ops.text + e->off1;
            a->name_len = e->len1;
            a->cat = j->ops.text + e->off2;
            a->cat_len = e->len2;
            if (bits)
                bits[i] = op_bits[sp->op];
        }
        a->correlation = -1;
        a->external_id = -1;
        a->role = (enum analyse_role)sp->role;
    }
    struct analyse_st_overrides o = {
        .stepscope_fp = j->env[0], .stepscope_bp = j->env[1],
        .profiling_fp = j->env[2], .profiling_bp = j->env[3],
        .mindspore_fp = j->env[4], .mindspore_bp = j->env[5],
        .config_fp = lv->fp_point, .config_bp = lv->bp_point,
    };
    struct analyse_st_points p;
    if (analyse_steptrace_points_bits(lv->scratch, bits, s->n_spans, &o, &p) < 0)
        return;
    s->has_trace = true;
    s->fp_ns = p.fp_ns;
    s->bp_ns = p.bp_ns;
    s->fp_op = s->spans[p.fp_index].op;
    s->bp_op = s->spans[p.bp_index].op;
    s->fp_origin = (uint8_t)p.fp_origin;
    s->bp_origin = (uint8_t)p.bp_origin;
}

/* Drops the oldest eighth of a full list. */
static void list_drop_oldest(struct live_steplist *l, struct live_counters *c)
{
    size_t drop = LIVE_STEPS_MAX / 8;
    for (size_t i = 0; i < drop; i++) {
        if (!l->steps[i].settled)
            l->kept_spans -= l->steps[i].n_spans;
        free(l->steps[i].spans);
        free(l->steps[i].comm);
    }
    memmove(l->steps, l->steps + drop, (l->n - drop) * sizeof *l->steps);
    l->n -= drop;
    l->n_settled = l->n_settled > drop ? l->n_settled - drop : 0;
    c->steps_dropped += (int64_t)drop;
}

/* Inserts a step (by begin) and takes the pending spans it covers, and those inside range (the
 * step span of its number, or NULL). Returns it, or NULL. */
static struct live_step *list_insert(struct live_steplist *l, const struct live_step *s,
                                     const struct live_step *range, struct live_counters *c)
{
    if (l->n >= LIVE_STEPS_MAX)
        list_drop_oldest(l, c);
    if (util_grow((void **)&l->steps, &l->cap, l->n + 1, sizeof *l->steps) < 0)
        return NULL;
    size_t at = l->n;
    while (at > l->n_settled && l->steps[at - 1].begin_ns > s->begin_ns)
        at--;
    if (at > 0 && l->steps[at - 1].begin_ns > s->begin_ns)
        l->unordered = true; /* before a settled step that begins later */
    memmove(l->steps + at + 1, l->steps + at, (l->n - at) * sizeof *l->steps);
    l->steps[at] = *s;
    l->n++;
    struct live_step *st = &l->steps[at];
    size_t k = 0;
    for (size_t i = 0; i < l->n_pending; i++) {
        const struct analyse_op_span *sp = &l->pending[i];
        bool in = sp->ts_ns >= st->begin_ns &&
                  (sp->ts_ns < st->end_ns || (sp->ts_ns == st->begin_ns && st->end_ns == st->begin_ns));
        if (range && sp->ts_ns >= range->begin_ns && sp->ts_ns < range->end_ns)
            in = true;
        if (in)
            step_add_span(l, st, sp, c);
        else
            l->pending[k++] = *sp;
    }
    l->n_pending = k;
    return st;
}

/* The step numbered num among the last few of l, or NULL. */
static struct live_step *list_find_num(struct live_steplist *l, int64_t num)
{
    for (size_t i = l->n, tries = 0; i > 0 && tries < 256; i--, tries++)
        if (l->steps[i - 1].step == num)
            return &l->steps[i - 1];
    return NULL;
}

/* The sums the points need from the record's phases (decoded by core/decode.h; -1: absent). */
static void step_phases(const struct record_phases *ph, struct live_step *s)
{
    int64_t fwd = ph->forward_ns > 0 ? ph->forward_ns : 0;
    int64_t bwd = ph->backward_ns > 0 ? ph->backward_ns : 0;
    s->has_phases = fwd > 0 || bwd > 0;
    s->ph_data_ns = ph->dataloader_ns > 0 ? ph->dataloader_ns : 0;
    s->ph_fwdbwd_ns = fwd + bwd;
}

void live__feed_step_record(struct live_rank *rk, const struct record *r)
{
    struct live_steplist *l = &rk->lists[LIST_RECORD];
    if (r->step < 0 || r->ts_ns == INT64_MIN)
        return;
    struct live_step s = {0};
    s.step = r->step;
    s.begin_ns = r->ts_ns;
    s.end_ns = r->ts_ns + (r->dur_ns > 0 ? r->dur_ns : 0);
    s.samples = r->samples;
    s.from_record = true;
    step_phases(&r->phase_ns, &s);
    struct live_step *old = list_find_num(l, s.step);
    const struct live_step *range = list_find_num(&rk->lists[LIST_SPAN], s.step);
    s.profiled = range != NULL;
    if (old && old->begin_ns == s.begin_ns) {
        /* A replayed duplicate or a correction: keep the spans, take the new figures. */
        old->end_ns = s.end_ns;
        old->samples = s.samples;
        old->has_phases = s.has_phases;
        old->ph_data_ns = s.ph_data_ns;
        old->ph_fwdbwd_ns = s.ph_fwdbwd_ns;
        return;
    }
    (void)list_insert(l, &s, range, &rk->c);
}

/* The number after '#' in "ProfilerStep#12", or -1. */
int64_t live__step_number(const char *name, size_t len)
{
    len = analyse_sum_name_len(name, len); /* Paddle 3.x: "ProfileStep#1[795.749 us]" */
    const char *h = memchr(name, '#', len);
    if (!h || (size_t)(h - name) + 1 >= len)
        return -1;
    int64_t v;
    size_t off = (size_t)(h - name) + 1;
    if (num_parse_i64(name + off, len - off, &v) < 0 || v < 0)
        return -1;
    return v;
}

/* Files the step of a step span named name (ProfilerStep#N) in the rank's span-step list, once
 * per number. Returns 0 (also for a name without a number), -ENOMEM. */
int live__add_span_step(struct live_rank *rk, const char *name, size_t len, int64_t begin_ns,
                        int64_t end_ns)
{
    struct live_steplist *spl = &rk->lists[LIST_SPAN];
    int64_t num = live__step_number(name, len);
    if (num < 0 || list_find_num(spl, num))
        return 0;
    struct live_step s = {0};
    s.step = num;
    s.begin_ns = begin_ns;
    s.end_ns = end_ns;
    s.samples = -1;
    if (!list_insert(spl, &s, NULL, &rk->c))
        return -ENOMEM;
    struct live_step *rs = list_find_num(&rk->lists[LIST_RECORD], num);
    if (rs)
        rs->profiled = true;
    return 0;
}

/* Files a span under the rank's step records. A span inside a step span (ProfilerStep#N) belongs
 * to record step N when the rank has one, or may still get one (N is past the last record): a
 * profiler's step and the record of the same number need not begin at the same instant
 * (torch.profiler's prof.step() runs before the loop's next()). Any other span is filed by time.
 * docs/ANALYSIS.md "Step identity". */
void live__record_add_span(struct live_rank *rk, const struct analyse_op_span *sp)
{
    struct live_steplist *rl = &rk->lists[LIST_RECORD], *sl = &rk->lists[LIST_SPAN];
    ptrdiff_t k = sl->n > 0 ? step_find(sl, sp->ts_ns) : -1;
    if (k >= 0) {
        int64_t num = sl->steps[k].step;
        struct live_step *r = list_find_num(rl, num);
        if (r) {
            step_add_span(rl, r, sp, &rk->c);
            return;
        }
        if (rl->n > 0 && rl->steps[rl->n - 1].step < num) {
            ptrdiff_t t = step_find(rl, sp->ts_ns);
            if (t >= 0 && rl->steps[t].step != num) {
                /* In an earlier record by time only: wait for record num. */
                l_pending_add(rl, sp, &rk->c);
                return;
            }
        }
    }
    live__list_add_span(rl, sp, &rk->c);
}

void live__settle(struct live *lv, struct live_job *j, struct live_steplist *l,
                  struct live_counters *c)
{
    while (l->kept_spans > LIVE_RANK_SPANS_MAX && l->n_settled < l->n) {
        struct live_step *s = &l->steps[l->n_settled++];
        if (s->dirty)
            step_points(lv, j, s, c);
        l->kept_spans -= s->n_spans;
        free(s->spans);
        s->spans = NULL;
        s->n_spans = s->cap_spans = s->n_sorted = 0;
        s->settled = true;
    }
}

/* The points of j's steps whose spans changed since they were computed: only snapshots show
 * them (and live__settle() computes a step's before dropping its spans), so they are computed
 * when a snapshot is built, not at every flush of a step that is still filling. */
void live__job_points(struct live *lv, struct live_job *j)
{
    for (size_t r = 0; r < j->n_ranks; r++) {
        for (int k = 0; k < LIST_COUNT; k++) {
            struct live_steplist *l = &j->ranks[r]->lists[k];
            for (size_t i = l->n_settled; i < l->n; i++)
                if (l->steps[i].dirty)
                    step_points(lv, j, &l->steps[i], &j->ranks[r]->c);
        }
    }
}
