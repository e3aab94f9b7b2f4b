/* SPDX-License-Identifier: MIT */
/*
 * stats: the daemon's counters, one struct owned by main.c, bumped by ingest and store and read
 * by web (GET /api/v1/stats, /metrics). Relaxed atomics: each counter is exact on its own; a
 * reader may see two counters from slightly different instants.
 */
#ifndef STEPSCOPE_STATS_H
#define STEPSCOPE_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "record.h"

/* A short text several threads read and one writes (a spin lock: held for a copy only). */
#define STATS_NOTE_MAX 256
struct stats_note {
    atomic_flag busy;
    char text[STATS_NOTE_MAX];
};

static inline void stats_note_set(struct stats_note *n, const char *s)
{
    while (atomic_flag_test_and_set_explicit(&n->busy, memory_order_acquire))
        ;
    size_t len = strlen(s);
    if (len >= STATS_NOTE_MAX)
        len = STATS_NOTE_MAX - 1;
    memcpy(n->text, s, len);
    n->text[len] = 0;
    atomic_flag_clear_explicit(&n->busy, memory_order_release);
}

/* Copies the note into out (STATS_NOTE_MAX bytes). */
static inline void stats_note_get(struct stats_note *n, char *out)
{
    while (atomic_flag_test_and_set_explicit(&n->busy, memory_order_acquire))
        ;
    memcpy(out, n->text, STATS_NOTE_MAX);
    atomic_flag_clear_explicit(&n->busy, memory_order_release);
}

struct stats {
    _Atomic uint64_t connections_accepted;
    _Atomic uint64_t connections_open;    /* gauge */
    _Atomic uint64_t connections_rejected; /* over max_connections */
    _Atomic uint64_t connections_hello_timeouts; /* closed: no complete hello in hello_timeout_ms */
    _Atomic uint64_t connections_evicted; /* closed without a hello to make room (reserve) */
    _Atomic uint64_t bytes;               /* received on client connections */
    _Atomic uint64_t lines;               /* lines after the hello, blank ones excluded */
    _Atomic uint64_t records[RECORD_KIND_COUNT]; /* accepted, by kind */
    _Atomic uint64_t hellos;
    _Atomic uint64_t bad_hellos;          /* connection closed: first line not a valid hello */
    _Atomic uint64_t malformed;           /* not JSON, or invalid UTF-8 */
    _Atomic uint64_t oversized;           /* longer than max_line_bytes */
    _Atomic uint64_t unknown;             /* JSON, but neither a trace event nor a known type */
    _Atomic uint64_t invalid;             /* a known record with a missing or bad field */
    _Atomic uint64_t duplicates;          /* replayed lines the daemon already held, skipped */
    _Atomic uint64_t partial_lines;       /* unterminated line at connection close, dropped */
    _Atomic uint64_t acknowledged;        /* lines made durable (every kind, bad ones included) */
    _Atomic uint64_t commits;
    _Atomic uint64_t commit_errors;
    _Atomic uint64_t commit_failing;      /* gauge: the errno of the last commit if it failed,
                                           * 0 once one works (GET /api/v1/health: degraded) */
    _Atomic uint64_t buffered_bytes;      /* gauge: accepted, not yet durable */
    _Atomic uint64_t pauses;              /* times reading paused for backpressure */
    _Atomic uint64_t evicted_blocks;      /* retention */
    _Atomic uint64_t evicted_events;
    _Atomic uint64_t evicted_bytes;
    _Atomic uint64_t live_bytes;          /* gauge: live analyses' accounted bytes (live_max_bytes) */
    _Atomic uint64_t live_evictions;      /* ended jobs evicted from live memory over the budget */
    _Atomic uint64_t live_reloads;        /* evicted jobs reloaded from the store */
    _Atomic uint64_t live_untracked_jobs; /* jobs refused live analysis past live_max_jobs */
    _Atomic uint64_t http_requests;
    _Atomic uint64_t http_errors;         /* answers with status >= 400 */
    _Atomic uint64_t http_cache_hits;     /* live answers served again from daemon/web/cache.c */
    _Atomic uint64_t http_cache_misses;   /* live answers computed and kept there */
    _Atomic uint64_t http_cache_bytes;    /* gauge: bytes the kept answers hold (http_cache_max_bytes) */
    _Atomic uint64_t http_cache_evictions; /* kept answers evicted to stay under http_cache_max_bytes */
    _Atomic uint64_t http_deadline_closed; /* requests not in by http_request_timeout_s */
    _Atomic uint64_t http_exports_refused; /* timeline exports past http_max_exports (503) */
    _Atomic uint64_t http_analyses_refused; /* analyses past http_threads - 1 at once (503 busy) */
    _Atomic uint64_t http_analyses_timed_out; /* past http_analysis_timeout_ms (503 deadline) */
    _Atomic uint64_t http_analyses_abandoned; /* stopped because their client hung up */
    _Atomic uint64_t http_analyses_over_budget; /* stopped past http_analysis_max_bytes (413/503) */
    _Atomic uint64_t http_responses_too_large; /* answered 413 response_too_large (max_response_bytes) */
    _Atomic uint64_t captures_refused;    /* POST /captures no session could serve, or past
                                             capture_max_open (409, 429) */
    _Atomic uint64_t captures_expired;    /* capture parts expired, still pending after
                                             capture_expire_s */
    /* Cluster shipping (daemon/cluster), all 0 without cluster_url. */
    _Atomic uint64_t cluster_enabled;       /* 1 when a cluster_url is set */
    _Atomic uint64_t cluster_rows;          /* rows ClickHouse took (spans, steps, queue samples) */
    _Atomic uint64_t cluster_aggregate_rows; /* per-step per-rank aggregate rows sent (a step is
                                               sent again while it may change) */
    _Atomic uint64_t cluster_bytes;         /* compressed request bytes of the batches taken */
    _Atomic uint64_t cluster_batches;       /* batches taken (each saved to the cursor) */
    _Atomic uint64_t cluster_retries;       /* failed attempts (each followed by a backoff) */
    _Atomic uint64_t cluster_pending_rows;  /* gauge: rows committed locally, not yet shipped */
    _Atomic uint64_t cluster_pending_batches; /* gauge: those in batches of cluster_batch_rows */
    _Atomic uint64_t cluster_lag_ms;        /* gauge: since the shipper last had nothing pending */
    _Atomic uint64_t cluster_backoff_ms;    /* gauge: the wait before the next try; 0: none */
    _Atomic uint64_t cluster_failing;       /* gauge: 1 while the last attempt failed */
    _Atomic uint64_t cluster_deletes;       /* deleted jobs whose rows of this node ClickHouse
                                               was told to delete (ALTER ... DELETE) */
    _Atomic uint64_t cluster_pending_deletes; /* gauge: jobs deleted here, not yet in ClickHouse */
    struct stats_note cluster_last_error;   /* the last failure, kept after recovery */
    /* The cluster view (daemon/cluster/pull.c), all 0 without it. */
    _Atomic uint64_t cluster_view_enabled;  /* 1 when the view pulls the other nodes' ranks */
    _Atomic uint64_t cluster_view_rows;     /* rows pulled and acknowledged by this daemon */
    _Atomic uint64_t cluster_view_failing;  /* gauge: 1 while the last round failed */
    struct stats_note cluster_view_last_error; /* the last failure, kept after recovery */
};

#define STATS_ADD(s, field, n) atomic_fetch_add_explicit(&(s)->field, (n), memory_order_relaxed)
#define STATS_SUB(s, field, n) atomic_fetch_sub_explicit(&(s)->field, (n), memory_order_relaxed)
#define STATS_SET(s, field, v) atomic_store_explicit(&(s)->field, (v), memory_order_relaxed)
#define STATS_GET(s, field) atomic_load_explicit(&(s)->field, memory_order_relaxed)

#endif
