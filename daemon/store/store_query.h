/* SPDX-License-Identifier: MIT */
/*
 * store_query: the reader's side of the store, for daemon/web/ (HTTP threads). Each call borrows one of
 * the store's read-only SQLite connections (a small pool; WAL lets readers run beside the writer)
 * and sees committed data only, plus the live state the loop publishes (which sessions are open).
 * Results are plain structs the caller owns; no SQL or sqlite3 type crosses this header.
 *
 * Threading: any thread; calls may run concurrently with each other and with the writer.
 */
#ifndef STEPSCOPE_STORE_QUERY_H
#define STEPSCOPE_STORE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/record.h"

struct store;

#define STORE_JOB_DAMAGED_IDS 8

struct store_job {
    int64_t id;
    char name[RECORD_NAME_MAX + 1];
    int64_t ranks;          /* distinct ranks seen */
    int64_t world_size;     /* largest world_size any hello gave */
    int64_t sessions;       /* connections ever opened for the job */
    int64_t steps;          /* steps of the rank with the most: the larger of its step records
                               and the count live last reported (store_rank_live_steps()) */
    int64_t spans;          /* trace events with ph X or B */
    int64_t events;         /* trace events of every phase */
    int64_t queue_samples;
    int64_t host_samples;
    int64_t pipelines;      /* pipeline topology records */
    int64_t stored_bytes;   /* compressed timeline bytes now kept */
    int64_t evicted_events; /* trace events dropped by retention */
    int64_t first_seen_ns;  /* wall clock of the first hello */
    int64_t last_seen_ns;   /* wall clock of the last commit that touched the job */
    bool live;              /* at least one session open now */
    int64_t damaged_blocks; /* timeline blocks of the job found undecodable so far (skipped) */
    int64_t damaged_block_ids[STORE_JOB_DAMAGED_IDS]; /* the first of them; -1 past the count */
};

struct store_rank {
    int64_t rank;
    char host[RECORD_NAME_MAX + 1];
    char node[RECORD_NAME_MAX + 1]; /* the node it was pulled from (its latest session's hello
                                       "origin": daemon/cluster/pull.c); "": this node's own */
    char framework[RECORD_NAME_MAX + 1];
    char framework_version[RECORD_NAME_MAX + 1];
    int64_t pid;             /* of the latest session */
    int64_t sessions;
    int64_t events;
    int64_t steps;           /* the larger of step records and live's last count */
    int64_t trace_start_ns;  /* the earliest ts and the latest end of the rank's stored events
                                (block bounds, evicted blocks gone); INT64_MIN: none timed */
    int64_t trace_end_ns;
    bool live;
};

#define STORE_INFO_DAMAGED 16

struct store_info {
    int64_t db_bytes;        /* database plus WAL file size */
    int64_t jobs;
    int64_t blocks;          /* compressed timeline blocks stored */
    int64_t block_raw_bytes; /* their size before compression */
    int64_t block_bytes;     /* and after */
    bool opened_empty_file;  /* the database file existed with 0 bytes when the daemon started
                              * (and was begun empty, the start logged a warning) */
    int64_t fs_free_bytes;   /* store_query_space()'s free_bytes; -1 if statvfs failed */
    int64_t damaged_blocks;  /* blocks found undecodable since start (skipped by every reader:
                                store_query_events(), store_event_iter_next()) */
    size_t n_damaged;        /* the first of them, up to STORE_INFO_DAMAGED */
    struct store_damaged_block {
        int64_t job_id, rank, block_id;
    } damaged[STORE_INFO_DAMAGED];
};

/* The data dir's file system (statvfs; no SQL, any thread). */
struct store_space {
    uint64_t free_bytes;     /* free to this process (f_bavail) */
    uint64_t min_free_bytes; /* store_config.min_free_bytes */
    bool low;                /* free_bytes < min_free_bytes: commits may soon fail (ENOSPC) */
};

/* Fills *ret. Returns 0 or the -errno of statvfs. */
int store_query_space(struct store *st, struct store_space *ret);

/* All jobs, most recently seen first. *ret_jobs is malloc'd (caller frees; NULL when n is 0).
 * Returns 0, -ENOMEM or -EIO. */
int store_query_jobs(struct store *st, struct store_job **ret_jobs, size_t *ret_n);

/* One job by decimal id or by exact name (an all-digit name loses to the id of that number).
 * Returns 0, -ENOENT, -ENOMEM or -EIO. */
int store_query_job(struct store *st, const char *id_or_name, struct store_job *ret_job);

/* A rank of a job that more than one cluster node shipped: node's copy is not shown, kept's is
 * (daemon/cluster/pull.c, store_pull.h). */
struct store_conflict {
    int64_t rank;
    char node[80], kept[80];
};

/* The conflicts of a job, by rank and node. Caller frees *ret (NULL when none). Returns 0,
 * -ENOMEM or -EIO. */
int store_query_conflicts(struct store *st, int64_t job_id, struct store_conflict **ret,
                          size_t *ret_n);

/* The ranks of a job, ordered by rank. Caller frees *ret_ranks. Returns 0, -ENOMEM or -EIO. */
int store_query_ranks(struct store *st, int64_t job_id, struct store_rank **ret_ranks,
                      size_t *ret_n);

/* Whole-store figures. Returns 0 or -EIO. */
int store_query_info(struct store *st, struct store_info *ret_info);

/* The job's commit count: the number of the writer's transactions committed so far as it was
 * after the last one that wrote any row of the job (its hellos, sessions and their ends, lines,
 * steps, queue, host and pipeline rows, live step counts, captures, deleted ranks, its deletion
 * and the retention evictions of its blocks); 0 when none did since the store opened. It is
 * raised only after the COMMIT, so after what the commit wrote is visible to every read: a
 * reader that takes it before it reads the job and finds it unchanged later knows that nothing
 * of the job was committed since, and what it read is still what the store holds of the job
 * (web/cache.c keeps the store-read answers under it). Never lowers, even for a job id that a
 * deletion frees and a new job takes again. Any thread. */
uint64_t store_query_job_commits(struct store *st, int64_t job_id);

/* Calls cb with each stored trace event (the verbatim JSON line) of a job's rank (rank < 0: every
 * rank) whose block overlaps [t0_ns, t1_ns], in block order, until cb returns non-zero or max
 * events were given (max < 0: no limit). Events without a "ts" and metadata events ("ph":"M",
 * with a ts or not) are stored in blocks that overlap every range. line is not NUL-terminated and is valid only during the call. The call
 * holds a read transaction while cb runs, so cb should not block for long. Returns the number
 * given (the one cb stopped at included), or -ENOENT (no such job), -ENOMEM, -EIO. */
int64_t store_query_events(struct store *st, int64_t job_id, int64_t rank, int64_t t0_ns,
                           int64_t t1_ns, int64_t max,
                           int (*cb)(void *ud, const char *line, size_t len), void *ud);

/* One trace event given by store_event_iter_next(): the stored line verbatim and what the store
 * reads of it (the top-level "ts", "dur", "pid", "tid", "name", "cat" and "ph" of the line, found by a scan that skips
 * strings and nested values, so an "args" member never answers for them). */
struct store_event {
    const char *line;   /* not NUL-terminated; valid until the next call on the iterator */
    size_t len;
    int64_t ts_ns;      /* "ts"; INT64_MIN when absent or not a number (metadata events) */
    const char *ts;     /* the raw JSON text of "ts", inside line; NULL when ts_ns is INT64_MIN */
    size_t ts_len;
    int64_t dur_ns;     /* "dur"; 0 when absent, negative or not a number */
    const char *pid;    /* the raw JSON text of "pid" (a number or a quoted string), inside
                           line; NULL when absent */
    size_t pid_len;
    const char *tid;    /* likewise "tid", "name" and "cat" (a string's text with its quotes) */
    size_t tid_len;
    const char *name;
    size_t name_len;
    const char *cat;
    size_t cat_len;
    char ph;            /* "ph" when it is one letter ('X', 'M', ...), else 0 */
};

struct store_event_iter;

/* An iterator over the stored trace events of a job's rank (rank < 0: every rank) that lie in
 * [t0_ns, t1_ns] exactly: an event is given when ts_ns <= t1_ns and ts_ns + dur_ns >= t0_ns, or
 * when it has no ts or is metadata (ph "M": Kineto's thread_name and process_name carry a ts,
 * but name their thread in every window). Events come in block order.
 *
 * Made for long exports: it holds no SQLite connection between calls. _new() lists the ids of
 * the overlapping blocks once (8 bytes each); each _next() that needs a block borrows a read
 * connection just long enough to copy that one block out (at most STORE_BLOCK_RAW_MAX raw bytes
 * held), so a slow reader never pins a read transaction. A block evicted by retention meanwhile
 * is skipped. Returns 0 and sets *ret_it (free with store_event_iter_free()), or -ENOENT (no
 * such job), -ENOMEM, -EIO. Any thread; one iterator is used by one thread at a time. */
int store_event_iter_new(struct store *st, int64_t job_id, int64_t rank, int64_t t0_ns,
                         int64_t t1_ns, struct store_event_iter **ret_it);

/* The next event in the window: returns 1 and fills *ret (borrowed until the next call or the
 * free), 0 at the end, -ENOMEM or -EIO (the iterator is then at its end). */
int store_event_iter_next(struct store_event_iter *it, struct store_event *ret);

/* Frees the iterator; NULL-safe. */
void store_event_iter_free(struct store_event_iter *it);

/* Calls cb with each stored step record of a job, every rank, ordered by rank and then as they
 * were stored, until cb returns non-zero. *rec is a RECORD_STEP as ingest decoded it (step,
 * ts_ns = begin, dur_ns = end - begin, samples, phases; seq, raw empty); its pointers are valid
 * only during the call. Same transaction rule as store_query_events(). Returns the number given
 * (the one cb stopped at included), or -ENOMEM, -EIO (an unknown job gives 0). */
int64_t store_query_steps(struct store *st, int64_t job_id,
                          int (*cb)(void *ud, int64_t rank, const struct record *rec), void *ud);

/* Calls cb with each stored queue sample of a job, every rank, ordered by rank and then as they
 * were stored, until cb returns non-zero. *rec is a RECORD_QUEUE as ingest decoded it (name,
 * ts_ns, step, size, capacity; seq, raw empty); its pointers are valid only during the call.
 * Same transaction rule as store_query_events(). Returns the number given (the one cb stopped
 * at included), or -ENOMEM, -EIO (an unknown job gives 0). */
int64_t store_query_queue_samples(struct store *st, int64_t job_id,
                                  int (*cb)(void *ud, int64_t rank, const struct record *rec),
                                  void *ud);

/* Calls cb with each stored host sample of a job, every rank, ordered by rank and then as they
 * were stored: a RECORD_HOST (ts_ns, cpu_percent, sys_cpu_percent, rss_bytes). Same rules and
 * returns as store_query_queue_samples(). */
int64_t store_query_host_samples(struct store *st, int64_t job_id,
                                 int (*cb)(void *ud, int64_t rank, const struct record *rec),
                                 void *ud);

/* Calls cb with each stored pipeline record of a job, every rank, ordered by rank and then as
 * they were stored, until cb returns non-zero. *rec is a RECORD_PIPELINE whose raw/raw_len is
 * the record verbatim; valid only during the call. Same transaction rule and returns as
 * store_query_queue_samples(). */
int64_t store_query_pipelines(struct store *st, int64_t job_id,
                              int (*cb)(void *ud, int64_t rank, const struct record *rec),
                              void *ud);

/* Calls cb with the hello line of each session of a job (as the client sent it, without its
 * '\n'), every rank, in the order the sessions opened, until cb returns non-zero. line is valid
 * only during the call. For replaying what a hello configured (its "env" points) at start-up.
 * Same transaction rule and returns as store_query_queue_samples(). */
int64_t store_query_hellos(struct store *st, int64_t job_id,
                           int (*cb)(void *ud, int64_t rank, const char *line, size_t len),
                           void *ud);

/* Calls on_capture for every stored capture (store.h, store_capture_put()) by id, then on_rank for every rank row by capture
 * and rank, until a callback returns non-zero. For loading the captures at start-up. Returns 0
 * or a negative errno. */
int store_query_captures(struct store *st, int (*on_capture)(void *ud, const struct record_capture *c),
                         int (*on_rank)(void *ud, const struct record_capture_rank *r),
                         void *ud);

#endif
