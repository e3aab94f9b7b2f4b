/* SPDX-License-Identifier: MIT */
/*
 * live: per-job, per-rank aggregates of the records main.c feeds on the loop thread, and the
 * snapshots HTTP threads read (live.h has the contract, live_int.h the snapshot layout).
 *
 * Shape. live_feed() is the hot path: it interns (name, cat) per job and (pid, tid) per rank
 * in open-addressing tables and appends a 32-byte span to the rank's batch. live_flush() sorts
 * each batch by (thread, end, start descending) — the order in which a tracer that emits a span
 * when it ends writes them, so a parent comes after its children — and keeps, per thread, the
 * spans that have no parent yet (a stack ordered by end). A new span's direct children are the
 * stack's tail entries that start inside it; its self time is its duration minus theirs, final
 * at once (torch's rule, analyse_ops.h), and it replaces them on the stack. The result
 * depends only on the spans and their per-thread end order, not on how they were cut into
 * batches, which is what makes a replay after restart give the live numbers.
 *
 * Steps live in two lists per rank, one from step records and one from step spans, each with
 * its own spans, so neither depends on whether a step's record came before or after its spans:
 * a span that no step covers yet waits in the list's pending array until its step arrives. The
 * snapshot shows the record list when it has steps, else the span list. FP/BP points of a step
 * are recomputed when a snapshot is built after its spans changed, and settle (spans freed) only
 * when the rank keeps more than LIVE_RANK_SPANS_MAX spans.
 */
#include "live.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../analyse/analyse_queues.h"
#include "../analyse/analyse_roles.h"
#include "../analyse/analyse_steptrace.h"
#include "../analyse/analyse_summary.h"
#include "../../lib/clock.h"
#include "../../lib/num.h"
#include "live_int.h"

/* ---- interning: (k1, k2) byte pairs to dense indexes ---- */

struct kent {
    uint64_t hash;
    size_t off1; /* into ktab.text; k1 then k2, each followed by a NUL */
    size_t len1;
    size_t off2;
    size_t len2;
};

struct ktab {
    uint32_t *slots; /* index + 1; 0 = empty; cap_slots is a power of two */
    size_t cap_slots;
    struct kent *ents;
    size_t n;
    size_t cap;
    char *text;
    size_t text_len;
    size_t text_cap;
};

static uint64_t hash_bytes(uint64_t h, const char *p, size_t n)
{
    const uint64_t m = 0x9e3779b97f4a7c15u;
    const char *end = n ? p + n : p; /* p may be NULL for an absent field, with n 0 */
    bool whole_word = n >= 8;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * m;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    /* The last 0-7 bytes by fixed-size loads inside the key (overlapping what came before): a
     * copy of a variable length was a call, and its load then waited for the stores. */
    uint64_t w = 0;
    if (n == 0) {
        /* nothing left */
    } else if (whole_word) {
        memcpy(&w, end - 8, 8);
    } else if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, end - 4, 4);
        w = lo | (uint64_t)hi << 32;
    } else {
        w = (uint64_t)(unsigned char)p[0] | (uint64_t)(unsigned char)p[n / 2] << 8 |
            (uint64_t)(unsigned char)p[n - 1] << 16;
    }
    h = (h ^ w ^ ((uint64_t)n << 56)) * m;
    h ^= h >> 32;
    return h;
}

/* hash_bytes() of a key, or for a long one (GPU kernel names run to hundreds of bytes, one per
 * event) of its first and last 16 bytes and its length: lookups compare whole keys, so a shared
 * middle only costs a probe, and the index a key gets does not depend on its hash. */
static inline uint64_t hash_key(uint64_t h, const char *p, size_t n)
{
    if (n <= 32)
        return hash_bytes(h, p, n);
    const uint64_t m = 0x9e3779b97f4a7c15u;
    uint64_t w[4];
    memcpy(&w[0], p, 16);
    memcpy(&w[2], p + n - 16, 16);
    h ^= (uint64_t)n << 56;
    for (int i = 0; i < 4; i++) {
        h = (h ^ w[i]) * m;
        h ^= h >> 29;
    }
    return h;
}

/* memcmp() that accepts a NULL pointer with n == 0 (an absent pid, tid or cat). */
static bool bytes_eq(const char *a, const char *b, size_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static int ktab_rehash(struct ktab *t, size_t cap_slots)
{
    uint32_t *s = calloc(cap_slots, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = (size_t)t->ents[i].hash & (cap_slots - 1);
        while (s[j])
            j = (j + 1) & (cap_slots - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = s;
    t->cap_slots = cap_slots;
    return 0;
}

/* Finds or adds (k1, k2). Returns 1 and sets *ret_idx; 0 if absent and the table holds max
 * keys already; -ENOMEM. */
static int ktab_get(struct ktab *t, const char *k1, size_t l1, const char *k2, size_t l2,
                    size_t max, uint32_t *ret_idx)
{
    uint64_t h = hash_key(hash_key(0x1234567u, k1, l1), k2, l2);
    if (t->cap_slots) {
        size_t j = (size_t)h & (t->cap_slots - 1);
        uint32_t v;
        while ((v = t->slots[j]) != 0) {
            const struct kent *e = &t->ents[v - 1];
            if (e->hash == h && e->len1 == l1 && e->len2 == l2 &&
                bytes_eq(t->text + e->off1, k1, l1) && bytes_eq(t->text + e->off2, k2, l2)) {
                *ret_idx = v - 1;
                return 1;
            }
            j = (j + 1) & (t->cap_slots - 1);
        }
    }
    if (t->n >= max)
        return 0;
    if ((t->n + 1) * 2 > t->cap_slots && ktab_rehash(t, t->cap_slots ? t->cap_slots * 2 : 64) < 0)
        return -ENOMEM;
    if (grow((void **)&t->ents, &t->cap, t->n + 1, sizeof *t->ents) < 0 ||
        grow((void **)&t->text, &t->text_cap, t->text_len + l1 + l2 + 2, 1) < 0)
        return -ENOMEM;
    struct kent *e = &t->ents[t->n];
    e->hash = h;
    e->off1 = t->text_len;
    e->len1 = l1;
    if (l1)
        memcpy(t->text + t->text_len, k1, l1);
    t->text[t->text_len + l1] = '\0';
    t->text_len += l1 + 1;
    e->off2 = t->text_len;
    e->len2 = l2;
    if (l2)
        memcpy(t->text + t->text_len, k2, l2);
    t->text[t->text_len + l2] = '\0';
    t->text_len += l2 + 1;
    size_t j = (size_t)h & (t->cap_slots - 1);
    while (t->slots[j])
        j = (j + 1) & (t->cap_slots - 1);
    t->slots[j] = (uint32_t)t->n + 1;
    *ret_idx = (uint32_t)t->n++;
    return 1;
}

static void ktab_done(struct ktab *t)
{
    free(t->slots);
    free(t->ents);
    free(t->text);
}

/* ---- state ---- */

/* A span in a batch, under a step or pending. */
struct live_span {
    int64_t ts_ns;
    int64_t end_ns;
    uint32_t op;     /* job op index, or LIVE_OP_OTHER */
    uint32_t thread; /* batch: rank thread index */
    uint32_t order;  /* batch: arrival index */
    uint8_t role;    /* enum analyse_role */
};

struct live_open {
    int64_t ts_ns;
    int64_t end_ns;
    uint32_t op; /* spine: the span's op, whose self time its children take away */
};

/* Self time follows torch's walk (profiler_util.py _populate_cpu_children): spans sorted by
 * (start, -end, arrival), a span's parent is the nearest earlier span in that order that still
 * contains it. A thread's spans that arrive in that order (torch's legacy export, stepscope's
 * streams) are walked forward across flushes with the walk's stack kept in `spine`; spans that
 * arrive before an earlier-starting container (tracers that emit a span when it ends) are walked
 * backwards, each container taking its children from `open`, the spans that had no parent yet. */
struct live_thread {
    struct live_open *open; /* spans without a parent yet */
    size_t n;
    size_t cap;
    struct live_open *spine; /* torch's walk stack after the latest span in sort order */
    size_t n_spine;
    size_t cap_spine;
    bool seen;               /* last_ts/last_end hold the latest (start, -end) walked */
    int64_t last_ts;
    int64_t last_end;
};

struct live_step {
    int64_t step;
    int64_t begin_ns;
    int64_t end_ns;
    int64_t samples;
    bool from_record;
    bool profiled;        /* a record step that a step span of its number covers (LIST_SPAN) */
    bool has_phases;
    int64_t ph_data_ns;   /* phases.dataloader */
    int64_t ph_fwdbwd_ns; /* phases.forward + phases.backward */
    bool dirty;           /* spans changed since the points were computed */
    bool settled;         /* spans freed; points final */
    int64_t spans_seen;   /* spans assigned to the step, kept or not (the timeline's hint) */
    struct live_span *spans;
    size_t n_spans;
    size_t cap_spans;
    size_t n_sorted;      /* spans[0, n_sorted) are in cmp_span_exec order (appends go after) */
    bool has_trace;       /* trace points below are valid */
    int64_t fp_ns;
    int64_t bp_ns;
    uint32_t fp_op;
    uint32_t bp_op;
    uint8_t fp_origin;
    uint8_t bp_origin;
    struct live_comm *comm; /* the step's communication ops (reduce lines), kept once settled */
    uint32_t n_comm;
};

struct live_steplist {
    struct live_step *steps; /* by begin_ns */
    size_t n;
    size_t cap;
    size_t n_settled;        /* steps[0, n_settled) are settled */
    size_t hint;             /* step_find(): the last step found to begin at or before a span */
    bool unordered;          /* steps are not all by begin_ns (a step came before settled ones) */
    size_t kept_spans;       /* spans held by unsettled steps */
    struct live_span *pending;
    size_t n_pending;
    size_t cap_pending;
};

enum { LIST_RECORD, LIST_SPAN, LIST_COUNT };

/* One queue's series on the loop side. */
struct live_queue {
    char *name;                           /* NUL-terminated, owned; at most LIVE_QUEUE_NAME_MAX */
    size_t name_len;
    struct analyse_queue_sample *samples; /* arrival order */
    size_t n;
    size_t cap;
};

struct live_rank {
    int64_t rank;
    struct live_queue *queues; /* [n_queues], by first appearance */
    size_t n_queues;
    size_t cap_queues;
    bool queues_dirty;         /* a sample arrived since qset was built */
    struct live_qset *qset;    /* the last published set (a reference), NULL before any */
    struct live_pipe *pipe;    /* the latest pipeline record (a reference), NULL before any */
    struct live_host host;     /* running sums of the host records' CPU figures */
    struct ktab threads;
    struct live_thread *th; /* [threads.n] plus one shared slot at LIVE_THREADS_MAX */
    size_t cap_th;
    struct live_thread shared;
    char last_key[32];      /* pid '\0' tid of the last span fed: most runs share one thread */
    size_t last_key_len;
    uint32_t last_th;
    struct live_span *batch;
    size_t n_batch;
    size_t cap_batch;
    struct live_agg *agg;   /* by job op index */
    size_t n_agg;
    struct live_agg other;
    struct live_steplist lists[LIST_COUNT];
    struct live_bd bd;      /* the spans of the step-time breakdown (live_breakdown.c) */
    struct live_counters c;
};

struct live_job {
    int64_t id;
    struct ktab ops;          /* (name, cat) */
    uint8_t *roles;           /* [ops.n] */
    size_t cap_roles;
    size_t n_roles_done;      /* roles[0, n_roles_done) are classified */
    uint8_t *name_bits;       /* [ops.n]: analyse_steptrace_name_bits() of each op's name */
    size_t cap_name_bits;
    size_t n_name_bits;       /* name_bits[0, n_name_bits) are computed */
    struct live_rank **ranks;
    size_t n_ranks;
    size_t cap_ranks;
    struct live_rank *last;   /* lookup cache */
    bool dirty;               /* fed since the last publish */
    uint64_t bytes;           /* accounted at the last publish (job_bytes()) */
    int64_t used_ns;          /* last fed (stamp()) */
    char env[6][RECORD_NAME_MAX + 1]; /* live_job_env()'s fields, in its order; "" = not set */
    size_t bd_max;            /* breakdown spans each rank keeps (live_bd.max_spans) */
};

struct pub {
    int64_t job_id;
    struct live_snapshot *snap;
    uint64_t seq;             /* live.pub_seq when snap was published */
    int64_t used_ns;          /* last live_ensure() (stamp()), 0 = none */
};

/* An evicted job, and the steps its last snapshot listed for the rank with the most (-1: not
 * known, a job marked at start-up that was never in memory). */
struct live_evicted {
    int64_t job_id;
    int64_t steps;
};

/* The steps snap lists for rank (rank < 0: the rank with the most), -1 for NULL snap or no such
 * rank. */
static int64_t snap_steps(const struct live_snapshot *snap, int64_t rank)
{
    int64_t n = -1;
    for (size_t i = 0; snap && i < snap->n_ranks; i++)
        if ((rank < 0 || snap->ranks[i].rank == rank) && (int64_t)snap->ranks[i].n_steps > n)
            n = (int64_t)snap->ranks[i].n_steps;
    return n;
}

struct live {
    struct live_job **jobs;
    int64_t *job_ids;         /* jobs[i]->id, contiguous: job_get() scans these */
    size_t n_jobs;
    size_t cap_jobs;
    size_t cap_job_ids;
    size_t max_jobs;          /* live_config.max_jobs; past it a new job is refused */
    int64_t *untracked;       /* ids of the jobs refused past max_jobs (under lock), at most
                                 LIVE_UNTRACKED_LIST; n_untracked counts them all */
    size_t n_untracked_list;
    size_t cap_untracked;
    _Atomic uint64_t n_untracked;
    struct live_job *last;
    int64_t dropped;          /* records of jobs past LIVE_JOBS_MAX or lost to OOM */
    struct analyse_span *scratch; /* FP/BP derivation */
    size_t cap_scratch;
    uint8_t *scratch_bits;        /* the name bits of scratch's spans */
    size_t cap_scratch_bits;
    struct live_span *merge;      /* sort_spans()'s copy of the spans appended since the last sort */
    size_t cap_merge;
    struct live_span *by_thread;  /* sort_batch()'s copy of a batch, grouped by thread */
    size_t cap_by_thread;
    size_t *thread_at;            /* sort_batch()'s counts, then offsets, per thread */
    size_t cap_thread_at;
    pthread_mutex_t lock;     /* guards pub and pub_seq only */
    uint64_t pub_seq;         /* publications so far (live_query_changed()) */
    struct pub *pub;
    size_t n_pub;
    uint64_t pub_serial;  /* serials handed to published snapshots (under lock) */
    size_t cap_pub;
    _Atomic uint64_t bytes;   /* sum of the jobs' accounted bytes */
    _Atomic int64_t stamp;    /* the latest use stamp handed out (stamp()) */
    struct live_evicted *evicted; /* evicted jobs, unordered (under lock) */
    size_t n_evicted;
    size_t cap_evicted;
    live_reload_fn reload;    /* live_set_reload() */
    void *reload_ud;
    const struct analyse_rules *rules; /* live_config.rules, borrowed */
    size_t bd_max_import;              /* breakdown spans per rank of an imported job */
    char *fp_point;                    /* live_config's, owned; NULL = none */
    char *bp_point;
};

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
    lv->max_jobs = LIVE_JOBS_MAX;
    lv->bd_max_import = LIVE_BD_SPANS_MAX;
    if (cfg) {
        if (cfg->max_jobs > 0 && cfg->max_jobs < LIVE_JOBS_MAX)
            lv->max_jobs = cfg->max_jobs;
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

static void steplist_done(struct live_steplist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->steps[i].spans);
        free(l->steps[i].comm);
    }
    free(l->steps);
    free(l->pending);
}

static void rank_free(struct live_rank *rk)
{
    if (!rk)
        return;
    ktab_done(&rk->threads);
    for (size_t i = 0; i < rk->threads.n && rk->th; i++) {
        free(rk->th[i].open);
        free(rk->th[i].spine);
    }
    free(rk->th);
    free(rk->shared.open);
    free(rk->shared.spine);
    free(rk->batch);
    free(rk->agg);
    for (int i = 0; i < LIST_COUNT; i++)
        steplist_done(&rk->lists[i]);
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

static void job_free(struct live_job *j)
{
    if (!j)
        return;
    ktab_done(&j->ops);
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
        job_free(lv->jobs[i]);
    free(lv->jobs);
    free(lv->job_ids);
    free(lv->untracked);
    for (size_t i = 0; i < lv->n_pub; i++)
        live_snapshot_put(lv->pub[i].snap);
    free(lv->pub);
    free(lv->evicted);
    free(lv->scratch);
    free(lv->scratch_bits);
    free(lv->merge);
    free(lv->by_thread);
    free(lv->thread_at);
    free(lv->fp_point);
    free(lv->bp_point);
    pthread_mutex_destroy(&lv->lock);
    free(lv);
}

/* A strictly rising clock_mono_ns(), so that two uses never tie in the LRU order. Any thread. */
static int64_t stamp(struct live *lv)
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

/* Index of job_id in lv->evicted, or -1. Under lv->lock. */
static ptrdiff_t evicted_find(const struct live *lv, int64_t job_id)
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
    ptrdiff_t e = evicted_find(lv, job_id);
    if (mark && e < 0 &&
        grow((void **)&lv->evicted, &lv->cap_evicted, lv->n_evicted + 1, sizeof *lv->evicted) < 0) {
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
        lv->evicted[lv->n_evicted++] = (struct live_evicted){job_id, snap_steps(old, -1)};
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
        job_free(lv->jobs[i]);
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
static void untrack(struct live *lv, int64_t job_id)
{
    pthread_mutex_lock(&lv->lock);
    if (!untracked_has(lv, job_id)) {
        atomic_fetch_add_explicit(&lv->n_untracked, 1, memory_order_relaxed);
        if (lv->n_untracked_list < LIVE_UNTRACKED_LIST &&
            grow((void **)&lv->untracked, &lv->cap_untracked, lv->n_untracked_list + 1,
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

size_t live_jobs(const struct live *lv)
{
    return lv ? lv->n_jobs : 0;
}

void live_drop_job(struct live *lv, int64_t job_id)
{
    (void)drop_job(lv, job_id, false, INT64_MAX);
}

static struct live_job *job_get(struct live *lv, int64_t id)
{
    if (lv->last && lv->last->id == id)
        return lv->last;
    for (size_t i = 0; i < lv->n_jobs; i++)
        if (lv->job_ids[i] == id)
            return lv->last = lv->jobs[i];
    /* Past max_jobs a new job is refused, and stays refused (its analysis would lack what came
     * before): counted, and its answers say so (live_is_untracked()). A refused job is not
     * evicted, so it is not reloaded either; a restart replays it if there is room then. */
    if (lv->n_jobs >= lv->max_jobs ||
        (atomic_load_explicit(&lv->n_untracked, memory_order_relaxed) > 0 &&
         live_is_untracked(lv, id))) {
        untrack(lv, id);
        return NULL;
    }
    if (grow((void **)&lv->jobs, &lv->cap_jobs, lv->n_jobs + 1, sizeof *lv->jobs) < 0 ||
        grow((void **)&lv->job_ids, &lv->cap_job_ids, lv->n_jobs + 1, sizeof *lv->job_ids) < 0)
        return NULL;
    struct live_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->id = id;
    j->used_ns = stamp(lv);
    lv->job_ids[lv->n_jobs] = id;
    j->bd_max = LIVE_BD_SPANS_MAX;
    lv->jobs[lv->n_jobs++] = j;
    return lv->last = j;
}

static struct live_rank *rank_get(struct live_job *j, int64_t rank)
{
    if (j->last && j->last->rank == rank)
        return j->last;
    for (size_t i = 0; i < j->n_ranks; i++)
        if (j->ranks[i]->rank == rank)
            return j->last = j->ranks[i];
    if (j->n_ranks >= LIVE_RANKS_MAX ||
        grow((void **)&j->ranks, &j->cap_ranks, j->n_ranks + 1, sizeof *j->ranks) < 0)
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

/* ---- steps ---- */

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
static void step_add_span(struct live_steplist *l, struct live_step *s, const struct live_span *sp,
                          struct live_counters *c)
{
    s->spans_seen++;
    if (s->settled) {
        c->late_spans++;
        return;
    }
    if (s->n_spans >= LIVE_STEP_SPANS_MAX ||
        grow((void **)&s->spans, &s->cap_spans, s->n_spans + 1, sizeof *s->spans) < 0) {
        c->step_spans_dropped++;
        return;
    }
    s->spans[s->n_spans++] = *sp;
    s->dirty = true;
    l->kept_spans++;
}

/* Keeps sp until a step that covers it is inserted (what no room is left for is counted). */
static void l_pending_add(struct live_steplist *l, const struct live_span *sp,
                          struct live_counters *c)
{
    if (l->n_pending >= LIVE_PENDING_MAX) {
        size_t drop = LIVE_PENDING_MAX / 2;
        c->unassigned += (int64_t)drop;
        memmove(l->pending, l->pending + drop, (l->n_pending - drop) * sizeof *l->pending);
        l->n_pending -= drop;
    }
    if (grow((void **)&l->pending, &l->cap_pending, l->n_pending + 1, sizeof *l->pending) < 0) {
        c->unassigned++;
        return;
    }
    l->pending[l->n_pending++] = *sp;
}

static void list_add_span(struct live_steplist *l, const struct live_span *sp,
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
    const struct live_span *x = a, *y = b;
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
        if (grow((void **)&j->name_bits, &j->cap_name_bits, j->ops.n, 1) < 0)
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
static void sort_exec(struct live_span *v, size_t n, struct live_span *tmp)
{
    enum { RUN = 16 };
    for (size_t a = 0; a < n; a += RUN) {
        size_t b = n - a < RUN ? n : a + RUN;
        for (size_t i = a + 1; i < b; i++) {
            struct live_span x = v[i];
            size_t j = i;
            for (; j > a && cmp_span_exec(&v[j - 1], &x) > 0; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
    }
    struct live_span *src = v, *dst = tmp;
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
        struct live_span *t = src;
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
    struct live_span *v = s->spans;
    if (t > 0 && grow((void **)&lv->merge, &lv->cap_merge, t, sizeof *v) < 0) {
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
        const struct live_span *tail = lv->merge;
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
static int64_t comm_stream(const struct live_job *j, const struct live_span *sp, uint8_t bits)
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
            const struct live_span *sp = &s->spans[i];
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
    if (grow((void **)&lv->scratch, &lv->cap_scratch, s->n_spans, sizeof *lv->scratch) < 0)
        return;
    const uint8_t *op_bits = job_name_bits(j);
    uint8_t *bits = NULL;
    if (op_bits && grow((void **)&lv->scratch_bits, &lv->cap_scratch_bits, s->n_spans, 1) == 0)
        bits = lv->scratch_bits;
    uint8_t other_bits =
        (uint8_t)analyse_steptrace_name_bits(LIVE_OTHER_NAME, sizeof LIVE_OTHER_NAME - 1);
    /* Execution order, made canonical so the points do not depend on arrival order. */
    sort_spans(lv, s);
    step_comm(j, s, op_bits, c);
    for (size_t i = 0; i < s->n_spans; i++) {
        const struct live_span *sp = &s->spans[i];
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
    if (grow((void **)&l->steps, &l->cap, l->n + 1, sizeof *l->steps) < 0)
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
        const struct live_span *sp = &l->pending[i];
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

/* Reads phases {"dataloader":us,"forward":us,...}: the sums the points need. */
static void parse_phases(const char *p, size_t n, struct live_step *s)
{
    int64_t data = 0, fwd = 0, bwd = 0;
    bool have = false;
    size_t i = 0;
    while (i < n) {
        const char *q = memchr(p + i, '"', n - i);
        if (!q)
            break;
        size_t ks = (size_t)(q - p) + 1;
        const char *qe = memchr(p + ks, '"', n - ks);
        if (!qe)
            break;
        size_t ke = (size_t)(qe - p);
        size_t v = ke + 1;
        while (v < n && (p[v] == ' ' || p[v] == ':' || p[v] == '\t'))
            v++;
        size_t ve = v;
        while (ve < n && p[ve] != ',' && p[ve] != '}')
            ve++;
        int64_t ns;
        if (num_us_to_ns(p + v, ve - v, &ns) == 0) {
            const char *k = p + ks;
            size_t kl = ke - ks;
            if (kl == 10 && memcmp(k, "dataloader", 10) == 0) {
                data = ns;
                have = true;
            } else if (kl == 7 && memcmp(k, "forward", 7) == 0) {
                fwd = ns;
                have = true;
            } else if (kl == 8 && memcmp(k, "backward", 8) == 0) {
                bwd = ns;
                have = true;
            }
        }
        i = ve + 1;
    }
    s->has_phases = have && (fwd > 0 || bwd > 0);
    s->ph_data_ns = data;
    s->ph_fwdbwd_ns = fwd + bwd;
}

static void feed_step_record(struct live_rank *rk, const struct record *r)
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
    if (r->phases.len)
        parse_phases(r->phases.ptr, r->phases.len, &s);
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
static int64_t step_number(const char *name, size_t len)
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

/* ---- feeding ---- */

/* Queue samples are rare (one per queue and step), so a linear search over the rank's few
 * queues and an occasional allocation cost nothing next to the trace events. */
static void feed_queue(struct live_rank *rk, const struct record *r)
{
    size_t len = r->name.len < LIVE_QUEUE_NAME_MAX ? r->name.len : LIVE_QUEUE_NAME_MAX;
    struct live_queue *q = NULL;
    for (size_t i = 0; i < rk->n_queues; i++) {
        if (rk->queues[i].name_len == len && bytes_eq(rk->queues[i].name, r->name.ptr, len)) {
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
        if (!name || grow((void **)&rk->queues, &rk->cap_queues, rk->n_queues + 1,
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
    if (grow((void **)&q->samples, &q->cap, q->n + 1, sizeof *q->samples) < 0) {
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
    int e = live__pipe_parse(r->raw, r->raw_len, &pl);
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
    int64_t dev = -1;
    if (role == ANALYSE_ROLE_KERNEL || role == ANALYSE_ROLE_MEMCPY ||
        role == ANALYSE_ROLE_MEMSET) {
        if (num_parse_i64(r->pid.ptr, r->pid.len, &dev) < 0 || dev < 0 || dev > INT16_MAX)
            dev = -1;
    }
    /* A step span past the ops cap has no name to read its number from later: keep it. */
    int64_t corr = r->correlation;
    if (role == ANALYSE_ROLE_STEP && op == LIVE_OP_OTHER)
        corr = step_number(r->name.ptr, r->name.len);
    struct live_bd_span sp = {
        .ts_ns = r->ts_ns, .end_ns = r->ts_ns + r->dur_ns, .correlation = corr,
        .external_id = r->external_id, .op = op, .device = (int16_t)dev, .role = (uint8_t)role,
    };
    if (live__bd_add(&rk->bd, &sp) < 0)
        rk->c.dropped++;
}

/* Files the step of a step span named name (ProfilerStep#N) in the rank's span-step list, once
 * per number. Returns 0 (also for a name without a number), -ENOMEM. */
static int add_span_step(struct live_rank *rk, const char *name, size_t len, int64_t begin_ns,
                         int64_t end_ns)
{
    struct live_steplist *spl = &rk->lists[LIST_SPAN];
    int64_t num = step_number(name, len);
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
static void record_add_span(struct live_rank *rk, const struct live_span *sp)
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
    list_add_span(rl, sp, &rk->c);
}

int live_feed(struct live *lv, int64_t job_id, int64_t rank, const struct record *recs, size_t n)
{
    if (n == 0)
        return 0;
    struct live_job *j = job_get(lv, job_id);
    struct live_rank *rk = j ? rank_get(j, rank) : NULL;
    if (!rk) {
        lv->dropped += (int64_t)n;
        return -ENOMEM;
    }
    j->dirty = true;
    j->used_ns = stamp(lv);
    if (grow((void **)&rk->batch, &rk->cap_batch, rk->n_batch + n, sizeof *rk->batch) < 0) {
        rk->c.dropped += (int64_t)n;
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct record *r = &recs[i];
        if (r->kind != RECORD_TRACE) {
            if (r->kind == RECORD_STEP)
                feed_step_record(rk, r);
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
        int k = ktab_get(&j->ops, r->name.ptr, r->name.len, r->cat.ptr, r->cat.len, LIVE_OPS_MAX,
                         &op);
        if (k < 0) {
            rk->c.dropped++;
            continue;
        }
        if (k == 1 && op >= j->cap_roles) {
            if (grow((void **)&j->roles, &j->cap_roles, (size_t)op + 1, 1) < 0) {
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
                add_span_step(rk, r->name.ptr, r->name.len, r->ts_ns, r->ts_ns + r->dur_ns);
        } else if (op == j->ops.n - 1 && j->ops.n > j->n_roles_done) {
            role = analyse_role_of(&a, lv->rules);
            j->roles[op] = (uint8_t)role;
            j->n_roles_done = j->ops.n;
        } else {
            role = (enum analyse_role)j->roles[op];
        }
        uint32_t th;
        size_t kl = r->pid.len + 1 + r->tid.len;
        if (kl == rk->last_key_len && bytes_eq(rk->last_key, r->pid.ptr, r->pid.len) &&
            bytes_eq(rk->last_key + r->pid.len + 1, r->tid.ptr, r->tid.len)) {
            th = rk->last_th;
        } else {
            k = ktab_get(&rk->threads, r->pid.ptr, r->pid.len, r->tid.ptr, r->tid.len,
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
                if (r->pid.len)
                    memcpy(rk->last_key, r->pid.ptr, r->pid.len);
                rk->last_key[r->pid.len] = '\0';
                if (r->tid.len)
                    memcpy(rk->last_key + r->pid.len + 1, r->tid.ptr, r->tid.len);
                rk->last_key_len = kl;
                rk->last_th = th;
            }
        }
        struct live_span *sp = &rk->batch[rk->n_batch];
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

int live_job_env(struct live *lv, int64_t job_id, const struct live_job_env *env)
{
    const char *v[6] = {env->stepscope_fp, env->stepscope_bp, env->profiling_fp,
                        env->profiling_bp, env->mindspore_fp, env->mindspore_bp};
    for (size_t i = 0; i < 6; i++)
        if (v[i] && strlen(v[i]) > RECORD_NAME_MAX)
            return -ENAMETOOLONG;
    struct live_job *j = NULL;
    if (env->imported && lv->bd_max_import > LIVE_BD_SPANS_MAX) {
        if (!(j = job_get(lv, job_id)))
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
        if (!j && !(j = job_get(lv, job_id)))
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

/* ---- flushing ---- */

/* Batch order: by thread, then torch's nesting order: start ascending, end descending, arrival
 * (of two equal intervals the earlier-fed one is the parent). */
static int cmp_batch(const void *a, const void *b)
{
    const struct live_span *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns ? -1 : 1;
    if (x->end_ns != y->end_ns)
        return x->end_ns > y->end_ns ? -1 : 1;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return 0;
}

/* Sorts v[0, n), the nesting spans of rk's batch, as qsort with cmp_batch would: grouped by thread
 * (a counting pass), then each thread's run sorted unless it already is, which is the usual case
 * (tracers and the importer send a thread's spans in that order; only threads interleave).
 * cmp_batch is a total order (order is unique in a batch), so the result is the same. */
static void sort_batch(struct live *lv, const struct live_rank *rk, struct live_span *v, size_t n)
{
    size_t nt = rk->threads.n + 1; /* the last slot is the shared thread, LIVE_THREADS_MAX */
    if (n < 2)
        return;
    if (grow((void **)&lv->thread_at, &lv->cap_thread_at, nt + 1, sizeof *lv->thread_at) < 0 ||
        grow((void **)&lv->by_thread, &lv->cap_by_thread, n, sizeof *v) < 0) {
        qsort(v, n, sizeof *v, cmp_batch);
        return;
    }
    size_t *at = lv->thread_at;
    memset(at, 0, (nt + 1) * sizeof *at);
    for (size_t i = 0; i < n; i++)
        at[(v[i].thread < nt - 1 ? v[i].thread : nt - 1) + 1]++;
    for (size_t k = 1; k <= nt; k++)
        at[k] += at[k - 1];
    struct live_span *w = lv->by_thread;
    for (size_t i = 0; i < n; i++)
        w[at[v[i].thread < nt - 1 ? v[i].thread : nt - 1]++] = v[i];
    /* at[k] is now the end of slot k's run. */
    for (size_t k = 0, a = 0; k < nt; a = at[k++]) {
        for (size_t i = a + 1; i < at[k]; i++) {
            if (cmp_batch(&w[i - 1], &w[i]) > 0) {
                qsort(w + a, at[k] - a, sizeof *w, cmp_batch);
                break;
            }
        }
    }
    memcpy(v, w, n * sizeof *v);
}

static bool role_nests(unsigned role)
{
    return (ANALYSE_ROLES_HOST & ANALYSE_ROLE_BIT(role)) != 0;
}

/* The roles analyse_steptrace_points() looks at. */
static bool role_for_steps(unsigned role)
{
    switch ((enum analyse_role)role) {
    case ANALYSE_ROLE_HOST_OP:
    case ANALYSE_ROLE_KERNEL:
    case ANALYSE_ROLE_FORWARD:
    case ANALYSE_ROLE_BACKWARD:
    case ANALYSE_ROLE_OPTIMIZER:
    case ANALYSE_ROLE_COMMUNICATION:
    case ANALYSE_ROLE_OTHER:
    case ANALYSE_ROLE_DATALOADER:
    case ANALYSE_ROLE_STEP:
        return true;
    default:
        return false;
    }
}

static void agg_add(struct live_agg *a, int64_t dur, int64_t self)
{
    if (a->calls == 0 || dur < a->min_ns)
        a->min_ns = dur;
    if (a->calls == 0 || dur > a->max_ns)
        a->max_ns = dur;
    a->calls++;
    a->total_ns = num_sat_add(a->total_ns, dur);
    a->self_ns = num_sat_add(a->self_ns, self);
}

static struct live_agg *agg_of(struct live_rank *rk, uint32_t op)
{
    return op == LIVE_OP_OTHER ? &rk->other : &rk->agg[op];
}

/* Pushes o on a bounded stack (past LIVE_STACK_MAX its older half goes, counted). */
static void stack_push(struct live_open **v, size_t *n, size_t *cap, struct live_open o,
                       struct live_counters *c)
{
    if (*n >= LIVE_STACK_MAX) {
        size_t drop = LIVE_STACK_MAX / 2;
        memmove(*v, *v + drop, (*n - drop) * sizeof **v);
        *n -= drop;
        c->stack_dropped += (int64_t)drop;
    }
    if (grow((void **)v, cap, *n + 1, sizeof **v) == 0)
        (*v)[(*n)++] = o;
    else
        c->stack_dropped++;
}

/* Torch's walk, forward: sp comes after every span walked on t so far. Its parent is the top of
 * the spine once the spans that cannot contain it are popped; the parent's self time loses sp's
 * duration. A span without a parent waits in `open` for a container that arrives later. */
static void nest_forward(struct live_rank *rk, struct live_thread *t, const struct live_span *sp)
{
    int64_t dur = sp->end_ns - sp->ts_ns;
    while (t->n_spine > 0) {
        const struct live_open *p = &t->spine[t->n_spine - 1];
        /* torch: "if event.start >= parent.end or event.end > parent.end: pop". */
        if (sp->ts_ns >= p->end_ns || sp->end_ns > p->end_ns)
            t->n_spine--;
        else
            break;
    }
    if (t->n_spine > 0)
        agg_of(rk, t->spine[t->n_spine - 1].op)->self_ns -= dur;
    else
        stack_push(&t->open, &t->n, &t->cap, (struct live_open){sp->ts_ns, sp->end_ns, sp->op}, &rk->c);
    stack_push(&t->spine, &t->n_spine, &t->cap_spine, (struct live_open){sp->ts_ns, sp->end_ns, sp->op},
               &rk->c);
    agg_add(agg_of(rk, sp->op), dur, dur);
}

/* Self time of sp on its thread t, which becomes an open span there. */
static int64_t nest(struct live_thread *t, const struct live_span *sp, struct live_counters *c)
{
    int64_t children = 0;
    while (t->n > 0) {
        const struct live_open *o = &t->open[t->n - 1];
        if (o->ts_ns < sp->ts_ns || o->end_ns > sp->end_ns || o->ts_ns >= sp->end_ns)
            break;
        children += o->end_ns - o->ts_ns;
        t->n--;
    }
    stack_push(&t->open, &t->n, &t->cap, (struct live_open){sp->ts_ns, sp->end_ns, sp->op}, c);
    return sp->end_ns - sp->ts_ns - children;
}

/* The order a tracer emits complete spans in: by end (a parent that ends with its child comes
 * after it), of two equal intervals the later-fed one first (it is the child). */
static int cmp_end_order(const void *a, const void *b)
{
    const struct live_span *x = a, *y = b;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns > y->ts_ns ? -1 : 1;
    if (x->order != y->order)
        return x->order > y->order ? -1 : 1;
    return 0;
}

/* Walks the nesting spans batch[a, b) of one thread (in cmp_batch order) and adds them to the
 * aggregates. In order after what t walked before: torch's walk, forward. Otherwise by end, each
 * span taking as children the open spans it contains (exact for spans that nest properly). */
static void nest_thread(struct live_rank *rk, struct live_thread *t, struct live_span *batch,
                        size_t a, size_t b)
{
    const struct live_span *first = &batch[a];
    struct live_span last = batch[b - 1];
    bool in_order = !t->seen || first->ts_ns > t->last_ts ||
                    (first->ts_ns == t->last_ts && first->end_ns <= t->last_end);
    if (in_order) {
        for (size_t i = a; i < b; i++)
            nest_forward(rk, t, &batch[i]);
    } else {
        qsort(batch + a, b - a, sizeof *batch, cmp_end_order);
        for (size_t i = a; i < b; i++) {
            const struct live_span *sp = &batch[i];
            agg_add(agg_of(rk, sp->op), sp->end_ns - sp->ts_ns, nest(t, sp, &rk->c));
        }
        t->n_spine = 0; /* the walk's stack is no longer known: later spans start afresh */
    }
    if (in_order || last.ts_ns > t->last_ts || (last.ts_ns == t->last_ts && last.end_ns < t->last_end)) {
        t->last_ts = last.ts_ns;
        t->last_end = last.end_ns;
    }
    t->seen = true;
}

static int zero_grow(void **p, size_t *cap, size_t need, size_t size)
{
    size_t old = *cap;
    if (grow(p, cap, need, size) < 0)
        return -ENOMEM;
    if (*cap > old)
        memset((char *)*p + old * size, 0, (*cap - old) * size);
    return 0;
}

static void settle(struct live *lv, struct live_job *j, struct live_steplist *l,
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

static int rank_flush(struct live *lv, struct live_job *j, struct live_rank *rk)
{
    int r = 0;
    if (rk->n_batch > 0) {
        size_t n_agg = rk->n_agg;
        if (zero_grow((void **)&rk->th, &rk->cap_th, rk->threads.n + 1, sizeof *rk->th) < 0 ||
            zero_grow((void **)&rk->agg, &n_agg, j->ops.n + 1, sizeof *rk->agg) < 0) {
            rk->c.dropped += (int64_t)rk->n_batch;
            rk->n_batch = 0;
            return -ENOMEM;
        }
        rk->n_agg = n_agg;
        /* Only spans that nest (host operators, torch's self-time rule) need the thread order;
         * kernels and the like, most of a GPU trace, are aggregated as they came. */
        size_t n_nest = 0;
        for (size_t i = 0; i < rk->n_batch; i++) {
            if (!role_nests(rk->batch[i].role))
                continue;
            if (i != n_nest) {
                struct live_span tmp = rk->batch[n_nest];
                rk->batch[n_nest] = rk->batch[i];
                rk->batch[i] = tmp;
            }
            n_nest++;
        }
        sort_batch(lv, rk, rk->batch, n_nest);
        /* Step spans first, so the spans of this batch find their step. */
        for (size_t i = 0; i < rk->n_batch; i++) {
            const struct live_span *sp = &rk->batch[i];
            if (sp->role != ANALYSE_ROLE_STEP || sp->op == LIVE_OP_OTHER)
                continue;
            const struct kent *e = &j->ops.ents[sp->op];
            if (add_span_step(rk, j->ops.text + e->off1, e->len1, sp->ts_ns, sp->end_ns) < 0)
                r = -ENOMEM;
        }
        for (size_t a = 0, b; a < n_nest; a = b) {
            uint32_t th = rk->batch[a].thread;
            for (b = a + 1; b < n_nest && rk->batch[b].thread == th; b++)
                ;
            nest_thread(rk, th == LIVE_THREADS_MAX ? &rk->shared : &rk->th[th], rk->batch, a, b);
        }
        for (size_t i = 0; i < rk->n_batch; i++) {
            const struct live_span *sp = &rk->batch[i];
            if (!role_nests(sp->role))
                agg_add(agg_of(rk, sp->op), sp->end_ns - sp->ts_ns, sp->end_ns - sp->ts_ns);
            if (role_for_steps(sp->role)) {
                record_add_span(rk, sp);
                list_add_span(&rk->lists[LIST_SPAN], sp, &rk->c);
            }
        }
        rk->n_batch = 0;
    }
    for (int k = 0; k < LIST_COUNT; k++)
        settle(lv, j, &rk->lists[k], &rk->c);
    return r;
}

/* The points of j's steps whose spans changed since they were computed: only snapshots show
 * them (and settle() computes a step's before dropping its spans), so they are computed when a
 * snapshot is built, not at every flush of a step that is still filling. */
static void job_points(struct live *lv, struct live_job *j)
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

/* ---- snapshots ---- */

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

/* ---- accounting ---- */

static size_t ktab_bytes(const struct ktab *t)
{
    return t->cap_slots * sizeof *t->slots + t->cap * sizeof *t->ents + t->text_cap;
}

static size_t thread_bytes(const struct live_thread *t)
{
    return t->cap * sizeof *t->open + t->cap_spine * sizeof *t->spine;
}

static size_t rank_bytes(const struct live_rank *rk)
{
    size_t b = sizeof *rk + ktab_bytes(&rk->threads) + rk->cap_th * sizeof *rk->th +
               thread_bytes(&rk->shared) + rk->cap_batch * sizeof *rk->batch +
               rk->n_agg * sizeof *rk->agg + rk->cap_queues * sizeof *rk->queues;
    for (size_t i = 0; i < rk->threads.n && rk->th; i++)
        b += thread_bytes(&rk->th[i]);
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
        b += sizeof *rk->pipe + rk->pipe->cap_values * sizeof *rk->pipe->values;
    /* The breakdown chunks: the full ones whole, the last as far as it is written, in pages. A
     * chunk (LIVE_BD_CHUNK spans, 320 KiB) is malloc()'d whole but its pages are touched only as
     * spans are appended, so charging its capacity charged a one-event job 100 times what it
     * holds and filled the budget at ~3 200 small jobs (issue 18). */
    b += rk->bd.cap_chunks * sizeof *rk->bd.chunks;
    if (rk->bd.n_chunks > 0) {
        const struct live_bd_chunk *last = rk->bd.chunks[rk->bd.n_chunks - 1];
        size_t used = offsetof(struct live_bd_chunk, v) + last->n * sizeof last->v[0];
        b += (rk->bd.n_chunks - 1) * sizeof **rk->bd.chunks + (used + 4095) / 4096 * 4096;
    }
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
                 (s->ranks[i].bd.n_chunks + 1) * sizeof *s->ranks[i].bd.chunks;
    }
    return b;
}

static void account(struct live *lv, struct live_job *j, const struct live_snapshot *s)
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
    for (size_t i = 0; i < lv->n_jobs; i++)
        if (lv->job_ids[i] == job_id)
            return lv->jobs[i]->bytes;
    return 0;
}

/* ---- eviction and reload ---- */

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
    bool r = evicted_find(lv, job_id) >= 0;
    pthread_mutex_unlock(&lv->lock);
    return r;
}

void live_reload_done(struct live *lv, int64_t job_id)
{
    pthread_mutex_lock(&lv->lock);
    ptrdiff_t e = evicted_find(lv, job_id);
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
    int64_t now = stamp(lv);
    bool found = false;
    pthread_mutex_lock(&lv->lock);
    for (size_t k = 0; k < lv->n_pub && !found; k++) {
        if (lv->pub[k].job_id == job_id) {
            lv->pub[k].used_ns = now;
            found = true;
        }
    }
    *ret_evicted = !found && evicted_find(lv, job_id) >= 0;
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

int live_publish(struct live *lv)
{
    int r = live_flush(lv);
    for (size_t i = 0; i < lv->n_jobs; i++) {
        struct live_job *j = lv->jobs[i];
        if (!j->dirty)
            continue;
        job_points(lv, j);
        struct live_snapshot *s = snapshot_build(j);
        if (!s) {
            r = -ENOMEM;
            continue;
        }
        struct live_snapshot *old = NULL;
        pthread_mutex_lock(&lv->lock);
        size_t k = 0;
        while (k < lv->n_pub && lv->pub[k].job_id != j->id)
            k++;
        if (k == lv->n_pub) {
            if (grow((void **)&lv->pub, &lv->cap_pub, lv->n_pub + 1, sizeof *lv->pub) < 0) {
                pthread_mutex_unlock(&lv->lock);
                live__snapshot_free(s);
                r = -ENOMEM;
                continue;
            }
            lv->pub[lv->n_pub++] = (struct pub){j->id, NULL, 0, 0};
        }
        old = lv->pub[k].snap;
        s->serial = ++lv->pub_serial;
        lv->pub[k].snap = s;
        lv->pub[k].seq = ++lv->pub_seq;
        pthread_mutex_unlock(&lv->lock);
        account(lv, j, s);
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
    for (size_t k = 0; k < lv->n_pub; k++) {
        if (lv->pub[k].job_id == job_id) {
            atomic_fetch_add_explicit(&lv->pub[k].snap->refs, 1, memory_order_relaxed);
            *ret_snap = lv->pub[k].snap;
            r = 0;
            break;
        }
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
    size_t k = 0;
    while (k < lv->n_pub && lv->pub[k].job_id != job_id)
        k++;
    if (k < lv->n_pub) {
        n = snap_steps(lv->pub[k].snap, rank);
    } else if (rank < 0) {
        ptrdiff_t e = evicted_find(lv, job_id);
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
    for (size_t k = 0; k < lv->n_pub; k++) {
        const struct live_snapshot *snap = lv->pub[k].snap;
        if (lv->pub[k].job_id != job_id || !snap)
            continue;
        for (size_t i = 0; i < snap->n_ranks && n < cap; i++, n++) {
            ret_ranks[n] = snap->ranks[i].rank;
            ret_steps[n] = (int64_t)snap->ranks[i].n_steps;
        }
        break;
    }
    pthread_mutex_unlock(&lv->lock);
    return n;
}

size_t live_query_changed(struct live *lv, uint64_t *cursor, int64_t *ret_ids, size_t cap)
{
    size_t n = 0;
    if (!lv)
        return 0;
    pthread_mutex_lock(&lv->lock);
    for (size_t k = 0; k < lv->n_pub && n < cap; k++)
        if (lv->pub[k].seq > *cursor)
            ret_ids[n++] = lv->pub[k].job_id;
    *cursor = lv->pub_seq;
    pthread_mutex_unlock(&lv->lock);
    return n;
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
