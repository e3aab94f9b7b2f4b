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
 * answers of at most WEB_CACHE_BODY_MAX bytes are kept, so the cache holds at most
 * WEB_CACHE_SLOTS * WEB_CACHE_BODY_MAX bytes of bodies.
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
 * Threading: any server thread; one mutex.
 */
#include "cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/util.h"
#include "../live/live_query.h"
#include "answer.h"

struct cache_slot {
    char *key; /* NULL: empty */
    size_t key_len;
    int64_t job_id;
    uint64_t serial;
    void *val;
};

struct web_cache {
    pthread_mutex_t lock;
    void (*release)(void *val);
    struct cache_slot slots[WEB_CACHE_SLOTS];
};

int web__cache_new(struct web_cache **ret, void (*release)(void *val))
{
    struct web_cache *k = calloc(1, sizeof *k);
    if (!k)
        return -ENOMEM;
    if (pthread_mutex_init(&k->lock, NULL) != 0) {
        free(k);
        return -ENOMEM;
    }
    k->release = release;
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

int web__cache_key(const struct web_req *q, int route_id, const char *job, char *buf,
                   size_t size, size_t *ret_len)
{
    struct key_ctx x = {buf, size, 0, false};
    char head[16];
    int n = snprintf(head, sizeof head, "%d\x1f", route_id);
    key_put(&x, head, (size_t)n);
    key_put(&x, job, strlen(job));
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

bool web__cache_use(struct web_cache *k, struct live *live, const char *key, size_t len,
                    void (*use)(void *val, void *ud), void *ud)
{
    if (!k || !live)
        return false;
    struct cache_slot *s = slot_of(k, key, len);
    int64_t job_id;
    uint64_t serial;
    pthread_mutex_lock(&k->lock);
    bool found = slot_is(s, key, len);
    job_id = s->job_id;
    serial = s->serial;
    pthread_mutex_unlock(&k->lock);
    if (!found)
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
    if (slot_is(s, key, len) && s->serial == serial && s->job_id == job_id) {
        use(s->val, ud);
        served = true;
    }
    pthread_mutex_unlock(&k->lock);
    return served;
}

bool web__cache_keep(struct web_cache *k, const char *key, size_t len, int64_t job_id,
                     uint64_t serial, void *val)
{
    char *copy = malloc(len);
    if (!copy) {
        k->release(val); /* not kept: as if there were no cache */
        return false;
    }
    memcpy(copy, key, len);
    struct cache_slot *s = slot_of(k, copy, len);
    pthread_mutex_lock(&k->lock);
    free(s->key);
    void *old = s->val;
    *s = (struct cache_slot){copy, len, job_id, serial, val};
    pthread_mutex_unlock(&k->lock);
    if (old)
        k->release(old);
    return true;
}
