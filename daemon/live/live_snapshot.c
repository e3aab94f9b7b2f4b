/* SPDX-License-Identifier: MIT */
/*
 * live_snapshot: building a job's immutable snapshot from its loop state and publishing it.
 * HTTP threads take a reference under lv->lock, held only for the pointer swap; a snapshot is
 * freed by its last live_snapshot_put(). Queue sets, pipeline records and breakdown chunks are
 * shared by reference between the rank and the snapshots that show them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "live_int.h"

/* The steps snap lists for rank (rank < 0: the rank with the most), -1 for NULL snap or no such
 * rank. */
int64_t live__snap_steps(const struct live_snapshot *snap, int64_t rank)
{
    int64_t n = -1;
    for (size_t i = 0; snap && i < snap->n_ranks; i++)
        if ((rank < 0 || snap->ranks[i].rank == rank) && (int64_t)snap->ranks[i].n_steps > n)
            n = (int64_t)snap->ranks[i].n_steps;
    return n;
}

void live__snapshot_free(struct live_snapshot *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_ranks; i++) {
        free(s->ranks[i].agg);
        free(s->ranks[i].steps);
        free(s->ranks[i].comm);
        live__qset_put(s->ranks[i].queues);
        live__pipe_put(s->ranks[i].pipe);
        live__snap_bd_done(&s->ranks[i].bd);
    }
    free(s->ranks);
    free(s->ops);
    free(s->text);
    free(s);
}

static void counters_add(struct live_counters *a, const struct live_counters *b)
{
    a->spans += b->spans;
    a->ops_folded += b->ops_folded;
    a->threads_shared += b->threads_shared;
    a->stack_dropped += b->stack_dropped;
    a->steps_dropped += b->steps_dropped;
    a->step_spans_dropped += b->step_spans_dropped;
    a->step_comm_dropped += b->step_comm_dropped;
    a->unassigned += b->unassigned;
    a->late_spans += b->late_spans;
    a->dropped += b->dropped;
    a->queues_dropped += b->queues_dropped;
    a->queue_samples_dropped += b->queue_samples_dropped;
    a->pipelines_bad += b->pipelines_bad;
}

void live__qset_put(struct live_qset *qs)
{
    if (!qs || atomic_fetch_sub_explicit(&qs->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < qs->n; i++) {
        free(qs->q[i].name);
        free(qs->q[i].samples);
    }
    free(qs->q);
    free(qs);
}

/* A copy of the rank's queues, or NULL on OOM. */
static struct live_qset *qset_build(const struct live_rank *rk)
{
    struct live_qset *qs = calloc(1, sizeof *qs);
    if (!qs)
        return NULL;
    atomic_init(&qs->refs, 1);
    qs->q = calloc(rk->n_queues + 1, sizeof *qs->q);
    if (!qs->q)
        goto fail;
    for (size_t i = 0; i < rk->n_queues; i++) {
        const struct live_queue *q = &rk->queues[i];
        struct live_snap_queue *o = &qs->q[qs->n++];
        o->name = malloc(q->name_len + 1);
        o->samples = malloc((q->n + 1) * sizeof *o->samples);
        if (!o->name || !o->samples)
            goto fail;
        memcpy(o->name, q->name, q->name_len + 1);
        if (q->n)
            memcpy(o->samples, q->samples, q->n * sizeof *o->samples);
        o->n = q->n;
    }
    return qs;
fail:
    live__qset_put(qs);
    return NULL;
}

/* The rank's current queue set as a new reference (rebuilt only when a sample arrived since the
 * last one), NULL when the rank has no queues. *ret_oom is set when a rebuild failed. */
static struct live_qset *qset_get(struct live_rank *rk, bool *ret_oom)
{
    if (rk->n_queues == 0)
        return NULL;
    if (rk->queues_dirty || !rk->qset) {
        struct live_qset *qs = qset_build(rk);
        if (!qs) {
            *ret_oom = true;
            return NULL;
        }
        live__qset_put(rk->qset);
        rk->qset = qs;
        rk->queues_dirty = false;
    }
    atomic_fetch_add_explicit(&rk->qset->refs, 1, memory_order_relaxed);
    return rk->qset;
}

/* Copies the communication ops of l's steps (in the order of sr->steps, which mirror them) into
 * sr->comm. Returns 0 or -ENOMEM. */
static int snap_comm(const struct live_steplist *l, struct live_snap_rank *sr)
{
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        n += l->steps[i].n_comm;
    if (n == 0)
        return 0;
    if (!(sr->comm = malloc(n * sizeof *sr->comm)))
        return -ENOMEM;
    for (size_t i = 0; i < l->n && i < sr->n_steps; i++) {
        const struct live_step *st = &l->steps[i];
        sr->steps[i].first_comm = sr->n_comm;
        sr->steps[i].n_comm = st->n_comm;
        if (st->n_comm)
            memcpy(sr->comm + sr->n_comm, st->comm, st->n_comm * sizeof *st->comm);
        sr->n_comm += st->n_comm;
    }
    return 0;
}

static struct live_snapshot *snapshot_build(struct live_job *j)
{
    struct live_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    atomic_init(&s->refs, 1);
    s->job_id = j->id;
    s->n_ops = j->ops.n;
    s->ops = calloc(s->n_ops + 1, sizeof *s->ops);
    s->text = malloc(j->ops.text_len + 1);
    s->ranks = calloc(j->n_ranks + 1, sizeof *s->ranks);
    if (!s->ops || !s->text || !s->ranks)
        goto fail;
    if (j->ops.text_len)
        memcpy(s->text, j->ops.text, j->ops.text_len);
    for (size_t i = 0; i < s->n_ops; i++) {
        s->ops[i].name = s->text + j->ops.ents[i].off1;
        s->ops[i].name_len = j->ops.ents[i].len1;
        s->ops[i].role = i < j->n_roles_done ? (enum analyse_role)j->roles[i] : ANALYSE_ROLE_OTHER;
    }
    for (size_t k = 0; k < j->n_ranks; k++) {
        struct live_rank *rk = j->ranks[k];
        struct live_snap_rank *sr = &s->ranks[s->n_ranks++];
        sr->rank = rk->rank;
        bool oom = false;
        sr->queues = qset_get(rk, &oom);
        if (oom)
            goto fail;
        if (rk->pipe) {
            atomic_fetch_add_explicit(&rk->pipe->refs, 1, memory_order_relaxed);
            sr->pipe = rk->pipe;
        }
        sr->host = rk->host;
        if (live__bd_snap(&rk->bd, &sr->bd) < 0)
            goto fail;
        sr->n_agg = rk->n_agg < s->n_ops ? rk->n_agg : s->n_ops;
        sr->agg = malloc((sr->n_agg + 1) * sizeof *sr->agg);
        const struct live_steplist *l =
            rk->lists[LIST_RECORD].n > 0 ? &rk->lists[LIST_RECORD] : &rk->lists[LIST_SPAN];
        sr->steps = malloc((l->n + 1) * sizeof *sr->steps);
        if (!sr->agg || !sr->steps)
            goto fail;
        if (sr->n_agg)
            memcpy(sr->agg, rk->agg, sr->n_agg * sizeof *sr->agg);
        sr->other = rk->other;
        for (size_t i = 0; i < l->n; i++) {
            const struct live_step *st = &l->steps[i];
            struct live_snap_step *o = &sr->steps[sr->n_steps++];
            memset(o, 0, sizeof *o);
            o->step = st->step;
            o->begin_ns = st->begin_ns;
            o->end_ns = st->end_ns;
            o->samples = st->samples;
            o->from_record = st->from_record;
            o->spans = st->spans_seen;
            o->fp_op = o->bp_op = LIVE_OP_OTHER;
            /* Where the rank has step spans, a record step takes points from its spans only if
             * one covers it: the profiler window ran through the whole step, not just its end
             * (docs/ANALYSIS.md "Step identity"). */
            bool use_trace = st->has_trace && (!st->from_record || st->profiled ||
                                               rk->lists[LIST_SPAN].n == 0);
            if (use_trace) {
                o->source = LIVE_POINTS_TRACE;
                o->fp_ns = st->fp_ns;
                o->bp_ns = st->bp_ns;
                o->fp_op = st->fp_op;
                o->bp_op = st->bp_op;
                o->fp_origin = (enum analyse_st_origin)st->fp_origin;
                o->bp_origin = (enum analyse_st_origin)st->bp_origin;
            } else if (st->has_phases) {
                o->source = LIVE_POINTS_PHASES;
                o->fp_ns = st->begin_ns + st->ph_data_ns;
                o->bp_ns = o->fp_ns + st->ph_fwdbwd_ns;
            } else {
                o->source = LIVE_POINTS_NONE;
            }
        }
        if (snap_comm(l, sr) < 0)
            goto fail;
        counters_add(&s->counters, &rk->c);
    }
    return s;
fail:
    live__snapshot_free(s);
    return NULL;
}

int live_publish(struct live *lv)
{
    int r = live_flush(lv);
    for (size_t i = 0; i < lv->n_jobs; i++) {
        struct live_job *j = lv->jobs[i];
        if (!j->dirty)
            continue;
        live__job_points(lv, j);
        struct live_snapshot *s = snapshot_build(j);
        if (!s) {
            r = -ENOMEM;
            continue;
        }
        struct live_snapshot *old = NULL;
        pthread_mutex_lock(&lv->lock);
        ptrdiff_t k = live__pub_find(lv, j->id);
        if (k < 0) {
            if (util_grow((void **)&lv->pub, &lv->cap_pub, lv->n_pub + 1, sizeof *lv->pub) < 0 ||
                live__index_put(&lv->pub_index, j->id, lv->n_pub) < 0) {
                pthread_mutex_unlock(&lv->lock);
                live__snapshot_free(s);
                r = -ENOMEM;
                continue;
            }
            k = (ptrdiff_t)lv->n_pub;
            lv->pub[lv->n_pub++] = (struct live_pub){j->id, NULL, 0, 0};
        }
        old = lv->pub[k].snap;
        s->serial = ++lv->pub_serial;
        lv->pub[k].snap = s;
        lv->pub[k].seq = ++lv->pub_seq;
        pthread_mutex_unlock(&lv->lock);
        live__account(lv, j, s);
        live_snapshot_put(old);
        j->dirty = false;
    }
    return r;
}

int live_snapshot_get(struct live *lv, int64_t job_id, const struct live_snapshot **ret_snap)
{
    if (!lv)
        return -EINVAL;
    int r = -ENOENT;
    pthread_mutex_lock(&lv->lock);
    ptrdiff_t k = live__pub_find(lv, job_id);
    if (k >= 0) {
        atomic_fetch_add_explicit(&lv->pub[k].snap->refs, 1, memory_order_relaxed);
        *ret_snap = lv->pub[k].snap;
        r = 0;
    }
    pthread_mutex_unlock(&lv->lock);
    return r;
}

int64_t live_query_step_count(struct live *lv, int64_t job_id, int64_t rank)
{
    int64_t n = -1;
    if (!lv)
        return n;
    pthread_mutex_lock(&lv->lock);
    ptrdiff_t k = live__pub_find(lv, job_id);
    if (k >= 0) {
        n = live__snap_steps(lv->pub[k].snap, rank);
    } else if (rank < 0) {
        ptrdiff_t e = live__evicted_find(lv, job_id);
        if (e >= 0)
            n = lv->evicted[e].steps;
    }
    pthread_mutex_unlock(&lv->lock);
    return n;
}

size_t live_query_rank_step_counts(struct live *lv, int64_t job_id, int64_t *ret_ranks,
                                   int64_t *ret_steps, size_t cap)
{
    size_t n = 0;
    if (!lv)
        return 0;
    pthread_mutex_lock(&lv->lock);
    ptrdiff_t k = live__pub_find(lv, job_id);
    const struct live_snapshot *snap = k >= 0 ? lv->pub[k].snap : NULL;
    for (size_t i = 0; snap && i < snap->n_ranks && n < cap; i++, n++) {
        ret_ranks[n] = snap->ranks[i].rank;
        ret_steps[n] = (int64_t)snap->ranks[i].n_steps;
    }
    pthread_mutex_unlock(&lv->lock);
    return n;
}

int live_query_changed(struct live *lv, uint64_t *cursor, int64_t **ids, size_t *cap,
                       size_t *ret_n)
{
    size_t n = 0;
    *ret_n = 0;
    if (!lv)
        return 0;
    pthread_mutex_lock(&lv->lock);
    if (util_grow((void **)ids, cap, lv->n_pub, sizeof **ids) < 0) {
        pthread_mutex_unlock(&lv->lock);
        return -ENOMEM;
    }
    for (size_t k = 0; k < lv->n_pub; k++)
        if (lv->pub[k].seq > *cursor)
            (*ids)[n++] = lv->pub[k].job_id;
    *cursor = lv->pub_seq;
    pthread_mutex_unlock(&lv->lock);
    *ret_n = n;
    return 0;
}

void live_snapshot_put(const struct live_snapshot *snap)
{
    struct live_snapshot *s = (struct live_snapshot *)snap;
    if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
        live__snapshot_free(s);
}

uint64_t live_snapshot_serial(const struct live_snapshot *snap)
{
    return snap->serial;
}

void live_snapshot_counters(const struct live_snapshot *snap, struct live_counters *ret)
{
    *ret = snap->counters;
}
