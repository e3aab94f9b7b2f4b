/* SPDX-License-Identifier: MIT */
/*
 * live_int: what daemon/live/'s files share; never included from outside daemon/live/.
 *
 * First the snapshot layout, built by live_snapshot.c on the loop thread and read by
 * live_query.c and live_breakdown.c on HTTP threads: a snapshot is written once, before it is
 * published, and only read afterwards; the refcount is its one mutable field. Then the loop
 * side, which only the loop thread touches (lv->lock excepted): the live state, job by job and
 * rank by rank, and the functions one concern's file calls in another's (live.c names the
 * files). A function here is named live__<name>.
 */
#ifndef STEPSCOPE_LIVE_INT_H
#define STEPSCOPE_LIVE_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../analyse/analyse_breakdown.h"
#include "../analyse/analyse_ops.h"
#include "../analyse/analyse_queues.h"
#include "../analyse/analyse_roles.h"
#include "../analyse/analyse_steptrace.h"
#include "../../lib/util.h"
#include "live.h"
#include "live_query.h"

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

/* A pipeline record, typed by core's decode_pipeline(), immutable once built and shared by
 * reference between the rank that holds it and the snapshots that show it (pipeline.c). */
struct live_pipe {
    atomic_int refs;
    struct record_pipeline p;
};

/* Decodes the pipeline record r. Returns 0 and sets *ret_pipe (one reference; drop it with
 * live__pipe_put()), -EINVAL for a shape decode_pipeline() cannot read, -ENOMEM. */
int live__pipe_new(const struct record *r, struct live_pipe **ret_pipe);
void live__pipe_put(struct live_pipe *pl);

/* Running sums of a rank's host records (RECORD_HOST); a figure a record lacks is not counted. */
struct live_host {
    double cpu_sum;     /* cpu_percent: the process, percent of one core */
    int64_t n_cpu;
    double sys_cpu_sum; /* sys_cpu_percent: the whole system, percent */
    int64_t n_sys_cpu;
};

/* A span the step-time breakdown and the GPU views need (breakdown.c, gpu.c): 40 bytes. */
struct live_bd_span {
    int64_t ts_ns;
    int64_t end_ns;
    int64_t correlation; /* record.correlation, -1 when absent; for a STEP span whose name was
                            folded past LIVE_OPS_MAX: its step number (-1: none) */
    int64_t external_id; /* record.external_id, -1 when absent */
    uint32_t op;         /* job op index (the step number of a STEP span), or LIVE_OP_OTHER */
    int16_t device;      /* device events: the numeric pid (Kineto's GPU id), else -1 */
    uint8_t role;        /* enum analyse_role */
    uint8_t stream;      /* device events: 1 + the index of its CUDA stream (numeric tid) in
                            the rank's live_bd.streams; LIVE_STREAM_FOLDED past
                            LIVE_STREAMS_MAX streams; 0 = none (a host span, a tid not a number) */
};

/* The streams a rank's span records can name; a device event on a stream past them is counted
 * (live_bd.n_stream_folded) and left out of the per-stream GPU views. */
_Static_assert(sizeof(struct live_bd_span) == 40, "live_bd_span: 40 bytes (docs/PERFORMANCE.md)");
#define LIVE_STREAMS_MAX 254
#define LIVE_STREAM_FOLDED 255

/* Up to LIVE_BD_CHUNK spans, appended on the loop thread and never changed below n: a snapshot
 * that saw n spans reads [0, n) while the loop appends after them, and keeps its own reference,
 * so a chunk the loop evicts or outgrows stays valid for the snapshots that show it. A rank's
 * last chunk starts at LIVE_BD_CHUNK_FIRST spans and is replaced by a copy four times larger
 * when full, up to LIVE_BD_CHUNK (the others are full, LIVE_BD_CHUNK each): a job of a few
 * events holds a few KiB, not 320 (issue 18). */
struct live_bd_chunk {
    atomic_int refs;
    size_t n;   /* loop thread only; snapshots keep the count they saw */
    size_t cap; /* spans v holds: LIVE_BD_CHUNK_FIRST * 4^k, at most LIVE_BD_CHUNK */
    struct live_bd_span v[];
};

#define LIVE_BD_CHUNK_FIRST 64
/* The bytes of a chunk of cap spans. */
#define LIVE_BD_CHUNK_BYTES(cap) (offsetof(struct live_bd_chunk, v) + (cap) * sizeof(struct live_bd_span))

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
    int64_t *streams;   /* [n_streams]: the CUDA streams of the device events, by first sight */
    size_t n_streams;
    size_t cap_streams;
    int64_t n_stream_folded; /* device events on a stream past LIVE_STREAMS_MAX */
};

/* The live_bd_span.stream of a device event on CUDA stream (>= 0) of bd, adding it to bd's
 * streams. Returns it (LIVE_STREAM_FOLDED, counted, past LIVE_STREAMS_MAX), or 0 out of memory. */
uint8_t live__bd_stream(struct live_bd *bd, int64_t stream);

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
    int64_t *streams;              /* a copy of live_bd.streams, owned */
    size_t n_streams;
    int64_t n_stream_folded;
};

/* Fills *ret with references to bd's chunks and cache. Returns 0 or -ENOMEM. */
int live__bd_snap(struct live_bd *bd, struct live_snap_bd *ret);
void live__snap_bd_done(struct live_snap_bd *sb);

struct live_snap_rank {
    int64_t rank;
    size_t n_agg;             /* <= live_snapshot.n_ops */
    struct analyse_op_agg *agg;     /* [n_agg], by op index; calls 0 = not seen on this rank */
    struct analyse_op_agg other;    /* host spans of (name, cat) past LIVE_OPS_MAX */
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

#define LIVE_OP_OTHER ANALYSE_OP_OTHER
#define LIVE_OTHER_NAME "[other]" /* the row of the operators past LIVE_OPS_MAX */

void live__snapshot_free(struct live_snapshot *s);

/* A rank's breakdown spans of one snapshot as analyse reads them (steps that began before the
 * horizon left out; a device event's tid is its CUDA stream, -1 when not known or folded), with
 * the rank's steps as live_query_rank_steps() defines them (a rank without a step span: its
 * captured steps' records after the horizon); names borrow from the snapshot, or from names
 * (folded step numbers) and steps. */
struct live_bd_spans {
    struct analyse_span *v;
    size_t n;
    char (*names)[24];
    struct live_record_steps steps;
};

/* Fills *ret from sr (a rank of s). Returns 0 or -ENOMEM; free with live__bd_spans_done(). */
int live__bd_spans(const struct live_snapshot *s, const struct live_snap_rank *sr,
                   struct live_bd_spans *ret);
void live__bd_spans_done(struct live_bd_spans *sp);

/* ---- loop side ---- */

struct kent {
    uint64_t hash;
    size_t off1; /* into ktab.text; k1 then k2, each followed by a NUL */
    size_t len1;
    size_t off2;
    size_t len2;
};

struct ktab {
    uint32_t *slots; /* index + 1; 0 = empty; cap_slots is a power of two */
    size_t cap_slots;
    struct kent *ents;
    size_t n;
    size_t cap;
    char *text;
    size_t text_len;
    size_t text_cap;
};

struct live_step {
    int64_t step;
    int64_t begin_ns;
    int64_t end_ns;
    int64_t samples;
    bool from_record;
    bool profiled;        /* a record step that a step span of its number covers (LIST_SPAN) */
    bool has_phases;
    int64_t ph_data_ns;   /* phases.dataloader */
    int64_t ph_fwdbwd_ns; /* phases.forward + phases.backward */
    bool dirty;           /* spans changed since the points were computed */
    bool settled;         /* spans freed; points final */
    int64_t spans_seen;   /* spans assigned to the step, kept or not (the timeline's hint) */
    struct analyse_op_span *spans;
    size_t n_spans;
    size_t cap_spans;
    size_t n_sorted;      /* spans[0, n_sorted) are in cmp_span_exec order (appends go after) */
    bool has_trace;       /* trace points below are valid */
    int64_t fp_ns;
    int64_t bp_ns;
    uint32_t fp_op;
    uint32_t bp_op;
    uint8_t fp_origin;
    uint8_t bp_origin;
    struct live_comm *comm; /* the step's communication ops (reduce lines), kept once settled */
    uint32_t n_comm;
};

struct live_steplist {
    struct live_step *steps; /* by begin_ns */
    size_t n;
    size_t cap;
    size_t n_settled;        /* steps[0, n_settled) are settled */
    size_t hint;             /* step_find(): the last step found to begin at or before a span */
    bool unordered;          /* steps are not all by begin_ns (a step came before settled ones) */
    size_t kept_spans;       /* spans held by unsettled steps */
    struct analyse_op_span *pending;
    size_t n_pending;
    size_t cap_pending;
};

enum { LIST_RECORD, LIST_SPAN, LIST_COUNT };

/* One queue's series on the loop side. */
struct live_queue {
    char *name;                           /* NUL-terminated, owned; at most LIVE_QUEUE_NAME_MAX */
    size_t name_len;
    struct analyse_queue_sample *samples; /* arrival order */
    size_t n;
    size_t cap;
};

struct live_rank {
    int64_t rank;
    struct live_queue *queues; /* [n_queues], by first appearance */
    size_t n_queues;
    size_t cap_queues;
    bool queues_dirty;         /* a sample arrived since qset was built */
    struct live_qset *qset;    /* the last published set (a reference), NULL before any */
    struct live_pipe *pipe;    /* the latest pipeline record (a reference), NULL before any */
    struct live_host host;     /* running sums of the host records' CPU figures */
    struct ktab threads;
    struct analyse_self self; /* self time's walk, by thread index (LIVE_THREADS_MAX: shared) */
    char last_key[32];      /* pid '\0' tid of the last span fed: most runs share one thread */
    size_t last_key_len;
    uint32_t last_th;
    struct analyse_op_span *batch;
    size_t n_batch;
    size_t cap_batch;
    struct analyse_op_agg *agg;   /* by job op index */
    size_t n_agg;
    struct analyse_op_agg other;
    struct live_steplist lists[LIST_COUNT];
    struct live_bd bd;      /* the spans of the step-time breakdown (live_breakdown.c) */
    struct live_counters c;
};

struct live_job {
    int64_t id;
    struct ktab ops;          /* (name, cat) */
    uint8_t *roles;           /* [ops.n] */
    size_t cap_roles;
    size_t n_roles_done;      /* roles[0, n_roles_done) are classified */
    uint8_t *name_bits;       /* [ops.n]: analyse_steptrace_name_bits() of each op's name */
    size_t cap_name_bits;
    size_t n_name_bits;       /* name_bits[0, n_name_bits) are computed */
    struct live_rank **ranks;
    size_t n_ranks;
    size_t cap_ranks;
    struct live_rank *last;   /* lookup cache */
    bool dirty;               /* fed since the last publish */
    uint64_t bytes;           /* accounted at the last publish (job_bytes()) */
    int64_t used_ns;          /* last fed (stamp()) */
    struct live_job *lru_prev, *lru_next; /* live.lru: by lru_ns, oldest first */
    int64_t lru_ns;           /* its place in live.lru: used_ns, or a later use (live_evict()) */
    char env[6][RECORD_NAME_MAX + 1]; /* live_job_env()'s fields, in its order; "" = not set */
    size_t bd_max;            /* breakdown spans each rank keeps (live_bd.max_spans) */
};

struct live_pub {
    int64_t job_id;
    struct live_snapshot *snap;
    uint64_t seq;             /* live.pub_seq when snap was published */
    int64_t used_ns;          /* last live_ensure() (stamp()), 0 = none */
};

/* An evicted job, and the steps its last snapshot listed for the rank with the most (-1: not
 * known, a job marked at start-up that was never in memory). */
struct live_evicted {
    int64_t job_id;
    int64_t steps;
};

/* A map of job ids to positions in one of live's lists (live_index.c): O(1) on average. */
struct live_index {
    int64_t *keys;
    uint32_t *pos;            /* position + 1; 0 = empty slot */
    size_t cap;               /* slots, a power of two (0 before the first put) */
    size_t n;
};

/* key's position, or -1. */
ptrdiff_t live__index_get(const struct live_index *x, int64_t key);
/* Sets key's position (adding key). Returns 0 or -ENOMEM (nothing changed). */
int live__index_put(struct live_index *x, int64_t key, size_t pos);
/* Removes key (if there). */
void live__index_del(struct live_index *x, int64_t key);
void live__index_done(struct live_index *x);

struct live {
    struct live_job **jobs;
    size_t n_jobs;
    size_t cap_jobs;
    struct live_index job_index; /* id -> position in jobs */
    struct live_job *lru_head, *lru_tail; /* every job, least recently placed first (lru_ns) */
    size_t max_jobs;          /* live_config.max_jobs; past it a new job is refused */
    int64_t *untracked;       /* ids of the jobs refused past max_jobs (under lock), at most
                                 LIVE_UNTRACKED_LIST; n_untracked counts them all */
    size_t n_untracked_list;
    size_t cap_untracked;
    struct live_index untracked_index; /* id -> position in untracked (under lock) */
    _Atomic uint64_t n_untracked;
    struct live_job *last;
    int64_t dropped;          /* records of jobs refused past max_jobs or lost to OOM */
    struct analyse_span *scratch; /* FP/BP derivation */
    size_t cap_scratch;
    uint8_t *scratch_bits;        /* the name bits of scratch's spans */
    size_t cap_scratch_bits;
    struct analyse_op_span *merge; /* sort_spans()'s copy of the spans appended since the last
                                      sort */
    size_t cap_merge;
    struct analyse_self_scratch self_scratch; /* the buffers of analyse_self_order() */
    pthread_mutex_t lock;     /* guards pub and pub_seq only */
    uint64_t pub_seq;         /* publications so far (live_query_changed()) */
    struct live_pub *pub;
    size_t n_pub;
    struct live_index pub_index; /* job id -> position in pub (under lock) */
    uint64_t pub_serial;  /* serials handed to published snapshots (under lock) */
    size_t cap_pub;
    _Atomic uint64_t bytes;   /* sum of the jobs' accounted bytes */
    _Atomic int64_t stamp;    /* the latest use stamp handed out (stamp()) */
    struct live_evicted *evicted; /* evicted jobs, unordered (under lock) */
    size_t n_evicted;
    size_t cap_evicted;
    struct live_index evicted_index; /* job id -> position in evicted (under lock) */
    live_reload_fn reload;    /* live_set_reload() */
    void *reload_ud;
    const struct analyse_rules *rules; /* live_config.rules, borrowed */
    size_t bd_max_import;              /* breakdown spans per rank of an imported job */
    char *fp_point;                    /* live_config's, owned; NULL = none */
    char *bp_point;
};

/* memcmp() that accepts a NULL pointer with n == 0 (an absent pid, tid or cat). */
static inline bool live__bytes_eq(const char *a, const char *b, size_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}

/* Interning (live_intern.c). Finds or adds (k1, k2) in t. Returns 1 and sets *ret_idx; 0 if
 * absent and t holds max keys already; -ENOMEM. */
int live__ktab_get(struct ktab *t, const char *k1, size_t l1, const char *k2, size_t l2,
                   size_t max, uint32_t *ret_idx);
void live__ktab_done(struct ktab *t);

/* The state's life (live.c). A strictly rising clock_mono_ns(), so that two uses never tie in
 * the LRU order (any thread). */
int64_t live__stamp(struct live *lv);
/* job id's state, added if new; NULL when refused past max_jobs (counted) or out of memory. */
struct live_job *live__job_get(struct live *lv, int64_t id);
void live__job_free(struct live_job *j);
/* Removes j from lv's jobs (and its LRU list), subtracts its bytes, frees it. */
void live__job_remove(struct live *lv, struct live_job *j);

/* Steps (live_steps.c). */
void live__steplist_done(struct live_steplist *l);
/* Files sp under the step of l that holds its start, else keeps it pending. */
void live__list_add_span(struct live_steplist *l, const struct analyse_op_span *sp,
                         struct live_counters *c);
/* Files a span under the rank's step records (by its step span's number, else by time). */
void live__record_add_span(struct live_rank *rk, const struct analyse_op_span *sp);
/* Takes a step record into the rank's record list. */
void live__feed_step_record(struct live_rank *rk, const struct record *r);
/* The number after '#' in "ProfilerStep#12", or -1. */
int64_t live__step_number(const char *name, size_t len);
/* Files the step of a step span named name in the rank's span-step list, once per number.
 * Returns 0 (also for a name without a number), -ENOMEM. */
int live__add_span_step(struct live_rank *rk, const char *name, size_t len, int64_t begin_ns,
                        int64_t end_ns);
/* Settles l's oldest steps (points computed, spans freed) while it keeps more than
 * LIVE_RANK_SPANS_MAX spans. */
void live__settle(struct live *lv, struct live_job *j, struct live_steplist *l,
                  struct live_counters *c);
/* Recomputes the points of j's unsettled steps whose spans changed. */
void live__job_points(struct live *lv, struct live_job *j);

/* Snapshots (live_snapshot.c). The steps snap lists for rank (rank < 0: the rank with the
 * most), -1 for NULL snap or no such rank. */
int64_t live__snap_steps(const struct live_snapshot *snap, int64_t rank);

/* Accounting (live_account.c). Accounts j's bytes, with its new snapshot s, into lv->bytes. */
void live__account(struct live *lv, struct live_job *j, const struct live_snapshot *s);

/* Eviction (live_evict.c). Index of job_id in lv->evicted, or -1; under lv->lock. */
ptrdiff_t live__evicted_find(const struct live *lv, int64_t job_id);
/* Index of job_id in lv->pub, or -1; under lv->lock. */
ptrdiff_t live__pub_find(const struct live *lv, int64_t job_id);
/* Moves j to the tail of lv's LRU list, placed at lru_ns. Loop thread. */
void live__lru_touch(struct live *lv, struct live_job *j, int64_t lru_ns);
/* Notes job_id as refused past max_jobs (once). */
void live__untrack(struct live *lv, int64_t job_id);

#endif
