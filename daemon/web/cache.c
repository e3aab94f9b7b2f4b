/* SPDX-License-Identifier: MIT */
/*
 * cache: rendered answers of the live routes, served again while the job's live snapshot is the
 * one they were computed from.
 *
 * A snapshot is immutable and has a serial (live_snapshot_serial()), so an answer computed from it
 * stays exact until the loop publishes the job's next snapshot (at most every 100 ms, and only
 * when the job got data). Under a dashboard or a notebook polling the same views, and under the
 * API benchmark's 200 connections, most requests then cost a hash and a serial check instead of
 * a store lookup, an analysis and a render.
 *
 * The key is the route, the {job} as written and the query arguments in the order sent; a hit
 * re-checks the serial of the job's current snapshot, so a stale answer is never served. Slots
 * are direct-mapped by the key's hash: a colliding key replaces the slot's answer. Only 200
 * answers are kept, each of at most WEB_CACHE_BODY_MAX bytes (8 MiB: /gpu/launches' default page
 * of long kernel names is 0.6 MB, /operator-view?limit=100000 several MB).
 *
 * Memory is bounded by total bytes, not by a small body limit: each slot is charged its body's
 * bytes and its key's, and the charges together stay at most the budget (http_cache_max_bytes,
 * default 64 MiB). Keeping an answer first replaces its slot's, then evicts the other slots least
 * recently kept or served (a tick taken under the lock) until the total is under the budget; an
 * answer larger than the budget alone is not kept. The evicted values are released after the
 * lock (a response a connection still queues lives on by its own reference). The total is
 * http_cache_bytes in /stats, the evictions http_cache_evictions.
 *
 * What a slot keeps is opaque here: http.c keeps its built response, which libmicrohttpd
 * reference-counts and may queue on many connections at once. A slot holds one reference (the
 * one from creation, handed over by web__cache_keep()), each queue takes another, and replacing
 * a slot releases the slot's. A hit is used under the cache lock (web__cache_use()), so a slot's
 * value cannot be released between the lookup and its use.
 *
 * Which answers are kept is said by the answer itself (answer.h: keep, job_id, serial, set by
 * routes_live.c from the snapshot it answered from); http.c keeps those of a cacheable request.
 *
 * The store-read routes (/summary/{kind}, /benchmark, /memory, /tree, /operator-view,
 * /kernels/details, /comm-ops: routes_summary.c) read the rank's stored rows, which the store's
 * writer commits asynchronously from live's publication: a snapshot's serial alone does not say
 * what the store held when they read. Their answers are kept under two things taken before the
 * analysis reads: the job's store commit count (store_query_job_commits(), taken before any read
 * of the job's rows) and the serial of the job's snapshot (the analyses read live too: host
 * figures, record steps). The writer raises a job's count only after the COMMIT that wrote the
 * job, so a commit of the job that the read did not see raises it after it was taken: a hit,
 * which needs it unchanged, cannot serve an answer missing anything of the job the store has
 * committed (a commit the read did see but that raised the count after it was taken only costs
 * a miss). Lines are acknowledged after their commit, so once a client has its ack the next
 * request computes again. A deletion is a commit of the job (and its live state is gone), so a
 * deleted job's answers are never served; other jobs' commits leave the count alone.
 *
 * Threading: any server thread; one mutex.
 */
#include "cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/util.h"
#include "../core/stats.h"
#include "../live/live_query.h"
#include "../store/store_query.h"
#include "answer.h"
#include "parse.h"

struct cache_slot {
    char *key; /* NULL: empty */
    size_t key_len;
    struct web_cache_from from;
    void *val;
    size_t bytes;  /* charged: the body's bytes and the key's */
    uint64_t used; /* tick of its keep or its last hit: the least is evicted first */
};

struct web_cache {
    pthread_mutex_t lock;
    void (*release)(void *val);
    struct stats *stats; /* may be NULL */
    size_t max_bytes;    /* budget of the slots' bytes together */
    size_t bytes;        /* the slots' bytes together, <= max_bytes */
    uint64_t tick;
    struct cache_slot slots[WEB_CACHE_SLOTS];
};

int web__cache_new(struct web_cache **ret, size_t max_bytes, struct stats *stats,
                   void (*release)(void *val))
{
    struct web_cache *k = calloc(1, sizeof *k);
    if (!k)
        return -ENOMEM;
    if (pthread_mutex_init(&k->lock, NULL) != 0) {
        free(k);
        return -ENOMEM;
    }
    k->release = release;
    k->stats = stats;
    k->max_bytes = max_bytes ? max_bytes : WEB_CACHE_BYTES_DEFAULT;
    *ret = k;
    return 0;
}

void web__cache_free(struct web_cache *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < WEB_CACHE_SLOTS; i++) {
        free(k->slots[i].key);
        if (k->slots[i].val)
            k->release(k->slots[i].val);
    }
    pthread_mutex_destroy(&k->lock);
    free(k);
}

struct key_ctx {
    char *buf;
    size_t size, len;
    bool overflow;
};

static void key_put(struct key_ctx *x, const char *s, size_t n)
{
    if (x->overflow || n >= x->size - x->len) {
        x->overflow = true;
        return;
    }
    memcpy(x->buf + x->len, s, n);
    x->len += n;
}

static void on_arg(void *ud, const char *key, size_t key_size, const char *value,
                   size_t value_size)
{
    struct key_ctx *x = ud;
    /* '\x1f' cannot come from a query (the unescape callback keeps the bytes as sent, and a raw
     * control byte in a URL is refused by MHD), so the parts cannot run into each other. */
    key_put(x, "\x1f", 1);
    key_put(x, key, key_size);
    key_put(x, "=", 1);
    if (value)
        key_put(x, value, value_size);
}

int web__cache_key(const struct web_req *q, const struct web_route *r, char *buf, size_t size,
                   size_t *ret_len)
{
    struct key_ctx x = {buf, size, 0, false};
    /* The path's parts with their lengths: /summary/{kind} differ by kind alone, and neither part
     * can run into the other or into the arguments. */
    size_t kind_len = strlen(r->kind), job_len = strlen(r->job);
    char head[64];
    int n = snprintf(head, sizeof head, "%d\x1f%zu\x1f%zu\x1f", (int)r->id, kind_len, job_len);
    key_put(&x, head, (size_t)n);
    key_put(&x, r->kind, kind_len);
    key_put(&x, r->job, job_len);
    web__req_args_each(q, on_arg, &x);
    if (x.overflow)
        return -ENAMETOOLONG;
    *ret_len = x.len;
    return 0;
}

static struct cache_slot *slot_of(struct web_cache *k, const char *key, size_t len)
{
    return &k->slots[util_hash(UTIL_HASH_SEED, key, len) % WEB_CACHE_SLOTS];
}

static bool slot_is(const struct cache_slot *s, const char *key, size_t len)
{
    return s->key && s->key_len == len && memcmp(s->key, key, len) == 0;
}

static bool from_same(const struct web_cache_from *a, const struct web_cache_from *b)
{
    return a->job_id == b->job_id && a->serial == b->serial && a->stored == b->stored &&
           a->commits == b->commits;
}

bool web__cache_use(struct web_cache *k, struct live *live, struct store *store, const char *key,
                    size_t len, void (*use)(void *val, void *ud), void *ud)
{
    if (!k || !live)
        return false;
    struct cache_slot *s = slot_of(k, key, len);
    pthread_mutex_lock(&k->lock);
    bool found = slot_is(s, key, len);
    struct web_cache_from from = s->from;
    pthread_mutex_unlock(&k->lock);
    if (!found)
        return false;
    int64_t job_id = from.job_id;
    uint64_t serial = from.serial;
    /* Before the snapshot's check: a commit after this count misses next time, not now, and what
     * was committed before it the kept answer had read (the count was taken before it read). */
    if (from.stored && (!store || store_query_job_commits(store, job_id) != from.commits))
        return false;

    const struct live_snapshot *snap;
    /* A hit is a use too (the job is evicted last); an evicted job reloads here, and then misses. */
    if (live_ensure(live, job_id) < 0 || live_snapshot_get(live, job_id, &snap) < 0)
        return false;
    uint64_t now = live_snapshot_serial(snap);
    live_snapshot_put(snap);
    if (now != serial)
        return false;

    bool served = false;
    pthread_mutex_lock(&k->lock);
    if (slot_is(s, key, len) && from_same(&s->from, &from)) {
        use(s->val, ud);
        s->used = ++k->tick;
        served = true;
    }
    pthread_mutex_unlock(&k->lock);
    return served;
}

bool web__cache_fits(const struct web_cache *k, size_t body, size_t key_len)
{
    return k && body <= WEB_CACHE_BODY_MAX && key_len <= k->max_bytes &&
           body <= k->max_bytes - key_len;
}

/* Empties slot s, its value appended to out[*n] for release after the lock. Under the lock. */
static void slot_drop(struct web_cache *k, struct cache_slot *s, void **out, size_t *n)
{
    free(s->key);
    if (s->val)
        out[(*n)++] = s->val;
    k->bytes -= s->bytes;
    *s = (struct cache_slot){0};
}

bool web__cache_keep(struct web_cache *k, const char *key, size_t len,
                     const struct web_cache_from *from, void *val, size_t body)
{
    char *copy = web__cache_fits(k, body, len) ? malloc(len) : NULL;
    if (!copy) {
        k->release(val); /* not kept: as if there were no cache */
        return false;
    }
    memcpy(copy, key, len);
    size_t bytes = body + len;
    struct cache_slot *s = slot_of(k, copy, len);
    void *gone[WEB_CACHE_SLOTS];
    size_t n = 0, evicted = 0;
    pthread_mutex_lock(&k->lock);
    slot_drop(k, s, gone, &n);
    /* Least recently used first, until the new one fits: at most every other slot. */
    while (k->bytes > k->max_bytes - bytes) {
        struct cache_slot *lru = NULL;
        for (size_t i = 0; i < WEB_CACHE_SLOTS; i++) {
            struct cache_slot *o = &k->slots[i];
            if (o->key && (!lru || o->used < lru->used))
                lru = o;
        }
        if (!lru) /* cannot be: the others' bytes are k->bytes */
            break;
        slot_drop(k, lru, gone, &n);
        evicted++;
    }
    *s = (struct cache_slot){copy, len, *from, val, bytes, ++k->tick};
    k->bytes += bytes;
    if (k->stats) {
        STATS_SET(k->stats, http_cache_bytes, k->bytes);
        if (evicted)
            STATS_ADD(k->stats, http_cache_evictions, evicted);
    }
    pthread_mutex_unlock(&k->lock);
    for (size_t i = 0; i < n; i++)
        k->release(gone[i]);
    return true;
}

size_t web__cache_bytes(struct web_cache *k)
{
    pthread_mutex_lock(&k->lock);
    size_t n = k->bytes;
    pthread_mutex_unlock(&k->lock);
    return n;
}
