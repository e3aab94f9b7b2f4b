/* SPDX-License-Identifier: MIT */
/*
 * store_int: what the files of daemon/store share and nothing outside it may include. The store
 * is split by thread: store.c is the loop thread's side (in-memory job, stream and session tables,
 * the open batch that store_append() fills), writer.c is the writer thread (compression, one SQLite
 * transaction per group of sealed batches, retention), query.c the HTTP threads' side (a pool of
 * read-only connections), migrate.c the schema. The batch is the hand-off between the first two:
 * the loop thread builds it without locks, seals it into a queue under st->mu, and from then on
 * only the writer touches it until it frees it after the commit.
 */
#ifndef STEPSCOPE_STORE_INT_H
#define STEPSCOPE_STORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>
#include <zstd.h>

#include "../../lib/log.h"
#include "../../lib/util.h"
#include "../core/stats.h"
#include "store.h"
#include "store_query.h"

#define STORE_SCHEMA_VERSION 6
#define STORE_BLOCK_RAW_MAX (1024 * 1024)     /* a timeline block seals at this many raw bytes */
#define STORE_BLOCK_RAW_FIRST (64 * 1024)     /* first allocation of a block's raw buffer */
/* No block the writer makes is larger (STORE_BLOCK_RAW_MAX of lines, or one line of at most
 * max_line_bytes, itself at most 1 GiB): a stored raw size above it is damage. */
#define STORE_BLOCK_DECODE_MAX ((int64_t)2 << 30)
#define STORE_BATCH_RAW_MAX (8 * 1024 * 1024) /* store_append() seals the open batch above it */
#define STORE_POOL_IDLE 4                     /* spare block buffers kept while idle */
#define STORE_POOL_LIMIT 1024                 /* spare block buffers kept at most */
#define STORE_READERS_MAX 8                   /* read-only connections in the pool */
#define STORE_BUSY_TIMEOUT_MS 5000
/* The node a session was pulled from (daemon/cluster/pull.c puts "origin" in its hello), as an
 * SQL expression over a sessions.hello column; NULL for this node's own sessions. */
#define STORE_SQL_ORIGIN(hello) \
    "(CASE WHEN json_valid(" hello ") THEN json_extract(" hello ", '$.origin') END)"
#ifndef STORE_ZSTD_LEVEL
#define STORE_ZSTD_LEVEL 1 /* see the measurements in writer.c */
#endif
#define STORE_CLOSE_GIVE_UP_NS (5 * 1000000000LL) /* store_close() stops retrying a failing commit */

enum store_codec {
    STORE_CODEC_NONE = 0, /* data is the raw lines */
    STORE_CODEC_ZSTD = 1, /* data is one zstd frame of the raw lines */
};

/* A minimal intrusive hash table (chained, power-of-two buckets) for the in-memory tables. */
struct store_hnode {
    struct store_hnode *next;
    uint64_t hash;
};

struct store_htab {
    struct store_hnode **buckets; /* owned; n_buckets entries */
    size_t n_buckets;             /* 0 or a power of two */
    size_t n;                     /* nodes linked */
};

/* A job known to the daemon (committed or queued for its insert). Loop thread. */
struct store_jobm {
    struct store_hnode node; /* keyed by name */
    int64_t id;
    char *name;              /* owned, NUL-terminated */
};

/* A replay stream. Keyed ones live as long as the store; a one-off stream (key "") only as long
 * as its session. Loop thread. */
struct store_stream {
    struct store_hnode node;       /* keyed by (job_id, rank, key); unlinked when key is "" */
    int64_t id;
    int64_t job_id;
    int64_t rank;
    char *key;                     /* owned */
    uint64_t accepted_seq;         /* next seq not yet accepted (durable after a restart) */
    struct store_session *holder;  /* the open session holding it, or NULL */
};

/* An open session. Inserted and removed under st->live_mu (readers count them for `live`); the
 * loop thread reads it without the lock. */
struct store_session {
    struct store_hnode node;       /* keyed by id */
    int64_t id;
    int64_t job_id;
    int64_t rank;
    struct store_stream *stream;
    uint64_t batch_gen;            /* slot and seq_idx below are valid in the batch of this gen */
    size_t slot;                   /* index into batch->slots */
    size_t seq_idx;                /* index into batch->seqs */
};

/* One timeline block being filled or sealed: verbatim trace lines each ended by '\n'. */
struct store_block {
    int64_t job_id;
    int64_t rank;
    int64_t t_min_ns;   /* INT64_MIN..INT64_MAX for a block of events without a time */
    int64_t t_max_ns;
    uint64_t n_events;
    char *raw;          /* owned; len bytes used of cap; compressed only inside the commit */
    size_t len;
    size_t cap;
};

/* What one session added to one batch: its counters and its open blocks. */
struct store_slot {
    int64_t job_id;
    int64_t rank;
    uint64_t events, spans, steps, queues, hosts, pipelines;
    size_t timed;   /* index of the open block of timed events in batch->blocks, or SIZE_MAX */
    size_t untimed; /* likewise for events without a ts (metadata): they match every range */
};

struct store_step_row {
    int64_t job_id, rank, step, begin_ns, end_ns, samples;
    uint64_t seq;
    size_t phases_off, phases_len; /* in the arena; len 0: NULL */
};

struct store_queue_row {
    int64_t job_id, rank, ts_ns, step, size, capacity;
    size_t name_off, name_len;
};

struct store_host_row {
    int64_t job_id, rank, ts_ns, rss_bytes;
    double cpu_percent, sys_cpu_percent;
};

struct store_pipe_row {
    int64_t job_id, rank, ts_ns;
    uint64_t seq;
    size_t json_off, json_len;
};

struct store_new_job {
    int64_t id;
    size_t name_off, name_len;
    int64_t seen_ns;
};

struct store_new_stream {
    int64_t id, job_id, rank;
    size_t key_off, key_len;
};

struct store_new_session {
    int64_t id, job_id, rank, stream_id, world_size, pid, started_ns;
    size_t hello_off, hello_len, host_off, host_len, fw_off, fw_len, fwv_off, fwv_len;
    size_t run_off, run_len, clock_off, clock_len;
};

struct store_session_end {
    int64_t id, job_id, ended_ns;
    bool clean;
};

/* A capture's definition, written (or rewritten) whole. */
struct store_capture_row {
    int64_t id, job_id, created_ns, start_step, steps;
    bool all_ranks;
    size_t what_off, what_len;
    int64_t series, window, every, repeat;
};

/* One rank's state of a capture, written (or rewritten) whole. */
struct store_capture_rank_row {
    int64_t capture_id, rank, updated_ns, first_step;
    size_t state_off, state_len, reason_off, reason_len;
};

/* A rank's step count as live analysis lists it (store_rank_live_steps()). */
struct store_live_steps {
    int64_t job_id, rank, steps;
};

/* A rank of a job deleted (store_job_delete_ranks()). */
struct store_rank_del {
    int64_t job_id, rank;
};

/* A job's count of the commits so far, as of the last commit that wrote it (st->job_commits). */
struct store_job_commits {
    int64_t job_id;
    uint64_t commits;
};

/* A stream's seqs made durable by the batch: [from, to). */
struct store_seq {
    int64_t stream_id;
    uint64_t from;
    uint64_t to;
};

/* Growable array bookkeeping: n used, cap allocated. */
#define STORE_VEC(type, name) \
    type *name;               \
    size_t n_##name, cap_##name

#define STORE_DAMAGED_MAX 1024

/* A batch: everything accepted between two seals, committed in one transaction (or with the
 * batches queued beside it). Order inside matters: jobs, streams, sessions, then data. */
struct store_batch {
    struct store_batch *next; /* queue link (st->queue_head..tail) */
    uint64_t gen;             /* st->batch_gen when opened; 0 is never used */
    uint64_t bytes;           /* added to the buffered-bytes gauge for this batch */
    uint64_t raw_bytes;       /* trace bytes in blocks, for the auto-seal threshold */
    STORE_VEC(struct store_new_job, jobs);
    STORE_VEC(struct store_new_stream, streams);
    STORE_VEC(struct store_new_session, sessions);
    STORE_VEC(struct store_slot, slots);
    STORE_VEC(struct store_block, blocks);
    STORE_VEC(struct store_step_row, steps);
    STORE_VEC(struct store_queue_row, queues);
    STORE_VEC(struct store_host_row, hosts);
    STORE_VEC(struct store_pipe_row, pipes);
    STORE_VEC(struct store_session_end, ends);
    STORE_VEC(struct store_seq, seqs);
    STORE_VEC(struct store_capture_row, caps);
    STORE_VEC(struct store_capture_rank_row, cap_ranks);
    STORE_VEC(int64_t, cap_forgets); /* captures forgotten (store_capture_forget()), after caps */
    STORE_VEC(struct store_live_steps, live_steps);
    STORE_VEC(struct store_rank_del, rank_dels); /* ranks deleted, after everything above */
    STORE_VEC(int64_t, dels); /* jobs deleted (store_job_delete()), after everything above */
    char *arena;              /* strings of the rows above, referenced by offset */
    size_t arena_len, arena_cap;
};

/* The writer's cached statements, in the order of writer.c's table. */
enum store_stmt {
    STMT_BEGIN,
    STMT_COMMIT,
    STMT_ROLLBACK,
    STMT_INS_JOB,
    STMT_INS_STREAM,
    STMT_INS_SESSION,
    STMT_INS_RANK,
    STMT_UPD_JOB_HELLO,
    STMT_END_SESSION,
    STMT_UPD_JOB_SEEN,
    STMT_INS_BLOCK,
    STMT_UPD_JOB_BLOCK,
    STMT_INS_STEP,
    STMT_INS_QUEUE,
    STMT_INS_HOST,
    STMT_INS_PIPE,
    STMT_UPD_STREAM,
    STMT_UPD_RANK,
    STMT_UPD_JOB_COUNTS,
    STMT_UPD_JOB_STEPS,
    STMT_SEL_JOB_STORED,
    STMT_SEL_OLDEST,
    STMT_DEL_BLOCK,
    STMT_UPD_JOB_EVICT,
    STMT_PUT_CAPTURE,
    STMT_PUT_CAPTURE_RANK,
    STMT_DEL_CAPTURE_RANKS,
    STMT_DEL_CAPTURE,
    STMT_UPD_RANK_LIVE_STEPS,
    STMT_INS_SHIP_DELETE,   /* a deleted job queued for the cluster shipper (ship_deletes) */
    STMT_LOWER_SHIP_CURSORS, /* shipper cursors no higher than the tables' last rowids */
    STMT_DEL_RANK_COUNTS, /* a rank's counts taken off its job's, then its rows deleted: */
    STMT_DEL_RANK_FIRST,  /* the DELETEs of one rank, in this order, through STMT_DEL_RANK_LAST */
    STMT_DEL_RANK_CAPTURE_RANKS = STMT_DEL_RANK_FIRST,
    STMT_DEL_RANK_BLOCKS,
    STMT_DEL_RANK_STEPS,
    STMT_DEL_RANK_QUEUES,
    STMT_DEL_RANK_HOSTS,
    STMT_DEL_RANK_PIPES,
    STMT_DEL_RANK_SESSIONS,
    STMT_DEL_RANK_STREAMS,
    STMT_DEL_RANK_LAST, /* its row in ranks */
    STMT_DEL_JOB_FIRST, /* the DELETEs of one job, in this order, through STMT_DEL_JOB_LAST */
    STMT_DEL_JOB_CAPTURE_RANKS = STMT_DEL_JOB_FIRST,
    STMT_DEL_JOB_CAPTURES,
    STMT_DEL_JOB_BLOCKS,
    STMT_DEL_JOB_STEPS,
    STMT_DEL_JOB_QUEUES,
    STMT_DEL_JOB_HOSTS,
    STMT_DEL_JOB_PIPES,
    STMT_DEL_JOB_SESSIONS,
    STMT_DEL_JOB_STREAMS,
    STMT_DEL_JOB_RANKS,
    STMT_DEL_JOB_LAST = STMT_DEL_JOB_RANKS + 1, /* the job's own row */
    STMT_COUNT,
};

struct store_reader {
    struct store_reader *next; /* free list link */
    sqlite3 *db;               /* read-only */
};

struct store {
    uint64_t min_free;         /* store_config.min_free_bytes */
    char *data_dir;            /* owned copies of the paths */
    char *db_path;
    char *wal_path;
    int lock_fd;               /* -1 when not held */
    bool opened_empty_file;    /* stepscope.db existed with 0 bytes at open (store_info) */
    uint64_t retention_bytes;  /* 0: no cap */
    uint64_t max_buffered;     /* 0: no cap */
    struct stats *stats;       /* cfg->stats or own_stats */
    struct stats own_stats;
    void (*on_durable)(void *ud);
    void *ud;

    /* Loop thread only. */
    struct store_htab jobs;    /* struct store_jobm by name */
    struct store_htab streams; /* keyed struct store_stream */
    int64_t next_job_id, next_stream_id, next_session_id;
    struct store_batch *open;  /* being filled; NULL when nothing is pending */
    uint64_t batch_gen;        /* gen of the last batch opened */
    uint64_t sealed;           /* batches sealed so far */

    /* Open sessions: changed by the loop thread under live_mu, counted by readers. */
    pthread_mutex_t live_mu;
    struct store_htab sessions;
    /* Blocks a reader could not decode (bad codec, raw size or compressed data), under live_mu:
     * the first STORE_DAMAGED_MAX of them; n_damaged_all counts every one. */
    STORE_VEC(struct store_damaged_block, damaged);
    int64_t n_damaged_all;

    /* Between the loop and the writer, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cond;            /* queue changed, commit done, or stop requested */
    struct store_batch *queue_head; /* sealed, oldest first */
    struct store_batch *queue_tail;
    uint64_t committed;             /* batches committed (or given up at close) */
    /* Per job, committed as it was after the last commit that wrote any row of the job, sorted
     * by job id (store_query_job_commits()); entries are never removed (a job id reused after a
     * deletion only sees its count grow). all_jobs_commits: committed as it was after the last
     * commit whose jobs could not all be noted (no memory): it counts as every job's. */
    STORE_VEC(struct store_job_commits, job_commits);
    uint64_t all_jobs_commits;
    bool stopping;
    STORE_VEC(struct store_seq, durable); /* published by the writer, taken by collect */
    _Atomic uint64_t buffered;
    char **pool;                    /* spare raw buffers of STORE_BLOCK_RAW_MAX bytes: reusing them
                                     * spares the loop a page fault per 4 KiB of new lines */
    size_t n_pool, pool_max;        /* pool_max: enough for max_buffered_bytes; trimmed to
                                     * STORE_POOL_IDLE after a second without work */

    /* Writer thread. */
    STORE_VEC(int64_t, touched); /* the jobs a group wrote (writer.c touched_jobs()) */
    sqlite3 *db;
    sqlite3_stmt *stmt[STMT_COUNT];
    void *zctx;                /* ZSTD_CCtx */
    void *zbuf;                /* compression output, zbuf_cap bytes */
    size_t zbuf_cap;
    pthread_t thread;
    bool thread_started;

    /* Readers. */
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cond;
    struct store_reader *pool_free;
    int pool_open;
    bool mutexes_ready;
};

/* migrate.c: brings db to STORE_SCHEMA_VERSION. Returns 0; -EPROTO if it is newer; -EIO for a
 * database that is not ours or a failed step. err (STORE_ERR_MAX) gets the reason. */
int store__migrate(sqlite3 *db, const char *path, char *err);

/* Formats a one-line reason into err (STORE_ERR_MAX bytes), truncating. */
void store__errf(char *err, const char *fmt, ...) SS_PRINTF(2, 3);

/* SQLite result code to negative errno. */
int store__errno(int rc);

/* writer.c */
int store__writer_prepare(struct store *st, char *err);
void *store__writer_main(void *arg);
void store__batch_free(struct store_batch *b);

/* query.c: closes the reader pool. */
void store__readers_close(struct store *st);

/* query.c, shared with ship.c: decodes one stored block (codec, raw_bytes, data[0..len)) into
 * *ret_lines / *ret_n, decompressing into *buf with *dctx (both made on demand); -EIO with *why
 * for a damaged block. Notes a damaged block (logged once, listed in store_info). Reads a stored
 * line's top-level members (store_event). */
int store__decode_block(ZSTD_DCtx **dctx, char **buf, size_t *buf_cap, int64_t raw_bytes,
                        int codec, const void *data, size_t len, const char **ret_lines,
                        size_t *ret_n, const char **why);
void store__block_damaged(struct store *st, int64_t job_id, int64_t rank, int64_t id,
                          const char *why);
void store__scan_event(const char *p, size_t n, struct store_event *ev);

/* Grows a vector to hold at least n_<name> + extra elements (lib/util.h's util_grow()). */
#define STORE_RESERVE(vec_owner, name, extra)                                                   \
    util_grow((void **)&(vec_owner)->name, &(vec_owner)->cap_##name,                       \
                   (vec_owner)->n_##name + (extra), sizeof *(vec_owner)->name)

#endif
