/* SPDX-License-Identifier: MIT */
/*
 * jscan: the strict, single-pass JSON scanner under decode.c. Internal to daemon/ingest/.
 *
 * One call validates a whole line as exactly one RFC 8259 object (UTF-8 checked, escapes and
 * surrogate pairs checked, no leading zeros, NaN, trailing commas or comments, nesting at most
 * INGEST_DECODE_DEPTH_MAX deep, nothing but blanks after the object) and, in the same pass, fills
 * one slot per known top-level key from its first occurrence: the type of the value and its text
 * (a string's bytes, unescaped into the caller's arena only when they hold a backslash; a number's
 * exact token; an object's or array's raw text). The decoder above it applies each record kind's
 * rules to the slots; nothing here knows what a record is.
 *
 * Why hand-written: the daemon must validate every byte of every line (events are stored verbatim
 * and exported as one JSON document), and a general parser's per-value walk cost more than the
 * rest of ingest together. This scanner touches each byte once, checks string bodies 16 bytes at
 * a time with SSE2, else 8 (the 64 readable padding bytes lbuf leaves after each line make the over-read safe) and
 * allocates nothing.
 */
#ifndef STEPSCOPE_INGEST_JSCAN_H
#define STEPSCOPE_INGEST_JSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"

#define JSCAN_KEY_MAX 31   /* longest known key, in bytes */
#define JSCAN_SLOTS_MAX 32 /* most known keys in one key set */

enum jscan_type {
    JSCAN_ABSENT = 0, /* the key was not seen */
    JSCAN_STRING,
    JSCAN_NUMBER,
    JSCAN_OBJECT,
    JSCAN_ARRAY,
    JSCAN_BOOL,
    JSCAN_NULL,
};

enum jscan_flag {
    JSCAN_F_DOUBLE = 1, /* number: also convert it to slot.d (strtod; out of range is malformed) */
    JSCAN_F_DURATIONS = 2, /* object: set slot.bad if any member is not a number >= 0 */
    JSCAN_F_SUBKEYS = 4,   /* object: also fill the slots of the key set's sub keys from its own
                              members (first occurrence), in the same pass */
};

/* What the pass learnt about one known key (its first occurrence). */
struct jscan_slot {
    uint8_t type;  /* enum jscan_type */
    bool bad;      /* JSCAN_F_DURATIONS: some member is not a non-negative number */
    const char *p; /* string: its (unescaped) bytes; number: its token; object/array: raw text */
    size_t n;
    double d;      /* JSCAN_F_DOUBLE numbers */
};

struct jscan_key {
    const char *name; /* NUL-terminated, at most JSCAN_KEY_MAX bytes */
    uint8_t id;       /* slot index, < JSCAN_SLOTS_MAX */
    uint8_t flags;    /* enum jscan_flag */
};

/* A set of known keys, indexed by length; built once by ingest__jscan_keys_init(). */
struct jscan_keys {
    uint8_t start[JSCAN_KEY_MAX + 2]; /* keys of length L are key[start[L], start[L + 1]) */
    struct jscan_key key[JSCAN_SLOTS_MAX];
    uint64_t word[JSCAN_SLOTS_MAX][(JSCAN_KEY_MAX + 1) / 8]; /* key[i].name, zero-padded */
    uint32_t ids;                     /* bit id set for every key's id (and every sub key's) */
    const struct jscan_keys *sub;     /* the members a JSCAN_F_SUBKEYS object's slots take; their
                                         ids share the slot array and differ from these keys' */
};

/* Indexes the n (<= JSCAN_SLOTS_MAX) keys of list into *ret; list's strings must outlive it.
 * sub (NULL for none) is the key set of the JSCAN_F_SUBKEYS keys' members; it must outlive ret,
 * and its ids must not be among list's. */
void ingest__jscan_keys_init(struct jscan_keys *ret, const struct jscan_key *list, size_t n,
                             const struct jscan_keys *sub);

/* Scans line[0, len) (line[len] is '\0' and LBUF_PADDING readable bytes follow it) and fills
 * slots[id] for the first occurrence of each key in keys; slots needs no initialisation (on
 * success the slot of every key not seen has type JSCAN_ABSENT) and must have room for every id.
 * Escaped strings of known keys are unescaped into a (a->used grows).
 * Returns INGEST_DECODE_OK, INGEST_DECODE_MALFORMED (reason in msg, INGEST_DECODE_MSG_MAX bytes)
 * or INGEST_DECODE_NOSPACE; on failure a->used may have grown and the caller restores it. */
int ingest__jscan_object(const char *line, size_t len, const struct jscan_keys *keys,
                         struct jscan_slot *slots, struct ingest_arena *a, char *msg);

#endif
