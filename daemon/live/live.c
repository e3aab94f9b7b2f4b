/* SPDX-License-Identifier: MIT */
/*
 * live: per-job, per-rank aggregates of the records main.c feeds on the loop thread, and the
 * snapshots HTTP threads read (live.h has the contract, live_int.h the layouts). This file holds
 * the state's life: creating and freeing it, finding or adding a job (through live_index.c's
 * id map) and its FP/BP overrides, and the jobs' LRU list. The rest is by concern:
 * live_index.c (job id -> position maps), live_intern.c (the (name, cat) and (pid, tid) tables), live_feed.c
 * (live_feed(): records in, spans batched), live_flush.c (a batch's self time and step filing),
 * live_steps.c (the steps, their spans and FP/BP points), live_snapshot.c (building and
 * publishing snapshots), live_account.c (the bytes a job holds), live_evict.c (eviction,
 * reload, refused jobs), live_breakdown.c (the breakdown's spans) and pipeline.c (pipeline
 * records); live_query.c reads snapshots.
 *
 * Why it is shaped this way: live_feed() only appends (two hash lookups and a 32-byte copy per
 * span), so training never waits on an analysis; live_flush() does the per-batch work, and
 * live_publish() rebuilds an immutable, refcounted snapshot per job that changed, so no query
 * touches loop state. For spans that come in torch's order per thread (every sender of this
 * repository sends them so) the numbers do not depend on how they were cut into batches, which
 * is what makes a replay after restart give the live ones (docs/ARCHITECTURE.md, "Equality").
 */
#include "live.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/clock.h"
#include "live_int.h"

static char *dup_nonempty(const char *s, bool *ret_oom)
{
    if (!s || !s[0])
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (!d)
        *ret_oom = true;
    else
        memcpy(d, s, n);
    return d;
}

struct live *live_new_config(const struct live_config *cfg)
{
    struct live *lv = calloc(1, sizeof *lv);
    if (!lv)
        return NULL;
    bool oom = false;
    lv->max_jobs = LIVE_JOBS_DEFAULT;
    lv->bd_max_import = LIVE_BD_SPANS_MAX;
    if (cfg) {
        if (cfg->max_jobs > 0)
            lv->max_jobs = cfg->max_jobs < LIVE_JOBS_LIMIT ? cfg->max_jobs : LIVE_JOBS_LIMIT;
        lv->rules = cfg->rules;
        /* Whole chunks, and never fewer than any job keeps. */
        size_t n = (size_t)(cfg->bd_import_bytes / sizeof(struct live_bd_span));
        n -= n % LIVE_BD_CHUNK;
        if (n > lv->bd_max_import)
            lv->bd_max_import = n;
        lv->fp_point = dup_nonempty(cfg->fp_point, &oom);
        lv->bp_point = dup_nonempty(cfg->bp_point, &oom);
    }
    if (oom) {
        free(lv->fp_point);
        free(lv->bp_point);
        free(lv);
        return NULL;
    }
    pthread_mutex_init(&lv->lock, NULL);
    return lv;
}

struct live *live_new(void)
{
    return live_new_config(NULL);
}

static void rank_free(struct live_rank *rk)
{
    if (!rk)
        return;
    live__ktab_done(&rk->threads);
    analyse_self_done(&rk->self);
    free(rk->batch);
    free(rk->agg);
    for (int i = 0; i < LIST_COUNT; i++)
        live__steplist_done(&rk->lists[i]);
    for (size_t i = 0; i < rk->n_queues; i++) {
        free(rk->queues[i].name);
        free(rk->queues[i].samples);
    }
    free(rk->queues);
    live__qset_put(rk->qset);
    live__pipe_put(rk->pipe);
    live__bd_done(&rk->bd);
    free(rk);
}

void live__job_free(struct live_job *j)
{
    if (!j)
        return;
    live__ktab_done(&j->ops);
    free(j->roles);
    free(j->name_bits);
    for (size_t i = 0; i < j->n_ranks; i++)
        rank_free(j->ranks[i]);
    free(j->ranks);
    free(j);
}

void live_free(struct live *lv)
{
    if (!lv)
        return;
    for (size_t i = 0; i < lv->n_jobs; i++)
        live__job_free(lv->jobs[i]);
    free(lv->jobs);
    live__index_done(&lv->job_index);
    free(lv->untracked);
    live__index_done(&lv->untracked_index);
    live__index_done(&lv->pub_index);
    live__index_done(&lv->evicted_index);
    for (size_t i = 0; i < lv->n_pub; i++)
        live_snapshot_put(lv->pub[i].snap);
    free(lv->pub);
    free(lv->evicted);
    free(lv->scratch);
    free(lv->scratch_bits);
    free(lv->merge);
    analyse_self_scratch_done(&lv->self_scratch);
    free(lv->fp_point);
    free(lv->bp_point);
    pthread_mutex_destroy(&lv->lock);
    free(lv);
}

/* A strictly rising clock_mono_ns(), so that two uses never tie in the LRU order. Any thread. */
int64_t live__stamp(struct live *lv)
{
    int64_t now = clock_mono_ns();
    int64_t last = atomic_load_explicit(&lv->stamp, memory_order_relaxed);
    int64_t v;
    do {
        v = now > last ? now : last + 1;
    } while (!atomic_compare_exchange_weak_explicit(&lv->stamp, &last, v, memory_order_relaxed,
                                                    memory_order_relaxed));
    return v;
}

static void lru_unlink(struct live *lv, struct live_job *j)
{
    if (j->lru_prev)
        j->lru_prev->lru_next = j->lru_next;
    else if (lv->lru_head == j)
        lv->lru_head = j->lru_next;
    if (j->lru_next)
        j->lru_next->lru_prev = j->lru_prev;
    else if (lv->lru_tail == j)
        lv->lru_tail = j->lru_prev;
    j->lru_prev = j->lru_next = NULL;
}

void live__lru_touch(struct live *lv, struct live_job *j, int64_t lru_ns)
{
    j->lru_ns = lru_ns;
    if (lv->lru_tail == j)
        return;
    lru_unlink(lv, j);
    j->lru_prev = lv->lru_tail;
    if (lv->lru_tail)
        lv->lru_tail->lru_next = j;
    else
        lv->lru_head = j;
    lv->lru_tail = j;
}

struct live_job *live__job_get(struct live *lv, int64_t id)
{
    if (lv->last && lv->last->id == id)
        return lv->last;
    ptrdiff_t i = live__index_get(&lv->job_index, id);
    if (i >= 0)
        return lv->last = lv->jobs[i];
    /* Past max_jobs a new job is refused, and stays refused (its analysis would lack what came
     * before): counted, and its answers say so (live_is_untracked()). A refused job is not
     * evicted, so it is not reloaded either; a restart replays it if there is room then. */
    if (lv->n_jobs >= lv->max_jobs ||
        (atomic_load_explicit(&lv->n_untracked, memory_order_relaxed) > 0 &&
         live_is_untracked(lv, id))) {
        live__untrack(lv, id);
        return NULL;
    }
    if (util_grow((void **)&lv->jobs, &lv->cap_jobs, lv->n_jobs + 1, sizeof *lv->jobs) < 0)
        return NULL;
    struct live_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    if (live__index_put(&lv->job_index, id, lv->n_jobs) < 0) {
        free(j);
        return NULL;
    }
    j->id = id;
    j->used_ns = live__stamp(lv);
    live__lru_touch(lv, j, j->used_ns);
    j->bd_max = LIVE_BD_SPANS_MAX;
    lv->jobs[lv->n_jobs++] = j;
    return lv->last = j;
}

/* Removes j from lv's jobs and frees it (its accounted bytes leave lv->bytes). Loop thread. */
void live__job_remove(struct live *lv, struct live_job *j)
{
    ptrdiff_t i = live__index_get(&lv->job_index, j->id);
    if (i < 0)
        return;
    if (lv->last == j)
        lv->last = NULL;
    lru_unlink(lv, j);
    atomic_fetch_sub_explicit(&lv->bytes, j->bytes, memory_order_relaxed);
    live__index_del(&lv->job_index, j->id);
    lv->n_jobs--;
    if ((size_t)i < lv->n_jobs) {
        lv->jobs[i] = lv->jobs[lv->n_jobs];
        (void)live__index_put(&lv->job_index, lv->jobs[i]->id, (size_t)i); /* present: no growth */
    }
    live__job_free(j);
}

size_t live_jobs(const struct live *lv)
{
    return lv ? lv->n_jobs : 0;
}

int live_job_env(struct live *lv, int64_t job_id, const struct live_job_env *env)
{
    const char *v[6] = {env->stepscope_fp, env->stepscope_bp, env->profiling_fp,
                        env->profiling_bp, env->mindspore_fp, env->mindspore_bp};
    for (size_t i = 0; i < 6; i++)
        if (v[i] && strlen(v[i]) > RECORD_NAME_MAX)
            return -ENAMETOOLONG;
    struct live_job *j = NULL;
    if (env->imported && lv->bd_max_import > LIVE_BD_SPANS_MAX) {
        if (!(j = live__job_get(lv, job_id)))
            return -ENOMEM;
        /* A rank that evicted spans already does not get them back; it keeps more from now. */
        j->bd_max = lv->bd_max_import;
        for (size_t k = 0; k < j->n_ranks; k++)
            j->ranks[k]->bd.max_spans = j->bd_max;
    }
    bool changed = false;
    for (size_t i = 0; i < 6; i++) {
        if (!v[i] || !v[i][0])
            continue;
        if (!j && !(j = live__job_get(lv, job_id)))
            return -ENOMEM;
        if (strcmp(j->env[i], v[i]) != 0) {
            memcpy(j->env[i], v[i], strlen(v[i]) + 1);
            changed = true;
        }
    }
    if (!changed)
        return 0;
    /* Settled steps have dropped their spans; their points stay as they were. */
    for (size_t k = 0; k < j->n_ranks; k++)
        for (int m = 0; m < LIST_COUNT; m++) {
            struct live_steplist *l = &j->ranks[k]->lists[m];
            for (size_t i = l->n_settled; i < l->n; i++)
                l->steps[i].dirty = true;
        }
    j->dirty = true;
    return 0;
}
