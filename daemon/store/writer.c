/* SPDX-License-Identifier: MIT */
/*
 * writer: the store's writer thread, sole owner of the read-write SQLite connection. It takes the
 * sealed batches from the queue oldest first and writes every batch queued at that moment in one
 * transaction, compressing each timeline block just before its insert (outside st->mu, so the
 * loop never waits for it): new jobs, streams and sessions, blocks, step/queue/host/pipeline rows,
 * the rank and job counters, session ends, captures, live step counts, each stream's next seq,
 * deleted jobs, then retention (the steps of commit_group(), below). Grouping the queued batches
 * amortises the commit (and its fsync with durability=full) when the writer falls behind, which is
 * exactly when it matters.
 *
 * Only after COMMIT does it publish the streams' durable seqs (store_collect_durable()) and wake
 * the loop. A failed transaction (disk full, I/O error) is rolled back and retried with backoff,
 * never dropped: its seqs stay unacknowledged, buffered bytes keep growing and store_append()'s
 * -EAGAIN stops ingest. Only store_close() gives up, after STORE_CLOSE_GIVE_UP_NS, and says what
 * it lost.
 *
 * zstd level (measured on 1 MiB blocks of 240-byte Kineto-like lines, 2-core VM): level 1 gives
 * 8.6x at 630-720 MB/s on one core; -1 is 7.1x at ~750 MB/s, -5 4.9x, -20 4.1x at ~840 MB/s; 3 is
 * 8.4x at ~520 MB/s. Level 1 it is: negative levels buy little speed for much more disk.
 * Compression is ~75% of this thread's time; tests/bench/store_bench.c measures the whole path.
 */
#include "store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zstd.h>

#include "../../lib/clock.h"
#include "../../lib/log.h"

#define GROUP_MAX 64 /* batches written in one transaction */
#define BACKOFF_MIN_NS (100 * 1000000LL)
#define BACKOFF_MAX_NS (2000 * 1000000LL)
#define EVICT_CHUNK 64

static const char *const stmt_sql[STMT_COUNT] = {
    [STMT_BEGIN] = "BEGIN IMMEDIATE",
    [STMT_COMMIT] = "COMMIT",
    [STMT_ROLLBACK] = "ROLLBACK",
    [STMT_INS_JOB] = "INSERT INTO jobs(id, name, first_seen_ns, last_seen_ns, world_size) "
                     "VALUES(?1, ?2, ?3, ?3, 1)",
    [STMT_INS_STREAM] = "INSERT INTO streams(id, job_id, rank, key) VALUES(?1, ?2, ?3, ?4)",
    [STMT_INS_SESSION] = "INSERT INTO sessions(id, job_id, rank, stream_id, hello, host, pid, "
                         "framework, framework_version, run, clock, world_size, started_ns) "
                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [STMT_INS_RANK] = "INSERT INTO ranks(job_id, rank) VALUES(?1, ?2) ON CONFLICT DO NOTHING",
    [STMT_UPD_JOB_HELLO] = "UPDATE jobs SET world_size = max(world_size, ?2), "
                           "last_seen_ns = max(last_seen_ns, ?3) WHERE id = ?1",
    [STMT_END_SESSION] = "UPDATE sessions SET ended_ns = ?2, clean = ?3 WHERE id = ?1",
    [STMT_UPD_JOB_SEEN] = "UPDATE jobs SET last_seen_ns = max(last_seen_ns, ?2) WHERE id = ?1",
    [STMT_INS_BLOCK] = "INSERT INTO blocks(job_id, rank, t_min_ns, t_max_ns, n_events, raw_bytes, "
                       "codec, data) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [STMT_UPD_JOB_BLOCK] = "UPDATE jobs SET blocks = blocks + 1, stored_bytes = stored_bytes + ?2, "
                           "stored_raw_bytes = stored_raw_bytes + ?3 WHERE id = ?1",
    [STMT_INS_STEP] = "INSERT INTO steps(job_id, rank, step, begin_ns, end_ns, samples, phases, seq) "
                      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [STMT_INS_QUEUE] = "INSERT INTO queue_samples(job_id, rank, name, ts_ns, step, size, capacity) "
                       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [STMT_INS_HOST] = "INSERT INTO host_samples(job_id, rank, ts_ns, cpu_percent, sys_cpu_percent, "
                      "rss_bytes) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [STMT_INS_PIPE] = "INSERT INTO pipelines(job_id, rank, ts_ns, seq, json) "
                      "VALUES(?1, ?2, ?3, ?4, ?5)",
    [STMT_UPD_STREAM] = "UPDATE streams SET next_seq = ?2 WHERE id = ?1",
    [STMT_UPD_RANK] = "UPDATE ranks SET events = events + ?3, spans = spans + ?4, "
                      "steps = steps + ?5 WHERE job_id = ?1 AND rank = ?2",
    [STMT_UPD_JOB_COUNTS] = "UPDATE jobs SET events = events + ?2, spans = spans + ?3, "
                            "queue_samples = queue_samples + ?4, host_samples = host_samples + ?5, "
                            "pipelines = pipelines + ?6, last_seen_ns = max(last_seen_ns, ?7) "
                            "WHERE id = ?1",
    [STMT_UPD_JOB_STEPS] = "UPDATE jobs SET steps_n = "
                           "(SELECT coalesce(max(steps), 0) FROM ranks WHERE job_id = ?1) "
                           "WHERE id = ?1",
    [STMT_SEL_JOB_STORED] = "SELECT stored_bytes FROM jobs WHERE id = ?1",
    [STMT_SEL_OLDEST] = "SELECT id, length(data), raw_bytes, n_events FROM blocks "
                        "WHERE job_id = ?1 ORDER BY id LIMIT 64",
    [STMT_DEL_BLOCK] = "DELETE FROM blocks WHERE id = ?1",
    [STMT_UPD_JOB_EVICT] = "UPDATE jobs SET blocks = blocks - ?2, stored_bytes = stored_bytes - ?3, "
                           "stored_raw_bytes = stored_raw_bytes - ?4, "
                           "evicted_blocks = evicted_blocks + ?2, "
                           "evicted_events = evicted_events + ?5, "
                           "evicted_bytes = evicted_bytes + ?3 WHERE id = ?1",
    [STMT_PUT_CAPTURE] = "INSERT OR REPLACE INTO captures(id, job_id, created_ns, start_step, "
                         "steps, all_ranks, what, series, series_window, series_every, series_repeat) "
                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [STMT_PUT_CAPTURE_RANK] = "INSERT OR REPLACE INTO capture_ranks(capture_id, rank, state, "
                              "reason, updated_ns, first_step) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [STMT_DEL_CAPTURE_RANKS] = "DELETE FROM capture_ranks WHERE capture_id = ?1",
    [STMT_DEL_CAPTURE] = "DELETE FROM captures WHERE id = ?1",
    [STMT_UPD_RANK_LIVE_STEPS] = "UPDATE ranks SET live_steps = ?3 "
                                 "WHERE job_id = ?1 AND rank = ?2 AND live_steps IS NOT ?3",
    [STMT_DEL_JOB_CAPTURE_RANKS] = "DELETE FROM capture_ranks WHERE capture_id IN "
                                   "(SELECT id FROM captures WHERE job_id = ?1)",
    [STMT_DEL_JOB_CAPTURES] = "DELETE FROM captures WHERE job_id = ?1",
    [STMT_DEL_JOB_BLOCKS] = "DELETE FROM blocks WHERE job_id = ?1",
    [STMT_DEL_JOB_STEPS] = "DELETE FROM steps WHERE job_id = ?1",
    [STMT_DEL_JOB_QUEUES] = "DELETE FROM queue_samples WHERE job_id = ?1",
    [STMT_DEL_JOB_HOSTS] = "DELETE FROM host_samples WHERE job_id = ?1",
    [STMT_DEL_JOB_PIPES] = "DELETE FROM pipelines WHERE job_id = ?1",
    [STMT_DEL_JOB_SESSIONS] = "DELETE FROM sessions WHERE job_id = ?1",
    [STMT_DEL_JOB_STREAMS] = "DELETE FROM streams WHERE job_id = ?1",
    [STMT_DEL_JOB_RANKS] = "DELETE FROM ranks WHERE job_id = ?1",
    [STMT_DEL_JOB_LAST] = "DELETE FROM jobs WHERE id = ?1",
    /* Only a job with a session of this node's own: one whose every rank was pulled from other
     * nodes (daemon/cluster/pull.c) has no row of this node in ClickHouse to delete. */
    [STMT_INS_SHIP_DELETE] = "INSERT INTO ship_deletes(job, deleted_ns) SELECT name, ?2 FROM jobs "
                             "WHERE id = ?1 AND EXISTS (SELECT 1 FROM ship_cursors) AND EXISTS "
                             "(SELECT 1 FROM sessions s WHERE s.job_id = ?1 AND "
                             STORE_SQL_ORIGIN("s.hello") " IS NULL)",
    [STMT_DEL_RANK_COUNTS] =
        "UPDATE jobs SET "
        "events = events - coalesce((SELECT events FROM ranks WHERE job_id = ?1 AND rank = ?2), 0), "
        "spans = spans - coalesce((SELECT spans FROM ranks WHERE job_id = ?1 AND rank = ?2), 0), "
        "queue_samples = queue_samples - "
        "(SELECT count(*) FROM queue_samples WHERE job_id = ?1 AND rank = ?2), "
        "host_samples = host_samples - "
        "(SELECT count(*) FROM host_samples WHERE job_id = ?1 AND rank = ?2), "
        "pipelines = pipelines - (SELECT count(*) FROM pipelines WHERE job_id = ?1 AND rank = ?2), "
        "blocks = blocks - (SELECT count(*) FROM blocks WHERE job_id = ?1 AND rank = ?2), "
        "stored_bytes = stored_bytes - "
        "(SELECT coalesce(sum(length(data)), 0) FROM blocks WHERE job_id = ?1 AND rank = ?2), "
        "stored_raw_bytes = stored_raw_bytes - "
        "(SELECT coalesce(sum(raw_bytes), 0) FROM blocks WHERE job_id = ?1 AND rank = ?2) "
        "WHERE id = ?1",
    [STMT_DEL_RANK_CAPTURE_RANKS] = "DELETE FROM capture_ranks WHERE rank = ?2 AND capture_id IN "
                                    "(SELECT id FROM captures WHERE job_id = ?1)",
    [STMT_DEL_RANK_BLOCKS] = "DELETE FROM blocks WHERE job_id = ?1 AND rank = ?2",
    [STMT_DEL_RANK_STEPS] = "DELETE FROM steps WHERE job_id = ?1 AND rank = ?2",
    [STMT_DEL_RANK_QUEUES] = "DELETE FROM queue_samples WHERE job_id = ?1 AND rank = ?2",
    [STMT_DEL_RANK_HOSTS] = "DELETE FROM host_samples WHERE job_id = ?1 AND rank = ?2",
    [STMT_DEL_RANK_PIPES] = "DELETE FROM pipelines WHERE job_id = ?1 AND rank = ?2",
    [STMT_DEL_RANK_SESSIONS] = "DELETE FROM sessions WHERE job_id = ?1 AND rank = ?2",
    [STMT_DEL_RANK_STREAMS] = "DELETE FROM streams WHERE job_id = ?1 AND rank = ?2",
    [STMT_DEL_RANK_LAST] = "DELETE FROM ranks WHERE job_id = ?1 AND rank = ?2",
    [STMT_LOWER_SHIP_CURSORS] =
        "UPDATE ship_cursors SET block = min(block, (SELECT coalesce(max(id), 0) FROM blocks)), "
        "step = min(step, (SELECT coalesce(max(rowid), 0) FROM steps)), "
        "queue = min(queue, (SELECT coalesce(max(rowid), 0) FROM queue_samples)), "
        "host = min(host, (SELECT coalesce(max(rowid), 0) FROM host_samples)), "
        "pipe = min(pipe, (SELECT coalesce(max(rowid), 0) FROM pipelines)), "
        "session = min(session, (SELECT coalesce(max(id), 0) FROM sessions))",
};

int store__writer_prepare(struct store *st, char *err)
{
    for (int i = 0; i < STMT_COUNT; i++) {
        int rc = sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                    &st->stmt[i], NULL);
        if (rc != SQLITE_OK) {
            store__errf(err, "%s: preparing statement %d failed: %s", st->db_path, i,
                     sqlite3_errmsg(st->db));
            return store__errno(rc) == -ENOMEM ? -ENOMEM : -EIO;
        }
    }
    st->zctx = ZSTD_createCCtx();
    if (!st->zctx) {
        store__errf(err, "out of memory creating the zstd context");
        return -ENOMEM;
    }
    /* Each frame ends with a checksum of its lines: a block damaged on disk then fails to decode
     * (and is skipped, named) instead of giving back altered lines (store__decode_block). */
    if (ZSTD_isError(ZSTD_CCtx_setParameter(st->zctx, ZSTD_c_compressionLevel, STORE_ZSTD_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(st->zctx, ZSTD_c_checksumFlag, 1))) {
        store__errf(err, "cannot set the zstd compression parameters");
        return -EINVAL;
    }
    return 0;
}

void store__batch_free(struct store_batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n_blocks; i++)
        free(b->blocks[i].raw);
    free(b->jobs);
    free(b->streams);
    free(b->sessions);
    free(b->slots);
    free(b->blocks);
    free(b->steps);
    free(b->queues);
    free(b->hosts);
    free(b->pipes);
    free(b->ends);
    free(b->seqs);
    free(b->caps);
    free(b->cap_ranks);
    free(b->cap_forgets);
    free(b->live_steps);
    free(b->rank_dels);
    free(b->dels);
    free(b->arena);
    free(b);
}

/* ---- SQL helpers ---- */

static int step_done(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static void bind_text(sqlite3_stmt *s, int i, const char *arena, size_t off, size_t len)
{
    /* The arena outlives the step, so SQLite may read it in place. */
    sqlite3_bind_text(s, i, len ? arena + off : "", (int)len, SQLITE_STATIC);
}

static int write_sessions(struct store *st, const struct store_batch *b)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_jobs; i++) {
        const struct store_new_job *j = &b->jobs[i];
        sqlite3_stmt *s = st->stmt[STMT_INS_JOB];
        sqlite3_bind_int64(s, 1, j->id);
        bind_text(s, 2, b->arena, j->name_off, j->name_len);
        sqlite3_bind_int64(s, 3, j->seen_ns);
        rc = step_done(s);
    }
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_streams; i++) {
        const struct store_new_stream *t = &b->streams[i];
        sqlite3_stmt *s = st->stmt[STMT_INS_STREAM];
        sqlite3_bind_int64(s, 1, t->id);
        sqlite3_bind_int64(s, 2, t->job_id);
        sqlite3_bind_int64(s, 3, t->rank);
        bind_text(s, 4, b->arena, t->key_off, t->key_len);
        rc = step_done(s);
    }
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_sessions; i++) {
        const struct store_new_session *n = &b->sessions[i];
        sqlite3_stmt *s = st->stmt[STMT_INS_SESSION];
        sqlite3_bind_int64(s, 1, n->id);
        sqlite3_bind_int64(s, 2, n->job_id);
        sqlite3_bind_int64(s, 3, n->rank);
        sqlite3_bind_int64(s, 4, n->stream_id);
        bind_text(s, 5, b->arena, n->hello_off, n->hello_len);
        bind_text(s, 6, b->arena, n->host_off, n->host_len);
        sqlite3_bind_int64(s, 7, n->pid);
        bind_text(s, 8, b->arena, n->fw_off, n->fw_len);
        bind_text(s, 9, b->arena, n->fwv_off, n->fwv_len);
        bind_text(s, 10, b->arena, n->run_off, n->run_len);
        bind_text(s, 11, b->arena, n->clock_off, n->clock_len);
        sqlite3_bind_int64(s, 12, n->world_size);
        sqlite3_bind_int64(s, 13, n->started_ns);
        rc = step_done(s);
        if (rc == SQLITE_OK) {
            s = st->stmt[STMT_INS_RANK];
            sqlite3_bind_int64(s, 1, n->job_id);
            sqlite3_bind_int64(s, 2, n->rank);
            rc = step_done(s);
        }
        if (rc == SQLITE_OK) {
            s = st->stmt[STMT_UPD_JOB_HELLO];
            sqlite3_bind_int64(s, 1, n->job_id);
            sqlite3_bind_int64(s, 2, n->world_size);
            sqlite3_bind_int64(s, 3, n->started_ns);
            rc = step_done(s);
        }
    }
    return rc;
}

/*
 * The steps of write_data(), in the order it runs them. Each runs inside the one transaction that
 * commit_group() opened with BEGIN IMMEDIATE, writes only the rows its comment names, and stops at
 * the first statement that fails, returning SQLite's code: SQLITE_FULL on a full disk,
 * SQLITE_IOERR_* on an I/O error, SQLITE_NOMEM. SQLITE_BUSY belongs to BEGIN IMMEDIATE (another
 * connection, such as ship's cursor save, holding the write lock past STORE_BUSY_TIMEOUT_MS); once
 * BEGIN succeeded the write lock is this connection's, so a step does not expect it, and would
 * return it like any other failure. The statement that failed is reset and nothing is undone
 * here: commit_group() rolls the whole transaction back and the writer retries the group with
 * backoff, so a step never leaves part of a batch durable. They return SQLITE_OK when every row
 * went in.
 */

/* Compresses each timeline block (zstd, or kept as it is when that does not make it smaller) and
 * inserts it into blocks, adding its stored and raw bytes to its job's row in jobs. Returns
 * SQLITE_NOMEM, before any insert of that block, if st->zbuf cannot grow to the bound. */
static int write_blocks(struct store *st, const struct store_batch *b)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_blocks; i++) {
        const struct store_block *k = &b->blocks[i];
        size_t bound = ZSTD_compressBound(k->len);
        if (util_grow(&st->zbuf, &st->zbuf_cap, bound, 1) < 0)
            return SQLITE_NOMEM;
        /* Compressing here rather than before BEGIN keeps no second copy of the batch; a retried
         * transaction compresses again, which is rare and cheap. */
        size_t z = ZSTD_compress2(st->zctx, st->zbuf, bound, k->raw, k->len);
        const void *data = st->zbuf;
        enum store_codec codec = STORE_CODEC_ZSTD;
        if (ZSTD_isError(z) || z >= k->len) {
            data = k->raw; /* incompressible: keep the lines as they are */
            z = k->len;
            codec = STORE_CODEC_NONE;
        }
        sqlite3_stmt *s = st->stmt[STMT_INS_BLOCK];
        sqlite3_bind_int64(s, 1, k->job_id);
        sqlite3_bind_int64(s, 2, k->rank);
        sqlite3_bind_int64(s, 3, k->t_min_ns);
        sqlite3_bind_int64(s, 4, k->t_max_ns);
        sqlite3_bind_int64(s, 5, (int64_t)k->n_events);
        sqlite3_bind_int64(s, 6, (int64_t)k->len);
        sqlite3_bind_int(s, 7, (int)codec);
        sqlite3_bind_blob64(s, 8, data, z, SQLITE_STATIC);
        rc = step_done(s);
        if (rc == SQLITE_OK) {
            s = st->stmt[STMT_UPD_JOB_BLOCK];
            sqlite3_bind_int64(s, 1, k->job_id);
            sqlite3_bind_int64(s, 2, (int64_t)z);
            sqlite3_bind_int64(s, 3, (int64_t)k->len);
            rc = step_done(s);
        }
    }
    return rc;
}

/* Inserts the batch's step rows into steps (phases NULL when the step had none). */
static int write_steps(struct store *st, const struct store_batch *b)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_steps; i++) {
        const struct store_step_row *w = &b->steps[i];
        sqlite3_stmt *s = st->stmt[STMT_INS_STEP];
        sqlite3_bind_int64(s, 1, w->job_id);
        sqlite3_bind_int64(s, 2, w->rank);
        sqlite3_bind_int64(s, 3, w->step);
        sqlite3_bind_int64(s, 4, w->begin_ns);
        sqlite3_bind_int64(s, 5, w->end_ns);
        sqlite3_bind_int64(s, 6, w->samples);
        if (w->phases_len)
            bind_text(s, 7, b->arena, w->phases_off, w->phases_len);
        else
            sqlite3_bind_null(s, 7);
        sqlite3_bind_int64(s, 8, (int64_t)w->seq);
        rc = step_done(s);
    }
    return rc;
}

/* Inserts the batch's queue, host and pipeline samples into queue_samples, host_samples and
 * pipelines, in that order. */
static int write_samples(struct store *st, const struct store_batch *b)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_queues; i++) {
        const struct store_queue_row *w = &b->queues[i];
        sqlite3_stmt *s = st->stmt[STMT_INS_QUEUE];
        sqlite3_bind_int64(s, 1, w->job_id);
        sqlite3_bind_int64(s, 2, w->rank);
        bind_text(s, 3, b->arena, w->name_off, w->name_len);
        sqlite3_bind_int64(s, 4, w->ts_ns);
        sqlite3_bind_int64(s, 5, w->step);
        sqlite3_bind_int64(s, 6, w->size);
        sqlite3_bind_int64(s, 7, w->capacity);
        rc = step_done(s);
    }
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_hosts; i++) {
        const struct store_host_row *w = &b->hosts[i];
        sqlite3_stmt *s = st->stmt[STMT_INS_HOST];
        sqlite3_bind_int64(s, 1, w->job_id);
        sqlite3_bind_int64(s, 2, w->rank);
        sqlite3_bind_int64(s, 3, w->ts_ns);
        sqlite3_bind_double(s, 4, w->cpu_percent);
        sqlite3_bind_double(s, 5, w->sys_cpu_percent);
        sqlite3_bind_int64(s, 6, w->rss_bytes);
        rc = step_done(s);
    }
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_pipes; i++) {
        const struct store_pipe_row *w = &b->pipes[i];
        sqlite3_stmt *s = st->stmt[STMT_INS_PIPE];
        sqlite3_bind_int64(s, 1, w->job_id);
        sqlite3_bind_int64(s, 2, w->rank);
        sqlite3_bind_int64(s, 3, w->ts_ns);
        sqlite3_bind_int64(s, 4, (int64_t)w->seq);
        bind_text(s, 5, b->arena, w->json_off, w->json_len);
        rc = step_done(s);
    }
    return rc;
}

/* Adds each slot's counts to its rank's row in ranks and its job's row in jobs (last_seen_ns at
 * least now), and recounts jobs.steps_n from ranks when the slot brought steps. */
static int write_counters(struct store *st, const struct store_batch *b, int64_t now)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_slots; i++) {
        const struct store_slot *t = &b->slots[i];
        sqlite3_stmt *s = st->stmt[STMT_UPD_RANK];
        sqlite3_bind_int64(s, 1, t->job_id);
        sqlite3_bind_int64(s, 2, t->rank);
        sqlite3_bind_int64(s, 3, (int64_t)t->events);
        sqlite3_bind_int64(s, 4, (int64_t)t->spans);
        sqlite3_bind_int64(s, 5, (int64_t)t->steps);
        rc = step_done(s);
        if (rc == SQLITE_OK) {
            s = st->stmt[STMT_UPD_JOB_COUNTS];
            sqlite3_bind_int64(s, 1, t->job_id);
            sqlite3_bind_int64(s, 2, (int64_t)t->events);
            sqlite3_bind_int64(s, 3, (int64_t)t->spans);
            sqlite3_bind_int64(s, 4, (int64_t)t->queues);
            sqlite3_bind_int64(s, 5, (int64_t)t->hosts);
            sqlite3_bind_int64(s, 6, (int64_t)t->pipelines);
            sqlite3_bind_int64(s, 7, now);
            rc = step_done(s);
        }
        if (rc == SQLITE_OK && t->steps) {
            s = st->stmt[STMT_UPD_JOB_STEPS];
            sqlite3_bind_int64(s, 1, t->job_id);
            rc = step_done(s);
        }
    }
    return rc;
}

/* Sets each ended session's ended_ns and clean flag in sessions, and its job's last_seen_ns to at
 * least the end. */
static int write_ends(struct store *st, const struct store_batch *b)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_ends; i++) {
        const struct store_session_end *e = &b->ends[i];
        sqlite3_stmt *s = st->stmt[STMT_END_SESSION];
        sqlite3_bind_int64(s, 1, e->id);
        sqlite3_bind_int64(s, 2, e->ended_ns);
        sqlite3_bind_int(s, 3, e->clean);
        rc = step_done(s);
        if (rc == SQLITE_OK) {
            s = st->stmt[STMT_UPD_JOB_SEEN];
            sqlite3_bind_int64(s, 1, e->job_id);
            sqlite3_bind_int64(s, 2, e->ended_ns);
            rc = step_done(s);
        }
    }
    return rc;
}

/* Inserts or replaces the batch's captures in captures, then their per-rank states in
 * capture_ranks; then deletes the captures forgotten (after, so a forgotten capture's last put in
 * the same batch goes too). */
static int write_captures(struct store *st, const struct store_batch *b)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_caps; i++) {
        const struct store_capture_row *w = &b->caps[i];
        sqlite3_stmt *s = st->stmt[STMT_PUT_CAPTURE];
        sqlite3_bind_int64(s, 1, w->id);
        sqlite3_bind_int64(s, 2, w->job_id);
        sqlite3_bind_int64(s, 3, w->created_ns);
        sqlite3_bind_int64(s, 4, w->start_step);
        sqlite3_bind_int64(s, 5, w->steps);
        sqlite3_bind_int(s, 6, w->all_ranks);
        bind_text(s, 7, b->arena, w->what_off, w->what_len);
        sqlite3_bind_int64(s, 8, w->series);
        sqlite3_bind_int64(s, 9, w->window);
        sqlite3_bind_int64(s, 10, w->every);
        sqlite3_bind_int64(s, 11, w->repeat);
        rc = step_done(s);
    }
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_cap_ranks; i++) {
        const struct store_capture_rank_row *w = &b->cap_ranks[i];
        sqlite3_stmt *s = st->stmt[STMT_PUT_CAPTURE_RANK];
        sqlite3_bind_int64(s, 1, w->capture_id);
        sqlite3_bind_int64(s, 2, w->rank);
        bind_text(s, 3, b->arena, w->state_off, w->state_len);
        bind_text(s, 4, b->arena, w->reason_off, w->reason_len);
        sqlite3_bind_int64(s, 5, w->updated_ns);
        sqlite3_bind_int64(s, 6, w->first_step);
        rc = step_done(s);
    }
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_cap_forgets; i++) {
        for (int k = STMT_DEL_CAPTURE_RANKS; rc == SQLITE_OK && k <= STMT_DEL_CAPTURE; k++) {
            sqlite3_stmt *s = st->stmt[k];
            sqlite3_bind_int64(s, 1, b->cap_forgets[i]);
            rc = step_done(s);
        }
    }
    return rc;
}

/* Sets ranks.live_steps for each rank the batch names (a row already equal is left alone). */
static int write_live_steps(struct store *st, const struct store_batch *b)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_live_steps; i++) {
        const struct store_live_steps *w = &b->live_steps[i];
        sqlite3_stmt *s = st->stmt[STMT_UPD_RANK_LIVE_STEPS];
        sqlite3_bind_int64(s, 1, w->job_id);
        sqlite3_bind_int64(s, 2, w->rank);
        sqlite3_bind_int64(s, 3, w->steps);
        rc = step_done(s);
    }
    return rc;
}

/* Sets each stream's next_seq in streams to the seq after the batch's last line: written last, in
 * the same transaction as the rows, so a restart never resumes past a line that was not stored.
 * These are the seqs publish() announces once COMMIT succeeds. */
static int write_seqs(struct store *st, const struct store_batch *b)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_seqs; i++) {
        const struct store_seq *q = &b->seqs[i];
        sqlite3_stmt *s = st->stmt[STMT_UPD_STREAM];
        sqlite3_bind_int64(s, 1, q->stream_id);
        sqlite3_bind_int64(s, 2, (int64_t)q->to);
        rc = step_done(s);
    }
    return rc;
}

/* Writes one batch's data after its sessions (write_sessions()): the steps above, in this order,
 * each only if the one before returned SQLITE_OK. Returns the first failure's code, or SQLITE_OK;
 * same transaction and same contract as the steps. */
static int write_data(struct store *st, const struct store_batch *b, int64_t now)
{
    int rc = write_blocks(st, b);
    if (rc == SQLITE_OK)
        rc = write_steps(st, b);
    if (rc == SQLITE_OK)
        rc = write_samples(st, b);
    if (rc == SQLITE_OK)
        rc = write_counters(st, b, now);
    if (rc == SQLITE_OK)
        rc = write_ends(st, b);
    if (rc == SQLITE_OK)
        rc = write_captures(st, b);
    if (rc == SQLITE_OK)
        rc = write_live_steps(st, b);
    if (rc == SQLITE_OK)
        rc = write_seqs(st, b);
    return rc;
}

/* Deletes every row of the batch's deleted jobs; after the batch's own rows, so a job's last
 * data queued before its deletion goes too. For the cluster shipper (store_ship.h), in the same
 * transaction: each job's name is queued in ship_deletes (when a shipper ever opened), and the
 * shipper cursors are brought down to the tables' last rowids: SQLite gives a new row the last
 * rowid + 1, so once the newest rows are gone their rowids are given again, and a cursor past
 * them would skip the new rows. */
static int delete_jobs(struct store *st, const struct store_batch *b, int64_t now)
{
    int rc = SQLITE_OK;
    /* Ranks deleted (store_job_delete_ranks()): their counts off the job's, their rows, and the
     * job's step count again; nothing is queued for ClickHouse (a pulled rank's rows there are its
     * origin node's). */
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_rank_dels; i++) {
        for (int k = STMT_DEL_RANK_COUNTS; rc == SQLITE_OK && k <= STMT_DEL_RANK_LAST; k++) {
            sqlite3_stmt *s = st->stmt[k];
            sqlite3_bind_int64(s, 1, b->rank_dels[i].job_id);
            sqlite3_bind_int64(s, 2, b->rank_dels[i].rank);
            rc = step_done(s);
        }
        if (rc == SQLITE_OK) {
            sqlite3_stmt *s = st->stmt[STMT_UPD_JOB_STEPS];
            sqlite3_bind_int64(s, 1, b->rank_dels[i].job_id);
            rc = step_done(s);
        }
    }
    for (size_t i = 0; rc == SQLITE_OK && i < b->n_dels; i++) {
        sqlite3_stmt *s = st->stmt[STMT_INS_SHIP_DELETE];
        sqlite3_bind_int64(s, 1, b->dels[i]);
        sqlite3_bind_int64(s, 2, now);
        rc = step_done(s);
        for (int k = STMT_DEL_JOB_FIRST; rc == SQLITE_OK && k <= STMT_DEL_JOB_LAST; k++) {
            s = st->stmt[k];
            sqlite3_bind_int64(s, 1, b->dels[i]);
            rc = step_done(s);
        }
    }
    if (rc == SQLITE_OK && (b->n_dels > 0 || b->n_rank_dels > 0))
        rc = step_done(st->stmt[STMT_LOWER_SHIP_CURSORS]);
    return rc;
}

struct evicted {
    uint64_t blocks, events, bytes;
};

/* Deletes the job's oldest blocks until its stored bytes are within the cap. */
static int evict_job(struct store *st, int64_t job_id, struct evicted *ev)
{
    for (;;) {
        sqlite3_stmt *s = st->stmt[STMT_SEL_JOB_STORED];
        sqlite3_bind_int64(s, 1, job_id);
        int rc = sqlite3_step(s);
        int64_t stored = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
        sqlite3_reset(s);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return rc;
        if (stored <= (int64_t)st->retention_bytes)
            return SQLITE_OK;

        int64_t ids[EVICT_CHUNK];
        int64_t bytes = 0, raw = 0, events = 0;
        int n = 0;
        s = st->stmt[STMT_SEL_OLDEST];
        sqlite3_bind_int64(s, 1, job_id);
        while (n < EVICT_CHUNK && stored - bytes > (int64_t)st->retention_bytes &&
               (rc = sqlite3_step(s)) == SQLITE_ROW) {
            ids[n++] = sqlite3_column_int64(s, 0);
            bytes += sqlite3_column_int64(s, 1);
            raw += sqlite3_column_int64(s, 2);
            events += sqlite3_column_int64(s, 3);
        }
        sqlite3_reset(s);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return rc;
        if (n == 0)
            return SQLITE_OK; /* counters say more than the blocks hold: nothing left to evict */
        for (int i = 0; i < n; i++) {
            s = st->stmt[STMT_DEL_BLOCK];
            sqlite3_bind_int64(s, 1, ids[i]);
            rc = step_done(s);
            if (rc != SQLITE_OK)
                return rc;
        }
        s = st->stmt[STMT_UPD_JOB_EVICT];
        sqlite3_bind_int64(s, 1, job_id);
        sqlite3_bind_int64(s, 2, n);
        sqlite3_bind_int64(s, 3, bytes);
        sqlite3_bind_int64(s, 4, raw);
        sqlite3_bind_int64(s, 5, events);
        rc = step_done(s);
        if (rc != SQLITE_OK)
            return rc;
        ev->blocks += (uint64_t)n;
        ev->events += (uint64_t)events;
        ev->bytes += (uint64_t)bytes;
    }
}

/* Writes batches first..last (inclusive, in queue order) in one transaction. */
static int commit_group(struct store *st, struct store_batch *first, struct store_batch *last,
                        struct evicted *ev)
{
    int64_t now = clock_now_ns();
    int rc = step_done(st->stmt[STMT_BEGIN]);
    for (struct store_batch *b = first; rc == SQLITE_OK; b = b->next) {
        rc = write_sessions(st, b);
        if (rc == SQLITE_OK)
            rc = write_data(st, b, now);
        if (rc == SQLITE_OK)
            rc = delete_jobs(st, b, now);
        if (b == last)
            break;
    }
    if (rc == SQLITE_OK && st->retention_bytes) {
        /* Each job that got blocks, once; jobs per group are few, so a linear scan will do. */
        for (struct store_batch *b = first; rc == SQLITE_OK; b = b->next) {
            for (size_t i = 0; rc == SQLITE_OK && i < b->n_blocks; i++) {
                int64_t job = b->blocks[i].job_id;
                bool seen = false;
                for (struct store_batch *c = first; !seen; c = c->next) {
                    size_t end = c == b ? i : c->n_blocks;
                    for (size_t j = 0; j < end && !seen; j++)
                        seen = c->blocks[j].job_id == job;
                    if (c == b)
                        break;
                }
                if (!seen)
                    rc = evict_job(st, job, ev);
            }
            if (b == last)
                break;
        }
    }
    if (rc == SQLITE_OK)
        rc = step_done(st->stmt[STMT_COMMIT]);
    if (rc != SQLITE_OK && !sqlite3_get_autocommit(st->db))
        (void)step_done(st->stmt[STMT_ROLLBACK]);
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

#define TOUCH(vec, field)                                                                      \
    do {                                                                                       \
        if (STORE_RESERVE(st, touched, b->n_##vec) < 0)                                        \
            return -ENOMEM;                                                                    \
        for (size_t i = 0; i < b->n_##vec; i++)                                                \
            st->touched[st->n_touched++] = b->vec[i].field;                                    \
    } while (0)

/* The jobs whose rows batches first..last wrote, each once, sorted, into st->touched: every row
 * kind that names a job (retention evicts only the blocks of jobs that got blocks). The rows
 * that name none are captures' rank states, forgotten captures and streams' next seqs, which
 * no read of a job's data (store_query_job_commits()) depends on. Returns 0 or -ENOMEM. */
static int touched_jobs(struct store *st, struct store_batch *first, struct store_batch *last)
{
    st->n_touched = 0;
    for (struct store_batch *b = first;; b = b->next) {
        TOUCH(jobs, id);
        TOUCH(streams, job_id);
        TOUCH(sessions, job_id);
        TOUCH(slots, job_id);
        TOUCH(blocks, job_id);
        TOUCH(steps, job_id);
        TOUCH(queues, job_id);
        TOUCH(hosts, job_id);
        TOUCH(pipes, job_id);
        TOUCH(ends, job_id);
        TOUCH(caps, job_id);
        TOUCH(live_steps, job_id);
        TOUCH(rank_dels, job_id);
        if (STORE_RESERVE(st, touched, b->n_dels) < 0)
            return -ENOMEM;
        for (size_t i = 0; i < b->n_dels; i++)
            st->touched[st->n_touched++] = b->dels[i];
        if (b == last)
            break;
    }
    qsort(st->touched, st->n_touched, sizeof *st->touched, cmp_i64);
    size_t n = 0;
    for (size_t i = 0; i < st->n_touched; i++)
        if (n == 0 || st->touched[n - 1] != st->touched[i])
            st->touched[n++] = st->touched[i];
    st->n_touched = n;
    return 0;
}

#undef TOUCH

/* Under st->mu, after st->committed counts the group: raises the commit count of the jobs in
 * st->touched (touched: touched_jobs() returned 0), else of every job. */
static void note_jobs(struct store *st, bool touched)
{
    if (!touched) {
        st->all_jobs_commits = st->committed;
        return;
    }
    size_t j = 0; /* both sorted: one merge pass, new ids inserted */
    for (size_t i = 0; i < st->n_touched; i++) {
        int64_t id = st->touched[i];
        while (j < st->n_job_commits && st->job_commits[j].job_id < id)
            j++;
        if (j < st->n_job_commits && st->job_commits[j].job_id == id) {
            st->job_commits[j++].commits = st->committed;
            continue;
        }
        if (STORE_RESERVE(st, job_commits, 1) < 0) {
            st->all_jobs_commits = st->committed; /* not noted: counts as every job's */
            continue;
        }
        memmove(st->job_commits + j + 1, st->job_commits + j,
                (st->n_job_commits - j) * sizeof *st->job_commits);
        st->job_commits[j++] = (struct store_job_commits){id, st->committed};
        st->n_job_commits++;
    }
}

/* Under st->mu: hands the durable seqs to store_collect_durable() and unlinks the group. */
static void publish(struct store *st, struct store_batch *first, struct store_batch *last,
                    size_t n_batches)
{
    for (struct store_batch *b = first;; b = b->next) {
        if (b->n_seqs && STORE_RESERVE(st, durable, b->n_seqs) == 0) {
            memcpy(st->durable + st->n_durable, b->seqs, b->n_seqs * sizeof *b->seqs);
            st->n_durable += b->n_seqs;
        } else if (b->n_seqs) {
            /* Durable but unannounced until the stream's next commit; a client that leaves
             * before then replays lines the daemon skips as duplicates. */
            log_warn("store: out of memory publishing durable seqs");
        }
        if (b == last)
            break;
    }
    st->queue_head = last->next;
    if (!st->queue_head)
        st->queue_tail = NULL;
    last->next = NULL;
    st->committed += n_batches;
    pthread_cond_broadcast(&st->cond);
}

/* Under st->mu: keeps full-size raw buffers of a committed group for the loop to reuse. */
static void recycle(struct store *st, struct store_batch *first)
{
    for (struct store_batch *b = first; b && st->n_pool < st->pool_max; b = b->next) {
        for (size_t i = 0; i < b->n_blocks && st->n_pool < st->pool_max; i++) {
            struct store_block *k = &b->blocks[i];
            if (k->cap == STORE_BLOCK_RAW_MAX) {
                st->pool[st->n_pool++] = k->raw;
                k->raw = NULL;
            }
        }
    }
}

/* Under st->mu, which it drops while freeing. */
static void trim_pool(struct store *st)
{
    char *spare[STORE_POOL_LIMIT];
    size_t n = 0;
    while (st->n_pool > STORE_POOL_IDLE)
        spare[n++] = st->pool[--st->n_pool];
    pthread_mutex_unlock(&st->mu);
    for (size_t i = 0; i < n; i++)
        free(spare[i]);
    pthread_mutex_lock(&st->mu);
}

static uint64_t free_group(struct store_batch *first, uint64_t *ret_events)
{
    uint64_t bytes = 0, events = 0;
    for (struct store_batch *b = first; b;) {
        struct store_batch *next = b->next;
        bytes += b->bytes;
        for (size_t i = 0; i < b->n_slots; i++)
            events += b->slots[i].events;
        store__batch_free(b);
        b = next;
    }
    if (ret_events)
        *ret_events = events;
    return bytes;
}

static void sub_buffered(struct store *st, uint64_t bytes)
{
    atomic_fetch_sub_explicit(&st->buffered, bytes, memory_order_relaxed);
    STATS_SUB(st->stats, buffered_bytes, bytes);
}

void *store__writer_main(void *arg)
{
    struct store *st = arg;
    struct log_ratelimit rl = {0};
    int64_t backoff = 0, stop_seen = 0;
    uint64_t failures = 0;

    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (!st->queue_head && !st->stopping) {
            if (st->n_pool <= STORE_POOL_IDLE) {
                pthread_cond_wait(&st->cond, &st->mu);
                continue;
            }
            /* After a quiet second, give back the spare buffers a burst left behind. */
            int64_t wake = clock_mono_ns() + 1000000000LL;
            struct timespec ts = {.tv_sec = wake / 1000000000, .tv_nsec = wake % 1000000000};
            if (pthread_cond_timedwait(&st->cond, &st->mu, &ts) == ETIMEDOUT && !st->queue_head)
                trim_pool(st);
        }
        if (!st->queue_head)
            break; /* stopping, and everything is written */
        struct store_batch *first = st->queue_head, *last = first;
        size_t n = 1;
        while (last->next && n < GROUP_MAX) {
            last = last->next;
            n++;
        }
        pthread_mutex_unlock(&st->mu);

        struct evicted ev = {0};
        int rc = commit_group(st, first, last, &ev);
        int r = store__errno(rc);

        if (r == 0) {
            /* Counters first, so that whoever is woken by the publication sees them. */
            uint64_t acked = 0, bytes = 0;
            for (struct store_batch *b = first;; b = b->next) {
                bytes += b->bytes;
                for (size_t i = 0; i < b->n_seqs; i++)
                    acked += b->seqs[i].to - b->seqs[i].from;
                if (b == last)
                    break;
            }
            sub_buffered(st, bytes);
            STATS_ADD(st->stats, commits, 1);
            STATS_SET(st->stats, commit_failing, 0);
            STATS_ADD(st->stats, acknowledged, acked);
            STATS_ADD(st->stats, evicted_blocks, ev.blocks);
            STATS_ADD(st->stats, evicted_events, ev.events);
            STATS_ADD(st->stats, evicted_bytes, ev.bytes);
            bool touched = touched_jobs(st, first, last) == 0;
            pthread_mutex_lock(&st->mu);
            publish(st, first, last, n);
            note_jobs(st, touched); /* before the wake: an ack implies the count's raise */
            recycle(st, first);
            pthread_mutex_unlock(&st->mu);
            (void)free_group(first, NULL);
            if (failures)
                log_info("store: commits work again after %" PRIu64 " failures", failures);
            failures = 0;
            backoff = 0;
            if (st->on_durable)
                st->on_durable(st->ud);
            pthread_mutex_lock(&st->mu);
            continue;
        }

        failures++;
        STATS_ADD(st->stats, commit_errors, 1);
        STATS_SET(st->stats, commit_failing, (uint64_t)(r < 0 ? -r : EIO));
        if (log_ratelimit(&rl, 10 * 1000000000LL))
            log_error("store: commit failed, will retry (%" PRIu64 " failures so far): %s",
                      failures, rc != SQLITE_OK ? sqlite3_errmsg(st->db) : strerror(-r));
        backoff = backoff ? backoff * 2 : BACKOFF_MIN_NS;
        if (backoff > BACKOFF_MAX_NS)
            backoff = BACKOFF_MAX_NS;
        pthread_mutex_lock(&st->mu);
        int64_t now = clock_mono_ns();
        if (st->stopping && !stop_seen)
            stop_seen = now;
        if (st->stopping && now - stop_seen >= STORE_CLOSE_GIVE_UP_NS) {
            /* Shutting down and the disk still refuses: what is queued is lost, and since none
             * of it was acknowledged, clients that replay will send it again. */
            size_t lost = 0;
            for (struct store_batch *b = st->queue_head; b; b = b->next)
                lost++;
            first = st->queue_head;
            st->queue_head = st->queue_tail = NULL;
            pthread_mutex_unlock(&st->mu);
            uint64_t events = 0;
            uint64_t bytes = free_group(first, &events);
            sub_buffered(st, bytes);
            pthread_mutex_lock(&st->mu);
            st->committed += lost;
            pthread_cond_broadcast(&st->cond);
            pthread_mutex_unlock(&st->mu);
            log_error("store: giving up at shutdown: %zu batches (%" PRIu64 " trace events, %" PRIu64
                      " bytes) were not written and not acknowledged",
                      lost, events, bytes);
            pthread_mutex_lock(&st->mu);
            break;
        }
        int64_t wake = now + backoff;
        struct timespec ts = {.tv_sec = wake / 1000000000, .tv_nsec = wake % 1000000000};
        /* A new batch or a stop request cuts the wait short; either way the next try comes
         * no sooner than the loop flushes. */
        (void)pthread_cond_timedwait(&st->cond, &st->mu, &ts);
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}
