/* SPDX-License-Identifier: MIT */
/*
 * live_intern: (k1, k2) byte pairs to dense indexes, in open-addressing tables: a job's
 * (name, cat) operators and a rank's (pid, tid) threads. The lookup is on live_feed()'s hot path
 * (once per span), so the hash reads long keys by their ends and lookups compare whole keys.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "live_int.h"

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
int live__ktab_get(struct ktab *t, const char *k1, size_t l1, const char *k2, size_t l2,
                   size_t max, uint32_t *ret_idx)
{
    uint64_t h = hash_key(hash_key(0x1234567u, k1, l1), k2, l2);
    if (t->cap_slots) {
        size_t j = (size_t)h & (t->cap_slots - 1);
        uint32_t v;
        while ((v = t->slots[j]) != 0) {
            const struct kent *e = &t->ents[v - 1];
            if (e->hash == h && e->len1 == l1 && e->len2 == l2 &&
                live__bytes_eq(t->text + e->off1, k1, l1) &&
                live__bytes_eq(t->text + e->off2, k2, l2)) {
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
    if (util_grow((void **)&t->ents, &t->cap, t->n + 1, sizeof *t->ents) < 0 ||
        util_grow((void **)&t->text, &t->text_cap, t->text_len + l1 + l2 + 2, 1) < 0)
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

void live__ktab_done(struct ktab *t)
{
    free(t->slots);
    free(t->ents);
    free(t->text);
}
