/* SPDX-License-Identifier: MIT */
/*
 * live_feed: live_feed(), the hot path. A trace span costs two interning lookups ((name, cat) per
 * job, (pid, tid) per rank, the last thread remembered) and a 32-byte copy into the rank's batch
 * (a device event also a look-up of its stream among the rank's few); step, queue, pipeline
 * and host records go to their owners at once (they are rare).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../analyse/analyse_roles.h"
#include "../../lib/num.h"
#include "live_int.h"

/* The part of a pid or tid text that names its thread (record_id_len()), else the whole text. */
static size_t id_len(struct record_text t)
{
    size_t n = record_id_len(t);
    return n ? n : t.len;
}

/* Queue samples are rare (one per queue and step), so a linear search over the rank's few
 * queues and an occasional allocation cost nothing next to the trace events. */
static void feed_queue(struct live_rank *rk, const struct record *r)
{
    size_t len = r->name.len < LIVE_QUEUE_NAME_MAX ? r->name.len : LIVE_QUEUE_NAME_MAX;
    struct live_queue *q = NULL;
    for (size_t i = 0; i < rk->n_queues; i++) {
        if (rk->queues[i].name_len == len && live__bytes_eq(rk->queues[i].name, r->name.ptr, len)) {
            q = &rk->queues[i];
            break;
        }
    }
    if (!q) {
        if (rk->n_queues >= LIVE_QUEUES_MAX) {
            rk->c.queues_dropped++;
            return;
        }
        char *name = malloc(len + 1);
        if (!name || util_grow((void **)&rk->queues, &rk->cap_queues, rk->n_queues + 1,
                                sizeof *rk->queues) < 0) {
            free(name);
            rk->c.dropped++;
            return;
        }
        if (len)
            memcpy(name, r->name.ptr, len);
        name[len] = '\0';
        q = &rk->queues[rk->n_queues++];
        *q = (struct live_queue){.name = name, .name_len = len};
    }
    if (q->n >= LIVE_QUEUE_SAMPLES_MAX) {
        size_t half = q->n / 2;
        memmove(q->samples, q->samples + half, (q->n - half) * sizeof *q->samples);
        q->n -= half;
        rk->c.queue_samples_dropped += (int64_t)half;
    }
    if (util_grow((void **)&q->samples, &q->cap, q->n + 1, sizeof *q->samples) < 0) {
        rk->c.dropped++;
        return;
    }
    q->samples[q->n++] = (struct analyse_queue_sample){
        .step = r->step, .size = r->size, .capacity = r->capacity};
    rk->queues_dirty = true;
}

static void feed_pipeline(struct live_rank *rk, const struct record *r)
{
    struct live_pipe *pl = NULL;
    int e = live__pipe_new(r, &pl);
    if (e == -ENOMEM) {
        rk->c.dropped++;
        return;
    }
    if (e < 0) {
        rk->c.pipelines_bad++;
        return;
    }
    live__pipe_put(rk->pipe);
    rk->pipe = pl;
}

/* Host records are rare (one a second or so): a running sum per figure is all the helper needs. */
static void feed_host(struct live_rank *rk, const struct record *r)
{
    if (r->cpu_percent >= 0) {
        rk->host.cpu_sum += r->cpu_percent;
        rk->host.n_cpu++;
    }
    if (r->sys_cpu_percent >= 0) {
        rk->host.sys_cpu_sum += r->sys_cpu_percent;
        rk->host.n_sys_cpu++;
    }
}

/* Keeps what the breakdown needs of a span; a device span's numeric pid is its device. */
static void feed_bd(struct live_rank *rk, const struct record *r, enum analyse_role role,
                    uint32_t op)
{
    int64_t dev = -1, stream = -1;
    uint8_t st = 0;
    if (role == ANALYSE_ROLE_KERNEL || role == ANALYSE_ROLE_MEMCPY ||
        role == ANALYSE_ROLE_MEMSET) {
        if (num_parse_i64(r->pid.ptr, r->pid.len, &dev) < 0 || dev < 0 || dev > INT16_MAX)
            dev = -1;
        /* Kineto's tid of a device event is its CUDA stream (args.stream). */
        if (num_parse_i64(r->tid.ptr, r->tid.len, &stream) == 0 && stream >= 0)
            st = live__bd_stream(&rk->bd, stream);
    }
    /* A step span past the ops cap has no name to read its number from later: keep it. */
    int64_t corr = r->correlation;
    if (role == ANALYSE_ROLE_STEP && op == LIVE_OP_OTHER)
        corr = live__step_number(r->name.ptr, r->name.len);
    struct live_bd_span sp = {
        .ts_ns = r->ts_ns, .end_ns = r->ts_ns + r->dur_ns, .correlation = corr,
        .external_id = r->external_id, .op = op, .device = (int16_t)dev, .role = (uint8_t)role, .stream = st,
    };
    if (live__bd_add(&rk->bd, &sp) < 0)
        rk->c.dropped++;
}

static struct live_rank *rank_get(struct live_job *j, int64_t rank)
{
    if (j->last && j->last->rank == rank)
        return j->last;
    for (size_t i = 0; i < j->n_ranks; i++)
        if (j->ranks[i]->rank == rank)
            return j->last = j->ranks[i];
    if (j->n_ranks >= LIVE_RANKS_MAX ||
        util_grow((void **)&j->ranks, &j->cap_ranks, j->n_ranks + 1, sizeof *j->ranks) < 0)
        return NULL;
    struct live_rank *rk = calloc(1, sizeof *rk);
    if (!rk)
        return NULL;
    rk->rank = rank;
    rk->bd.horizon_ns = INT64_MIN;
    rk->bd.max_spans = j->bd_max;
    /* Keep ranks ordered, so snapshots need no sort. */
    size_t at = j->n_ranks;
    while (at > 0 && j->ranks[at - 1]->rank > rank)
        at--;
    memmove(j->ranks + at + 1, j->ranks + at, (j->n_ranks - at) * sizeof *j->ranks);
    j->ranks[at] = rk;
    j->n_ranks++;
    return j->last = rk;
}

int live_feed(struct live *lv, int64_t job_id, int64_t rank, const struct record *recs, size_t n)
{
    if (n == 0)
        return 0;
    struct live_job *j = live__job_get(lv, job_id);
    struct live_rank *rk = j ? rank_get(j, rank) : NULL;
    if (!rk) {
        lv->dropped += (int64_t)n;
        return -ENOMEM;
    }
    j->dirty = true;
    j->used_ns = live__stamp(lv);
    live__lru_touch(lv, j, j->used_ns);
    if (util_grow((void **)&rk->batch, &rk->cap_batch, rk->n_batch + n, sizeof *rk->batch) < 0) {
        rk->c.dropped += (int64_t)n;
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct record *r = &recs[i];
        if (r->kind != RECORD_TRACE) {
            if (r->kind == RECORD_STEP)
                live__feed_step_record(rk, r);
            else if (r->kind == RECORD_QUEUE)
                feed_queue(rk, r);
            else if (r->kind == RECORD_PIPELINE)
                feed_pipeline(rk, r);
            else if (r->kind == RECORD_HOST)
                feed_host(rk, r);
            continue;
        }
        if (r->ph != 'X' || r->name.len == 0 ||
            r->ts_ns == INT64_MIN || r->dur_ns < 0)
            continue;
        uint32_t op;
        enum analyse_role role;
        int k = live__ktab_get(&j->ops, r->name.ptr, r->name.len, r->cat.ptr, r->cat.len,
                               LIVE_OPS_MAX, &op);
        if (k < 0) {
            rk->c.dropped++;
            continue;
        }
        if (k == 1 && op >= j->cap_roles) {
            if (util_grow((void **)&j->roles, &j->cap_roles, (size_t)op + 1, 1) < 0) {
                rk->c.dropped++;
                continue;
            }
        }
        struct analyse_span a = {
            .name = r->name.ptr,
            .name_len = r->name.len,
            .cat = r->cat.ptr,
            .cat_len = r->cat.len,
        };
        if (k == 0) {
            /* Past the cap: classify each span (slow, and counted). */
            op = LIVE_OP_OTHER;
            role = analyse_role_of(&a, lv->rules);
            rk->c.ops_folded++;
            /* Each step span has a name of its own (ProfilerStep#N), so a long job fills the cap
             * with them; the batch reads step numbers from op names, which these lack, so file
             * the step now (before the batch's spans, as the batch would). */
            if (role == ANALYSE_ROLE_STEP)
                live__add_span_step(rk, r->name.ptr, r->name.len, r->ts_ns, r->ts_ns + r->dur_ns);
        } else if (op == j->ops.n - 1 && j->ops.n > j->n_roles_done) {
            role = analyse_role_of(&a, lv->rules);
            j->roles[op] = (uint8_t)role;
            j->n_roles_done = j->ops.n;
        } else {
            role = (enum analyse_role)j->roles[op];
        }
        uint32_t th;
        size_t pl = id_len(r->pid), tl = id_len(r->tid), kl = pl + 1 + tl;
        if (kl == rk->last_key_len && live__bytes_eq(rk->last_key, r->pid.ptr, pl) &&
            live__bytes_eq(rk->last_key + pl + 1, r->tid.ptr, tl)) {
            th = rk->last_th;
        } else {
            k = live__ktab_get(&rk->threads, r->pid.ptr, pl, r->tid.ptr, tl,
                               LIVE_THREADS_MAX, &th);
            if (k < 0) {
                rk->c.dropped++;
                continue;
            }
            if (k == 0) {
                th = LIVE_THREADS_MAX;
                rk->c.threads_shared++;
            }
            rk->last_key_len = 0;
            if (kl <= sizeof rk->last_key) {
                if (pl)
                    memcpy(rk->last_key, r->pid.ptr, pl);
                rk->last_key[pl] = '\0';
                if (tl)
                    memcpy(rk->last_key + pl + 1, r->tid.ptr, tl);
                rk->last_key_len = kl;
                rk->last_th = th;
            }
        }
        struct analyse_op_span *sp = &rk->batch[rk->n_batch];
        sp->ts_ns = r->ts_ns;
        sp->end_ns = r->ts_ns + r->dur_ns;
        sp->op = op;
        sp->thread = th;
        sp->order = (uint32_t)rk->n_batch;
        sp->role = (uint8_t)role;
        rk->n_batch++;
        rk->c.spans++;
        if (role != ANALYSE_ROLE_OTHER && role != ANALYSE_ROLE_PYTHON)
            feed_bd(rk, r, role, op);
    }
    return 0;
}
