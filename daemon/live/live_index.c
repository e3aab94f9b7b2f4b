/* SPDX-License-Identifier: MIT */
/*
 * live_index: job id -> position maps (struct live_index, live_int.h) for the lists live keeps
 * by job (the jobs, their publications, the evicted and the refused ones), so that finding or
 * removing a job costs O(1) on average, not a scan of every job: with thousands of jobs those
 * scans, several per job evicted, made eviction O(jobs) per job on the loop (issue 18).
 *
 * Open addressing with linear probing, at most half full, and backward-shift deletion (no
 * tombstones, so a table that sees many adds and removals never degrades).
 */
#include <errno.h>
#include <stdlib.h>

#include "live_int.h"

static size_t slot_of(const struct live_index *x, int64_t key)
{
    uint64_t h = (uint64_t)key; /* splitmix64's finaliser: ids are often consecutive */
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return (size_t)h & (x->cap - 1);
}

ptrdiff_t live__index_get(const struct live_index *x, int64_t key)
{
    if (x->n == 0)
        return -1;
    for (size_t i = slot_of(x, key); x->pos[i] != 0; i = (i + 1) & (x->cap - 1))
        if (x->keys[i] == key)
            return (ptrdiff_t)x->pos[i] - 1;
    return -1;
}

static int rehash(struct live_index *x, size_t cap)
{
    int64_t *keys = malloc(cap * sizeof *keys);
    uint32_t *pos = calloc(cap, sizeof *pos);
    if (!keys || !pos) {
        free(keys);
        free(pos);
        return -ENOMEM;
    }
    struct live_index y = {keys, pos, cap, x->n};
    for (size_t i = 0; i < x->cap; i++) {
        if (x->pos[i] == 0)
            continue;
        size_t j = slot_of(&y, x->keys[i]);
        while (pos[j] != 0)
            j = (j + 1) & (cap - 1);
        keys[j] = x->keys[i];
        pos[j] = x->pos[i];
    }
    free(x->keys);
    free(x->pos);
    *x = y;
    return 0;
}

int live__index_put(struct live_index *x, int64_t key, size_t pos)
{
    if (pos >= UINT32_MAX)
        return -ENOMEM;
    size_t i = 0;
    if (x->cap) {
        for (i = slot_of(x, key); x->pos[i] != 0; i = (i + 1) & (x->cap - 1)) {
            if (x->keys[i] == key) { /* present: a new position, never a growth */
                x->pos[i] = (uint32_t)pos + 1;
                return 0;
            }
        }
    }
    if ((x->n + 1) * 2 > x->cap) {
        if (rehash(x, x->cap ? x->cap * 2 : 64) < 0)
            return -ENOMEM;
        for (i = slot_of(x, key); x->pos[i] != 0; i = (i + 1) & (x->cap - 1))
            ;
    }
    x->n++;
    x->keys[i] = key;
    x->pos[i] = (uint32_t)pos + 1;
    return 0;
}

void live__index_del(struct live_index *x, int64_t key)
{
    if (x->n == 0)
        return;
    size_t i = slot_of(x, key);
    while (x->pos[i] != 0 && x->keys[i] != key)
        i = (i + 1) & (x->cap - 1);
    if (x->pos[i] == 0)
        return;
    x->n--;
    /* Backward shift: move up each later entry of the run whose home slot is not in (i, j]. */
    for (size_t j = (i + 1) & (x->cap - 1); x->pos[j] != 0; j = (j + 1) & (x->cap - 1)) {
        size_t home = slot_of(x, x->keys[j]);
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays)
            continue;
        x->keys[i] = x->keys[j];
        x->pos[i] = x->pos[j];
        i = j;
    }
    x->pos[i] = 0;
}

void live__index_done(struct live_index *x)
{
    free(x->keys);
    free(x->pos);
    *x = (struct live_index){0};
}
