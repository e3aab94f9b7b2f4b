/* SPDX-License-Identifier: MIT */
/*
 * analyse_memview.h: torch-tb-profiler's memory view (memview.c): memory over time per device,
 * its peak, and the operators' allocations.
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. The
 * definitions are docs/ANALYSIS.md's "Memory view"; they follow torch-tb-profiler 0.4.3's
 * MemoryParser and RunProfile.get_memory_stats() / get_memory_curve().
 */
#ifndef STEPSCOPE_ANALYSE_MEMVIEW_H
#define STEPSCOPE_ANALYSE_MEMVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_roles.h" /* struct analyse_span */

/* Where a memory figure comes from. */
enum analyse_mv_source {
    ANALYSE_MV_TRACE,     /* a profiler's memory event (Kineto's or Paddle's "[memory]") */
    ANALYSE_MV_ALLOCATOR, /* an allocator sample (the collector's "[memory stats]", per step) */
};

/* One memory event or sample. Texts are borrowed. */
struct analyse_mv_event {
    int64_t pid, tid;            /* as the spans' */
    int64_t ts_ns;
    const char *device;          /* "CPU", "GPU0", ... (the caller names devices) */
    size_t device_len;
    enum analyse_mv_source source;
    int64_t bytes;               /* TRACE: > 0 allocated, < 0 freed; INT64_MIN: none */
    int64_t allocated, reserved; /* the totals after it (< 0: absent) */
    int64_t peak_allocated;      /* ALLOCATOR: the allocator's own peak so far (< 0: absent) */
    int64_t peak_reserved;       /* the allocator's (ALLOCATOR) or Paddle's event's own
                                    peak_reserved (TRACE) so far (< 0: absent) */
    int64_t step;                /* ALLOCATOR: the step the sample closes (-1: none) */
};

/* A point of a curve. */
struct analyse_mv_point {
    int64_t ts_ns, allocated, reserved; /* reserved < 0: absent */
};

/* One curve: a device's events of one source. */
struct analyse_mv_series {
    const char *device;          /* borrowed from the events */
    size_t device_len;
    enum analyse_mv_source source;
    size_t n_points;             /* events with totals */
    int64_t peak_allocated;      /* the largest allocated (TRACE), or the allocator's own peak
                                    when larger (ALLOCATOR) */
    int64_t peak_ts_ns;          /* the first point that shows it */
    int64_t peak_step;           /* the step it happened in (-1: unknown) */
    int64_t peak_reserved;       /* the largest reserved, or the events' own peak_reserved
                                    (allocator samples, Paddle's events) when larger (-1: none) */
    int64_t first_ts_ns, last_ts_ns;
    size_t first_kept, n_kept;   /* the curve as kept: points[first_kept, first_kept + n_kept) */
};

/* One operator's allocations on one device (tb-profiler's memory statistics table). "Self" counts
 * the events whose innermost host node is the operator; the others add those of every operator
 * below it. */
struct analyse_mv_row {
    const char *name;            /* borrowed from the spans */
    size_t name_len;
    const char *device;          /* borrowed from the events */
    size_t device_len;
    int64_t calls;
    int64_t increase, self_increase;       /* bytes allocated minus bytes freed */
    int64_t alloc_count, self_alloc_count; /* allocations (bytes > 0) */
    int64_t alloc_size, self_alloc_size;   /* their bytes */
};

struct analyse_memview {
    size_t n_events;             /* given */
    size_t n_attributed;         /* TRACE events with bytes whose innermost node is an operator */
    size_t n_unattributed;       /* the other TRACE events with bytes */
    size_t n_series;             /* by device (bytes), TRACE before ALLOCATOR */
    struct analyse_mv_series *series;
    size_t n_points;
    struct analyse_mv_point *points;
    size_t n_rows;               /* by device, then name (bytes) */
    struct analyse_mv_row *rows;
};

#define ANALYSE_MV_POINTS_MIN 10

/* The memory view of ev[0..n_ev) over the spans of spans[0..n): each series' curve cut to at
 * most max_points points (>= ANALYSE_MV_POINTS_MIN; docs/ANALYSIS.md: buckets of equal counts,
 * each keeping its first, last, lowest and highest allocated and highest reserved point, so the
 * peak is always kept). Returns 0 and sets *ret (free with analyse_memview_free()), -EINVAL on
 * NULL arguments or max_points too small, -ENOMEM. Pure. */
int analyse_memview_compute(const struct analyse_span *spans, size_t n,
                            const struct analyse_mv_event *ev, size_t n_ev, size_t max_points,
                            struct analyse_memview **ret);

void analyse_memview_free(struct analyse_memview *m);

/* What analyse_memview_compute() holds beyond its inputs for n spans and events, at most
 * (bytes): a caller's memory budget. Pure. */
size_t analyse_memview_bytes(size_t n);

#endif
