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
    return live__index_get(&lv->evicted_index, job_id);
}

ptrdiff_t live__pub_find(const struct live *lv, int64_t job_id)
{
    return live__index_get(&lv->pub_index, job_id);
}

/* Removes lv->evicted[e], the last one taking its place. Under lv->lock. */
static void evicted_remove(struct live *lv, size_t e)
{
    live__index_del(&lv->evicted_index, lv->evicted[e].job_id);
    if (e < --lv->n_evicted) {
        lv->evicted[e] = lv->evicted[lv->n_evicted];
        (void)live__index_put(&lv->evicted_index, lv->evicted[e].job_id, e); /* present */
    }
}

/* Removes lv->untracked[u], the last one taking its place. Under lv->lock. */
static void untracked_remove(struct live *lv, size_t u)
{
    live__index_del(&lv->untracked_index, lv->untracked[u]);
    if (u < --lv->n_untracked_list) {
        lv->untracked[u] = lv->untracked[lv->n_untracked_list];
        (void)live__index_put(&lv->untracked_index, lv->untracked[u], u); /* present */
    }
}

/* Drops job_id's state and published snapshot; marks it evicted (mark) or forgets any mark.
 * Under the snapshot mutex, in one step, a publication used after used_before is kept
 * (-EBUSY: a reader's live_ensure() raced the eviction) and so is everything when the mark
 * cannot be kept (-ENOMEM); a reader sees the snapshot or the mark, never neither. O(1) on
 * average: every list is found through its index. */
static int drop_job(struct live *lv, int64_t job_id, bool mark, int64_t used_before)
{
    struct live_snapshot *old = NULL;
    pthread_mutex_lock(&lv->lock);
    ptrdiff_t k = live__pub_find(lv, job_id);
    if (k >= 0 && lv->pub[k].used_ns > used_before) {
        pthread_mutex_unlock(&lv->lock);
        return -EBUSY;
    }
    ptrdiff_t e = live__evicted_find(lv, job_id);
    if (mark && e < 0 &&
        (util_grow((void **)&lv->evicted, &lv->cap_evicted, lv->n_evicted + 1,
                   sizeof *lv->evicted) < 0 ||
         live__index_put(&lv->evicted_index, job_id, lv->n_evicted) < 0)) {
        pthread_mutex_unlock(&lv->lock);
        return -ENOMEM;
    }
    if (k >= 0) {
        old = lv->pub[k].snap;
        live__index_del(&lv->pub_index, job_id);
        if ((size_t)k < --lv->n_pub) {
            lv->pub[k] = lv->pub[lv->n_pub];
            (void)live__index_put(&lv->pub_index, lv->pub[k].job_id, (size_t)k); /* present */
        }
    }
    if (!mark && e >= 0)
        evicted_remove(lv, (size_t)e);
    else if (mark && e < 0)
        lv->evicted[lv->n_evicted++] = (struct live_evicted){job_id, live__snap_steps(old, -1)};
    if (!mark) { /* a deleted job is forgotten as refused too */
        ptrdiff_t u = live__index_get(&lv->untracked_index, job_id);
        if (u >= 0)
            untracked_remove(lv, (size_t)u);
    }
    pthread_mutex_unlock(&lv->lock);
    live_snapshot_put(old);
    ptrdiff_t i = live__index_get(&lv->job_index, job_id);
    if (i >= 0)
        live__job_remove(lv, lv->jobs[i]);
    return 0;
}

/* Whether job_id was refused past max_jobs. Under lv->lock. */
static bool untracked_has(const struct live *lv, int64_t job_id)
{
    return live__index_get(&lv->untracked_index, job_id) >= 0;
}

/* Notes job_id as refused (once). Loop thread. */
void live__untrack(struct live *lv, int64_t job_id)
{
    pthread_mutex_lock(&lv->lock);
    if (!untracked_has(lv, job_id)) {
        atomic_fetch_add_explicit(&lv->n_untracked, 1, memory_order_relaxed);
        if (lv->n_untracked_list < LIVE_UNTRACKED_LIST &&
            util_grow((void **)&lv->untracked, &lv->cap_untracked, lv->n_untracked_list + 1,
                       sizeof *lv->untracked) == 0 &&
            live__index_put(&lv->untracked_index, job_id, lv->n_untracked_list) == 0)
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

int live_evict_job(struct live *lv, int64_t job_id)
{
    return drop_job(lv, job_id, true, INT64_MAX);
}

/* Whether live_evict() has work: over the byte budget, or over 7/8 of max_jobs. */
static bool evict_pending(const struct live *lv, uint64_t budget)
{
    return lv->n_jobs > 0 &&
           (live_bytes(lv) > budget || lv->n_jobs > lv->max_jobs - lv->max_jobs / 8);
}

size_t live_evict(struct live *lv, uint64_t budget, int64_t now_ns,
                  bool (*can_evict)(void *ud, int64_t job_id), void *ud)
{
    /* The jobs in the order of their last use, oldest first (live.lru): a feed moves its job to
     * the tail, so the victims are at the head, found in O(1) each. A reader's use
     * (live_ensure(), which runs on HTTP threads and cannot move loop state) is seen here: such
     * a job goes to the tail, placed at that use, instead of going. So does a job the caller
     * keeps, placed now, so that it is asked again only once its grace has passed. At most
     * LIVE_EVICT_STEP jobs are looked at per call, so a call costs a bounded time whatever the
     * number of jobs; the caller calls again at its next turn. It used to sort every
     * job per call and scan every list per job evicted: at 3 200 jobs hello->ack took seconds,
     * and a burst of thousands of jobs ending at once held the loop for as long (issue 18). */
    size_t n = 0, seen = 0, limit = lv->n_jobs < LIVE_EVICT_STEP ? lv->n_jobs : LIVE_EVICT_STEP;
    int64_t horizon = now_ns - LIVE_EVICT_GRACE_NS;
    while (seen++ < limit && evict_pending(lv, budget)) {
        struct live_job *j = lv->lru_head;
        if (j->lru_ns > horizon)
            break; /* the rest were placed later still: within the grace */
        pthread_mutex_lock(&lv->lock);
        ptrdiff_t k = live__pub_find(lv, j->id);
        int64_t read = k >= 0 ? lv->pub[k].used_ns : 0;
        pthread_mutex_unlock(&lv->lock);
        if (read > j->lru_ns) { /* read since it was placed: its place is at that read */
            live__lru_touch(lv, j, read);
            continue;
        }
        if (!can_evict(ud, j->id)) {
            live__lru_touch(lv, j, live__stamp(lv));
            continue;
        }
        /* -EBUSY: read since the look above, so it stays (and is placed later); -ENOMEM:
         * nothing more can be marked, so nothing more goes. */
        int r = drop_job(lv, j->id, true, horizon);
        if (r == -ENOMEM)
            break;
        if (r == -EBUSY)
            live__lru_touch(lv, j, live__stamp(lv));
        else
            n++;
    }
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
        evicted_remove(lv, (size_t)e);
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
    pthread_mutex_lock(&lv->lock);
    ptrdiff_t k = live__pub_find(lv, job_id);
    bool found = k >= 0;
    if (found)
        lv->pub[k].used_ns = now;
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
