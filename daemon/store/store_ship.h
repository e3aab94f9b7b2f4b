/* SPDX-License-Identifier: MIT */
/*
 * store_ship: the store's side of cluster shipping (daemon/cluster/cluster.h), for the shipper's
 * thread only. The shipper reads what the store committed, in rowid order, past a cursor it keeps
 * in the same database (table ship_cursors, one row per target); no SQL or sqlite3 type crosses
 * this header, and the shipper never sees a connection the writer or the HTTP readers use.
 *
 * Row identity: a span is (block rowid, index of its line in the block), a step, queue sample,
 * host sample or pipeline record is its rowid. The same committed row always reads back with the same identity, so a batch read
 * again after a crash (the cursor is saved only after ClickHouse took the batch) carries the keys
 * it had the first time, and ClickHouse collapses the copies (docs/ARCHITECTURE.md).
 *
 * Threading: one struct store_ship is used by one thread at a time, beside every other store
 * call. It holds its own read-write connection; a read holds a read transaction only while it
 * copies rows out, and saving the cursor is one short write (busy timeout STORE_BUSY_TIMEOUT_MS),
 * so the writer thread waits at most that long and ingest never does.
 */
#ifndef STEPSCOPE_STORE_SHIP_H
#define STEPSCOPE_STORE_SHIP_H

#include <stddef.h>
#include <stdint.h>

#include "store_query.h"

struct store;
struct store_ship;

/* The last rowid shipped of each source table (sessions included; 0: nothing yet), and the last
 * deleted job (ship_deletes' id) the shipper carried out in ClickHouse. */
struct store_ship_cursor {
    int64_t block, step, queue, del, session, host, pipe;
};

/* One stored session (table sessions): its hello's fields and the hello verbatim. The strings
 * are valid during the call. */
struct store_ship_session {
    int64_t id, rank, world_size, pid, started_ns;
    const char *host, *framework, *framework_version, *run, *clock, *hello;
    size_t hello_len;
};

/* One stored step (table steps). */
struct store_ship_step {
    int64_t id, rank, step, begin_ns, end_ns, samples;
    const char *phases; /* raw JSON object text or NULL; valid during the call */
    size_t phases_len;
};

/* One stored queue sample (table queue_samples). */
struct store_ship_queue {
    int64_t id, rank, ts_ns, step, size, capacity;
    const char *name; /* valid during the call */
    size_t name_len;
};

/* One stored host sample (table host_samples). */
struct store_ship_host {
    int64_t id, rank, ts_ns, rss_bytes;
    double cpu_percent, sys_cpu_percent;
};

/* One stored pipeline record (table pipelines): the record verbatim. */
struct store_ship_pipe {
    int64_t id, rank, ts_ns;
    const char *json; /* valid during the call */
    size_t json_len;
};

/* One stored block as the store keeps it (table blocks), for shipping it whole: data[0, len) is
 * its lines joined by '\n' (codec STORE_SHIP_CODEC_NONE) or one zstd frame of them whose content
 * size is raw_bytes (STORE_SHIP_CODEC_ZSTD); lines is how many lines it holds (the idx of its
 * spans run from 0 to lines - 1). Valid during the call. */
enum { STORE_SHIP_CODEC_NONE = 0, STORE_SHIP_CODEC_ZSTD = 1 };
struct store_ship_block {
    int64_t id, t_min_ns, raw_bytes;
    uint32_t lines;
    int codec;
    const void *data;
    size_t len;
};

/* Where store_ship_read() hands rows; job is the job's name, valid during the call. A callback
 * returning non-zero stops the read (its error is returned). span gets every trace event with ph
 * "X" or "B" (what the store counts as spans) and its line index in the block. Rows of a rank
 * this node pulled from another (a session of it whose hello has "origin": daemon/cluster/pull.c)
 * are never given: they were shipped by their own node. */
struct store_ship_sink {
    int (*session)(void *ud, const char *job, const struct store_ship_session *s);
    int (*span)(void *ud, const char *job, int64_t rank, int64_t block_id, uint32_t idx,
                const struct store_event *ev);
    int (*step)(void *ud, const char *job, const struct store_ship_step *s);
    int (*queue)(void *ud, const char *job, const struct store_ship_queue *q);
    void *ud;
    /* Optional (NULL: not called): every line of each block given, whatever its ph (M, C, i, E,
     * s/t/f ... and the spans, before span gets them), with its index in the block; ev->line is
     * the stored line verbatim. Not counted in the rows read. */
    int (*event)(void *ud, const char *job, int64_t rank, int64_t block_id, uint32_t idx,
                 const struct store_event *ev);
    int (*host)(void *ud, const char *job, const struct store_ship_host *h);
    int (*pipe)(void *ud, const char *job, const struct store_ship_pipe *p);
    /* Optional (NULL: not called): each block given, whole, after its lines and spans. */
    int (*block)(void *ud, const char *job, int64_t rank, const struct store_ship_block *b);
};

/* Opens the shipper's connection and reads target's cursor into *ret_cursor; a new target's
 * is made (zeros, and del at the last job deleted so far: its rows were never shipped there).
 * Returns 0, -ENOMEM or -EIO with err (STORE_ERR_MAX) set.
 *
 * Deleted jobs: store_job_delete() queues the job's name for the shipper, in the transaction
 * that deletes its rows, and brings the saved cursor down to the tables' last rowids (SQLite
 * gives those again once the newest rows are gone). Until the shipper carried out every delete
 * past its cursor's del (store_ship_next_delete(), store_ship_delete_done()), store_ship_read()
 * and store_ship_save() answer -EAGAIN: it must drop what it read, store_ship_reload() its
 * cursor, delete the jobs in ClickHouse, and read again. So no row of a deleted job reaches
 * ClickHouse after its delete, and no row of a later job with the same name before it. */
int store_ship_open(struct store *st, const char *target, struct store_ship **ret_sh,
                    struct store_ship_cursor *ret_cursor, char *err);

/* Reads target's cursor again (as saved, or as a job delete brought it down). Returns 0 or
 * -EIO. */
int store_ship_reload(struct store_ship *sh, struct store_ship_cursor *ret_cursor);

/* Hands the rows past *from to sink in one read transaction: the sessions first (every one
 * committed: a block's session was committed before it), then whole blocks in rowid order until
 * at least max_rows spans were given (at least one block when any is there), then up to
 * max_rows steps, max_rows queue samples, max_rows host samples and max_rows pipeline records. *ret_to is where the next read starts (from when
 * nothing was read). A damaged block is skipped, noted as the readers note it. Returns the rows
 * given, or a negative errno (-ENOMEM, -EIO, -EAGAIN: a job deleted past from->del, nothing read;
 * or a callback's). */
int64_t store_ship_read(struct store_ship *sh, const struct store_ship_cursor *from,
                        int64_t max_rows, const struct store_ship_sink *sink,
                        struct store_ship_cursor *ret_to);

/* Rows committed past c: spans are counted by the blocks' event counts (every phase), so this is
 * an upper bound for them. Returns 0 or -EIO. */
int store_ship_pending(struct store_ship *sh, const struct store_ship_cursor *c, int64_t *ret_rows);

/* Saves c as the target's cursor (one short transaction), unless a job was deleted past the
 * saved del: -EAGAIN, nothing saved. Returns 0, -EAGAIN, -EBUSY, -ENOSPC, -EIO. */
int store_ship_save(struct store_ship *sh, const struct store_ship_cursor *c);

/* The first deleted job past after (a ship_deletes id): its id into *ret_id and its name into
 * name (size bytes). Returns 1, 0 (none), or -EIO. */
int store_ship_next_delete(struct store_ship *sh, int64_t after, int64_t *ret_id, char *name,
                           size_t size);

/* Records that the delete id was carried out (the target's del), and forgets the deletes every
 * target has carried out. Returns 0, -EBUSY, -ENOSPC, -EIO. */
int store_ship_delete_done(struct store_ship *sh, int64_t id);

/* Deleted jobs past after not yet carried out. Returns 0 or -EIO. */
int store_ship_deletes_pending(struct store_ship *sh, int64_t after, int64_t *ret_n);

/* The name of job job_id into name (size bytes). Returns 0, -ENOENT (no such job: deleted),
 * -EIO. */
int store_ship_job_name(struct store_ship *sh, int64_t job_id, char *name, size_t size);

/* Whether rank of job job_id was pulled from another node (is not this node's to ship). Returns
 * 1, 0, or -EIO. */
int store_ship_pulled(struct store_ship *sh, int64_t job_id, int64_t rank);

/* Closes the connection; NULL-safe. */
void store_ship_close(struct store_ship *sh);

#endif
