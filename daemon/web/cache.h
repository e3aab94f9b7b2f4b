/* SPDX-License-Identifier: MIT */
/*
 * cache: answers of the live routes, kept while the job's live snapshot is the one they were
 * computed from (cache.c). It keeps opaque values (http.c keeps its built responses) under a key
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
struct web_cache;
struct web_req;

/* release(val) drops the cache's hold on a value it lets go of (replaced, or freed). */
int web__cache_new(struct web_cache **ret, void (*release)(void *val));
void web__cache_free(struct web_cache *k);

/* Builds the key of request q (route, job as written, query arguments as sent) in buf.
 * Returns 0, or -ENAMETOOLONG when it does not fit (the request is then not cached). */
int web__cache_key(const struct web_req *q, int route_id, const char *job, char *buf,
                   size_t size, size_t *ret_len);

/* When key is kept and the job's current snapshot in live is still the one it came from, calls
 * use(val, ud) under the cache's lock (val cannot be released meanwhile) and returns true. */
bool web__cache_use(struct web_cache *k, struct live *live, const char *key, size_t len,
                    void (*use)(void *val, void *ud), void *ud);

/* Keeps val under key for job_id's snapshot serial, replacing what the slot held; the caller's
 * hold on val passes to the cache. Returns true, or false when the key could not be copied (val
 * then released at once). */
bool web__cache_keep(struct web_cache *k, const char *key, size_t len, int64_t job_id,
                     uint64_t serial, void *val);

#endif
