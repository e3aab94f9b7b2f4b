/* SPDX-License-Identifier: MIT */
/*
 * cache: answers of the live routes, kept while the job's live snapshot is the one they were
 * computed from, and of the store-read routes, kept while moreover nothing was committed to the
 * store since they began to read (cache.c). It keeps opaque values (http.c keeps its built responses) under a key
 * made of the route, the {job} as written and the query arguments as sent. No libmicrohttpd.
 *
 * Threading: any server thread; one mutex.
 */
#ifndef STEPSCOPE_WEB_CACHE_H
#define STEPSCOPE_WEB_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEB_CACHE_SLOTS 128
#define WEB_CACHE_BODY_MAX (512 * 1024) /* bytes of a body kept at most */
#define WEB_CACHE_KEY_MAX 2048

struct live;
struct store;
struct web_cache;
struct web_req;
struct web_route;

/* release(val) drops the cache's hold on a value it lets go of (replaced, or freed). */
int web__cache_new(struct web_cache **ret, void (*release)(void *val));
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

/* Keeps val under key for what it came from, replacing what the slot held; the caller's hold on
 * val passes to the cache. Returns true, or false when the key could not be copied (val then
 * released at once). */
bool web__cache_keep(struct web_cache *k, const char *key, size_t len,
                     const struct web_cache_from *from, void *val);

#endif
