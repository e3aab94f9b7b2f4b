/* SPDX-License-Identifier: MIT */
/*
 * util: the three small helpers the daemon, the CLI and the fuzzers had each written two or
 * three times: growing an array, hashing bytes (FNV-1a, 64 bit) and the value of a hex digit.
 * Header-only (static inline), as the copies were: they sit on hot paths (live's feed, the
 * decoders' escapes, open-addressing tables), and a fuzzer gets them by an include alone.
 * Pure: no I/O, no globals.
 */
#ifndef STEPSCOPE_UTIL_H
#define STEPSCOPE_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define UTIL_GROW_FIRST 16 /* elements of an array's first allocation */

/* Makes room for need elements of size bytes (size > 0) in the array *p of capacity *cap
 * elements: the capacity doubles, from UTIL_GROW_FIRST, until it holds need. Returns 0, or
 * -ENOMEM (also when the size would overflow) with *p and *cap unchanged. */
static inline int util_grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : UTIL_GROW_FIRST;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return -ENOMEM;
        c *= 2;
    }
    if (c > SIZE_MAX / size)
        return -ENOMEM;
    void *q = realloc(*p, c * size);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

/* util_grow(), and the elements it adds are zeroed: [old *cap, new *cap) for arrays indexed by
 * id, where a never-written element must read as zero. */
static inline int util_grow_zero(void **p, size_t *cap, size_t need, size_t size)
{
    size_t old = *cap;
    int r = util_grow(p, cap, need, size);
    if (r == 0 && *cap > old)
        memset((char *)*p + old * size, 0, (*cap - old) * size);
    return r;
}

#define UTIL_HASH_SEED UINT64_C(0xcbf29ce484222325) /* FNV-1a's 64-bit offset basis */

/* FNV-1a over p[0, n), continuing from h (UTIL_HASH_SEED to start; chain calls to hash several
 * fields). p may be NULL when n is 0. Stable across runs and builds: importers put it in
 * stream keys. */
static inline uint64_t util_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* The value of the hex digit c ('0'-'9', 'a'-'f', 'A'-'F'), or -1. */
static inline int util_hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
