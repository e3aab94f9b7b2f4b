/* SPDX-License-Identifier: MIT */
/*
 * live_int: the snapshot layout, shared by live.c (which builds snapshots on the loop thread)
 * and live_query.c (which reads them on HTTP threads). Never included from outside daemon/live/.
 * A snapshot is written once, before it is published, and only read afterwards; the refcount is
 * its one mutable field.
 */
#ifndef STEPSCOPE_LIVE_INT_H
#define STEPSCOPE_LIVE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../analyse/analyse_breakdown.h"
#include "../analyse/analyse_queues.h"
#include "../analyse/analyse_roles.h"
#include "../analyse/analyse_steptrace.h"
#include "live.h"
#include "live_query.h"

/* Operator aggregates of one (name, cat) on one rank. */
struct live_agg {
    int64_t calls;
    int64_t total_ns;
    int64_t self_ns;
    int64_t min_ns;
    int64_t max_ns;
};

struct live_snap_op {
    const char *name; /* NUL-terminated, into live_snapshot.text */
    size_t name_len;
    enum analyse_role role;
};

/* A communication op of a step, for its reduce line (live.c step_comm()). */
struct live_comm {
    int64_t ts_ns;
    int64_t end_ns;
    int64_t stream; /* reduce line: MindSpore's stream id, else the rank's thread index */
    uint32_t op;    /* index into the job's ops (live_snapshot.ops in a snapshot) */
};

struct live_snap_step {
    int64_t step;
    int64_t begin_ns;
    int64_t end_ns;
    int64_t samples;
    bool from_record;
    int64_t spans;  /* spans live assigned to the step (live_step_row.spans) */
    enum live_points_source source;
    int64_t fp_ns;
    int64_t bp_ns;
    uint32_t fp_op; /* TRACE: index into live_snapshot.ops, or UINT32_MAX for "Other" */
    uint32_t bp_op;
    enum analyse_st_origin fp_origin;
    enum analyse_st_origin bp_origin;
    size_t first_comm; /* the step's communication ops: live_snap_rank.comm[first_comm, +n_comm) */
    uint32_t n_comm;
};

/* One queue's series as published; shared by the snapshots that show the same version. */
struct live_snap_queue {
    char *name;                          /* NUL-terminated, owned */
    size_t n;
    struct analyse_queue_sample *samples; /* [n], arrival order, owned */
};

/* A rank's queues at one instant, refcounted: a snapshot of a job whose queues did not change
 * since the last publish shares the previous set instead of copying the series again. */
struct live_qset {
    atomic_int refs;
    size_t n;
    struct live_snap_queue *q; /* [n], by first appearance */
};

void live__qset_put(struct live_qset *qs);

/* A parsed pipeline record (pipeline.c), immutable once built and shared by reference between
 * the rank that holds it and the snapshots that show it. */
struct live_pipe {
    atomic_int refs;
    size_t n_ops;
    struct live_pipe_op ops[LIVE_PIPE_OPS_MAX];
    size_t n_children;
    int64_t children[LIVE_PIPE_CHILDREN_MAX];
    double *values;         /* the series' first LIVE_PIPE_VALUES_MAX numbers, owned */
    size_t n_values, cap_values;
    bool has_cpu;
    double cpu_interval_ms;
    int64_t processors;
    struct live_series cpu[LIVE_CPU_SERIES];
};

/* Parses the verbatim record json[0, len). Returns 0 and sets *ret_pipe (one reference; drop it
 * with live__pipe_put()), -EINVAL for a shape it cannot read, -ENOMEM. */
int live__pipe_parse(const char *json, size_t len, struct live_pipe **ret_pipe);
void live__pipe_put(struct live_pipe *pl);

/* Running sums of a rank's host records (RECORD_HOST); a figure a record lacks is not counted. */
struct live_host {
    double cpu_sum;     /* cpu_percent: the process, percent of one core */
    int64_t n_cpu;
    double sys_cpu_sum; /* sys_cpu_percent: the whole system, percent */
    int64_t n_sys_cpu;
};

/* A span the step-time breakdown needs (breakdown.c): 40 bytes. */
struct live_bd_span {
    int64_t ts_ns;
    int64_t end_ns;
    int64_t correlation; /* record.correlation, -1 when absent; for a STEP span whose name was
                            folded past LIVE_OPS_MAX: its step number (-1: none) */
    int64_t external_id; /* record.external_id, -1 when absent */
    uint32_t op;         /* job op index (the step number of a STEP span), or LIVE_OP_OTHER */
    int16_t device;      /* device events: the numeric pid (Kineto's GPU id), else -1 */
    uint8_t role;        /* enum analyse_role */
};

/* LIVE_BD_CHUNK spans, appended on the loop thread and never changed below n: a snapshot that
 * saw n spans reads [0, n) while the loop appends after them, and keeps its own reference, so a
 * chunk the loop evicts stays valid for the snapshots that show it. */
struct live_bd_chunk {
    atomic_int refs;
    size_t n; /* loop thread only; snapshots keep the count they saw */
    struct live_bd_span v[LIVE_BD_CHUNK];
};

void live__bd_chunk_put(struct live_bd_chunk *ch);

/* One computed breakdown of a rank, shared by the readers using it (refcounted). */
struct live_bd_result {
    atomic_int refs;
    struct analyse_breakdown *bd;
    int64_t n_spans;     /* the version of the spans it was computed from (live_bd.n_spans) */
    int64_t n_evicted;
    int64_t horizon_ns;
    int64_t computed_ns; /* clock_mono_ns() when computed */
};

void live__bd_result_put(struct live_bd_result *res);

/* A rank's latest computed breakdown, shared by the rank and every snapshot of it, so that a
 * breakdown is computed once per change of spans (not per snapshot) and readers that accept a
 * recent one never wait for a computation (live_query_breakdown()). */
struct live_bd_cache {
    atomic_int refs;
    pthread_mutex_t lock;    /* guards the fields below */
    pthread_cond_t done;     /* signalled when a computation ends */
    bool computing;
    struct live_bd_result *latest; /* a reference; NULL before the first computation */
};

void live__bd_cache_put(struct live_bd_cache *cache);

/* A rank's breakdown spans (loop side): the newest max_spans at most, oldest first. */
struct live_bd {
    struct live_bd_chunk **chunks;
    size_t n_chunks;
    size_t cap_chunks;
    int64_t horizon_ns; /* latest start among evicted spans; INT64_MIN before any eviction */
    int64_t n_spans;    /* spans taken */
    int64_t n_evicted;  /* spans evicted past max_spans */
    size_t max_spans;   /* spans kept at most: LIVE_BD_SPANS_MAX, more for an imported job
                           (live_config.bd_import_bytes); 0 = LIVE_BD_SPANS_MAX */
    struct live_bd_cache *cache; /* a reference, made by the first live__bd_snap() */
};

/* Appends sp to bd, evicting the oldest chunk when full. Returns 0 or -ENOMEM. */
int live__bd_add(struct live_bd *bd, const struct live_bd_span *sp);
void live__bd_done(struct live_bd *bd);

/* A rank's breakdown spans as one snapshot shows them. */
struct live_snap_bd {
    struct live_bd_chunk **chunks; /* references */
    size_t n_chunks;
    size_t last_n;                 /* spans of the last chunk this snapshot shows */
    int64_t horizon_ns;
    int64_t n_spans;
    int64_t n_evicted;
    size_t max_spans;
    struct live_bd_cache *cache;   /* a reference to the rank's cache */
};

/* Fills *ret with references to bd's chunks and cache. Returns 0 or -ENOMEM. */
int live__bd_snap(struct live_bd *bd, struct live_snap_bd *ret);
void live__snap_bd_done(struct live_snap_bd *sb);

struct live_snap_rank {
    int64_t rank;
    size_t n_agg;             /* <= live_snapshot.n_ops */
    struct live_agg *agg;     /* [n_agg], by op index; calls 0 = not seen on this rank */
    struct live_agg other;    /* host spans of (name, cat) past LIVE_OPS_MAX */
    size_t n_steps;
    struct live_snap_step *steps; /* by begin */
    size_t n_comm;
    struct live_comm *comm;       /* [n_comm]: the steps' communication ops, step after step */
    struct live_qset *queues;     /* a reference; NULL when the rank sent no queue samples */
    struct live_pipe *pipe;       /* a reference; NULL when the rank sent no pipeline record */
    struct live_host host;
    struct live_snap_bd bd;
};

struct live_snapshot {
    atomic_int refs;
    int64_t job_id;
    uint64_t serial;          /* live_snapshot_serial() */
    size_t n_ops;
    struct live_snap_op *ops; /* [n_ops] */
    char *text;               /* the ops' names */
    size_t n_ranks;
    struct live_snap_rank *ranks; /* [n_ranks], by rank */
    struct live_counters counters;
};

#define LIVE_OP_OTHER UINT32_MAX
#define LIVE_OTHER_NAME "[other]" /* the row of the operators past LIVE_OPS_MAX */

void live__snapshot_free(struct live_snapshot *s);

#endif
