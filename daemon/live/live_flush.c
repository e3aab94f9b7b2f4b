/* SPDX-License-Identifier: MIT */
/*
 * live_flush: live_flush(), a rank's batch processed at once. analyse's self-time walker
 * (analyse_ops.h, "Self time, walked incrementally") puts the batch in its order and folds every
 * span into the rank's operator aggregates, with a walk state per thread that survives across
 * batches; the spans the step trace reads are then filed under their steps (live_steps.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../analyse/analyse_ops.h"
#include "../analyse/analyse_roles.h"
#include "../analyse/analyse_steptrace.h"
#include "live_int.h"

static int rank_flush(struct live *lv, struct live_job *j, struct live_rank *rk)
{
    int r = 0;
    if (rk->n_batch > 0) {
        size_t n_agg = rk->n_agg;
        if (analyse_self_reserve(&rk->self, rk->threads.n) < 0 ||
            util_grow_zero((void **)&rk->agg, &n_agg, j->ops.n + 1, sizeof *rk->agg) < 0) {
            rk->c.dropped += (int64_t)rk->n_batch;
            rk->n_batch = 0;
            return -ENOMEM;
        }
        rk->n_agg = n_agg;
        size_t n_nest =
            analyse_self_order(&lv->self_scratch, rk->batch, rk->n_batch, rk->threads.n);
        /* Step spans first, so the spans of this batch find their step. */
        for (size_t i = 0; i < rk->n_batch; i++) {
            const struct analyse_op_span *sp = &rk->batch[i];
            if (sp->role != ANALYSE_ROLE_STEP || sp->op == LIVE_OP_OTHER)
                continue;
            const struct kent *e = &j->ops.ents[sp->op];
            if (live__add_span_step(rk, j->ops.text + e->off1, e->len1, sp->ts_ns, sp->end_ns) < 0)
                r = -ENOMEM;
        }
        analyse_self_walk(&rk->self, rk->threads.n, rk->batch, n_nest, rk->n_batch, rk->agg,
                          &rk->other, &rk->c.stack_dropped);
        for (size_t i = 0; i < rk->n_batch; i++) {
            const struct analyse_op_span *sp = &rk->batch[i];
            if (ANALYSE_ST_ROLES & ANALYSE_ROLE_BIT(sp->role)) {
                live__record_add_span(rk, sp);
                live__list_add_span(&rk->lists[LIST_SPAN], sp, &rk->c);
            }
        }
        rk->n_batch = 0;
    }
    for (int k = 0; k < LIST_COUNT; k++)
        live__settle(lv, j, &rk->lists[k], &rk->c);
    return r;
}

int live_flush(struct live *lv)
{
    int r = 0;
    for (size_t i = 0; i < lv->n_jobs; i++) {
        struct live_job *j = lv->jobs[i];
        if (!j->dirty)
            continue;
        for (size_t k = 0; k < j->n_ranks; k++)
            if (rank_flush(lv, j, j->ranks[k]) < 0)
                r = -ENOMEM;
    }
    return r;
}
