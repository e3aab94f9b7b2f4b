/* SPDX-License-Identifier: MIT */
/*
 * live_account: the bytes a job's live state holds, estimated from the capacities of what it
 * holds (docs/ARCHITECTURE.md "Live memory"), computed at each publish; live_evict() compares
 * their sum with the budget.
 */
#include <stddef.h>

#include "live_int.h"

static size_t ktab_bytes(const struct ktab *t)
{
    return t->cap_slots * sizeof *t->slots + t->cap * sizeof *t->ents + t->text_cap;
}

static size_t rank_bytes(const struct live_rank *rk)
{
    size_t b = sizeof *rk + ktab_bytes(&rk->threads) + analyse_self_bytes(&rk->self) +
               rk->cap_batch * sizeof *rk->batch +
               rk->n_agg * sizeof *rk->agg + rk->cap_queues * sizeof *rk->queues;
    for (int k = 0; k < LIST_COUNT; k++) {
        const struct live_steplist *l = &rk->lists[k];
        b += l->cap * sizeof *l->steps + l->cap_pending * sizeof *l->pending;
        for (size_t i = 0; i < l->n; i++)
            b += l->steps[i].cap_spans * sizeof *l->steps[i].spans +
                 l->steps[i].n_comm * sizeof *l->steps[i].comm;
    }
    for (size_t i = 0; i < rk->n_queues; i++) /* and the published copy (qset) */
        b += 2 * (rk->queues[i].name_len + 1) + (rk->queues[i].cap + rk->queues[i].n) *
                                                    sizeof *rk->queues[i].samples;
    if (rk->pipe)
        b += sizeof *rk->pipe + rk->pipe->p.cap_values * sizeof *rk->pipe->p.values;
    /* The breakdown chunks: the full ones (LIVE_BD_CHUNK spans, 320 KiB each), and the last
     * at its capacity, which starts at LIVE_BD_CHUNK_FIRST spans and grows fourfold (a one-event
     * job was charged a whole chunk, 337 KB, and filled the budget at ~3 200 jobs; issue 18). */
    b += rk->bd.cap_chunks * sizeof *rk->bd.chunks + rk->bd.cap_streams * sizeof *rk->bd.streams;
    if (rk->bd.n_chunks > 0)
        b += (rk->bd.n_chunks - 1) * LIVE_BD_CHUNK_BYTES(LIVE_BD_CHUNK) +
             LIVE_BD_CHUNK_BYTES(rk->bd.chunks[rk->bd.n_chunks - 1]->cap);
    return b;
}

/* What j and its snapshot s hold, approximately (capacities, not allocator overhead). */
static uint64_t job_bytes(const struct live_job *j, const struct live_snapshot *s)
{
    size_t b = sizeof *j + ktab_bytes(&j->ops) + j->cap_roles + j->cap_name_bits + j->cap_ranks * sizeof *j->ranks;
    for (size_t i = 0; i < j->n_ranks; i++)
        b += rank_bytes(j->ranks[i]);
    if (s) {
        b += sizeof *s + (s->n_ops + 1) * sizeof *s->ops + j->ops.text_len + 1 +
             (s->n_ranks + 1) * sizeof *s->ranks;
        for (size_t i = 0; i < s->n_ranks; i++)
            b += (s->ranks[i].n_agg + 1) * sizeof *s->ranks[i].agg +
                 (s->ranks[i].n_steps + 1) * sizeof *s->ranks[i].steps +
                 s->ranks[i].n_comm * sizeof *s->ranks[i].comm +
                 (s->ranks[i].bd.n_chunks + 1) * sizeof *s->ranks[i].bd.chunks +
                 s->ranks[i].bd.n_streams * sizeof *s->ranks[i].bd.streams;
    }
    return b;
}

void live__account(struct live *lv, struct live_job *j, const struct live_snapshot *s)
{
    uint64_t b = job_bytes(j, s);
    atomic_fetch_add_explicit(&lv->bytes, b - j->bytes, memory_order_relaxed); /* mod 2^64 */
    j->bytes = b;
}

uint64_t live_bytes(const struct live *lv)
{
    return lv ? atomic_load_explicit(&lv->bytes, memory_order_relaxed) : 0;
}

uint64_t live_job_bytes(const struct live *lv, int64_t job_id)
{
    ptrdiff_t i = live__index_get(&lv->job_index, job_id);
    return i >= 0 ? lv->jobs[i]->bytes : 0;
}
