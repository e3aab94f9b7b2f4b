/* SPDX-License-Identifier: MIT */
/*
 * order: each thread's X events in torch's (ts, -dur) order (contract in span_order.h).
 */
#include "span_order.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "num.h"
#include "util.h"

#define NO_THREAD UINT32_MAX /* a line that is not an X event */
#define ORDER_PARALLEL_MIN (1u << 16) /* lines to sort from which a second thread helps */

struct line {
    int64_t ts, end;   /* an X event's start and end, ns */
    uint64_t off;      /* in the spool; also the line's rank in the file */
    uint32_t len;      /* bytes before its '\n' */
    uint32_t thread;   /* index in threads[], or NO_THREAD */
};
_Static_assert(sizeof(struct line) == 32, "32 bytes per line, plus 4 in order_finish()");

struct thread {
    uint64_t hash;
    size_t key_at, key_len;     /* in keys[] */
    int64_t first_ts, first_end; /* the first X event's */
    int64_t last_ts, last_end;  /* the last X event's */
    uint64_t count;             /* X events */
    uint64_t start;             /* after order_finish(): index of its first in lines[] */
    bool unordered;             /* an X event came before one it sorts after */
};

struct order {
    struct line *lines;
    size_t n, cap;
    struct thread *threads;
    size_t n_threads, cap_threads;
    uint32_t *slots;            /* open addressing: thread index + 1, 0 empty */
    size_t n_slots;             /* a power of two, at least twice n_threads */
    char *keys;
    size_t keys_len, keys_cap;
    uint32_t *thread_of;        /* after order_finish(): the thread of each line, file order */
    uint64_t n_unordered;       /* threads whose X events were out of order */
    bool sorted;
};

struct order *order_new(void)
{
    return calloc(1, sizeof(struct order));
}

void order_free(struct order *o)
{
    if (!o)
        return;
    free(o->lines);
    free(o->threads);
    free(o->slots);
    free(o->keys);
    free(o->thread_of);
    free(o);
}

static int grow_slots(struct order *o)
{
    size_t ns = o->n_slots ? o->n_slots * 2 : 64;
    uint32_t *s = calloc(ns, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (size_t t = 0; t < o->n_threads; t++) {
        size_t k = (size_t)o->threads[t].hash & (ns - 1);
        while (s[k])
            k = (k + 1) & (ns - 1);
        s[k] = (uint32_t)t + 1;
    }
    free(o->slots);
    o->slots = s;
    o->n_slots = ns;
    return 0;
}

/* The index of the thread whose key is key[0, n), added if new; -ENOMEM. */
static int64_t thread_of(struct order *o, const char *key, size_t n)
{
    uint64_t h = util_hash(UTIL_HASH_SEED, key, n);
    if (o->n_slots) {
        for (size_t k = (size_t)h & (o->n_slots - 1); o->slots[k]; k = (k + 1) & (o->n_slots - 1)) {
            const struct thread *t = &o->threads[o->slots[k] - 1];
            if (t->hash == h && t->key_len == n && memcmp(o->keys + t->key_at, key, n) == 0)
                return o->slots[k] - 1;
        }
    }
    if (o->n_threads == NO_THREAD - 1)
        return -ENOMEM;
    if ((o->n_threads + 1) * 2 > o->n_slots && grow_slots(o) < 0)
        return -ENOMEM;
    if (util_grow((void **)&o->threads, &o->cap_threads, o->n_threads + 1,
                  sizeof *o->threads) < 0)
        return -ENOMEM;
    if (n > o->keys_cap - o->keys_len) {
        size_t nc = o->keys_cap ? o->keys_cap * 2 : 4096;
        while (nc - o->keys_len < n)
            nc *= 2;
        char *nk = realloc(o->keys, nc);
        if (!nk)
            return -ENOMEM;
        o->keys = nk;
        o->keys_cap = nc;
    }
    memcpy(o->keys + o->keys_len, key, n);
    struct thread *t = &o->threads[o->n_threads];
    *t = (struct thread){.hash = h, .key_at = o->keys_len, .key_len = n};
    o->keys_len += n;
    size_t k = (size_t)h & (o->n_slots - 1);
    while (o->slots[k])
        k = (k + 1) & (o->n_slots - 1);
    o->slots[k] = (uint32_t)o->n_threads + 1;
    return (int64_t)o->n_threads++;
}

/* Whether an X event (ts, end) sorts before (last_ts, last_end) in (ts, -dur) order. */
static bool sorts_before(int64_t ts, int64_t end, int64_t last_ts, int64_t last_end)
{
    return ts < last_ts || (ts == last_ts && end > last_end);
}

int order_note(struct order *o, const struct tscan_event *info, uint64_t off, uint32_t len)
{
    if (util_grow((void **)&o->lines, &o->cap, o->n + 1, sizeof *o->lines) < 0)
        return -ENOMEM;
    struct line *l = &o->lines[o->n];
    *l = (struct line){.off = off, .len = len, .thread = NO_THREAD};
    /* tscan let the event through: an X event has a numeric ts and dur, in range (num.h), and
     * tscan converted them. The thread: "pid" then "tid", as tscan kept them (raw JSON text cut
     * to TSCAN_TEXT_MAX - 1 bytes). */
    if (info->ph == 'X') {
        char key[2 * TSCAN_TEXT_MAX];
        size_t pl = strlen(info->pid), tl = strlen(info->tid);
        memcpy(key, info->pid, pl + 1);
        memcpy(key + pl + 1, info->tid, tl + 1);
        int64_t ti = thread_of(o, key, pl + tl + 2);
        if (ti < 0)
            return -ENOMEM;
        struct thread *t = &o->threads[ti];
        l->thread = (uint32_t)ti;
        l->ts = info->ts_ns;
        l->end = num_sat_add(info->ts_ns, info->dur_ns);
        if (!t->unordered && t->count > 0 &&
            sorts_before(l->ts, l->end, t->last_ts, t->last_end)) {
            t->unordered = true;
            o->n_unordered++;
        }
        if (t->count == 0) {
            t->first_ts = l->ts;
            t->first_end = l->end;
        }
        t->last_ts = l->ts;
        t->last_end = l->end;
        t->count++;
    }
    o->n++;
    return 0;
}

int order_append(struct order *o, const struct order *b, uint64_t shift)
{
    if (o->sorted || b->sorted)
        return -EINVAL;
    uint32_t *map = malloc((b->n_threads ? b->n_threads : 1) * sizeof *map);
    if (!map)
        return -ENOMEM;
    int r = 0;
    for (size_t i = 0; i < b->n_threads && r == 0; i++) {
        const struct thread *bt = &b->threads[i];
        int64_t ti = thread_of(o, b->keys + bt->key_at, bt->key_len);
        if (ti < 0) {
            r = -ENOMEM;
            break;
        }
        map[i] = (uint32_t)ti;
        struct thread *t = &o->threads[ti];
        bool unordered = bt->unordered ||
                         (t->count > 0 && bt->count > 0 &&
                          sorts_before(bt->first_ts, bt->first_end, t->last_ts, t->last_end));
        if (unordered && !t->unordered) {
            t->unordered = true;
            o->n_unordered++;
        }
        if (bt->count == 0)
            continue;
        if (t->count == 0) {
            t->first_ts = bt->first_ts;
            t->first_end = bt->first_end;
        }
        t->last_ts = bt->last_ts;
        t->last_end = bt->last_end;
        t->count += bt->count;
    }
    if (r == 0 && b->n > 0) {
        if (o->n + b->n > o->cap) {
            if (o->n + b->n > SIZE_MAX / sizeof *o->lines) {
                r = -ENOMEM;
                goto out;
            }
            struct line *nl = realloc(o->lines, (o->n + b->n) * sizeof *nl);
            if (!nl) {
                r = -ENOMEM;
                goto out;
            }
            o->lines = nl;
            o->cap = o->n + b->n;
        }
        for (size_t i = 0; i < b->n; i++) {
            struct line l = b->lines[i];
            l.off += shift;
            if (l.thread != NO_THREAD)
                l.thread = map[l.thread];
            o->lines[o->n + i] = l;
        }
        o->n += b->n;
    }
out:
    free(map);
    return r;
}

/* One thread's X events: by (ts, -dur), then file order. */
static int cmp_span(const void *a, const void *b)
{
    const struct line *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* A thread's bucket to sort. */
struct pending {
    uint64_t count;
    uint32_t thread;
};

/* Larger buckets first. */
static int cmp_pending(const void *a, const void *b)
{
    const struct pending *x = a, *y = b;
    return x->count > y->count ? -1 : x->count < y->count;
}

/* Sorts the buckets listed in todo[0, n) by (ts, -dur, off). */
struct sort_job {
    struct line *lines;
    const struct thread *threads;
    const struct pending *todo;
    size_t n;
};

static void *sort_buckets(void *arg)
{
    const struct sort_job *j = arg;
    for (size_t i = 0; i < j->n; i++) {
        const struct thread *t = &j->threads[j->todo[i].thread];
        qsort(j->lines + t->start, (size_t)t->count, sizeof *j->lines, cmp_span);
    }
    return NULL;
}

/* Only the threads out of order need a sort, each on its own: the lines are first put in
 * buckets by thread (stably, so that an in-order thread's bucket and the other lines' are
 * already in their sending order), then the out-of-order buckets are sorted, on two CPUs when
 * there are enough lines: the largest buckets first, each to the less loaded side. */
static int sort_lines(struct order *o)
{
    size_t nt = o->n_threads;
    struct line *by = malloc((o->n ? o->n : 1) * sizeof *by);
    uint64_t *next = malloc((nt + 1) * sizeof *next);
    struct pending *todo = malloc((nt ? nt : 1) * sizeof *todo);
    struct pending *side[2] = {malloc((nt ? nt : 1) * sizeof *todo),
                               malloc((nt ? nt : 1) * sizeof *todo)};
    int r = -ENOMEM;
    if (!by || !next || !todo || !side[0] || !side[1])
        goto out;
    uint64_t at = 0;
    size_t n_todo = 0;
    for (size_t t = 0; t < nt; t++) {
        next[t] = o->threads[t].start = at;
        at += o->threads[t].count;
        if (o->threads[t].unordered && o->threads[t].count > 1)
            todo[n_todo++] = (struct pending){o->threads[t].count, (uint32_t)t};
    }
    next[nt] = at;
    for (size_t i = 0; i < o->n; i++) {
        uint32_t t = o->lines[i].thread;
        by[next[t == NO_THREAD ? nt : t]++] = o->lines[i];
    }
    free(o->lines);
    o->lines = by;
    o->cap = o->n;
    by = NULL;
    qsort(todo, n_todo, sizeof *todo, cmp_pending);
    uint64_t load[2] = {0, 0};
    size_t n_side[2] = {0, 0};
    for (size_t i = 0; i < n_todo; i++) {
        int k = load[1] < load[0];
        load[k] += todo[i].count;
        side[k][n_side[k]++] = todo[i];
    }
    struct sort_job jobs[2] = {{o->lines, o->threads, side[0], n_side[0]},
                               {o->lines, o->threads, side[1], n_side[1]}};
    pthread_t th;
    bool threaded = n_side[1] > 0 && load[0] + load[1] >= ORDER_PARALLEL_MIN &&
                    sysconf(_SC_NPROCESSORS_ONLN) > 1 &&
                    pthread_create(&th, NULL, sort_buckets, &jobs[1]) == 0;
    if (!threaded)
        sort_buckets(&jobs[1]);
    sort_buckets(&jobs[0]);
    if (threaded)
        pthread_join(th, NULL);
    r = 0;
out:
    free(by);
    free(next);
    free(todo);
    free(side[0]);
    free(side[1]);
    return r;
}

int order_finish(struct order *o, uint64_t *ret_unordered)
{
    *ret_unordered = o->n_unordered;
    if (o->n_unordered == 0) {
        free(o->lines);
        o->lines = NULL;
        o->n = o->cap = 0;
        return 0;
    }
    o->thread_of = malloc((o->n ? o->n : 1) * sizeof *o->thread_of);
    if (!o->thread_of)
        return -ENOMEM;
    for (size_t i = 0; i < o->n; i++)
        o->thread_of[i] = o->lines[i].thread;
    if (sort_lines(o) < 0)
        return -ENOMEM;
    o->sorted = true;
    return 1;
}

int order_runs(const struct order *o, uint64_t from,
               int (*fn)(void *ud, uint64_t off, uint64_t len), void *ud)
{
    if (!o->sorted)
        return -EINVAL;
    /* next[t]: the next of thread t's sorted lines; next[n_threads]: the next other line. */
    uint64_t *next = malloc((o->n_threads + 1) * sizeof *next);
    if (!next)
        return -ENOMEM;
    uint64_t others = 0;
    for (size_t t = 0; t < o->n_threads; t++) {
        next[t] = o->threads[t].start;
        others += o->threads[t].count;
    }
    next[o->n_threads] = others;
    uint64_t run_off = 0, run_len = 0;
    int r = 0;
    for (size_t i = 0; i < o->n && r == 0; i++) {
        uint32_t t = o->thread_of[i];
        const struct line *l = &o->lines[next[t == NO_THREAD ? o->n_threads : t]++];
        if (i < from)
            continue;
        if (run_len > 0 && run_off + run_len == l->off) {
            run_len += (uint64_t)l->len + 1;
            continue;
        }
        if (run_len > 0)
            r = fn(ud, run_off, run_len);
        run_off = l->off;
        run_len = (uint64_t)l->len + 1;
    }
    if (r == 0 && run_len > 0)
        r = fn(ud, run_off, run_len);
    free(next);
    return r;
}
