/* SPDX-License-Identifier: MIT */
/*
 * store_pull: the store's side of the cluster view (daemon/cluster/pull.c), for the puller's
 * thread only. The puller feeds what other nodes shipped to ClickHouse into this daemon as
 * ordinary sessions (over the ingest socket, so the rows land in the store and live like any
 * trainer's); this header keeps where it has got to, in the same database, through a connection
 * of its own (no SQL or sqlite3 type crosses it).
 *
 * Exactly once: per origin node, the last span (block, idx), step, queue-sample, host-sample and
 * pipeline row fed,
 * and per pulled stream (origin, job, rank) the sequence number its next line takes, saved
 * together in one transaction after the daemon acknowledged the lines. A crash between the
 * acknowledgement and the save re-reads the rows past the saved cursor: they come back in the
 * same order (ordered by their origin identity) and are numbered from the saved sequence number,
 * so the ingest's durable next_seq drops every line it already holds.
 *
 * Deletes: a job its origin deleted is carried out here once (del: the last of the origin's
 * deletes done, saved with the cursor that the delete brought down).
 *
 * Threading: one struct store_pull is used by one thread at a time, beside every other store
 * call; each save is one short write (busy timeout STORE_BUSY_TIMEOUT_MS).
 */
#ifndef STEPSCOPE_STORE_PULL_H
#define STEPSCOPE_STORE_PULL_H

#include <stddef.h>
#include <stdint.h>

struct store;
struct store_pull;

/* Where the puller has got to in one origin node's rows; 0: nothing yet. */
struct store_pull_cursor {
    int64_t block, idx; /* the last span fed: (block rowid, line index) at its node */
    int64_t step, queue; /* the last step and queue-sample rowid fed */
    int64_t host, pipe;  /* the last host-sample and pipeline rowid fed */
    int64_t del;         /* the last of its deleted jobs (its ship_deletes id) carried out here */
};

/* A pulled stream's next sequence number. */
struct store_pull_seq {
    const char *job;
    int64_t rank;
    uint64_t seq;
};

/* Opens the puller's connection. Returns 0, -ENOMEM or -EIO with err (STORE_ERR_MAX) set. */
int store_pull_open(struct store *st, struct store_pull **ret, char *err);

/* origin's cursor into *ret (zeros for a new origin). Returns 0 or -EIO. */
int store_pull_cursor(struct store_pull *p, const char *origin, struct store_pull_cursor *ret);

/* The saved next sequence number of the stream (origin, job, rank) into *ret (0: none saved).
 * Returns 0 or -EIO. */
int store_pull_stream_seq(struct store_pull *p, const char *origin, const char *job, int64_t rank,
                          uint64_t *ret);

/* Saves origin's cursor and the streams' next sequence numbers in one transaction. Returns 0,
 * -EBUSY, -ENOSPC or -EIO (nothing saved). */
int store_pull_save(struct store_pull *p, const char *origin, const struct store_pull_cursor *c,
                    const struct store_pull_seq *seqs, size_t n);

/* Who holds rank of job here: 0 with origin "" (this node's own sessions), 0 with the origin
 * node's name (size bytes), or -ENOENT (no session of it); -EIO. */
int store_pull_rank_origin(struct store_pull *p, const char *job, int64_t rank, char *origin,
                           size_t size);

/* Records that node also shipped rank of job, which this daemon takes from kept (once per
 * (job, rank, node); the job's answer lists them: store_query_conflicts()). Returns 0 or -EIO. */
int store_pull_conflict(struct store_pull *p, const char *job, int64_t rank, const char *node,
                        const char *kept);

/* The ranks of job here whose sessions came from origin ("": this node's own), ordered, into
 * *ret_ranks (caller frees; NULL when none) and *ret_n, and how many of its ranks came from
 * elsewhere into *ret_others. Returns 0, -ENOMEM or -EIO. */
int store_pull_job_ranks(struct store_pull *p, const char *job, const char *origin,
                         int64_t **ret_ranks, size_t *ret_n, size_t *ret_others);

/* Closes the connection; NULL-safe. */
void store_pull_close(struct store_pull *p);

#endif
