/* SPDX-License-Identifier: MIT */
/*
 * cache: answers of the live routes, kept while the job's live snapshot is the one they were
 * computed from, and of the store-read routes, kept while moreover nothing was committed to the
 * store since they began to read (cache.c). It keeps opaque values (http.c keeps its built responses) under a key
 * made of the route, the {job} as written and the query arguments as sent. No libmicrohttpd.
 *
 * Memory: the kept answers' bytes (bodies and keys) stay under the budget given to
 * web__cache_new() (http_cache_max_bytes, default 64 MiB); keeping one past it evicts the least
 * recently used others first. One answer is kept when at most WEB_CACHE_BODY_MAX bytes and the
 * budget.
 *
 * Threading: any server thread; one mutex.
 */
#ifndef STEPSCOPE_WEB_CACHE_H
#define STEPSCOPE_WEB_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEB_CACHE_SLOTS 128
#define WEB_CACHE_BODY_MAX ((size_t)8 << 20)       /* bytes of one kept answer at most */
#define WEB_CACHE_BYTES_DEFAULT ((size_t)64 << 20) /* budget of all kept answers by default */
#define WEB_CACHE_KEY_MAX 2048

struct live;
struct stats;
struct store;
struct web_cache;
struct web_req;
struct web_route;

/* release(val) drops the cache's hold on a value it lets go of (replaced, evicted, or freed).
 * max_bytes: the budget of the kept answers together (0: WEB_CACHE_BYTES_DEFAULT). stats (may be
 * NULL): http_cache_bytes is kept equal to the bytes held, http_cache_evictions counts the
 * answers evicted to stay under the budget. */
int web__cache_new(struct web_cache **ret, size_t max_bytes, struct stats *stats,
                   void (*release)(void *val));
void web__cache_free(struct web_cache *k);

/* Builds the key of request q of route r (its id, its kind and job as written, each with its
 * length, and the query arguments as sent) in buf. Returns 0, or -ENAMETOOLONG when it does not
 * fit (the request is then not cached). */
int web__cache_key(const struct web_req *q, const struct web_route *r, char *buf, size_t size,
                   size_t *ret_len);

/* When key is kept, the job's current snapshot in live is still the one it came from and, for a
 * store-read answer, store_query_commits(store) is still the count it was kept under, calls
 * use(val, ud) under the cache's lock (val cannot be released meanwhile) and returns true. */
bool web__cache_use(struct web_cache *k, struct live *live, struct store *store, const char *key,
                    size_t len, void (*use)(void *val, void *ud), void *ud);

/* What a kept answer was computed from: job_id's snapshot serial and, when stored, the store's
 * commit count taken before the answer read the store (store_query_commits()). */
struct web_cache_from {
    int64_t job_id;
    uint64_t serial;
    bool stored;
    uint64_t commits;
};

/* Whether an answer of body bytes under a key of key_len bytes may be kept: the body at most
 * WEB_CACHE_BODY_MAX, both together at most the budget. */
bool web__cache_fits(const struct web_cache *k, size_t body, size_t key_len);

/* Keeps val (body bytes, web__cache_fits()) under key for what it came from, replacing what the
 * key's slot held, then evicting the least recently kept or served others until the cache's
 * bytes are under its budget; the caller's hold on val passes to the cache. Returns true, or
 * false when it does not fit or the key could not be copied (val then released at once). */
bool web__cache_keep(struct web_cache *k, const char *key, size_t len,
                     const struct web_cache_from *from, void *val, size_t body);

/* The bytes held now: the kept answers' bodies and keys. */
size_t web__cache_bytes(struct web_cache *k);

#endif
