/* SPDX-License-Identifier: MIT */
/*
 * analyse_memsum.h: paddle.profiler's Memory Summary (memsum.c).
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_MEMSUM_H
#define STEPSCOPE_ANALYSE_MEMSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_summary.h" /* the spans' event types */

/* --- Memory summary (memsum.c) -------------------------------------------------------------
 * Paddle's "Memory Summary" (profile_memory=True; profiler_statistic.py MemorySummary): Paddle
 * hangs each memory event on the innermost host event of its thread around it; the collectors
 * send that event's name and start with it (docs/PROTOCOL.md 9). Per place, a row per host event
 * name: an Operator counts its own events and those of its direct children, an OperatorInner
 * none; peaks are the largest peak_allocated / peak_reserved over the events counted. */

enum analyse_mem_kind {
    ANALYSE_MEM_ALLOCATE,
    ANALYSE_MEM_FREE,
    ANALYSE_MEM_RESERVED_ALLOCATE,
    ANALYSE_MEM_RESERVED_FREE,
};

/* One memory event. Texts are borrowed. */
struct analyse_mem_event {
    int64_t pid, tid;          /* as the spans' */
    int64_t ts_ns;
    int64_t owner_ns;          /* its host event's start; INT64_MIN: none (Paddle's root) */
    const char *owner;         /* that event's name */
    size_t owner_len;
    const char *place;         /* "Place(cpu)" */
    size_t place_len;
    enum analyse_mem_kind kind;
    int64_t bytes;             /* increase_bytes: > 0 allocated, < 0 freed */
    int64_t peak_allocated, peak_reserved; /* < 0: absent */
};

struct analyse_mem_row {
    const char *name;          /* borrowed from the spans */
    size_t name_len;
    size_t place;              /* index into places */
    bool reserved;             /* Paddle's Type "Reserved" (else "Allocated") */
    int64_t alloc_count, free_count, alloc_size, free_size, increase;
};

struct analyse_mem_place {
    const char *place;         /* borrowed from the events */
    size_t place_len;
    int64_t peak_allocated, peak_reserved;
    size_t first_row, n_rows;  /* its rows: rows[first_row, first_row + n_rows) */
};

struct analyse_memsum {
    size_t n_events;           /* memory events given */
    size_t n_counted;          /* those whose host event is in the window */
    size_t n_unowned;          /* those without a host event, or whose host event was not found */
    size_t n_places;           /* places in Paddle's order (first Allocate or Free seen) */
    struct analyse_mem_place *places;
    size_t n_rows;             /* per place: Allocated rows by increase desc, then Reserved rows */
    struct analyse_mem_row *rows;
};

/* The memory summary of mem[0..n_mem) over the host spans of spans[0..n) that start in
 * [w0, w1) (w0 == w1: all). Returns 0 and sets *ret (free with analyse_memsum_free()),
 * -EINVAL on NULL arguments, -ENOMEM. Pure. */
int analyse_memsum_compute(const struct analyse_span *spans, size_t n,
                           const struct analyse_mem_event *mem, size_t n_mem, int64_t w0,
                           int64_t w1, struct analyse_memsum **ret);

void analyse_memsum_free(struct analyse_memsum *m);

#endif
