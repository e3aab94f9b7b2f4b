/* SPDX-License-Identifier: MIT */
/*
 * live_evict: jobs leaving memory. Least recently used jobs go past the budget (and are
 * remembered as evicted, reloaded from the store by a reader's live_ensure()); a deleted job is
 * dropped and forgotten; a job past max_jobs is refused and remembered as such.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "live_int.h"

/* Index of job_id in lv->evicted, or -1. Under lv->lock. */
ptrdiff_t live__evicted_find(const struct live *lv, int64_t job_id)
{
    for (size_t i = 0; i < lv->n_evicted; i++)
        if (lv->evicted[i].job_id == job_id)
            return (ptrdiff_t)i;
    return -1;
}

/* Drops job_id's state and published snapshot; marks it evicted (mark) or forgets any mark.
 * Under the snapshot mutex, in one step, a publication used after used_before is kept
 * (-EBUSY: a reader's live_ensure() raced the eviction) and so is everything when the mark
 * cannot be kept (-ENOMEM); a reader sees the snapshot or the mark, never neither. */
static int drop_job(struct live *lv, int64_t job_id, bool mark, int64_t used_before)
{
    struct live_snapshot *old = NULL;
    pthread_mutex_lock(&lv->lock);
    size_t k = 0;
    while (k < lv->n_pub && lv->pub[k].job_id != job_id)
        k++;
    if (k < lv->n_pub && lv->pub[k].used_ns > used_before) {
        pthread_mutex_unlock(&lv->lock);
        return -EBUSY;
    }
    ptrdiff_t e = live__evicted_find(lv, job_id);
    if (mark && e < 0 &&
        util_grow((void **)&lv->evicted, &lv->cap_evicted, lv->n_evicted + 1,
                   sizeof *lv->evicted) < 0) {
        pthread_mutex_unlock(&lv->lock);
        return -ENOMEM;
    }
    if (k < lv->n_pub) {
        old = lv->pub[k].snap;
        lv->pub[k] = lv->pub[--lv->n_pub];
    }
    if (!mark && e >= 0)
        lv->evicted[e] = lv->evicted[--lv->n_evicted];
    else if (mark && e < 0)
        lv->evicted[lv->n_evicted++] = (struct live_evicted){job_id, live__snap_steps(old, -1)};
    if (!mark) /* a deleted job is forgotten as refused too */
        for (size_t u = 0; u < lv->n_untracked_list; u++)
            if (lv->untracked[u] == job_id) {
                lv->untracked[u] = lv->untracked[--lv->n_untracked_list];
                break;
            }
    pthread_mutex_unlock(&lv->lock);
    live_snapshot_put(old);
    for (size_t i = 0; i < lv->n_jobs; i++) {
        if (lv->job_ids[i] != job_id)
            continue;
        if (lv->last == lv->jobs[i])
            lv->last = NULL;
        atomic_fetch_sub_explicit(&lv->bytes, lv->jobs[i]->bytes, memory_order_relaxed);
        live__job_free(lv->jobs[i]);
        lv->n_jobs--;
        lv->jobs[i] = lv->jobs[lv->n_jobs];
        lv->job_ids[i] = lv->job_ids[lv->n_jobs];
        break;
    }
    return 0;
}

/* Whether job_id was refused past max_jobs. Under lv->lock. */
static bool untracked_has(const struct live *lv, int64_t job_id)
{
    for (size_t u = 0; u < lv->n_untracked_list; u++)
        if (lv->untracked[u] == job_id)
            return true;
    return false;
}

/* Notes job_id as refused (once). Loop thread. */
void live__untrack(struct live *lv, int64_t job_id)
{
    pthread_mutex_lock(&lv->lock);
    if (!untracked_has(lv, job_id)) {
        atomic_fetch_add_explicit(&lv->n_untracked, 1, memory_order_relaxed);
        if (lv->n_untracked_list < LIVE_UNTRACKED_LIST &&
            util_grow((void **)&lv->untracked, &lv->cap_untracked, lv->n_untracked_list + 1,
                       sizeof *lv->untracked) == 0)
            lv->untracked[lv->n_untracked_list++] = job_id;
    }
    pthread_mutex_unlock(&lv->lock);
}

bool live_is_untracked(struct live *lv, int64_t job_id)
{
    if (!lv || atomic_load_explicit(&lv->n_untracked, memory_order_relaxed) == 0)
        return false;
    pthread_mutex_lock(&lv->lock);
    bool r = untracked_has(lv, job_id);
    pthread_mutex_unlock(&lv->lock);
    return r;
}

uint64_t live_untracked_jobs(const struct live *lv)
{
    return lv ? atomic_load_explicit(&lv->n_untracked, memory_order_relaxed) : 0;
}

void live_drop_job(struct live *lv, int64_t job_id)
{
    (void)drop_job(lv, job_id, false, INT64_MAX);
}

/* A job's last use, for the LRU order. */
struct lru {
    int64_t used;
    int64_t id;
};

static int cmp_lru_id(const void *a, const void *b)
{
    const struct lru *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_lru_used(const void *a, const void *b)
{
    const struct lru *x = a, *y = b;
    if (x->used != y->used)
        return x->used < y->used ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

size_t live_evict(struct live *lv, uint64_t budget, int64_t now_ns,
                  bool (*can_evict)(void *ud, int64_t job_id), void *ud)
{
    size_t keep = lv->max_jobs - lv->max_jobs / 8; /* room for new jobs between two calls */
    if ((live_bytes(lv) <= budget && lv->n_jobs <= keep) || lv->n_jobs == 0)
        return 0;
    /* One pass per call: each job's last use (its feed stamp, or a reader's live_ensure() of its
     * snapshot), the jobs past the grace sorted oldest first, then evicted in that order while
     * over the budget. O(n log n) a call; it was a scan of every job, and for each of every
     * snapshot, per job evicted (at 3 200 jobs on the loop: hello->ack of 1.4-2 s, issue 18). */
    struct lru *pubs = NULL, *cand = malloc(lv->n_jobs * sizeof *cand);
    pthread_mutex_lock(&lv->lock);
    size_t n_pubs = lv->n_pub;
    if (n_pubs > 0 && (pubs = malloc(n_pubs * sizeof *pubs)) != NULL)
        for (size_t k = 0; k < n_pubs; k++)
            pubs[k] = (struct lru){lv->pub[k].used_ns, lv->pub[k].job_id};
    pthread_mutex_unlock(&lv->lock);
    if (!cand || (n_pubs > 0 && !pubs)) {
        free(cand);
        free(pubs);
        return 0;
    }
    qsort(pubs, n_pubs, sizeof *pubs, cmp_lru_id);
    size_t m = 0;
    for (size_t i = 0; i < lv->n_jobs; i++) {
        const struct live_job *j = lv->jobs[i];
        struct lru key = {0, j->id};
        const struct lru *p = n_pubs ? bsearch(&key, pubs, n_pubs, sizeof *pubs, cmp_lru_id) : NULL;
        int64_t used = p && p->used > j->used_ns ? p->used : j->used_ns;
        if (used <= now_ns - LIVE_EVICT_GRACE_NS)
            cand[m++] = (struct lru){used, j->id};
    }
    free(pubs);
    qsort(cand, m, sizeof *cand, cmp_lru_used);
    size_t n = 0;
    for (size_t k = 0; k < m && (live_bytes(lv) > budget || lv->n_jobs > keep); k++) {
        if (!can_evict(ud, cand[k].id))
            continue;
        /* -EBUSY: used since the copy (a reader's live_ensure()), so it stays; -ENOMEM: nothing
         * more can be marked, so nothing more goes. */
        int r = drop_job(lv, cand[k].id, true, now_ns - LIVE_EVICT_GRACE_NS);
        if (r == -ENOMEM)
            break;
        if (r == 0)
            n++;
    }
    free(cand);
    return n;
}

int live_mark_evicted(struct live *lv, int64_t job_id)
{
    return drop_job(lv, job_id, true, INT64_MAX);
}

bool live_is_evicted(struct live *lv, int64_t job_id)
{
    pthread_mutex_lock(&lv->lock);
    bool r = live__evicted_find(lv, job_id) >= 0;
    pthread_mutex_unlock(&lv->lock);
    return r;
}

void live_reload_done(struct live *lv, int64_t job_id)
{
    pthread_mutex_lock(&lv->lock);
    ptrdiff_t e = live__evicted_find(lv, job_id);
    if (e >= 0)
        lv->evicted[e] = lv->evicted[--lv->n_evicted];
    pthread_mutex_unlock(&lv->lock);
}

void live_set_reload(struct live *lv, live_reload_fn fn, void *ud)
{
    lv->reload = fn;
    lv->reload_ud = ud;
}

/* Marks job_id's publication used. Returns whether it has one. */
static bool touch(struct live *lv, int64_t job_id, bool *ret_evicted)
{
    int64_t now = live__stamp(lv);
    bool found = false;
    pthread_mutex_lock(&lv->lock);
    for (size_t k = 0; k < lv->n_pub && !found; k++) {
        if (lv->pub[k].job_id == job_id) {
            lv->pub[k].used_ns = now;
            found = true;
        }
    }
    *ret_evicted = !found && live__evicted_find(lv, job_id) >= 0;
    pthread_mutex_unlock(&lv->lock);
    return found;
}

int live_ensure(struct live *lv, int64_t job_id)
{
    bool evicted;
    if (!lv || touch(lv, job_id, &evicted) || !evicted || !lv->reload)
        return 0;
    int r = lv->reload(lv->reload_ud, job_id);
    if (r < 0)
        return r;
    (void)touch(lv, job_id, &evicted);
    return 0;
}
