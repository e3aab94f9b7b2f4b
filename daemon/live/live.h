/* SPDX-License-Identifier: MIT */
/*
 * live: the analyses of jobs that are still receiving data, kept in memory. This header is the
 * writer's side (main.c only, loop thread); daemon/web/ reads through live_query.h.
 *
 * main.c hands every batch of decoded records to live_feed() right after store_append(), and
 * at start-up replays what the store holds (steps first, then each rank's trace events in block
 * order), so the numbers after a restart are the ones the daemon showed before it. live_feed()
 * only appends: an X span costs two hash lookups ((name, cat) per job, (pid, tid) per rank) and
 * a copy of 32 bytes into the rank's batch; nothing is sorted and nothing allocated per event.
 * live_flush() does the per-batch work: it groups the nesting (host) spans of each rank's batch
 * by thread in torch's walk order (start ascending, end descending, arrival) and walks each
 * thread with a state that survives across batches (torch's nesting rule for self time over the
 * spans the thread keeps, whatever batch they came in: analyse_ops.h, "Self time, walked
 * incrementally"; a thread is the leading integer of the pid and tid when they have one, as web
 * reads the stored spans), folds the spans into
 * per-rank operator aggregates, and files the spans a step trace needs under their step. live_publish() flushes and rebuilds an immutable, refcounted
 * snapshot for every job that changed; HTTP threads take a reference under a mutex held only
 * for the pointer swap, so no query ever touches loop state.
 *
 * Steps come from step records ({"type":"step"}) and from step spans (role STEP, such as
 * "ProfilerStep#5", numbered by the digits after '#'); a step record wins over a step span of
 * the same number. A record step holds the spans inside the step span of its number, and the
 * other spans that start inside its [begin, end). A step's FP/BP points come from its spans
 * (analyse_steptrace_points(), computed when a snapshot is built after they changed; where the
 * rank has step spans, only for a record step that a step span of its number covers), else from
 * its "phases" (fp = begin + dataloader, bp = fp + forward + backward), else it has none
 * (docs/ANALYSIS.md "Step identity").
 *
 * Every structure is capped (the LIVE_*_MAX below) and each cap has a counter in the snapshot.
 * The numbers after a restart equal the live ones as long as no counter is non-zero and the
 * store's retention has not evicted trace blocks.
 */
#ifndef STEPSCOPE_LIVE_H
#define STEPSCOPE_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/record.h"

#define LIVE_JOBS_DEFAULT 65536     /* jobs tracked at most by default (live_config.max_jobs); a
                                       job past it is refused, counted and says so
                                       (live_is_untracked()); no array has this size */
#define LIVE_JOBS_LIMIT (1 << 24)   /* the largest live_config.max_jobs (config live_max_jobs) */
#define LIVE_UNTRACKED_LIST 65536   /* refused job ids remembered; all are counted */
#define LIVE_RANKS_MAX 4096         /* ranks per job */
#define LIVE_OPS_MAX 8192           /* distinct (name, cat) per job; later ones fold into "Other" */
#define LIVE_THREADS_MAX 4096       /* distinct (pid, tid) per rank; later ones share one stack */
#define LIVE_STEPS_MAX 65536        /* steps kept per rank; the oldest eighth goes when full */
#define LIVE_STEP_SPANS_MAX 65536   /* spans kept for one step's FP/BP points */
#define LIVE_STEP_COMM_MAX 64       /* communication ops kept per step for its reduce lines */
#define LIVE_RANK_SPANS_MAX (1 << 20) /* spans kept under steps per rank; oldest steps settle */
#define LIVE_PENDING_MAX 65536      /* spans waiting for their step record, per rank */
#define LIVE_QUEUES_MAX 64          /* distinct queue names per rank; samples of later ones counted */
#define LIVE_QUEUE_SAMPLES_MAX 65536 /* samples kept per queue; the oldest half goes when full */
#define LIVE_QUEUE_NAME_MAX 256     /* bytes of a queue name kept; longer names are cut */
#define LIVE_PIPE_OPS_MAX RECORD_PIPE_OPS_MAX /* a pipeline record's caps (core/record.h) */
#define LIVE_PIPE_CHILDREN_MAX RECORD_PIPE_CHILDREN_MAX
#define LIVE_PIPE_VALUES_MAX RECORD_PIPE_VALUES_MAX
#define LIVE_BD_CHUNK 8192          /* breakdown spans per shared chunk */
#define LIVE_BD_SPANS_MAX (1 << 18) /* breakdown spans kept per rank (10 MiB; an imported job's
                                       ranks keep live_config.bd_import_bytes); the oldest chunk
                                       goes when full, and the steps it touched with it */

struct live;
struct analyse_rules;

/* What live classifies and points with, fixed at creation. */
struct live_config {
    const struct analyse_rules *rules; /* user role rules, tried before the built-in table;
                                          borrowed, must outlive lv; NULL: built-in only */
    const char *fp_point;              /* daemon-wide FP/BP override (config fp_point/bp_point,
                                          origin "config"); copied; NULL or "" = none */
    const char *bp_point;
    size_t max_jobs;                   /* jobs tracked at most (config live_max_jobs); 0:
                                          LIVE_JOBS_DEFAULT; more than LIVE_JOBS_LIMIT:
                                          LIVE_JOBS_LIMIT */
    uint64_t bd_import_bytes;          /* breakdown spans each rank of an imported job keeps, in
                                          bytes (40 a span; whole chunks): an imported trace is
                                          analysed whole up to this; 0, or less than
                                          LIVE_BD_SPANS_MAX spans: LIVE_BD_SPANS_MAX, as any job */
};

/* A job's own FP/BP overrides, from its hello's "env" (record_hello). NULL or "" = not set. */
struct live_job_env {
    const char *stepscope_fp, *stepscope_bp; /* STEPSCOPE_FP_POINT / STEPSCOPE_BP_POINT */
    const char *profiling_fp, *profiling_bp; /* PROFILING_FP_START / PROFILING_BP_END */
    const char *mindspore_fp, *mindspore_bp; /* FP_POINT / BP_POINT */
    bool imported; /* a hello with "source":"import": the job's ranks keep bd_import_bytes of
                      breakdown spans from now on (once set, it stays) */
};

/* A new, empty live state. cfg may be NULL (built-in rules, no overrides); it is read during the
 * call only (rules excepted, see above). Returns NULL on OOM. Free with live_free(). */
struct live *live_new_config(const struct live_config *cfg);

/* live_new_config(NULL). */
struct live *live_new(void);

/* Records job_id's overrides from a hello. Each set (non-empty) field replaces the job's value
 * for that source; fields not set keep what an earlier hello of the job gave, so the ranks of a
 * job share one set. A change makes the job's unsettled steps recompute their points at the
 * next publish. The FP/BP of a step picks, by analyse_steptrace_pick_override()'s precedence:
 * the job's STEPSCOPE_*, then PROFILING_*, then FP_POINT/BP_POINT, then live_config's
 * fp_point/bp_point, then automatic detection. Loop thread. Returns 0, -ENOMEM, or
 * -ENAMETOOLONG for a name longer than RECORD_NAME_MAX (nothing is changed then). */
int live_job_env(struct live *lv, int64_t job_id, const struct live_job_env *env);

/* Forgets job_id: its aggregates, and its published snapshot (readers holding it keep it until
 * their live_snapshot_put()). A later live_feed() of that id starts afresh. Loop thread. */
void live_drop_job(struct live *lv, int64_t job_id);

/* Drops job_id's state as live_evict() does, remembered as evicted: the next reader reloads it
 * from the store (for a job whose stored rows changed under it: ranks deleted,
 * store_job_delete_ranks()). Only for a job without a connected session, whose changes are
 * committed. Loop thread. Returns 0 or -ENOMEM (nothing dropped). */
int live_evict_job(struct live *lv, int64_t job_id);

/* ---- memory budget: accounting, eviction, reload (docs/ARCHITECTURE.md, "Live memory") ----
 *
 * Each job's live state is accounted in bytes (an estimate from the capacities of what it holds:
 * operator and thread tables, open spans, steps and their spans, queues, breakdown chunks, and
 * its published snapshot) when it is published. live_evict() drops the least recently used
 * jobs (by feed or live_ensure()) that the caller allows until the total is under a budget, and
 * remembers them as evicted; a reader's live_ensure() of an evicted job calls the reload hook
 * (main.c replays the job from the store on the loop, then calls live_reload_done()). */

/* The bytes the jobs' live state holds, as last accounted (any thread). */
uint64_t live_bytes(const struct live *lv);

/* job_id's accounted bytes (0 if not in memory). Loop thread. */
uint64_t live_job_bytes(const struct live *lv, int64_t job_id);

#define LIVE_EVICT_GRACE_NS (2LL * 1000 * 1000 * 1000) /* jobs used this recently stay */
#define LIVE_EVICT_STEP 256 /* jobs one live_evict() call looks at, at most */

/* Jobs in memory now. Loop thread. */
size_t live_jobs(const struct live *lv);

/* Distinct jobs refused so far (any thread). */
uint64_t live_untracked_jobs(const struct live *lv);

/* Evicts jobs, least recently used first, while live_bytes() > budget or more than
 * max_jobs - max_jobs / 8 jobs are in memory (so new jobs find room): only jobs that
 * can_evict(ud, job_id) allows (main.c: no open session, every record committed) and that were
 * not fed or ensured in the LIVE_EVICT_GRACE_NS before now_ns (clock_mono_ns()). An evicted
 * job is dropped as by live_drop_job() and remembered as evicted. Incremental: one call looks
 * at LIVE_EVICT_STEP jobs at most, O(1) each on average, whatever the number of jobs, so the
 * caller calls it at every turn of its loop (it returns at once under both limits). The order
 * is by feed; a job read since (live_ensure()) or kept by can_evict() is moved behind the
 * others instead, so it is asked again only after the ones used before it. Loop thread.
 * Returns the number of jobs evicted. */
size_t live_evict(struct live *lv, uint64_t budget, int64_t now_ns,
                  bool (*can_evict)(void *ud, int64_t job_id), void *ud);

/* Marks job_id evicted without it having been in memory (start-up: a stored job not replayed
 * within the budget). Loop thread. Returns 0 or -ENOMEM. */
int live_mark_evicted(struct live *lv, int64_t job_id);

/* Whether job_id is evicted (its state is in the store, not here). Any thread. */
bool live_is_evicted(struct live *lv, int64_t job_id);

/* Forgets job_id's evicted mark once the caller has replayed it from the store (live_feed())
 * and published it (live_publish()): until then a reader's live_ensure() still waits for the
 * reload rather than answer from a partial state. Loop thread. */
void live_reload_done(struct live *lv, int64_t job_id);

/* The reload hook live_ensure() calls for an evicted job (any HTTP thread; main.c queues the
 * reload to the loop and waits). Returns 0 when the job is back, or a negative errno. */
typedef int (*live_reload_fn)(void *ud, int64_t job_id);

/* Sets the hook (before any reader runs). */
void live_set_reload(struct live *lv, live_reload_fn fn, void *ud);

/* Frees lv (NULL-safe). Snapshots still referenced stay valid until their last
 * live_snapshot_put(). Call it after the HTTP threads have stopped. */
void live_free(struct live *lv);

/* Takes n decoded records of job_id's rank (records are borrowed for the call; what is kept is
 * copied). Only TRACE "X" events with a name, STEP, QUEUE, PIPELINE and HOST records are used;
 * the rest are ignored. A QUEUE record (rare: one per queue and step) appends (step, size, capacity) to the
 * rank's series of that queue name; a PIPELINE record (rarer still) replaces the rank's
 * topology (docs/PROTOCOL.md); one it cannot read is counted in pipelines_bad. A HOST record
 * adds its cpu_percent and sys_cpu_percent to the rank's running means (live_query_host()).
 * Loop thread; never blocks, never allocates per event (only when a table grows). Returns 0, or
 * -ENOMEM (the records that did not fit are counted in the snapshot's dropped counter). */
int live_feed(struct live *lv, int64_t job_id, int64_t rank, const struct record *recs, size_t n);

/* Processes everything fed since the last call (sorting, nesting, step assignment, FP/BP
 * points of the steps that changed). Loop thread. Returns 0 or -ENOMEM. */
int live_flush(struct live *lv);

/* live_flush(), then replaces the published snapshot of every job that changed. Loop thread;
 * takes the snapshot mutex only to swap pointers. Returns 0 or -ENOMEM (the old snapshot of a
 * job that could not be rebuilt stays published). */
int live_publish(struct live *lv);

#endif
