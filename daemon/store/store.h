/* SPDX-License-Identifier: MIT */
/*
 * store: everything on disk. One SQLite database (WAL) in the data dir; this module holds all the
 * SQL. This header is the writer's side, used by main.c only; readers use store_query.h.
 *
 * Write path: store_append() (loop thread) copies records into the open batch in memory, and
 * store_flush() seals it and hands it to the store's writer thread, which compresses timeline
 * events into blocks (zstd, indexed by job, rank and time), writes steps, queue and host samples,
 * updates each stream's next sequence number, and commits it all in one transaction. Only after
 * the commit is a stream's sequence reported durable (store_collect_durable()), so an ack always
 * means "survives kill -9". Retention evicts a job's oldest blocks past its byte cap.
 *
 * Threading: functions here are for the loop thread unless said otherwise; the writer thread is
 * internal. The on_durable callback runs on the writer thread.
 */
#ifndef STEPSCOPE_STORE_H
#define STEPSCOPE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/config.h"
#include "../core/record.h"
#include "../core/stats.h"

#define STORE_ERR_MAX 256
#define STORE_DB_NAME "stepscope.db"

struct store;

struct store_config {
    const char *data_dir;              /* created (0700) if missing */
    uint64_t retention_bytes_per_job;  /* compressed timeline bytes kept per job */
    uint64_t max_buffered_bytes;       /* store_append() answers -EAGAIN above it */
    uint64_t min_free_bytes;           /* store_query_space(): less free on the data dir's file
                                        * system is low; 0: never low */
    enum config_durability durability;
    struct stats *stats;               /* borrowed; bumped here */
    void (*on_durable)(void *ud);      /* writer thread, after each commit: only wake the loop */
    void *ud;
};

/* Creates the data dir if needed, locks it (-EBUSY: another daemon holds it), opens or creates
 * the database, migrates it by PRAGMA user_version (-EPROTO: written by a newer stepscope),
 * checks it (-EIO: not a database or corrupt; -EROFS/-EACCES: cannot write), loads the job and
 * stream tables, and starts the writer thread. err (STORE_ERR_MAX) gets a one-line reason. */
int store_open(const struct store_config *cfg, struct store **ret_st, char *err);

/* Registers a connection's hello: finds or creates the job (by name) and the stream (by job, rank
 * and hello->stream; a new stream when that is ""), opens a session, and fills *ret_welcome with
 * the stream's next sequence number: the first one not yet accepted. Returns 0; -EBUSY if the
 * stream is held by another open session; -EINVAL with err set for a hello it cannot take. */
int store_session_open(struct store *st, const struct record_hello *hello,
                       struct record_welcome *ret_welcome, char *err);

/* Ends a session (queued with the next batch). */
void store_session_close(struct store *st, int64_t session_id, bool clean);

/* Copies n records (n may be 0) of an open session into the open batch and sets its stream's
 * accepted seq to next_seq, which is past every record given and also past the lines ingest
 * rejected (those take no space, but their numbers become durable, and acked, with the batch).
 * Seqs must increase. Returns 0; -EAGAIN when taken but buffered bytes are above
 * max_buffered_bytes; -ENOENT for an unknown session; -ENOMEM (nothing taken). */
int store_append(struct store *st, int64_t session_id, const struct record *recs, size_t n,
                 uint64_t next_seq);

/* Captures (docs/API.md): queue a capture's definition, or one rank's state, for the next
 * commit; a later put of the same id (and rank) replaces the row (strings copied). Returns 0 or -ENOMEM (nothing queued). Loop thread. */
int store_capture_put(struct store *st, const struct record_capture *c);
int store_capture_rank_put(struct store *st, const struct record_capture_rank *r);
/* Queues, for the next commit, the deletion of a capture and its ranks' states (the registry
 * forgot it: capture_reg_add()), after the batch's puts. Returns 0 or -ENOMEM. Loop thread. */
int store_capture_forget(struct store *st, int64_t capture_id);

/* Queues, for the next commit, the number of steps live analysis lists for a rank of a job
 * (live_query_step_count(); Kineto's ProfilerStep#N spans count, which the step records do not),
 * so that the jobs list says it for a job not in live memory (store_query.h: steps). A job
 * deleted meanwhile, or a rank never stored, is skipped; an unchanged count writes nothing.
 * Returns 0 or -ENOMEM (nothing queued). Loop thread. */
int store_rank_live_steps(struct store *st, int64_t job_id, int64_t rank, int64_t steps);

/* Deletes job name and everything stored for it: takes it out of the in-memory tables now (a
 * later hello of that name makes a new job) and queues the deletion of its rows, blocks,
 * sessions, streams and captures, which the writer runs in the transaction of the batch it seals
 * (after that batch's own rows). Sets *ret_job_id and *ret_ticket (for store_wait_committed()).
 * Returns 0; -ENOENT (no such job); -EBUSY (a session of the job is open); -ENOMEM. Loop thread. */
int store_job_delete(struct store *st, const char *name, int64_t *ret_job_id,
                     uint64_t *ret_ticket);

/* Deletes ranks[0..n) of job name and what is stored for them (blocks, steps, queue and host
 * samples, pipeline records, sessions, streams, capture states; their counts taken off the
 * job's), as store_job_delete() does for a whole job but leaving the job and its other ranks
 * (the cluster view: a job deleted on the node its pulled ranks came from, daemon/cluster/pull.c).
 * Nothing is queued for ClickHouse. Sets *ret_job_id and *ret_ticket. Returns 0; -ENOENT (no such
 * job); -EBUSY (a session of the job is open: live analysis, which must reload the job without
 * those ranks, drops only a job without one); -ENOMEM. Loop thread. */
int store_job_delete_ranks(struct store *st, const char *name, const int64_t *ranks, size_t n,
                           int64_t *ret_job_id, uint64_t *ret_ticket);

/* Blocks until the batches sealed up to ticket are committed (or given up at close), at most
 * timeout_ns. Returns 0 or -ETIMEDOUT. Any thread. */
int store_wait_committed(struct store *st, uint64_t ticket, int64_t timeout_ns);

/* store_flush(), then the ticket of every batch sealed so far, for store_wait_committed() and
 * store_committed(). Loop thread. */
uint64_t store_flush_ticket(struct store *st);

/* Whether the batches sealed up to ticket are committed (or given up at close). Any thread;
 * takes the writer's mutex briefly. */
bool store_committed(struct store *st, uint64_t ticket);

/* Seals the open batch (if not empty) and queues it for the writer. Never blocks. */
void store_flush(struct store *st);

/* store_flush(), then blocks until the writer has committed every batch sealed so far (or given
 * it up at close), at most timeout_ns. Returns 0 or -ETIMEDOUT (commits keep failing, or the disk
 * is slow). Loop thread; for tests, benchmarks and orderly shutdown, never on a hot path. */
int store_flush_wait(struct store *st, int64_t timeout_ns);

/* Calls cb for each stream whose durable next seq advanced since the last call. Loop thread. */
void store_collect_durable(struct store *st,
                           void (*cb)(void *ud, int64_t stream_id, uint64_t next_seq), void *ud);

/* Bytes accepted but not yet committed. Any thread. */
uint64_t store_buffered_bytes(const struct store *st);

/* Flushes, waits until the writer has committed everything (or failed), stops the writer thread,
 * closes the database and releases the lock. NULL-safe. Blocks: shutdown only. */
void store_close(struct store *st);

#endif
